#!/usr/bin/env bats
# ss-net's credential injection on its own, against a stand-in for the internet (world_up): an
# HTTPS server (its certificate from a test CA that ss-net is told to trust through
# SSL_CERT_FILE) that writes down every request it gets. The client trusts ss-net's CA; the real
# value is in ss-net's environment only; the requests carry the placeholder.

load helpers
load net_world

setup() {
  net_setup
  SECRET="sk-real-value-$$-$RANDOM"
  PH="ss-placeholder-0123456789abcdef"
  PH_OTHER="ss-placeholder-other-0123456789"
  PH_FILE="ss-placeholder-file-0123456789"
  PH_CMD="ss-placeholder-cmd-0123456789"
}

teardown() {
  net_teardown
}

# certificate NAME HOST: a self-signed certificate for HOST in $W/NAME.{crt,key}.
certificate() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=$2" -addext "subjectAltName=DNS:$2" -keyout "$W/$1.key" -out "$W/$1.crt" 2>/dev/null
}

# The stand-in internet, ss-net's policy for "box" (secrets injected for api.inject.test and
# untrusted.test), ss-net's CA, and ss-net serving with ARGS.
inject_world() {
  world_up
  NS=$OUT background "$W/dns.port" python3 "$SS_SOURCE_DIR/tests/cli/dns_server.py" "$OUTSIDE" 0 \
    "$W/dns.queries" api.inject.test="$OUTSIDE" untrusted.test="$OUTSIDE" plain.test="$OUTSIDE"
  certificate up api.inject.test
  certificate bad untrusted.test
  NS=$OUT background "$W/up.port" python3 "$SS_SOURCE_DIR/tests/cli/header_server.py" "$OUTSIDE" 0 \
    "$W/up.crt" "$W/up.key" "$W/up.requests"
  UP=$(cat "$W/up.port")
  NS=$OUT background "$W/bad.port" python3 "$SS_SOURCE_DIR/tests/cli/header_server.py" "$OUTSIDE" 0 \
    "$W/bad.crt" "$W/bad.key" "$W/bad.requests"
  BAD=$(cat "$W/bad.port")
  mkdir -p "$W/www"
  echo "plain" >"$W/www/index.html"
  NS=$OUT background "$W/http.port" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" "$OUTSIDE" 0 \
    "$W/www"
  HTTP=$(cat "$W/http.port")
  mkdir -p "$SS_HOME/.ss/sandboxes/box/net"
  jq -n --arg ph "$PH" --arg other "$PH_OTHER" --arg file "$PH_FILE" --arg cmd "$PH_CMD" '{
    mode: "allowlist",
    allow: ["api.inject.test", "untrusted.test", "plain.test"],
    inject: [
      {secret: "API_KEY", placeholder: $ph, hosts: ["api.inject.test", "untrusted.test"],
       from: {env: "SS_TEST_SECRET"}},
      {secret: "OTHER_TOKEN", placeholder: $other, hosts: ["untrusted.test"],
       from: {env: "SS_TEST_SECRET"}},
      {secret: "FILE_TOKEN", placeholder: $file, hosts: ["api.inject.test"],
       from: {file: "/nonexistent/token"}, headers: ["X-Token"]},
      {secret: "CMD_TOKEN", placeholder: $cmd, hosts: ["api.inject.test"],
       from: {command: ["printf", "  %s\n", "from-a-command"]}, headers: ["x-token"]}]}' \
    >"$SS_HOME/.ss/sandboxes/box/net/policy.json"
  chmod 600 "$SS_HOME/.ss/sandboxes/box/net/policy.json"
  ss net ca >"$W/ca.crt"
  SS_TEST_SECRET=$SECRET SSL_CERT_FILE="$W/up.crt" background "$W/ready.json" \
    "$SS_BUILD_DIR/libexec/ss/ss-net" serve --sandbox box --upstream-dns "$OUTSIDE:$(cat "$W/dns.port")" \
    --policy "$SS_HOME/.ss/sandboxes/box/net/policy.json" "$@"
  PROXY=$(jq -r '.proxy[0] // empty' "$W/ready.json")
  TRANSPARENT=$(jq -r '.transparent[0] // empty' "$W/ready.json")
}

