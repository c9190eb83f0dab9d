#!/usr/bin/env bats
# Profiles (profiles.NAME), the session flags over them, `ss run DIR` / `ss .`, `ss clean
# --profile` and `ss profiles`: every message and exit status before a sandbox is needed (every
# backend's tool answers as when it cannot run, so nothing real is started).

load helpers

setup() {
  ss_setup
  ss new proj >/dev/null
}

@test "ss profiles: none, then a table and ss-json" {
  run --separate-stderr ss profiles
  assert_success
  assert_equal "$output" "No profiles in ~/super-sandbox/config.yaml.
Define one (see man 5 ss-config), such as:
  ss config set profiles.untrusted.description 'plugins I do not trust'
  ss config set profiles.untrusted.ephemeral true"
  ss config set profiles.untrusted.description 'plugins I do not trust' >/dev/null
  ss config set profiles.untrusted.ephemeral true >/dev/null
  ss config set profiles.untrusted.mounts "$HOME:/data:ro" >/dev/null
  ss config set profiles.untrusted.env NODE_ENV=development >/dev/null
  ss config set profiles.work.backend docker >/dev/null
  run --separate-stderr ss profiles
  assert_success
  assert_equal "$output" "PROFILE             BACKEND  EPHEMERAL  SANDBOX   DESCRIPTION
untrusted           auto     yes        -         plugins I do not trust
work                docker   no         -         "
  run --separate-stderr ss --json profiles
  assert_success
  assert_equal "$(jq -c '[.kind, .profiles[0].name, .profiles[0].ephemeral, .profiles[0].mounts, .profiles[0].env, .profiles[1].backend, .profiles[1].sandbox_exists]' <<< "$output")" \
    "[\"Profiles\",\"untrusted\",true,[\"$HOME:/data:ro\"],[\"NODE_ENV=development\"],\"docker\",false]"
  run ss config profiles --json
  assert_success
}

@test "profile keys are checked where they are written: exit 65, or 78 with the file's line" {
  run --separate-stderr ss config set profiles.p.mounts /x:relative
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-config: error: invalid value for profiles.p.mounts: '/x:relative': GUEST must be an absolute path in the sandbox"
  run --separate-stderr ss config set profiles.p.mounts /x:/etc/cron.d
  assert_equal "$status" 65
  [[ "$stderr" == *"/etc/cron.d is the system's or ss's own"* ]]
  run --separate-stderr ss config set profiles.p.mounts /x:/home/sandbox/projects/a
  assert_equal "$status" 65
  run --separate-stderr ss config set profiles.p.mounts '/x:/a b'
  assert_equal "$status" 65
  run --separate-stderr ss config set profiles.p.mounts /x:/a/../b
  assert_equal "$status" 65
  run --separate-stderr ss config set profiles.p.env 1X=y
  assert_equal "$status" 65
  run --separate-stderr ss config set profiles.Bad.cpus 2
  assert_equal "$status" 64
  run --separate-stderr ss config set image.packages 'golang-go, --allow-unauthenticated'
  assert_equal "$status" 65
  [[ "$stderr" == *"'--allow-unauthenticated' is not a Debian package name"* ]]
  run --separate-stderr ss config set image.npm '--registry=http://evil'
  assert_equal "$status" 65
  run ss config set image.npm 'typescript, @vue/cli@5, prettier@^3'
  assert_success
  printf 'profiles:\n  p:\n    mounts: ["nothing"]\n' > "$SS_HOME/config.yaml"
  run --separate-stderr ss profiles
  assert_equal "$status" 78
  [[ "${stderr_lines[0]}" == "ss-config: error: $SS_HOME/config.yaml:3:"*"'nothing': expected HOST:GUEST or HOST:GUEST:ro" ]]
}

