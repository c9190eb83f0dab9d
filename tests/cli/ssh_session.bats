#!/usr/bin/env bats
# The SSH layer from the command line (ss-ssh-test), against a real sshd started by the test:
# refusals with their exact messages and exit statuses, and streamed commands.

load helpers
load sshd

setup() {
  ss_setup
  sshd_start
}

teardown() { sshd_stop; }

fingerprint() { ssh-keygen -l -E sha256 -f "$1" | cut -d' ' -f2; }

@test "a changed host key is refused with 77 and known_hosts stays as it was" {
  "$SS_SSH_TEST" keygen "$BATS_TEST_TMPDIR/other" other
  "$SS_SSH_TEST" pin "$SSHD_DIR/known_hosts" 127.0.0.1 "$SSHD_PORT" "$BATS_TEST_TMPDIR/other.pub"
  before=$(cat "$SSHD_DIR/known_hosts")
  run --separate-stderr "$SS_SSH_TEST" "${SSH_ARGS[@]}" run true
  assert_equal "$status" 77
  assert_equal "$output" ""
  assert_equal "$stderr" "ss-ssh-test: error: the host key of sandbox 'test' has changed: not connecting
  127.0.0.1:$SSHD_PORT offered the ssh-ed25519 key $(fingerprint "$SSHD_DIR/host_key.pub")
  the key pinned for [127.0.0.1]:$SSHD_PORT in $SSHD_DIR/known_hosts is a different one
hint: if the sandbox was re-created, provision it again to pin its new key
hint: otherwise something may be intercepting the connection"
  assert_equal "$(cat "$SSHD_DIR/known_hosts")" "$before"
}

@test "an unknown host key is refused with 77 and nothing is written" {
  : > "$SSHD_DIR/known_hosts"
  run --separate-stderr "$SS_SSH_TEST" "${SSH_ARGS[@]}" run true
  assert_equal "$status" 77
  assert_equal "$stderr" "ss-ssh-test: error: the host key of sandbox 'test' is not pinned: not connecting
  127.0.0.1:$SSHD_PORT offered the ssh-ed25519 key $(fingerprint "$SSHD_DIR/host_key.pub")
  $SSHD_DIR/known_hosts has no key for [127.0.0.1]:$SSHD_PORT
hint: ss pins a sandbox's host key when it provisions it and never trusts a key on first use: provision the sandbox again"
  assert_equal "$(stat -c %s "$SSHD_DIR/known_hosts")" 0
}

@test "a key the sandbox does not know is refused with 77" {
  "$SS_SSH_TEST" keygen "$BATS_TEST_TMPDIR/stranger" stranger
  args=("${SSH_ARGS[@]}")
  args[5]="$BATS_TEST_TMPDIR/stranger"
  run --separate-stderr "$SS_SSH_TEST" "${args[@]}" run true
  assert_equal "$status" 77
  assert_equal "${stderr%%$'\n'*}" \
    "ss-ssh-test: error: sandbox 'test' refused the key '$BATS_TEST_TMPDIR/stranger' for user '$(id -un)'"
}

@test "nothing listening is 69 with the reason" {
  port=$("$SS_SSH_TEST" free-port)
  args=("${SSH_ARGS[@]}")
  args[1]=$port
  run --separate-stderr "$SS_SSH_TEST" "${args[@]}" run true
  assert_equal "$status" 69
  assert_equal "${stderr%%$'\n'*}" "ss-ssh-test: error: cannot connect to sandbox 'test' at 127.0.0.1:$port"
  [[ "$stderr" == *"Connection refused"* ]]
}

@test "a streamed command keeps stdin, stdout, stderr and the exit status apart" {
  run --separate-stderr bash -c 'printf "x\ny\n" | "$0" "$@" stream -- sh -c "wc -l; echo e >&2; exit 9"' \
    "$SS_SSH_TEST" "${SSH_ARGS[@]}"
  assert_equal "$status" 9
  assert_equal "$output" "2"
  assert_equal "$stderr" "e"
}

@test "a streamed command gets its argv exactly and works in a pipe" {
  run --separate-stderr "$SS_SSH_TEST" "${SSH_ARGS[@]}" stream -- printf '%s|' 'a b' '$HOME' '*' '' "it's" $'tab\there' '-n'
  assert_success
  assert_equal "$output" "a b|\$HOME|*||it's|tab	here|-n|"
  run bash -c '"$0" "$@" stream -- seq 1 100000 | tail -n 1' "$SS_SSH_TEST" "${SSH_ARGS[@]}"
  assert_success
  assert_equal "$output" "100000"
}

@test "a secret reaches the command without being in any argv" {
  export SS_TEST_SECRET="value with spaces 'and' \$dollars"
  run --separate-stderr "$SS_SSH_TEST" "${SSH_ARGS[@]}" --secret SS_TEST_SECRET run -- \
    sh -c 'printf "%s" "$SS_TEST_SECRET"'
  assert_success
  assert_equal "$output" "$SS_TEST_SECRET"
}
