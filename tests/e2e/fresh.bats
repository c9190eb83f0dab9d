#!/usr/bin/env bats
# The README's quick start on a machine that has never had ss's packages: in a fresh Debian 12
# machine, `./install.sh` (packages, build, install to /usr/local, `ss vm setup`, `ss vm image
# build`), then `ss new demo && ss demo -- true` on that machine's own sandbox backend. A step
# install.sh leaves out makes this file fail; install.sh's own failure shows its last lines.
#
# The fresh machine is a system container of this host's LXD with security.nesting=true, so
# that the backend inside it is real: Docker (`./install.sh --backend docker`). Not LXD in LXD:
# where the host mounts cgroup v1's cpu and cpuacct as two hierarchies (machines of this kind
# do, having no systemd), LXD gives its containers a read-only /sys/fs/cgroup with one
# "cpu,cpuacct" folder that neither can be mounted on, and a nested LXD cannot start any
# container ("cgfsng: Failed to open 6/cpuacct - Not a directory"). On a host with systemd that
# does not arise; ss's LXD set-up inside containers (subordinate ids that fit, the missing
# controllers mounted where it can) is for those. Its root filesystem is a minimal debootstrap of bookworm, not ss's sandbox image:
# --variant=minbase (the "required" packages only) plus
#   systemd-sysv      it boots systemd, as a Debian machine does: install.sh, the package
#                     scripts and ss see /run/systemd/system and go through systemctl
#   udev              without it systemd-networkd leaves eth0 "pending" (no address)
#   systemd-resolved  DNS from the DHCP lease; /etc/resolv.conf is its stub (127.0.0.53), as on
#                     Debian's cloud images
#   dbus              systemctl's and networkctl's peer; a Debian machine with systemd has it
# with systemd-networkd doing DHCP on eth0, the updates and security suites in sources.list and
# no machine-id (made at first boot). Nothing else: no iproute2, procps, sudo, curl or
# ca-certificates; what ss needs, install.sh has to install. The machine reaches Debian's
# archive through the host bridge's NAT; the certificate authorities the host adds to Debian's
# (/usr/local/share/ca-certificates) are put where a Debian admin puts them (fresh_local_cas).
# Its root disk is a `dir` storage pool of its own (the inner image build wants 8 GB free; the
# host's pools are left alone).
#
# What gets installed is the checkout under test ($SS_SOURCE_DIR): its files as git lists them
# (tracked and untracked, not ignored: no build/), else the tree without build*/ and .git. No
# .git goes in, so the version names commit "unknown". The machine has one user, dev (uid 1000,
# sudo without a password, as a Debian install's first user has it with one): install.sh runs in
# ~dev/ss as dev, in a login shell (su -l), with a time limit; `ss demo` runs in a new login of
# dev's (install.sh adds dev to the engine's group, which counts from the next login).
#
# Kept between runs under $SS_CACHE/fresh (outside the checkout):
#   image-KEY.tar.gz  the fresh machine's LXD image (unified tarball: metadata.yaml, templates/,
#                     rootfs/); KEY hashes the recipe below (fresh_recipe, the package list, the
#                     release, the mirror), so a changed recipe builds a new one. Built in a
#                     .build-* directory under a lock, renamed into place when complete: a killed
#                     run leaves no tarball a later run would trust (the next build removes its
#                     directory)
#   debootstrap/      the .deb files of that image (debootstrap --cache-dir)
#   apt/              the fresh machine's /var/cache/apt/archives (an LXD disk device)
#   ss-debs/ ss-npm/  the fresh machine's ~dev/.cache/ss/debs and npm (ss's download caches)
#   ccache/           the fresh machine's ~dev/.cache/ccache (install.sh compiles through ccache,
#                     which it installs: a missing header still fails the build)
#   last-times.txt    the last run's wall time by step, also printed with the test output
# The downloads are what is kept; everything else is made again each run (packages installed,
# ss built, LXD set up and the sandbox image built inside from nothing). The container, its
# storage pool and its image are this run's (ss-fresh-PID) and go in teardown_file; those of a
# run that was killed go at the start of the next one.

load helpers

