#!/usr/bin/env bats
# ss update and the check on launch, against a release feed served on loopback: semantic
# versions, the checksum, atomic replacement, and a bad checksum, a truncated download, a bad
# archive or a failed replace leaving the old version working. Runs an install copied to a
# prefix of the test's own.

load helpers

setup() {
  ss_setup
  unset SS_NO_UPDATE
  PREFIX="$BATS_TEST_TMPDIR/prefix"
  mkdir -p "$PREFIX/bin" "$PREFIX/libexec/ss"
  cp "$SS_BUILD_DIR/bin/ss" "$PREFIX/bin/"
  cp "$SS_BUILD_DIR"/libexec/ss/ss-* "$PREFIX/libexec/ss/"
  cp -a "$PREFIX" "$BATS_TEST_TMPDIR/original"
  FEED="$BATS_TEST_TMPDIR/feed"
  mkdir -p "$FEED"
  python3 "$SS_SOURCE_DIR/tests/cli/feed_server.py" "$FEED" "$BATS_TEST_TMPDIR/port" \
    "$BATS_TEST_TMPDIR/requests" &
  FEED_PID=$!
  for _ in $(seq 300); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.1; done
  "$PREFIX/bin/ss" config set updates.feed "http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")/" >/dev/null
  ARCHIVE="ss-linux-$(uname -m).tar.gz"
}

teardown() {
  [ -z "${FEED_PID:-}" ] || kill "$FEED_PID" 2>/dev/null || true
  # Each test's install is a copy of the build (1.4 GB under ASan, twice with the original):
  # gone with the test, or the file's tests fill the disk before Bats removes its folder.
  rm -rf "$BATS_TEST_TMPDIR"/{prefix,original,feed,release-*}
}

# release VERSION: publishes VERSION in the feed: bin/ss answers --version as VERSION (and runs
# the real ss otherwise), libexec/ss/ss-project is a copy of the real one.
release() {
  local v=$1 tree="$BATS_TEST_TMPDIR/release-$1"
  mkdir -p "$tree/bin" "$tree/libexec/ss" "$FEED/$v"
  printf '#!/bin/sh\n[ "$1" = --version ] && { echo "ss %s (commit test, built today)"; exit 0; }\nexec "%s" "$@"\n' \
    "$v" "$SS_BUILD_DIR/bin/ss" >"$tree/bin/ss"
  chmod 755 "$tree/bin/ss"
  cp "$SS_BUILD_DIR/libexec/ss/ss-project" "$tree/libexec/ss/"
  tar -czf "$FEED/$v/$ARCHIVE" -C "$tree" bin libexec
  (cd "$FEED/$v" && sha256sum "$ARCHIVE" >checksums.txt)
  echo "$v" >"$FEED/latest"
}

stderr_has() { printf '%s\n' "${stderr_lines[@]}" | grep -qxF -- "$1" || { echo "no stderr line: $1"; false; }; }

