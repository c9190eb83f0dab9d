#!/usr/bin/env bats
# One sandbox, end to end, on the backend in $SS_E2E_BACKEND: created from the image, reached
# with a pinned host key, tools present, the projects folder and the deploy folder (--deploy)
# shared both ways with the right owners, a read-only folder root inside cannot write (Podman
# refuses one), git and docker working inside, then stop / start /
# status / reset / delete, and the faults every backend must survive: a share that is not
# mounted, its SSH port taken while it was stopped, ss killed while it starts the sandbox, the
# machine killed behind ss's back, the engine's daemon going away (LXD, Docker); and the
# backend's snapshot hooks (take while stopped, restore, delete). CTest runs
# this file once per backend (lxd, docker, podman, qemu, and lima and lume against the stand-ins
# fake_limactl.py and fake_lume.py); a QEMU sandbox boots four times (create, start, start after restore, reset).

load helpers
load ../json_doc

setup_file() {
  : "${SS_E2E_BACKEND:?set SS_E2E_BACKEND (lxd, docker, podman, qemu)}"
  e2e_home
  export SANDBOX="${SS_E2E_PREFIX:-e2e}-$SS_E2E_BACKEND-$$"
  ss vm setup --backend "$SS_E2E_BACKEND" --json > "$BATS_FILE_TMPDIR/setup.json"
  # The deploy folder belongs to the projects' owner, as a user's own folder would.
  install -d -o "$(stat -c %u "$SS_HOME/projects")" -g "$(stat -c %g "$SS_HOME/projects")" \
    "$E2E_ROOT/deploy"
  # A folder shared read-only (Podman refuses one: a test below says so).
  mkdir -p "$E2E_ROOT/ro"
  echo "host's" > "$E2E_ROOT/ro/file"
  if [ "$SS_E2E_BACKEND" != podman ]; then
    ss config set "sandboxes.$SANDBOX.mounts" "$E2E_ROOT/ro:/data/ro:ro" >/dev/null
  fi
  ss vm image build >&3 2>&1
}

teardown_file() {
  e2e_env
  # The port holder of the port-taken test, if that test failed before stopping it.
  [ ! -s "$BATS_FILE_TMPDIR/holder" ] || kill "$(cat "$BATS_FILE_TMPDIR/holder")" 2>/dev/null || true
  # The daemon the daemon test stopped, should that test have failed before starting it again.
  ss vm setup --backend "$SS_E2E_BACKEND" >/dev/null 2>&1 || true
  ss vm delete --sandbox "$SANDBOX" --yes --force || true
  ss vm delete --sandbox "$SANDBOX-ro" --yes --force >/dev/null 2>&1 || true
  # A daemon this file's setup started (dockerd), it stops.
  if jq -e '.started | length > 0' "$BATS_FILE_TMPDIR/setup.json" >/dev/null 2>&1; then
    ss vm setup --backend "$SS_E2E_BACKEND" --stop >&3 2>&1 || true
  fi
  e2e_home_remove
}

setup() {
  e2e_env
}

# A VM that runs but never answers: what its console, QEMU and its supervisor said, once per
# file, for the log of the run.
teardown() {
  [ -z "${BATS_TEST_COMPLETED:-}" ] || return 0
  [ "$SS_E2E_BACKEND" = qemu ] && [ ! -e "$BATS_FILE_TMPDIR/logs-shown" ] || return 0
  local dir="$SS_HOME/.ss/qemu/$SANDBOX" log
  [ -d "$dir" ] || return 0
  touch "$BATS_FILE_TMPDIR/logs-shown"
  for log in console.log qemu.log supervisor.log virtiofsd.log; do
    [ -f "$dir/$log" ] || continue
    echo "# the last lines of $SANDBOX's $log:"
    tail -n 40 "$dir/$log" | cat -v
  done
}

