#!/usr/bin/env bats
# ss-tunnel against a real OpenSSH sshd (user@host): ssh's forward grammar and wording, unix
# sockets both ways, stale sockets, --json; and --check, the browser checks, with a native host
# stand-in speaking Claude in Chrome's framing on a socket with the right (and the wrong) modes.

load helpers
load sshd

ST="$SS_BUILD_DIR/libexec/ss/ss-tunnel"
PEER="$SS_SOURCE_DIR/tests/tools/bridge_peer.py"

setup() {
  ss_setup
  sshd_start
  DEST="$(id -un)@127.0.0.1"
  T_ARGS=(-p "$SSHD_PORT" -i "$SSHD_DIR/id_ed25519" --known-hosts "$SSHD_DIR/known_hosts")
  W="$BATS_TEST_TMPDIR/w"
  mkdir -p "$W"
  # The checks look for a DevTools port on browser.cdp_port: a port nothing listens on.
  CDP_PORT=$("$SS_SSH_TEST" free-port)
  ss config set browser.cdp_port "$CDP_PORT" >/dev/null
  export SS_BROWSER_SOCKET_DIR="$W/bridge"
  PIDS=()
}

teardown() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  sshd_stop
}

# bg NAME CMD...: runs CMD in the background, output in $W/NAME.out/.err, pid in $W/NAME.pid.
bg() {
  local name=$1; shift
  "$@" >"$W/$name.out" 2>"$W/$name.err" </dev/null &
  echo $! > "$W/$name.pid"
  PIDS+=($!)
}
# wait_for FILE REGEX: until FILE has a line matching REGEX (10 s).
wait_for() {
  local i
  for i in $(seq 1 200); do
    grep -qE -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "never saw /$2/ in $1:" >&2; cat "$1" "${1%.out}.err" >&2 2>/dev/null
  return 1
}
# stderr_has LINE / stderr_has_regexp REGEX: a line of the last run's stderr.
stderr_has() { grep -qxF -- "$1" <<< "$stderr" || fail "no line '$1' in stderr: $stderr"; }
stderr_has_regexp() { grep -qE -- "$1" <<< "$stderr" || fail "no line /$1/ in stderr: $stderr"; }
# wait_port PORT: until something accepts connections on 127.0.0.1:PORT (10 s).
wait_port() {
  local i
  for i in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}
# native_host PATH: the stand-in listening on PATH (directory 0700, socket 0600).
native_host() {
  bg "host-$(basename "$1")" python3 "$PEER" serve "$1"
  wait_for "$W/host-$(basename "$1").out" '^ready$'
}

@test "-L port:host:hostport and -L socket:host:hostport carry TCP; --json says where they listen" {
  HTTP_PORT=$("$SS_SSH_TEST" free-port)
  mkdir -p "$W/www" && echo hello-tunnel > "$W/www/index.html"
  bg http python3 -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$W/www"
  wait_port "$HTTP_PORT"
  L_PORT=$("$SS_SSH_TEST" free-port)
  bg tun "$ST" -N --json -L "$L_PORT:127.0.0.1:$HTTP_PORT" -L "$W/l.sock:localhost:$HTTP_PORT" \
    "${T_ARGS[@]}" "$DEST"
  wait_for "$W/tun.out" "l.sock"
  run curl -s --noproxy '*' "http://127.0.0.1:$L_PORT/"
  assert_output hello-tunnel
  run curl -s --unix-socket "$W/l.sock" http://x/
  assert_output hello-tunnel
  run jq -c '[.kind, .direction, .spec, .listen, .state]' "$W/tun.out"
  assert_line --index 0 "[\"TunnelForward\",\"local\",\"$L_PORT:127.0.0.1:$HTTP_PORT\",{\"host\":\"127.0.0.1\",\"port\":$L_PORT},\"listening\"]"
  assert_line --index 1 "[\"TunnelForward\",\"local\",\"$W/l.sock:localhost:$HTTP_PORT\",{\"path\":\"$W/l.sock\"},\"listening\"]"
  # The local socket is the user's alone.
  run stat -c %a "$W/l.sock"
  assert_output 600
}

