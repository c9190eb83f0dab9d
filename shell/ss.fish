# ss: the sandbox user's fish setup. Provisioning installs this file and sources it from
# ~/.config/fish/config.fish between "# >>> ss >>>" markers; shell/ss.bash is the same for bash.

fish_add_path -g $HOME/.local/bin

alias cc 'claude --dangerously-skip-permissions'
alias cc-resume 'claude --dangerously-skip-permissions --continue'
alias cc-prompt 'claude --dangerously-skip-permissions -p'

function __ss_project
    if test -n "$argv[1]"
        echo $argv[1]
        return
    end
    set -l root $HOME/projects
    set -q SS_PROJECTS; and set root $SS_PROJECTS
    string match -q -- "$root/?*" $PWD; or return
    string split -m1 / (string replace -- "$root/" '' $PWD)[1]
end

# sync-project [PROJECT]: as in ss.bash.
function sync-project --description 'refresh ~/projects/PROJECT from ~/project-src/PROJECT'
    set -l name (__ss_project $argv[1])[1]
    if test -z "$name"; or test (count $argv) -gt 1
        echo "usage: sync-project [PROJECT]  (inside ~/projects/PROJECT, PROJECT may be left out)" >&2
        return 64
    end
    set -l src $HOME/project-src
    set -q SS_PROJECT_SRC; and set src $SS_PROJECT_SRC
    set -l dst $HOME/projects
    set -q SS_PROJECTS; and set dst $SS_PROJECTS
    set -l exclude /etc/ss/sync-exclude
    set -q SS_SYNC_EXCLUDE; and set exclude $SS_SYNC_EXCLUDE
    set src $src/$name
    set dst $dst/$name
    if not test -d $src
        echo "sync-project: no read-only source for '$name' at $src" >&2
        return 66
    end
    if not test -r $exclude
        echo "sync-project: the sync exclusion list $exclude is missing; re-provision the sandbox" >&2
        return 78
    end
    echo "Syncing $src/ -> $dst/ (excluding: "(string match -rv '^(#|$)' < $exclude | string join ' ')")"
    mkdir -p $dst; and rsync -a --delete --exclude-from=$exclude $src/ $dst/
end

# deploy [DIR]: as in ss.bash.
function deploy --description 'copy the build output to /mnt/deploy'
    set -l target /mnt/deploy
    set -q SS_DEPLOY_DIR; and set target $SS_DEPLOY_DIR
    set -l out $argv[1]
    if not test -d $target
        echo "deploy: $target is not mounted; create the sandbox with a deploy folder (--deploy DIR)" >&2
        return 69
    end
    if test -z "$out"
        for d in dist build out public
            if test -d $d
                set out $d
                break
            end
        end
    end
    if test -z "$out"; or not test -d $out
        echo "deploy: no build output here (dist, build, out or public); name it: deploy DIR" >&2
        return 66
    end
    echo "Deploying $out/ -> $target/"
    rsync -a $out/ $target/
end
