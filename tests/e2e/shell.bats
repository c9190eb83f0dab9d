#!/usr/bin/env bats
# The sandbox user's shell (shell/): provisioning installs the bash and fish config between
# markers (re-provisioning replaces the block), fish as the login shell with --fish, the cc
# aliases and PATH, sync-project with the exclusion list from config.yaml, deploy. One real LXD
# sandbox for the file.

load helpers

setup_file() {
  e2e_home
  export SANDBOX="ui-shell-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  ss vm setup --backend lxd >/dev/null
  ss vm image build >/dev/null 2>&1
  ss config set sandboxes.$SANDBOX.backend lxd >/dev/null
  ss config set sync.exclude node_modules,.git,dist,build,tmp >/dev/null
  ss vm start --sandbox "$SANDBOX" --fish >/dev/null 2>&1
}

teardown_file() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  pkill -f -- "--share-master $SANDBOX" || true
  tmux -S "$E2E_ROOT/tmux-fish.sock" kill-server 2>/dev/null || true
  ss vm delete --sandbox "$SANDBOX" --yes --force >/dev/null 2>&1 || true
  e2e_home_remove
}

setup() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  export SS_SANDBOX="$SANDBOX"
}

@test "fish is the login shell; the config is sourced between markers, once, after re-provisioning too" {
  run ss exec -- getent passwd sandbox
  assert_success
  [[ "$output" == *":/usr/bin/fish" ]]
  for round in 1 2; do
    run ss exec -- grep -c '^# >>> ss >>>$' /home/sandbox/.bashrc /home/sandbox/.config/fish/config.fish
    assert_output $'/home/sandbox/.bashrc:1\n/home/sandbox/.config/fish/config.fish:1'
    # Debian's own .bashrc is kept around the block.
    run ss exec -- grep -c HISTCONTROL /home/sandbox/.bashrc
    assert_output "1"
    run ss exec -- sudo /usr/local/lib/ss/install-shell sandbox fish
    assert_success
  done
  run ss exec -- stat -c %U /home/sandbox/.bashrc /home/sandbox/.config/fish/config.fish
  assert_output $'sandbox\nsandbox'
}

@test "fish as the login shell: a project's -- CMD, -t, --env and secrets work; statuses come back" {
  ss new fish-app >/dev/null
  export SS_FISH_ENV="a b 'c' \\ \\\\ \$d \"e\" {x,y} *"
  run --separate-stderr ss fish-app --env SS_FISH_ENV -- sh -c 'printf "%s|%s" "$SS_FISH_ENV" "$PWD"; exit 3'
  [[ "$stderr" != *fish:* ]]
  assert_equal "$status" 3
  assert_equal "$output" "$SS_FISH_ENV|/home/sandbox/projects/fish-app"
  export SS_FISH_SECRET="s3cr3t-$RANDOM-'\\"
  ss config set secrets SS_FISH_SECRET >/dev/null
  run --separate-stderr ss fish-app -- printenv SS_FISH_SECRET
  ss config set secrets '' >/dev/null
  assert_success
  assert_equal "$output" "$SS_FISH_SECRET"
  # -t: fish in the project, in a real terminal, with the variable; its exit status comes back.
  sock="$E2E_ROOT/tmux-fish.sock"
  tmux -S "$sock" new-session -d -s t -x 120 -y 30 \
    "ss fish-app -t --env SS_FISH_ENV; echo ss-exit=\$?; sleep 60"
  screen() { tmux -S "$sock" capture-pane -p -t t; }
  for _ in $(seq 100); do screen | grep -q '>' && break; sleep 0.2; done
  tmux -S "$sock" send-keys -t t 'echo in:(pwd):(string length -- $SS_FISH_ENV)' Enter
  for _ in $(seq 100); do screen | grep -q '^in:' && break; sleep 0.2; done
  run screen
  assert_line "in:/home/sandbox/projects/fish-app:${#SS_FISH_ENV}"
  refute_output --partial "not a valid variable"
  refute_output --partial "Missing end"
  tmux -S "$sock" send-keys -t t 'exit 5' Enter
  for _ in $(seq 100); do screen | grep -q '^ss-exit=' && break; sleep 0.2; done
  run screen
  tmux -S "$sock" kill-server 2>/dev/null || true
  assert_line "ss-exit=5"
}

