# ss: the sandbox user's bash setup. Provisioning installs this file and sources it from
# ~/.bashrc between "# >>> ss >>>" markers; shell/ss.fish is the same for fish.

case ":$PATH:" in *":$HOME/.local/bin:"*) ;; *) PATH="$HOME/.local/bin:$PATH" ;; esac
export PATH

# The agent with full autonomy (the sandbox is what keeps the host safe).
alias cc='claude --dangerously-skip-permissions'
alias cc-resume='claude --dangerously-skip-permissions --continue'
alias cc-prompt='claude --dangerously-skip-permissions -p'

# The project of the current directory under ~/projects or ~/copy-projects (working copies), or
# $1.
__ss_project() {
  if [ -n "${1:-}" ]; then
    printf '%s\n' "$1"
    return
  fi
  local root
  for root in "${SS_PROJECTS:-$HOME/projects}" "${SS_COPIES:-$HOME/copy-projects}"; do
    case $PWD/ in "$root"/?*/*)
      local rest=${PWD#"$root"/}
      printf '%s\n' "${rest%%/*}"
      return
      ;;
    esac
  done
}

# sync-project [PROJECT]: the working copy (~/copy-projects/PROJECT) becomes the source as ss last
# sent it (~/project-src/PROJECT) again: sync-tree --delete, leaving out the paths listed in the sandbox's
# sync exclusion list (one per line; written by provisioning from sync.exclude in config.yaml).
sync-project() {
  local name
  name=$(__ss_project "${1:-}")
  if [ -z "$name" ] || [ $# -gt 1 ]; then
    echo "usage: sync-project [PROJECT]  (inside ~/copy-projects/PROJECT, PROJECT may be left out)" >&2
    return 64
  fi
  local src=${SS_PROJECT_SRC:-$HOME/project-src}/$name
  local dst=${SS_COPIES:-$HOME/copy-projects}/$name
  local exclude=${SS_SYNC_EXCLUDE:-/etc/ss/sync-exclude}
  if [ ! -d "$src" ]; then
    echo "sync-project: no read-only source for '$name' at $src" >&2
    return 66
  fi
  if [ ! -r "$exclude" ]; then
    echo "sync-project: the sync exclusion list $exclude is missing; re-provision the sandbox" >&2
    return 78
  fi
  echo "Syncing $src/ -> $dst/ (excluding: $(grep -v -e '^#' -e '^$' "$exclude" | paste -sd ' '))"
  /usr/local/lib/ss/sync-tree --delete --exclude-from "$exclude" "$src" "$dst"
}

# deploy [DIR]: copies the project's build output to the deploy mount (/mnt/deploy, a host
# folder shared with --deploy DIR), into /mnt/deploy/PROJECT/. The project is the one under
# ~/projects the current directory is in (else the current directory); the output is DIR, else
# the first of dist, build and out in the project. Nothing already there is deleted.
deploy() {
  local target=${SS_DEPLOY_DIR:-/mnt/deploy}
  if [ $# -gt 1 ]; then
    echo "usage: deploy [DIR]  (default: the project's dist, build or out)" >&2
    return 64
  fi
  if [ ! -d "$target" ]; then
    echo "deploy: $target is not mounted; create the sandbox with a deploy folder (--deploy DIR)" >&2
    return 69
  fi
  local name root out=${1:-}
  name=$(__ss_project "")
  if [ -n "$name" ]; then
    root=${SS_PROJECTS:-$HOME/projects}/$name
    case $PWD/ in "${SS_COPIES:-$HOME/copy-projects}"/?*/*) root=${SS_COPIES:-$HOME/copy-projects}/$name ;; esac
  else
    root=$PWD
    name=${PWD##*/}
  fi
  if [ -z "$name" ]; then
    echo "deploy: no project here; run it in the project's folder (~/projects/PROJECT)" >&2
    return 64
  fi
  if [ -z "$out" ]; then
    local d
    for d in dist build out; do
      if [ -d "$root/$d" ]; then
        out=$root/$d
        break
      fi
    done
    if [ -z "$out" ]; then
      echo "deploy: no build output in $root (dist, build or out); name it: deploy DIR" >&2
      return 66
    fi
  elif [ ! -d "$out" ]; then
    echo "deploy: $out is not a directory" >&2
    return 66
  fi
  out=$(realpath -- "$out")
  echo "Deploying $out/ -> $target/$name/"
  /usr/local/lib/ss/sync-tree "$out" "$target/$name"
}
