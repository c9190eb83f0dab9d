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
