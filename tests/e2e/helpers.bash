# Shared by the end-to-end tests: real backends, real sshd in real sandboxes. The image cache is
# shared between tests and runs ($SS_CACHE, default ~/.cache/ss); everything else is per test
# file. Daemons a test file starts, it stops.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${SS_BUILD_DIR:?run through ctest, or set SS_BUILD_DIR to the build directory}"
export PATH="$SS_BUILD_DIR/bin:$PATH"
export SS_NO_UPDATE=1
unset SS_SANDBOX CLAUDE_SANDBOX SS_DEBUG SS_TRACE SS_EXEC_PATH

# e2e_home: a hermetic HOME/SS_HOME for the whole file (sandboxes outlive single tests).
e2e_home() {
  export HOME="$BATS_FILE_TMPDIR/home"
  export SS_HOME="$HOME/super-sandbox"
  mkdir -p "$SS_HOME/projects"
}

# sandbox_ssh NAME CMD...: OpenSSH into the sandbox with the install's key and the pinned host
# key (StrictHostKeyChecking yes: nothing is accepted on first use).
sandbox_ssh() {
  local name=$1; shift
  local port host
  host=$(ss vm status --sandbox "$name" --json | jq -r .ssh.host)
  port=$(ss vm status --sandbox "$name" --json | jq -r .ssh.port)
  ssh -q -i "$SS_HOME/.ss/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$SS_HOME/.ss/sandboxes/$name/known_hosts" \
    -o ConnectTimeout=10 -p "$port" "sandbox@$host" -- "$@"
}

# busybox_tar PATH: a one-binary root filesystem, to import as a docker image with no registry.
busybox_tar() {
  local dir="$BATS_FILE_TMPDIR/busybox"
  mkdir -p "$dir/rootfs/bin"
  cp /bin/busybox "$dir/rootfs/bin/busybox"
  ln -sf busybox "$dir/rootfs/bin/sh"
  tar -C "$dir/rootfs" -cf "$1" .
}
