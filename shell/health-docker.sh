#!/bin/sh
# ss doctor in the sandbox (lib/project/health.cpp): Docker answers within $1 seconds. The
# daemon starts on first use (socket activation), which takes a minute on a slow machine: a
# starting daemon gets that long; one that still does not answer is named so.
out=$(timeout "$1" docker version --format 'docker {{.Server.Version}} answers' 2>&1)
rc=$?
if [ "$rc" -eq 124 ]; then
  echo "the Docker daemon did not answer within $1 s (docker.service: $(systemctl is-active docker 2>/dev/null || echo unknown))"
  exit 1
fi
echo "$out"
exit "$rc"
