#!/usr/bin/env bats
# Snapshots, working copies, sync, diff/apply, push/pull and the health check, end to end, on
# the backend in $SS_E2E_BACKEND. One sandbox for the whole file (created once: the slow part),
# one project in working-copy mode. CTest runs this file once per backend this machine can run.

load helpers

setup_file() {
  e2e_sandbox_file sn
  # A browser on the host for the bridge check: Chrome DevTools on a free loopback port.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "$port" > "$BATS_FILE_TMPDIR/cdp_port"
  ss config set browser.cdp_port "$port" >/dev/null
  # Its own process group (killed whole), and none of bats' descriptors: a renderer outliving the
  # browser would otherwise hold bats' output open.
  setsid chromium --headless=new --no-sandbox --disable-gpu --remote-debugging-port="$port" \
    --user-data-dir="$E2E_ROOT/chrome" about:blank >"$E2E_ROOT/chrome.log" 2>&1 </dev/null 3>&- &
  echo $! > "$BATS_FILE_TMPDIR/chrome.pid"
  ss new sn-app --copy >/dev/null
  # The agent's API, for the health check's network line: a stand-in (own CA, trusted inside).
  fake_internet_up api.anthropic.com
  ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND" >&3 2>&1
  trust_test_ca "$SANDBOX"
}

teardown_file() {
  if [ -f "$BATS_FILE_TMPDIR/chrome.pid" ]; then kill -- "-$(cat "$BATS_FILE_TMPDIR/chrome.pid")" 2>/dev/null || true; fi
  fake_internet_env
  e2e_sandbox_remove
  fake_internet_down
}

setup() {
  e2e_sandbox_env
  fake_internet_env
  P="$SS_HOME/copy-projects/sn-app"
}

in_sandbox() { sandbox_ssh "$SANDBOX" "$@"; }
chrome_up() {
  port=$(cat "$BATS_FILE_TMPDIR/cdp_port")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/json/version" >/dev/null && return 0; sleep 0.1; done
  return 1
}
# check_line NAME STATUS: the health-check line of NAME has STATUS.
check_status() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' <<< "$2"; }

@test "a new sandbox has its clean-baseline snapshot; snapshots --json lists it" {
  run --separate-stderr ss snapshots --json
  assert_success
  echo "$output" | jq -e --arg s "$SANDBOX" '.kind == "SnapshotList" and .sandbox == $s'
  echo "$output" | jq -e '[.items[].name] | index("clean-baseline") != null'
  echo "$output" | jq -e '.items[0].created | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$")'
}

@test "snapshot, change files, restore: the changes are gone, the sandbox answers, host files untouched" {
  run ss snapshot sn-before
  assert_success
  assert_output "Snapshot taken: sn-before"
  run ss snapshot sn-before
  assert_failure 73
  in_sandbox 'echo junk > ~/junk.txt && sudo touch /etc/junk'
  as_owner sh -c "echo host > '$SS_HOME/projects/e2e-scratch/after-snapshot.txt'"
  run --separate-stderr ss restore sn-before --yes --timeout 300
  assert_success
  assert_line --index 0 "Restored '$SANDBOX' to snapshot 'sn-before'; it is running and answers over SSH."
  assert_line --index 1 "Projects in ~/super-sandbox/projects/ are not affected."
  # Reachable at once, no manual step; the changes made after the snapshot are gone.
  run in_sandbox 'test -e ~/junk.txt || test -e /etc/junk || echo clean'
  assert_output "clean"
  assert_file_exists "$SS_HOME/projects/e2e-scratch/after-snapshot.txt"
  run ss vm status --json
  echo "$output" | jq -e '.state == "running"'
  # A default name from the time, then delete.
  run ss snapshot
  assert_success
  [[ "$output" =~ ^Snapshot\ taken:\ (snap-[0-9]{8}-[0-9]{6})$ ]]
  name=${BASH_REMATCH[1]}
  run ss snapshot delete "$name" --yes
  assert_success
  run ss snapshot delete sn-before --yes
  assert_success
  run ss snapshots --json
  echo "$output" | jq -e '[.items[].name] | index("sn-before") == null'
  run ss restore no-such-snap --yes
  assert_failure 66
}