FRESH_RELEASE=bookworm
FRESH_MIRROR=http://deb.debian.org/debian
FRESH_INCLUDE=systemd-sysv,udev,systemd-resolved,dbus,sudo
# install.sh's limit inside (CTest's TIMEOUT for this file is above it, so teardown still runs).
FRESH_INSTALL_LIMIT=2700

setup_file() {
  e2e_home
  export FRESH_CACHE="$SS_CACHE/fresh"
  export FRESH="ss-fresh-$$"
  echo "$FRESH" > "$BATS_FILE_TMPDIR/fresh"
  export TIMES="$E2E_ROOT/times"
  : > "$TIMES"
  # The host's LXD, up and initialised (it is on a machine of this kind; elsewhere this starts it).
  ss vm setup --backend lxd --json > "$BATS_FILE_TMPDIR/setup.json"
  if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends debootstrap >/dev/null
  fi
  mkdir -p "$FRESH_CACHE"
  fresh_remove_stale
  fresh_forward -I

  local t0=$EPOCHREALTIME image fingerprint
  image=$(fresh_image)
  times_add "$t0" "fresh machine's image: $(cat "$E2E_ROOT/image-how")"

  t0=$EPOCHREALTIME
  fingerprint=$(sha256sum "$image" | cut -d' ' -f1)
  # Already there only while another run of this file uses it: then it is that run's to remove.
  if ! lxc image info "$fingerprint" >/dev/null 2>&1; then
    lxc image import "$image" --alias "$FRESH" >/dev/null
    echo "$fingerprint" > "$BATS_FILE_TMPDIR/imported"
  fi
  mkdir -p "$E2E_ROOT/pool"
  lxc storage create "$FRESH" dir source="$E2E_ROOT/pool" >/dev/null
  lxc init "$fingerprint" "$FRESH" --storage "$FRESH" -c security.nesting=true \
    -c user.ss-fresh.pid=$$ >/dev/null
  fresh_share_caches
  lxc start "$FRESH"
  fresh_wait_ready
  # LXD made ~dev/.cache for the cache devices, as root: the folders above them are dev's.
  lxc exec "$FRESH" -- chown dev:dev /home/dev/.cache /home/dev/.cache/ss </dev/null
  fresh_local_cas
  times_add "$t0" "fresh machine: import, boot, network"

  t0=$EPOCHREALTIME
  fresh_copy_source
  times_add "$t0" "checkout copied in"
}

teardown_file() {
  e2e_env
  FRESH=$(cat "$BATS_FILE_TMPDIR/fresh" 2>/dev/null) || FRESH=
  if [ -n "$FRESH" ]; then
    lxc delete -f "$FRESH" >/dev/null 2>&1 || true
    lxc storage delete "$FRESH" >/dev/null 2>&1 || true
  fi
  if [ -s "$BATS_FILE_TMPDIR/imported" ]; then
    lxc image delete "$(cat "$BATS_FILE_TMPDIR/imported")" >/dev/null 2>&1 || true
  fi
  # The figures so far, when the install test never printed them (setup_file failed).
  if [ ! -e "$BATS_FILE_TMPDIR/times-printed" ] && [ -s "$E2E_ROOT/times" ]; then
    cat "$E2E_ROOT/times" >&3
  fi
  fresh_forward -D
  # LXD, if this file's setup started it (it was not running).
  if jq -e '.started | length > 0' "$BATS_FILE_TMPDIR/setup.json" >/dev/null 2>&1; then
    ss vm setup --backend lxd --stop >&3 2>&1 || true
  fi
  e2e_home_remove  # with the pool's directory
}

setup() {
  e2e_env
  FRESH=$(cat "$BATS_FILE_TMPDIR/fresh")
  FRESH_CACHE="$SS_CACHE/fresh"
  TIMES="$E2E_ROOT/times"
}

