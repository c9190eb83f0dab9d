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
}

# stub NAME BODY: an executable script NAME in $STUBS.
stub() {
  printf '#!/bin/bash\n%s\n' "$2" > "$STUBS/$1"
  chmod +x "$STUBS/$1"
}

# stub_backends_down: every backend's tool on PATH answers as when it cannot run (LXD's and
# Docker's daemons not running, podman and QEMU broken), so nothing real is ever started.
stub_backends_down() {
  stub lxc 'echo "Error: Get \"http://unix.socket/1.0\": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory" >&2; exit 1'
  stub docker 'echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2; exit 1'
  stub podman 'echo "Error: stub podman" >&2; exit 125'
  stub qemu-system-x86_64 'echo "stub qemu" >&2; exit 1'
  export PATH="$STUBS:$PATH"
}
