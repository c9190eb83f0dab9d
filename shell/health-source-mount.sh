#!/bin/sh
# ss doctor in the sandbox (lib/project/health.cpp). Arguments: the places of the folders the
# sandbox shares (the projects folder first, when it is one), "--", then the names of working
# copies. Each shared folder is a mount; each copy made so far has its source as ss sent it: a
# folder of root's on the sandbox's disk, never a mount of the host's.
shared=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  if ! findmnt -rn --mountpoint "$1" >/dev/null; then echo "$1 is not mounted from the host"; exit 1; fi
  shared=${shared:+$shared, }$1
  shift
done
shift
n=0
for name; do
  [ -d "$HOME/copy-projects/$name" ] || continue
  s=$HOME/project-src/$name
  if findmnt -rn --mountpoint "$s" >/dev/null; then echo "$s is a mount (ss sync $name replaces it)"; exit 1; fi
  if [ ! -d "$s" ] || [ "$(stat -c %u "$s")" != 0 ]; then echo "$s is not as ss sent it (ss sync $name sends it again)"; exit 1; fi
  n=$((n + 1))
done
echo "${shared:-no folder} shared from the host; $n working-copy source(s) sent by ss"
