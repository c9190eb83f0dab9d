#!/usr/bin/env bats
# The ss dispatcher: verbs, plugins, project names, and iproute2's ss left intact.

load helpers

setup() { ss_setup; }

@test "every binary answers --version the same way" {
  for b in ss-attach ss-config ss-net ss-project ss-snap ss-sync ss-tunnel ss-update ss-vm; do
    run "$SS_BUILD_DIR/libexec/ss/$b" --version
    assert_success
    assert_output --regexp "^$b [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]+|unknown), built [0-9]{4}-[0-9]{2}-[0-9]{2}\)$"
  done
}

@test "every command-line mistake has one shape, and its hint names a help that works" {
  # Each line: a mistake, made through the dispatcher as a user would type it.
  local mistakes=(
    "snap bogus" "snapshot a b" "snapshot delete" "restore" "restore a b" "snapshots x"
    "sync --bogus" "push a" "pull a" "diff --json" "net" "net bogus" "net relay"
    "tunnel --bogus x" "vm bogus" "vm image rm" "vm list --release x" "health-check a b"
    "doctor x" "exec proj" "claude-run" "run a b" "update --bogus" "new" "list x"
    "project show" "delete" "config get" "config bogus" "init" "init bash zsh" "new --gihub x"
  )
  local m help
  for m in "${mistakes[@]}"; do
    # shellcheck disable=SC2086 # the words of the mistake
    run --separate-stderr ss $m </dev/null
    [ "$status" -eq 64 ] || fail "ss $m: exit $status: $stderr"
    [[ "${stderr_lines[0]}" =~ ^ss(-[a-z]+)?:\ error:\  ]] || fail "ss $m: ${stderr_lines[0]}"
    [[ "${stderr_lines[-1]}" =~ ^hint:\ .*see\ \'(ss[a-z -]*)\ --help\'$ ]] ||
      fail "ss $m: the last line names no help: ${stderr_lines[-1]}"
    help=${BASH_REMATCH[1]}
    # shellcheck disable=SC2086
    run --separate-stderr $help --help
    [ "$status" -eq 0 ] || fail "$help --help: exit $status: $stderr"
    [[ "${lines[0]}" == usage:* ]] || fail "$help --help: ${lines[0]}"
  done
}

@test "--version prints version, commit and build date" {
  run ss --version
  assert_success
  assert_output --regexp '^ss [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]+|unknown, built [0-9]{4}-[0-9]{2}-[0-9]{2}\)$'
}

@test "--help prints usage on stdout" {
  run --separate-stderr ss --help
  assert_success
  assert_line --index 0 --regexp '^usage: ss '
  [ -z "$stderr" ]
}

@test "a typo of a verb exits 64 with did-you-mean" {
  run --separate-stderr ss statu
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: 'statu' is not an ss command. See 'ss --help'.
Did you mean 'status'?"
  assert_equal "$output" ""
}

@test "a word that is neither a verb nor a project name exits 64" {
  run --separate-stderr ss Foo_Bar
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: 'Foo_Bar' is not an ss command. See 'ss --help'."
}

@test "spec verbs route to their binary with the verb as first argument" {
  for b in ss-project ss-vm ss-config; do stub "$b" 'printf "%s\n" "$(basename "$0")" "$@"'; done
  export SS_EXEC_PATH="$STUBS"
  run ss new my-api --github
  assert_output "ss-project
new
my-api
--github"
  run ss list; assert_output "ss-project
list"
  run ss delete x --yes; assert_output "ss-project
delete
x
--yes"
  run ss status --json; assert_output "ss-vm
status
--json"
  run ss stop; assert_output "ss-vm
stop"
  run ss reset; assert_output "ss-vm
reset"
  # The LXD spec's verbs: restart, and destroy for ss vm delete.
  run ss restart; assert_output "ss-vm
restart"
  run ss destroy --yes; assert_output "ss-vm
delete
--yes"
  run ss config set cpus 2; assert_output "ss-config
set
cpus
2"
}

@test "a project name goes to ss-attach with argv exact" {
  stub ss-attach 'for a in "$@"; do printf "[%s]" "$a"; done'
  export SS_EXEC_PATH="$STUBS"
  run ss my-app -- echo 'a b' '$HOME' '' '*'
  assert_success
  assert_output '[my-app][--][echo][a b][$HOME][][*]'
}

@test "an existing project wins over a did-you-mean" {
  mkdir -p "$SS_HOME/projects/statu"
  stub ss-attach 'echo "attach $*"'
  export SS_EXEC_PATH="$STUBS"
  run ss statu
  assert_success
  assert_output "attach statu"
}

@test "exit status and signals pass through (exec, not fork)" {
  stub ss-foo 'echo $$ > "$BATS_TEST_TMPDIR/pid"; exit 42'
  PATH="$STUBS:$PATH" run ss foo
  assert_equal "$status" 42
  stub ss-bar 'kill -TERM $$'
  PATH="$STUBS:$PATH" run ss bar
  assert_equal "$status" 143
  PATH="$STUBS:$PATH" ss foo & pid=$!
  wait $pid || true
  assert_equal "$(cat "$BATS_TEST_TMPDIR/pid")" "$pid"
}

@test "third-party plugins on PATH work and are listed by 'ss commands'" {
  stub ss-hello 'echo "hello $*"'
  PATH="$STUBS:$PATH" run ss hello world
  assert_success
  assert_output "hello world"
  PATH="$STUBS:$PATH" run ss commands
  assert_success
  assert_line --regexp "^config	"
  assert_line --regexp "^hello	plugin: $STUBS/ss-hello$"
}

@test "SS_TRACE=1 prints the exec line on stderr" {
  run --separate-stderr env SS_TRACE=1 ss config get vm.cpus
  assert_success
  assert_equal "$stderr" "ss: exec: $SS_BUILD_DIR/bin/../libexec/ss/ss-config get vm.cpus"
}

@test "a verb whose binary is missing says so" {
  export SS_EXEC_PATH="$STUBS"
  PATH="$SS_BUILD_DIR/bin:/usr/bin:/bin" run --separate-stderr ss tunnel
  if [ -x "$SS_BUILD_DIR/libexec/ss/ss-tunnel" ]; then skip "ss-tunnel is built"; fi
  assert_equal "$status" 69
  assert_equal "${stderr_lines[0]}" "ss: error: 'tunnel' is provided by ss-tunnel, which is not installed"
}

@test "help VERB opens the verb's manual page" {
  stub man 'echo "man $*"'
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss help config
  assert_success
  assert_output --regexp '^man (-l .*/man5/ss-config\.5|5 ss-config)$'
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run ss help
  assert_output --regexp '^man (-l .*/man1/ss\.1|1 ss)$'
  PATH="$SS_BUILD_DIR/bin:$STUBS:/usr/bin:/bin" run --separate-stderr ss help statu
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: no manual page for 'statu': it is not an ss command
hint: did you mean 'status'?"
}
