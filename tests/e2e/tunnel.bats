#!/usr/bin/env bats
# The browser bridge against a real LXD sandbox: Claude in Chrome's socket forwarded into the
# sandbox (modes, framing at volume, concurrency, a restarted host, no fd leak), Chrome DevTools
# end to end (headless Chromium on the host, chrome-devtools-mcp in the sandbox spoken to over
# MCP), the bridge riding `ss PROJECT` sessions, and the Browser line of `ss status`.

load helpers

ST="$SS_BUILD_DIR/libexec/ss/ss-tunnel"
PEER="$SS_SOURCE_DIR/tests/tools/bridge_peer.py"
MCP="$SS_SOURCE_DIR/tests/e2e/mcp_devtools.py"
BRIDGE=/tmp/claude-mcp-browser-bridge-sandbox/bridge.sock

setup_file() {
  e2e_home
  export SANDBOX="tn-e2e-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  "$SS_BUILD_DIR/tests/ss-ssh-test" free-port > "$BATS_FILE_TMPDIR/cdp_port"
  ss vm setup --backend lxd >/dev/null
  ss vm image build >/dev/null 2>&1
  ss config set sandboxes.$SANDBOX.backend lxd >/dev/null
  # Provisioning points chrome-devtools-mcp at this port: set before the sandbox is created.
  ss config set browser.cdp_port "$(cat "$BATS_FILE_TMPDIR/cdp_port")" >/dev/null
  ss new proj >/dev/null
  SS_SANDBOX="$SANDBOX" ss vm start >/dev/null 2>&1
}

teardown_file() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  ss vm delete --sandbox "$SANDBOX" --yes --force >/dev/null 2>&1 || true
  e2e_home_remove
}

setup() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  CDP_PORT=$(cat "$BATS_FILE_TMPDIR/cdp_port")
  export SS_SANDBOX="$SANDBOX"
  W="$E2E_ROOT/t$BATS_TEST_NUMBER"
  mkdir -p "$W"
  export SS_BROWSER_SOCKET_DIR="$W/bridge"
  TMUX_SOCK="$W/tmux.sock"
  PIDS=()
}

teardown() {
  local p
  tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}

