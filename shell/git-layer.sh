#!/bin/sh
# Run as the sandbox user by ss (lib/project/git_layer.cpp): COPY HEAD, a git bundle of the host
# repository's branches and tags on stdin. COPY (a working copy) gets a repository of its own
# made from it: HEAD is HEAD (a ref, refs/heads/NAME, or a commit id), the index is made from it,
# and the copy's files are left as they are. Nothing is done when COPY has a .git already.
set -eu
copy=$1 head=$2
if [ -e "$copy/.git" ]; then cat > /dev/null; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${done:-}" ] || rm -rf "$copy/.git"' EXIT
cat > "$tmp/seed.bundle"
git -c init.defaultBranch=main init -q "$copy"
git -C "$copy" fetch -q --update-head-ok "$tmp/seed.bundle" '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*'
case $head in
  refs/heads/*) git -C "$copy" symbolic-ref HEAD "$head" ;;
  ?*) git -C "$copy" update-ref --no-deref HEAD "$head" ;;
esac
if git -C "$copy" rev-parse -q --verify HEAD > /dev/null; then git -C "$copy" reset -q; fi
done=1
