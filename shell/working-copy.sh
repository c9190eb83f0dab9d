#!/bin/sh
# Run as root in an ss sandbox by ss (sudo sh -c THIS working-copy NAME [WORKSPACE]), with the
# text of /etc/ss/sync-exclude on stdin. Installs that file when it changed, then, for project
# NAME (none: only the file), makes the working-copy layout and leaves it in place:
#   /home/sandbox/project-src/NAME  the host project, read-only (a bind of the shared folder; a
#                                   folder's own sandbox has the folder shared read-only there)
#   /home/sandbox/projects/NAME     the writable copy, kept in /home/sandbox/.ss/copies/NAME
#   WORKSPACE                       a folder's: the copy again, where the agent works
# Prints "created" when the copy was made now (empty: ss then fills it with sync-tree and
# touches /home/sandbox/.ss/sync/NAME.stamp, as after every sync). Safe to run any number of
# times.
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
shared=$home/projects/$name
src=$home/project-src/$name
store=$home/.ss/copies/$name
if [ -n "$workspace" ] && ! mountpoint -q "$src"; then
  # A folder's source is its share, never a stand-in.
  echo "the folder's read-only share $src is not mounted" >&2
  exit 66
fi
if ! mountpoint -q "$src"; then
  # The copy hides the shared folder: take it away first, so the source is the host's.
  if mountpoint -q "$shared"; then umount "$shared"; fi
  if [ ! -d "$shared" ]; then
    echo "the project folder $shared is not in the sandbox" >&2
    exit 66
  fi
  install -d -o sandbox -g sandbox "$home/project-src"
  mkdir -p "$src"
  mount --bind "$shared" "$src"
  # Private: the copy bound over the shared folder next must not show through here too.
  mount --make-private "$src"
  mount -o remount,bind,ro "$src"
fi
fresh=
if ! mountpoint -q "$shared"; then
  install -d -o sandbox -g sandbox "$home/.ss" "$home/.ss/copies" "$home/.ss/sync"
  if [ ! -d "$store" ]; then
    install -d -o sandbox -g sandbox "$store"
    fresh=1
  fi
  # A folder's sandbox shares no projects folder: the copy's place is made here.
  [ -d "$shared" ] || install -d -o sandbox -g sandbox "$shared"
  mount --bind "$store" "$shared"
fi
if [ -n "$workspace" ] && ! mountpoint -q "$workspace"; then
  mkdir -p "$(dirname "$workspace")"
  [ -d "$workspace" ] || install -d -o sandbox -g sandbox "$workspace"
  mount --bind "$store" "$workspace"
fi
if [ -n "$fresh" ]; then echo created; fi
