#!/bin/sh
# ss doctor in the sandbox (lib/project/health.cpp): the projects folder, $1, is a real
# directory the sandbox user can write to.
if [ ! -d "$1" ]; then echo "$1 is missing"; exit 1; fi
if [ ! -w "$1" ] || [ ! -x "$1" ] || [ ! -r "$1" ]; then echo "$1 is not writable by $(id -un)"; exit 1; fi
echo "$1 is writable"