@test "-R port 0 prints the allocated port as ssh does; -R socket:socket carries framed messages byte-exact" {
  HTTP_PORT=$("$SS_SSH_TEST" free-port)
  mkdir -p "$W/www" && echo hello-remote > "$W/www/index.html"
  bg http python3 -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$W/www"
  wait_port "$HTTP_PORT"
  native_host "$W/bridge/1.sock"
  mkdir -m 700 "$W/remote"
  bg tun "$ST" -N -R "0:127.0.0.1:$HTTP_PORT" -R "$W/remote/r.sock:$W/bridge/1.sock" \
    "${T_ARGS[@]}" "$DEST"
  wait_for "$W/tun.err" "^Allocated port [0-9]+ for remote forward to 127.0.0.1:$HTTP_PORT$"
  port=$(sed -n 's/^Allocated port \([0-9]*\) .*/\1/p' "$W/tun.err")
  run curl -s --noproxy '*' "http://127.0.0.1:$port/"
  assert_output hello-remote
  for i in $(seq 1 100); do [ -S "$W/remote/r.sock" ] && break; sleep 0.05; done
  run stat -c %a "$W/remote/r.sock"
  assert_output 600
  run python3 "$PEER" messages "$W/remote/r.sock" 50 1048576
  assert_success
  assert_output --regexp '^ok 50 frames [0-9]+ bytes$'
  run python3 "$PEER" concurrent "$W/remote/r.sock" 50
  assert_output "ok 50 connections"
  # Interrupted: the remote socket goes with it.
  kill -INT "$(cat "$W/tun.pid")"
  wait "$(cat "$W/tun.pid")" || fail "ss-tunnel exited $?"
  for i in $(seq 1 100); do [ -e "$W/remote/r.sock" ] || break; sleep 0.05; done
  assert_not_exist "$W/remote/r.sock"
}

@test "a stale socket is removed before binding; a live one is not taken over" {
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$W/stale.sock"
  [ -S "$W/stale.sock" ]
  HTTP_PORT=$("$SS_SSH_TEST" free-port)
  mkdir -p "$W/www" && echo fresh > "$W/www/index.html"
  bg http python3 -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$W/www"
  wait_port "$HTTP_PORT"
  bg tun "$ST" -N --json -L "$W/stale.sock:127.0.0.1:$HTTP_PORT" "${T_ARGS[@]}" "$DEST"
  wait_for "$W/tun.out" "stale.sock"
  run curl -s --unix-socket "$W/stale.sock" http://x/
  assert_output fresh
  # The remote side: a stale socket is replaced, a live one refused with ssh's words.
  mkdir -m 700 "$W/remote"
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$W/remote/r.sock"
  native_host "$W/bridge/1.sock"
  bg tun2 "$ST" -N --json -R "$W/remote/r.sock:$W/bridge/1.sock" "${T_ARGS[@]}" "$DEST"
  wait_for "$W/tun2.out" "r.sock"
  run python3 "$PEER" messages "$W/remote/r.sock" 3 1000
  assert_success
  native_host "$W/live/x.sock"
  run --separate-stderr "$ST" -N -R "$W/live/x.sock:$W/bridge/1.sock" "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: remote port forwarding failed for listen path $W/live/x.sock"
}

