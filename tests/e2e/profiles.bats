#!/usr/bin/env bats
# Profiles, the session flags over them, any folder with `ss .` (in copy mode too), `ss clean
# --profile` and the agent's configuration folder, against real Docker sandboxes (made and
# removed in seconds).

load helpers

setup_file() {
  e2e_home
  ss vm setup --backend docker --json > "$BATS_FILE_TMPDIR/setup.json"
  ss vm image build >&3 2>&1
  ss config set backend docker >/dev/null
  ss new proj >/dev/null
  as_owner touch "$SS_HOME/projects/proj/marker-of-the-projects"
}

teardown_file() {
  e2e_env
  local name
  for name in $(ss vm list | cut -f1); do
    pkill -f -- "--share-master $name" || true
    ss vm delete --sandbox "$name" --yes --force >/dev/null 2>&1 || true
  done
  # The Docker daemon this file's setup started, it stops: left running, its forward policy
  # (drop) cuts the other tests' LXD containers off the archive.
  if jq -e '.started | length > 0' "$BATS_FILE_TMPDIR/setup.json" >/dev/null 2>&1; then
    ss vm setup --backend docker --stop >&3 2>&1 || true
  fi
  e2e_home_remove
}

setup() {
  e2e_env
}

# No sandbox of the file is left in Docker or in ss's records once removed.
gone() {
  ! ss vm list | cut -f1 | grep -qx -- "$1"
  ! docker ps -a --format '{{.Names}}' | grep -qx -- "$1"
}

@test "an ephemeral profile: its read-only mount, env and secret from a command; removed after" {
  mkdir -p "$E2E_ROOT/data"
  echo "host data" > "$E2E_ROOT/data/file"
  cat >> "$SS_HOME/config.yaml" <<EOF
profiles:
  untrusted:
    description: plugins I do not trust
    ephemeral: true
    mounts: ["$E2E_ROOT/data:/data:ro"]
    env: [NODE_ENV=development]
    secrets:
      OP_TOKEN: {from: {command: [printf, '%s', op-s3cret]}}
EOF
  run ss profiles
  assert_success
  assert_line --regexp '^untrusted +docker +yes +- +plugins I do not trust$'
  run --separate-stderr ss proj --profile untrusted -- sh -c '
    cat /data/file; pwd
    touch /data/by-user 2>/dev/null && echo user-wrote
    sudo -n touch /data/by-root 2>/dev/null && echo root-wrote
    # Root inside remounting it read-write gains nothing: the read-only part is outside.
    sudo -n mount -o remount,rw,bind /data 2>/dev/null
    sudo -n mount -o remount,rw /data 2>/dev/null
    sudo -n touch /data/by-root-remount 2>/dev/null && echo root-remount-wrote
    touch /data/by-user-remount 2>/dev/null && echo user-remount-wrote
    printf "%s|%s\n" "$NODE_ENV" "$OP_TOKEN"
    ls ~/projects/proj/marker-of-the-projects'
  assert_success
  assert_output "host data
/home/sandbox/projects/proj
development|op-s3cret
/home/sandbox/projects/proj/marker-of-the-projects"
  [[ "$stderr" == *"Removing ephemeral sandbox 'untrusted'..."* ]]
  assert_file_not_exists "$E2E_ROOT/data/by-user"
  assert_file_not_exists "$E2E_ROOT/data/by-root"
  assert_equal "$(ls -A "$E2E_ROOT/data")" "file"
  gone untrusted
  # The read-only folder's volume went with the sandbox.
  assert_equal "$(docker volume ls --quiet --filter label=ss.sandbox.name=untrusted)" ""
  # The flags over the profile: one secret left out, a value added, the sandbox kept.
  run --separate-stderr ss proj --profile untrusted --no-secret OP_TOKEN --env EXTRA=1 --keep -- \
    sh -c 'printf "[%s][%s]\n" "$OP_TOKEN" "$EXTRA"'
  assert_success
  assert_output "[][1]"
  run ss vm list
  assert_line --regexp '^untrusted	docker	running$'
  # A session asking for other folders than the kept sandbox shares is refused, nothing changed.
  run --separate-stderr ss shell --profile untrusted --no-mount -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: sandbox 'untrusted' was made sharing the projects folder, $E2E_ROOT/data at /data (read-only); this session asks for no host folder"
  run ss clean --profile untrusted --yes
  assert_success
  assert_output "Deleted: untrusted"
  gone untrusted
}

@test "--no-mount: no host folder is visible in the sandbox" {
  local name="nomount-$$"
  run --separate-stderr ss shell --sandbox "$name" --ephemeral --no-mount -- sh -c '
    pwd; ls -A ~/projects; ls -d /workspace 2>/dev/null
    awk "\$2 ~ \"^/(home|workspace|mnt|data|srv|opt|media)\" {print \$2}" /proc/mounts
    find / -xdev -name marker-of-the-projects 2>/dev/null
    exit 0'
  assert_success
  assert_output "/home/sandbox"
  gone "$name"
}

