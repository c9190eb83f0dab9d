#!/bin/sh
# ss doctor in the sandbox (lib/project/health.cpp). Arguments: the places of the folders the
# sandbox shares (the projects folder first, when it is one), "--", then the names of working
# copies. Each shared folder is a mount, and each copy made so far has its read-only source
# mounted.
shared=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  if ! findmnt -rn --mountpoint "$1" >/dev/null; then echo "$1 is not mounted from the host"; exit 1; fi
  shared=${shared:+$shared, }$1
  shift
done
shift
n=0
for name; do
  [ -d "$HOME/.ss/copies/$name" ] || continue
  s=$HOME/project-src/$name
  o=$(findmnt -rn -o OPTIONS --mountpoint "$s") || { echo "$s is not mounted (ss sync $name mounts it again)"; exit 1; }
  case ",$o," in
    *,ro,*) ;;
    *) echo "$s is mounted read-write"; exit 1 ;;
  esac
  if ! ls "$s" >/dev/null 2>&1; then echo "$s cannot be read"; exit 1; fi
  n=$((n + 1))
done
echo "${shared:-no folder} shared from the host; $n working-copy source(s) mounted read-only"
