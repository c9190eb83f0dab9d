# Shared by the end-to-end tests: real backends, real sshd in real sandboxes. The image cache is
# shared between tests and runs ($SS_CACHE, default ~/.cache/ss); everything else is per test
# file. Daemons a test file starts, it stops.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${SS_BUILD_DIR:?run through ctest, or set SS_BUILD_DIR to the build directory}"
export PATH="$SS_BUILD_DIR/bin:$PATH:$SS_BUILD_DIR/tests"  # tests/: ss-backend-test
export SS_NO_UPDATE=1
# Built images are shared by every test and kept between runs: the cache of the user running
# the tests, whatever HOME a test uses.
export SS_CACHE="${SS_CACHE:-${HOME:-/root}/.cache/ss}"
unset SS_SANDBOX CLAUDE_SANDBOX SS_DEBUG SS_TRACE SS_EXEC_PATH
# Lima cannot run on these machines: its backend is tested against a stand-in limactl that holds
# Lima's documented behaviour and runs the image's sshd as the machine (fake_limactl.py). Its
# unpacked image is kept with the other built images.
if [ "${SS_E2E_BACKEND:-}" = lima ]; then
  mkdir -p "$BATS_RUN_TMPDIR/lima-bin"
  ln -sf "$BATS_TEST_DIRNAME/fake_limactl.py" "$BATS_RUN_TMPDIR/lima-bin/limactl"
  export PATH="$BATS_RUN_TMPDIR/lima-bin:$PATH" FAKE_LIMA_CACHE="$SS_CACHE/fake-lima"
fi
# Nor can Lume (macOS only): its backend is tested against a stand-in `lume` (fake_lume.py) that
# serves Lume's HTTP API and runs an image's sshd as each machine, in a network namespace of its
# own reached by address as vmnet's are. ss starts the server itself (`lume serve`) on the port of
# SS_LUME_URL, a free one per run; lume_server_stop ends it, and every machine in it.
# The machines have no internet: the server serves a stand-in one on the bridge's address, at the
# same port, with the npm registry ss's first boot installs from. ss passes its own
# npm_config_registry on to the machines, so that is the stand-in's (the bridge's network is the
# stand-in's default: ss starts the server with none of FAKE_LUME_*). The caller's own registry,
# kept once in SS_E2E_NPM_UPSTREAM (empty: npm's default), builds ss's image on this host.
if [ "${SS_E2E_BACKEND:-}" = lume ]; then
  mkdir -p "$BATS_RUN_TMPDIR/lume-bin"
  ln -sf "$BATS_TEST_DIRNAME/fake_lume.py" "$BATS_RUN_TMPDIR/lume-bin/lume"
  export PATH="$BATS_RUN_TMPDIR/lume-bin:$PATH"
  if [ ! -s "$BATS_RUN_TMPDIR/lume-port" ]; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
      > "$BATS_RUN_TMPDIR/lume-port"
  fi
  export SS_LUME_URL="http://127.0.0.1:$(cat "$BATS_RUN_TMPDIR/lume-port")"
  if [ -z "${SS_E2E_NPM_UPSTREAM+set}" ]; then
    export SS_E2E_NPM_UPSTREAM="${npm_config_registry:-}"
  fi
  export npm_config_registry="http://192.168.64.1:$(cat "$BATS_RUN_TMPDIR/lume-port")/npm"
fi

# e2e_home: a hermetic HOME/SS_HOME for the whole file (sandboxes outlive single tests).
# The home is outside bats' private (0700) temporary tree, so that the projects' owner can
# reach it as a real user would. e2e_home_remove removes it.
e2e_home() {
  E2E_ROOT=$(mktemp -d /var/tmp/ss-e2e.XXXXXX)
  chmod 755 "$E2E_ROOT"
  echo "$E2E_ROOT" > "$BATS_FILE_TMPDIR/e2e_root"
  e2e_env
  mkdir -p "$HOME"
  ss new e2e-scratch >/dev/null  # creates the projects folder as ss would
  # ss cannot fence a Lima or Lume machine's network: their sandboxes are made only with an open
  # one.
  case "${SS_E2E_BACKEND:-}" in lima | lume) ss config set network.mode open >/dev/null ;; esac
  [ "${SS_E2E_BACKEND:-}" != lume ] || lume_home
}

