#!/usr/bin/env bats
# The image cache: a build meeting a full disk, a build killed midway, and removing an image with
# its copies in LXD and the container engines. Each test has an image cache of its own (never the shared one).

load helpers

setup() {
  e2e_home
  export SS_CACHE="$E2E_ROOT/cache"
  DISK= builder= started=()
}

teardown() {
  if [ -n "$builder" ]; then kill "$builder" 2>/dev/null || true; wait "$builder" 2>/dev/null || true; fi
  if [ -n "$DISK" ]; then
    # debootstrap's mounts inside the half-built tree, if any outlived it, then the disk.
    grep -o " $DISK/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
    umount -l "$DISK" 2>/dev/null || true
  fi
  for n in "${containers[@]:-}"; do [ -z "$n" ] || docker rm -f "$n" >/dev/null 2>&1 || true; done
  docker rmi -f "ss-sandbox:$ID" >/dev/null 2>&1 || true
  podman rmi -f "localhost/ss-sandbox:$ID" >/dev/null 2>&1 || true
  lxc image delete "ss-$ID" >/dev/null 2>&1 || true
  for b in "${started[@]:-}"; do [ -z "$b" ] || ss vm setup --backend "$b" --stop >/dev/null 2>&1 || true; done
  e2e_home_remove
}

@test "the disk filling up during an image build: the words, exit 73, nothing half-built left" {
  # The cache on a small filesystem of its own (an ext4 file on a loop device), so nothing else
  # on the machine runs short; just over the 8 GiB the build asks for before it starts.
  DISK="$E2E_ROOT/disk"
  mkdir -p "$DISK"
  truncate -s 8600M "$E2E_ROOT/disk.img"
  mkfs.ext4 -q -m 0 -F "$E2E_ROOT/disk.img"
  mount -o loop "$E2E_ROOT/disk.img" "$DISK"
  export SS_CACHE="$DISK/cache"
  ss vm image build --force > "$E2E_ROOT/build.out" 2>&1 3>&- &
  builder=$!
  # Once the build has its work directory, something else takes all but a little of the space.
  for _ in $(seq 600); do
    compgen -G "$SS_CACHE/images/.build-*" >/dev/null && break
    sleep 0.1
  done
  compgen -G "$SS_CACHE/images/.build-*" >/dev/null || { cat "$E2E_ROOT/build.out"; false; }
  free_kb=$(df --output=avail -k "$DISK" | tail -1)
  fallocate -l "$(( (free_kb - 20 * 1024) * 1024 ))" "$DISK/filler"
  status=0
  wait "$builder" || status=$?
  builder=
  cat "$E2E_ROOT/build.out"
  [ "$status" -eq 73 ]
  grep -E "^ss-vm: error: image build failed at .*: the disk holding $SS_CACHE/images is full \([0-9]+ MB free\)$" "$E2E_ROOT/build.out"
  grep -F "free some space, or move the cache with SS_CACHE=/other/disk" "$E2E_ROOT/build.out"
  # No image, no work directory, no mounts left inside the cache.
  run ss vm image ls
  assert_output ""
  run compgen -G "$SS_CACHE/images/.build-*"
  assert_failure
  run grep -c " $DISK/" /proc/mounts
  assert_output 0
  # With the space back, nothing stands in the way of the next build: the lock is free.
  rm "$DISK/filler"
  for lock in "$SS_CACHE"/images/.*.lock; do flock -n "$lock" true; done
}

