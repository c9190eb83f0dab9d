#!/usr/bin/env bats
# ss config: every success and error path, worded exactly, with its exit status.

load helpers

setup() {
  ss_setup
  CFG="$SS_HOME/config.yaml"
  HOST_CPUS=$(nproc)
  MAXCPU=$(( HOST_CPUS < 2 ? 2 : HOST_CPUS ))
  DEFCPU=$(( MAXCPU < 4 ? MAXCPU : 4 ))
}

write_config() { mkdir -p "$SS_HOME"; printf '%s' "$1" > "$CFG"; }

@test "defaults when there is no file, tab-separated without a terminal" {
  run --separate-stderr ss config show
  assert_success
  assert_line "version	1"
  assert_line "vm.cpus	$DEFCPU"
  assert_line "vm.memory	8GB"
  assert_line "vm.disk	100GB"
  assert_line "vm.processes	4096"
  assert_line "vm.open_files	65536"
  assert_line "network.connections	8192"
  assert_line "updates.check	true"
  assert_line "updates.auto_apply	true"
  assert_line "backend	auto"
  assert_line "sync.exclude	node_modules, .git, dist, build"
  assert_line "sync.max_size	1GB"
  assert_line "review.flag	"
  assert_file_not_exists "$CFG"
}

@test "--json is one document with kind and version" {
  run ss config --json
  assert_success
  echo "$output" | jq -e '.kind == "Config" and .version == 1 and .file_exists == false'
  echo "$output" | jq -e '.settings[] | select(.key == "vm.memory") | .value == 8589934592 and .set == false'
  echo "$output" | jq -e '.settings[] | select(.key == "updates.check") | .value == true'
}

@test "the first command to make SS_HOME makes it the user's alone, whichever it is" {
  run ss config set backend docker
  assert_success
  assert_equal "$(stat -c %a "$SS_HOME")" 700
  rm -rf "$SS_HOME"
  ss new first-app > /dev/null
  assert_equal "$(stat -c %a "$SS_HOME")" 700
}

@test "set memory, cpus and disk print the spec's words" {
  run ss config set memory 16GB
  assert_success
  assert_output "Memory set to 16 GB. Restart VM to apply."
  run ss config set cpus "$MAXCPU"
  assert_output "CPUs set to $MAXCPU. Restart VM to apply."
  run ss config set disk 200GB
  assert_output "Disk set to 200 GB. Restart VM to apply."
  run ss config set vm.memory 512mb
  assert_failure 65
  run ss config set vm.memory 4096MB
  assert_output "Memory set to 4 GB. Restart VM to apply."
  run ss config get memory
  assert_output "4GB"
  run ss config get cpus
  assert_output "$MAXCPU"
  run ss config get vm.disk
  assert_output "200GB"
  head -1 "$CFG" | grep -q '^# ss configuration'
}

