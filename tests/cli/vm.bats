#!/usr/bin/env bats
# ss-vm's command line: every message and exit status that needs no running sandbox. The
# backends' tools are stubs on PATH, so these never touch a real daemon or start a VM.

load helpers

setup() {
  ss_setup
}

@test "no command: usage on stderr, exit 64; --help on stdout, exit 0" {
  run --separate-stderr ss vm
  assert_equal "$status" 64
  assert_equal "$output" ""
  [[ "${stderr_lines[0]}" == "usage: ss vm COMMAND [OPTIONS]" ]]
  run --separate-stderr ss vm --help
  assert_success
  assert_line --index 0 "usage: ss vm COMMAND [OPTIONS]"
  assert_equal "$stderr" ""
}

@test "an unknown command: exit 64 with did-you-mean" {
  run --separate-stderr ss vm stauts
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: unknown command 'stauts'
hint: did you mean 'status'?
hint: see 'ss vm --help'"
  run --separate-stderr ss vm start extra
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: unexpected argument 'extra'
hint: usage: ss vm start
hint: see 'ss vm start --help'"
  run --separate-stderr ss vm image frob
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: unknown command 'image frob'
hint: see 'ss vm --help'"
  run --separate-stderr ss vm image
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: usage: ss vm image build|ls|rm
hint: see 'ss vm --help'"
  run --separate-stderr ss vm image rm
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: usage: ss vm image rm ID
hint: see 'ss vm image rm --help'"
  run --separate-stderr ss health-check a b
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: unexpected argument 'b'
hint: usage: ss health-check [NAME]
hint: see 'ss health-check --help'"
}

@test "an option of another vm command is exit 64, naming the commands it goes with" {
  run --separate-stderr ss vm list --release trixie --mirror x --force
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: --release is not an option of 'ss vm list'
hint: --release goes with ss vm image build
hint: see 'ss vm list --help'"
  run --separate-stderr ss vm stop --fish
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: --fish is not an option of 'ss vm stop'
hint: --fish goes with ss vm start and ss vm reset
hint: see 'ss vm stop --help'"
  for bad in "image ls --yes" "doctor --backend lxd" "backends --force" "image rm x --json" \
    "health-check --timeout 5" "setup --yes" "provision --json" "status --stop"; do
    run --separate-stderr ss vm $bad
    assert_equal "$status" 64
    [[ "$stderr" == "ss-vm: error: --"*" is not an option of '"* ]]
  done
  # Nothing was made.
  assert_not_exists "$SS_HOME/.ss/sandboxes"
}

@test "invalid sandbox names and timeouts" {
  run --separate-stderr ss vm start --sandbox Bad_Name
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-vm: error: invalid sandbox name 'Bad_Name': use lowercase letters, numbers and hyphens, starting with a letter"
  run --separate-stderr env SS_SANDBOX=-x ss vm status
  assert_equal "$status" 65
  run --separate-stderr ss vm start --timeout 0
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: --timeout must be a positive number of seconds, not 0"
}

