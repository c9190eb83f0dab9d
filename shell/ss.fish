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
    for root in (__ss_roots)
        if string match -q -- "$root/?*" $PWD
            string split -m1 / (string replace -- "$root/" '' $PWD)[1]
            return
        end
    end
end

# The shared projects (~/projects) and the working copies (~/copy-projects), as in ss.bash.
function __ss_roots
    set -q SS_PROJECTS; and echo $SS_PROJECTS; or echo $HOME/projects
    set -q SS_COPIES; and echo $SS_COPIES; or echo $HOME/copy-projects
end

# sync-project [PROJECT]: as in ss.bash.
function sync-project --description 'refresh ~/copy-projects/PROJECT from ~/project-src/PROJECT'
    set -l name (__ss_project $argv[1])[1]
    if test -z "$name"; or test (count $argv) -gt 1
        echo "usage: sync-project [PROJECT]  (inside ~/copy-projects/PROJECT, PROJECT may be left out)" >&2
        return 64
    end
    set -l src $HOME/project-src
    set -q SS_PROJECT_SRC; and set src $SS_PROJECT_SRC
    set -l dst (__ss_roots)[2]
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
    /usr/local/lib/ss/sync-tree --delete --exclude-from $exclude $src $dst
end

# deploy [DIR]: as in ss.bash.
function deploy --description 'copy the build output to /mnt/deploy/PROJECT'
    set -l target /mnt/deploy
    set -q SS_DEPLOY_DIR; and set target $SS_DEPLOY_DIR
    if test (count $argv) -gt 1
        echo "usage: deploy [DIR]  (default: the project's dist, build or out)" >&2
        return 64
    end
    if not test -d $target
        echo "deploy: $target is not mounted; create the sandbox with a deploy folder (--deploy DIR)" >&2
        return 69
    end
    set -l out $argv[1]
    set -l name (__ss_project)[1]
    set -l root $PWD
    if test -n "$name"
        set -l roots (__ss_roots)
        set root $roots[1]/$name
        string match -q -- "$roots[2]/?*" $PWD; and set root $roots[2]/$name
    else
        set name (string split -r -m1 / $PWD)[-1]
    end
    if test -z "$name"
        echo "deploy: no project here; run it in the project's folder (~/projects/PROJECT)" >&2
        return 64
    end
    if test -z "$out"
        for d in dist build out
            if test -d $root/$d
                set out $root/$d
                break
            end
        end
        if test -z "$out"
            echo "deploy: no build output in $root (dist, build or out); name it: deploy DIR" >&2
            return 66
        end
    else if not test -d $out
        echo "deploy: $out is not a directory" >&2
        return 66
    end
    set out (realpath -- $out)
    echo "Deploying $out/ -> $target/$name/"
    /usr/local/lib/ss/sync-tree $out $target/$name
end