@test "an unknown key: exit 64, the valid keys and did-you-mean" {
  keys="cpus, memory, disk, version, backend, vm.cpus, vm.memory, vm.disk, vm.processes, vm.open_files, updates.check, updates.auto_apply, updates.feed, agent.command, lxd.remote, browser.cdp_port, sync.exclude, sync.max_size, review.flag, projects.<name>.mode, secrets, network.mode, network.presets, network.allow, network.deny, network.connections, agent.config, agent.browser, image.packages, image.npm, sandboxes.<name>.backend, sandboxes.<name>.cpus, sandboxes.<name>.memory, sandboxes.<name>.disk, sandboxes.<name>.processes, sandboxes.<name>.open_files, sandboxes.<name>.ephemeral, sandboxes.<name>.shell, sandboxes.<name>.deploy, sandboxes.<name>.mounts, sandboxes.<name>.env, sandboxes.<name>.secrets, sandboxes.<name>.agent.command, sandboxes.<name>.agent.config, sandboxes.<name>.network.mode, sandboxes.<name>.network.presets, sandboxes.<name>.network.allow, sandboxes.<name>.network.deny, sandboxes.<name>.network.connections, profiles.<name>.description, profiles.<name>.backend, profiles.<name>.cpus, profiles.<name>.memory, profiles.<name>.disk, profiles.<name>.processes, profiles.<name>.open_files, profiles.<name>.ephemeral, profiles.<name>.shell, profiles.<name>.deploy, profiles.<name>.mounts, profiles.<name>.env, profiles.<name>.secrets, profiles.<name>.agent.command, profiles.<name>.agent.config, profiles.<name>.network.mode, profiles.<name>.network.presets, profiles.<name>.network.allow, profiles.<name>.network.deny, profiles.<name>.network.connections"
  run --separate-stderr ss config set foo 1
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: unknown config key: foo

Valid keys: $keys"
  run --separate-stderr ss config set memroy 8GB
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: unknown config key: memroy

Valid keys: $keys
Did you mean 'memory'?"
  run --separate-stderr ss config get vm.cpu
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: unknown config key: vm.cpu

Valid keys: $keys
Did you mean 'vm.cpus'?"
  assert_file_not_exists "$CFG"
}

@test "bad values on the command line: exit 65, the file untouched" {
  write_config $'version: 1\nvm:\n  cpus: 2\n'
  run --separate-stderr ss config set memory 16G
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for vm.memory: '16G' is not a size such as 8GB, 512MB or 1TB
hint: write a whole number followed by MB, GB or TB, e.g. 16GB"
  run --separate-stderr ss config set cpus 999
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for vm.cpus: 999 is out of range; valid: 2 .. $MAXCPU (max: host cores)"
  run --separate-stderr ss config set cpus two
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for vm.cpus: 'two' is not a whole number"
  run --separate-stderr ss config set disk 10GB
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for vm.disk: 10GB is out of range; valid: 20GB .. 500GB"
  run --separate-stderr ss config set backend vmware
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for backend: 'vmware' is not valid; use one of: auto, qemu, lxd, docker, podman, lume, lima"
  run --separate-stderr ss config set updates.check maybe
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for updates.check: 'maybe' is not true or false"
  assert_equal "$(cat "$CFG")" $'version: 1\nvm:\n  cpus: 2'
}

@test "usage errors exit 64" {
  run --separate-stderr ss config set cpus
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: usage: ss config set KEY VALUE
hint: see 'ss config set --help'"
  run --separate-stderr ss config get
  assert_equal "$status" 64
  run --separate-stderr ss config frob
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: unknown command 'frob'
hint: see 'ss config --help'"
  run --separate-stderr ss config sett cpus 2
  assert_equal "$status" 64
  assert_equal "${stderr_lines[1]}" "hint: did you mean 'set'?"
  run --separate-stderr ss config --frob
  assert_equal "$status" 64
  # --json goes with what prints a document, and is refused elsewhere.
  run --separate-stderr ss config set cpus 2 --json
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-config: error: --json is not an option of 'ss config set'
hint: --json goes with ss config show, ss config get and ss profiles
hint: see 'ss config set --help'"
  run ss config set memory -1GB
  assert_failure 65
}

@test "invalid YAML: exit 78 with file:line:column" {
  write_config $'vm:\n  cpus: [2\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:3:1: invalid YAML: end of sequence flow not found"
  assert_equal "${stderr_lines[1]}" "hint: edit $CFG, or see ss-config(5) for every key"
  run --separate-stderr ss config get cpus
  assert_equal "$status" 78
}

@test "unknown key in the file: exit 78 with position and did-you-mean" {
  write_config $'version: 1\nvm:\n  memroy: 8GB\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "$stderr" "ss-config: error: $CFG:3:3: unknown key 'vm.memroy'
hint: did you mean 'vm.memory'?
hint: edit $CFG, or see ss-config(5) for every key"
}

