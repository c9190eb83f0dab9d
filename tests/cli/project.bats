#!/usr/bin/env bats
# ss new / list / delete / project show (ss-project): every message byte for byte, every exit
# status, the --json schema, and what concurrent and killed runs leave behind.

load helpers

setup() {
  ss_setup
  P="$SS_HOME/projects"
  # git sees no identity of this machine: the fallback identity unless a test sets one.
  export GIT_CONFIG_NOSYSTEM=1
  unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL EMAIL
  GH_LOG="$BATS_TEST_TMPDIR/gh.log"
  export GH_LOG
  SSP="$SS_BUILD_DIR/libexec/ss/ss-project"
  STOP=""
}

# Run as root, ss gives projects to the sandbox user's uid (see ProjectsOwner); the test's own
# git looks at them as root, so it trusts them. ss's git and gh runs do not see this.
git() { command git -c safe.directory='*' "$@"; }

# Background loops of a failed test must not outlive it.
teardown() {
  if [ -n "$STOP" ]; then
    touch "$STOP"
    wait
  fi
}

# A stub gh that records each call (its argv, then its working directory) in $GH_LOG and
# behaves as GH_AUTH (ok|fail) and GH_CREATE (ok|fail) say.
stub_gh() {
  stub gh '
printf "%s\n" "$*" >> "$GH_LOG"
printf "cwd=%s\n" "$PWD" >> "$GH_LOG"
case "$1 $2" in
  "auth status")
    [ "${GH_AUTH:-ok}" = ok ] && exit 0
    echo "You are not logged into any GitHub hosts. To log in, run: gh auth login" >&2; exit 1 ;;
  "repo create")
    [ "${GH_CREATE:-ok}" = ok ] || { echo "GraphQL: Name already exists on this account (createRepository)" >&2; exit 1; }
    git remote add origin "https://github.com/octo/$3.git" ;;
  "repo view")
    n=$(basename "$PWD")
    printf "{\"nameWithOwner\":\"octo/%s\",\"url\":\"https://github.com/octo/%s\"}\n" "$n" "$n" ;;
esac'
}

# on_tty [--answer TEXT] CMD...: runs CMD on a pseudo-terminal with echo off and prints what
# the terminal showed, without carriage returns; returns CMD's status. TEXT (a line) is typed
# once echo is off; without --answer, standard input ends there (Ctrl-D).
on_tty() {
  local answer="" has_answer=0 ready="$BATS_TEST_TMPDIR/tty-ready" out rc
  if [ "$1" = --answer ]; then answer=$2; has_answer=1; shift 2; fi
  rm -f "$ready"
  out=$(
    {
      while [ ! -e "$ready" ]; do sleep 0.01; done
      [ "$has_answer" = 1 ] && printf '%s\n' "$answer"
    } | script -qec "stty -echo; touch $(printf '%q' "$ready"); $(printf '%q ' "$@")" /dev/null
  )
  rc=$?
  printf '%s' "$out" | tr -d '\r'
  return $rc
}

# rfc3339 'DATE SPEC': a UTC time as metadata stores it.
rfc3339() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

# set_times NAME CREATED-SPEC ACCESSED-SPEC [GITHUB]
set_times() {
  local gh=""
  [ -n "${4:-}" ] && gh=",\"githubRepo\":\"$4\""
  printf '{"created":"%s","lastAccessed":"%s"%s}\n' "$(rfc3339 "$2")" "$(rfc3339 "$3")" "$gh" \
    > "$P/$1/.ss/metadata.json"
}

render() { sed "s/{{name}}/$2/g" "$SS_SOURCE_DIR/lib/templates/$1"; }

# --- ss new ------------------------------------------------------------------------------------

@test "new: prints the spec's lines and writes the scaffold" {
  run --separate-stderr ss new my-api
  assert_success
  assert_equal "$stderr" ""
  assert_output "Created: ~/super-sandbox/projects/my-api

Files:
  AGENTS.md    - Agent instructions
  README.md    - Project readme"
  assert_equal "$(ls -A "$P/my-api" | tr '\n' ' ')" ".git .gitignore .ss AGENTS.md README.md "
  assert_equal "$(cat "$P/my-api/AGENTS.md")" "$(render AGENTS.md my-api)"
  assert_equal "$(cat "$P/my-api/README.md")" "$(render README.md my-api)"
  grep -qx 'my-api - \[Describe your project here\]' "$P/my-api/AGENTS.md"
  grep -qx '# my-api' "$P/my-api/README.md"
  assert_equal "$(cat "$P/my-api/.gitignore")" "$(cat "$SS_SOURCE_DIR/lib/templates/gitignore")"
  for pattern in .ss/ .DS_Store .env .env.local node_modules/ dist/ build/ '*.log'; do
    grep -qxF -- "$pattern" "$P/my-api/.gitignore"
  done
  jq -e '(keys == ["created", "lastAccessed"]) and .created == .lastAccessed
         and (.created | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))' \
    "$P/my-api/.ss/metadata.json"
}

@test "new: one commit on main by Super-Sandbox when git knows nobody, .ss ignored" {
  ss new my-api
  cd "$P/my-api"
  assert_equal "$(git log --format='%an <%ae>|%cn <%ce>|%s')" \
    "Super-Sandbox <noreply@supersandbox.dev>|Super-Sandbox <noreply@supersandbox.dev>|Initial commit from Super-Sandbox"
  assert_equal "$(git branch --show-current)" "main"
  assert_equal "$(git ls-files | tr '\n' ' ')" ".gitignore AGENTS.md README.md "
  assert_equal "$(git status --porcelain)" ""
  git check-ignore -q .ss/metadata.json
}