@test "start creates the sandbox from the image and waits until it is ready" {
  mkdir "$BATS_TEST_TMPDIR/tmp"
  TMPDIR="$BATS_TEST_TMPDIR/tmp" run --separate-stderr ss vm start --sandbox "$SANDBOX" \
    --backend "$SS_E2E_BACKEND" --deploy "$E2E_ROOT/deploy"
  assert_success
  assert_output "Started."
  [[ "$stderr" == "Starting VM..."* ]]
  # Said as it is made, and only where it is true: root inside a container with no user
  # namespace of its own (Docker's default daemon, Podman run as root) is root on the host.
  if [ "$SS_E2E_BACKEND" = docker ] || { [ "$SS_E2E_BACKEND" = podman ] && [ "$EUID" = 0 ]; }; then
    [[ "$stderr" == *"warning: root in sandbox '$SANDBOX' is root on this host: "*"use lxd or qemu (--backend)"* ]]
  else
    [[ "$stderr" != *"is root on this host"* ]]
  fi
  # Nothing of the creation is left in the temporary folder (the seed holds the host key).
  assert_equal "$(find "$BATS_TEST_TMPDIR/tmp" -mindepth 1)" ""
  run ss vm status --sandbox "$SANDBOX" --json
  assert_success
  echo "$output" | jq -e --arg b "$SS_E2E_BACKEND" '.kind == "SandboxStatus" and .state == "running" and .backend == $b'
  echo "$output" | jq -e --arg d "$E2E_ROOT/deploy" '.deploy == $d'
  echo "$output" | jq -e '.memory_used_bytes > 0 and .disk_used_bytes > 0 and .uptime_seconds >= 0'
  echo "$output" | jq -e '.agent_logged_in == false'
}

@test "a read-only folder stays read-only against root in the sandbox" {
  if [ "$SS_E2E_BACKEND" = podman ]; then
    ss config set "sandboxes.$SANDBOX-ro.backend" podman >/dev/null
    run --separate-stderr ss shell --sandbox "$SANDBOX-ro" --ephemeral --mount "$E2E_ROOT/ro:/data/ro:ro" -- true
    assert_equal "$status" 69
    [[ "$stderr" == *"Podman cannot keep $E2E_ROOT/ro read-only against root in the sandbox"* ]]
    run ss vm list
    refute_output --partial "$SANDBOX-ro"
    return
  fi
  run sandbox_ssh "$SANDBOX" 'cat /data/ro/file
    touch /data/ro/by-user 2>/dev/null && echo user-wrote
    sudo -n touch /data/ro/by-root 2>/dev/null && echo root-wrote
    sudo -n mount -o remount,rw,bind /data/ro 2>/dev/null
    sudo -n mount -o remount,rw /data/ro 2>/dev/null
    sudo -n touch /data/ro/by-root-remount 2>/dev/null && echo root-remount-wrote
    touch /data/ro/by-user-remount 2>/dev/null && echo user-remount-wrote
    true'
  assert_success
  assert_output "host's"
  assert_equal "$(ls -A "$E2E_ROOT/ro")" "file"
}

@test "OpenSSH reaches it with the pinned host key and the install's key, no password" {
  run sandbox_ssh "$SANDBOX" id -un
  assert_success
  assert_output "sandbox"
  # The pinned key is the one the sandbox presents: OpenSSH with a wrong pin is refused.
  host=$(ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.host)
  port=$(ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.port)
  kh="$SS_HOME/.ss/sandboxes/$SANDBOX/known_hosts"
  cp "$kh" "$BATS_TEST_TMPDIR/kh.bak"
  sed -i 's/ssh-ed25519 .*/ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhI4F8fM0u1B3Hlq4H9t5y9tY7zV7jW8M2r3M0nJ9Zk/' "$kh"
  run ssh -i "$SS_HOME/.ss/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$kh" -o ConnectTimeout=10 -p "$port" \
    "sandbox@$host" true
  assert_output --partial "Host key verification failed"
  assert_failure
  cp "$BATS_TEST_TMPDIR/kh.bak" "$kh"
  run ssh -o BatchMode=yes -o PubkeyAuthentication=no -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o PreferredAuthentications=password,keyboard-interactive \
    -o ConnectTimeout=10 -p "$port" "sandbox@$host" true
  assert_output --partial "Permission denied"
  assert_failure
}

