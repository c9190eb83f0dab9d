#!/usr/bin/env bats
# ss PROJECT, ss exec, ss claude-run and friends against a real sandbox (LXD, or the backend in
# $SS_E2E_BACKEND): argv exact for any bytes, exit statuses, the terminal (through tmux), secrets,
# the pinned host key, ssh-config.

: "${SS_E2E_BACKEND:=lxd}"
load helpers

setup_file() {
  e2e_home
  export SANDBOX="e2e-attach-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  ss vm setup --backend "$SS_E2E_BACKEND" >/dev/null
  ss vm image build >/dev/null 2>&1
  ss config set sandboxes.$SANDBOX.backend "$SS_E2E_BACKEND" >/dev/null
  ss new proj >/dev/null
  # What the agent would be: a program that prints its argv, NUL-terminated.
  as_owner sh -c 'printf "%s\n" "#!/bin/sh" "for a in \"\$@\"; do printf \"%s\\\\0\" \"\$a\"; done" > "$1" && chmod 755 "$1"' \
    sh "$SS_HOME/projects/proj/printargs"
  SS_SANDBOX="$SANDBOX" ss vm start >/dev/null 2>&1
}

teardown_file() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  pkill -f -- "--share-master $SANDBOX" || true
  local sock
  for sock in "$E2E_ROOT"/tmux-*.sock; do tmux -S "$sock" kill-server 2>/dev/null || true; done
  ss vm delete --sandbox "$SANDBOX" --yes --force >/dev/null 2>&1 || true
  e2e_home_remove
}

setup() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  export SS_SANDBOX="$SANDBOX"
  TMUX_N=0
}

teardown() {
  local sock
  for sock in "$E2E_ROOT"/tmux-*.sock; do tmux -S "$sock" kill-server 2>/dev/null || true; done
}

# tmux_run CMD: a terminal of 100x30 running CMD (a bash -c script), on a tmux server of its own
# (a server just killed may still hold the previous socket).
tmux_run() {
  TMUX_SOCK="$E2E_ROOT/tmux-$((++TMUX_N)).sock"
  tmux -S "$TMUX_SOCK" new-session -d -s t -x 100 -y 30 "bash -c $(printf %q "$1")"
}
screen() { tmux -S "$TMUX_SOCK" capture-pane -p -t t; }
# wait_screen REGEX [SECONDS]
wait_screen() {
  local i
  for ((i = 0; i < ${2:-20} * 10; i++)); do
    screen | grep -qE -- "$1" && return 0
    sleep 0.1
  done
  echo "screen never showed /$1/:" >&2
  screen >&2
  return 1
}
keys() { tmux -S "$TMUX_SOCK" send-keys -t t "$@"; }

@test "ss PROJECT -- CMD: stdout, stderr and exit status kept apart and passed through" {
  run --separate-stderr ss proj -- sh -c 'echo out; echo err >&2; exit 7'
  assert_equal "$status" 7
  assert_equal "$output" "out"
  assert_equal "$stderr" "err"
  run ss proj -- pwd
  assert_output "/home/sandbox/projects/proj"
  run bash -c 'printf "line1\nline2\n" | ss proj -- wc -l'
  assert_output "2"
  run bash -c 'ss proj -- seq 1 100000 | tail -1'
  assert_output "100000"
}

@test "exit statuses 0..255 round-trip" {
  for n in $(seq 0 255); do
    run -"$n" ss proj -- sh -c "exit $n"
    [ "$status" -eq "$n" ] || { echo "sent $n, got $status"; false; }
  done
}

@test "1,000 random argv lists through ss exec, byte for byte" {
  run python3 "$BATS_TEST_DIRNAME/argv_fuzz.py" 1000 4242 \
    ss exec proj -- /home/sandbox/projects/proj/printargs ::
  assert_success
  assert_output "1000 argv lists exact"
}

