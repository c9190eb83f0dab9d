#!/usr/bin/env bats
# ss-attach's command line: what it says before it ever needs a sandbox.

load helpers

setup() {
  ss_setup
}

@test "a project that does not exist: the spec's block, exit 66" {
  ss new my-app >/dev/null
  ss new client-website >/dev/null
  run --separate-stderr ss foo
  assert_equal "$status" 66
  assert_equal "$output" ""
  assert_equal "$stderr" "Error: Project 'foo' not found

Available projects:
  client-website
  my-app

Create a new project:
  ss new foo"
}

@test "usage errors exit 64" {
  ss new proj >/dev/null
  run --separate-stderr ss attach
  assert_equal "$status" 64
  [[ "${stderr_lines[0]}" == "usage: ss PROJECT [-t | -- CMD [ARGS...]] [OPTIONS]" ]]
  run --separate-stderr ss proj --bogus
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: unknown option '--bogus'
hint: see 'ss attach --help'"
  run --separate-stderr ss proj --timeout 0
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: --timeout must be a positive number of seconds, not '0'"
  run --separate-stderr ss proj extra
  assert_equal "$status" 64
  run --separate-stderr ss exec proj
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: usage: ss exec [PROJECT] -- CMD [ARGS...]
hint: see 'ss exec --help'"
  run --separate-stderr ss claude-run
  assert_equal "$status" 64
  assert_equal "$stderr" "ss: error: usage: ss claude-run [PROJECT] PROMPT
hint: quote the prompt: ss claude-run my-app 'fix the tests'
hint: see 'ss claude-run --help'"
  run --separate-stderr ss ssh-config a b
  assert_equal "$status" 64
}

@test "--help on stdout, exit 0" {
  run --separate-stderr ss attach --help
  assert_success
  assert_line --index 0 "usage: ss PROJECT [-t | -- CMD [ARGS...]] [OPTIONS]"
  assert_equal "$stderr" ""
}

@test "an agent.command that needs a shell is refused before connecting, exit 78" {
  ss new proj >/dev/null
  ss config set agent.command 'claude | tee log' >/dev/null
  run --separate-stderr ss proj
  assert_equal "$status" 78
  assert_equal "$stderr" "ss: error: agent.command in config.yaml: '|' needs a shell; write plain words, quoted as needed
hint: put a shell pipeline in a script in the sandbox and name the script instead"
}

@test "an invalid --env name is exit 65 before connecting" {
  ss new proj >/dev/null
  run --separate-stderr ss proj --env 'BAD-NAME' -- true
  assert_equal "$status" 65
}

@test "no sandbox to start: the backend's error, exit 69" {
  ss new proj >/dev/null
  run --separate-stderr ss proj -- true
  assert_equal "$status" 69
  assert_equal "${stderr_lines[0]}" "ss: error: no sandbox backend can run on this machine"
}
