#!/bin/sh
# Run as the sandbox user by ss (lib/project/held_repository.cpp), for a shared project whose
# repository the host holds: LAYER is the sandbox's own repository of it
# (/home/sandbox/repositories/NAME), which the project's .git file leads to in the sandbox.
#
#   --refs LAYER           prints "exists" when LAYER is there, then the host's branches it
#                          last took ("refs/heads/NAME COMMIT", kept in refs/host/heads/)
#   LAYER HEAD [REF COMMIT]...
#                          a git bundle on stdin (empty when nothing is new): makes LAYER when
#                          missing (HEAD as the host's, the index from it), records the host's
#                          branches, and moves each branch of LAYER's that the sandbox has not
#                          moved on its own to the host's (the checked-out one with its index,
#                          when nothing is staged). The files of the project are never touched.
set -eu
if [ "$1" = --refs ]; then
  [ -d "$2" ] || exit 0
  echo exists
  git --git-dir="$2" for-each-ref --format='%(refname) %(objectname)' refs/host/heads/ |
    sed 's|^refs/host/|refs/|'
  exit 0
fi
layer=$1 head=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/b.bundle"
g() { git --git-dir="$layer" "$@"; }
made=
if [ ! -d "$layer" ]; then
  mkdir -p "$(dirname "$layer")"
  git -c init.defaultBranch=main init -q --bare "$layer"
  g config core.bare false
  made=1
fi
if [ -s "$tmp/b.bundle" ]; then g bundle unbundle "$tmp/b.bundle" > /dev/null; fi
current=$(g symbolic-ref -q HEAD || true)
: > "$tmp/now"
while [ $# -ge 2 ]; do
  ref=$1 oid=$2
  shift 2
  case $ref in refs/heads/?*) ;; *) continue ;; esac
  name=${ref#refs/heads/}
  was=$(g rev-parse -q --verify "refs/host/heads/$name" || true)
  mine=$(g rev-parse -q --verify "refs/heads/$name" || true)
  g update-ref "refs/host/heads/$name" "$oid"
  echo "refs/host/heads/$name" >> "$tmp/now"
  [ "$mine" != "$oid" ] || continue
  if [ -n "$mine" ] && [ "$mine" != "$was" ] && ! g merge-base --is-ancestor "$mine" "$oid"; then
    continue  # moved in the sandbox: the host fetches it
  fi
  if [ -z "$made" ] && [ "$current" = "$ref" ]; then
    g diff --cached --quiet || continue
    g update-ref "$ref" "$oid"
    g read-tree "$oid"
  else
    g update-ref "$ref" "$oid"
  fi
done
g for-each-ref --format='%(refname)' refs/host/heads/ | while read -r gone; do
  grep -qxF "$gone" "$tmp/now" || g update-ref -d "$gone"
done
if [ -n "$made" ]; then
  case $head in refs/heads/?*) g symbolic-ref HEAD "$head" ;; esac
  if g rev-parse -q --verify HEAD > /dev/null; then g read-tree HEAD; fi
fi
