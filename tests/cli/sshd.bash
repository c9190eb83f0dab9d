# A real OpenSSH sshd for Bats tests, started by the test itself: `sshd -D -e -f CONFIG` as a
# child on a free loopback port with a throw-away host key (pinned in a known_hosts file of its
# own), a throw-away client key in its own AuthorizedKeysFile, no passwords, the current user.
# As root, when /run/sshd (sshd's privilege separation directory) is missing, it runs in a private
# mount namespace with a tmpfs on /run, so nothing on the system changes. `SetEnv SHLVL=1` keeps
# bash from reading the user's ~/.bashrc for every command.
#
#   sshd_start            sets SSHD_DIR SSHD_PORT SSHD_PID and SSH_ARGS (connection flags for
#                         ss-ssh-test); call sshd_stop in teardown
#   sshd_kill_sessions    SIGKILL to the per-connection sshd processes (a crashed sandbox)
SS_SSH_TEST="$SS_BUILD_DIR/tests/ss-ssh-test"

sshd_start() {
  SSHD_DIR=$(mktemp -d /tmp/ss-sshd.XXXXXX)
  "$SS_SSH_TEST" keygen "$SSHD_DIR/host_key" ss-test-host
  "$SS_SSH_TEST" keygen "$SSHD_DIR/id_ed25519" ss-test-client
  cp "$SSHD_DIR/id_ed25519.pub" "$SSHD_DIR/authorized_keys"
  # A stock sshd has host keys of several types; only the ed25519 one is pinned.
  ssh-keygen -q -t ecdsa -N '' -f "$SSHD_DIR/host_key_ecdsa"
  local attempt user
  user=$(id -un)
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    SSHD_PORT=$("$SS_SSH_TEST" free-port)
    cat > "$SSHD_DIR/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $SSHD_PORT
HostKey $SSHD_DIR/host_key_ecdsa
HostKey $SSHD_DIR/host_key
PidFile none
AuthorizedKeysFile $SSHD_DIR/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
SetEnv SHLVL=1
LogLevel INFO
EOF
    rm -f "$SSHD_DIR/known_hosts"
    "$SS_SSH_TEST" pin "$SSHD_DIR/known_hosts" 127.0.0.1 "$SSHD_PORT" "$SSHD_DIR/host_key.pub"
    if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then
      unshare --mount --propagation private -- /bin/sh -c \
        'mount -t tmpfs -o mode=0755 ss-test-run /run && mkdir -m 0755 /run/sshd && exec /usr/sbin/sshd -D -e -f "$0"' \
        "$SSHD_DIR/sshd_config" </dev/null >>"$SSHD_DIR/sshd.log" 2>&1 &
    else
      /usr/sbin/sshd -D -e -f "$SSHD_DIR/sshd_config" </dev/null >>"$SSHD_DIR/sshd.log" 2>&1 &
    fi
    SSHD_PID=$!
    local i
    for i in $(seq 1 500); do
      if ! kill -0 "$SSHD_PID" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$SSHD_PORT") 2>/dev/null; then
        SSH_ARGS=(--port "$SSHD_PORT" --user "$user" --key "$SSHD_DIR/id_ed25519"
                  --known-hosts "$SSHD_DIR/known_hosts" --name test)
        return 0
      fi
      sleep 0.01
    done
    kill "$SSHD_PID" 2>/dev/null || true
    wait "$SSHD_PID" 2>/dev/null || true
  done
  echo "sshd did not start:" >&2
  cat "$SSHD_DIR/sshd.log" >&2
  return 1
}

# The processes below PID, parents before their children.
_sshd_descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1"); do
    echo "$child"
    _sshd_descendants "$child"
  done
}

# The connection's sshd goes first, so that the connection drops before the remote command dies.
sshd_kill_sessions() {
  local pid
  for pid in $(_sshd_descendants "$SSHD_PID"); do kill -KILL "$pid" 2>/dev/null || true; done
}

sshd_stop() {
  [ -n "${SSHD_PID:-}" ] || return 0
  local pid
  for pid in $(_sshd_descendants "$SSHD_PID"); do kill -TERM "$pid" 2>/dev/null || true; done
  kill -TERM "$SSHD_PID" 2>/dev/null || true
  wait "$SSHD_PID" 2>/dev/null || true
  rm -rf "$SSHD_DIR"
  SSHD_PID=
}
