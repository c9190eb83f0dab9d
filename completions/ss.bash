# bash completion for ss. iproute2's socket tool shares the name: when the first word is an
# option (iproute2's), the completion that was registered for `ss` before this one handles it.
_ss_iproute2_completion=$(complete -p ss 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')

_ss() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $COMP_CWORD -ge 1 && ${COMP_WORDS[1]} == -* && ${COMP_WORDS[1]} != --help && ${COMP_WORDS[1]} != --version ]]; then
    if [[ -n $_ss_iproute2_completion && $_ss_iproute2_completion != _ss ]]; then
      "$_ss_iproute2_completion" "$@"
    fi
    return
  fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$(command ss --complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)" -- "$cur"))
}
complete -F _ss ss
