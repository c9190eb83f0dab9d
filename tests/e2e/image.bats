#!/usr/bin/env bats
# The image build meeting a full disk: the disk holding the image cache fills up while debootstrap
# runs (another program takes the space). The build stops with the words that say so, exit 73,
# and leaves no half-built image behind. The cache is a small filesystem of its own (an ext4 file
# on a loop device), so nothing else on the machine runs short.

load helpers

setup() {
  e2e_home
  DISK="$E2E_ROOT/disk"
  mkdir -p "$DISK"
  # Just over the 8 GiB the build asks for before it starts; sparse, so it costs little.
  truncate -s 8600M "$E2E_ROOT/disk.img"
  mkfs.ext4 -q -m 0 -F "$E2E_ROOT/disk.img"
  mount -o loop "$E2E_ROOT/disk.img" "$DISK"
  export SS_CACHE="$DISK/cache"
  builder=
}

teardown() {
  if [ -n "$builder" ]; then kill "$builder" 2>/dev/null || true; wait "$builder" 2>/dev/null || true; fi
  # debootstrap's mounts inside the half-built tree, if any outlived it, then the disk.
  grep -o " $DISK/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  umount -l "$DISK" 2>/dev/null || true
  e2e_home_remove
}

@test "the disk filling up during an image build: the words, exit 73, nothing half-built left" {
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