@test "restore fetches first the commits of the sandbox's own repository of a shared project; nothing the agent committed is lost" {
  ss new sn-shared >/dev/null
  S="$SS_HOME/projects/sn-shared"
  run ss snapshot sn-commits
  assert_success
  # Committed in a command (ss exec fetches nothing at its end), then the sandbox's disk goes back.
  ss exec sn-shared -- sh -c 'echo x > x.txt && git add x.txt && git -c user.name=a -c user.email=a@a commit -qm "agent x"'
  start=$(as_owner git -C "$S" rev-parse HEAD)
  run --separate-stderr ss restore sn-commits --yes --timeout 300
  assert_success
  assert_line "Fetched the commits of 'sn-shared' first: main: fast-forwarded by 1 commit (${start:0:7}..$(as_owner git -C "$S" rev-parse --short=7 HEAD))"
  assert_equal "$(as_owner git -C "$S" log -1 --format=%s)" "agent x"
  # The restored sandbox's repository is made again from the host's branches.
  run --separate-stderr ss exec sn-shared -- git log -1 --format=%s
  assert_output "agent x"
  ss snapshot delete sn-commits --yes >/dev/null
}

@test "working-copy mode: read-only source, writable copy on the sandbox's disk" {
  as_owner sh -c "echo one > '$P/a.txt'"
  run ss exec sn-app -- pwd
  assert_success
  assert_output "/home/sandbox/copy-projects/sn-app"
  run in_sandbox 'cat ~/copy-projects/sn-app/a.txt; touch ~/project-src/sn-app/x 2>&1 || echo read-only'
  assert_line --index 0 "one"
  assert_line "read-only"
  in_sandbox 'echo agent > ~/copy-projects/sn-app/agent.txt'
  # The copy is not the host's folder.
  assert_file_not_exists "$P/agent.txt"
  in_sandbox 'rm ~/copy-projects/sn-app/agent.txt'
}

@test "sync leaves out each exclusion; the sandbox's file is the config's list" {
  ss config set sync.exclude 'node_modules, .git, dist, build, *.log' >/dev/null
  as_owner sh -c "cd '$P' && mkdir -p node_modules/m dist build src/build && echo 1 > node_modules/m/i.js &&
    echo 1 > dist/d.js && echo 1 > build/b.o && echo 1 > src/build/x && echo 1 > debug.log &&
    echo 1 > src/keep.js && mkdir -p .git && echo 1 > .git/not-synced"
  run ss sync sn-app
  assert_success
  run in_sandbox 'cd ~/copy-projects/sn-app && find . -type f | sort'
  assert_line "./src/keep.js"
  refute_line --regexp '^\./(node_modules|dist|build|src/build)/'
  refute_line "./debug.log"
  # The copy's .git is its own repository (fetch), never the host's.
  assert_line "./.git/HEAD"
  refute_line "./.git/not-synced"
  run in_sandbox cat /etc/ss/sync-exclude
  assert_equal "$(grep -v '^#' <<< "$output")" "$(printf 'node_modules\n.git\ndist\nbuild\n*.log')"
  # The sandbox's own rsync with that file (what sync-project runs) agrees with ss sync.
  run in_sandbox 'rsync -a --delete --dry-run --out-format="%n" --exclude-from=/etc/ss/sync-exclude ~/project-src/sn-app/ ~/copy-projects/sn-app/ | grep -v "/\$" || true'
  assert_success
  assert_output ""
  # Excluded files in the copy are never deleted by a sync.
  in_sandbox 'mkdir -p ~/copy-projects/sn-app/node_modules/own && echo 1 > ~/copy-projects/sn-app/node_modules/own/x'
  run ss sync sn-app
  assert_success
  in_sandbox 'test -f ~/copy-projects/sn-app/node_modules/own/x'
  ss config set sync.exclude 'node_modules, .git, dist, build' >/dev/null
}