# fresh_recipe DIR: lays out the fresh machine's LXD image in DIR (rootfs/, metadata.yaml,
# templates/). Its text is part of the cache key: any change here builds a new image.
fresh_recipe() {
  local dir=$1 r=$1/rootfs
  mkdir -p "$FRESH_CACHE/debootstrap" "$dir/templates"
  # debootstrap's mounts (proc, sys in the new tree) live in a mount namespace of their own: a
  # killed build leaves none on the host.
  if ! unshare --mount --propagation slave debootstrap --variant=minbase \
      --include="$FRESH_INCLUDE" --cache-dir="$FRESH_CACHE/debootstrap" \
      "$FRESH_RELEASE" "$r" "$FRESH_MIRROR" > "$dir/debootstrap.out" 2>&1; then
    tail -n 40 "$dir/debootstrap.out" "$r/debootstrap/debootstrap.log" 2>/dev/null
    echo "debootstrap of the fresh machine failed" >&2
    return 1
  fi
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s-security %s-security main\n' \
    "$FRESH_MIRROR" "$FRESH_RELEASE" "$FRESH_MIRROR" "$FRESH_RELEASE" \
    "$FRESH_MIRROR" "$FRESH_RELEASE" > "$r/etc/apt/sources.list"
  mkdir -p "$r/etc/systemd/network"
  printf '[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\n' > "$r/etc/systemd/network/10-eth0.network"
  chroot "$r" systemctl enable systemd-networkd systemd-resolved >/dev/null 2>&1 || return 1
  ln -sfn ../run/systemd/resolve/stub-resolv.conf "$r/etc/resolv.conf"
  : > "$r/etc/fstab"
  : > "$r/etc/machine-id"
  rm -f "$r/var/lib/dbus/machine-id"
  echo localhost > "$r/etc/hostname"
  chroot "$r" useradd -m -u 1000 -s /bin/bash -G sudo dev || return 1
  echo 'dev ALL=(ALL) NOPASSWD:ALL' > "$r/etc/sudoers.d/dev"
  chmod 440 "$r/etc/sudoers.d/dev"
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r/debootstrap"
  cat > "$dir/metadata.yaml" <<EOF
architecture: x86_64
creation_date: $(date +%s)
properties: {description: "Debian $FRESH_RELEASE minbase, systemd (ss fresh machine)", os: debian, release: $FRESH_RELEASE, architecture: amd64}
templates:
  /etc/hostname: {when: [create, copy], template: hostname.tpl}
  /etc/hosts: {when: [create, copy], template: hosts.tpl}
EOF
  echo '{{ container.name }}' > "$dir/templates/hostname.tpl"
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t{{ container.name }}\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    > "$dir/templates/hosts.tpl"
}

# fresh_image: the path of the fresh machine's image tarball, built first unless cached.
fresh_image() {
  local key image dir lock
  key=$({ declare -f fresh_recipe; echo "$FRESH_RELEASE $FRESH_MIRROR $FRESH_INCLUDE"; } |
    sha256sum | cut -c1-16)
  image="$FRESH_CACHE/image-$key.tar.gz"
  exec {lock}> "$FRESH_CACHE/.lock"
  flock -w 3600 "$lock" || return 1
  if [ -s "$image" ]; then
    echo "cached ($(basename "$image"))" > "$E2E_ROOT/image-how"
  else
    # A killed build's directory (this run holds the lock: no build is using it).
    rm -rf --one-file-system "$FRESH_CACHE"/.build-*
    dir=$(mktemp -d "$FRESH_CACHE/.build-XXXXXX")
    # (This runs in a command substitution, where errexit does not apply: every step checked.)
    fresh_recipe "$dir" >&2 || return 1
    tar --numeric-owner --xattrs -C "$dir" -czf "$dir/image.tar.gz" metadata.yaml templates rootfs ||
      return 1
    sync "$dir/image.tar.gz" && mv -T "$dir/image.tar.gz" "$image" && sync "$FRESH_CACHE" || return 1
    rm -rf --one-file-system "$dir"
    # Images of earlier recipes are never used again.
    find "$FRESH_CACHE" -maxdepth 1 -name 'image-*.tar.gz' ! -name "image-$key.tar.gz" -delete
    echo "debootstrap $FRESH_RELEASE minbase + $FRESH_INCLUDE ($(basename "$image"))" \
      > "$E2E_ROOT/image-how"
  fi
  exec {lock}>&-
  echo "$image"
}