@test "the agent and the tools are in the image" {
  run sandbox_ssh "$SANDBOX" claude --version
  assert_success
  assert_output --regexp '^[0-9]+\.[0-9]+\.[0-9]+ \(Claude Code\)$'
  run sandbox_ssh "$SANDBOX" gh --version
  assert_success
  run sandbox_ssh "$SANDBOX" node --version
  assert_output --regexp '^v22\.'
  run sandbox_ssh "$SANDBOX" chrome-devtools-mcp --version
  assert_success
  # What the spec's MOTD, AGENTS.md and reset prompt name, and the language tooling.
  run sandbox_ssh "$SANDBOX" vercel --version
  assert_success
  assert_line --regexp '^60\.[0-9]+\.[0-9]+$'
  run sandbox_ssh "$SANDBOX" docker-compose version --short
  assert_output --regexp '^1\.[0-9]+\.[0-9]+$'
  run sandbox_ssh "$SANDBOX" go version
  assert_output --regexp '^go version go1\.[0-9.]+ linux/amd64$'
  run sandbox_ssh "$SANDBOX" 'pipx --version && python3 -m venv --help >/dev/null && pip3 --version'
  assert_success
  run sandbox_ssh "$SANDBOX" tree --version
  assert_output --regexp '^tree v[0-9]'
  run sandbox_ssh "$SANDBOX" sudo -n true
  assert_success
}

@test "the projects folder is shared read-write both ways with the right owners" {
  as_owner mkdir -p "$SS_HOME/projects/shared"
  as_owner sh -c 'echo "from host" > "$1"' sh "$SS_HOME/projects/shared/host.txt"
  run sandbox_ssh "$SANDBOX" "stat -c '%U %s' /home/sandbox/projects/shared/host.txt"
  assert_success
  assert_output "sandbox 10"
  run sandbox_ssh "$SANDBOX" 'echo from-sandbox > /home/sandbox/projects/shared/box.txt && mkdir -p /home/sandbox/projects/shared/d/e'
  assert_success
  assert_file_exists "$SS_HOME/projects/shared/box.txt"
  assert_equal "$(cat "$SS_HOME/projects/shared/box.txt")" "from-sandbox"
  # Everything belongs to the user who runs ss (root here, without sudo): the projects folder,
  # and what the agent makes in it; no other account gets anything.
  assert_equal "$(stat -c %u:%g "$SS_HOME/projects")" "$(id -u):$(id -g)"
  for f in shared/box.txt shared/d shared/d/e; do
    assert_equal "$(stat -c %u:%g "$SS_HOME/projects/$f")" "$(id -u):$(id -g)"
  done
}

@test "git on the host works in a project the agent made, without safe.directory" {
  ss new hostgit >/dev/null
  # The sandbox's own repository of the project is made by its first session; the agent's commit
  # reaches the host's by ss fetch.
  ss exec hostgit --sandbox "$SANDBOX" -- true
  run sandbox_ssh "$SANDBOX" 'cd ~/projects/hostgit && echo agent > agent.txt && mkdir -p lib &&
    echo x > lib/x && git add -A && git -c user.name=agent -c user.email=a@b commit -qm "by the agent"'
  assert_success
  run ss fetch hostgit --sandbox "$SANDBOX"
  assert_success
  run env GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null git -C "$SS_HOME/projects/hostgit" log --format=%s
  assert_success
  assert_line --index 0 "by the agent"
  run find "$SS_HOME/projects/hostgit" ! -user "$(id -u)"
  assert_output ""
}

@test "root in the sandbox never writes as the user or as root on the host" {
  if [ "$SS_E2E_BACKEND" = qemu ]; then
    # virtiofsd renames and changes owners as root on its guest's behalf: root in the VM can
    # write, and what it writes or chowns belongs to nobody on the host, never to root.
    run sandbox_ssh "$SANDBOX" 'sudo -n sh -c "echo r > ~sandbox/projects/shared/by-root && chown 0:0 ~sandbox/projects/shared/by-root"'
    assert_success
    assert_equal "$(stat -c %u:%g "$SS_HOME/projects/shared/by-root")" "65534:65534"
    rm "$SS_HOME/projects/shared/by-root"
  else
    # The view (or LXD's map) maps no id but the sandbox user's: root inside cannot write there.
    run sandbox_ssh "$SANDBOX" sudo -n touch /home/sandbox/projects/shared/by-root
    assert_failure
    assert_file_not_exists "$SS_HOME/projects/shared/by-root"
    run sandbox_ssh "$SANDBOX" sudo -n chown 0:0 /home/sandbox/projects/shared/box.txt
    assert_failure
  fi
  assert_equal "$(stat -c %u "$SS_HOME/projects/shared/box.txt")" "$(id -u)"
}

