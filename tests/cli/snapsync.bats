#!/usr/bin/env bats
# ss-snap and ss-sync, health-check and doctor on the command line: every message and exit
# status that needs no running sandbox. Every backend is a stub that cannot run.

load helpers

setup() {
  ss_setup
  export PATH="$SS_BUILD_DIR/libexec/ss:$PATH"
}

# help_matches_man TOOL PAGE: the options of TOOL --help are those of the man page's OPTIONS.
help_matches_man() {
  help_opts=$("$1" --help | sed -n '/^Options:/,$p' | grep -oE -- '(^|[ ,])--?[a-z][a-z-]*' \
    | tr -d ' ,' | sort -u)
  man_opts=$(sed -n '/^# OPTIONS/,/^# /p' "$SS_SOURCE_DIR/man/$2" | grep -E '^\*-' \
    | grep -oE -- '--?[a-z][a-z-]*' | sort -u)
  assert_equal "$man_opts" "$help_opts"
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
    grep -qx "# $section" "$SS_SOURCE_DIR/man/$2"
  done
  assert_file_exists "$SS_BUILD_DIR/share/man/man1/${2%.scd}"
}

@test "ss-snap and ss-sync: --help options are the man pages' options" {
  help_matches_man ss-snap ss-snap.1.scd
  help_matches_man ss-sync ss-sync.1.scd
  run ss-snap --help
  assert_line --index 0 "usage: ss-snap COMMAND [OPTIONS]"
  run ss-sync --help
  assert_line --index 0 "usage: ss-sync COMMAND [ARGS] [OPTIONS]"
}

@test "the dispatcher's verbs reach ss-snap and ss-sync" {
  run --separate-stderr ss snapshot 'bad/name'
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-snap: error: invalid snapshot name 'bad/name': use letters, digits, '.', '_' and '-', starting with a letter or digit"
  run --separate-stderr ss snapshots
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss-snap: error: sandbox 'super-sandbox' does not exist"
  run --separate-stderr ss restore
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: usage: ss restore NAME
hint: see 'ss restore --help'"
  run --separate-stderr env CLAUDE_SANDBOX=sn-other ss snapshots --json
  assert_equal "${stderr_lines[0]}" "ss-snap: error: sandbox 'sn-other' does not exist"
  run --separate-stderr ss-snap frob
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: unknown command 'frob'
hint: see 'ss snap --help'"
  run --separate-stderr ss-snap restor x
  assert_equal "$status" 64
  assert_equal "${stderr_lines[1]}" "hint: did you mean 'restore'?"
  run --separate-stderr ss-snap list --timeout 0
  assert_equal "$status" 64
}

@test "snapshot commands check their arguments before the sandbox" {
  mkdir -p "$SS_HOME/.ss/sandboxes/box"
  echo '{"kind":"SandboxRecord","version":1,"backend":"lxd"}' > "$SS_HOME/.ss/sandboxes/box/sandbox.json"
  run --separate-stderr ss restore --sandbox box
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: usage: ss restore NAME
hint: see 'ss restore --help'"
  run --separate-stderr ss snapshot delete --sandbox box
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: usage: ss snapshot delete NAME
hint: see 'ss snapshot delete --help'"
  run --separate-stderr ss snapshot a b --sandbox box
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: unexpected argument 'b'
hint: usage: ss snapshot [NAME]
hint: see 'ss snapshot --help'"
  # An option of another command.
  run --separate-stderr ss snapshot --force --sandbox box
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-snap: error: --force is not an option of 'ss snapshot'
hint: --force goes with ss restore
hint: see 'ss snapshot --help'"
  run ss snapshot delete --help
  assert_success
  assert_line "  snapshot delete NAME  delete a snapshot (--yes)"
  # Restore and delete ask first; without a terminal that needs --yes.
  run --separate-stderr ss restore snap1 --sandbox box < /dev/null
  assert_equal "$status" 64
  [[ "$stderr" == *"--yes"* ]]
  # A real question reaches the backend: its daemon is down.
  run --separate-stderr ss snapshots --sandbox box
  assert_equal "$status" 69
}