# fresh_forward -I|-D: lets the fresh machine's traffic through the host's FORWARD chain (-I), or
# stops (-D). Docker, run by the other files beside this one, can set the chain's policy to DROP
# (when it turns forwarding on itself); the machine reaches Debian's archive through LXD's
# bridge. The rules name this run (ss-fresh-PID).
fresh_forward() {
  local bridge rule
  bridge=$(lxc profile device get default eth0 network) || return 1
  for rule in "-i $bridge" "-o $bridge -m conntrack --ctstate RELATED,ESTABLISHED"; do
    # shellcheck disable=SC2086  # (the rule's words)
    if [ "$1" = -I ] || iptables -C FORWARD $rule -m comment --comment "ss-fresh-$$" -j ACCEPT \
        2>/dev/null; then
      iptables "$1" FORWARD $rule -m comment --comment "ss-fresh-$$" -j ACCEPT
    fi
  done
}

# fresh_remove_stale: what a killed run of this file left in LXD: its container, pool and image
# are named ss-fresh-PID, PID a bats process that is gone. Nothing else is touched.
fresh_remove_stale() {
  local name source
  for name in $(lxc list --format csv -c n '^ss-fresh-[0-9]+$'); do
    [ -n "$(lxc config get "$name" user.ss-fresh.pid)" ] || continue
    kill -0 "${name#ss-fresh-}" 2>/dev/null || lxc delete -f "$name" >/dev/null
  done
  for name in $(lxc storage list --format csv | cut -d, -f1 | grep -E '^ss-fresh-[0-9]+$'); do
    kill -0 "${name#ss-fresh-}" 2>/dev/null && continue
    source=$(lxc storage get "$name" source)
    lxc storage delete "$name" >/dev/null
    case "$source" in /var/tmp/ss-e2e.*/pool) rm -rf --one-file-system "${source%/pool}" ;; esac
  done
  for name in $(lxc image alias list --format csv | cut -d, -f1 | grep -E '^ss-fresh-[0-9]+$'); do
    kill -0 "${name#ss-fresh-}" 2>/dev/null || lxc image delete "$name" >/dev/null
  done
  local rule
  while read -r rule; do
    name=$(grep -o 'ss-fresh-[0-9]*' <<< "$rule")
    # shellcheck disable=SC2086  # (the rule's words, as iptables printed them)
    kill -0 "${name#ss-fresh-}" 2>/dev/null || iptables -D ${rule#-A }
  done < <(iptables -S FORWARD | grep -E -- '--comment "?ss-fresh-[0-9]+' || true)
}