unchanged() {
  cmp "$PREFIX/bin/ss" "$BATS_TEST_TMPDIR/original/bin/ss"
  for f in "$BATS_TEST_TMPDIR"/original/libexec/ss/*; do cmp "$f" "$PREFIX/libexec/ss/$(basename "$f")"; done
  [ -z "$(find "$PREFIX" -name '*.ss-update')" ]
  run "$PREFIX/bin/ss" --version
  assert_success
  [[ "$output" == "ss 0.1.0 "* ]]
}

@test "up to date" {
  release 0.1.0
  run --separate-stderr "$PREFIX/bin/ss" update
  assert_success
  assert_output "Current version: 0.1.0
Latest version:  0.1.0

ss is up to date."
  unchanged
}

@test "a newer release: the spec's output, the binaries replaced" {
  release 1.3.0
  export SS_UPDATE_CURRENT_VERSION=1.2.0
  run --separate-stderr "$PREFIX/bin/ss" update --check
  assert_failure 1
  assert_output "Current version: 1.2.0
Latest version:  1.3.0

Run 'ss update' to install."
  run --separate-stderr "$PREFIX/bin/ss" update
  assert_success
  assert_output "Current version: 1.2.0
Latest version:  1.3.0

Updating...
Updated to 1.3.0"
  run "$PREFIX/bin/ss" --version
  assert_output "ss 1.3.0 (commit test, built today)"
  cmp "$PREFIX/libexec/ss/ss-project" "$SS_BUILD_DIR/libexec/ss/ss-project"
  [ -z "$(find "$PREFIX" -name '*.ss-update')" ]
}

@test "an older or pre-release feed version is not an update" {
  release 1.3.0-rc.1
  SS_UPDATE_CURRENT_VERSION=1.3.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_success
  assert_line "ss is up to date."
  unchanged
}

@test "a bad checksum leaves the old version working" {
  release 1.3.0
  sed -i -E "s/^[0-9a-f]{64}/$(printf '0%.0s' $(seq 64))/" "$FEED/1.3.0/checksums.txt"
  SS_UPDATE_CURRENT_VERSION=1.2.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-update: error: checksum mismatch for $ARCHIVE 1.3.0"
  unchanged
}

@test "a truncated download leaves the old version working" {
  release 1.3.0
  touch "$FEED/1.3.0/$ARCHIVE.truncate"
  SS_UPDATE_CURRENT_VERSION=1.2.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 69
  [[ "${stderr_lines[0]}" == "ss-update: error: cannot reach http://127.0.0.1:"*"/1.3.0/$ARCHIVE: "* ]]
  unchanged
}

@test "an archive with other files, or whose ss does not run as that version, is refused" {
  release 1.3.0
  mkdir -p "$BATS_TEST_TMPDIR/release-1.3.0/etc"
  echo x >"$BATS_TEST_TMPDIR/release-1.3.0/etc/passwd"
  tar -czf "$FEED/1.3.0/$ARCHIVE" -C "$BATS_TEST_TMPDIR/release-1.3.0" bin libexec etc
  (cd "$FEED/1.3.0" && sha256sum "$ARCHIVE" >checksums.txt)
  SS_UPDATE_CURRENT_VERSION=1.2.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-update: error: the release archive holds an unexpected file: etc/passwd"
  unchanged
  release 1.4.0
  sed -i 's/ss 1.4.0/ss 1.3.9/' "$BATS_TEST_TMPDIR/release-1.4.0/bin/ss"
  tar -czf "$FEED/1.4.0/$ARCHIVE" -C "$BATS_TEST_TMPDIR/release-1.4.0" bin libexec
  (cd "$FEED/1.4.0" && sha256sum "$ARCHIVE" >checksums.txt)
  SS_UPDATE_CURRENT_VERSION=1.2.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-update: error: the downloaded ss does not run as version 1.4.0"
  unchanged
}

@test "a failed replace leaves the old version working" {
  release 1.3.0
  mkdir "$PREFIX/libexec/ss/.ss-project.ss-update" # the new ss-project cannot be written
  SS_UPDATE_CURRENT_VERSION=1.2.0 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 74
  stderr_has "hint: the installed version was not changed"
  rmdir "$PREFIX/libexec/ss/.ss-project.ss-update"
  unchanged
}

@test "a feed that is not a feed, and SS_NO_UPDATE" {
  echo "<html>" >"$FEED/latest"
  run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-update: error: the release feed's latest version is not a version: '<html>'"
  rm "$FEED/latest"
  run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 69
  SS_NO_UPDATE=1 run --separate-stderr "$PREFIX/bin/ss" update
  assert_failure 69
  assert_equal "${stderr_lines[0]}" "ss-update: error: updates are turned off (SS_NO_UPDATE is set)"
  unchanged
}

# launch PROJECT: `ss PROJECT` from the prefix (it ends at the missing backend, after the check).
launch() { run --separate-stderr "$PREFIX/bin/ss" "$@"; }
wait_staged() {
  for _ in $(seq 300); do
    # staged, and the check that staged it has let go of the lock
    [ -f "$SS_HOME/.ss/update/staged/VERSION" ] && flock -n "$SS_HOME/.ss/update/lock" true && return 0
    sleep 0.1
  done
  cat "$SS_HOME/.ss/update/log" >&2
  return 1
}

@test "on launch: checked in the background at most once a day, installed on the next run" {
  "$PREFIX/bin/ss" new my-app >/dev/null
  release 1.3.0
  export SS_UPDATE_CURRENT_VERSION=1.2.0
  launch my-app
  assert_equal "$status" 69 # no backend here: the session itself fails, as it would anyway
  wait_staged
  [ "$(grep -c '^GET /latest$' "$BATS_TEST_TMPDIR/requests")" -eq 1 ]
  unchanged # staged, not installed yet
  launch my-app
  stderr_has "Updated to 1.3.0"
  run "$PREFIX/bin/ss" --version
  assert_output "ss 1.3.0 (commit test, built today)"
  "$PREFIX/libexec/ss/ss-attach" my-app 2>/dev/null || true
  [ "$(grep -c '^GET /latest$' "$BATS_TEST_TMPDIR/requests")" -eq 1 ] # not again the same day
  [ ! -e "$SS_HOME/.ss/update/staged" ]
}

@test "on launch: updates.auto_apply false only tells; updates.check false and SS_NO_UPDATE ask nothing" {
  "$PREFIX/bin/ss" new my-app >/dev/null
  release 1.3.0
  export SS_UPDATE_CURRENT_VERSION=1.2.0
  "$PREFIX/bin/ss" config set updates.auto_apply false >/dev/null
  launch my-app
  wait_staged
  launch my-app
  stderr_has "Update available: 1.2.0 -> 1.3.0"
  stderr_has "Run 'ss update' to install."
  unchanged
  rm -rf "$SS_HOME/.ss/update" "$BATS_TEST_TMPDIR/requests"
  SS_NO_UPDATE=1 launch my-app
  "$PREFIX/bin/ss" config set updates.check false >/dev/null
  launch my-app
  sleep 1
  [ ! -e "$BATS_TEST_TMPDIR/requests" ]
  [ ! -e "$SS_HOME/.ss/update/last-check" ]
}