@test "sync refuses to replace changes made in the copy; --dry-run lists; --force saves them first" {
  as_owner sh -c "echo v1 > '$P/shared.txt'"
  ss sync sn-app
  in_sandbox 'echo agent-edit > ~/copy-projects/sn-app/shared.txt && echo new > ~/copy-projects/sn-app/only-copy.txt'
  as_owner sh -c "echo v2-from-host > '$P/shared.txt'"
  run --separate-stderr ss sync sn-app
  assert_failure 1
  [[ "${stderr_lines[0]}" == "ss-sync: error: sync would delete or overwrite 2 files changed in the working copy of 'sn-app'" ]]
  [[ "$stderr" == *"  only-copy.txt"* && "$stderr" == *"  shared.txt"* ]]
  run in_sandbox 'cat ~/copy-projects/sn-app/shared.txt'
  assert_output "agent-edit"
  run ss sync sn-app --dry-run
  assert_success
  assert_line "would update  shared.txt"
  assert_line "would delete  only-copy.txt"
  run ss sync sn-app --dry-run --json
  echo "$output" | jq -e '.at_risk == ["only-copy.txt", "shared.txt"] or .at_risk == ["shared.txt", "only-copy.txt"]'
  run in_sandbox 'cat ~/copy-projects/sn-app/shared.txt'
  assert_output "agent-edit"
  run ss sync sn-app --force --json
  assert_success
  saved=$(echo "$output" | jq -r .saved_to)
  # On the host, yours alone, with exactly the files replaced.
  [[ "$saved" == "$SS_HOME/rescued/$SANDBOX-"*"/sn-app-sync.tar.gz" ]] || { echo "$output"; false; }
  assert_equal "$(stat -c %a "$saved")" "600"
  assert_equal "$(tar -tzf "$saved" | sort | tr '\n' ' ')" "sn-app/only-copy.txt sn-app/shared.txt "
  assert_equal "$(tar -xzOf "$saved" sn-app/shared.txt)" "agent-edit"
  run in_sandbox 'cat ~/copy-projects/sn-app/shared.txt; test -e ~/copy-projects/sn-app/only-copy.txt || echo gone'
  assert_output "v2-from-host
gone"
  # Nothing changed in the copy since: a plain sync goes through.
  run ss sync sn-app
  assert_success
  assert_output "Synced 'sn-app': already up to date."
}

@test "diff shows the copy's changes; apply copies them back and deletes only what the copy deleted" {
  as_owner sh -c "printf 'a\nb\n' > '$P/edit.txt' && echo gone > '$P/del.txt' && echo stay > '$P/stay.txt'"
  ss sync sn-app
  # The edit keeps the size and lands in the same second as the source's time (only the
  # nanoseconds differ), as an edit made right after a sync does.
  in_sandbox 'cd ~/copy-projects/sn-app && printf "a\nB\n" > edit.txt && rm del.txt && echo fresh > added.txt &&
    touch -d "@$(stat -c %Y ~/project-src/sn-app/edit.txt).123456789" edit.txt'
  run ss diff sn-app
  assert_success
  assert_line -- "--- a/edit.txt"
  assert_line "+++ b/edit.txt"
  assert_line -- "-b"
  assert_line "+B"
  assert_line "+fresh"
  run ss diff sn-app --stat
  assert_line --partial " 3 files changed"
  run ss apply sn-app < /dev/null
  assert_failure 64
  assert_file_exists "$P/del.txt"
  run ss apply sn-app --yes
  assert_success
  assert_line "  M edit.txt"
  assert_line "  D del.txt"
  assert_line "  A added.txt"
  assert_equal "$(cat "$P/edit.txt")" "$(printf 'a\nB')"
  assert_equal "$(cat "$P/added.txt")" "fresh"
  assert_file_not_exists "$P/del.txt"
  assert_file_exists "$P/stay.txt"
  assert_equal "$(stat -c %u "$P/added.txt")" "$(stat -c %u "$P")"
  run ss apply sn-app --yes
  assert_output "Nothing to apply: the working copy of 'sn-app' matches its source."
}

