#!/bin/sh
# Whether the sandbox has the program $1 (lib/project/sandbox_runner.cpp).
command -v -- "$1" >/dev/null