@test "a setuid file the agent makes in a project loses the bit, and is out of every other account's reach" {
  # The sandbox user can make its own files setuid, and its files are the user's on the host
  # (root's here): the guard takes the bit off at once, and no other account of the host may
  # reach them meanwhile (SS_HOME is the user's alone).
  run sandbox_ssh "$SANDBOX" 'cp /bin/sh ~/projects/shared/suid-sh && chmod 4755 ~/projects/shared/suid-sh'
  assert_success
  assert_equal "$(stat -c %a "$SS_HOME")" "700"
  for _ in $(seq 40); do
    [ "$(stat -c %a "$SS_HOME/projects/shared/suid-sh")" = 755 ] && break
    sleep 0.05
  done
  assert_equal "$(stat -c %a "$SS_HOME/projects/shared/suid-sh")" "755"
  grep -qF "took the setuid and setgid bits off a file the sandbox gave them (on the host it would run as you for anyone who can reach it): ~/super-sandbox/projects/shared/suid-sh" "$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  # (Through a shell: setpriv would look the path up with root's rights still in hand.)
  run setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh -c '"$1" -c "id -u"' sh \
    "$SS_HOME/projects/shared/suid-sh"
  assert_failure 126
  assert_output --partial "Permission denied"
  rm "$SS_HOME/projects/shared/suid-sh"
}

@test "the deploy folder is at /mnt/deploy; deploy copies the build output there, owned by the user" {
  as_owner sh -c 'echo "from host" > "$1"' sh "$E2E_ROOT/deploy/host.txt"
  run sandbox_ssh "$SANDBOX" "stat -c '%U' /mnt/deploy/host.txt && cat /mnt/deploy/host.txt"
  assert_success
  assert_output $'sandbox\nfrom host'
  # Built inside the sandbox, deployed from a subfolder of the project with the shell's function.
  run sandbox_ssh "$SANDBOX" 'mkdir -p ~/projects/web/src ~/projects/web/dist/assets &&
    echo page > ~/projects/web/dist/index.html && echo js > ~/projects/web/dist/assets/app.js &&
    cd ~/projects/web/src && bash -ic deploy'
  assert_success
  assert_line "Deploying /home/sandbox/projects/web/dist/ -> /mnt/deploy/web/"
  assert_equal "$(cat "$E2E_ROOT/deploy/web/index.html")" "page"
  assert_equal "$(cat "$E2E_ROOT/deploy/web/assets/app.js")" "js"
  owner=$(stat -c %u "$SS_HOME/projects")
  for f in web web/assets web/index.html web/assets/app.js; do
    assert_equal "$(stat -c %u "$E2E_ROOT/deploy/$f")" "$owner"
  done
  assert_equal "$(cat "$E2E_ROOT/deploy/host.txt")" "from host"
  run ss vm status --sandbox "$SANDBOX"
  assert_line "Deploy:    $E2E_ROOT/deploy (at /mnt/deploy)"
  # The folder is fixed when the sandbox is made: another one, however usable, is refused.
  install -d -o "$(stat -c %u "$SS_HOME/projects")" "$E2E_ROOT/other-deploy"
  run --separate-stderr ss vm start --sandbox "$SANDBOX" --deploy "$E2E_ROOT/other-deploy"
  assert_failure 64
  assert_equal "${stderr_lines[0]}" "ss-vm: error: sandbox '$SANDBOX' was created with the deploy folder $E2E_ROOT/deploy"
}

@test "git status works inside a shared project (no dubious ownership)" {
  # (A repository made on the host in the shared folder while a sandbox runs is set aside at
  # once: projects with one are made by ss new, and the sandbox's own made by its first session.)
  ss new gitproj >/dev/null
  ss exec gitproj --sandbox "$SANDBOX" -- true
  as_owner touch "$SS_HOME/projects/gitproj/f"
  run sandbox_ssh "$SANDBOX" git -C /home/sandbox/projects/gitproj status --porcelain
  assert_success
  assert_output "?? f"
  run sandbox_ssh "$SANDBOX" git -C /home/sandbox/projects/gitproj config init.defaultBranch
  assert_output "main"
}

