#!/bin/sh
# ss pull and push in the sandbox (lib/ssh/transfer.cpp): "TYPE MODE MTIME SIZE" of $1, TYPE
# f (file), d (directory) or o (other).
if [ -d "$1" ]; then t=d; elif [ -f "$1" ]; then t=f; else t=o; fi
exec stat -L -c "$t %a %Y %s" -- "$1"
