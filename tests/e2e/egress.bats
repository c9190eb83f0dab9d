#!/usr/bin/env bats
# A sandbox's network, from inside, against a stand-in internet (fake_internet_up: a network
# namespace of the file's own at 198.51.100.2 with web servers, a UDP sink and a DNS server for
# fake names). Allowed names work; as root inside, every other way out fails fast;
# policy changes count without a restart; ss-net gone means no network until ss starts it again.
# Runs once per backend (SS_E2E_BACKEND; Docker when run alone).

load helpers

setup_file() {
  export SS_E2E_BACKEND=${SS_E2E_BACKEND:-docker}
  e2e_sandbox_file eg
  fake_internet_up allowed.test evil.test config.test
  # A variable of the user's that ss's long-lived processes must not keep.
  export EGRESS_TEST_PRIVATE="private-$$"
  # A service of the host's on every address: the sandbox must not reach it.
  python3 "$SS_SOURCE_DIR/tests/e2e/outside.py" 0.0.0.0 /dev/null tcp:0 >"$FI_DIR/host_port" 3>&- &
  echo $! >>"$FI_DIR/pids"
  for _ in $(seq 50); do [ -s "$FI_DIR/host_port" ] && break; sleep 0.1; done
  ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND" >&3 2>&1
  ss net allow allowed.test --sandbox "$SANDBOX" >/dev/null
}

teardown_file() {
  e2e_env
  fake_internet_env
  e2e_sandbox_remove
  fake_internet_down
}

setup() {
  e2e_sandbox_env
  fake_internet_env
}

in_sandbox() { sandbox_ssh "$SANDBOX" "$@"; }
as_root() { sandbox_ssh "$SANDBOX" sudo -n "$@"; }

@test "egress: allowed names work, transparently and through the proxy; others are refused with the reason" {
  run in_sandbox curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
  # Through the proxy the sandbox's logins are pointed at: refused with the reason.
  run in_sandbox curl -sS -m 10 http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox '$SANDBOX'; to allow it: ss net allow evil.test"
  run in_sandbox env -u http_proxy -u HTTP_PROXY curl -sS -m 10 http://evil.test/
  assert_failure  # evil.test does not resolve
  run in_sandbox curl -s -m 10 --resolve evil.test:80:198.51.100.2 http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox '$SANDBOX'; to allow it: ss net allow evil.test"
  gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
  run in_sandbox curl -s -m 10 --proxy "http://$gateway:3128" http://evil.test/
  assert_output --partial "is not in the allowlist"
  run in_sandbox curl -s -m 10 "http://$gateway:3128/denials"
  assert_output --partial "evil.test:80"
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict == "allow" and .destination == "allowed.test")) | length >= 1'
}