@test "docker runs a locally imported image inside the sandbox" {
  # The stand-ins for Lima and Lume boot no init system: the image's dockerd, a systemd service,
  # is not started (in a real Lima or Lume VM it is).
  case "$SS_E2E_BACKEND" in lima | lume) skip "the stand-in for $SS_E2E_BACKEND starts no services" ;; esac
  as_owner mkdir -p "$SS_HOME/projects/dock"
  busybox_tar "$E2E_ROOT/busybox.tar"
  as_owner cp "$E2E_ROOT/busybox.tar" "$SS_HOME/projects/dock/busybox.tar"
  run sandbox_ssh "$SANDBOX" docker import /home/sandbox/projects/dock/busybox.tar ss-e2e-busybox
  assert_success
  run sandbox_ssh "$SANDBOX" docker run --rm --network none ss-e2e-busybox /bin/busybox echo hello-from-docker
  assert_success
  assert_output "hello-from-docker"
}

@test "a sandbox whose projects folder is not mounted is not called ready" {
  # As if the share had not come up at boot: work done there would never reach the host.
  sandbox_ssh "$SANDBOX" sudo umount --lazy /home/sandbox/projects
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_failure 69
  assert_equal "${stderr_lines[0]}" "ss-vm: error: the projects folder is not shared with sandbox '$SANDBOX': /home/sandbox/projects is not mounted"
  assert_equal "${stderr_lines[1]}" "hint: restart the sandbox: ss restart --sandbox $SANDBOX"
  if [ "$SS_E2E_BACKEND" = qemu ]; then
    # What a boot runs (a restart of this VM would cost a minute here).
    sandbox_ssh "$SANDBOX" sudo systemctl restart ss-mount-shares
    run ss vm start --sandbox "$SANDBOX"
    assert_success
  else
    run --separate-stderr ss restart --sandbox "$SANDBOX"
    assert_success
    assert_output "Restarted."
    assert_equal "${stderr_lines[0]}" "Stopping VM..."
    assert_equal "${stderr_lines[1]}" "Starting VM..."
  fi
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/projects/shared/host.txt
  assert_output "from host"
}

@test "status prints the spec's lines" {
  ss new alpha >/dev/null && ss new beta >/dev/null
  run ss status --sandbox "$SANDBOX"
  assert_success
  assert_line --index 0 --regexp '^VM:        running \(uptime: [0-9]+[smhd]'
  assert_line --index 1 --regexp '^CPU:       [0-9]+ cores?$'
  assert_line --index 2 --regexp '^Memory:    [0-9.]+ [MG]B \([0-9.]+ [KMG]B used\)$'
  # The real limit: the storage's size when it is smaller than configured.
  assert_line --index 3 --regexp '^Disk:      [0-9.]+ [MGT]B \([0-9.]+ [KMG]B used(; its storage is smaller than the [0-9.]+ [MGT]B configured)?\)$'
  assert_line --index 4 --regexp '^Projects:  [0-9]+$'
  # The LXD spec's: the address, when the backend gives one, and the snapshots.
  address=$(ss vm status --sandbox "$SANDBOX" --json | jq -r '.address // empty')
  if [ -n "$address" ]; then assert_line "Address:   $address"; fi
  assert_line --regexp '^Snapshots: [0-9]+: (.+, )?clean-baseline(, .+)?$'
  ss vm status --sandbox "$SANDBOX" --json | jq -e '.snapshots | index("clean-baseline") != null'
  assert_line --regexp '^Claude:    not logged in \(run: ss login\)$'
  assert_line --regexp "^Backend:   $SS_E2E_BACKEND "
  # Every field of the JSON is named in ss-json(7), and the folders it was made sharing are said.
  json=$(ss vm status --sandbox "$SANDBOX" --json)
  documented SandboxStatus "$json"
  local mounts=1
  [ "$SS_E2E_BACKEND" != podman ] || mounts=0
  assert_equal "$(jq -c '[.shares.projects, (.shares.mounts | length)]' <<< "$json")" "[true,$mounts]"
}