@test "1,000 random prompts through ss claude-run, byte for byte" {
  ss config set agent.command /home/sandbox/projects/proj/printargs >/dev/null
  # claude-run takes one prompt: each random argv list is sent as prompts one by one.
  run python3 - "$BATS_TEST_DIRNAME/argv_fuzz.py" <<'EOF'
import random, subprocess, sys
sys.path.insert(0, __import__("os").path.dirname(sys.argv[1]))
import argv_fuzz
rng = random.Random(777)
for i in range(1000):
    prompt = argv_fuzz.word(rng) + b"\n" + argv_fuzz.word(rng)
    out = subprocess.run([b"ss", b"claude-run", b"proj", prompt], stdout=subprocess.PIPE)
    if out.returncode != 0 or out.stdout.split(b"\0")[:-1] != [b"-p", prompt]:
        print(f"case {i}: {prompt!r} -> {out.stdout!r} ({out.returncode})")
        sys.exit(1)
print("1000 prompts exact")
EOF
  ss config set agent.command 'claude --dangerously-skip-permissions' >/dev/null
  assert_success
  assert_output "1000 prompts exact"
}

@test "the agent starts in the project with the spec's banner; ss claude gets the browser bridge too" {
  ss config set agent.command 'bash --norc -i' >/dev/null
  tmux_run "ss proj; echo rc=\$?; sleep 60"
  wait_screen 'Super-Sandbox · proj'
  wait_screen 'First time\? Run: /login'
  keys 'pwd' Enter
  wait_screen '^/home/sandbox/projects/proj$'
  keys 'exit 3' Enter
  wait_screen '^rc=3$'
  # ss claude: the agent in the project, with the browser bridge as ss PROJECT has it (no browser
  # on this host: the spec's box says so, once a day, and the session goes on).
  rm -f "$SS_HOME/.ss/browser-unavailable-shown"
  tmux_run "ss claude proj; echo rc=\$?; sleep 60"
  wait_screen 'Browser Integration Unavailable'
  keys 'pwd' Enter
  wait_screen '^/home/sandbox/projects/proj$'
  keys 'exit 4' Enter
  wait_screen '^rc=4$'
  # The next session the same day says it in one line.
  tmux_run "ss claude proj; echo rc=\$?; sleep 60"
  wait_screen '^Browser: Not available \(ss status says why\)$'
  keys 'exit 6' Enter
  wait_screen '^rc=6$'
  run screen
  refute_output --partial 'Browser Integration Unavailable'
  ss config set agent.command 'claude --dangerously-skip-permissions' >/dev/null
  run ss config get agent.command
  assert_output 'claude --dangerously-skip-permissions'
}

@test "-t: a shell in the project; resize, Ctrl-C, and the terminal restored" {
  tmux_run "stty -g > '$E2E_ROOT/before'; ss proj -t; echo rc=\$? > '$E2E_ROOT/rc'; stty -g > '$E2E_ROOT/after'; sleep 60"
  wait_screen 'sandbox@.*:~/projects/proj\$'
  keys 'stty size' Enter
  wait_screen '^30 100$'
  tmux -S "$TMUX_SOCK" resize-window -t t -x 80 -y 24
  keys 'clear; stty size' Enter
  wait_screen '^24 80$'
  keys 'sleep 100; echo slept' Enter
  # Ctrl-C once the sleep runs (typed ahead, it would reach the shell instead).
  for _ in $(seq 100); do ss exec -- pgrep -xf 'sleep 100' >/dev/null && break; sleep 0.1; done
  keys C-c
  keys 'echo after-$((40+2))' Enter
  wait_screen '^after-42$'
  screen | grep -q '^slept$' && { echo "sleep was not interrupted"; false; }
  keys 'exit 5' Enter
  for _ in $(seq 50); do [ -s "$E2E_ROOT/after" ] && break; sleep 0.1; done
  assert_equal "$(cat "$E2E_ROOT/rc")" "rc=5"
  assert_equal "$(cat "$E2E_ROOT/after")" "$(cat "$E2E_ROOT/before")"
}