@test "ss . on a folder outside ~/super-sandbox: shared at /workspace/NAME, alone, remembered" {
  local dir="$E2E_ROOT/elsewhere/My Repo"
  mkdir -p "$dir"
  chown "$(stat -c %u:%g "$SS_HOME/projects")" "$dir"
  as_owner sh -c 'echo "from the host" > "$1/README"' sh "$dir"
  cd "$dir"
  run --separate-stderr ss . -- sh -c 'pwd; cat README; echo made > made.txt; mkdir -p sub/dir
    ls -A ~/projects; ls /workspace'
  assert_success
  assert_output "/workspace/my-repo
from the host
my-repo"
  sandbox=$(jq -r --arg p "$dir" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")
  [[ "$sandbox" =~ ^my-repo-[0-9a-f]{4}$ ]]
  # What the sandbox made is the folder owner's on the host.
  assert_equal "$(stat -c %u:%g "$dir/made.txt" "$dir/sub/dir" | sort -u)" "$(stat -c %u:%g "$SS_HOME/projects")"
  # The next `ss .` there goes to the same sandbox; from a path spelled otherwise too.
  cd "$E2E_ROOT/elsewhere"
  run --separate-stderr ss "./My Repo" -- cat made.txt
  assert_success
  assert_output "made"
  assert_equal "$(jq '.folders | length' "$SS_HOME/.ss/folders.json")" 1
  assert_equal "$(ss vm list | cut -f1 | grep -c '^my-repo-')" 1
  ss vm delete --sandbox "$sandbox" --yes >/dev/null 2>&1
  gone "$sandbox"
  assert_file_exists "$dir/made.txt"
}

@test "ss . --copy: the folder shared with nothing, the agent in a copy; diff, apply and sync carry changes; nothing unapplied is lost" {
  local dir="$E2E_ROOT/copied"
  mkdir -p "$dir/src"
  chown -R "$(stat -c %u:%g "$SS_HOME/projects")" "$dir"
  as_owner sh -c 'echo one > "$1/kept"; echo two > "$1/src/edit.txt"; echo three > "$1/gone"' sh "$dir"
  cd "$dir"
  # The folder is mounted nowhere in the sandbox: ss sends it. The source it sent is read-only
  # to the agent; what root does to it stays in the sandbox.
  run --separate-stderr ss . --copy -- sh -c 'pwd; echo changed >> src/edit.txt; echo new > new.txt; rm gone
    s=~/project-src/copied
    cat "$s/kept"
    touch "$s/by-user" 2>/dev/null && echo user-wrote
    sudo -n touch "$s/by-root" 2>/dev/null && echo root-wrote
    findmnt -rn -o TARGET | grep -c copied || true'
  assert_success
  assert_output "/workspace/copied
one
root-wrote
0"
  assert_equal "$(ls -A "$dir" | tr '\n' ' ')" "gone kept src "
  assert_equal "$(cat "$dir/src/edit.txt")" "two"
  sandbox=$(jq -r --arg p "$dir" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")
  jq -e --arg p "$dir" '.folders[$p].mode == "copy"' "$SS_HOME/.ss/folders.json"
  # The copy's changes, from inside the folder; the user's own change meanwhile stays theirs.
  run --separate-stderr ss diff --stat
  assert_success
  assert_line --partial "src/edit.txt"
  assert_line --partial "new.txt"
  assert_line --partial "gone"
  as_owner sh -c 'echo mine > "$1/kept"' sh "$dir"
  run --separate-stderr ss apply "$dir" --yes
  assert_success
  assert_equal "$(cat "$dir/src/edit.txt")" $'two\nchanged'
  assert_equal "$(cat "$dir/new.txt")" "new"
  assert_file_not_exists "$dir/gone"
  assert_equal "$(cat "$dir/kept")" "mine"
  assert_equal "$(stat -c %u:%g "$dir/new.txt")" "$(stat -c %u:%g "$SS_HOME/projects")"
  run --separate-stderr ss sync .
  assert_success
  run --separate-stderr ss . -- cat kept
  assert_output "mine"
  # The mode is the sandbox's: switching while it exists is refused, saying how.
  run --separate-stderr ss . --no-copy -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: the folder $dir is open in copy mode in sandbox '$sandbox'"
  # Deleting its sandbox says the folder is not touched.
  run script -qec "ss vm delete --sandbox $sandbox" /dev/null <<< "n"
  assert_output --partial "The folder $dir is NOT affected."
  assert_output --partial "Cancelled."
  # Work not applied keeps the sandbox; --force saves it on the host first.
  ss . -- sh -c 'echo more > more.txt'
  run --separate-stderr ss vm delete --sandbox "$sandbox" --yes
  assert_equal "$status" 1
  assert_equal "${stderr_lines[0]}" "ss-vm: error: delete would lose changes not yet applied in 1 working copy of sandbox '$sandbox'"
  assert_equal "${stderr_lines[2]}" "hint: bring them to the host: ss apply $dir"
  run --separate-stderr ss vm delete --sandbox "$sandbox" --yes --force
  assert_success
  assert_line --partial "Saved the working copy of 'copied' first: "
  gone "$sandbox"
  archive=$(ls "$SS_HOME"/rescued/"$sandbox"-*/copied.tar.gz)
  assert_equal "$(tar -xzOf "$archive" copied/more.txt)" "more"
  assert_file_not_exists "$dir/more.txt"
  # With its sandbox gone the folder opens read-write again.
  run --separate-stderr ss . --no-copy -- sh -c 'echo rw > rw.txt'
  assert_success
  assert_equal "$(cat "$dir/rw.txt")" "rw"
  ss vm delete --sandbox "$sandbox" --yes >/dev/null 2>&1
  gone "$sandbox"
}

@test "ss . in a git repository: the agent in a copy, the repository out of its reach; its commits come back when the session ends" {
  local dir="$E2E_ROOT/a-repo" marker="$E2E_ROOT/a-repo-marker"
  mkdir -p "$dir"
  chown "$(stat -c %u:%g "$SS_HOME/projects")" "$dir"
  as_owner sh -c 'cd "$1" && git init -q -b main && echo hello > README &&
    git add README && git -c user.name=U -c user.email=u@example.test commit -qm first' sh "$dir"
  start=$(git -C "$dir" rev-parse HEAD)
  cd "$dir"
  # A commit, then, as the issue's attacker, a setting and a hook that would run on the host.
  run --separate-stderr ss . -- sh -c "
    echo agent > agent.txt && git add agent.txt &&
      git -c user.name=Agent -c user.email=a@example.test commit -qm 'by the agent'
    echo wip > wip.txt
    git config core.fsmonitor 'touch $marker; false'
    printf '#!/bin/sh\ntouch $marker\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
    sudo -n sh -c 'findmnt -rn -o TARGET,SOURCE | grep -cF $dir' || true"
  assert_success
  assert_output "0"
  assert_equal "${stderr_lines[0]}" "$dir is a git repository: the agent works in a copy of it, the folder shared with nothing."
  assert_equal "${stderr_lines[1]}" "Its commits come back when a session ends; other changes with ss diff and ss apply."
  assert_equal "${stderr_lines[2]}" "To share it read-write instead: ss run $dir --no-copy"
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 1 commit (${start:0:7}.."* ]]
  # What it did not commit stays in the copy, and the session says so.
  assert_equal "${stderr_lines[-1]}" "Not committed in the working copy: 1 file; see them: ss diff $dir, bring them: ss apply $dir"
  assert_file_not_exists "$dir/wip.txt"
  jq -e --arg p "$dir" '.folders[$p].mode == "copy"' "$SS_HOME/.ss/folders.json"
  # The commit and its file are the host's; nothing of the sandbox's git settings came.
  assert_equal "$(git -C "$dir" log -1 --format=%s)" "by the agent"
  assert_equal "$(cat "$dir/agent.txt")" "agent"
  assert_equal "$(stat -c %u:%g "$dir/agent.txt")" "$(stat -c %u:%g "$SS_HOME/projects")"
  run as_owner git -C "$dir" config core.fsmonitor
  assert_failure 1
  as_owner git -C "$dir" status --porcelain >/dev/null
  as_owner sh -c 'cd "$1" && echo more >> README && git -c user.name=U -c user.email=u@example.test commit -qam more' sh "$dir"
  assert_file_not_exists "$marker"
  sandbox=$(jq -r --arg p "$dir" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")
  ss vm delete --sandbox "$sandbox" --yes --force >/dev/null 2>&1
  gone "$sandbox"
}

@test "agent.config is copied into ~/.claude when the sandbox is made and by ss vm provision, never mounted" {
  local name="agentcfg-$$" cfg="$E2E_ROOT/repo/sandbox/claude"
  mkdir -p "$cfg/commands"
  echo "# rules from the repository" > "$cfg/CLAUDE.md"
  echo '{"model": "opus"}' > "$cfg/settings.json"
  echo "review the diff" > "$cfg/commands/review.md"
  ss config set "sandboxes.$name.agent.config" "$cfg" >/dev/null
  run --separate-stderr ss vm start --sandbox "$name"
  assert_success
  [[ "$stderr" == *"copied $cfg into ~/.claude"* ]]
  run ss exec --sandbox "$name" -- sh -c 'cat ~/.claude/CLAUDE.md ~/.claude/settings.json ~/.claude/commands/review.md; stat -c %U ~/.claude/CLAUDE.md'
  assert_output '# rules from the repository
{"model": "opus"}
review the diff
sandbox'
  run ss exec --sandbox "$name" -- mountpoint -q /home/sandbox/.claude
  assert_failure
  # The agent's writes stay in the sandbox.
  ss exec --sandbox "$name" -- sh -c 'echo changed-inside > ~/.claude/CLAUDE.md'
  assert_equal "$(cat "$cfg/CLAUDE.md")" "# rules from the repository"
  echo "# rules, revised" > "$cfg/CLAUDE.md"
  run ss vm provision --sandbox "$name"
  assert_success
  assert_output "Copied $cfg into ~/.claude of '$name'."
  run ss exec --sandbox "$name" -- cat /home/sandbox/.claude/CLAUDE.md
  assert_output "# rules, revised"
  ss vm delete --sandbox "$name" --yes >/dev/null 2>&1
}