@test "wrong types in the file: exit 78" {
  write_config $'vm:\n  cpus: four\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:9: vm.cpus: 'four' is not a whole number"
  write_config $'updates: yes\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:1:10: updates: expected a section of keys"
  write_config $'vm:\n  memory: 8\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:11: vm.memory: '8' is not a size such as 8GB, 512MB or 1TB"
  write_config $'sync:\n  exclude: node_modules\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:12: sync.exclude: expected a list of strings"
  write_config $'- vm\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:1:1: expected a mapping of keys (such as 'vm:')"
}

@test "out-of-range values in the file: exit 78 with the valid range" {
  write_config $'vm:\n  disk: 1000GB\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:9: vm.disk: 1000GB is out of range; valid: 20GB .. 500GB"
  write_config $'vm:\n  cpus: 1\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:9: vm.cpus: 1 is out of range; valid: 2 .. $MAXCPU (max: host cores)"
  write_config $'vm:\n  memory: 1GB\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  [[ "${stderr_lines[0]}" == "ss-config: error: $CFG:2:11: vm.memory: 1GB is out of range; valid: 4GB .. "*"GB (max: host RAM - 4GB)" ]]
  write_config $'version: 2\n'
  run --separate-stderr ss config show
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:1:10: version: 2 is out of range; valid: 1 .. 1"
}

@test "a duplicate key or an unreadable file is exit 78" {
  write_config $'vm:\n  cpus: 2\n  cpus: 2\n'
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:3:3: duplicate key 'vm.cpus'"
  rm -f "$CFG"; mkdir -p "$CFG"
  run --separate-stderr ss config show
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: cannot read '$CFG': Is a directory"
}

@test "set keeps comments and key order of a hand-edited file" {
  write_config $'# my settings\nversion: 1\n\n# resources\nvm:\n  cpus: 2    # small box\n  memory: 8GB\n\nupdates:\n  check: true   # keep\n'
  run ss config set memory 12GB
  assert_success
  run ss config set updates.auto_apply false
  run ss config set sandboxes.work.backend lxd
  assert_output "sandboxes.work.backend set to lxd."
  assert_equal "$(cat "$CFG")" $'# my settings\nversion: 1\n\n# resources\nvm:\n  cpus: 2    # small box\n  memory: 12GB\n\nupdates:\n  check: true   # keep\n  auto_apply: false\nsandboxes:\n  work:\n    backend: lxd'
  run ss config get sandboxes.work.backend
  assert_output "lxd"
  run ss config get sandboxes.work.memory
  assert_output "12GB"
}

@test "a file that is already invalid is not built on, but setting the bad key fixes it" {
  write_config $'vm:\n  cpus: 99\n'
  run --separate-stderr ss config set memory 8GB
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:9: vm.cpus: 99 is out of range; valid: 2 .. $MAXCPU (max: host cores)"
  run ss config set cpus 2
  assert_success
  assert_equal "$(cat "$CFG")" $'vm:\n  cpus: 2'
}

@test "get: lists one per line, --json, unset key without default exits 1" {
  run ss config get sync.exclude
  assert_output $'node_modules\n.git\ndist\nbuild'
  run ss config get memory --json
  echo "$output" | jq -e '.kind == "ConfigValue" and .key == "vm.memory" and .value == 8589934592 and .set == false'
  run ss config get lxd.remote
  assert_equal "$status" 1
  assert_output ""
  run ss config set secrets 'ANTHROPIC_API_KEY, GH_TOKEN'
  assert_output "secrets set to ANTHROPIC_API_KEY, GH_TOKEN."
  run ss config get secrets
  assert_output $'ANTHROPIC_API_KEY\nGH_TOKEN'
}

@test "SS_HOME moves the file; path prints it" {
  export SS_HOME="$BATS_TEST_TMPDIR/elsewhere"
  run ss config path
  assert_output "$BATS_TEST_TMPDIR/elsewhere/config.yaml"
  run ss config set cpus 2
  assert_file_exists "$BATS_TEST_TMPDIR/elsewhere/config.yaml"
}