@test "an image build killed midway leaves no mount on the host; the next build clears its files" {
  # Its own session, so the whole build can be killed at once, as the OOM killer or a crash
  # would (Ctrl-C ends it cleanly: its children fail and it unwinds).
  setsid ss vm image build --force > "$E2E_ROOT/build.out" 2>&1 3>&- &
  builder=$!
  # Until package scripts run in the new tree, with /proc, /sys and /dev mounted in it.
  for _ in $(seq 1800); do
    grep -q "apt-get install" "$E2E_ROOT/build.out" && break
    kill -0 "$builder" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "apt-get install" "$E2E_ROOT/build.out" || { cat "$E2E_ROOT/build.out"; false; }
  # The build sees its mounts; the host's namespace never has them.
  for _ in $(seq 100); do
    grep -q " $SS_CACHE/images/.build-.*/rootfs/proc " "/proc/$builder/mounts" && break
    sleep 0.1
  done
  grep -q " $SS_CACHE/images/.build-.*/rootfs/proc " "/proc/$builder/mounts"
  run grep -c " $SS_CACHE/" /proc/mounts
  assert_output 0
  kill -KILL -- "-$builder"
  status=0
  wait "$builder" || status=$?
  builder=
  [ "$status" -ne 0 ]
  run grep -c " $SS_CACHE/" /proc/mounts
  assert_output 0
  work=$(compgen -G "$SS_CACHE/images/.build-*")
  [ -d "$work/rootfs" ]
  # The next build of that image removes what the killed one left, before anything else
  # (here it then stops: debootstrap is not on its PATH, nor apt-get to install it).
  mkdir "$E2E_ROOT/path"
  for f in /usr/bin/* /usr/sbin/*; do
    case ${f##*/} in apt-get | debootstrap) ;; *) ln -sf "$f" "$E2E_ROOT/path/" ;; esac
  done
  run --separate-stderr env PATH="$SS_BUILD_DIR/bin:$E2E_ROOT/path" ss vm image build
  assert_failure 69
  assert_equal "${stderr_lines[0]}" "ss-vm: error: building the image needs 'debootstrap', which is not installed"
  assert_equal "${stderr_lines[1]}" "hint: install it: apt-get install debootstrap"
  assert_not_exists "$work"
}

@test "image rm removes the image's copies in LXD, Docker and Podman; one in use is kept, with the engine's words" {
  # An image as a build leaves it (a one-binary root filesystem stands in for Debian), imported
  # into each engine under the names ss gives it.
  ID=bookworm-rmtest$$
  dir="$SS_CACHE/images/$ID"
  mkdir -p "$dir"
  busybox_tar "$dir/rootfs.tar"
  echo "{\"id\": \"$ID\", \"release\": \"bookworm\", \"created\": \"2026-11-26T00:00:00Z\"}" > "$dir/image.json"
  for b in lxd docker podman; do
    ss vm setup --backend "$b" --json > "$E2E_ROOT/setup-$b.json"
    jq -e '.started | length > 0' "$E2E_ROOT/setup-$b.json" >/dev/null && started+=("$b")
  done
  printf 'architecture: x86_64\ncreation_date: 1764115200\n' > "$E2E_ROOT/metadata.yaml"
  tar -C "$E2E_ROOT" -cf "$E2E_ROOT/meta.tar" metadata.yaml
  lxc image import "$E2E_ROOT/meta.tar" "$dir/rootfs.tar" --alias "ss-$ID" >/dev/null
  docker import "$dir/rootfs.tar" "ss-sandbox:$ID" >/dev/null
  podman import "$dir/rootfs.tar" "localhost/ss-sandbox:$ID" >/dev/null 2>&1
  # A container made from Docker's copy: Docker keeps that copy, and ss says so.
  containers=("rmtest-$$")
  docker create --name "rmtest-$$" "ss-sandbox:$ID" /bin/sh >/dev/null
  run --separate-stderr ss vm image rm "$ID" --yes
  assert_success
  assert_equal "$output" "Removed: $ID
Removed its copy in lxd
Removed its copy in podman"
  [[ "$stderr" == "ss-vm: warning: kept its copy in docker: cannot remove image $ID from Docker: conflict: "*" is using its referenced image "* ]] || { echo "$stderr"; false; }
  assert_not_exists "$dir"
  run lxc image info "ss-$ID"
  assert_failure
  run podman image exists "localhost/ss-sandbox:$ID"
  assert_failure
  docker image inspect "ss-sandbox:$ID" >/dev/null
}