@test "stop keeps what was installed" {
  sandbox_ssh "$SANDBOX" 'echo kept > ~/marker'
  ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.port > "$BATS_FILE_TMPDIR/old_port"
  ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.host > "$BATS_FILE_TMPDIR/old_host"
  run --separate-stderr ss stop --sandbox "$SANDBOX"
  assert_success
  assert_output "Stopped."
  assert_equal "$stderr" "Stopping VM..."
  run ss vm status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.state == "stopped" and .ssh == null'
  run ss stop --sandbox "$SANDBOX"
  assert_output "Already stopped."
  run machine_pids "$SANDBOX"
  assert_output ""
}

@test "a snapshot of the stopped sandbox is taken and listed" {
  run ss-backend-test "$SS_E2E_BACKEND" take "$SANDBOX" bk1
  assert_success
  run --separate-stderr ss-backend-test "$SS_E2E_BACKEND" take "$SANDBOX" bk1
  assert_failure 73
  run ss-backend-test "$SS_E2E_BACKEND" list "$SANDBOX"
  assert_success
  # Besides the clean-baseline snapshot that provisioning takes where the backend can.
  assert_equal "$(grep -vx clean-baseline <<< "$output")" "bk1"
}

@test "start works when its SSH port was taken meanwhile and ss was killed while starting" {
  old_port=$(cat "$BATS_FILE_TMPDIR/old_port")
  # Only a backend that publishes SSH on a host loopback port can lose that port (a local LXD
  # sandbox is reached at its own address, port 22).
  holder=
  if [ "$(cat "$BATS_FILE_TMPDIR/old_host")" = 127.0.0.1 ]; then
    holder=$(hold_port "$old_port")
    echo "$holder" > "$BATS_FILE_TMPDIR/holder"
  fi
  ss vm start --sandbox "$SANDBOX" > "$BATS_TEST_TMPDIR/start.out" 2>&1 &
  starter=$!
  # Killed as soon as the machine is on its way up (or after it finished, on a fast backend).
  for _ in $(seq 300); do
    state=$(ss vm status --sandbox "$SANDBOX" --json 2>/dev/null | jq -r .state || true)
    [ "$state" = starting ] || [ "$state" = running ] && break
    kill -0 "$starter" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$starter" 2>/dev/null || true
  wait "$starter" || true
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  [[ "$output" == "Started." || "$output" == "Already running." ]]
  new_port=$(ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.port)
  if [ -n "$holder" ]; then
    [ "$new_port" != "$old_port" ]
    kill -0 "$holder"  # the program that took the port is untouched
    kill "$holder"
  fi
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  sandbox_ssh "$SANDBOX" 'echo later > ~/after'  # not in the snapshot: restoring removes it
  # One machine, not two.
  if [ "$SS_E2E_BACKEND" = qemu ]; then
    run pgrep -c -f -- "$SS_HOME/.ss/qemu/$SANDBOX/disk.qcow2"
    assert_output 1
  fi
}

@test "a machine killed behind ss's back is noticed and leaves nothing running" {
  kill_machine "$SANDBOX"
  wait_state "$SANDBOX" stopped 60
  run ss vm status --sandbox "$SANDBOX" --json
  assert_success
  echo "$output" | jq -e '.state == "stopped"'
  if [ "$SS_E2E_BACKEND" = qemu ]; then
    echo "$output" | jq -e '.backend_detail | test("stopped unexpectedly: QEMU was killed by signal 9")'
  fi
  run machine_pids "$SANDBOX"
  assert_output ""
}