@test "apply is three-way: the user's work stays, both-changed is a conflict; --ours, --theirs, --merge settle it" {
  as_owner sh -c "cd '$P' && printf '1\n2\n3\n' > agent.txt && printf '1\n2\n3\n' > both.txt &&
    printf '1\n2\n3\n' > clash.txt && echo base > ours.txt && echo base > theirs.txt && echo base > user.txt"
  ss sync sn-app
  # The user, on the host, after the sync: a new file, a line added, an edit the agent also made.
  as_owner sh -c "cd '$P' && echo mine > user-new.txt && printf 'base\nmore\n' > user.txt &&
    printf '1\n2\n3\nhost\n' > both.txt && printf '1\nhost\n3\n' > clash.txt &&
    echo host > ours.txt && echo host > theirs.txt"
  in_sandbox 'cd ~/copy-projects/sn-app && printf "agent\n2\n3\n" > agent.txt && printf "agent\n2\n3\n" > both.txt &&
    printf "1\nagent\n3\n" > clash.txt && echo agent > ours.txt && echo agent > theirs.txt'
  run --separate-stderr ss diff sn-app
  assert_success
  assert_line "+agent"
  assert_line "# conflict: both.txt changed on the host and in the sandbox since the last sync"
  [[ "$output" != *"user"* ]] || { echo "$output"; false; }
  assert_equal "$stderr" "Changed only on the host since the last sync (kept; ss sync sn-app brings them to the copy): 2 files."
  run --separate-stderr ss apply sn-app --yes
  assert_failure 1
  assert_line "  M agent.txt"
  assert_line "  C both.txt  (changed on the host too)"
  [[ "$stderr" == *"ss-sync: warning: left 4 conflicts as on the host"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"hint: merge text, with conflict markers where both changed a line: ss apply sn-app --merge"* ]]
  # What only the agent changed arrived; the user's work is all there; conflicts untouched.
  assert_equal "$(cat "$P/agent.txt")" "$(printf 'agent\n2\n3')"
  assert_equal "$(cat "$P/user-new.txt")" "mine"
  assert_equal "$(cat "$P/user.txt")" "$(printf 'base\nmore')"
  assert_equal "$(cat "$P/both.txt")" "$(printf '1\n2\n3\nhost')"
  run ss apply sn-app --ours --theirs
  assert_failure 64
  # One at a time: settle ours.txt for the host by hand-picking the others away first.
  run --separate-stderr ss apply sn-app --merge --yes
  assert_failure 1
  assert_line "Merged both.txt."
  assert_equal "$(cat "$P/both.txt")" "$(printf 'agent\n2\n3\nhost')"
  [[ "$stderr" == *"merged with conflict markers"*"  clash.txt"* ]] || { echo "$stderr"; false; }
  grep -qx '<<<<<<< host' "$P/clash.txt"
  grep -qx '>>>>>>> sandbox' "$P/clash.txt"
  # ours.txt and theirs.txt hold one line each: merged with markers too. Put them back, settle
  # them each way.
  as_owner sh -c "cd '$P' && echo host > ours.txt && echo host > theirs.txt"
  in_sandbox 'cd ~/copy-projects/sn-app && echo agent2 > ours.txt && echo agent2 > theirs.txt'
  run ss apply sn-app --ours --yes
  assert_success
  assert_equal "$(cat "$P/ours.txt")" "host"
  assert_equal "$(cat "$P/theirs.txt")" "host"
  # Settled for the host: the next sync replaces the copy's versions without --force.
  as_owner sh -c "printf 'settled\n' > '$P/clash.txt'"
  run ss sync sn-app
  assert_success
  run in_sandbox 'cat ~/copy-projects/sn-app/ours.txt ~/copy-projects/sn-app/user-new.txt ~/copy-projects/sn-app/clash.txt'
  assert_output "host
mine
settled"
  as_owner sh -c "echo host3 > '$P/theirs.txt'"
  in_sandbox 'echo agent3 > ~/copy-projects/sn-app/theirs.txt'
  run ss apply sn-app --theirs --yes
  assert_success
  assert_equal "$(cat "$P/theirs.txt")" "agent3"
  run ss apply sn-app --yes
  assert_output "Nothing to apply: the working copy of 'sn-app' matches its source."
  # A deletion in the copy of a file the user changed is a conflict too, and the file stays.
  in_sandbox 'rm ~/copy-projects/sn-app/user.txt'
  as_owner sh -c "echo again >> '$P/user.txt'"
  run ss apply sn-app --yes
  assert_failure 1
  assert_line "  C user.txt  (changed on the host too)"
  assert_file_exists "$P/user.txt"
  run ss apply sn-app --ours --yes
  assert_success
  ss sync sn-app
  run in_sandbox 'tail -1 ~/copy-projects/sn-app/user.txt'
  assert_output "again"
}