bg() {
  local name=$1; shift
  "$@" >"$W/$name.out" 2>"$W/$name.err" </dev/null &
  echo $! > "$W/$name.pid"
  PIDS+=($!)
}
wait_for() {
  local i
  for i in $(seq 1 ${3:-600}); do
    grep -qE -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "never saw /$2/ in $1:" >&2; cat "$1" "${1%.out}.err" >&2 2>/dev/null
  return 1
}
wait_port() {
  local i
  for i in $(seq 1 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}
native_host() {
  bg "host-$(basename "$1")" python3 "$PEER" serve "$1"
  wait_for "$W/host-$(basename "$1").out" '^ready$'
}
# in_sandbox SCRIPT ARGS...: runs a Python script from this tree in the sandbox, as its user.
in_sandbox() {
  local script=$1; shift
  sandbox_ssh "$SANDBOX" python3 - "$@" < "$script"
}
# A terminal session NAME running CMD, and its screen.
term() { tmux -S "$TMUX_SOCK" new-session -d -s "$1" -x 110 -y 40 "bash -c $(printf %q "$2")"; }
screen_of() { tmux -S "$TMUX_SOCK" capture-pane -p -S -100 -t "$1"; }
wait_screen() {
  local i
  for ((i = 0; i < ${3:-30} * 10; i++)); do
    screen_of "$1" | grep -qE -- "$2" && return 0
    sleep 0.1
  done
  echo "session $1 never showed /$2/:" >&2
  screen_of "$1" >&2
  return 1
}

@test "Claude in Chrome's socket in the sandbox: modes, 1,000 frames up to 1 MiB, 200 connections, a restarted host, no fd leak" {
  native_host "$W/bridge/1000.sock"
  bg tun "$ST" -N --browser --json "$SANDBOX"
  wait_for "$W/tun.out" '"kind":"BrowserBridge"'
  run jq -r 'select(.kind=="BrowserBridge") | .mode, .remote_socket' "$W/tun.out"
  assert_output "socket
$BRIDGE"
  run sandbox_ssh "$SANDBOX" "stat -c '%a %U %F' $(dirname "$BRIDGE") $BRIDGE"
  assert_output "700 sandbox directory
600 sandbox socket"
  run in_sandbox "$PEER" messages "$BRIDGE" 1000 1048576
  assert_success
  assert_output --regexp '^ok 1000 frames [0-9]+ bytes$'
  run in_sandbox "$PEER" concurrent "$BRIDGE" 200
  assert_success
  assert_output "ok 200 connections"
  # Nothing listens on TCP for the bridge in the sandbox: the socket is the only way in.
  run sandbox_ssh "$SANDBOX" ss -Hltnp
  refute_output --partial python3
  # Claude restarted on the host: the old socket is dead, a new one appears; new connections
  # from the sandbox reach it within 2 s.
  kill "$(cat "$W/host-1000.sock.pid")"
  native_host "$W/bridge/2000.sock"
  run in_sandbox "$PEER" until-ok "$BRIDGE" 2
  assert_success
  # 10,000 connections one after the other: ss-tunnel's open files are back where they were.
  tun_pid=$(cat "$W/tun.pid")
  before=$(ls /proc/"$tun_pid"/fd | wc -l)
  run in_sandbox "$PEER" sequential "$BRIDGE" 10000
  assert_success
  assert_output "ok 10000 connections"
  sleep 0.5
  after=$(ls /proc/"$tun_pid"/fd | wc -l)
  assert_equal "$after" "$before"
  kill -TERM "$tun_pid"
  wait "$tun_pid" || fail "ss-tunnel exited $?"
  run sandbox_ssh "$SANDBOX" test -e "$BRIDGE"
  assert_failure
}

@test "Chrome DevTools end to end: headless Chromium on the host, chrome-devtools-mcp in the sandbox over the loopback-only forward" {
  command -v chromium >/dev/null || fail "chromium is not installed (tests/host-setup installs it)"
  HTTP_PORT=$("$SS_BUILD_DIR/tests/ss-ssh-test" free-port)
  mkdir -p "$W/www"
  echo '<html><head><title>ss tunnel e2e page</title></head><body><h1>Hello from the host</h1></body></html>' > "$W/www/index.html"
  bg http python3 -m http.server "$HTTP_PORT" --bind 127.0.0.1 --directory "$W/www"
  wait_port "$HTTP_PORT"
  # Chrome as the user would start it: ss's start-chrome-debug.sh (written by the checks that
  # tell the user to run it), headless here.
  run "$ST" --check
  assert_file_executable "$SS_HOME/start-chrome-debug.sh"
  bg chrome "$SS_HOME/start-chrome-debug.sh" --headless=new --no-sandbox --no-first-run \
    --no-default-browser-check --disable-background-networking --disable-component-update \
    --disable-sync --disable-default-apps --disable-extensions --disable-breakpad --mute-audio about:blank
  for i in $(seq 1 200); do curl -sf --noproxy '*' "http://127.0.0.1:$CDP_PORT/json/version" >/dev/null && break; sleep 0.05; done
  assert_dir_exists "$HOME/.super-sandbox/chrome-debug-profile"
  # Chrome's debugging port is on loopback only on the host, too.
  run /usr/bin/ss -Hltn "sport = :$CDP_PORT"
  assert_output --regexp "127\.0\.0\.1:$CDP_PORT "
  refute_output --regexp "(0\.0\.0\.0|\*|\[::\]):$CDP_PORT "
  bg tun "$ST" -N --browser --json "$SANDBOX"
  wait_for "$W/tun.out" '"kind":"BrowserBridge"'
  run jq -r 'select(.kind=="BrowserBridge") | .mode, .devtools.forwarded' "$W/tun.out"
  assert_output "devtools
true"
  # Loopback only in the sandbox.
  run sandbox_ssh "$SANDBOX" "ss -Hltn 'sport = :$CDP_PORT'"
  assert_output --regexp "127\.0\.0\.1:$CDP_PORT "
  refute_output --regexp "(0\.0\.0\.0|\*|\[::\]):$CDP_PORT "
  # Claude Code in the sandbox has chrome-devtools-mcp pointed at the forwarded port.
  run sandbox_ssh "$SANDBOX" "jq -c '.mcpServers[\"chrome-devtools\"] | [.command, .args]' .claude.json"
  assert_output "[\"chrome-devtools-mcp\",[\"--browserUrl\",\"http://127.0.0.1:$CDP_PORT\"]]"
  run in_sandbox "$MCP" "http://127.0.0.1:$HTTP_PORT/"
  assert_success
  assert_equal "$(jq -r .server <<< "$output")" chrome_devtools
  assert_output --partial "ss tunnel e2e page (http://127.0.0.1:$HTTP_PORT/)"
  [ "$(jq -r .png_bytes <<< "$output")" -gt 1000 ]
}

@test "ss PROJECT: the bridge rides each session; two sessions share it; it goes with the last" {
  native_host "$W/bridge/1.sock"
  term a "ss proj -t"
  wait_screen a "Browser: Connected \(Claude in Chrome\)"
  # The sandbox's Claude Code uses the relay: said, not hidden.
  wait_screen a "Relay: Claude Code 2\.[0-9.]+ in the sandbox sends Claude in Chrome's commands"
  wait_screen a 'sandbox@'
  term b "ss proj -t"
  wait_screen b "Browser: Connected \(Claude in Chrome\)"
  wait_screen b 'sandbox@'
  run in_sandbox "$PEER" messages "$BRIDGE" 20 100000
  assert_success
  tmux -S "$TMUX_SOCK" send-keys -t a "exit" Enter
  for i in $(seq 1 100); do tmux -S "$TMUX_SOCK" has-session -t a 2>/dev/null || break; sleep 0.1; done
  run in_sandbox "$PEER" messages "$BRIDGE" 20 100000
  assert_success
  run in_sandbox "$PEER" concurrent "$BRIDGE" 20
  assert_success
  tmux -S "$TMUX_SOCK" send-keys -t b "exit" Enter
  for i in $(seq 1 100); do tmux -S "$TMUX_SOCK" has-session -t b 2>/dev/null || break; sleep 0.1; done
  for i in $(seq 1 50); do sandbox_ssh "$SANDBOX" test -e "$BRIDGE" || break; sleep 0.1; done
  run sandbox_ssh "$SANDBOX" test -e "$BRIDGE"
  assert_failure
}

@test "agent.browser auto: the agent starts with --chrome when Claude in Chrome is the path, else as written" {
  # The agent stands in for claude: it prints its arguments and waits.
  as_owner sh -c 'printf "%s\n" "#!/bin/sh" "echo \"agent-args: \$*\"" "sleep 60" > "$1/claude" && chmod 755 "$1/claude"' \
    sh "$SS_HOME/projects/proj"
  ss config set agent.command "/home/sandbox/projects/proj/claude --dangerously-skip-permissions" >/dev/null
  native_host "$W/bridge/1.sock"
  term a "ss proj"
  wait_screen a "Browser: Connected \(Claude in Chrome\)"
  wait_screen a "^agent-args: --chrome --dangerously-skip-permissions$"
  ss config set agent.browser off >/dev/null
  term b "ss proj"
  wait_screen b "Browser: Connected \(Claude in Chrome\)"
  wait_screen b "^agent-args: --dangerously-skip-permissions$"
  ss config set agent.browser auto >/dev/null
  ss config set agent.command "/home/sandbox/projects/proj/claude --chrome" >/dev/null
  term c "ss proj"
  wait_screen c "^agent-args: --chrome$"
  # No Claude in Chrome: the command as written.
  kill "$(cat "$W/host-1.sock.pid")"
  rm -f "$W/bridge/1.sock"
  ss config set agent.command "/home/sandbox/projects/proj/claude --dangerously-skip-permissions" >/dev/null
  term d "ss proj"
  wait_screen d "^agent-args: --dangerously-skip-permissions$"
  ss config set agent.command "claude --dangerously-skip-permissions" >/dev/null
  as_owner rm -f "$SS_HOME/projects/proj/claude"
}

@test "ss PROJECT with no browser: the Unavailable box, and the session opens anyway" {
  rm -f "$SS_HOME/.ss/browser-unavailable-shown"
  term a "ss proj -t"
  wait_screen a "Browser Integration Unavailable"
  wait_screen a "Run 'claude --chrome' on the host and keep it running"
  wait_screen a 'sandbox@'
  tmux -S "$TMUX_SOCK" send-keys -t a "echo still-here-\$((6*7))" Enter
  wait_screen a "still-here-42"
}

@test "ss status: the Browser line, with the relay said for the sandbox's Claude Code" {
  run ss status
  assert_success
  assert_line --regexp "^Browser:   not available \(run 'claude --chrome' on the host, or ~/super-sandbox/start-chrome-debug.sh\); Claude Code 2\.[0-9.]+ in the sandbox reaches Claude in Chrome through Anthropic's relay$"
  native_host "$W/bridge/1.sock"
  run ss status
  assert_success
  assert_line --regexp "^Browser:   connected \(Claude in Chrome\); Claude Code 2\.[0-9.]+ in the sandbox reaches Claude in Chrome through Anthropic's relay$"
  run ss status --json
  assert_equal "$(jq -r '.browser.mode, .browser.relay' <<< "$output")" "socket
true"
}