@test "cc, cc-resume and cc-prompt run the agent with skipped permissions, in bash and fish" {
  ss exec -- sh -c 'mkdir -p ~/.local/bin && printf "#!/bin/sh\necho agent: \"\$@\"\n" > ~/.local/bin/claude && chmod 755 ~/.local/bin/claude'
  run ss exec -- bash -ic 'cc-prompt "fix the tests"; cc-resume; cc'
  assert_line "agent: --dangerously-skip-permissions -p fix the tests"
  assert_line "agent: --dangerously-skip-permissions --continue"
  assert_line "agent: --dangerously-skip-permissions"
  run ss exec -- fish -c 'cc-prompt "fix the tests"; cc-resume; cc'
  assert_line "agent: --dangerously-skip-permissions -p fix the tests"
  assert_line "agent: --dangerously-skip-permissions --continue"
  assert_line "agent: --dangerously-skip-permissions"
}

@test "sync-project: rsync --delete with the exclusion list from config.yaml, the same in bash and fish" {
  run ss exec -- grep -v '^#' /etc/ss/sync-exclude
  assert_output $'node_modules\n.git\ndist\nbuild\ntmp'
  for sh in bash fish; do
    ss exec -- sh -c 'rm -rf ~/project-src/demo ~/copy-projects/demo &&
      mkdir -p ~/project-src/demo/src ~/project-src/demo/node_modules/x ~/project-src/demo/tmp ~/copy-projects/demo/node_modules/keep &&
      echo new > ~/project-src/demo/src/a && echo junk > ~/project-src/demo/tmp/t &&
      echo stale > ~/copy-projects/demo/stale'
    if [ "$sh" = bash ]; then
      run ss exec -- bash -ic 'cd ~/copy-projects/demo/node_modules && sync-project'
    else
      run ss exec -- fish -c 'cd ~/copy-projects/demo/node_modules; and sync-project'
    fi
    assert_success
    assert_line "Syncing /home/sandbox/project-src/demo/ -> /home/sandbox/copy-projects/demo/ (excluding: node_modules .git dist build tmp)"
    run ss exec -- sh -c 'cd ~/copy-projects/demo && find . | sort'
    assert_output $'.\n./node_modules\n./node_modules/keep\n./src\n./src/a'
  done
  run ss exec -- bash -ic 'sync-project nope'
  assert_failure 66
  assert_line "sync-project: no read-only source for 'nope' at /home/sandbox/project-src/nope"
  run ss exec -- fish -c 'sync-project'
  assert_failure 64
}

@test "deploy copies the build output to the deploy mount, or says it is not mounted" {
  run ss exec -- bash -ic 'cd ~ && deploy'
  assert_failure 69
  assert_line "deploy: /mnt/deploy is not mounted; create the sandbox with a deploy folder (--deploy DIR)"
  run ss exec -- fish -c 'cd ~; deploy'
  assert_failure 69
  assert_line "deploy: /mnt/deploy is not mounted; create the sandbox with a deploy folder (--deploy DIR)"
  ss exec -- sh -c 'rm -rf ~/site ~/out && mkdir -p ~/site/dist ~/site/out ~/out && echo page > ~/site/dist/index.html && echo other > ~/site/out/o.txt'
  run ss exec -- bash -ic 'cd ~/site && SS_DEPLOY_DIR=~/out deploy'
  assert_success
  assert_line "Deploying /home/sandbox/site/dist/ -> /home/sandbox/out/site/"
  run ss exec -- fish -c 'cd ~/site; set -x SS_DEPLOY_DIR ~/out; deploy out'
  assert_success
  assert_line "Deploying /home/sandbox/site/out/ -> /home/sandbox/out/site/"
  run ss exec -- sh -c 'cd ~/out && find . -type f | sort'
  assert_output $'./site/index.html\n./site/o.txt'
  run ss exec -- bash -ic 'cd ~/out && SS_DEPLOY_DIR=~/out deploy'
  assert_failure 66
  assert_line "deploy: no build output in /home/sandbox/out (dist, build or out); name it: deploy DIR"
}