@test "the sandbox going away mid-session: exit 255, the words, a sane terminal" {
  rm -f "$E2E_ROOT/after" "$E2E_ROOT/rc" "$E2E_ROOT/err"
  tmux_run "stty -g > '$E2E_ROOT/before'; ss proj -t 2> '$E2E_ROOT/err'; echo rc=\$? > '$E2E_ROOT/rc'; stty -g > '$E2E_ROOT/after'; sleep 60"
  wait_screen 'sandbox@.*:~/projects/proj\$'
  if [ "$SS_E2E_BACKEND" = lxd ]; then lxc stop --force "$SANDBOX"; else kill_machine "$SANDBOX"; fi
  for _ in $(seq 300); do [ -s "$E2E_ROOT/after" ] && break; sleep 0.1; done
  assert_equal "$(cat "$E2E_ROOT/rc")" "rc=255"
  assert_equal "$(tail -1 "$E2E_ROOT/err")" "ss: connection to sandbox '$SANDBOX' lost"
  assert_equal "$(cat "$E2E_ROOT/after")" "$(cat "$E2E_ROOT/before")"
  # The next command starts it again (the spec's auto-start).
  run --separate-stderr ss proj -- echo back
  assert_success
  assert_output "back"
  [[ "$stderr" == "Starting VM..."* ]]
}

@test "secrets reach the session and appear in no argv and on no disk" {
  export SS_E2E_SECRET="s3cr3t-$RANDOM-value"
  # The session lives until the test has looked at every process.
  ss exec -- rm -f /dev/shm/seen /dev/shm/looked
  ss proj --env SS_E2E_SECRET -- sh -c 'echo "$SS_E2E_SECRET" > /dev/shm/seen
    while [ ! -e /dev/shm/looked ]; do sleep 0.1; done' &
  pid=$!
  for _ in $(seq 300); do ss exec -- test -s /dev/shm/seen && break; sleep 0.1; done
  ! ps auxww | grep -F -- "$SS_E2E_SECRET" | grep -v grep
  run ss exec -- ps auxww
  assert_success
  refute_output --partial "$SS_E2E_SECRET"
  ss exec -- touch /dev/shm/looked
  wait "$pid"
  run ss exec -- cat /dev/shm/seen
  assert_output "$SS_E2E_SECRET"
  # The value goes to grep on its stdin: a search for it on grep's command line would itself
  # be logged by sudo.
  run bash -c 'printf "%s\n" "$SS_E2E_SECRET" | ss exec -- sudo grep -rlsF -f - /home /root /etc /var /tmp'
  assert_output ""
  # From config: secrets: [NAME]; a missing variable is a warning, not a failure.
  ss config set secrets SS_E2E_SECRET,SS_E2E_MISSING >/dev/null
  run --separate-stderr ss proj -- sh -c 'printf "%s|%s" "$SS_E2E_SECRET" "${SS_E2E_MISSING-unset}"'
  assert_success
  assert_output "$SS_E2E_SECRET|unset"
  assert_equal "$stderr" "ss: warning: \$SS_E2E_MISSING is not set on the host; the session starts without it"
  ss config set secrets '' >/dev/null
  # From where users keep them: a command's output, a file; read on the host at each session.
  printf '%s\n' "$SS_E2E_SECRET-in-a-file" >"$E2E_ROOT/secret-file"
  grep -v '^secrets:' "$SS_HOME/config.yaml" >"$E2E_ROOT/config.saved"
  cp "$E2E_ROOT/config.saved" "$SS_HOME/config.yaml"
  printf '%s\n' "secrets:" \
    "  FROM_CMD: {from: {command: [printf, '%s', $SS_E2E_SECRET-from-a-command]}}" \
    "  FROM_FILE: {from: {file: $E2E_ROOT/secret-file}}" >>"$SS_HOME/config.yaml"
  run --separate-stderr ss proj -- sh -c 'printf "%s|%s" "$FROM_CMD" "$FROM_FILE"'
  assert_success
  assert_output "$SS_E2E_SECRET-from-a-command|$SS_E2E_SECRET-in-a-file"
  run ss exec -- ps auxww
  refute_output --partial "$SS_E2E_SECRET"
  # A source that fails: exit 78, naming the secret and its source, before anything starts.
  cp "$E2E_ROOT/config.saved" "$SS_HOME/config.yaml"
  printf '%s\n' "secrets:" "  FAILING: {from: {command: [false]}}" >>"$SS_HOME/config.yaml"
  run --separate-stderr ss proj -- true
  cp "$E2E_ROOT/config.saved" "$SS_HOME/config.yaml"
  assert_equal "$status" 78
  assert_equal "${stderr_lines[0]}" "ss: error: the secret FAILING could not be read: the command 'false' exited with status 1"
}