@test "--profile: an unknown one, or one with another --sandbox, is exit 64 before anything starts" {
  run --separate-stderr ss proj --profile nope -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: no profile 'nope' in ~/super-sandbox/config.yaml
hint: define it in config.yaml: ss config set profiles.nope.description '...'"
  ss config set profiles.untrusted.ephemeral true >/dev/null
  run --separate-stderr ss proj --profile untrustd -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: no profile 'untrustd' in ~/super-sandbox/config.yaml
hint: did you mean 'untrusted'?
hint: profiles: untrusted"
  run --separate-stderr ss proj --profile untrusted --sandbox other -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --profile untrusted runs in the sandbox 'untrusted'; --sandbox names another ('other')"
  # Ours before the verb too, never iproute2's.
  run --separate-stderr ss --profile nope status
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss-vm: error: no profile 'nope' in ~/super-sandbox/config.yaml"
  run --separate-stderr ss --profile
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --profile needs a profile name"
  # With a known profile, the session goes on to its sandbox: here, no backend can run.
  run --separate-stderr ss proj --profile untrusted -- true
  assert_equal "$status" 69
}

@test "--mount and --no-mount are checked before anything starts" {
  run --separate-stderr ss proj --mount relative -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: --mount 'relative': expected HOST:GUEST or HOST:GUEST:ro
hint: see 'ss attach --help'"
  run --separate-stderr ss proj --mount /tmp:/proc/x -- true
  assert_equal "$status" 64
  run --separate-stderr ss proj --mount "$HOME/missing:/data" -- true
  assert_equal "$status" 66
  assert_equal "$stderr" "ss: error: mount source '$HOME/missing' does not exist
hint: create it first (mkdir -p $HOME/missing), or name another: --mount $HOME/missing:/data"
  # A folder holding ss's keys, the user's SSH keys or the session sockets never reaches a sandbox.
  run --separate-stderr ss proj --mount "$SS_HOME:/data:ro" -- true
  assert_equal "$status" 77
  assert_equal "${stderr_lines[0]}" "ss: error: mount source '$SS_HOME' holds ss's own keys and state ($SS_HOME/.ss)"
  mkdir -p "$HOME/.ssh"
  run --separate-stderr ss proj --mount "$HOME:/data:ro" -- true
  assert_equal "$status" 77
  mkdir -p "$SS_HOME/.ss/sandboxes"
  run --separate-stderr ss proj --mount "$SS_HOME/.ss/sandboxes:/data:ro" -- true
  assert_equal "$status" 77
  mkdir -p "$HOME/data" "$HOME/other"
  run --separate-stderr ss proj --mount "$HOME/data:/data" --mount "$HOME/other:/data" -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: two folders would be shared at /data"
  run --separate-stderr ss proj --no-mount --mount "$HOME/data:/data" -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --no-mount and --mount contradict each other"
  run --separate-stderr ss proj --no-mount -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --no-mount shares no folder, and the project 'proj' is one"
  run --separate-stderr ss proj --ephemeral --keep -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: --ephemeral and --keep contradict each other"
  run --separate-stderr ss proj --secret 'NOT-A-NAME' -- true
  assert_equal "$status" 65
  run --separate-stderr ss proj --no-secret '' -- true
  assert_equal "$status" 65
  run --separate-stderr ss proj --env '1X=y' -- true
  assert_equal "$status" 65
  # Good flags go on to the sandbox.
  run --separate-stderr ss proj --mount "$HOME/data:/data:ro" --secret HOME --no-secret X --env A=b --shell
  assert_equal "$status" 69
}