@test "new: the commit is the user's when git knows them" {
  printf '[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n' > "$HOME/.gitconfig"
  ss new my-api
  assert_equal "$(git -C "$P/my-api" log --format='%an <%ae>|%cn <%ce>')" \
    "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>"
  GIT_AUTHOR_NAME=Env GIT_AUTHOR_EMAIL=env@example.com GIT_COMMITTER_NAME=Env \
    GIT_COMMITTER_EMAIL=env@example.com ss new other
  assert_equal "$(git -C "$P/other" log --format='%an <%ae>')" "Env <env@example.com>"
}

@test "new: invalid names exit 65 and say what is wrong" {
  check() {  # NAME PROBLEM
    run --separate-stderr ss new "$1"
    assert_equal "$status" 65
    assert_equal "$output" ""
    assert_equal "$stderr" "ss-project: error: invalid project name: use lowercase letters, numbers, and hyphens only
$2
hint: a name has 2 to 50 characters, starts with a letter and has no '--', such as my-app"
  }
  check My-App "'My-App' has an uppercase letter 'M': use lowercase"
  check a "'a' has 1 character: use 2 to 50"
  check 1app "'1app' starts with '1': start with a letter"
  check my--app "'my--app' has '--': use single hyphens"
  check my_app "'my_app' has '_' at position 3"
  check "my app" "'my app' has a space at position 3"
  check ../etc "'../etc' has '.' at position 1"
  check "" "the name is empty"
  long=$(printf 'a%.0s' {1..51})
  check "$long" "'$long' has 51 characters: use 2 to 50"
  run ss new "$(printf 'a%.0s' {1..50})"
  assert_success
  assert_equal "$(ls -A "$P" | wc -l)" 1
  for verb in delete list show; do
    run --separate-stderr "$SSP" "$verb" Bad
    if [ "$verb" = list ]; then assert_equal "$status" 64; else assert_equal "$status" 65; fi
  done
}