@test "property: random edits on both sides, sync, diff and apply in random order; no edit is lost" {
  ss new sn-prop --copy >/dev/null
  ss sync sn-prop >/dev/null
  local host port
  host=$(ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.host)
  port=$(ss vm status --sandbox "$SANDBOX" --json | jq -r .ssh.port)
  # 1,000 rounds where a round costs least; fewer where each ss command starts a slower machine.
  local rounds
  case "$SS_E2E_BACKEND" in docker) rounds=1000 ;; qemu) rounds=20 ;; *) rounds=100 ;; esac
  run python3 "$BATS_TEST_DIRNAME/apply_property.py" "$SS_HOME/copy-projects/sn-prop" sn-prop \
    "${SS_E2E_PROPERTY_ROUNDS:-$rounds}" "${SS_E2E_PROPERTY_SEED:-$RANDOM}" -- \
    ssh -q -i "$SS_HOME/.ss/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$SS_HOME/.ss/sandboxes/$SANDBOX/known_hosts" \
    -p "$port" "sandbox@$host" --
  echo "$output" >&3
  assert_success
  assert_line --partial "losses: 0"
  ss delete sn-prop --yes --force >/dev/null
}

@test "delete of a copy-mode project: refused with unapplied work, saved with --force; nothing of it comes back" {
  ss new sn-del --copy >/dev/null
  ss sync sn-del >/dev/null
  in_sandbox 'echo unapplied > ~/copy-projects/sn-del/work.txt'
  run --separate-stderr ss delete sn-del --yes
  assert_failure 1
  assert_equal "$stderr" "ss-project: error: deleting 'sn-del' would lose changes not yet applied in its working copy
  in sandbox '$SANDBOX': 1 file
hint: bring them to the host first: ss apply sn-del
hint: or save them on the host and delete: ss delete sn-del --force"
  assert_dir_exists "$SS_HOME/copy-projects/sn-del"
  run ss delete sn-del --yes --force
  assert_success
  saved=$(sed -n 's/^Saved the working copy.s changes first: ~/~/p' <<< "$output")
  saved=${saved/#\~/$HOME}
  assert_equal "$(tar -xzOf "$saved" sn-del/work.txt)" "unapplied"
  assert_line "Deleted: sn-del"
  run ss config get projects.sn-del.mode
  assert_output "mount"
  ! grep -q sn-del "$SS_HOME/config.yaml"
  run in_sandbox 'ls -d ~/copy-projects/sn-del ~/project-src/sn-del ~/.ss/bases/sn-del ~/.ss/sync/sn-del.* ~/.ss/sources/sn-del.* 2>/dev/null; mount | grep -c sn-del'
  assert_output "0"
  # A new project of the same name starts from its own files.
  ss new sn-del --copy >/dev/null
  run in_sandbox 'ls ~/copy-projects/sn-del'
  refute_line "work.txt"
  ss delete sn-del --yes >/dev/null
}

@test "fetch: the copy has a repository of its own; the agent's commits come back as objects and refs, fast-forwarded or left in sandbox/BRANCH" {
  ss new sn-git --copy >/dev/null
  G="$SS_HOME/copy-projects/sn-git"
  hgit() { as_owner git -C "$G" "$@"; }
  commit() { echo "git -c user.name=agent -c user.email=agent@sandbox commit -q $*"; }
  # The host's history, HEAD on its branch, nothing to commit: the copy is the host's checkout.
  run ss exec sn-git -- sh -c 'git log --format=%s; git branch --show-current; git status --porcelain'
  assert_success
  assert_output "Initial commit from Super-Sandbox
main"
  # Two commits; the session's end brings them: main fast-forwarded, its checkout too.
  run --separate-stderr ss sn-git -- sh -c "$(commit --allow-empty -m one) && echo two > two.txt && git add two.txt && $(commit -m two)"
  assert_success
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 2 commits ("* ]] || { echo "$stderr"; false; }
  assert_equal "$(hgit log --format=%s | tr '\n' '|')" "two|one|Initial commit from Super-Sandbox|"
  assert_equal "$(cat "$G/two.txt")" "two"
  assert_equal "$(hgit status --porcelain --untracked-files=no)" ""
  assert_equal "$(stat -c %u "$G/two.txt" "$G/.git/refs/heads/main" | sort -u)" "$(stat -c %u "$G")"
  run ss fetch sn-git
  assert_success
  assert_output "Nothing to fetch: the host has every commit of the working copy of sn-git."
  # A commit that would replace a file of the user's that git does not track (ignored, here),
  # or put a folder where one is, is left in sandbox/main; once the sandbox drops it, it is kept.
  as_owner sh -c "echo host-log > '$G/debug.log' && echo notes > '$G/notes.log'"
  ss exec sn-git -- sh -c "echo sandbox > debug.log && rm -f notes.log && mkdir notes.log && echo n > notes.log/f && git add -f debug.log notes.log/f && $(commit -m logs)"
  run ss fetch sn-git
  assert_success
  assert_output "main: 1 commit left in sandbox/main: its commits bring files you have there and git does not track: debug.log, notes.log/f; move them aside, then: git merge --ff-only sandbox/main"
  assert_equal "$(cat "$G/debug.log" "$G/notes.log")" "host-log
notes"
  assert_equal "$(hgit log -1 --format=%s main)" "two"
  ss exec sn-git -- git reset -q --hard HEAD~1
  run ss fetch sn-git
  assert_success
  assert_line --regexp "^main: the sandbox no longer has 1 commit it gave before: kept in refs/sandbox-kept/[0-9a-f]{40}$"
  assert_equal "$(hgit log -1 --format=%s "$(hgit for-each-ref --format='%(refname)' refs/sandbox-kept/)")" "logs"
  # A branch checked out in another worktree of the host's moves only there, by git.
  hgit worktree add -q "$BATS_TEST_TMPDIR/wt" -b wt main
  ss exec sn-git -- sh -c "git branch -f wt main && git checkout -q wt && $(commit --allow-empty -m wt) && git checkout -q main"
  run ss fetch sn-git
  assert_line "wt: 1 commit left in sandbox/wt: wt is checked out in another worktree of the host's; there: git merge --ff-only sandbox/wt"
  assert_equal "$(hgit rev-parse wt)" "$(hgit rev-parse main)"
  hgit worktree remove --force "$BATS_TEST_TMPDIR/wt"
  hgit branch -q -D wt
  ss exec sn-git -- git branch -q -D wt
  # The host moves on; the sandbox's next commits wait in sandbox/main. A new branch is new.
  as_owner sh -c "cd '$G' && echo host > host.txt && git add host.txt && git -c user.name=u -c user.email=u@h commit -q -m host"
  ss exec sn-git -- sh -c "$(commit --allow-empty -m three) && git checkout -q -b feature && $(commit --allow-empty -m four)"
  run ss fetch sn-git
  assert_success
  assert_line "feature: new in the sandbox, 2 commits: sandbox/feature"
  assert_line "main: 1 commit left in sandbox/main: the host's main has commits of its own; merge them: git merge sandbox/main"
  assert_equal "$(hgit log -1 --format=%s main)" "host"
  assert_equal "$(hgit log -1 --format=%s sandbox/main)" "three"
  assert_equal "$(hgit log -1 --format=%s sandbox/feature)" "four"
  run ss fetch sn-git --json
  echo "$output" | jq -e '.kind == "FetchReport" and .repository == true and ([.branches[].outcome] | sort) == ["kept", "new"]'
  # A branch the host has but has not checked out is moved on by its ref alone.
  hgit branch side sandbox/main~1
  ss exec sn-git -- sh -c "git checkout -q main && git branch -f side main && git checkout -q side && $(commit --allow-empty -m five)"
  run ss fetch sn-git
  assert_line --regexp "^side: fast-forwarded by 2 commits \([0-9a-f]{7}\.\.[0-9a-f]{7}\)$"
  assert_equal "$(hgit log -1 --format=%s side)" "five"
  assert_equal "$(hgit branch --show-current)" "main"
}

@test "push and pull: binary files and directories round-trip with their modes; overwrite overwrites" {
  t="$BATS_TEST_TMPDIR"
  head -c 1048577 /dev/urandom > "$t/blob.bin"
  chmod 0751 "$t/blob.bin"
  run ss push "$t/blob.bin" data/ --project sn-app
  assert_success
  assert_output "Pushed $t/blob.bin to sandbox:/home/sandbox/copy-projects/sn-app/data/blob.bin"
  run in_sandbox stat -c %a copy-projects/sn-app/data/blob.bin
  assert_output "751"
  # Overwriting an existing file replaces it.
  head -c 1000 /dev/urandom > "$t/blob2.bin"
  ss push "$t/blob2.bin" data/blob.bin --project sn-app
  ss pull data/blob.bin "$t/back.bin" --project sn-app
  cmp "$t/blob2.bin" "$t/back.bin"
  ss push "$t/blob.bin" data/blob.bin --project sn-app
  ss pull data/blob.bin "$t/back.bin" --project sn-app
  cmp "$t/blob.bin" "$t/back.bin"
  assert_equal "$(stat -c %a "$t/back.bin")" "751"
  # Directories, nested, with modes; absolute remote paths.
  mkdir -p "$t/tree/sub/deeper"
  head -c 70000 /dev/urandom > "$t/tree/sub/deeper/x.bin"
  echo script > "$t/tree/run.sh"
  chmod 0700 "$t/tree/run.sh"
  run ss push "$t/tree" /tmp/pushed
  assert_success
  run ss pull /tmp/pushed "$t/pulled"
  assert_success
  diff -r "$t/tree" "$t/pulled"
  assert_equal "$(stat -c %a "$t/pulled/run.sh")" "700"
  run ss pull /tmp/no-such-file "$t/x"
  assert_failure 66
}

@test "health-check: every line ok, and breaking one component fails exactly that line" {
  chrome_up
  run ss health-check "$SANDBOX" --json
  assert_success
  echo "$output" | jq -e '.kind == "HealthCheck" and .ok == true and ([.checks[].name] == ["ssh", "network", "docker", "claude", "project directory", "source mount", "browser bridge"])'
  run ss health-check
  assert_success
  assert_line --regexp '^network +ok '
  # break_it NAME BREAK MEND: only NAME fails while broken; all ok again once mended. BREAK and
  # MEND run in the sandbox; "host: CMD" on the host.
  on() { if [[ $1 == host:* ]]; then eval "${1#host: }"; else in_sandbox "$1"; fi; }
  break_it() {
    on "$2"
    run ss health-check --json
    on "$3"
    [ "$status" -eq 1 ]
    for n in ssh network docker claude "project directory" "source mount" "browser bridge"; do
      want=ok
      [ "$n" = "$1" ] && want=failed
      [ "$(check_status "$n" "$output")" = "$want" ] || { echo "$n: not $want: $output"; return 1; }
    done
  }
  # The agent's API refused by the sandbox's policy: the network line fails, and says how to allow it.
  break_it network 'host: ss net deny api.anthropic.com >/dev/null' 'host: ss net allow api.anthropic.com >/dev/null'
  break_it docker 'sudo systemctl stop docker.socket docker.service' 'sudo systemctl start docker.socket'
  claude=$(in_sandbox command -v claude)
  break_it claude "sudo mv $claude $claude.off" "sudo mv $claude.off $claude"
  break_it "project directory" 'chmod 000 ~/projects' 'chmod 755 ~/projects'
  break_it "source mount" 'sudo chown sandbox ~/project-src/sn-app' 'sudo chown root ~/project-src/sn-app'
  ss exec sn-app -- true  # opening the project mounts the working copy again
  # Something in the sandbox holds the browser's port: the host's browser cannot be reached.
  port=$(cat "$BATS_FILE_TMPDIR/cdp_port")
  break_it "browser bridge" "setsid python3 -m http.server $port --bind 127.0.0.1 </dev/null >/dev/null 2>&1 &
    for i in \$(seq 100); do curl -so /dev/null http://127.0.0.1:$port/ && break; sleep 0.1; done" \
    "pkill -f 'http.server $port'"
  # No browser on the host at all is no fault of the sandbox: a warning with the fix, exit 0.
  kill -- "-$(cat "$BATS_FILE_TMPDIR/chrome.pid")"
  run ss health-check --json
  assert_success
  [ "$(check_status "browser bridge" "$output")" = warning ]
  echo "$output" | jq -e '.ok == true and (.checks[] | select(.name == "browser bridge") | .fix | test("claude --chrome"))'
  [ "$(check_status network "$output")" = ok ]
  # SSH: ss pins a wrong host key (its record of the sandbox's key is changed); nothing else
  # can be looked at.
  pub="$SS_HOME/.ss/sandboxes/$SANDBOX/host_ed25519.pub"
  cp "$pub" "$BATS_TEST_TMPDIR/pub"
  echo "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhI4F8fM0u1B3Hlq4H9t5y9tY7zV7jW8M2r3M0nJ9Zk ss-wrong" > "$pub"
  run ss health-check --json
  cp "$BATS_TEST_TMPDIR/pub" "$pub"
  assert_failure 1
  [ "$(check_status ssh "$output")" = failed ]
  echo "$output" | jq -e '[.checks[] | select(.name != "ssh") | .detail] | all(. == "not checked: no SSH connection")'
}

@test "doctor: virtualization, the backend's own probe, disk space" {
  run ss doctor --json
  echo "$output" | jq -e '.kind == "Doctor"'
  echo "$output" | jq -e --arg b "backend $SS_E2E_BACKEND" '.checks[] | select(.name == $b) | .status == "ok"'
  echo "$output" | jq -e '.checks[] | select(.name == "virtualization") | .detail | test("KVM|PVM|TCG|HVF")'
  echo "$output" | jq -e '.checks[] | select(.name == "disk space") | .status == "ok"'
  run ss doctor
  assert_line --regexp "^backend $SS_E2E_BACKEND +ok "
}
