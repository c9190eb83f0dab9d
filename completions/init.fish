# ss shell integration for fish: `ss init fish | source` in ~/.config/fish/config.fish.
# `ss cd [PROJECT]` changes this shell's directory to the project (or to the projects folder);
# every other call runs the ss command unchanged, so iproute2's `ss -tlnp` still reaches it.
function ss --description 'ss, with `ss cd PROJECT`'
    if test (count $argv) -ge 1; and test "$argv[1]" = cd
        set -l dir ({{ss}} project path $argv[2..-1]); or return
        builtin cd $dir
    else
        command ss $argv
    end
end