# fresh_share_caches: the caches, bound into the fresh machine: the downloads owned by its root,
# ccache's by dev (uid 1000), who builds.
fresh_share_caches() {
  local idmap uid gid spec dir path id
  idmap=$(lxc config get "$FRESH" volatile.idmap.next)
  uid=$(jq -r '[.[] | select(.Isuid and .Nsid == 0)][0].Hostid' <<< "$idmap")
  gid=$(jq -r '[.[] | select(.Isgid and .Nsid == 0)][0].Hostid' <<< "$idmap")
  for spec in apt:/var/cache/apt/archives:0 ss-debs:/home/dev/.cache/ss/debs:0 \
    ss-npm:/home/dev/.cache/ss/npm:0 ccache:/home/dev/.cache/ccache:1000; do
    id=${spec##*:}
    spec=${spec%:*}
    path=${spec#*:}
    dir="$FRESH_CACHE/${spec%%:*}"
    mkdir -p "$dir"
    [ "$(stat -c %u:%g "$dir")" = "$((uid + id)):$((gid + id))" ] ||
      chown -R "$((uid + id)):$((gid + id))" "$dir"
    lxc config device add "$FRESH" "cache-$(basename "$dir")" disk source="$dir" path="$path" >/dev/null
  done
}

# fresh_wait_ready: systemd has finished booting, and Debian's archive resolves.
fresh_wait_ready() {
  local state="" i
  # (Until systemd has its bus up, systemctl answers nothing.)
  for ((i = 0; i < 120 && ${#state} == 0; i++)); do
    state=$(timeout 120 lxc exec "$FRESH" -- systemctl is-system-running --wait 2>/dev/null \
      </dev/null) || true
    [ -n "$state" ] || sleep 0.5
  done
  case "$state" in
    running) ;;
    degraded) lxc exec "$FRESH" -- systemctl --failed --no-pager </dev/null >&3 ;;
    *)
      echo "the fresh machine did not boot: systemd is '$state'" >&2
      lxc exec "$FRESH" -- systemctl --failed --no-pager </dev/null >&2 || true
      return 1
      ;;
  esac
  for ((i = 0; i < 300; i++)); do
    lxc exec "$FRESH" -- getent hosts deb.debian.org </dev/null >/dev/null && return 0
    sleep 0.2
  done
  echo "the fresh machine cannot resolve deb.debian.org" >&2
  lxc exec "$FRESH" -- networkctl status --no-pager </dev/null >&2 || true
  lxc exec "$FRESH" -- cat /etc/resolv.conf </dev/null >&2 || true
  return 1
}

# fresh_local_cas: the certificate authorities this host adds to Debian's (the .crt files in
# /usr/local/share/ca-certificates), in the same place in the fresh machine: a network whose
# egress re-signs TLS, as this build machine's does, needs them on every machine in it. They
# reach the system store when ca-certificates is installed (install.sh installs it). Nothing more
# of the host's trust set-up goes in: no NODE_EXTRA_CA_CERTS, SSL_CERT_FILE or the like.
fresh_local_cas() {
  [ -d /usr/local/share/ca-certificates ] || return 0
  tar -C /usr/local/share --owner=0 --group=0 --numeric-owner -cf - ca-certificates |
    lxc exec "$FRESH" -- sh -c 'mkdir -p /usr/local/share && tar -C /usr/local/share -xf -'
}

# fresh_copy_source: the checkout under test into ~dev/ss, owned by dev.
fresh_copy_source() {
  local list="$E2E_ROOT/source-files"
  if git -C "$SS_SOURCE_DIR" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked and untracked files, not ignored ones; a tracked file deleted in the tree is left out.
    git -C "$SS_SOURCE_DIR" ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do
        if [ -e "$SS_SOURCE_DIR/$f" ] || [ -L "$SS_SOURCE_DIR/$f" ]; then printf '%s\0' "$f"; fi
      done > "$list"
    tar -C "$SS_SOURCE_DIR" --null -T "$list" --owner=0 --group=0 --numeric-owner -cf -
  else
    tar -C "$SS_SOURCE_DIR" --exclude='./build*' --exclude=./.git --owner=0 --group=0 \
      --numeric-owner -cf - .
  fi | lxc exec "$FRESH" -- sh -c 'mkdir -p /home/dev/ss && tar -C /home/dev/ss -xf - &&
    chown -R dev:dev /home/dev/ss'
}

# fresh_sh CMD, fresh_dev CMD: CMD in a login shell of root, or of dev, in the fresh machine
# (what a user's terminal has).
fresh_sh() {
  lxc exec "$FRESH" -- su -l root -c "$1" </dev/null
}
fresh_dev() {
  lxc exec "$FRESH" -- su -l dev -c "$1" </dev/null
}

# stamp: each line of stdin with the wall clock in front (seconds, from EPOCHREALTIME).
stamp() {
  local line
  while IFS= read -r line || [ -n "$line" ]; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}

# times_add START WHAT: one line of the wall-time file, from START (an EPOCHREALTIME) to now.
times_add() {
  awk -v a="$1" -v b="$EPOCHREALTIME" -v w="$2" 'BEGIN { printf "%8.1f  %s\n", b - a, w }' >> "$TIMES"
}

# times_print: the wall-time file on the test output, kept as the cache's last-times.txt too.
times_print() {
  { echo "# fresh machine: wall time by step (seconds)"; cat "$TIMES"; } > "$FRESH_CACHE/.last-times.$$"
  mv -T "$FRESH_CACHE/.last-times.$$" "$FRESH_CACHE/last-times.txt"
  cat "$FRESH_CACHE/last-times.txt" >&3
  : > "$BATS_FILE_TMPDIR/times-printed"
}

@test "the fresh machine boots systemd, has none of ss's packages and reaches Debian's archive" {
  run fresh_sh 'cat /proc/1/comm'
  assert_output systemd
  run fresh_sh "dpkg-query -W -f '\${db:Status-Abbrev} \${Package}\n'"
  assert_success
  for p in iproute2 procps curl ca-certificates git cmake g++ docker.io lxd debootstrap qemu-utils; do
    refute_line --regexp "^ii +$p\$"
  done
  run fresh_sh 'command -v ss'
  assert_output ""
  # No package lists yet (install.sh has to fetch them), but the archive answers.
  run fresh_sh 'find /var/lib/apt/lists -name "*_Packages*" | wc -l'
  assert_output 0
  run fresh_sh "/usr/lib/apt/apt-helper download-file $FRESH_MIRROR/dists/$FRESH_RELEASE/InRelease \
    /tmp/InRelease >/dev/null && grep '^Codename:' /tmp/InRelease && rm /tmp/InRelease"
  assert_success
  assert_output "Codename: $FRESH_RELEASE"
}

@test "install.sh installs ss on the fresh machine: packages, build, /usr/local, vm setup, image build" {
  local log="$E2E_ROOT/install.log" t0 status
  t0=$EPOCHREALTIME
  # (2>&1 inside: one stream, so that its lines keep their order.)
  fresh_dev "cd ~/ss && timeout $FRESH_INSTALL_LIMIT ./install.sh --backend docker 2>&1" 2>&1 |
    stamp > "$log"
  status=${PIPESTATUS[0]}
  # Each of install.sh's steps (and ss's, inside them) until the next one: the "==> " lines.
  awk -v end="$EPOCHREALTIME" -v t0="$t0" '
    function flush(t) { if (name != "") printf "%8.1f  %s\n", t - from, name }
    { t = $1; line = substr($0, index($0, " ") + 1)
      if (line ~ /^==> /) { flush(t); name = substr(line, 1, 110); from = t } }
    END { flush(end); printf "%8.1f  install.sh in all\n", end - t0 }' "$log" >> "$TIMES"
  times_print
  if [ "$status" != 0 ]; then
    echo "install.sh failed in the fresh machine (status $status); its last lines:"
    awk -v t0="$t0" '{ printf "%7.1f %s\n", $1 - t0, substr($0, index($0, " ") + 1) }' "$log" |
      tail -n 80
    return 1
  fi
}

@test "ss new demo && ss demo -- true on the fresh machine" {
  run fresh_dev 'timeout 900 sh -c "ss new demo && ss demo -- true"'
  assert_success
  # dev's own files: Docker's sandbox user (uid 1000 inside) is dev, and nothing needs mapping.
  run fresh_dev 'ss demo -- sh -c "echo made > inside.txt" && stat -c %U ~/super-sandbox/projects/demo/inside.txt'
  assert_success
  assert_output dev
}

@test "ss --version from /usr/local/bin in a plain login shell, for root and for a new user" {
  run fresh_sh 'command -v ss && ss --version'
  assert_success
  assert_line --index 0 /usr/local/bin/ss
  assert_line --index 1 --regexp '^ss [0-9]+\.[0-9]+\.[0-9]+ '
  lxc exec "$FRESH" -- useradd -m -s /bin/bash fresh-user </dev/null
  run lxc exec "$FRESH" -- su -l fresh-user -c 'command -v ss && ss --version' </dev/null
  assert_success
  assert_line --index 0 /usr/local/bin/ss
  assert_line --index 1 --regexp '^ss [0-9]+\.[0-9]+\.[0-9]+ '
}

@test "iproute2's ss -tlnp answers with ss installed, and with a second copy of ss earlier on PATH" {
  run fresh_sh 'ss -tlnp'
  assert_success
  assert_line --index 0 --regexp '^State +Recv-Q +Send-Q '
  # The build's own bin/ss ahead of /usr/local/bin/ss: the dispatcher has to pass over both
  # copies of itself to reach iproute2's.
  run fresh_sh 'PATH=/home/dev/ss/build/release/bin:$PATH ss -tlnp'
  assert_success
  assert_line --index 0 --regexp '^State +Recv-Q +Send-Q '
}
