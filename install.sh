#!/usr/bin/env bash
# Installs ss on Debian 12 or Ubuntu 24.04: the packages it needs, a build, and the install.
#
#   ./install.sh [--prefix DIR] [--deps-only] [--no-deps] [--no-setup] [--build-dir DIR]
#
# After installing, prepares this machine for sandboxes unless --no-setup: `ss vm setup` (the
# backend's packages and daemons) and `ss vm image build` (a few minutes the first time). Idempotent: re-running upgrades in place. Works as root or as
# a user who can sudo.
set -euo pipefail

prefix=/usr/local
deps=1
build=1
setup=1
build_dir=""
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --deps-only) build=0; shift ;;
    --no-deps) deps=0; shift ;;
    --no-setup) setup=0; shift ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
build_dir=${build_dir:-$here/build/release}

say() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "install.sh: '$1' needs root and sudo is not installed; run this script as root" >&2
    exit 77
  fi
}

# Build and run-time packages (Debian names; Ubuntu 24.04 has the same).
packages=(
  g++ cmake ninja-build pkg-config git scdoc
  libboost-program-options-dev libssh-dev libasio-dev nlohmann-json3-dev libyaml-cpp-dev
  libcurl4-openssl-dev libssl-dev libgtest-dev libgmock-dev
  bats bats-assert bats-support bats-file
  openssh-client rsync jq socat man-db ca-certificates
)

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "$deps" = 1 ]; then
  command -v apt-get >/dev/null || { echo "install.sh: needs apt-get (Debian 12 or Ubuntu 24.04)" >&2; exit 69; }
  install_packages "${packages[@]}"
fi

[ "$build" = 1 ] || exit 0

say "building in $build_dir"
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DSS_TESTS=OFF >/dev/null
cmake --build "$build_dir"

say "installing to $prefix (ss in $prefix/bin, ss-* in $prefix/libexec/ss)"
if [ -w "$prefix" ] || { [ ! -e "$prefix" ] && [ -w "$(dirname "$prefix")" ]; }; then
  cmake --install "$build_dir" >/dev/null
else
  as_root cmake --install "$build_dir" >/dev/null
fi

case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) say "add $prefix/bin to your PATH" ;;
esac
say "installed $("$prefix/bin/ss" --version)"

if [ "$setup" = 1 ]; then
  # As the user's ss would: their HOME (and SS_HOME), so projects and the image cache are theirs.
  ss_as_root() { as_root env "HOME=$HOME" ${SS_HOME:+"SS_HOME=$SS_HOME"} "$prefix/bin/ss" "$@"; }
  say "preparing this machine for sandboxes (ss vm setup)"
  ss_as_root vm setup
  say "building the sandbox image from Debian packages (ss vm image build; cached)"
  ss_as_root vm image build
fi
