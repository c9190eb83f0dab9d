# Shared set-up for the Bats tests: a hermetic HOME and SS_HOME per test, ss from the build tree
# first on PATH, and the bats helper libraries.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${SS_BUILD_DIR:?run through ctest, or set SS_BUILD_DIR to the build directory}"
: "${SS_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

ss_setup() {
  export HOME="$BATS_TEST_TMPDIR/home"
  export SS_HOME="$HOME/super-sandbox"
  mkdir -p "$HOME"
  unset SS_DEBUG SS_TRACE SS_EXEC_PATH SS_SANDBOX CLAUDE_SANDBOX NO_COLOR SS_PASSTHROUGH
  export SS_NO_UPDATE=1
  export PATH="$SS_BUILD_DIR/bin:$PATH"
  STUBS="$BATS_TEST_TMPDIR/stubs"
  mkdir -p "$STUBS"
  # No command-line test ever makes a real sandbox: a test that needs a backend stubs it again.
  stub_backends_down
}

# stub NAME BODY: an executable script NAME in $STUBS.
stub() {
  printf '#!/bin/bash\n%s\n' "$2" > "$STUBS/$1"
  chmod +x "$STUBS/$1"
}

# A real terminal for interactive tests: tmux on a socket of the test's own (never the user's
# server). term_start CMD... runs CMD in a 120x40 window; term_keys sends keys; term_screen
# prints the visible screen; term_wait TEXT waits (up to 10 s) until the screen shows TEXT.
term_start() {
  TERM_N=$((${TERM_N:-0} + 1))
  TMUX_SOCK="$BATS_TEST_TMPDIR/tmux.$TERM_N.sock"
  tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s t -x 120 -y 40 "$@"
}
term_keys() { tmux -S "$TMUX_SOCK" send-keys -t t "$@"; }
term_screen() { tmux -S "$TMUX_SOCK" capture-pane -p -t t -S -200; }
term_wait() {
  local i
  for ((i = 0; i < 100; i++)); do
    if term_screen | grep -qF -- "$1"; then return 0; fi
    sleep 0.1
  done
  echo "timed out waiting for: $1" >&2
  echo "--- screen ---" >&2
  term_screen >&2
  return 1
}
term_stop() { [ -z "${TMUX_SOCK:-}" ] || tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true; }

# stub_backends_down: every backend's tool on PATH answers as when it cannot run (LXD's and
# Docker's daemons not running, podman and QEMU broken), so nothing real is ever started.
stub_backends_down() {
  stub lxc 'echo "Error: Get \"http://unix.socket/1.0\": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory" >&2; exit 1'
  stub docker 'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1'
  stub podman 'echo "Error: stub podman" >&2; exit 125'
  stub qemu-system-x86_64 'echo "stub qemu" >&2; exit 1'
  export PATH="$STUBS:$PATH"
}