@test "a host key that does not match the pinned one is refused: exit 77, never connected" {
  pkill -f -- "--share-master $SANDBOX" || true
  dir="$SS_HOME/.ss/sandboxes/$SANDBOX"
  cp "$dir/host_ed25519.pub" "$BATS_TEST_TMPDIR/real.pub"
  ssh-keygen -q -t ed25519 -N '' -f "$BATS_TEST_TMPDIR/other" -C other
  cp "$BATS_TEST_TMPDIR/other.pub" "$dir/host_ed25519.pub"
  run --separate-stderr ss proj -- echo connected
  cp "$BATS_TEST_TMPDIR/real.pub" "$dir/host_ed25519.pub"
  assert_equal "$status" 77
  assert_equal "$output" ""
  [[ "${stderr_lines[0]}" == "ss: error: the host key of sandbox '$SANDBOX' has changed: not connecting" ]] || { echo "$stderr"; false; }
  run ss proj -- echo connected
  assert_output "connected"
}

@test "ssh-config: plain ssh, scp and rsync work with the pinned key" {
  ss ssh-config > "$E2E_ROOT/ssh_config"
  run grep -E '^(Host ss-|  StrictHostKeyChecking yes|  PasswordAuthentication no)' "$E2E_ROOT/ssh_config"
  assert_equal "${#lines[@]}" 3
  run ssh -F "$E2E_ROOT/ssh_config" -o BatchMode=yes "ss-$SANDBOX" echo via-openssh
  assert_output "via-openssh"
  echo payload > "$E2E_ROOT/file.txt"
  run scp -q -F "$E2E_ROOT/ssh_config" "$E2E_ROOT/file.txt" "ss-$SANDBOX:/tmp/file.txt"
  assert_success
  run rsync -a -e "ssh -F $E2E_ROOT/ssh_config" "ss-$SANDBOX:/tmp/file.txt" "$E2E_ROOT/back.txt"
  assert_success
  assert_equal "$(cat "$E2E_ROOT/back.txt")" "payload"
}

@test "shell, root, docker and logs" {
  tmux_run "ss shell"
  wait_screen 'sandbox@.*:~\$'
  keys 'id -un' Enter
  wait_screen '^sandbox$'
  tmux -S "$TMUX_SOCK" kill-server
  tmux_run "ss root"
  wait_screen 'root@.*#'
  # (The stand-ins for Lima and Lume boot no init system, so the image's dockerd is not running
  # there.)
  if [ "$SS_E2E_BACKEND" != lima ] && [ "$SS_E2E_BACKEND" != lume ]; then
    run ss docker info --format '{{.ServerVersion}}'
    assert_success
    assert_output --regexp '^[0-9]+\.'
    run ss docker run --rm --name ss-e2e-no-such-image-please 'no-such-image:x' true
    assert_failure
    run ss logs
    assert_success
  fi
  run --separate-stderr ss root -- id -u
  assert_success
  assert_output "0"
  run --separate-stderr ss shell -- sh -c 'cd && pwd'
  assert_output "/home/sandbox"
  run --separate-stderr ss login -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: ss login takes no command after '--'
hint: to run a command: ss exec [PROJECT] -- CMD"
}

@test "usage and not-found errors" {
  run --separate-stderr ss nope-project
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "Error: Project 'nope-project' not found"
  run --separate-stderr ss exec proj
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: usage: ss exec [PROJECT] -- CMD [ARGS...]
hint: see 'ss exec --help'"
  run --separate-stderr ss exec --help
  assert_success
  assert_line --partial "       ss exec [PROJECT] -- CMD [ARGS...]"
  run --separate-stderr ss claude-run
  assert_equal "$status" 64
}

