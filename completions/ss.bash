# bash completion for ss (ss-completion). The candidates come from the binaries (`ss --complete
# WORD...`). iproute2's socket tool shares the name: when the first word is an option (iproute2's),
# the distribution's completion for iproute2's ss handles the line. That is the one registered
# before this file was read, or else the first other `ss` completion file, read on first use.
__ss_iproute2=$(complete -p ss 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[[ $__ss_iproute2 == _ss_main ]] && __ss_iproute2=

__ss_load_iproute2() {
  local dir f
  local IFS=:
  for dir in ${XDG_DATA_DIRS:-/usr/local/share:/usr/share} /usr/share; do
    f=$dir/bash-completion/completions/ss
    [[ -r $f ]] && ! grep -q ss-completion "$f" || continue
    # shellcheck disable=SC1090
    source "$f"
    __ss_iproute2=$(complete -p ss 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
    [[ $__ss_iproute2 == _ss_main ]] && __ss_iproute2=
    complete -F _ss_main ss
    return 0
  done
  return 1
}

# iproute2's ss binary: its completion runs "$1 --help", which must not be ours.
__ss_iproute2_bin() {
  local bin
  for bin in $(type -P -a ss) /usr/bin/ss /bin/ss /usr/sbin/ss /sbin/ss; do
    [[ $("$bin" --version 2>/dev/null) == "ss utility"* ]] && { echo "$bin"; return; }
  done
  echo ss
}

_ss_main() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  if [[ $COMP_CWORD -ge 1 && ${COMP_WORDS[1]} == -* && ${COMP_WORDS[1]} != --help && ${COMP_WORDS[1]} != --version ]]; then
    [[ -n $__ss_iproute2 ]] || __ss_load_iproute2
    [[ -n $__ss_iproute2 ]] && "$__ss_iproute2" "$(__ss_iproute2_bin)" "${@:2}"
    return
  fi
  local IFS=$'\n'
  # A candidate may carry a description after a tab (for zsh and fish): bash shows none.
  local -a candidates
  candidates=($(command ss --complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  COMPREPLY=($(compgen -W "${candidates[*]%%$'\t'*}" -- "$cur"))
}
complete -F _ss_main ss
