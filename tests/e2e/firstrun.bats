#!/usr/bin/env bats
# The first sandbox after install, on the backend in $SS_E2E_BACKEND: the command that makes it
# builds the image first (a cache of its own, as on a new machine), and the sandbox it then
# makes shares the projects folder both ways. The build's mounts live in a namespace of its own;
# the sandbox's (an id-mapped view when ss runs as root) must be the host's, where the engine
# looks for them.

load helpers

setup_file() {
  : "${SS_E2E_BACKEND:?set SS_E2E_BACKEND (lxd, docker, podman, qemu)}"
  e2e_home
  export SANDBOX="first-$SS_E2E_BACKEND-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  ss vm setup --backend "$SS_E2E_BACKEND" --json > "$BATS_FILE_TMPDIR/setup.json"
}

teardown_file() {
  e2e_env
  ss vm delete --sandbox "$(cat "$BATS_FILE_TMPDIR/sandbox")" --yes --force || true
  if jq -e '.started | length > 0' "$BATS_FILE_TMPDIR/setup.json" >/dev/null 2>&1; then
    ss vm setup --backend "$SS_E2E_BACKEND" --stop >&3 2>&1 || true
  fi
  e2e_home_remove
}

setup() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
}

@test "the command that builds the image makes a sandbox that shares the projects folder both ways" {
  export SS_CACHE="$E2E_ROOT/cache"
  as_owner sh -c 'echo "from the host" > "$1"' sh "$SS_HOME/projects/e2e-scratch/host.txt"
  run ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND"
  assert_success
  assert_output --partial "debootstrap "  # it did build
  run sandbox_ssh "$SANDBOX" 'cat ~/projects/e2e-scratch/host.txt && echo box > ~/projects/e2e-scratch/box.txt'
  assert_success
  assert_output "from the host"
  assert_equal "$(cat "$SS_HOME/projects/e2e-scratch/box.txt")" "box"
  assert_equal "$(stat -c %u:%g "$SS_HOME/projects/e2e-scratch/box.txt")" "$(stat -c %u:%g "$SS_HOME/projects")"
  # (No stand-in internet here: the health check's network line fails, its folder lines do not.)
  run ss vm health-check --sandbox "$SANDBOX"
  assert_line --regexp "^project directory +ok +/home/sandbox/projects is writable$"
  assert_line --regexp "^source mount +ok +/home/sandbox/projects shared from the host"
}