@test "a forward that cannot be set up fails loudly with ssh's words, and nothing is left running" {
  # A port taken on both loopback addresses (sshd listens on both for a remote forward, and
  # succeeds, as for ssh, when one of them is free).
  busy=$("$SS_SSH_TEST" free-port)
  bg busy python3 -c 'import socket,sys,time
p=int(sys.argv[1]); a=socket.socket(); a.bind(("127.0.0.1",p)); a.listen()
b=socket.socket(socket.AF_INET6); b.bind(("::1",p)); b.listen(); time.sleep(600)' "$busy"
  wait_port "$busy"
  run --separate-stderr "$ST" -N -R "$busy:127.0.0.1:80" "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: remote port forwarding failed for listen port $busy"
  run --separate-stderr "$ST" -N -L "$busy:127.0.0.1:80" "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: could not request local forwarding"
  # All or nothing: the first forward is not left behind when the second fails.
  ok=$("$SS_SSH_TEST" free-port)
  run --separate-stderr "$ST" -N -L "$ok:127.0.0.1:80" -R "$busy:127.0.0.1:80" "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 255
  run bash -c "exec 3<>/dev/tcp/127.0.0.1/$ok" 2>/dev/null
  assert_failure
  run --separate-stderr "$ST" -N -R "$W/no/such/dir/x.sock:$W/y.sock" "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 255
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: remote port forwarding failed for listen path $W/no/such/dir/x.sock"
}

@test "bad input: ssh's wording for specs, exit 64; unknown host key, exit 77; bad destination, exit 65" {
  run --separate-stderr "$ST" -N -L 8080 "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: bad local forwarding specification '8080'"
  run --separate-stderr ss tunnel -N -R 'a:b:c:d:e' "${T_ARGS[@]}" "$DEST"
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss-tunnel: error: bad remote forwarding specification 'a:b:c:d:e'"
  run --separate-stderr "$ST" -N -L 1:h:1 "$DEST" extra
  assert_equal "$status" 64
  : > "$W/empty_known_hosts"
  run --separate-stderr "$ST" -N -L "$("$SS_SSH_TEST" free-port):127.0.0.1:80" \
    -p "$SSHD_PORT" -i "$SSHD_DIR/id_ed25519" --known-hosts "$W/empty_known_hosts" "$DEST"
  assert_equal "$status" 77
  run --separate-stderr "$ST" -N -L 1:h:1 'bad name!'
  assert_equal "$status" 65
  run --separate-stderr "$ST" -N -L 1:h:1 no-such-sandbox
  assert_equal "$status" 66
}

@test "--check: a live native host socket is found, newest first; stale ones are skipped" {
  mkdir -p "$HOME/.claude/chrome" && touch "$HOME/.claude/chrome/chrome-native-host"
  native_host "$W/bridge/100.sock"
  # A newer socket nobody listens on: stale.
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$W/bridge/200.sock"
  chmod 600 "$W/bridge/200.sock"
  touch -d '+1 minute' "$W/bridge/200.sock" 2>/dev/null || true
  run --separate-stderr "$ST" --check
  assert_success
  assert_line "ok    socket: $W/bridge/100.sock accepts connections"
  assert_line "Browser: Connected (Claude in Chrome)"
  run "$ST" --check --json
  assert_success
  assert_equal "$(jq -r .mode <<< "$output")" socket
  assert_equal "$(jq -r .socket.live <<< "$output")" "$W/bridge/100.sock"
  assert_equal "$(jq -c .socket.stale <<< "$output")" "[\"$W/bridge/200.sock\"]"
}

@test "--check refuses, with a warning, a directory or socket that is not the user's alone" {
  mkdir -p "$HOME/.claude/chrome" && touch "$HOME/.claude/chrome/chrome-native-host"
  native_host "$W/bridge/1.sock"
  chmod 755 "$W/bridge"
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  stderr_has "ss-tunnel: warning: refusing $W/bridge: it is readable or writable by others (mode 0755)"
  chmod 700 "$W/bridge"
  chmod 666 "$W/bridge/1.sock"
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  stderr_has "ss-tunnel: warning: refusing $W/bridge/1.sock: it is readable or writable by others (mode 0666)"
  chmod 600 "$W/bridge/1.sock"
  chown 65534 "$W/bridge/1.sock"
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  stderr_has_regexp "^ss-tunnel: warning: refusing $W/bridge/1.sock: it is owned by (nobody|uid 65534), not $(id -un)$"
  chown "$(id -u)" "$W/bridge/1.sock"
  ln -s "$W/bridge" "$W/link"
  SS_BROWSER_SOCKET_DIR="$W/link" run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  stderr_has "ss-tunnel: warning: refusing $W/link: it is a symbolic link"
  run --separate-stderr "$ST" --check
  assert_success
}

