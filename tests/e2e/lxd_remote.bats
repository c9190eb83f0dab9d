#!/usr/bin/env bats
# LXD remotes (lxd.remote: NAME): sandboxes on another LXD server. The server here is this
# machine's own daemon, exposed on a loopback HTTPS address and added as a remote under a name.

load helpers

setup_file() {
  e2e_home
  export SANDBOX="e2e-remote-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  ss vm setup --backend lxd >/dev/null
  ss vm image build >/dev/null 2>&1
  lxc config get core.https_address > "$BATS_FILE_TMPDIR/https_address"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  password="pw-$RANDOM$RANDOM"
  lxc config set core.https_address "127.0.0.1:$port"
  lxc config set core.trust_password "$password"
  # The test's own client (HOME is the test's): its certificate is trusted with the password.
  lxc remote add ssremote "https://127.0.0.1:$port" --accept-certificate --password "$password" >/dev/null
  lxc config unset core.trust_password
  ss config set lxd.remote ssremote >/dev/null
  ss new proj >/dev/null
}

teardown_file() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  pkill -f -- "--share-master $SANDBOX" || true
  ss vm delete --sandbox "$SANDBOX" --yes --force >/dev/null 2>&1 || true
  old=$(cat "$BATS_FILE_TMPDIR/https_address" 2>/dev/null)
  if [ -n "$old" ]; then lxc config set core.https_address "$old"; else lxc config unset core.https_address; fi
  lxc config unset core.trust_password 2>/dev/null || true
  e2e_home_remove
}

setup() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  export SS_SANDBOX=$SANDBOX
}

@test "the backend says it talks to the remote" {
  run ss vm status --backend lxd --json
  assert_success
  echo "$output" | jq -e '.backend_detail | test("on remote .ssremote.")'
}

@test "a sandbox is created on the remote and reached through it" {
  # The remote's network is not the host's to fence: refused until its policy is open.
  run --separate-stderr ss vm start --backend lxd
  assert_equal "$status" 69
  assert_equal "${stderr_lines[1]}" "ss-vm: error: the network of sandbox '$SANDBOX' cannot be fenced: its traffic leaves from LXD remote 'ssremote', whose network ss does not control from here"
  assert_equal "${stderr_lines[2]}" "hint: to make it with an open network: ss config set sandboxes.$SANDBOX.network.mode open"
  run lxc list ssremote: --format csv -c n
  refute_output --partial "$SANDBOX"
  ss config set "sandboxes.$SANDBOX.network.mode" open >/dev/null
  run ss vm start --backend lxd
  assert_success
  run lxc list ssremote: --format csv -c n
  assert_line "$SANDBOX"
  run lxc config get "ssremote:$SANDBOX" user.ss.sandbox
  assert_output "true"
  run ss vm status --json
  echo "$output" | jq -e '.network.mode == "open" and .network.fenced == false'
  run ss proj -- hostname
  assert_success
  assert_output "$SANDBOX"
  run ss proj -- pwd
  assert_output "/home/sandbox/projects/proj"
}

@test "stop and start go through the remote too" {
  run --separate-stderr ss stop
  assert_output "Stopped."
  run lxc list ssremote: --format csv -c ns
  assert_line "$SANDBOX,STOPPED"
  run --separate-stderr ss proj -- echo again
  assert_output "again"
  assert_equal "${stderr_lines[0]}" "Starting VM..."
}