@test "egress: every login is pointed at the proxy; clients that honour it go through it" {
  gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
  run in_sandbox printenv HTTPS_PROXY
  assert_output "http://$gateway:3128"
  run in_sandbox printenv http_proxy NODE_USE_ENV_PROXY
  assert_output "$(printf 'http://%s:3128\n1' "$gateway")"
  # curl takes the proxy from the environment: the request reaches ss-net as a proxy request
  # (not intercepted), and is logged as such.
  run in_sandbox curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
  # An https URL goes as a CONNECT (the server there speaks plain HTTP: the handshake fails,
  # after the proxy let it through).
  run in_sandbox curl -sS -m 10 https://allowed.test:8080/
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.kind == "http" and (.transparent // false) == false and .destination == "allowed.test" and .verdict == "allow")) | length >= 1'
  echo "$output" | jq -e -s 'map(select(.kind == "connect" and .destination == "allowed.test" and .port == 8080)) | length >= 1'
}

@test "egress: config.yaml's network counts from the next session, on top of which ss net's changes stay" {
  run in_sandbox curl -s -m 10 http://config.test/
  assert_output --partial "is not in the allowlist"
  ss config set "sandboxes.$SANDBOX.network.allow" config.test >/dev/null
  run ss exec e2e-scratch -- true
  run in_sandbox curl -sS -m 10 http://config.test/
  assert_output "outside says hi"
  run ss net ls --sandbox "$SANDBOX"
  assert_line "  allow allowed.test"
  assert_line "  allow config.test"
  ss config set "sandboxes.$SANDBOX.network.presets" "" >/dev/null
  ss exec e2e-scratch -- true
  run ss net ls --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.allow == ["config.test", "allowed.test"]'
  ss config set "sandboxes.$SANDBOX.network.presets" "agent, packages, github" >/dev/null
  ss config set "sandboxes.$SANDBOX.network.allow" "" >/dev/null
}

@test "egress: ss-net and the shared connection keep none of the user's other variables" {
  pid=$(jq -r .pid "$SS_HOME/.ss/sandboxes/$SANDBOX/net/serve.json")
  run tr '\0' '\n' <"/proc/$pid/environ"
  assert_line "SS_HOME=$SS_HOME"
  refute_output --partial EGRESS_TEST_PRIVATE
  # A session passes the secret in; the shared connection it leaves behind does not keep it.
  pkill -f "ss-attach --share-master $SANDBOX\$" || true
  ss config set "sandboxes.$SANDBOX.secrets" EGRESS_TEST_PRIVATE >/dev/null
  run env EGRESS_TEST_PRIVATE=private-value ss exec e2e-scratch -- printenv EGRESS_TEST_PRIVATE
  assert_output private-value
  for _ in $(seq 50); do master=$(pgrep -f "ss-attach --share-master $SANDBOX\$") && break; sleep 0.1; done
  run tr '\0' '\n' <"/proc/$master/environ"
  assert_line "SS_HOME=$SS_HOME"
  refute_output --partial EGRESS_TEST_PRIVATE
  run env EGRESS_TEST_PRIVATE=private-again ss exec e2e-scratch -- printenv EGRESS_TEST_PRIVATE
  assert_output private-again
  ss config set "sandboxes.$SANDBOX.secrets" "" >/dev/null
}

@test "egress: as root inside, nothing else gets out, and it fails fast" {
  local start=$SECONDS
  gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
  run as_root python3 - 198.51.100.2 "$gateway" 3128 "$(cat "$FI_DIR/host_port")" \
    <"$SS_SOURCE_DIR/tests/e2e/bypass.py"
  echo "# bypass attempts on $SS_E2E_BACKEND: ${lines[-1]}" >&3
  refute_line --partial "LEAKED"
  assert_line "tried 19 blocked 19"
  [ $((SECONDS - start)) -lt 120 ]
  # Nothing arrived outside: no datagram, no lookup of a disallowed name.
  sleep 1
  assert_file_not_exists "$FI_DIR/udp.got"
  run grep -c evil "$FI_DIR/dns.queries"
  assert_output 0
  # And the sandbox's refused connections are in the log, with their reason.
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict != "allow" and .destination == "evil.test")) | length >= 2'
}

@test "egress: ss net allow counts at once; with ss-net gone nothing passes until ss starts it again" {
  ss net allow evil.test --sandbox "$SANDBOX" >/dev/null
  run in_sandbox curl -sS -m 10 http://evil.test/
  assert_output "outside says hi"
  ss net deny evil.test --sandbox "$SANDBOX" >/dev/null
  run in_sandbox curl -s -m 10 --resolve evil.test:80:198.51.100.2 http://evil.test/
  assert_output --partial "denied by the rule 'evil.test'"
  run ss status --sandbox "$SANDBOX"
  assert_line --regexp "^Network:   allowlist, [0-9]+ allowed, 1 denied \(ss net ls\)$"
  pid=$(jq -r .pid "$SS_HOME/.ss/sandboxes/$SANDBOX/net/serve.json")
  kill "$pid"
  sleep 0.5
  run ss status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.network.fenced == true and .network.proxy_pid == null and .network.mode == "allowlist"'
  run ss status --sandbox "$SANDBOX"
  assert_line --partial "ss-net is not running, so nothing gets out until the next command starts it"
  run in_sandbox curl -sS -m 10 --resolve allowed.test:80:198.51.100.2 http://allowed.test/
  assert_failure
  # The next session starts it again.
  ss exec e2e-scratch -- true
  run in_sandbox curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
}

@test "egress: a stopped sandbox whose fence was lost (a host reboot) is fenced again before it boots" {
  ss vm stop --sandbox "$SANDBOX" >/dev/null
  run ss status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.network.fenced == true and .network.proxy_pid == null'
  "$SS_BUILD_DIR/libexec/ss/ss-net" fence remove --sandbox "$SANDBOX"
  run "$SS_BUILD_DIR/libexec/ss/ss-net" fence check --sandbox "$SANDBOX"
  assert_failure 1
  ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
  "$SS_BUILD_DIR/libexec/ss/ss-net" fence check --sandbox "$SANDBOX"
  run in_sandbox curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
  run as_root curl -sS -m 10 http://198.51.100.2:8080/
  assert_failure 7
}

@test "egress: a reset keeps the policy, and the old ss-net does not outlive the old machine" {
  old=$(jq -r .pid "$SS_HOME/.ss/sandboxes/$SANDBOX/net/serve.json")
  ss vm reset --sandbox "$SANDBOX" --yes >/dev/null 2>&1
  run kill -0 "$old"
  assert_failure
  run ss net ls --sandbox "$SANDBOX"
  assert_line "  allow allowed.test"
  run in_sandbox curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
  [ "$(pgrep -fc "ss-net serve --sandbox $SANDBOX ")" -eq 1 ]
}