@test "concurrent sets never lose or tear the file" {
  write_config $'version: 1\n'
  for i in $(seq 1 10); do ss config set sandboxes.s$i.backend lxd >/dev/null & done
  wait
  for i in $(seq 1 10); do
    run ss config get sandboxes.s$i.backend
    assert_output "lxd"
  done
}

@test "a value of any length is written and read back whole; a long name is refused, not a crash" {
  long=$(printf 'claude --flag-%05d ' $(seq 3000))
  [ "${#long}" -gt 30000 ]
  run ss config set agent.command "$long"
  assert_success
  run ss config get agent.command
  assert_success
  assert_output "${long% }"
  name=$(printf 'a%.0s' $(seq 30000))
  run --separate-stderr ss config set "sandboxes.$name.backend" docker
  assert_failure 64
  run --separate-stderr ss "$name"
  [ "$status" -ne 0 ] && [ "$status" -lt 128 ]
}

@test "what YAML parsers let through is refused before any edit: an unclosed quote, two documents, a tag" {
  write_config $'version: 1\nagent:\n  command: "claude --x\nupdates:\n  check: false\n'
  cp "$CFG" "$BATS_TEST_TMPDIR/before"
  run --separate-stderr ss config set updates.check true
  assert_failure 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:3:12: invalid YAML: this quoted string is never closed"
  cmp "$CFG" "$BATS_TEST_TMPDIR/before"
  write_config $'version: 1\n---\nversion: 1\n'
  run --separate-stderr ss config show
  assert_failure 78
  [[ "${stderr_lines[0]}" == "ss-config: error: $CFG:"*": invalid YAML: a second document ('---'); the file holds one" ]]
  write_config $'version: 1\nbackend: !weird docker\n'
  run --separate-stderr ss config show
  assert_failure 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:10: invalid YAML: the tag '!weird' is not supported"
}

@test "set checks a value as loading does: secrets are variable names, sizes may start with '-'" {
  run --separate-stderr ss config set secrets 'A B,$(id)'
  assert_failure 65
  assert_equal "$stderr" "ss-config: error: invalid value for secrets: 'A B' is not an environment variable name (letters, digits and '_', not starting with a digit)"
  assert_file_not_exists "$CFG"
  run --separate-stderr ss config set memory -1GB
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-config: error: invalid value for vm.memory: '-1GB' is not a size such as 8GB, 512MB or 1TB"
  run --separate-stderr ss config set memory 0GB
  assert_failure 65
  [[ "$stderr" == "ss-config: error: invalid value for vm.memory: 0GB is out of range; valid: 4GB .. "* ]]
  write_config $'version: 1\nsecrets: ["$(id)"]\n'
  run --separate-stderr ss config show
  assert_failure 78
  assert_equal "${stderr_lines[0]}" "ss-config: error: $CFG:2:10: secrets: '\$(id)' is not an environment variable name (letters, digits and '_', not starting with a digit)"
}

@test "network: rules and presets are checked where they are written, and a sandbox's keys fall back to the top level's" {
  run --separate-stderr ss config set network.allow "example.com, *.bad*.com"
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for network.allow: invalid network rule '*.bad*.com': '*' only as the whole first label: *.example.com"
  run --separate-stderr ss config set network.presets "agent, gitlab"
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for network.presets: 'gitlab' is not a preset; presets: agent, packages, github"
  ss config set sandboxes.work.network.mode open
  run ss config get sandboxes.work.network.mode
  assert_output "open"
  run ss config get network.presets
  assert_output "$(printf 'agent\npackages\ngithub')"
  printf 'network:\n  mode: everything\n' >"$CFG"
  run --separate-stderr ss config get network.mode
  assert_equal "$status" 78
  [[ "$stderr" == *"config.yaml:2:9"* ]]
}
