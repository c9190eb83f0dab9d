#!/bin/sh
# ss push in the sandbox (lib/ssh/transfer.cpp): writes stdin to $1 with mode $2 and time $3,
# beside it first, then renamed over it.
set -eu
t=$1
d=$(dirname -- "$t")
mkdir -p -- "$d"
tmp=$(mktemp -- "$d/.ss-push.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp"
chmod -- "$2" "$tmp"
touch -m -d "@$3" -- "$tmp"
mv -f -T -- "$tmp" "$t"
trap - EXIT
