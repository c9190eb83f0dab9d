# ss-json(7) read by the tests (cli/json_kinds.bats, e2e/sandbox.bats): a kind's section, and
# whether a document's every field is named there.

# section KIND: the text of KIND's section of ss-json(7) (headings may name two kinds).
section() {
  awk -v k="$1" '/^#/ { on = ($0 ~ "^## (.*[ ,])?" k "([ ,].*)?$") } on' "$SS_SOURCE_DIR/man/ss-json.7.scd"
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
