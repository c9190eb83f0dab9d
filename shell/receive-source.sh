#!/bin/sh
# Run as root in an ss sandbox by ss (lib/project/working_copy.cpp): NAME STAMP, a tar of the
# host's folder on stdin (made on the host, of what sync.exclude lets through). It replaces
# /home/sandbox/project-src/NAME whole, root's with the sandbox's group: readable by the agent,
# writable by nobody but root. STAMP is then written to /home/sandbox/.ss/sources/NAME.stamp.
# Until it is all there, the old source stays.
set -eu
name=$1 stamp=$2 home=/home/sandbox
src=$home/project-src/$name
install -d -o root -g root -m 755 "$home/project-src" "$home/.ss/sources"
staging=$(mktemp -d "$home/project-src/.incoming.XXXXXX")
trap 'rm -rf "$staging" "$staging.old"' EXIT
tar -x -f - -C "$staging" --no-same-owner --delay-directory-restore
chown -R -h root:sandbox "$staging"
chmod -R go-w,g+rX "$staging"
chmod 755 "$staging"
if [ -e "$src" ]; then mv "$src" "$staging.old"; fi
mv "$staging" "$src"
printf '%s\n' "$stamp" > "$home/.ss/sources/$name.stamp.tmp"
mv -f "$home/.ss/sources/$name.stamp.tmp" "$home/.ss/sources/$name.stamp"