@test "a daemon that is not running: exit 69 with the command that starts it" {
  run --separate-stderr ss vm start
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-vm: error: no sandbox backend can run on this machine
  qemu: QEMU does not run (stub qemu) (install it: ss vm setup --backend qemu)
  lxd: the LXD daemon is not running (Error: Get \"http://unix.socket/1.0\": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory) (start it: ss vm setup --backend lxd)
  docker: the Docker daemon is not running (Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?) (start it: ss vm setup --backend docker)
  podman: podman does not work (Error: stub podman) (set it up: ss vm setup --backend podman)
hint: set one up: ss vm setup --backend lxd (or qemu, docker, podman)"
  run --separate-stderr ss vm start --backend lxd
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-vm: error: the LXD daemon is not running (Error: Get \"http://unix.socket/1.0\": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory)
hint: start it: ss vm setup --backend lxd"
  run --separate-stderr ss status --backend lxd
  assert_equal "$status" 69
}

@test "Lume is refused as macOS-only (69); Lima and Lume without their tools say where they come from (69)" {
  run --separate-stderr ss vm start --backend lume
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-vm: error: Lume runs on macOS only
hint: use one of: auto, qemu, lxd, docker, podman, lima"
  # (No limactl on this PATH.)
  PATH=$(dirname "$(command -v ss)"):/usr/bin:/bin run --separate-stderr ss vm start --backend lima
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-vm: error: Lima is not installed (no limactl)
hint: install Lima 2 or later: https://lima-vm.io/docs/installation/"
  # A server that stands in for Lume makes the backend exist; with nothing answering there and
  # no lume to start one, it says where Lume comes from.
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  SS_LUME_URL="http://127.0.0.1:$port" PATH=$(dirname "$(command -v ss)"):/usr/bin:/bin \
    run --separate-stderr ss vm start --backend lume
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-vm: error: Lume is not installed (no lume)
hint: install Lume: https://github.com/trycua/cua/tree/main/libs/lume"
  run ss vm list
  refute_output --partial super-sandbox
}

@test "reset asks first; without a terminal and without --yes it refuses" {
  run --separate-stderr ss reset </dev/null
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: confirmation needed, but there is no terminal to ask on
hint: pass --yes to confirm from a script"
}

@test "reset on a terminal shows the spec's text, and anything but y keeps the sandbox" {
  run script -qec "printf 'n\n' | true; ss reset" /dev/null <<< "n"
  [[ "$output" == *"This will:"*"• Stop the VM"*"• Reset to fresh state"*"• Require re-login to Claude Code, gh, vercel"*"Projects in ~/super-sandbox/projects/ are NOT affected."*"Continue? [y/N]: "*"Cancelled."* ]]
}

@test "delete and image rm refuse without a terminal; unknown images are exit 66" {
  run --separate-stderr ss vm image rm nope
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss-vm: error: no image 'nope'"
  run --separate-stderr ss vm delete --sandbox never-made
  assert_equal "$status" 69
}

@test "setup names only what it knows" {
  run --separate-stderr ss vm setup --backend vmware
  assert_equal "$status" 64
}

@test "list with no sandboxes is empty; --json is a document" {
  run ss vm list
  assert_success
  assert_output ""
  run ss vm list --json
  echo "$output" | jq -e '.kind == "SandboxList" and .version == 1 and .items == []'
}

@test "--deploy: a folder that is missing, not a directory or not for this command is refused first" {
  run --separate-stderr ss vm start --deploy "$BATS_TEST_TMPDIR/nope"
  assert_equal "$status" 66
  assert_equal "$stderr" "ss-vm: error: deploy folder '$BATS_TEST_TMPDIR/nope' does not exist
hint: create it first (mkdir -p $BATS_TEST_TMPDIR/nope), or name another: --deploy DIR"
  touch "$BATS_TEST_TMPDIR/file"
  run --separate-stderr ss reset --yes --deploy "$BATS_TEST_TMPDIR/file"
  assert_equal "$status" 66
  assert_equal "$stderr" "ss-vm: error: deploy folder '$BATS_TEST_TMPDIR/file' is not a directory
hint: name a directory: --deploy DIR"
  run --separate-stderr ss vm status --deploy "$BATS_TEST_TMPDIR"
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: --deploy is not an option of 'ss vm status'
hint: --deploy goes with ss vm start and ss vm reset
hint: see 'ss vm status --help'"
  # Nothing was made.
  assert_not_exists "$SS_HOME/.ss/sandboxes"
  # One the sandbox's user could not write to (the projects' owner: uid 1000 when root runs ss).
  site="$BATS_TEST_TMPDIR/site"
  mkdir -m 555 "$site"
  run --separate-stderr ss vm start --deploy "$site"
  assert_equal "$status" 77
  [[ "${stderr_lines[0]}" == "ss-vm: error: deploy folder '$site' is not writable by "* ]]
  owner=$(stat -c %u "$SS_HOME/projects")
  who="that user"
  [ "$owner" != "$(id -u)" ] || who=yourself
  assert_equal "${stderr_lines[1]}" "hint: give it to $who: chown $owner $site, or name another: --deploy DIR"
  # A folder that is theirs gets as far as the backend (none runs here).
  chmod 755 "$site"
  chown "$owner" "$site"
  run --separate-stderr ss vm start --deploy "$site"
  assert_equal "$status" 69
}

@test "a VM's share mounter tries a share again while its device comes up, and names one that never does" {
  # The guest's boot script, run here with the guest's tools stubbed: the seed lists three
  # shares; 'projects' mounts at once (virtiofs), 'ro' only on the third try (9p, whose
  # transport is there before its devices), 'gone' never.
  guest="$BATS_TEST_TMPDIR/guest"
  mkdir -p "$guest"
  export GUEST="$guest"
  stub blkid 'echo /dev/vdb'
  stub mktemp '[ "$*" = "-d /run/ss-seed.XXXXXX" ] || exec /usr/bin/mktemp "$@"
exec /usr/bin/mktemp -d "$GUEST/ss-seed.XXXXXX"'
  stub umount 'rm "$1/ss-mounts"'
  stub mountpoint 'grep -sqxF "$2" "$GUEST/mounted"'
  stub mount 'echo "$*" >> "$GUEST/mount.log"
if [ "$1" = -o ]; then
  printf "projects %s rw\nro %s ro\ngone %s rw\n" "$GUEST/projects" "$GUEST/ro" "$GUEST/gone" > "$4/ss-mounts"
  exit 0
fi
case "$2:$5" in
  virtiofs:projects) echo "$6" >> "$GUEST/mounted"; exit 0 ;;
  9p:ro) tries=$(grep -c "^-t 9p .* ro " "$GUEST/mount.log")
    if [ "$tries" -ge 3 ]; then echo "$6" >> "$GUEST/mounted"; exit 0; fi ;;
esac
echo "mount: $6: mount($5) failed: No such file or directory" >&2
exit 32'
  run --separate-stderr env PATH="$STUBS:$PATH" SS_MOUNT_SECONDS=2 \
    sh "$SS_SOURCE_DIR/shell/ss-mount-shares"
  assert_equal "$status" 1
  assert_equal "$(cat "$guest/mounted")" "$guest/projects
$guest/ro"
  assert_equal "$(grep -c "^-t 9p -o ro,.* ro $guest/ro\$" "$guest/mount.log")" 3
  # The one that never came is named, with the mount's own words, after the wait.
  assert_equal "$stderr" "mount: $guest/gone: mount(gone) failed: No such file or directory
ss-mount-shares: cannot mount the share 'gone' on $guest/gone"
  [ "$(grep -c " gone " "$guest/mount.log")" -ge 2 ]
  # The seed's mount point is gone with it.
  assert_equal "$(ls "$guest" | grep -c ss-seed)" 0
}