LOG() { cat "$SS_HOME/.ss/sandboxes/box/net/log.jsonl"; }

# The secret appears nowhere ss-net writes or tells the sandbox.
secret_kept() {
  ! grep -rF "$SECRET" "$SS_HOME/.ss/sandboxes/box/net" "$W/ready.json" "$W/ready.json.err"
  if [ -n "${PROXY:-}" ]; then
    run in_ns curl -s "http://$PROXY/denials"
    refute_output --partial "$SECRET"
  fi
}

# req ARGS...: curl through the proxy, trusting ss-net's CA only.
req() { in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/ca.crt" "$@"; }

@test "net inject: the CA is made once, with its key 0600, and ss-net ca prints it" {
  run ss net ca
  assert_success
  assert_output --partial "BEGIN CERTIFICATE"
  [ "$(stat -c %a "$SS_HOME/.ss/net-ca.key")" = 600 ]
  [ "$(stat -c %a "$SS_HOME/.ss/net-ca.crt")" = 644 ]
  first=$output
  run ss net ca
  assert_equal "$output" "$first"
  echo "$first" | openssl x509 -noout -ext basicConstraints,keyUsage | grep -q 'CA:TRUE'
  run ss net ca --sandbox box
  assert_failure 64
}

@test "net inject: through CONNECT the placeholder arrives upstream as the real value, bodies unchanged" {
  inject_world --proxy 127.0.0.1:0
  # Two requests on one connection (keep-alive): x-api-key and Authorization: Bearer, a body with
  # Content-Length and one chunked, both carrying the placeholder unchanged.
  run req -H "x-api-key: $PH" -H "Authorization: Bearer $PH" --data-binary "body $PH" \
    "https://api.inject.test:$UP/v1/messages" \
    --next --proxy "http://$PROXY" --cacert "$W/ca.crt" -H "Transfer-Encoding: chunked" \
    -H "X-Chunked-Response: 1" -H "x-api-key: $PH" --data-binary "chunked $PH" \
    "https://api.inject.test:$UP/v1/again"
  assert_success
  assert_output "ok 1
ok 2"
  jq -e -s --arg s "$SECRET" --arg ph "$PH" '
    length == 2
    and (.[0].headers | map(select(.[0] == "x-api-key")) == [["x-api-key", $s]])
    and (.[0].headers | map(select(.[0] == "Authorization")) == [["Authorization", "Bearer " + $s]])
    and .[0].body == "body " + $ph and .[0].framing == "length"
    and .[1].body == "chunked " + $ph and .[1].framing == "chunked"
    and (.[1].headers | map(select(.[0] == "x-api-key")) == [["x-api-key", $s]])
    and .[0].sni == "api.inject.test" and .[0].path == "/v1/messages"' "$W/up.requests"
  # Secrets from a command (trimmed) and from a file that is missing (502 naming the secret).
  run req -H "x-token: $PH_CMD" "https://api.inject.test:$UP/cmd"
  assert_output "ok 3"
  tail -1 "$W/up.requests" | jq -e '.headers | map(select(.[0] == "x-token")) == [["x-token", "from-a-command"]]'
  # A placeholder in a header its secret does not go in (one a server might echo back) is
  # refused, and nothing reaches upstream.
  requests=$(wc -l <"$W/up.requests")
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" \
    -H "x-api-key: $PH" -H "X-Echo: $PH" "https://api.inject.test:$UP/echo"
  assert_output --partial "ss-net: the placeholder of secret API_KEY goes in the authorization or x-api-key header only, not in X-Echo"
  assert_output --regexp '403$'
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" \
    -H "Authorization: $PH_CMD" "https://api.inject.test:$UP/echo"
  assert_output --regexp '403$'
  assert_equal "$(wc -l <"$W/up.requests")" "$requests"
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" \
    -H "x-token: $PH_FILE" "https://api.inject.test:$UP/file"
  assert_output --partial "ss-net: cannot read secret FILE_TOKEN: "
  assert_output --partial "/nonexistent/token"
  assert_output --regexp '502$'
  # One log line per connection: allowed, intercepted, which secrets went in.
  LOG | jq -e -s "map(select(.kind == \"connect\" and .inject and .verdict == \"allow\"
    and .destination == \"api.inject.test\" and .port == $UP and .requests == 2
    and .injected == [\"API_KEY\"])) | length == 1"
  LOG | jq -e -s 'map(select(.verdict == "fail" and .secret == "FILE_TOKEN")) | length == 1'
  [ "$(wc -l <"$W/up.requests")" -eq 3 ]
  secret_kept
}

@test "net inject: refused: an untrusted upstream (502), a placeholder for another host, a wrong Host" {
  inject_world --proxy 127.0.0.1:0
  # The upstream's certificate is not trusted: the CONNECT itself fails; nothing reaches it.
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/ca.crt" -H "x-api-key: $PH" \
    "https://untrusted.test:$BAD/"
  assert_failure
  assert_output --partial "502"
  LOG | jq -e -s 'map(select(.destination == "untrusted.test" and .verdict == "fail"
    and (.reason | startswith("the certificate of untrusted.test is not trusted")))) | length >= 1'
  assert_file_not_exists "$W/bad.requests"
  # A placeholder of a secret not declared for the host, over TLS and in plain HTTP.
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" \
    -H "Authorization: Bearer $PH_OTHER" "https://api.inject.test:$UP/"
  assert_output "ss-net: the placeholder of secret OTHER_TOKEN is for untrusted.test only, not for api.inject.test
403"
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" -H "x-api-key: $PH" "http://plain.test:$HTTP/"
  assert_output "ss-net: the placeholder of secret API_KEY is sent to plain.test in plain HTTP; it is replaced only over HTTPS to api.inject.test, untrusted.test
403"
  # The request names another host than the connection's.
  run in_ns curl -s -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" -H "Host: plain.test" \
    -H "x-api-key: $PH" "https://api.inject.test:$UP/"
  assert_output --regexp "must name api.inject.test as its Host, once
403$"
  # A placeholder in the request line is not replaced: refused, not sent.
  run in_ns curl -s -o /dev/null -w '%{http_code}' --proxy "http://$PROXY" --cacert "$W/ca.crt" \
    "https://api.inject.test:$UP/?key=$PH"
  assert_output 403
  assert_file_not_exists "$W/up.requests"
  run in_ns curl -s "http://$PROXY/denials"
  assert_output --partial "placeholder of secret OTHER_TOKEN"
  LOG | jq -e -s 'map(select(.verdict == "deny" and .rule == "placeholder" and .secret == "API_KEY"))
    | length == 1'
  secret_kept
}

