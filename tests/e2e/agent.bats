#!/usr/bin/env bats
# The real agent, end to end, on the backend in $SS_E2E_BACKEND: Claude Code, as the image
# installs it, runs in a sandbox against a stand-in of its API in the stand-in internet
# (messages_api.py: one tool call that writes a file in the project and commits it, then a
# final message). The API key is injected by ss-net: the stand-in sees the real one, the sandbox
# only a placeholder. The project is in working-copy mode: the agent's commit reaches the host as
# objects and refs, fetched when the session ends, never by running anything of the sandbox's.
# A shared project too: its repository stays on the host, the sandbox commits in one of its own.

load helpers

setup_file() {
  e2e_sandbox_file ag
  ss new ag-app --copy >/dev/null   # a repository with its first commit
  FI_443=messages fake_internet_up api.anthropic.com
  echo "sk-ant-standin-$$-$RANDOM$RANDOM" >"$BATS_FILE_TMPDIR/secret"
  printf 'secrets:\n  ANTHROPIC_API_KEY: {inject: [api.anthropic.com]}\n' >>"$SS_HOME/config.yaml"
  ag_env
  ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND" >&3 2>&1
}

# What ss-net is started with: the stand-in resolver, trust in the test CA, the key.
ag_env() {
  fake_internet_env
  export SSL_CERT_FILE="$FI_DIR/ca.pem"
  ANTHROPIC_API_KEY=$(cat "$BATS_FILE_TMPDIR/secret")
  export ANTHROPIC_API_KEY
}

teardown_file() {
  e2e_env
  ag_env
  e2e_sandbox_remove
  fake_internet_down
}

setup() {
  e2e_sandbox_env
  ag_env
  P="$SS_HOME/copy-projects/ag-app"
}

@test "claude commits in the sandbox; the commit and its file reach the host at the session's end" {
  printf '%s\n' "printf 'written by the agent\n' > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=agent@example.test commit -q -m 'agent: add agent.txt'" \
    >"$FI_DIR/messages.command"
  start=$(git -C "$P" rev-parse HEAD)
  run --separate-stderr ss claude-run ag-app 'add agent.txt and commit it'
  assert_success
  assert_output "Done."
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 1 commit (${start:0:7}.."* ]]
  # The stand-in was asked with the real key, every time; it answered the tool call's result.
  jq -e -s --arg k "$ANTHROPIC_API_KEY" '
    [.[] | select(.path | startswith("/v1/messages"))] | length >= 2
    and all(.headers | map(select(.[0] | ascii_downcase == "x-api-key") | .[1]) == [$k])' \
    "$FI_DIR/requests"
  # (Claude Code may send the result in a message with others after it.)
  jq -e -s '[.[] | select(.path | startswith("/v1/messages")) | select(.tool_result)] | length >= 1' \
    "$FI_DIR/requests"
  # The host's branch moved to the agent's commit, the file is there, the user's.
  assert_equal "$(git -C "$P" log -1 --format=%s)" "agent: add agent.txt"
  assert_equal "$(git -C "$P" rev-parse HEAD~1)" "$start"
  assert_equal "$(cat "$P/agent.txt")" "written by the agent"
  assert_equal "$(stat -c %U "$P/agent.txt")" "$(id -un)"
  assert_equal "$(git -C "$P" status --porcelain)" ""
  # The sandbox holds the placeholder only.
  run ss exec ag-app -- printenv ANTHROPIC_API_KEY
  assert_success
  [[ "$output" == ss-placeholder-* ]]
}

@test "claude commits in a shared project: the commit reaches the host's repository, which the sandbox never had" {
  ss new ag-shared >/dev/null
  S="$SS_HOME/projects/ag-shared"
  printf '%s\n' "printf 'shared by the agent\n' > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=agent@example.test commit -q -m 'agent: add agent.txt'" \
    >"$FI_DIR/messages.command"
  start=$(git -C "$S" rev-parse HEAD)
  run --separate-stderr ss claude-run ag-shared 'add agent.txt and commit it'
  assert_success
  assert_output "Done."
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 1 commit (${start:0:7}.."* ]] || { echo "$stderr"; false; }
  # The host's branch and index moved to the agent's commit; its repository stayed on the host.
  assert_equal "$(git -C "$S" log -1 --format=%s)" "agent: add agent.txt"
  assert_equal "$(git -C "$S" rev-parse HEAD~1)" "$start"
  assert_equal "$(git -C "$S" status --porcelain)" ""
  assert_equal "$(cat "$S/.git")" "gitdir: ../../repositories/ag-shared"
  run ss exec ag-shared -- git log -1 --format=%s
  assert_output "agent: add agent.txt"
}
