#!/usr/bin/env bats
# The SSH layer's interactive PTY session in a real terminal (tmux), against a real sshd started
# by the test: window size and resizes, Ctrl-C, exit status, and the terminal's modes (stty -g)
# identical before and after, whichever way the session ends.

load helpers
load sshd

setup() {
  ss_setup
  sshd_start
  TMUX_SOCK="$BATS_TEST_TMPDIR/tmux.sock"
  OUT="$BATS_TEST_TMPDIR"
}

teardown() {
  tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
  sshd_stop
}

# start_session ARGS...: in a 100x30 tmux terminal, saves `stty -g`, runs ss-ssh-test with the
# test sshd's connection flags and ARGS (its PID in $OUT/pid), then saves its exit status and
# `stty -g` again, and keeps the pane open.
start_session() {
  local client
  client=$(printf '%q ' "$SS_SSH_TEST" "${SSH_ARGS[@]}" "$@")
  cat > "$OUT/session.sh" <<EOF
stty -g > $OUT/before
bash -c 'echo \$\$ > $OUT/pid; exec "\$@"' client $client
echo \$? > $OUT/status
stty -g > $OUT/after
echo session-over
sleep 600
EOF
  tmux -S "$TMUX_SOCK" new-session -d -s t -x 100 -y 30 "bash --norc --noprofile $OUT/session.sh"
}

pane() { tmux -S "$TMUX_SOCK" capture-pane -p -t t; }
keys() { tmux -S "$TMUX_SOCK" send-keys -t t "$@"; }

# wait_for TEXT: until the pane shows TEXT (10 s).
wait_for() {
  local i
  for i in $(seq 1 200); do
    pane | grep -qF -- "$1" && return 0
    sleep 0.05
  done
  echo "never showed '$1'; the pane:" >&2
  pane >&2
  return 1
}

# wait_over: until the session ended; then its status is in $status_code.
wait_over() {
  wait_for session-over
  status_code=$(cat "$OUT/status")
}

@test "window size at start and after a resize reach the remote terminal" {
  start_session pty -- env PS1='remote$ ' bash --norc --noprofile -i
  wait_for 'remote$'
  keys 'stty size' Enter
  wait_for '30 100'
  tmux -S "$TMUX_SOCK" resize-window -t t -x 120 -y 40
  keys 'clear; stty size' Enter
  wait_for '40 120'
  keys 'exit 3' Enter
  wait_over
  assert_equal "$status_code" 3
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}

@test "Ctrl-C interrupts a remote command, not the session" {
  start_session pty -- env PS1='remote$ ' bash --norc --noprofile -i
  wait_for 'remote$'
  keys 'sleep 100' Enter
  sleep 0.5
  keys C-c
  keys 'echo "rc=$?"' Enter
  wait_for 'rc=130'
  keys 'exit' Enter
  wait_over
  assert_equal "$status_code" 0
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}

@test "a remote exit status passes through and the terminal is restored" {
  start_session pty -- sh -c 'printf "in raw mode\n"; exit 42'
  wait_over
  assert_equal "$status_code" 42
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}

@test "killing the sshd mid-session: 255, a message, and the terminal restored" {
  start_session pty -- sh -c 'echo ready; sleep 300'
  wait_for ready
  sshd_kill_sessions
  wait_over
  assert_equal "$status_code" 255
  pane | grep -qF "ss-ssh-test: connection to sandbox 'test' lost"
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}

@test "SIGTERM to the client ends the session and restores the terminal" {
  start_session pty -- sh -c 'echo ready; sleep 300'
  wait_for ready
  kill -TERM "$(cat "$OUT/pid")"
  wait_over
  assert_equal "$status_code" 143
  pane | grep -qF "ss-ssh-test: error: session with sandbox 'test' ended by SIGTERM"
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}

@test "SIGHUP to the client ends the session and restores the terminal" {
  start_session pty -- sh -c 'echo ready; sleep 300'
  wait_for ready
  kill -HUP "$(cat "$OUT/pid")"
  wait_over
  assert_equal "$status_code" 129
  assert_equal "$(cat "$OUT/after")" "$(cat "$OUT/before")"
}
