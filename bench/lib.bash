# Shared by the benchmarks: where the build is, a hermetic SS_HOME, and JSON helpers.
# Every benchmark runs ss and the alternative a user would pick in the same run and prints
# one JSON document with both figures and their ratio.
set -euo pipefail
BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SS_BUILD_DIR=${SS_BUILD_DIR:-$BENCH_ROOT/build/release}
if [ ! -x "$SS_BUILD_DIR/bin/ss" ]; then
  echo "bench: no build in $SS_BUILD_DIR; run ./install.sh --no-deps or set SS_BUILD_DIR" >&2
  exit 69
fi
command -v hyperfine >/dev/null ||
  { echo "bench: needs hyperfine: ./install.sh --deps-only --deps-for bench" >&2; exit 69; }
BENCH_TMP=$(mktemp -d)
trap 'rm -rf "$BENCH_TMP"' EXIT
export HOME="$BENCH_TMP/home" SS_HOME="$BENCH_TMP/home/super-sandbox" SS_NO_UPDATE=1
mkdir -p "$HOME"
export PATH="$SS_BUILD_DIR/bin:$PATH"

# hyperfine_medians OUT.json CMD... : runs the commands (no shell) and prints their medians (ms).
hyperfine_json() {
  local out=$1; shift
  hyperfine -N --style none --warmup "${WARMUP:-5}" --runs "${RUNS:-200}" --export-json "$out" "$@" >/dev/null
}
median_ms() { jq ".results[$2].median * 1000" "$1"; }

# percentile JSON INDEX P: the P-th percentile (0-100) of a hyperfine result's run times, in ms.
percentile_ms() {
  jq --argjson i "$2" --argjson p "$3" \
    '.results[$i].times | sort | .[((length - 1) * $p / 100 | floor)] * 1000' "$1"
}

# systemd_up CMD...: waits until systemd in a container is up, asking through CMD (`lxc exec
# NAME --`, `docker exec NAME`): what "ready" means for a container nothing was provisioned in.
# is-system-running exits non-zero when degraded: its word is read, not its status.
systemd_up() {
  local s
  until s=$("$@" systemctl is-system-running 2>/dev/null || true); [[ $s == running || $s == degraded ]]; do
    sleep 0.05
  done
}
