#!/usr/bin/env bash
# Installs ss on a Debian or Ubuntu machine (tested on Debian 12): the packages it needs, a
# build, and the install.
#
#   ./install.sh [--prefix DIR] [--backend NAME] [--deps-only] [--deps-for STEPS] [--no-deps]
#                [--no-setup] [--build-dir DIR]
#
# Packages come from lib/packages.tsv: those the steps in --deps-for need (default
# "build,core": building ss and running it). After installing, prepares this machine for
# sandboxes unless --no-setup: `ss vm setup` (the packages of the backend --backend names, else
# the one ss would choose, and of the image build; its daemons) and `ss vm image build` (a few
# minutes the first time). Idempotent: re-running upgrades in place. Works as root or as a user
# who can sudo.
set -euo pipefail

prefix=/usr/local
deps=1
deps_for=build,core
build=1
setup=1
backend=""
build_dir=""
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --deps-only) build=0; shift ;;
    --deps-for) deps_for=${2:?--deps-for needs a list of steps}; shift 2 ;;
    --deps-for=*) deps_for=${1#*=}; shift ;;
    --no-deps) deps=0; shift ;;
    --no-setup) setup=0; shift ;;
    --backend) backend=${2:?--backend needs a name: lxd, docker, podman or qemu}; shift 2 ;;
    --backend=*) backend=${1#*=}; shift ;;
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

# The packages of lib/packages.tsv's rows that the comma-separated steps in $1 need ("build",
# "core", ...) and that are missing, one row's alternatives ("a|b") per line.
missing_packages() {
  local cmd pkgs needs dirs p dir found
  while IFS=$'\t' read -r cmd pkgs needs dirs; do
    case "$cmd" in '' | '#'*) continue ;; esac
    found=
    for p in ${needs//,/ }; do case ",$1," in *",$p,"*) found=1 ;; esac; done
    [ -n "$found" ] || continue
    found=
    if [ "$cmd" = - ]; then
      for p in ${pkgs//|/ }; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' && found=1
      done
    elif command -v "$cmd" >/dev/null 2>&1; then
      found=1
    else
      for dir in ${dirs//:/ }; do [ -x "$dir/$cmd" ] && found=1; done
    fi
    [ -n "$found" ] || echo "$pkgs"
  done < "$here/lib/packages.tsv"
}

# install_for STEPS: installs what missing_packages names, the first alternative the archive has.
install_for() {
  local rows=() chosen=() row p
  mapfile -t rows < <(missing_packages "$1")
  [ ${#rows[@]} -eq 0 ] && return 0
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  for row in "${rows[@]}"; do
    for p in ${row//|/ }; do
      if [ "$p" = "${row##*|}" ] || apt-cache show --no-all-versions "$p" >/dev/null 2>&1; then
        chosen+=("$p")
        break
      fi
    done
  done
  say "installing packages: ${chosen[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${chosen[@]}" >/dev/null
}

if [ "$deps" = 1 ]; then
  command -v apt-get >/dev/null || { echo "install.sh: needs apt-get (a Debian or Ubuntu system)" >&2; exit 69; }
  install_for "$deps_for"
fi

[ "$build" = 1 ] || exit 0

say "building in $build_dir"
# Through ccache where it is (~/.cache/ccache): building again after an update takes seconds.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$here" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DSS_TESTS=OFF "${launcher[@]}" >/dev/null
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
  ss_as_root vm setup ${backend:+--backend "$backend"}
  say "building the sandbox image from Debian packages (ss vm image build; cached)"
  ss_as_root vm image build
fi
