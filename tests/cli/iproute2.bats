#!/usr/bin/env bats
# Linux has another ss: iproute2's socket statistics tool. Whatever is not ours reaches it
# unchanged, and ours keeps working.

load helpers

setup() {
  ss_setup
  [ -x /usr/bin/ss ] || [ -x /bin/ss ] || skip "iproute2 is not installed"
}

@test "ss -tlnp prints iproute2's socket table" {
  run ss -tlnp
  assert_success
  assert_line --index 0 --regexp '^State +Recv-Q +Send-Q +Local Address:Port +Peer Address:Port *Process'
}

@test "ss -s prints iproute2's summary" {
  run ss -s
  assert_success
  assert_line --index 0 --regexp '^Total: [0-9]+'
}

@test "ss state established reaches iproute2" {
  run --separate-stderr ss state established
  assert_success
  assert_line --index 0 --regexp '^Netid +Recv-Q +Send-Q'
}

@test "argv reaches the next ss on PATH unchanged" {
  stub ss 'printf "%s|" "$0" "$@"'
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss -tan 'dst 1.2.3.4' '' state
  assert_success
  assert_output "$STUBS/ss|-tan|dst 1.2.3.4||state|"
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss --tcp --listening
  assert_output "$STUBS/ss|--tcp|--listening|"
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss -h
  assert_output "$STUBS/ss|-h|"
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss dport = :22
  assert_output "$STUBS/ss|dport|=|:22|"
}

@test "bare ss without a terminal is iproute2's socket list" {
  stub ss 'echo "iproute2 $#"'
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss </dev/null
  assert_success
  assert_output "iproute2 0"
}

@test "the ss before ours on PATH is used when none comes after" {
  stub ss 'echo "other $*"'
  PATH="$STUBS:$SS_BUILD_DIR/bin" run "$SS_BUILD_DIR/bin/ss" -s
  assert_output "other -s"
}

@test "every copy of this dispatcher on PATH is skipped on the way to iproute2's" {
  # As on a machine with ss installed system-wide, another copy in ~/.local and a build tree
  # first on PATH (the README's install, its "Building by hand" and the tests' own PATH).
  mkdir -p "$BATS_TEST_TMPDIR/usr-local/bin" "$BATS_TEST_TMPDIR/dot-local/bin"
  cp "$SS_BUILD_DIR/bin/ss" "$BATS_TEST_TMPDIR/usr-local/bin/ss"
  cp "$SS_BUILD_DIR/bin/ss" "$BATS_TEST_TMPDIR/dot-local/bin/ss"
  stub ss 'echo "iproute2 $*"'
  PATH="$SS_BUILD_DIR/bin:$BATS_TEST_TMPDIR/dot-local/bin:$BATS_TEST_TMPDIR/usr-local/bin:$STUBS:/usr/bin:/bin" \
    run --separate-stderr "$BATS_TEST_TMPDIR/usr-local/bin/ss" -tlnp
  assert_success
  assert_output "iproute2 -tlnp"
  PATH="$BATS_TEST_TMPDIR/dot-local/bin:$SS_BUILD_DIR/bin:$BATS_TEST_TMPDIR/usr-local/bin:/usr/bin:/bin" \
    run --separate-stderr ss -tlnp
  assert_success
  assert_line --index 0 --regexp '^State +Recv-Q +Send-Q'
}

@test "a project named like an iproute2 filter word is ours" {
  mkdir -p "$SS_HOME/projects/state"
  stub ss-attach 'echo "attach $*"'
  export SS_EXEC_PATH="$STUBS"
  run ss state
  assert_output "attach state"
}

@test "ss new refuses the words that start iproute2's filters, which keep reaching iproute2" {
  for word in state dst dport exclude; do
    run --separate-stderr ss new "$word"
    assert_equal "$status" 65
    assert_equal "${stderr_lines[0]}" "ss-project: error: '$word' cannot name a project: 'ss $word ...' belongs to iproute2's ss (its filters start with that word), so the project could never be opened with 'ss $word'"
    assert_equal "${stderr_lines[1]}" "hint: choose another name, such as $word-app"
    assert_not_exists "$SS_HOME/projects/$word"
  done
  run --separate-stderr ss state established
  assert_success
  assert_line --index 0 --regexp '^Netid +Recv-Q +Send-Q'
}

@test "our options before the command are ours: --sandbox NAME, --sandbox=NAME, --json" {
  for b in ss-vm ss-project ss-attach; do stub "$b" 'echo "$(basename "$0") $*"'; done
  export SS_EXEC_PATH="$STUBS"
  run ss --sandbox box status
  assert_output "ss-vm status --sandbox box"
  run ss --json --sandbox=box restart
  assert_output "ss-vm restart --json --sandbox=box"
  run ss --json list
  assert_output "ss-project list --json"
  run ss --sandbox box my-app -t
  assert_output "ss-attach --sandbox box my-app -t"
  # Without a command, or before one of iproute2's words or options: exit 64, never iproute2.
  run --separate-stderr ss --json
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: '--json' goes with a command
hint: such as: ss --sandbox NAME status, ss --json list; see 'ss --help'"
  run --separate-stderr ss --sandbox
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --sandbox needs a sandbox name"
  run --separate-stderr ss --sandbox box state established
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: '--sandbox' goes with a command, and 'state' is not one"
  run --separate-stderr ss --json -tlnp
  assert_equal "$status" 64
}

@test "two copies of this dispatcher never hand a call to each other forever" {
  run --separate-stderr env SS_PASSTHROUGH=1 ss -tlnp
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: '-tlnp' is not an ss option, and no other 'ss' was found"
}

@test "our own options still work: --help, --version" {
  run ss --version
  assert_output --regexp '^ss [0-9]'
  run ss --help
  assert_line --index 0 --regexp '^usage: ss'
}