@test "ss . and ss run DIR: any folder, checked, remembered with a sandbox of its own" {
  run --separate-stderr ss run "$HOME/missing"
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss: error: folder '$HOME/missing' does not exist"
  touch "$HOME/file"
  run --separate-stderr ss run "$HOME/file"
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss: error: folder '$HOME/file' is not a directory"
  run --separate-stderr ss /
  assert_equal "$status" 77
  cd "$SS_HOME"
  run --separate-stderr ss .
  assert_equal "$status" 77
  assert_equal "${stderr_lines[0]}" "ss: error: folder '.' holds ss's own keys and state ($SS_HOME/.ss)"
  mkdir -p "$HOME/code/My App!"
  cd "$HOME/code/My App!"
  run --separate-stderr ss . -- true
  assert_equal "$status" 69
  sandbox=$(jq -r --arg p "$HOME/code/My App!" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")
  [[ "$sandbox" =~ ^my-app-[0-9a-f]{4}$ ]]
  assert_equal "$(jq -r --arg p "$HOME/code/My App!" '.folders[$p].name' "$SS_HOME/.ss/folders.json")" my-app
  # The same folder by another path is the same folder.
  cd "$HOME"
  run --separate-stderr ss ./code/../code/My\ App! -- true
  assert_equal "$status" 69
  assert_equal "$(jq '.folders | length' "$SS_HOME/.ss/folders.json")" 1
  run --separate-stderr ss run a b
  assert_equal "$status" 64
  run ss attach --help
  assert_line "       ss run [DIR] [-t | -- CMD [ARGS...]] [OPTIONS]     (ss . is ss run .)"
}

@test "ss run DIR --copy: recorded, its own sandbox only; sync, diff and apply find the folder" {
  mkdir -p "$HOME/code/app/src" "$HOME/code/plain"
  run --separate-stderr ss exec --copy -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: --copy goes with ss run DIR
hint: a project's mode is its own: ss config set projects.NAME.mode copy"
  # Chosen before the sandbox is made (none can run here), and remembered.
  run --separate-stderr ss run "$HOME/code/app" --copy -- true
  assert_equal "$status" 69
  assert_equal "$(jq -r --arg p "$HOME/code/app" '.folders[$p].mode' "$SS_HOME/.ss/folders.json")" copy
  run --separate-stderr ss run "$HOME/code/app" --copy --sandbox other -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: the folder $HOME/code/app is in copy mode: it opens in its own sandbox only
hint: leave out --sandbox"
  run --separate-stderr ss run "$HOME/code/app" --no-mount -- true
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss: error: --no-mount shares no folder, and copy mode needs the folder's"
  # sync, diff and apply: the folder by a path, or the one the current directory is in.
  cd "$HOME/code/app/src"
  run --separate-stderr ss diff --sandbox other
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: the working copy of $HOME/code/app is not in sandbox 'other'
hint: it is in the folder's own sandbox: --sandbox $(jq -r --arg p "$HOME/code/app" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")"
  # Found the folder; its sandbox was never made (nothing could run), and diff never makes one.
  run --separate-stderr ss diff
  assert_equal "$status" 66
  assert_equal "${stderr_lines[0]}" "ss-sync: error: sandbox '$(jq -r --arg p "$HOME/code/app" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")' does not exist"
  cd "$HOME"
  run --separate-stderr ss sync ./code/plain
  assert_equal "$status" 66
  assert_equal "$stderr" "ss-sync: error: './code/plain' is not in a folder opened with ss run
hint: open it in working-copy mode first: ss run ./code/plain --copy"
  run --separate-stderr ss run ./code/plain -- true
  assert_equal "$status" 69
  sandbox=$(jq -r --arg p "$HOME/code/plain" '.folders[$p].sandbox' "$SS_HOME/.ss/folders.json")
  run --separate-stderr ss apply ./code/plain --yes
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-sync: error: the folder $HOME/code/plain is not in working-copy mode
the agent works in the folder itself: there is no copy to sync
hint: the mode is chosen when its sandbox is made: ss vm delete --sandbox $sandbox, then ss run $HOME/code/plain --copy"
  # A folder's own sandbox shares no projects.
  run --separate-stderr ss exec proj --sandbox "$sandbox" -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: sandbox '$sandbox' belongs to the folder $HOME/code/plain: it shares no projects
hint: open the project in another sandbox: ss proj --sandbox NAME"
}