@test "new: an existing project exits 73 with the spec's block" {
  ss new my-app
  run --separate-stderr ss new my-app
  assert_equal "$status" 73
  assert_equal "$output" ""
  assert_equal "$stderr" "Error: Project 'my-app' already exists

Open it:
  ss my-app

Or choose a different name:
  ss new my-app-v2"
  ss new my-app-v2
  run --separate-stderr ss new my-app
  [[ "$stderr" == *"
Or choose a different name:
  ss new my-app-v3" ]]
}

@test "new: an entry that is not a folder blocks the name without being touched" {
  mkdir -p "$P" "$BATS_TEST_TMPDIR/outside"
  ln -s "$BATS_TEST_TMPDIR/outside" "$P/linked"
  run --separate-stderr ss new linked
  assert_equal "$status" 73
  assert_equal "$stderr" "ss-project: error: cannot create project 'linked': ~/super-sandbox/projects/linked exists and is a symbolic link
hint: move it away, or choose another name"
  assert_equal "$(ls -A "$BATS_TEST_TMPDIR/outside")" ""
}

@test "new: a failure leaves nothing behind (git fails, git missing)" {
  real_git=$(type -P git)
  stub git "[ \"\$1\" = commit ] && { echo 'fatal: No space left on device' >&2; exit 128; }; exec $real_git \"\$@\""
  PATH="$STUBS:$PATH" run --separate-stderr ss new broken
  assert_equal "$status" 73
  assert_equal "$output" ""
  assert_equal "$stderr" "ss-project: error: cannot create project 'broken': git exited with status 128
  fatal: No space left on device"
  assert_equal "$(ls -A "$P")" ""

  mkdir -p "$BATS_TEST_TMPDIR/nogit"
  ln -s "$SS_BUILD_DIR/bin/ss" "$BATS_TEST_TMPDIR/nogit/ss"
  run --separate-stderr env PATH="$BATS_TEST_TMPDIR/nogit" "$SS_BUILD_DIR/bin/ss" new nogit
  assert_equal "$status" 69
  assert_equal "$stderr" "ss-project: error: git is not installed
hint: install it: apt-get install git, then run the command again"
  assert_equal "$(ls -A "$P")" ""
}

@test "new: a name that is also an ss command gets a warning" {
  run --separate-stderr ss new status
  assert_success
  assert_equal "$stderr" "ss-project: warning: 'status' is also an ss command: open this project with 'ss attach status'"
}

@test "new --from: copies a clone with its history and adds only .ss" {
  src="$HOME/code/old-api"
  mkdir -p "$src/src"
  echo 'int main() {}' > "$src/src/main.c"
  git -C "$src" init -q -b trunk
  git -C "$src" add .
  git -C "$src" -c user.name=A -c user.email=a@example.com commit -qm "first"
  git -C "$src" -c user.name=A -c user.email=a@example.com commit -q --allow-empty -m "second"
  run --separate-stderr ss new old-api --from "$src"
  assert_success
  assert_equal "$stderr" ""
  assert_output "Created: ~/super-sandbox/projects/old-api
Imported from: ~/code/old-api"
  assert_equal "$(git -C "$P/old-api" log --format=%s | tr '\n' ' ')" "second first "
  assert_equal "$(git -C "$P/old-api" branch --show-current)" "trunk"
  assert_equal "$(git -C "$P/old-api" status --porcelain)" ""
  assert_equal "$(ls -A "$P/old-api" | tr '\n' ' ')" ".git .ss src "
  jq -e '.created and .lastAccessed' "$P/old-api/.ss/metadata.json"
  assert_equal "$(ls -A "$src" | tr '\n' ' ')" ".git src "
}

@test "new --from: every file becomes the user's; device nodes, fifos and sockets stay out, named" {
  src="$HOME/code/odd"
  mkdir -p "$src/sub"
  echo data > "$src/file"
  ln -s /etc/passwd "$src/link"
  mkfifo "$src/fifo"
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$src/sub/sock"
  if [ "$(id -u)" = 0 ]; then
    mknod "$src/null" c 1 3
    echo theirs > "$src/sub/theirs"
    chown -R 1234:1234 "$src/sub/theirs" "$src/file"
  fi
  run --separate-stderr ss new odd --from "$src"
  assert_success
  if [ "$(id -u)" = 0 ]; then
    assert_equal "$stderr" 'ss-project: warning: not imported (neither a file, a folder nor a link): fifo, null, sub/sock'
    assert_equal "$(cat "$P/odd/sub/theirs")" "theirs"
  else
    assert_equal "$stderr" 'ss-project: warning: not imported (neither a file, a folder nor a link): fifo, sub/sock'
  fi
  assert_equal "$(cat "$P/odd/file")" "data"
  assert_equal "$(readlink "$P/odd/link")" "/etc/passwd"
  assert_equal "$(find "$P/odd" \( -type p -o -type s -o -type b -o -type c \) | wc -l)" 0
  # The user's own, root's too when root runs ss: git in it needs no safe.directory.
  assert_equal "$(find "$P/odd" ! -user "$(id -u)" | wc -l)" 0
  assert_equal "$(stat -c %u:%g "$P")" "$(id -u):$(id -g)"
  # What the sandbox makes in the projects can be setuid: no other account reaches SS_HOME.
  assert_equal "$(stat -c %a "$SS_HOME")" "700"
}

@test "new --from: what cannot be imported" {
  run --separate-stderr ss new x1 --from "$BATS_TEST_TMPDIR/none"
  assert_equal "$status" 66
  assert_equal "$stderr" "ss-project: error: cannot import '$BATS_TEST_TMPDIR/none': No such file or directory"
  run --separate-stderr ss new x1 --from "$HOME"
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-project: error: cannot import '$HOME': it contains the projects folder"
  mkdir -p "$HOME/plain"
  run --separate-stderr ss new x1 --from "$HOME/plain" --github
  assert_equal "$status" 65
  assert_equal "$stderr" "ss-project: error: cannot create a GitHub repository from '$HOME/plain': it is not a git repository
hint: run 'git init' there and commit first, or leave out --github"
  assert_equal "$(ls -A "$P" 2>/dev/null)" ""
}

# --- ss new --github -----------------------------------------------------------------------------

@test "new --github: gh repo create in the project, the spec's lines, githubRepo recorded" {
  stub_gh
  PATH="$STUBS:$PATH" run --separate-stderr ss new my-api --github
  assert_success
  assert_equal "$stderr" ""
  assert_output "Created: ~/super-sandbox/projects/my-api
GitHub: https://github.com/octo/my-api

Ready for Claude Code Web or local sandbox."
  assert_equal "$(cat "$GH_LOG")" "auth status
cwd=$P/my-api
repo create my-api --source=. --remote=origin --public --push
cwd=$P/my-api
repo view --json nameWithOwner,url
cwd=$P/my-api"
  jq -e '.githubRepo == "octo/my-api"' "$P/my-api/.ss/metadata.json"
  assert_equal "$(git -C "$P/my-api" remote get-url origin)" "https://github.com/octo/my-api.git"
  ss list --json | jq -e '.items[0].github_repo == "octo/my-api"'
}

@test "new --github --private" {
  stub_gh
  PATH="$STUBS:$PATH" run ss new secret --github --private
  assert_success
  grep -qx 'repo create secret --source=. --remote=origin --private --push' "$GH_LOG"
}

@test "new --github: gh not logged in, the project is still created, exit 69" {
  stub_gh
  GH_AUTH=fail PATH="$STUBS:$PATH" run --separate-stderr ss new my-api --github
  assert_equal "$status" 69
  assert_output "Created: ~/super-sandbox/projects/my-api"
  assert_equal "$stderr" "ss-project: error: gh not authenticated: run 'gh auth login'
  You are not logged into any GitHub hosts. To log in, run: gh auth login
hint: the project was created without a GitHub repository; to add one later: cd $P/my-api && gh repo create my-api --source=. --remote=origin --public --push"
  assert_equal "$(cat "$GH_LOG")" "auth status
cwd=$P/my-api"
  jq -e 'has("githubRepo") | not' "$P/my-api/.ss/metadata.json"
  assert_file_exists "$P/my-api/AGENTS.md"
}

@test "new --github: gh missing, exit 69; GitHub refuses, exit 1" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  ln -s "$SS_BUILD_DIR/bin/ss" "$BATS_TEST_TMPDIR/bin/ss"
  ln -s "$(type -P git)" "$BATS_TEST_TMPDIR/bin/git"
  run --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin" "$SS_BUILD_DIR/bin/ss" new my-api --github --private
  assert_equal "$status" 69
  assert_output "Created: ~/super-sandbox/projects/my-api"
  assert_equal "$stderr" "ss-project: error: gh not found on the host: install the GitHub CLI
hint: see https://cli.github.com, then run 'gh auth login'
hint: the project was created without a GitHub repository; to add one later: cd $P/my-api && gh repo create my-api --source=. --remote=origin --private --push"

  stub_gh
  GH_CREATE=fail PATH="$STUBS:$PATH" run --separate-stderr ss new taken --github
  assert_equal "$status" 1
  assert_output "Created: ~/super-sandbox/projects/taken"
  assert_equal "$stderr" "ss-project: error: gh repo create failed (exit status 1)
  GraphQL: Name already exists on this account (createRepository)
hint: the project was created without a GitHub repository; to add one later: cd $P/taken && gh repo create taken --source=. --remote=origin --public --push"
}

@test "new: usage errors exit 64" {
  run --separate-stderr ss new
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: usage: ss new NAME [--from PATH] [--github [--private]] [--copy]
hint: see 'ss new --help'"
  run --separate-stderr ss new x1 --private
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: --private needs --github
hint: see 'ss new --help'"
  run --separate-stderr ss new x1 --json
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: --json is not an option of 'ss new'
hint: --json goes with ss list and ss project show
hint: see 'ss new --help'"
  run --separate-stderr ss new x1 --gihub
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: unknown option '--gihub'
hint: see 'ss project --help'"
  run --separate-stderr ss new x1 x2
  assert_equal "$status" 64
  run --separate-stderr ss project frobnicate
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: unknown command 'frobnicate'
hint: see 'ss project --help'"
  assert_equal "$(ls -A "$P" 2>/dev/null)" ""
}

# --- ss list -----------------------------------------------------------------------------------

@test "list: without a terminal, tab-separated, most recent first, no header" {
  for n in my-app client-website experiments; do ss new "$n" >/dev/null; done
  set_times my-app "3 days ago" "2 hours ago"
  set_times client-website "5 days ago" "1 day ago"
  set_times experiments "4 days ago" "3 days ago"
  truncate -s 145M "$P/my-app/big"
  truncate -s 89M "$P/client-website/big"
  truncate -s 12M "$P/experiments/big"
  run --separate-stderr ss list
  assert_success
  assert_equal "$stderr" ""
  assert_output "my-app	2 hours ago	145 MB
client-website	1 day ago	89 MB
experiments	3 days ago	12 MB"
  run ss list --no-size
  assert_output "my-app	2 hours ago
client-website	1 day ago
experiments	3 days ago"
  run ss project
  assert_line --index 0 "my-app	2 hours ago	145 MB"
  run ss project list
  assert_line --index 0 "my-app	2 hours ago	145 MB"
}

@test "list: on a terminal, the spec's table" {
  for n in my-app client-website experiments; do ss new "$n" >/dev/null; done
  set_times my-app "3 days ago" "2 hours ago"
  set_times client-website "5 days ago" "1 day ago"
  set_times experiments "4 days ago" "3 days ago"
  truncate -s 145M "$P/my-app/big"
  truncate -s 89M "$P/client-website/big"
  truncate -s 12M "$P/experiments/big"
  run on_tty ss list
  assert_success
  assert_output "NAME              LAST ACCESSED    SIZE
my-app            2 hours ago      145 MB
client-website    1 day ago        89 MB
experiments       3 days ago       12 MB"
  run on_tty ss list --no-size
  assert_output "NAME              LAST ACCESSED
my-app            2 hours ago
client-website    1 day ago
experiments       3 days ago"
}

@test "list: nothing yet" {
  run --separate-stderr ss list
  assert_success
  assert_equal "$output$stderr" ""
  run on_tty ss list
  assert_success
  assert_output "No projects yet in ~/super-sandbox/projects

Create a new project:
  ss new my-app"
  run ss list --json
  echo "$output" | jq -e '. == {"kind": "ProjectList", "version": 1, "items": []}'
}

@test "list --json: the schema" {
  ss new my-app >/dev/null
  ss new other >/dev/null
  set_times my-app "2025-01-15T10:30:00Z" "2025-01-15T14:22:00Z" "octo/my-app"
  set_times other "2025-01-14T10:30:00Z" "2025-01-14T14:22:00Z"
  run --separate-stderr ss list --json
  assert_success
  assert_equal "$stderr" ""
  echo "$output" | jq -e '
    (keys_unsorted == ["kind", "version", "items"]) and .kind == "ProjectList" and .version == 1
    and (.items | length == 2)
    and all(.items[]; keys_unsorted == ["name", "path", "created", "last_accessed", "size_bytes", "github_repo"])
    and all(.items[]; (.size_bytes | type) == "number" and .size_bytes == (.size_bytes | floor) and .size_bytes > 0)
    and all(.items[]; (.created, .last_accessed) | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"))'
  echo "$output" | jq -e --arg p "$P" '.items[0] | .name == "my-app" and .path == ($p + "/my-app")
    and .created == "2025-01-15T10:30:00Z" and .last_accessed == "2025-01-15T14:22:00Z"
    and .github_repo == "octo/my-app"'
  echo "$output" | jq -e '.items[1] | .name == "other" and .github_repo == null'
  # Apparent size, as du counts it.
  du_bytes=$(du -s --apparent-size --block-size=1 "$P/my-app" | cut -f1)
  echo "$output" | jq -e --argjson du "$du_bytes" '.items[0].size_bytes == $du'
  run ss list --json --no-size
  echo "$output" | jq -e 'all(.items[]; .size_bytes == null)'
}

@test "list: sizes never follow symbolic links" {
  ss new linky >/dev/null
  truncate -s 500M "$BATS_TEST_TMPDIR/huge"
  ln -s "$BATS_TEST_TMPDIR/huge" "$P/linky/huge-link"
  ln -s "$BATS_TEST_TMPDIR" "$P/linky/dir-link"
  run ss list --json
  echo "$output" | jq -e '.items[0].size_bytes < 1048576'
}

@test "list: missing or corrupt metadata is listed with a warning, then rebuilt on access" {
  for n in aa bb cc; do ss new "$n" >/dev/null; done
  set_times aa "3 days ago" "2 hours ago"
  rm "$P/bb/.ss/metadata.json"
  echo '{"created": "not a time"' > "$P/cc/.ss/metadata.json"
  run --separate-stderr ss list --no-size
  assert_success
  assert_equal "$stderr" "ss-project: warning: project 'bb': .ss/metadata.json is missing; it is rebuilt the next time the project is used
ss-project: warning: project 'cc': .ss/metadata.json is corrupt: it is not JSON; it is rebuilt the next time the project is used"
  assert_equal "$(cut -f1 <<< "$output" | sort | tr '\n' ' ')" "aa bb cc "
  assert_line "aa	2 hours ago"
  # Listing wrote nothing.
  assert_file_not_exists "$P/bb/.ss/metadata.json"

  run --separate-stderr ss project show bb
  assert_success
  assert_equal "$stderr" "ss-project: warning: project 'bb': .ss/metadata.json is missing; rebuilt it"
  run --separate-stderr ss project show cc --json
  assert_success
  assert_equal "$stderr" "ss-project: warning: project 'cc': .ss/metadata.json is corrupt: it is not JSON; rebuilt it"
  jq -e '.created and .lastAccessed' "$P/bb/.ss/metadata.json" "$P/cc/.ss/metadata.json"
  run --separate-stderr ss list
  assert_equal "$stderr" ""
}

@test "list: entries that are not projects are skipped with a warning" {
  ss new real >/dev/null
  mkdir -p "$BATS_TEST_TMPDIR/outside" "$P/Not A Project"
  ln -s "$BATS_TEST_TMPDIR/outside" "$P/linked"
  echo notes > "$P/notes.txt"
  run --separate-stderr ss list --no-size
  assert_success
  assert_output "real	just now"
  assert_equal "$stderr" "ss-project: warning: skipping '~/super-sandbox/projects/Not A Project': 'Not A Project' has an uppercase letter 'N': use lowercase
ss-project: warning: skipping '~/super-sandbox/projects/linked': a symbolic link, not a project folder (links are not followed)"
}

@test "list: usage errors" {
  run --separate-stderr ss list extra
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: unexpected argument 'extra'
hint: usage: ss list [--json] [--no-size]
hint: see 'ss list --help'"
  run --separate-stderr ss list --yes
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: --yes is not an option of 'ss list'
hint: --yes goes with ss delete
hint: see 'ss list --help'"
}

# --- ss project show ---------------------------------------------------------------------------

@test "project show: text and --json" {
  ss new my-app >/dev/null
  set_times my-app "2025-01-15T10:30:00Z" "2 hours ago" "octo/my-app"
  truncate -s 145M "$P/my-app/big"
  accessed=$(jq -r .lastAccessed "$P/my-app/.ss/metadata.json")
  run --separate-stderr ss project show my-app
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 "Name:           my-app"
  assert_line --index 1 "Path:           ~/super-sandbox/projects/my-app"
  assert_line --index 2 "In sandbox:     /home/sandbox/projects/my-app"
  assert_line --index 3 --regexp '^Created:        2025-01-15T10:30:00Z \([0-9]+ (months|years?) ago\)$'
  assert_line --index 4 "Last accessed:  $accessed (2 hours ago)"
  assert_line --index 5 "Size:           145 MB"
  assert_line --index 6 "Repository:     ~/super-sandbox/repositories/my-app (out of the sandbox's reach)"
  assert_line --index 7 "GitHub:         https://github.com/octo/my-app"
  assert_equal "${#lines[@]}" 8
  run --separate-stderr ss project show my-app --json
  assert_success
  echo "$output" | jq -e --arg p "$P" --arg a "$accessed" '
    keys_unsorted == ["kind", "version", "name", "path", "created", "last_accessed", "size_bytes", "github_repo"]
    and .kind == "Project" and .version == 1 and .name == "my-app" and .path == ($p + "/my-app")
    and .created == "2025-01-15T10:30:00Z" and .last_accessed == $a
    and .size_bytes > 145 * 1048576 and .github_repo == "octo/my-app"'
  # Showing is not using: last accessed stays.
  jq -e --arg a "$accessed" '.lastAccessed == $a' "$P/my-app/.ss/metadata.json"
}

@test "project show: not found, invalid name, usage" {
  ss new my-app >/dev/null
  run --separate-stderr ss project show foo
  assert_equal "$status" 66
  assert_equal "$stderr" "Error: Project 'foo' not found

Available projects:
  my-app

Create a new project:
  ss new foo"
  run --separate-stderr ss project show
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: usage: ss project show NAME [--json]
hint: see 'ss project show --help'"
}

# --- ss delete ---------------------------------------------------------------------------------

@test "delete: without a terminal it refuses unless --yes" {
  ss new experiments >/dev/null
  run --separate-stderr ss delete experiments < /dev/null
  assert_equal "$status" 64
  assert_equal "$output" ""
  assert_equal "$stderr" "ss-project: error: refusing to delete project 'experiments' without confirmation: standard input is not a terminal
hint: to delete it without asking, run: ss delete experiments --yes"
  assert_dir_exists "$P/experiments"
  run --separate-stderr ss delete experiments --yes < /dev/null
  assert_success
  assert_equal "$stderr" ""
  assert_output "Deleted: experiments"
  assert_equal "$(ls -A "$P")" ""
  ss new experiments >/dev/null
  run ss delete -y experiments
  assert_output "Deleted: experiments"
}

@test "delete: asks on a terminal, only y or yes deletes" {
  ss new experiments >/dev/null
  run on_tty --answer y ss delete experiments
  assert_success
  assert_output "Delete 'experiments'? This cannot be undone. Its repository, ~/super-sandbox/repositories/experiments, goes too. [y/N]: Deleted: experiments"
  assert_equal "$(ls -A "$P")" ""
  assert_equal "$(ls -A "$SS_HOME/repositories")" ""
  for answer in YES " yes "; do
    ss new experiments >/dev/null
    run on_tty --answer "$answer" ss delete experiments
    assert_success
    assert_output "Delete 'experiments'? This cannot be undone. Its repository, ~/super-sandbox/repositories/experiments, goes too. [y/N]: Deleted: experiments"
  done
  ss new experiments >/dev/null
  for answer in n no "" "yes please" "Y E S"; do
    run on_tty --answer "$answer" ss delete experiments
    assert_equal "$status" 1
    assert_output "Delete 'experiments'? This cannot be undone. Its repository, ~/super-sandbox/repositories/experiments, goes too. [y/N]: Not deleted: experiments"
    assert_dir_exists "$P/experiments"
  done
  # End of input (Ctrl-D) keeps it too.
  run on_tty ss delete experiments
  assert_equal "$status" 1
  assert_output "Delete 'experiments'? This cannot be undone. Its repository, ~/super-sandbox/repositories/experiments, goes too. [y/N]: 
Not deleted: experiments"
  assert_dir_exists "$P/experiments"
}

@test "delete: not found is the spec's block, exit 66" {
  for n in client-website my-app; do ss new "$n" >/dev/null; done
  set_times client-website "3 days ago" "1 day ago"
  set_times my-app "3 days ago" "2 hours ago"
  run --separate-stderr ss delete foo --yes
  assert_equal "$status" 66
  assert_equal "$output" ""
  assert_equal "$stderr" "Error: Project 'foo' not found

Available projects:
  my-app
  client-website

Create a new project:
  ss new foo"
  rm -rf "$P"
  run --separate-stderr ss delete foo
  assert_equal "$status" 66
  assert_equal "$stderr" "Error: Project 'foo' not found

Create a new project:
  ss new foo"
}

@test "delete: says the GitHub repository is kept" {
  stub_gh
  PATH="$STUBS:$PATH" ss new my-api --github >/dev/null
  : > "$GH_LOG"
  PATH="$STUBS:$PATH" run --separate-stderr ss delete my-api --yes
  assert_success
  assert_output "Deleted: my-api
The GitHub repository octo/my-api was not deleted."
  assert_equal "$(cat "$GH_LOG")" ""
}

@test "delete: never follows a symbolic link out of the projects folder" {
  outside="$BATS_TEST_TMPDIR/outside"
  mkdir -p "$outside/keep"
  echo precious > "$outside/keep/file"
  ss new victim >/dev/null
  ln -s "$outside" "$P/victim/dir-link"
  ln -s "$outside/keep/file" "$P/victim/file-link"
  ln -s "$outside" "$P/victim/.ss/sneaky"
  run ss delete victim --yes
  assert_success
  assert_equal "$(cat "$outside/keep/file")" "precious"

  ln -s "$outside" "$P/evil"
  run --separate-stderr ss delete evil --yes
  assert_equal "$status" 66
  assert_equal "$stderr" "ss-project: error: 'evil' is not a project: ~/super-sandbox/projects/evil is a symbolic link
hint: ss does not follow or remove it; move it away yourself"
  assert [ -L "$P/evil" ]
  assert_equal "$(cat "$outside/keep/file")" "precious"
  for bad in ../outside "../../outside" /etc; do
    run --separate-stderr ss delete "$bad" --yes
    assert_equal "$status" 65
  done
  assert_equal "$(cat "$outside/keep/file")" "precious"
}

@test "delete: a project holding a tree deeper than any path, with the usual open-files limit" {
  # What a sandbox can make in a shared project: 5,000 folders of 200-byte names, a path of 1 MB
  # (PATH_MAX is 4 KB), more levels than the 1,024 files a process may usually open.
  ss new deep >/dev/null
  python3 - "$P/deep" <<'PY'
import os, sys
at = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(5000):
    os.mkdir("d" * 200, dir_fd=at)
    below = os.open("d" * 200, os.O_RDONLY, dir_fd=at)
    os.close(at)
    at = below
open(f"/proc/self/fd/{at}/last", "w").close()
PY
  run --separate-stderr bash -c 'ulimit -n 1024 && ss delete deep --yes'
  assert_success
  assert_output "Deleted: deep"
  assert_equal "$stderr" ""
  assert_equal "$(ls -A "$P")" ""
}

@test "delete: usage errors" {
  run --separate-stderr ss delete
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: usage: ss delete NAME [--yes] [--force]
hint: see 'ss delete --help'"
  run --separate-stderr ss delete x1 --github
  assert_equal "$status" 64
  assert_equal "$stderr" "ss-project: error: --github is not an option of 'ss delete'
hint: --github goes with ss new
hint: see 'ss delete --help'"
}

# --- concurrency and crashes -------------------------------------------------------------------

@test "concurrency: 20 distinct news, 20 news of one name, list and delete loops at once" {
  mkdir -p "$P"
  T="$BATS_TEST_TMPDIR/c"
  STOP="$T/stop"
  mkdir -p "$T"
  (
    while [ -d "$T" ] && [ ! -e "$T/stop" ]; do
      ss list > "$T/list.out" 2> "$T/list.err" || echo "ss list exited $?" >> "$T/loop-errors"
      if [ -s "$T/list.err" ]; then cat "$T/list.err" >> "$T/loop-errors"; fi
      ss list --json 2>> "$T/loop-errors" | jq -e '.kind == "ProjectList"' > /dev/null \
        || echo "ss list --json failed" >> "$T/loop-errors"
      echo >> "$T/list.count"
    done
  ) 3>&- &
  list_loop=$!
  (
    i=0
    while [ -d "$T" ] && [ ! -e "$T/stop" ]; do
      i=$((i + 1))
      ss new "churn-$i" > /dev/null 2>> "$T/loop-errors" || echo "new churn-$i failed" >> "$T/loop-errors"
      ss delete "churn-$i" --yes > /dev/null 2>> "$T/loop-errors" || echo "delete churn-$i failed" >> "$T/loop-errors"
      rc=0
      ss delete "never-$i" --yes > /dev/null 2>&1 || rc=$?
      [ "$rc" -eq 66 ] || echo "delete never-$i exited $rc, not 66" >> "$T/loop-errors"
      echo >> "$T/churn.count"
    done
  ) 3>&- &
  delete_loop=$!

  # Three rounds, each: 20 names at once, and 20 runs of one name at once.
  for round in 1 2 3; do
    pids=()
    for i in $(seq 1 20); do
      ( rc=0; ss new "distinct-$round-$i" > "$T/d$round-$i.out" 2> "$T/d$round-$i.err" || rc=$?
        echo $rc > "$T/d$round-$i.rc" ) 3>&- &
      pids+=($!)
      ( rc=0; ss new "same-$round" > "$T/s$round-$i.out" 2> "$T/s$round-$i.err" || rc=$?
        echo $rc > "$T/s$round-$i.rc" ) 3>&- &
      pids+=($!)
    done
    wait "${pids[@]}"
  done
  touch "$STOP"
  wait "$list_loop" "$delete_loop"

  for round in 1 2 3; do
    ok=0
    for i in $(seq 1 20); do
      assert_equal "$(cat "$T/d$round-$i.rc")" 0
      assert_equal "$(head -1 "$T/d$round-$i.out")" "Created: ~/super-sandbox/projects/distinct-$round-$i"
      rc=$(cat "$T/s$round-$i.rc")
      if [ "$rc" = 0 ]; then
        ok=$((ok + 1))
      else
        assert_equal "$rc" 73
        assert_equal "$(cat "$T/s$round-$i.err")" "Error: Project 'same-$round' already exists

Open it:
  ss same-$round

Or choose a different name:
  ss new same-$round-v2"
        assert_equal "$(cat "$T/s$round-$i.out")" ""
      fi
    done
    assert_equal "$ok" 1
  done
  assert_equal "$(cat "$T/loop-errors" 2>/dev/null)" ""
  lists=$(wc -l < "$T/list.count")
  churns=$(wc -l < "$T/churn.count")
  echo "# meanwhile: $lists list rounds, $churns new+delete rounds" >&3
  [ "$lists" -gt 0 ] && [ "$churns" -gt 0 ]

  run --separate-stderr ss list --json
  assert_equal "$stderr" ""
  echo "$output" | jq -e '[.items[].name] | sort ==
    ([range(1; 4) as $r | "same-\($r)", (range(1; 21) | "distinct-\($r)-\(.)")] | sort)'
  for d in "$P"/*; do
    jq -e '.created and .lastAccessed' "$d/.ss/metadata.json" > /dev/null
    assert_equal "$(git -C "$d" log --format=%s)" "Initial commit from Super-Sandbox"
  done
  assert_equal "$(ls -A "$P" | grep -c '^\.')" 0
}

@test "kill -9 at random points of ss new never leaves a broken project" {
  mkdir -p "$P"
  for i in $(seq 1 40); do
    "$SSP" new "killed-$i" > /dev/null 2>&1 3>&- &
    pid=$!
    sleep "$(printf '0.%03d' $(( RANDOM % 80 )))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Let the git children of killed runs finish.
  sleep 1
  run --separate-stderr ss list --json
  assert_success
  assert_equal "$stderr" ""
  count=$(echo "$output" | jq '.items | length')
  echo "# $count of 40 runs had finished when killed" >&3
  for name in $(echo "$output" | jq -r '.items[].name'); do
    d="$P/$name"
    jq -e '.created and .lastAccessed' "$d/.ss/metadata.json" > /dev/null
    assert_file_exists "$d/AGENTS.md"
    assert_file_exists "$d/README.md"
    assert_file_exists "$d/.gitignore"
    assert_equal "$(git -C "$d" log --format=%s)" "Initial commit from Super-Sandbox"
    assert_equal "$(git -C "$d" status --porcelain)" ""
  done
  # Only whole projects and, until collected, hidden leftovers: a name is either listed or absent.
  for name in $(ls "$P"); do
    echo "$output" | jq -e --arg n "$name" 'any(.items[]; .name == $n)' > /dev/null
  done
  # ss list (above) collected what the killed runs left; nothing hidden remains, and no
  # repository is left staged.
  ss list > /dev/null
  assert_equal "$(ls -A "$P" | grep -c '^\.new-')" 0
  assert_equal "$(ls -A "$SS_HOME/repositories" | grep -c '^\.new-')" 0
  # And a new project of a killed name works.
  run ss new killed-1
  [ "$status" -eq 0 ] || [ "$status" -eq 73 ]
}

@test "a maker killed between placing a project and its repository: the next run puts it in place" {
  ss new placed
  ss new orphan
  # As ss new leaves them when killed after the project is in place: its repository staged
  # under the hidden folder's name, and, for a project then removed, one with no project.
  mv "$SS_HOME/repositories/placed" "$SS_HOME/repositories/.new-placed.0123456789ab"
  mv "$SS_HOME/repositories/orphan" "$SS_HOME/repositories/.new-orphan.0123456789ab"
  rm -rf "$P/orphan"
  # Still being made (its hidden folder there): left alone.
  mkdir "$P/.new-making.feedfacecafe" "$SS_HOME/repositories/.new-making.feedfacecafe"
  flock "$P/.new-making.feedfacecafe" sleep 30 &
  sleep 0.2
  run --separate-stderr ss list --json
  assert_success
  assert_equal "$stderr" ""
  assert_equal "$(echo "$output" | jq -r '[.items[].name] | join(" ")')" "placed"
  assert_equal "$(git -C "$P/placed" log --format=%s)" "Initial commit from Super-Sandbox"
  assert_equal "$(ls -A "$SS_HOME/repositories" | grep -v '^\.all-held$' | sort | tr '\n' ' ')" \
    ".new-making.feedfacecafe placed "
  kill %1
  wait
  # ss delete says what goes: the repository, put in place first.
  mv "$SS_HOME/repositories/placed" "$SS_HOME/repositories/.new-placed.0123456789ab"
  run on_tty --answer y ss delete placed
  assert_success
  assert_output "Delete 'placed'? This cannot be undone. Its repository, ~/super-sandbox/repositories/placed, goes too. [y/N]: Deleted: placed"
  assert_equal "$(ls -A "$SS_HOME/repositories" | grep -c placed)" 0
}

@test "kill -9 during ss delete leaves the whole project or nothing listed" {
  kept=0
  for i in $(seq 1 8); do
    ss new "big-$i" > /dev/null
    mkdir -p "$P/big-$i/many"
    for f in $(seq 1 3000); do : > "$P/big-$i/many/f$f"; done
    "$SSP" delete "big-$i" --yes > /dev/null 2>&1 3>&- &
    pid=$!
    sleep "$(printf '0.%03d' $(( RANDOM % 40 )))"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    run --separate-stderr ss list --json
    assert_success
    assert_equal "$stderr" ""
    if echo "$output" | jq -e --arg n "big-$i" 'any(.items[]; .name == $n)' > /dev/null; then
      # Still listed: still whole.
      kept=$((kept + 1))
      assert_equal "$(ls "$P/big-$i/many" | wc -l)" 3000
      assert_equal "$(git -C "$P/big-$i" log --format=%s)" "Initial commit from Super-Sandbox"
    else
      assert_file_not_exists "$P/big-$i"
    fi
  done
  echo "# $kept of 8 projects were still whole when their delete was killed" >&3
  # What the killed runs left hidden was collected by those list runs.
  assert_equal "$(ls -A "$P" | grep -c '^\.del-')" 0
}

# --- help, man page, completion ----------------------------------------------------------------

@test "--help: usage on stdout, exit 0, from every form" {
  run --separate-stderr "$SSP" --help
  assert_success
  assert_line --index 0 "usage: ss new NAME [--from PATH] [--github [--private]] [--copy]"
  help="$output"
  for form in "ss new --help" "ss list -h" "ss delete --help" "ss project show --help" "ss project --help"; do
    run $form
    assert_success
    assert_equal "$output" "$help"
  done
}

@test "every option in --help is in the man page, and the other way round" {
  help_opts=$("$SSP" --help | sed -n '/^Options:/,$p' | grep -oE -- '(^|[ ,])--?[a-z][a-z-]*' \
    | tr -d ' ,' | sort -u)
  man_opts=$(sed -n '/^# OPTIONS/,/^# /p' "$SS_SOURCE_DIR/man/ss-project.1.scd" | grep -E '^\*-' \
    | grep -oE -- '--?[a-z][a-z-]*' | sort -u)
  assert_equal "$man_opts" "$help_opts"
  assert_equal "$(echo "$help_opts" | tr '\n' ' ')" "--copy --folder --force --from --github --help --json --no-size --private --projects --sandbox --yes -h -y "
  for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
    grep -qx "# $section" "$SS_SOURCE_DIR/man/ss-project.1.scd"
  done
  # The synopsis lines are the usage lines.
  "$SSP" --help | sed -n '1,/^$/p' | sed 's/^usage: //; s/^ *//' | sed '/^$/d' > "$BATS_TEST_TMPDIR/usage"
  while read -r line; do
    scd=$(sed 's/\*//g; s/_//g' <<< "$line")
    grep -qxF "$scd" <(sed -n '/^# SYNOPSIS/,/^# DESCRIPTION/p' "$SS_SOURCE_DIR/man/ss-project.1.scd" | sed 's/\*//g; s/_//g')
  done < "$BATS_TEST_TMPDIR/usage"
  # ss(1) documents new, list and delete.
  for verb in "new" "list" "delete"; do
    grep -q "^\*$verb\*" "$SS_SOURCE_DIR/man/ss.1.scd"
  done
  assert_file_exists "$SS_BUILD_DIR/share/man/man1/ss-project.1"
}

@test "--complete: subcommands, flags and project names" {
  ss new my-app >/dev/null
  ss new client-website >/dev/null
  # What each command is, for zsh and fish; bash shows the names alone.
  run "$SSP" --complete ""
  assert_output "$(printf '%s\t%s\n' new "create a project: the scaffold, or a copy of --from" \
    list "the projects, most recently used first" \
    show "one project: its folders, dates, size and GitHub repository" \
    delete "delete a project and its folder" path "the folder of NAME, or of all projects" \
    guard "watch a sandbox's shared folders for repositories")"
  # The candidates' names (what bash offers).
  names() { ss --complete "$@" | cut -f1; }
  run names delete ""
  assert_output "client-website
my-app
--yes
--force
--help"
  run names project show m
  assert_output "client-website
my-app
--json
--help"
  run names new x1 ""
  assert_output "--from
--github
--private
--copy
--help"
  run names new x1 --from ""
  assert_output ""
  run names list ""
  assert_output "--json
--no-size
--help"
}

@test "project path: the folder of a project, or of all; did-you-mean when not found" {
  ss new my-app >/dev/null
  run --separate-stderr ss project path my-app
  assert_success
  assert_output "$SS_HOME/projects/my-app"
  run --separate-stderr ss project path
  assert_output "$SS_HOME/projects"
  run --separate-stderr ss project path my-ap
  assert_equal "$status" 66
  assert_equal "$output" ""
  assert_equal "$stderr" "Error: Project 'my-ap' not found

Did you mean 'my-app'?

Available projects:
  my-app

Create a new project:
  ss new my-ap"
  run --separate-stderr ss project path a b
  assert_equal "$status" 64
  assert_equal "${stderr_lines[0]}" "ss-project: error: unexpected argument 'b'"
  assert_equal "${stderr_lines[1]}" "hint: usage: ss project path [NAME]"
  run --separate-stderr ss project path Bad
  assert_equal "$status" 65
}