@test "Lima: a machine gone while its host agent lingers is stopped by force and started again" {
  [ "$SS_E2E_BACKEND" = lima ] || skip "only Lima keeps a host agent beside the machine"
  ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
  # Lima's host agent closes its forwards before it exits when its machine dies; held still
  # here, it stays, and Lima calls the instance broken: "host agent is running but driver is not".
  agent=$(limactl list --json "$SANDBOX" | jq -r .hostAgentPID)
  kill -STOP "$agent"
  kill_machine "$SANDBOX"
  for _ in $(seq 100); do
    [ "$(limactl list --json "$SANDBOX" 2>/dev/null | jq -r .status)" = Broken ] && break
    sleep 0.1
  done
  limactl list --json "$SANDBOX" 2>/dev/null |
    jq -e '[.status, .errors[0]] == ["Broken", "host agent is running but driver is not"]'
  run ss vm status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.state == "stopped"'
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  run process_alive "$agent"
  assert_failure
  ss vm stop --sandbox "$SANDBOX" >/dev/null
}

@test "the engine's daemon going away mid-session: exit 69 with the words, and setup brings it all back" {
  case "$SS_E2E_BACKEND" in
    lxd) what="the LXD daemon is not running" ;;
    docker) what="the Docker daemon is not running" ;;
    *) skip "$SS_E2E_BACKEND runs sandboxes without a daemon" ;;
  esac
  ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
  if [ "$SS_E2E_BACKEND" = lxd ]; then
    # The daemon alone (its containers' monitors and proxies, and daemons nested in
    # containers, are all called lxd): its containers live on.
    lxd_pid=$(lxc query /1.0 | jq -r .environment.server_pid)
    kill -TERM "$lxd_pid"
    for _ in $(seq 100); do kill -0 "$lxd_pid" 2>/dev/null || break; sleep 0.1; done
  else
    # dockerd is stopped, and its containers with it.
    ss vm setup --backend docker --stop >/dev/null 2>&1
  fi
  run --separate-stderr ss vm status --sandbox "$SANDBOX"
  assert_equal "$status" 69
  [[ "${stderr_lines[0]}" == "ss-vm: error: $what"* ]]
  assert_equal "${stderr_lines[-1]}" "hint: start it: ss vm setup --backend $SS_E2E_BACKEND"
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_equal "$status" 69
  run ss vm setup --backend "$SS_E2E_BACKEND"
  assert_success
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
}

@test "Docker killed outright starts again, though its containerd's number is another process's" {
  [ "$SS_E2E_BACKEND" = docker ] || skip "Docker's daemon only"
  ss vm setup --backend docker >/dev/null 2>&1
  ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
  local pidfile=/var/run/docker/containerd/containerd.pid dockerd containerd holder
  dockerd=$(cat /var/run/docker.pid)
  containerd=$(cat "$pidfile")
  # A power cut, as a machine without an init system has: both gone, their pid files left.
  kill -KILL "$dockerd" "$containerd"
  for _ in $(seq 100); do
    process_alive "$dockerd" || process_alive "$containerd" || break
    sleep 0.1
  done
  run process_alive "$dockerd"
  assert_failure
  run process_alive "$containerd"
  assert_failure
  # By the next start another process holds containerd's old number.
  sleep 600 >/dev/null 2>&1 3>&- &
  holder=$!
  printf %s "$holder" > "$pidfile"  # as containerd writes it: no newline
  run ss vm setup --backend docker
  kill "$holder"
  assert_success
  docker info >/dev/null
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
}

@test "Lume's server going away: ss starts it again, and reads Lume's storage when it cannot" {
  [ "$SS_E2E_BACKEND" = lume ] || skip "only Lume's machines live in a server of its own"
  ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
  lume_server_stop  # the machine dies with it, as Lume's do
  run ss vm status --sandbox "$SANDBOX" --json
  assert_success
  echo "$output" | jq -e '.state == "stopped"'
  # Its port taken by a socket that does not listen: nothing answers and no server can start.
  lume_server_stop
  python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); print(flush=True); time.sleep(600)' \
    "${SS_LUME_URL##*:}" > "$BATS_TEST_TMPDIR/holding" 3>&- &
  echo $! > "$BATS_FILE_TMPDIR/holder"
  for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/holding" ] && break; sleep 0.1; done
  run --separate-stderr ss vm status --sandbox "$SANDBOX" --json
  assert_success
  echo "$output" | jq -e '.state == "stopped"'
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_equal "$status" 69
  [[ "$stderr" == *"the Lume server ss started for $SS_LUME_URL exited"* ]]
  [[ "$stderr" == *"Port ${SS_LUME_URL##*:} is already in use by another process"* ]]
  kill "$(cat "$BATS_FILE_TMPDIR/holder")"
  rm "$BATS_FILE_TMPDIR/holder"
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
}

