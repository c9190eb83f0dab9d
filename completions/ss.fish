# fish completion for ss. The candidates come from the binaries (`ss --complete WORD...`), a
# description after a tab where there is one.
# iproute2's socket tool shares the name: a line whose first word is an option is iproute2's,
# and gets no candidates from here.
function __ss_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l cur (commandline -ct)
    set -a words "$cur"
    if string match -q -- '-*' $words[1]; and not contains -- $words[1] --help --version
        return
    end
    command ss --complete $words 2>/dev/null
end
complete -c ss -f -a '(__ss_complete)'