@test "ss . in a git repository: a working copy unless told otherwise; shared, every session says what that exposes" {
  mkdir -p "$HOME/code/repo" "$HOME/code/shared-repo" "$HOME/code/other-repo"
  git -C "$HOME/code/repo" init -q
  git -C "$HOME/code/shared-repo" init -q
  echo "gitdir: $HOME/code/repo/.git" > "$HOME/code/other-repo/.git"
  cd "$HOME/code/repo"
  # Chosen and said before the sandbox is made (none can run here), remembered.
  run --separate-stderr ss . -- true
  assert_equal "$status" 69
  assert_equal "${stderr_lines[0]}" "$HOME/code/repo is a git repository: the agent works in a copy of it, the folder shared with nothing."
  assert_equal "${stderr_lines[1]}" "Its commits come back when a session ends; other changes with ss diff and ss apply."
  assert_equal "${stderr_lines[2]}" "To share it read-write instead: ss run $HOME/code/repo --no-copy"
  assert_equal "${stderr_lines[3]}" "ss: error: no sandbox backend can run on this machine"
  assert_equal "$(jq -r --arg p "$HOME/code/repo" '.folders[$p].mode' "$SS_HOME/.ss/folders.json")" copy
  run --separate-stderr ss . -- true
  assert_equal "$status" 69
  [[ "$stderr" != *"is a git repository"* ]]
  # A .git file (a worktree, a submodule) is a repository too.
  run --separate-stderr ss run "$HOME/code/other-repo" -- true
  assert_equal "$status" 69
  assert_equal "$(jq -r --arg p "$HOME/code/other-repo" '.folders[$p].mode' "$SS_HOME/.ss/folders.json")" copy
  # Shared when asked, and each session says so.
  for _ in 1 2; do
    run --separate-stderr ss run "$HOME/code/shared-repo" --no-copy -- true
    assert_equal "$status" 69
    assert_equal "${stderr_lines[0]}" "ss: warning: $HOME/code/shared-repo is a git repository shared read-write: the sandbox can change its .git (hooks, settings), which git on this machine obeys; to keep it out of reach: ss run $HOME/code/shared-repo --copy"
    assert_equal "$(jq -r --arg p "$HOME/code/shared-repo" '.folders[$p].mode' "$SS_HOME/.ss/folders.json")" shared
  done
  # Another sandbox cannot hold a copy; --no-mount shares nothing, so the mode does not matter.
  mkdir -p "$HOME/code/third" && git -C "$HOME/code/third" init -q
  run --separate-stderr ss run "$HOME/code/third" --sandbox other -- true
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: the folder $HOME/code/third is a git repository, in copy mode: it opens in its own sandbox only
hint: leave out --sandbox, or share it read-write there: --no-copy"
  mkdir -p "$HOME/code/fourth" && git -C "$HOME/code/fourth" init -q
  run --separate-stderr ss run "$HOME/code/fourth" --no-mount -- true
  assert_equal "$status" 69
  [[ "$stderr" != *"is a git repository"* ]]
}

@test "ss clean --profile NAME: needs the profile; nothing to clean is said, exit 0" {
  run --separate-stderr ss clean
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-vm: error: usage: ss clean --profile NAME [--yes]
hint: to delete any sandbox: ss destroy --sandbox NAME"
  run --separate-stderr ss clean --profile nope
  assert_equal "$status" 64
  ss config set profiles.untrusted.ephemeral true >/dev/null
  run --separate-stderr ss clean --profile untrusted
  assert_success
  assert_equal "$output" "Profile 'untrusted' has no sandbox yet; nothing to clean."
}

@test "completion offers the new flags and the profiles" {
  ss config set profiles.untrusted.ephemeral true >/dev/null
  run ss --complete proj --p
  assert_line --profile
  assert_line --mount
  assert_line --no-mount
  assert_line --ephemeral
  assert_line --keep
  assert_line --secret
  assert_line --no-secret
  assert_line --shell
  run ss --complete proj --profile ''
  assert_output untrusted
  run ss --complete vm start --profile ''
  assert_output untrusted
  run ss --complete run --pro
  assert_line --profile
  run bash -c "ss --complete '' | cut -f1"
  assert_line run
  assert_line profiles
  assert_line clean
}
