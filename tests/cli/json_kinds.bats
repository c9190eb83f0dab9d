#!/usr/bin/env bats
# ss-json(7) against the code and the output: every kind ss emits is documented, and every field
# of the documents these commands print (without a sandbox) is named in its kind's section.

load helpers
load ../json_doc

setup() {
  ss_setup
}

@test "every kind the code emits is documented in ss-json(7)" {
  local kinds kind missing=()
  kinds=$(grep -rhoE 'JsonDocument\("[A-Za-z]+"' "$SS_SOURCE_DIR/lib" "$SS_SOURCE_DIR/tools" |
    sed -E 's/.*"([A-Za-z]+)"/\1/' | sort -u)
  [ -n "$kinds" ]
  for kind in $kinds; do
    grep -qE "^## (.*[ ,])?$kind([ ,].*)?$" "$SS_SOURCE_DIR/man/ss-json.7.scd" || grep -qF -- "$kind (" "$SS_SOURCE_DIR/man/ss-json.7.scd" ||
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
  # An image as the image build records it, so the list has an item to check.
  mkdir -p "$HOME/.cache/ss/images/bookworm-0123456789"
  cat > "$HOME/.cache/ss/images/bookworm-0123456789/image.json" <<'JSON'
{"id": "bookworm-0123456789", "release": "bookworm", "mirror": "http://deb.debian.org/debian",
 "npm_registry": "https://registry.npmjs.org", "created": "2026-11-27T18:02:43Z",
 "versions": {"node": "v22.23.3", "npm": "10.9.9", "claude_code": "2.1.332",
   "chrome_devtools_mcp": "1.11.0", "gh": "2.23.0", "docker": "20.10.24", "cloud_init": "22.4.2",
   "kernel": "6.1.0-56-amd64"},
 "size_bytes": 2923225536}
JSON
  [ "$(ss vm image ls --json | jq '.items | length')" -eq 1 ]
  documented ImageList "$(ss vm image ls --json)" Image
  documented BackendList "$(ss vm backends --json || true)"
  documented Doctor "$(ss doctor --json || true)"
  documented BrowserCheck "$(ss tunnel --check --json || true)"
}
