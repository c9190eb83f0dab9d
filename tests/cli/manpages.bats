#!/usr/bin/env bats
# Every binary answers --help on stdout with exit 0, has a manual page with the standard
# sections, and the options its --help lists are exactly the options its manual page lists
# (OPTIONS section). Generic over every ss-* binary the build installs, plugins of this tree
# included as they are added.

load helpers

setup() { ss_setup; }

binaries() {
  echo "$SS_BUILD_DIR/bin/ss"
  ls -1 "$SS_BUILD_DIR"/libexec/ss/ss-*
}

# The manual page of a binary: ss-x.1, else ss-x.5 (ss-config's page is the file format's).
page_of() {
  local name
  name=$(basename "$1")
  for s in 1 5; do
    [ -f "$SS_SOURCE_DIR/man/$name.$s.scd" ] && { echo "$SS_SOURCE_DIR/man/$name.$s.scd"; return; }
  done
  return 1
}

# Options of a --help text: the first column of its option lines ("  -y, --yes  ..."), in any
# section ("Options:", "Forwards:"...).
help_options() {
  awk '/^  ? ?-/ { print }' |
    sed -E 's/^ +//; s/ {2,}.*$//' | grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' |
    sed -E 's/^[ ,]//' | sort -u
}

# Options of a manual page: the term lines of its OPTIONS section ("*-y*, *--yes*").
man_options() {
  awk '/^# OPTIONS$/ { on = 1; next } /^# / { on = 0 } on && /^\*/ { print }' "$1" |
    grep -oE '\*--?[A-Za-z][A-Za-z0-9-]*\*' | tr -d '*' | sort -u
}

@test "every binary answers --help on stdout with exit 0, and has a manual page" {
  [ "$(binaries | wc -l)" -ge 6 ]
  for bin in $(binaries); do
    run --separate-stderr "$bin" --help
    [ "$status" -eq 0 ] || { echo "$bin --help: exit $status"; false; }
    [ -n "$output" ] || { echo "$bin --help: nothing on stdout"; false; }
    [ -z "$stderr" ] || { echo "$bin --help wrote on stderr: $stderr"; false; }
    page_of "$bin" >/dev/null || { echo "no manual page for $(basename "$bin")"; false; }
  done
}

@test "every manual page has the standard sections" {
  for page in "$SS_SOURCE_DIR"/man/*.scd; do
    for section in NAME SYNOPSIS DESCRIPTION "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
      case "$(basename "$page")" in
        ss-json.7.scd) case $section in "EXIT STATUS" | ENVIRONMENT | FILES) continue ;; esac ;;
      esac
      grep -qx "# $section" "$page" || { echo "$(basename "$page"): no $section section"; false; }
    done
    grep -qE '^# EXAMPLES?$' "$page" || { echo "$(basename "$page"): no EXAMPLES section"; false; }
  done
}

@test "--help options == manual page options, for every binary" {
  for bin in $(binaries); do
    page=$(page_of "$bin")
    help=$("$bin" --help | help_options)
    man=$(man_options "$page")
    [ -n "$help" ] || { echo "$(basename "$bin"): --help lists no options"; false; }
    if [ "$help" != "$man" ]; then
      echo "$(basename "$bin"): --help and $(basename "$page") disagree"
      diff <(echo "$help") <(echo "$man") | sed 's/^</  only in --help:/; s/^>/  only in the manual:/' | grep only
      false
    fi
  done
}

@test "the manual pages build and man renders them" {
  for page in "$SS_BUILD_DIR"/share/man/man*/ss*; do
    run man -l "$page"
    assert_success
    [[ "$output" == *NAME* ]]
  done
  run man -l "$SS_BUILD_DIR/share/man/man7/ss-json.7"
  assert_output --partial "ProjectList"
}
