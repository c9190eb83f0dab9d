#!/usr/bin/env bats
# The sandbox image the other end-to-end files start from, built once into the shared cache
# ($SS_CACHE) before any of them starts (a CTest fixture, tests/CMakeLists.txt): from nothing the
# build takes about 20 minutes on a busy machine, which counted against the time limit of
# whichever file built it first. Once built, this takes a second.

load helpers

setup_file() { e2e_home; }
teardown_file() { e2e_home_remove; }
setup() { e2e_env; }

@test "the sandbox image is built, or already up to date, in the shared cache" {
  run --separate-stderr ss vm image build
  assert_success
  id=$(grep -oE "^==> image: image [a-z]+-[0-9a-f]+ (is up to date|built)" <<< "$stderr" | cut -d' ' -f4)
  [ -n "$id" ]
  # That image, ready to use: its container tarball and its VM disk.
  run ss vm image ls --json
  assert_success
  path=$(jq -r --arg id "$id" '.items[] | select(.id == $id) | .path' <<< "$output")
  assert [ -s "$path/rootfs.tar" ]
  assert [ -s "$path/base.qcow2" ]
}
