#!/bin/sh
# Run as root in an ss sandbox by ss (sudo sh -c THIS working-copy NAME [WORKSPACE]), with the
# text of /etc/ss/sync-exclude on stdin. Installs that file when it changed, then, for project
# NAME (none: only the file), makes the working-copy layout and leaves it in place:
#   /home/sandbox/project-src/NAME    the host's folder as ss sends it (receive-source.sh), root's
#   /home/sandbox/copy-projects/NAME  the writable copy
#   WORKSPACE                         a folder's: a link to the copy, where the agent works
# A layout of an older ss (the copy in ~/.ss/copies bound over the shared folder, the source a
# bind of it) is taken down first and its copy moved to its new place. Prints "created" when the
# copy was made now (ss then fills it with sync-tree and touches /home/sandbox/.ss/sync/NAME.stamp,
# as after every sync), "sent STAMP" with what ss last sent (receive-source.sh), and "no-git"
# when the copy has no repository of its own yet. Safe to run any number of times.
set -eu
name=${1:-}
workspace=${2:-}
home=/home/sandbox
# Nothing is written when nothing changed: a full disk must not stop diff, apply or pull.
want=$(cat)
if ! printf '%s\n' "$want" | cmp -s - /etc/ss/sync-exclude; then
  mkdir -p /etc/ss
  tmp=$(mktemp /etc/ss/.sync-exclude.XXXXXX)
  printf '%s\n' "$want" > "$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" /etc/ss/sync-exclude
fi
[ -n "$name" ] || exit 0
src=$home/project-src/$name
copy=$home/copy-projects/$name
old=$home/.ss/copies/$name
for m in "$home/projects/$name" "$src" ${workspace:+"$workspace"}; do
  if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
done
install -d -o sandbox -g sandbox "$home/.ss" "$home/.ss/sync" "$home/copy-projects"
install -d -o root -g root -m 755 "$home/project-src"
[ -d "$src" ] || install -d -o root -g sandbox -m 755 "$src"
fresh=
if [ ! -d "$copy" ]; then
  if [ -d "$old" ]; then
    mv "$old" "$copy"
  else
    install -d -o sandbox -g sandbox "$copy"
    fresh=1
  fi
fi
if [ -n "$workspace" ] && [ "$(readlink "$workspace" 2>/dev/null)" != "$copy" ]; then
  mkdir -p "$(dirname "$workspace")"
  if [ -d "$workspace" ] && [ ! -L "$workspace" ]; then rmdir "$workspace"; fi
  ln -sfn "$copy" "$workspace"
fi
if [ -n "$fresh" ]; then echo created; fi
if [ -r "$home/.ss/sources/$name.stamp" ]; then echo "sent $(cat "$home/.ss/sources/$name.stamp")"; fi
if [ ! -e "$copy/.git" ]; then echo no-git; fi
