#!/usr/bin/env bats
# Every script ss runs or installs in the sandbox (shell/) and every Python file of the tree,
# through the linters of Debian's archive: ShellCheck for sh and bash, fish's own parser, and
# Python's compiler and pyflakes. A file of shell/ that none of them reads fails here, so a new
# one cannot slip past.

load helpers

setup() { ss_setup; }

# The shell a script of shell/ is for, from its first line ("#!/bin/sh" -> sh), or its suffix.
dialect() {
  case $1 in
    *.py) echo python ;;
    *.fish) echo fish ;;
    *.bash) echo bash ;;
    *)
      local first
      first=$(head -n1 "$1")
      case $first in
        '#!/bin/sh' | '#!/usr/bin/env sh') echo sh ;;
        '#!/bin/bash' | '#!/usr/bin/env bash') echo bash ;;
        *) echo unknown ;;
      esac
      ;;
  esac
}

@test "every file of shell/ is in a language a linter here reads" {
  local f n=0
  for f in "$SS_SOURCE_DIR"/shell/*; do
    n=$((n + 1))
    [ "$(dialect "$f")" != unknown ] || fail "$(basename "$f"): no #!/bin/sh or #!/bin/bash line and no known suffix"
  done
  [ "$n" -ge 10 ]
}

@test "shellcheck: the sandbox's sh and bash scripts" {
  local f d
  for f in "$SS_SOURCE_DIR"/shell/*; do
    d=$(dialect "$f")
    case $d in sh | bash) ;; *) continue ;; esac
    run shellcheck --shell="$d" --severity=style "$f"
    [ "$status" -eq 0 ] || fail "$output"
  done
}

@test "shellcheck: what ss init prints for bash and zsh, and the scripts that set up a machine" {
  run shellcheck --shell=bash --severity=style - <<<"$(ss init bash)"
  [ "$status" -eq 0 ] || fail "$output"
  run shellcheck --shell=bash --severity=style \
    "$SS_SOURCE_DIR/install.sh" "$SS_SOURCE_DIR/tests/run" "$SS_SOURCE_DIR/tests/host-setup" \
    "$SS_SOURCE_DIR/.ci/run"
  [ "$status" -eq 0 ] || fail "$output"
}

@test "fish parses the sandbox's fish config and ss's own fish files" {
  local f
  for f in "$SS_SOURCE_DIR"/shell/*.fish "$SS_SOURCE_DIR"/completions/*.fish; do
    run fish --no-execute "$f"
    [ "$status" -eq 0 ] || fail "$(basename "$f"): $output"
  done
  run fish --no-execute <<<"$(ss init fish)"
  [ "$status" -eq 0 ] || fail "ss init fish: $output"
}

@test "python: every file compiles and pyflakes finds nothing" {
  local files=()
  mapfile -t files < <(cd "$SS_SOURCE_DIR" && git ls-files '*.py' 2>/dev/null ||
    find shell tests bench -name '*.py')
  [ "${#files[@]}" -ge 5 ]
  local f
  for f in "${files[@]}"; do
    run env PYTHONPYCACHEPREFIX="$BATS_TEST_TMPDIR/pycache" python3 -m py_compile "$SS_SOURCE_DIR/$f"
    [ "$status" -eq 0 ] || fail "$f: $output"
  done
  run pyflakes3 "${files[@]/#/$SS_SOURCE_DIR/}"
  [ "$status" -eq 0 ] || fail "$output"
}

@test "only lib/platform calls what one system alone has (Linux's or macOS's interfaces)" {
  # Headers and calls that Linux or macOS alone has, as whole words; lib/platform/platform_*.cpp
  # holds them all (platform.hpp), so the rest of the tree compiles on both.
  local headers='#include <(linux/|sys/(prctl|mount|vfs|syscall|epoll|sysmacros|inotify|signalfd|eventfd|capability|fsuid|sendfile|statfs|sysctl|proc_info)\.h|libproc\.h|mach/|mach-o/)'
  local calls='pipe2|accept4|dup3|SOCK_CLOEXEC|SOCK_NONBLOCK|O_PATH|O_TMPFILE|O_NOATIME|statx|copy_file_range|renameat2|renameatx_np|syscall|prctl|unshare|setns|MSG_NOSIGNAL|SO_NOSIGPIPE|SO_PEERCRED|SO_ORIGINAL_DST|memfd_create|signalfd|eventfd|epoll_create1?|execvpe|get_current_dir_name|strchrnul|TEMP_FAILURE_RETRY|program_invocation_name|posix_fadvise|fallocate|AT_EMPTY_PATH|F_SETPIPE_SZ|getdents64|off64_t|sysctlbyname|proc_pidinfo|proc_listallpids|_NSGetExecutablePath|st_birthtimespec|st_mtim|st_atim'
  local files
  files=$(cd "$SS_SOURCE_DIR" && find lib tools tests/unit -name '*.cpp' -o -name '*.hpp' | grep -v '^lib/platform/' | sort)
  [ "$(wc -l <<<"$files")" -gt 100 ]
  # Comments and strings are not calls: drop them before looking.
  local f hits=$BATS_TEST_TMPDIR/hits
  : >"$hits"
  while read -r f; do
    sed -E 's/"([^"\\]|\\.)*"/""/g; s|//.*||' "$SS_SOURCE_DIR/$f" |
      { grep -n -E "$headers|\\b($calls)\\b" || true; } | sed "s|^|$f:|" >>"$hits"
  done <<<"$files"
  [ ! -s "$hits" ] || fail "outside lib/platform: $(cat "$hits")"
  # And lib/platform itself holds them (the check above would pass on an empty pattern).
  run grep -c -E '\b(pipe2|prctl|statx)\b' "$SS_SOURCE_DIR/lib/platform/platform_linux.cpp"
  [ "$output" -ge 3 ]
}

@test "the Homebrew formula is Ruby and names every library the build looks for" {
  local formula=$SS_SOURCE_DIR/packaging/homebrew/ss.rb
  run ruby -c "$formula"
  [ "$status" -eq 0 ] || fail "$output"
  # What CMakeLists.txt finds, and the formula's name for it.
  local -A brew=([Boost]=boost [nlohmann_json]=nlohmann-json [yaml-cpp]=yaml-cpp [PkgConfig]=pkgconf
    [libssh]=libssh [libcurl]=curl [OpenSSL]=openssl@3 [asio.hpp]=asio [scdoc]=scdoc [Threads]=-)
  local found name
  found=$(cat "$SS_SOURCE_DIR/CMakeLists.txt" "$SS_SOURCE_DIR/man/CMakeLists.txt" |
    sed -n -E 's/.*(find_package|find_path|find_program)\([A-Z_]+ ([^ )]+).*/\2/p; s/.*find_package\(([^ )]+).*/\1/p; s/.*pkg_check_modules\([A-Z_]+ REQUIRED IMPORTED_TARGET ([a-z]+).*/\1/p')
  [ "$(wc -l <<<"$found")" -ge 9 ] || fail "read too few: $found"
  for name in $found; do
    [ -n "${brew[$name]:-}" ] || fail "CMakeLists.txt looks for $name: add it to the formula and to this test"
    [ "${brew[$name]}" = - ] && continue
    grep -q -E "(depends_on|uses_from_macos) \"${brew[$name]}\"" "$formula" ||
      fail "the formula lacks ${brew[$name]} (CMakeLists.txt looks for $name)"
  done
}