@test "new --github: gh runs in the running sandbox, where it is logged in, not on the host" {
  # The sandbox's gh: records its argv and working directory, and answers as a logged-in gh.
  ss root -- sh -c 'cat > /usr/local/bin/gh && chmod 755 /usr/local/bin/gh' <<'STUB'
#!/bin/sh
{ printf '%s ' "$@"; echo; pwd; } >> /tmp/gh.log
case "$1 $2" in
  "repo create") git remote add origin https://github.com/octo/gh-proj.git ;;
  "repo view") echo '{"nameWithOwner":"octo/gh-proj","url":"https://github.com/octo/gh-proj"}' ;;
esac
STUB
  # The host's gh must not be used.
  mkdir -p "$E2E_ROOT/bin"
  printf '#!/bin/sh\necho host gh ran >&2\nexit 99\n' > "$E2E_ROOT/bin/gh"
  chmod 755 "$E2E_ROOT/bin/gh"
  PATH="$E2E_ROOT/bin:$PATH" run --separate-stderr ss new gh-proj --github
  ss root -- rm -f /usr/local/bin/gh
  assert_success
  assert_equal "$output" "Created: ~/super-sandbox/projects/gh-proj
GitHub: https://github.com/octo/gh-proj

Ready for Claude Code Web or local sandbox."
  run ss root -- cat /tmp/gh.log
  assert_line --index 2 "repo create gh-proj --source=. --remote=origin --public --push "
  assert_line --index 3 "/home/sandbox/projects/gh-proj"
  run jq -r .githubRepo "$SS_HOME/projects/gh-proj/.ss/metadata.json"
  assert_output "octo/gh-proj"
  # The remote gh gave the sandbox's repository, the host's has too.
  assert_equal "$stderr" ""
  run as_owner git -C "$SS_HOME/projects/gh-proj" remote get-url origin
  assert_output "https://github.com/octo/gh-proj.git"
}

@test "a machine this install did not create: status says so, start refuses and leaves it be" {
  other="$E2E_ROOT/other-install"
  mkdir -p "$other"
  SS_HOME="$other" ss config set backend "$SS_E2E_BACKEND" >/dev/null
  SS_HOME="$other" run --separate-stderr ss vm status --sandbox "$SANDBOX"
  assert_success
  assert_line --index 0 "VM:        broken (a machine called '$SANDBOX' exists in $SS_E2E_BACKEND that this install did not create)"
  SS_HOME="$other" run --separate-stderr ss vm status --sandbox "$SANDBOX" --json
  assert_equal "$(jq -r .state_detail <<< "$output")" "a machine called '$SANDBOX' exists in $SS_E2E_BACKEND that this install did not create"
  SS_HOME="$other" run --separate-stderr ss vm start --sandbox "$SANDBOX"
  assert_equal "$status" 73
  assert_equal "${stderr_lines[1]}" "ss-vm: error: a machine called '$SANDBOX' exists in $SS_E2E_BACKEND but this install has no record of it"
  case $SS_E2E_BACKEND in
    lxd) delete="lxc delete --force $SANDBOX" ;;
    docker | podman) delete="$SS_E2E_BACKEND rm --force $SANDBOX" ;;
    lima) delete="limactl delete --force $SANDBOX" ;;
    lume) delete="lume delete $SANDBOX" ;;
    *) delete="$SS_E2E_BACKEND's own tools" ;;
  esac
  assert_equal "${stderr_lines[-1]}" "hint: delete it with $delete"
  run ss proj -- true
  assert_success
}

@test "stopping the sandbox ends its shared connection at once" {
  run ss proj -- true
  assert_success
  for _ in $(seq 50); do pgrep -f -- "--share-master $SANDBOX" >/dev/null && break; sleep 0.1; done
  pgrep -f -- "--share-master $SANDBOX"
  SS_SANDBOX="$SANDBOX" ss vm stop >/dev/null
  for _ in $(seq 50); do pgrep -f -- "--share-master $SANDBOX" >/dev/null || break; sleep 0.1; done
  run pgrep -f -- "--share-master $SANDBOX"
  assert_failure
  SS_SANDBOX="$SANDBOX" ss vm start >/dev/null 2>&1
  run ss proj -- echo back
  assert_output back
}
