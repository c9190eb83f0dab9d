# Shared by the ss-net command-line tests (net.bats, net_inject.bats): the sandbox "box" as ss-net
# sees it, programs started in the background and stopped after the test, and a failure for
# anything ss-net's sanitizers reported.

# net_setup (in setup): the home, $W, the record of "box"; no request waits more than 10 s.
net_setup() {
  ss_setup
  W="$BATS_TEST_TMPDIR"
  PIDS=()
  export CURL_HOME="$W"
  echo "max-time = 10" >"$W/.curlrc"
  mkdir -p "$SS_HOME/.ss/sandboxes/box"
  echo '{"name":"box"}' >"$SS_HOME/.ss/sandboxes/box/sandbox.json"
}

# net_teardown (in teardown): stops what background started, removes the test's namespaces, and
# fails on sanitizer reports (the suite runs these tests under ASan and UBSan).
net_teardown() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -z "${NS:-}" ] || ip netns del "$NS" 2>/dev/null || true
  [ -z "${OUT:-}" ] || ip netns del "$OUT" 2>/dev/null || true
  if grep -s -l -E "Sanitizer|runtime error" "$W"/*.err; then
    cat "$W"/*.err >&2
    return 1
  fi
}

# world_up: the test's own host and internet, never this machine's: $NS, the host, where ss-net
# and its clients run, and $OUT, the stand-in internet at $OUTSIDE (203.0.113.2), joined by a
# routed point-to-point link, as many cloud machines have theirs: the host's side 192.0.2.1/32
# ($HOST_WAN) and a route to the outside, so that the outside is on none of the host's networks
# (which ss-net never reaches). Servers of the outside start with NS=$OUT background ….
OUTSIDE=203.0.113.2
HOST_WAN=192.0.2.1
world_up() {
  NS="ssnet-h-$$" OUT="ssnet-o-$$"
  ip netns add "$NS"
  ip netns add "$OUT"
  ip -n "$NS" link set lo up
  ip -n "$OUT" link set lo up
  ip -n "$NS" link add wan0 type veth peer name wan1 netns "$OUT"
  ip -n "$NS" addr add "$HOST_WAN/32" dev wan0
  ip -n "$NS" link set wan0 up
  ip -n "$NS" route add "$OUTSIDE/32" dev wan0
  ip -n "$OUT" addr add "$OUTSIDE/32" dev wan1
  ip -n "$OUT" link set wan1 up
  ip -n "$OUT" route add "$HOST_WAN/32" dev wan1
  ip -n "$OUT" route add default via "$HOST_WAN" dev wan1
}

# in_ns CMD...: runs CMD in the test's namespace when there is one.
in_ns() {
  if [ -n "${NS:-}" ]; then ip netns exec "$NS" "$@"; else "$@"; fi
}

# background FILE CMD...: starts CMD (in the namespace when there is one), stdout to FILE, and
# waits until FILE has a line.
background() {
  local out=$1
  shift
  # Started directly (not through a function, so $! is the process itself) and without Bats'
  # descriptor 3, which Bats waits on.
  if [ -n "${NS:-}" ]; then
    ip netns exec "$NS" "$@" >"$out" 2>"$out.err" 3>&- &
  else
    "$@" >"$out" 2>"$out.err" 3>&- &
  fi
  PIDS+=($!)
  local i
  for ((i = 0; i < 100; i++)); do
    [ -s "$out" ] && return 0
    sleep 0.05
  done
  cat "$out.err" >&2
  return 1
}

# redirect_outside PORT...: in the test's namespace, connections to 198.51.100.0/24 on the PORTs
# go to ss-net's transparent listener ($TRANSPARENT), as a backend's firewall sends them.
redirect_outside() {
  local ports
  ports=$(IFS=,; echo "$*")
  in_ns nft -f - <<EOF
table ip sstest {
  chain out {
    type nat hook output priority -100; policy accept;
    ip daddr 198.51.100.0/24 tcp dport { $ports } redirect to :${TRANSPARENT##*:}
  }
}
EOF
}