@test "ss new --copy puts the project in working-copy mode" {
  run ss new sn-copy --copy
  assert_success
  assert_line "Mode: working copy (the agent works in a copy; ss sync, ss diff, ss apply)"
  run ss config get projects.sn-copy.mode
  assert_output "copy"
  run ss new sn-plain
  run ss config get projects.sn-plain.mode
  assert_output "mount"
  run --separate-stderr ss list --copy
  assert_equal "$status" 64
  # Copy-mode projects live beside the folder sandboxes share, never in it.
  assert_dir_exists "$SS_HOME/copy-projects/sn-copy"
  assert_not_exists "$SS_HOME/projects/sn-copy"
  assert_equal "$(stat -c %a "$SS_HOME/copy-projects")" "700"
  run ss list
  assert_line --partial "sn-copy"
  assert_line --partial "sn-plain"
  # A mode changed in config.yaml moves the project at its next use, and says so; never over
  # a folder in the way.
  ss config set projects.sn-plain.mode copy >/dev/null
  cd "$SS_HOME/projects/sn-plain"
  run --separate-stderr ss diff
  assert_equal "${stderr_lines[0]}" "Moved project 'sn-plain' out of the folder sandboxes share (copy mode): ~/super-sandbox/copy-projects/sn-plain"
  # Reading a copy never makes a sandbox to read it from.
  assert_equal "$status" 66
  assert_equal "${stderr_lines[1]}" "ss-sync: error: sandbox 'super-sandbox' does not exist"
  assert_dir_exists "$SS_HOME/copy-projects/sn-plain"
  assert_not_exists "$SS_HOME/projects/sn-plain"
  mkdir "$SS_HOME/projects/sn-copy"
  ss config set projects.sn-copy.mode mount >/dev/null
  run --separate-stderr ss sn-copy -- true
  assert_equal "$status" 73
  assert_equal "${stderr_lines[0]}" "ss: error: cannot move project 'sn-copy' to ~/super-sandbox/projects/sn-copy: something is there already"
  assert_dir_exists "$SS_HOME/copy-projects/sn-copy"
}

@test "sync, diff, apply: which project, and only in working-copy mode" {
  cd "$BATS_TEST_TMPDIR"
  for verb in sync diff apply; do
    run --separate-stderr ss "$verb"
    assert_equal "$status" 64
    assert_equal "$stderr" "ss-sync: error: which project? name it: ss $verb PROJECT
hint: or run it from inside the project's folder"
  done
  ss new sn-plain >/dev/null
  run --separate-stderr ss sync sn-plain
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: project 'sn-plain' is not in working-copy mode
the agent works in the shared folder itself: there is no copy to sync
hint: switch it: ss config set projects.sn-plain.mode copy"
  # The project of the current directory.
  cd "$SS_HOME/projects/sn-plain"
  run --separate-stderr ss diff
  assert_equal "$status" 64
  [[ "${stderr_lines[0]}" == "ss-sync: error: project 'sn-plain' is not in working-copy mode" ]]
  run --separate-stderr ss sync no-such
  assert_equal "$status" 66
  run --separate-stderr ss sync Bad_Name
  assert_equal "$status" 65
}

@test "a flag of another sync command is exit 64, before anything else" {
  ss new sn-copy --copy >/dev/null
  run --separate-stderr ss diff sn-copy --json
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: --json is not an option of 'ss diff'
hint: --json goes with ss sync and ss fetch
hint: see 'ss diff --help'"
  for bad in "apply sn-copy --stat" "sync sn-copy --yes" "diff sn-copy --ours" "push a b --force" \
    "pull a b --dry-run" "apply sn-copy -n" "sync sn-copy --merge" "diff sn-copy --theirs"; do
    run --separate-stderr ss $bad
    assert_equal "$status" 64
    [[ "$stderr" == "ss-sync: error: --"*" is not an option of 'ss ${bad%% *}'"* ]]
  done
}

@test "push and pull: two paths" {
  run --separate-stderr ss push only-one
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: usage: ss push LOCAL REMOTE
hint: see 'ss push --help'"
  run --separate-stderr ss pull a b c
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: unexpected argument 'c'
hint: usage: ss pull REMOTE LOCAL
hint: see 'ss pull --help'"
  run --separate-stderr ss-sync sycn
  assert_equal "$status" 64
  assert_equal "${stderr_lines[1]}" "hint: did you mean 'sync'?"
}

@test "health-check: no such sandbox; doctor: the backend's probe, exit 1 when none can run" {
  run --separate-stderr ss health-check sn-none
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss-vm: error: sandbox 'sn-none' does not exist"
  run --separate-stderr ss health-check Bad
  assert_equal "$status" 65
  run --separate-stderr ss doctor --json
  assert_equal "$status" 1
  echo "$output" | jq -e '.kind == "Doctor" and .ok == false'
  echo "$output" | jq -e '.checks[] | select(.name == "backend lxd") | .status == "failed" and (.detail | test("not running")) and .fix == "start it: ss vm setup --backend lxd"'
  echo "$output" | jq -e '.checks[] | select(.name == "virtualization") | .detail | test("KVM|PVM|TCG|HVF")'
  echo "$output" | jq -e '[.checks[].name] | index("disk space") != null and index("claude code") != null and index("chrome") != null and index("bridge socket") != null'
  run --separate-stderr ss doctor
  assert_equal "$status" 1
  assert_line --regexp '^backend lxd +FAILED +the LXD daemon is not running'
  assert_line --regexp '^ +fix: start it: ss vm setup --backend lxd$'
  run --separate-stderr ss doctor extra
  assert_equal "$status" 64
}