@test "restoring the snapshot brings its filesystem back; name, SSH and projects stay" {
  run --separate-stderr ss-backend-test "$SS_E2E_BACKEND" restore "$SANDBOX" nope
  assert_failure 66
  assert_equal "$stderr" "ss-backend-test: error: no snapshot 'nope' of '$SANDBOX'"
  run ss-backend-test "$SS_E2E_BACKEND" restore "$SANDBOX" bk1
  assert_success
  run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_success
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/marker
  assert_output "kept"
  run sandbox_ssh "$SANDBOX" test -e /home/sandbox/after
  assert_failure 1
  run sandbox_ssh "$SANDBOX" cat /mnt/deploy/host.txt
  assert_output "from host"
  run sandbox_ssh "$SANDBOX" 'echo restored > /home/sandbox/projects/shared/restored.txt'
  assert_success
  assert_equal "$(stat -c %u "$SS_HOME/projects/shared/restored.txt")" "$(stat -c %u "$SS_HOME/projects")"
  run ss-backend-test "$SS_E2E_BACKEND" delete "$SANDBOX" bk1
  assert_success
  run ss-backend-test "$SS_E2E_BACKEND" list "$SANDBOX"
  assert_success
  assert_equal "$(grep -vx clean-baseline <<< "$output")" ""
}

@test "reset replaces the sandbox and keeps the projects" {
  as_owner sh -c 'echo keep > "$1"' sh "$SS_HOME/projects/shared/keep.txt"
  run ss reset --sandbox "$SANDBOX" </dev/null
  assert_failure 64
  run --separate-stderr ss reset --sandbox "$SANDBOX" --yes
  assert_success
  assert_output "Done."
  run sandbox_ssh "$SANDBOX" test -e /home/sandbox/marker
  assert_failure
  run sandbox_ssh "$SANDBOX" cat /home/sandbox/projects/shared/keep.txt
  assert_output "keep"
  # The new sandbox keeps the deploy folder.
  run sandbox_ssh "$SANDBOX" cat /mnt/deploy/web/index.html
  assert_output "page"
  ss vm status --sandbox "$SANDBOX" --json | jq -e --arg d "$E2E_ROOT/deploy" '.deploy == $d'
}

@test "an ephemeral sandbox is removed when its last session ends; the projects stay" {
  eph="$SANDBOX-eph"
  ss config set "sandboxes.$eph.ephemeral" true >/dev/null
  ss config set "sandboxes.$eph.backend" "$SS_E2E_BACKEND" >/dev/null
  ss new eph-proj >/dev/null
  SS_SANDBOX="$eph" run --separate-stderr ss eph-proj -- sh -c 'echo made > made-inside && echo inside'
  assert_success
  assert_output "inside"
  assert_equal "${stderr_lines[-1]}" "Removing ephemeral sandbox '$eph'..."
  run ss vm status --sandbox "$eph" --json
  echo "$output" | jq -e '.state == "not-exists"'
  run machine_pids "$eph"
  assert_output ""
  assert_not_exists "$SS_HOME/.ss/sandboxes/$eph"
  assert_equal "$(cat "$SS_HOME/projects/eph-proj/made-inside")" "made"
}

@test "delete removes it; the projects stay; nothing is left behind" {
  run ss vm delete --sandbox "$SANDBOX" --yes
  assert_success
  assert_output "Deleted: $SANDBOX"
  run ss vm status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.state == "not-exists"'
  assert_file_exists "$SS_HOME/projects/shared/keep.txt"
  run machine_pids "$SANDBOX"
  assert_output ""
  case "$SS_E2E_BACKEND" in
    qemu) assert_not_exists "$SS_HOME/.ss/qemu/$SANDBOX" ;;
    docker | podman)
      run "$(engine_client)" volume inspect "ss-$SANDBOX-docker"
      assert_failure
      run "$(engine_client)" volume ls --quiet --filter "label=ss.sandbox.name=$SANDBOX"
      assert_output ""
      ;;
  esac
}