@test "--check with nothing on the host: the spec's message for each primary problem, exit 1" {
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  assert_line "no    socket: $W/bridge does not exist"
  assert_line "no    devtools: port $CDP_PORT: nothing listens on 127.0.0.1:$CDP_PORT"
  if ! command -v claude >/dev/null; then
    assert_line "Error: Claude Code is not installed"
    assert_line "Error: Browser integration unavailable"
    assert_line "  Fallback (Chrome DevTools):"
    assert_line "    1. Run ~/super-sandbox/start-chrome-debug.sh"
  fi
  mkdir -p "$HOME/.claude/local" && touch "$HOME/.claude/local/claude"
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  assert_line "Error: Claude Code Chrome integration not found"
  assert_line "  claude --chrome"
  assert_line "Neither Claude in Chrome nor Chrome DevTools debugging is available."
  run "$ST" --check --json
  assert_equal "$(jq -r .mode <<< "$output")" none
  assert_equal "$(jq -r '.checks[] | select(.name=="integration") | .ok' <<< "$output")" false
}

@test "--check finds Chrome DevTools on browser.cdp_port (a real headless Chromium)" {
  command -v chromium >/dev/null || fail "chromium is not installed (tests/host-setup installs it)"
  mkdir -p "$HOME/.claude/chrome" && touch "$HOME/.claude/chrome/chrome-native-host"
  bg chrome chromium --headless=new --no-sandbox --remote-debugging-address=127.0.0.1 \
    --remote-debugging-port="$CDP_PORT" --user-data-dir="$W/profile" --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --disable-breakpad about:blank
  for i in $(seq 1 200); do curl -sf --noproxy '*' "http://127.0.0.1:$CDP_PORT/json/version" >/dev/null && break; sleep 0.05; done
  run --separate-stderr "$ST" --check
  assert_success
  assert_line --regexp "^ok    devtools: port $CDP_PORT: (Headless)?Chrome/[0-9.]+$"
  assert_line "Checking for Chrome DevTools fallback..."
  assert_line "Found Chrome with remote debugging on port $CDP_PORT."
  assert_line "Using Chrome DevTools MCP for browser automation."
  # Not a DevTools endpoint: an HTTP server answering something else on the port.
  kill "$(cat "$W/chrome.pid")"; wait "$(cat "$W/chrome.pid")" 2>/dev/null || true
  for i in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$CDP_PORT") 2>/dev/null || break; sleep 0.05; done
  bg http python3 -m http.server "$CDP_PORT" --bind 127.0.0.1 --directory "$W"
  wait_port "$CDP_PORT"
  run --separate-stderr "$ST" --check
  assert_equal "$status" 1
  assert_line "no    devtools: port $CDP_PORT: http://127.0.0.1:$CDP_PORT/json/version answered 404"
}

@test "--help and the man page list the same options; ss tunnel is ss-tunnel" {
  help_opts=$("$ST" --help | sed -n '/^Forwards/,$p' | grep -oE -- '(^|[ ,])--?[a-zA-Z][a-z-]*' \
    | tr -d ' ,' | sort -u)
  man_opts=$(sed -n '/^# OPTIONS/,/^# /p' "$SS_SOURCE_DIR/man/ss-tunnel.1.scd" | grep -E '^\*-' \
    | grep -oE -- '--?[a-zA-Z][a-z-]*' | sort -u)
  assert_equal "$man_opts" "$help_opts"
  assert_equal "$(echo "$help_opts" | tr '\n' ' ')" "--browser --check --help --json --known-hosts -L -N -R -h -i -p "
  assert_file_exists "$SS_BUILD_DIR/share/man/man1/ss-tunnel.1"
  run ss tunnel --help
  assert_success
  assert_line --index 0 --partial "usage: ss-tunnel [-L SPEC]..."
}
