#!/bin/sh
# ss push in the sandbox (lib/ssh/transfer.cpp): extracts the tar stream on stdin into
# directory $1 (made when missing).
set -eu
mkdir -p -- "$1"
exec tar -x -p -f - -C "$1"