@test "net inject: a client that does not trust ss-net's CA gets nothing through, never a tunnel" {
  inject_world --proxy 127.0.0.1:0
  run in_ns curl -sS --proxy "http://$PROXY" --cacert "$W/up.crt" -H "x-api-key: $PH" \
    "https://api.inject.test:$UP/"
  assert_failure
  assert_file_not_exists "$W/up.requests"
  LOG | jq -e -s 'map(select(.inject and .verdict == "fail"
    and (.reason | contains("does it trust the ss-net CA")))) | length == 1'
  # HTTP/2 is not spoken to the client: curl falls back to HTTP/1.1.
  run req --http2 -H "x-api-key: $PH" "https://api.inject.test:$UP/"
  assert_output "ok 1"
}

@test "net inject: a head cut into one-byte writes is still injected; a huge head is refused" {
  inject_world --proxy 127.0.0.1:0
  # Through CONNECT and TLS by hand: the placeholder reaches ss-net a byte per TLS record.
  run in_ns python3 - "${PROXY%:*}" "${PROXY##*:}" "$UP" "$W/ca.crt" "$PH" <<'PY'
import socket, ssl, sys, time
host, port, up, ca, ph = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def tunnel():
    s = socket.create_connection((host, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(f"CONNECT api.inject.test:{up} HTTP/1.1\r\nHost: api.inject.test:{up}\r\n\r\n".encode())
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    return ssl.create_default_context(cafile=ca).wrap_socket(s, server_hostname="api.inject.test")
t = tunnel()
for b in f"GET /split HTTP/1.1\r\nHost: api.inject.test\r\nx-api-key: {ph}\r\n\r\n".encode():
    t.sendall(bytes([b]))
    time.sleep(0.001)
print(t.recv(4096).decode().split("\r\n")[0])
t = tunnel()
t.sendall(b"GET / HTTP/1.1\r\nHost: api.inject.test\r\nx-big: " + b"a" * 20000 + b"\r\n\r\n")
print(t.recv(4096).decode().split("\r\n")[0])
PY
  assert_success
  assert_output "HTTP/1.1 200 OK
HTTP/1.1 431 Request Header Fields Too Large"
  jq -e -s --arg s "$SECRET" 'length == 1 and .[0].path == "/split"
    and (.[0].headers | map(select(.[0] == "x-api-key")) == [["x-api-key", $s]])' "$W/up.requests"
  secret_kept
}

@test "net inject: transparent interception of port 443 injects the same way" {
  inject_world --transparent 127.0.0.1:0 --proxy 127.0.0.1:0
  # Where the sandbox's connections seem to go: a TEST-NET-2 address, redirected to ss-net.
  ip -n "$NS" route add 198.51.100.0/24 dev wan0
  redirect_outside "$UP" "$BAD"
  run in_ns curl -sS --cacert "$W/ca.crt" --resolve "api.inject.test:$UP:198.51.100.9" \
    -H "x-api-key: $PH" "https://api.inject.test:$UP/t"
  assert_success
  assert_output "ok 1"
  jq -e -s --arg s "$SECRET" '.[0].headers | map(select(.[0] == "x-api-key")) == [["x-api-key", $s]]' \
    "$W/up.requests"
  # An untrusted upstream: the client hears 502 inside TLS.
  run in_ns curl -s -w '%{http_code}' --cacert "$W/ca.crt" --resolve "untrusted.test:$BAD:198.51.100.9" \
    -H "x-api-key: $PH" "https://untrusted.test:$BAD/"
  assert_output --regexp "^ss-net: the certificate of untrusted.test is not trusted: .*
502$"
  assert_file_not_exists "$W/bad.requests"
  LOG | jq -e -s "map(select(.kind == \"tls\" and .transparent and .inject and .verdict == \"allow\"
    and .injected == [\"API_KEY\"])) | length == 1"
  secret_kept
}

@test "net inject: a policy with a bad injection is refused, naming what is wrong" {
  mkdir -p "$SS_HOME/.ss/sandboxes/box/net"
  echo '{"mode":"allowlist","inject":[{"secret":"K","placeholder":"short","hosts":["a.test"],"from":{"env":"K"}}]}' \
    >"$W/policy.json"
  run --separate-stderr "$SS_BUILD_DIR/libexec/ss/ss-net" serve --sandbox box --policy "$W/policy.json" \
    --upstream-dns 127.0.0.1 --proxy 127.0.0.1:0
  assert_failure 65
  assert_equal "$stderr" "ss-net: error: invalid network policy: the placeholder of K must be 16 to 200 letters, digits, '_', '-' or '.'"
}
