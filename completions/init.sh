# ss shell integration for {{shell}}: eval "$(ss init {{shell}})" in your shell's rc file.
# `ss cd [PROJECT]` changes this shell's directory to the project (or to the projects folder);
# every other call runs the ss command unchanged, so iproute2's `ss -tlnp` still reaches it.
ss() {
  if [ "${1-}" = cd ]; then
    shift
    local __ss_dir
    __ss_dir=$({{ss}} project path "$@") || return
    builtin cd -- "$__ss_dir" || return
  else
    command ss "$@"
  fi
}