# lume_home: the stand-in Lume's registry and image cache in the home: trycua's
# ubuntu-noble-vanilla made from ss's own image (its user `lume`, password `lume`, sshd taking
# passwords; less a sample of ss's tools, which its stand-in internet beside it holds), built once
# per image and kept with the other built images. ss's image is built with the caller's npm
# registry, not the stand-in's, which nothing serves yet.
lume_home() {
  local image vanilla latest="$HOME/.lume-registry/ghcr.io/trycua/ubuntu-noble-vanilla/latest"
  image=$(ss vm image ls --json | jq -r '.items[0].path // empty')
  if [ -z "$image" ]; then
    npm_config_registry="${SS_E2E_NPM_UPSTREAM:-}" ss vm image build >&3 2>&1
    image=$(ss vm image ls --json | jq -r '.items[0].path')
  fi
  vanilla="$SS_CACHE/fake-lume/vanilla-$(basename "$image")-$(sha256sum "$BATS_TEST_DIRNAME/fake_lume.py" | cut -c1-10)"
  mkdir -p "$SS_CACHE/fake-lume/cache" "$HOME/.lume" "$(dirname "$latest")"
  if [ ! -s "$vanilla/rootfs.tar" ]; then
    # Made by an older stand-in or from an older image (or half made): gone, with their unpacked
    # copies.
    rm -rf "$SS_CACHE"/fake-lume/vanilla-* "$SS_CACHE"/fake-lume/cache/*
    lume __vanilla "$image/rootfs.tar" "$vanilla.part" >&3 2>&1
    mv "$vanilla.part" "$vanilla"
  fi
  # The image's directory: rootfs.tar, and internet/ beside it.
  ln -sfn "$vanilla" "$latest"
  ln -sfn "$SS_CACHE/fake-lume/cache" "$HOME/.lume/.cache"
}

# lume_server_stop: ends the Lume server ss started for this home, and with it its machines.
lume_server_stop() {
  local pid
  for pid in $(pgrep -f -- "lume serve --port ${SS_LUME_URL##*:}\$" || true); do
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}
e2e_env() {
  E2E_ROOT=$(cat "$BATS_FILE_TMPDIR/e2e_root")
  export HOME="$E2E_ROOT/home" SS_HOME="$E2E_ROOT/home/super-sandbox"
}
e2e_home_remove() {
  e2e_env
  local master
  for master in "$E2E_ROOT"/ssh-*; do
    [ -S "$master" ] && ssh -q -o ControlPath="$master" -O exit placeholder 2>/dev/null || true
  done
  [ "${SS_E2E_BACKEND:-}" != lume ] || lume_server_stop
  case "$E2E_ROOT" in /var/tmp/ss-e2e.*) rm -rf "$E2E_ROOT" ;; esac
}

# For a file that shares one sandbox, PREFIX-BACKEND-PID, on $SS_E2E_BACKEND:
# e2e_sandbox_file PREFIX (in setup_file): a hermetic home, the backend set up, the image built.
e2e_sandbox_file() {
  : "${SS_E2E_BACKEND:?set SS_E2E_BACKEND (lxd, docker, podman, qemu)}"
  e2e_home
  export SANDBOX="$1-$SS_E2E_BACKEND-$$"
  echo "$SANDBOX" > "$BATS_FILE_TMPDIR/sandbox"
  echo "$SS_E2E_BACKEND" > "$BATS_FILE_TMPDIR/backend"
  ss vm setup --backend "$SS_E2E_BACKEND" >/dev/null
  ss vm image build >&3 2>&1
}
# e2e_sandbox_env (in setup): the home, SANDBOX as the default sandbox, and the file's backend.
e2e_sandbox_env() {
  e2e_env
  SANDBOX=$(cat "$BATS_FILE_TMPDIR/sandbox")
  SS_E2E_BACKEND=$(cat "$BATS_FILE_TMPDIR/backend")
  export SS_SANDBOX=$SANDBOX SS_E2E_BACKEND
}
# e2e_sandbox_remove (in teardown_file): the sandbox deleted whatever its working copies hold
# (--force: they are saved into the home, which goes next).
e2e_sandbox_remove() {
  e2e_env
  ss vm delete --sandbox "$(cat "$BATS_FILE_TMPDIR/sandbox")" --yes --force || true
  e2e_home_remove
}

# sandbox_ssh NAME CMD...: OpenSSH into the sandbox (which, like ssh, joins CMD into one line for
# the remote shell: quote shell snippets as one word) with the install's key and the pinned host
# key (StrictHostKeyChecking yes: nothing is accepted on first use). On QEMU, one connection per
# sandbox address carries every call (a master in the home, which e2e_home_remove ends): without
# hardware acceleration each new connection's handshake costs seconds, and QEMU's end closes the
# master's connection at once. (A container's can vanish without a word, leaving a master that
# hangs the next call: those connect each time.)
sandbox_ssh() {
  local name=$1 backend host port mux=()
  shift
  read -r backend host port < <(ss vm status --sandbox "$name" --json |
    jq -r '"\(.backend) \(.ssh.host) \(.ssh.port)"')
  if [ "$backend" = qemu ]; then
    mux=(-o ControlMaster=auto -o ControlPath="${E2E_ROOT:?}/ssh-%C" -o ControlPersist=120)
  fi
  ssh -q -i "$SS_HOME/.ss/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$SS_HOME/.ss/sandboxes/$name/known_hosts" \
    -o ConnectTimeout=10 "${mux[@]}" -p "$port" "sandbox@$host" -- "$@"
}

# as_owner CMD...: runs CMD as the owner of the projects folder, the way its user would (run as
# root, ss gives projects to the sandbox user's uid).
as_owner() {
  local uid gid
  uid=$(stat -c %u "$SS_HOME/projects")
  gid=$(stat -c %g "$SS_HOME/projects")
  if [ "$(id -u)" = "$uid" ]; then "$@"; else setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"; fi
}

# busybox_tar PATH: a one-binary root filesystem, to import as a docker image with no registry.
busybox_tar() {
  local dir="$E2E_ROOT/busybox"
  mkdir -p "$dir/rootfs/bin"
  cp /bin/busybox "$dir/rootfs/bin/busybox"
  ln -sf busybox "$dir/rootfs/bin/sh"
  tar -C "$dir/rootfs" -cf "$1" .
}

# engine_client: the container engine's client, the one ss uses (the first on PATH).
engine_client() {
  command -v "$SS_E2E_BACKEND"
}

# machine_pids NAME: the host processes that make up the sandbox's machine (none when it is not
# running): the VM's supervisor, QEMU and virtiofsd; a container's init.
machine_pids() {
  local name=$1 dir pid
  case "$SS_E2E_BACKEND" in
    qemu)
      dir="$SS_HOME/.ss/qemu/$name"
      pgrep -f -- "$dir(/| |\$)" || true
      ;;
    docker | podman)
      pid=$("$(engine_client)" container inspect -f '{{.State.Pid}}' "$name" 2>/dev/null || true)
      if [ -n "$pid" ] && [ "$pid" != 0 ]; then echo "$pid"; fi
      ;;
    lxd)
      pid=$(lxc query "/1.0/instances/$name/state" 2>/dev/null | jq -r '.pid // 0' || true)
      if [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != -1 ]; then echo "$pid"; fi
      ;;
    lima)  # the machine's process (QEMU's, for a real Lima)
      limactl list --json "$name" 2>/dev/null | jq -r '.driverPID // empty' || true
      ;;
    lume)  # the machine's first process, in the stand-in's session file (while it lives)
      pid=$(jq -r '.fakePid // empty' "$HOME/.lume/$name/sessions.json" 2>/dev/null || true)
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
      ;;
  esac
}

# kill_machine NAME: kills the sandbox's machine with SIGKILL behind ss's back: QEMU itself, or
# the container's init.
kill_machine() {
  local name=$1 pid
  case "$SS_E2E_BACKEND" in
    qemu) pid=$(jq -r .qemu.pid "$SS_HOME/.ss/qemu/$name/run.json") ;;
    *) pid=$(machine_pids "$name" | head -1) ;;
  esac
  [ -n "$pid" ] && [ "$pid" != 0 ] && kill -KILL "$pid"
}

# process_alive PID: PID names a live process. One that has ended but waits to be reaped (a
# zombie: this machine's init reaps orphans seconds late) has ended.
process_alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# wait_state NAME STATE [SECONDS]: polls `ss vm status` until the sandbox is in STATE.
wait_state() {
  local name=$1 want=$2 limit=${3:-60} i
  for ((i = 0; i < limit * 5; i++)); do
    [ "$(ss vm status --sandbox "$name" --json 2>/dev/null | jq -r .state)" = "$want" ] && return 0
    sleep 0.2
  done
  echo "sandbox $name never became $want" >&2
  return 1
}

# hold_port PORT: something else takes 127.0.0.1:PORT (prints its pid, which lives until killed).
# When another program got the port first, that one holds it: the same for the test.
hold_port() {
  python3 -c 'import errno, socket, sys, time
s = socket.socket()
# The port may still have connections of the stopped machine in TIME_WAIT: taken all the same.
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
except OSError as e:
    if e.errno != errno.EADDRINUSE: raise
print(flush=True); time.sleep(3600)' "$1" > "$BATS_TEST_TMPDIR/hold.$1" </dev/null 3>&- &
  local pid=$!
  for _ in $(seq 50); do [ -s "$BATS_TEST_TMPDIR/hold.$1" ] && break; sleep 0.1; done
  echo "$pid"
}

# fake_internet_up NAME...: a stand-in for the internet, never the real one: a network namespace
# of the file's own at $FI_OUTSIDE (.2 of $SS_E2E_FAKE_NET, 198.51.100 (TEST-NET-2) unless set:
# CTest gives files that run side by side networks of their own), reached from the host by a
# routed point-to-point link, as many cloud machines reach theirs (the host's side $FI_NET.1/32
# and a route to the outside: the outside is on none of the host's networks, which ss-net never
# reaches), with web servers on ports 80 and
# 8080 (HTTP) and 443 (HTTPS, a certificate for every NAME from a test CA, $FI_DIR/ca.pem), a DNS
# server that answers every NAME with $FI_OUTSIDE and every NAME=ADDRESS (IPv4 or IPv6, a name
# given twice has both) with ADDRESS (queries logged to $FI_DIR/dns.queries), and
# outside.py on TCP 853 and UDP 443 and 9999 (datagrams logged to $FI_DIR/udp.got). Every page
# and every answer says "outside says hi"; with FI_443=headers, port 443 is header_server.py
# instead, which writes every request down ($FI_DIR/requests). ss-net resolves
# through it (SS_NET_UPSTREAM_DNS). fake_internet_down removes it all.
fake_internet_up() {
  fake_internet_env
  # What a file whose run was killed left behind (named after its shell, which is gone) goes.
  local left pid link
  for left in $(ip netns list | awk '{ print $1 }' | grep -E '^ss-(fi|sib)-[0-9]+$' || true); do
    pid=${left##*-}
    kill -0 "$pid" 2>/dev/null && continue
    for pid in $(ip netns pids "$left" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    ip netns del "$left" 2>/dev/null || true
    for link in "ssfi${left##*-}" "sssib${left##*-}" "ssn-e2e${left##*-}"; do
      ip link del "${link:0:15}" 2>/dev/null || true
    done
  done
  # Never over a network this machine reaches already (its own, a mirror's).
  local taken
  taken=$(ip -4 -o route show to match "$FI_OUTSIDE" | grep -v '^default ' || true)
  if [ -n "$taken" ] || [ -n "$(getent ahostsv4 deb.debian.org | grep "^${FI_NET//./\\.}\\." || true)" ]; then
    echo "fake_internet_up: $FI_NET.0/24 is in use on this machine (${taken:-the Debian archive is there}); set SS_E2E_FAKE_NET to another /24" >&2
    return 1
  fi
  mkdir -p "$FI_DIR/www"
  local ns="ss-fi-$$" host_if="ssfi$$"
  host_if=${host_if:0:15}
  echo "$ns $host_if" >"$FI_DIR/names"
  ip netns add "$ns"
  ip link add "$host_if" type veth peer name fi-in netns "$ns"
  ip addr add "$FI_NET.1/32" dev "$host_if"
  ip link set "$host_if" up
  ip route add "$FI_OUTSIDE/32" dev "$host_if"
  ip -n "$ns" addr add "$FI_OUTSIDE/32" dev fi-in
  ip -n "$ns" link set fi-in up
  ip -n "$ns" link set lo up
  ip -n "$ns" route add "$FI_NET.1/32" dev fi-in
  ip -n "$ns" route add default via "$FI_NET.1" dev fi-in
  echo "outside says hi" >"$FI_DIR/www/index.html"
  local san="" name dns_names=()
  for name in "$@"; do
    case $name in
      *=*) dns_names+=("$name") ;;
      *)
        san+="${san:+,}DNS:$name"
        dns_names+=("$name=$FI_OUTSIDE")
        ;;
    esac
  done
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=ss test CA" -keyout "$FI_DIR/ca.key" -out "$FI_DIR/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=${1:-outside}" \
    -keyout "$FI_DIR/web.key" -out "$FI_DIR/web.csr" 2>/dev/null
  openssl x509 -req -in "$FI_DIR/web.csr" -CA "$FI_DIR/ca.pem" -CAkey "$FI_DIR/ca.key" \
    -CAcreateserial -days 2 -out "$FI_DIR/web.pem" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "${san:-DNS:outside}") 2>/dev/null
  local port
  for port in 80 8080; do
    ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" "$FI_OUTSIDE" "$port" \
      "$FI_DIR/www" >"$FI_DIR/web$port" 2>&1 3>&- &
    echo $! >>"$FI_DIR/pids"
  done
  if [ "${FI_443:-}" = headers ]; then
    ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/cli/header_server.py" "$FI_OUTSIDE" 443 \
      "$FI_DIR/web.pem" "$FI_DIR/web.key" "$FI_DIR/requests" >"$FI_DIR/web443" 2>&1 3>&- &
  elif [ "${FI_443:-}" = messages ]; then
    # The agent's API: its tool call runs the command in messages.command.
    : >"$FI_DIR/messages.command"
    ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/e2e/messages_api.py" "$FI_OUTSIDE" 443 \
      "$FI_DIR/web.pem" "$FI_DIR/web.key" "$FI_DIR/messages.command" "$FI_DIR/requests" \
      >"$FI_DIR/web443" 2>&1 3>&- &
  else
    ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/cli/web_server.py" "$FI_OUTSIDE" 443 \
      "$FI_DIR/www" "$FI_DIR/web.pem" "$FI_DIR/web.key" >"$FI_DIR/web443" 2>&1 3>&- &
  fi
  echo $! >>"$FI_DIR/pids"
  ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/cli/dns_server.py" "$FI_OUTSIDE" 53 \
    "$FI_DIR/dns.queries" "${dns_names[@]}" >"$FI_DIR/dns" 2>&1 3>&- &
  echo $! >>"$FI_DIR/pids"
  ip netns exec "$ns" python3 "$SS_SOURCE_DIR/tests/e2e/outside.py" "$FI_OUTSIDE" "$FI_DIR/udp.got" \
    tcp:853 udp:443 udp:9999 >"$FI_DIR/outside" 2>&1 3>&- &
  echo $! >>"$FI_DIR/pids"
  # Every listener up before any test leans on it: each server prints its port once bound.
  local out
  for out in web80 web8080 web443 dns outside; do
    for _ in $(seq 100); do [ -s "$FI_DIR/$out" ] && break; sleep 0.05; done
  done
}
fake_internet_env() {
  FI_DIR="$BATS_FILE_TMPDIR/fake_inet"
  FI_NET=${SS_E2E_FAKE_NET:-198.51.100}
  FI_OUTSIDE=$FI_NET.2
  export SS_NET_UPSTREAM_DNS=$FI_OUTSIDE
}
fake_internet_down() {
  FI_DIR="$BATS_FILE_TMPDIR/fake_inet"
  local pid ns host_if
  for pid in $(cat "$FI_DIR/pids" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  read -r ns host_if <"$FI_DIR/names" 2>/dev/null || return 0
  ip netns del "$ns" 2>/dev/null || true
  ip link del "$host_if" 2>/dev/null || true
}
# trust_test_ca SANDBOX: the sandbox's system store trusts the stand-in internet's test CA.
trust_test_ca() {
  sandbox_ssh "$1" sudo -n tee /usr/local/share/ca-certificates/ss-test-ca.crt \
    <"$BATS_FILE_TMPDIR/fake_inet/ca.pem" >/dev/null
  sandbox_ssh "$1" sudo -n update-ca-certificates >/dev/null 2>&1
}
