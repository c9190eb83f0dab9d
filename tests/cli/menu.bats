#!/usr/bin/env bats
# The spec's menus, in a real terminal (tmux): the project menu of a bare `ss`, the first-run
# flow and the Settings menu of `ss config`, bad input at every prompt; without a terminal they
# print usage and exit 64. No sandbox backend can run here (lxc is a stub that fails), so
# choosing a project ends at the backend's error, after the choice was made.

load helpers

setup() {
  ss_setup
  # What the terminal runs: the environment of this test, then CMD, then a marker with its status.
  cat >"$BATS_TEST_TMPDIR/run.sh" <<RUN
export HOME='$HOME' SS_HOME='$SS_HOME' PATH='$PATH' SS_NO_UPDATE=1 TERM=xterm
"\$@"
echo "[exit \$?]"
sleep 600
RUN
}

teardown() { term_stop; }

# project NAME AGO_SECONDS: a project last opened AGO_SECONDS ago.
project() {
  ss new "$1" >/dev/null
  local t
  t=$(date -u -d "@$(($(date +%s) - $2))" +%Y-%m-%dT%H:%M:%SZ)
  printf '{"created": "%s", "lastAccessed": "%s"}\n' "$t" "$t" >"$SS_HOME/projects/$1/.ss/metadata.json"
}

menu() { term_start bash "$BATS_TEST_TMPDIR/run.sh" "$@"; }

@test "ss: the spec's project menu; bad input is explained; a number opens that project" {
  project experiments $((3 * 86400))
  project my-app 7200
  project client-website 86400
  menu ss
  term_wait "Select [1-3/n/s/q]:"
  term_screen | grep -A15 '╭' | head -15 >"$BATS_TEST_TMPDIR/box"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/box")" "╭───────────────────────────────────────────────────────────╮
│  Super-Sandbox                                            │
│                                                           │
│  Projects:                                                │
│    1. my-app                         (last: 2h ago)       │
│    2. client-website                 (last: 1d ago)       │
│    3. experiments                    (last: 3d ago)       │
│                                                           │
│  ──────────────────────────────────────────────────────── │
│                                                           │
│  [n] New project                                          │
│  [s] Settings                                             │
│  [q] Quit                                                 │
│                                                           │
╰───────────────────────────────────────────────────────────╯"
  term_keys "x" Enter
  term_wait "Invalid choice 'x'. Enter a number from 1 to 3, n, s or q."
  term_keys "4" Enter
  term_wait "Invalid choice '4'."
  term_keys Enter
  term_wait "Invalid choice ''."
  term_keys "2" Enter
  term_wait "[exit 69]"
  term_screen | grep -q "ss: error: no sandbox backend can run on this machine"
  # The choice opened client-website: it is now the most recently used project.
  run ss list --json --no-size
  [ "$(echo "$output" | jq -r '.items | max_by(.last_accessed) | .name')" = client-website ]
}

@test "ss: q quits, end of input quits, n creates a project (bad names asked again)" {
  project my-app 60
  menu ss
  term_wait "Select [1/n/s/q]:"
  term_keys "q" Enter
  term_wait "[exit 0]"
  term_stop
  menu ss
  term_wait "Select [1/n/s/q]:"
  term_keys C-d
  term_wait "[exit 0]"
  term_stop
  menu ss
  term_wait "Select [1/n/s/q]:"
  term_keys "n" Enter
  term_wait "Project name:"
  term_keys "Bad Name" Enter
  term_wait "ss: error:"
  term_keys "my-app" Enter
  term_wait "Project 'my-app' already exists"
  term_keys "second-one" Enter
  term_wait "[exit 69]"
  term_screen | grep -q "Created: ~/super-sandbox/projects/second-one"
  assert_dir_exists "$SS_HOME/projects/second-one"
}

