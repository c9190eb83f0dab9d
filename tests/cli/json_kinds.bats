#!/usr/bin/env bats
# ss-json(7) against the code and the output: every kind ss emits is documented, and every field
# of the documents these commands print (without a sandbox) is named in its kind's section.

load helpers

MAN="$SS_SOURCE_DIR/man/ss-json.7.scd"

setup() {
  ss_setup
  stub_backends_down
}

# section KIND: the text of KIND's section of ss-json(7) (headings may name two kinds).
section() {
  awk -v k="$1" '/^#/ { on = ($0 ~ "^## (.*[ ,])?" k "([ ,].*)?$") } on' "$MAN"
}

# documented KIND JSON [ALSO]: every key of the document (and of the objects in its arrays and
# objects) appears in KIND's section (or ALSO's, a kind it refers to) as *key* (underscores
# escaped as scdoc wants them).
documented() {
  local kind=$1 json=$2 text key missing=()
  text=$(section "$kind"; [ -z "${3:-}" ] || section "$3")
  [ -n "$text" ] || { echo "no section for $kind in ss-json(7)"; return 1; }
  for key in $(jq -r '[paths | map(strings) | last] | unique | .[] | select(. != null)' <<< "$json"); do
    [ "$key" = kind ] || [ "$key" = version ] && continue
    grep -qF -- "*${key//_/\\_}*" <<< "$text" || missing+=("$key")
  done
  [ ${#missing[@]} -eq 0 ] || { echo "$kind: not in ss-json(7): ${missing[*]}"; return 1; }
}

@test "every kind the code emits is documented in ss-json(7)" {
  local kinds kind missing=()
  kinds=$(grep -rhoE 'JsonDocument\("[A-Za-z]+"' "$SS_SOURCE_DIR/lib" "$SS_SOURCE_DIR/tools" |
    sed -E 's/.*"([A-Za-z]+)"/\1/' | sort -u)
  [ -n "$kinds" ]
  for kind in $kinds; do
    grep -qE "^## (.*[ ,])?$kind([ ,].*)?$" "$MAN" || grep -qF -- "$kind (" "$MAN" ||
      grep -qE "(^|[ ,])$kind([ ,]|$)" <(section "Files ss keeps for itself") || missing+=("$kind")
  done
  [ ${#missing[@]} -eq 0 ] || { echo "undocumented kinds: ${missing[*]}"; false; }
}

@test "the documents printed without a sandbox name every field in ss-json(7)" {
  ss new app >/dev/null
  ss config set profiles.p.description x >/dev/null
  documented ProjectList "$(ss list --json)"
  documented Project "$(ss project show app --json)" ProjectList
  documented Config "$(ss config show --json)"
  documented ConfigValue "$(ss config get memory --json)"
  documented Profiles "$(ss profiles --json)"
  documented SandboxList "$(ss vm list --json)"
  documented ImageList "$(ss vm image ls --json)"
  documented BackendList "$(ss vm backends --json || true)"
  documented Doctor "$(ss doctor --json || true)"
  documented BrowserCheck "$(ss tunnel --check --json || true)"
}
