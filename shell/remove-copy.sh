#!/bin/sh
# Run as root in the sandbox by ss (lib/project/rescue.cpp) with a project's name, $1: the
# working-copy layout of working-copy.sh taken down and its files removed.
set -eu
name=$1 home=/home/sandbox
for m in "$home/projects/$name" "$home/project-src/$name"; do
  if mountpoint -q "$m"; then umount "$m"; fi
done
rm -rf "$home/copy-projects/$name" "$home/project-src/$name" "$home/.ss/copies/$name" \
  "$home/.ss/bases/$name" "$home/.ss/sync/$name.stamp" "$home/.ss/sync/$name.base" \
  "$home/.ss/sources/$name.stamp"