@test "ss: first run asks for a name inside the box, creates the project and opens it" {
  menu ss
  term_wait "Project name:"
  term_keys "Bad Name" Enter
  term_wait "Use 2-50 lowercase letters, digits and hyphens."
  term_keys Enter
  term_wait "Type a name, such as my-first-project."
  term_keys "my-first-project" Enter
  term_wait "[exit 69]"
  term_screen >"$BATS_TEST_TMPDIR/screen"
  # The answers are drawn back into the box, which is closed before the project is created.
  grep -q "^│  No projects yet. Create one:                             │$" "$BATS_TEST_TMPDIR/screen"
  grep -q "^│  Project name: Bad Name                                   │$" "$BATS_TEST_TMPDIR/screen"
  grep -q "^│  Project name: my-first-project                           │$" "$BATS_TEST_TMPDIR/screen"
  grep -A3 "Project name: my-first-project" "$BATS_TEST_TMPDIR/screen" | grep -q "^╰"
  grep -q "^Created: ~/super-sandbox/projects/my-first-project$" "$BATS_TEST_TMPDIR/screen"
  assert_dir_exists "$SS_HOME/projects/my-first-project"
  [ ! -e "$SS_HOME/projects/Bad Name" ]
}

@test "ss config: the Settings box; [1] adjusts resources with bad values asked again; [b] goes back" {
  menu ss config
  term_wait "Select [1-3/b]:"
  term_screen | grep -q "^│  Settings  "
  term_screen | grep -q "^│    Memory:    8 GB  "
  term_screen | grep -q "^│  \[3\] Factory reset (deletes everything)  "
  term_keys "7" Enter
  term_wait "Invalid choice '7'. Enter 1, 2, 3 or b."
  term_keys "1" Enter
  term_wait "CPUs ["
  term_keys Enter
  term_wait "Memory ["
  term_keys "lots" Enter
  term_wait "is not a size"
  term_keys "16GB" Enter
  term_wait "Memory set to 16 GB. Restart VM to apply."
  term_keys Enter
  term_wait "Memory:    16 GB"
  term_keys "b" Enter
  term_wait "[exit 0]"
  run ss config get memory
  assert_output "16GB"
  # Enter kept the CPUs: still the default, not written to the file.
  run ss config get cpus --json
  assert_equal "$(echo "$output" | jq .set)" false
}

@test "ss config: factory reset needs the typed confirmation, then deletes everything" {
  project my-app 60
  ss config set cpus 2 >/dev/null
  menu ss config
  term_wait "Select [1-3/b]:"
  term_keys "3" Enter
  term_wait "Continue? [y/N]:"
  term_keys "y" Enter
  term_wait "Type 'delete everything' to confirm:"
  term_keys "delete" Enter
  term_wait "Cancelled: nothing was deleted."
  assert_dir_exists "$SS_HOME/projects/my-app"
  term_wait "Select [1-3/b]:"
  term_keys "3" Enter
  term_keys "n" Enter
  term_wait "Cancelled."
  assert_dir_exists "$SS_HOME/projects/my-app"
  term_keys "3" Enter
  term_keys "y" Enter
  term_keys "delete everything" Enter
  term_wait "[exit 0]"
  term_screen | grep -q "Factory reset done: deleted ~/super-sandbox."
  assert_not_exists "$SS_HOME"
}

@test "ss: settings from the project menu, and back" {
  project my-app 60
  menu ss
  term_wait "Select [1/n/s/q]:"
  term_keys "s" Enter
  term_wait "Select [1-3/b]:"
  term_keys "b" Enter
  sleep 0.3
  [ "$(term_screen | grep -c 'Select \[1/n/s/q\]:')" -eq 2 ]
}

@test "without a terminal the menus print usage and exit 64" {
  ss new my-app >/dev/null
  run --separate-stderr ss attach </dev/null
  assert_equal "$status" 64
  [[ "${stderr_lines[0]}" == "usage: ss PROJECT"* ]]
  run --separate-stderr ss config </dev/null
  assert_equal "$status" 64
  [[ "${stderr_lines[0]}" == "usage: ss config"* ]]
  run --separate-stderr "$SS_BUILD_DIR/libexec/ss/ss-attach" </dev/null
  assert_equal "$status" 64
}
