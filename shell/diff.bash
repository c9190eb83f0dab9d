#!/bin/bash
# ss diff in the sandbox (lib/project/sync.cpp): diff(1) of each path read from stdin,
# "T/PATH" (the copy's change) or "C/PATH" (a conflict, announced by a "# conflict:" line), each
# ending with a NUL: $1 is the source, $2 the copy. A symbolic link is shown by its target, a
# device, fifo or socket by what it is (apply refuses those and links that leave the project),
# and a change of the executable bit as git shows it.
src=$1 copy=$2
what() {
  if [ -L "$1" ]; then printf 'symbolic link to %s' "$(readlink -- "$1")"
  elif [ -f "$1" ]; then printf file
  elif [ -d "$1" ]; then printf directory
  elif [ -e "$1" ]; then printf 'special file (not applied)'
  else printf none; fi
}
while IFS= read -r -d '' f; do
  kind=${f%%/*} f=${f#*/}
  [ "$kind" = C ] &&
    printf '# conflict: %s changed on the host and in the sandbox since the last sync\n' "$f"
  a=$(what "$src/$f") b=$(what "$copy/$f")
  if [ "$a" != file ] && [ "$a" != none ] || [ "$b" != file ] && [ "$b" != none ]; then
    printf -- '--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-%s\n+%s\n' "$f" "$f" "$a" "$b"
    continue
  fi
  if [ "$a" = file ] && [ "$b" = file ]; then
    ma=$(stat -c %a -- "$src/$f") mb=$(stat -c %a -- "$copy/$f")
    [ "$ma" = "$mb" ] || printf 'mode change %s => %s %s\n' "$ma" "$mb" "$f"
  fi
  diff -uN --label "a/$f" --label "b/$f" -- "$src/$f" "$copy/$f"
  [ $? -le 1 ] || exit 2
done
exit 0
