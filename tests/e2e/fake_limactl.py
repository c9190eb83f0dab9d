#!/usr/bin/python3
# fake_limactl.py: a stand-in for `limactl` of Lima 2.0.0, so that ss's Lima backend can be
# tested end to end on a Linux machine without Lima. The test suite puts a symlink named `limactl`
# to this file on PATH. It must run as root.
#
# What it keeps of Lima's contract (read from Lima's source, v2.0.0 unless noted):
#   - $LIMA_HOME (default ~/.lima): NAME/lima.yaml (the template as given), NAME/lima-version,
#     NAME/ssh.config (for `ssh -F`), NAME/serial.log (the console), and Lima's key pair
#     _config/user{,.pub} (ed25519, comment "lima", made on first need). Instance names are Lima's
#     identifiers; directories starting with "_" or "." are not instances.
#   - create, start, stop, delete, list, edit, shell and snapshot, with Lima's flags, defaults,
#     messages and exit statuses, logged as logrus does (`time=... level=... msg=...`, or
#     `INFO[0000] ...` on a terminal; an error is level=fatal and exit status 1); --version.
#   - The template schema of Lima 2.0.0 (pkg/limatype/lima_yaml.go), every key at every depth with
#     its type, Lima's defaults (pkg/limayaml/defaults.go, the drivers' FillConfig) and checks
#     (validate.go).
#   - `list --json`: one compact object per line, shaped as store.Inspect + FormatData; empty
#     fields and empty objects are left out, as Go's omitempty and Lima's yq pass do.
#   - The boot order of cloud-init and Lima's boot.sh: `mode: boot` scripts (cloud-init's bootcmd:
#     all of them in one /bin/sh script, so a shebang is only a comment there), the mounts, the
#     user (an existing one is kept, as cloud-init does) with Lima's key and passwordless sudo,
#     new ssh host keys (Lima's instance-id changes every boot), sshd; then boot.sh: `dependency`
#     scripts, `data` files, `system` scripts (run as files: their shebang counts), `user` scripts
#     (`sudo -iu USER`), /run/lima-boot-done. `limactl start` returns when that file is there and
#     Lima's key logs the user in over ssh. A failing script is a WARNING line in the guest's
#     /var/log/cloud-init-output.log and `limactl start` still succeeds, as with Lima.
#
# What it does differently, and why:
#   - No VM. The VM is a private mount, PID and UTS namespace (util-linux `unshare`), whose PID 1
#     is this file (`limactl __vm NAME PORT CACHE`, internal) and whose root is an overlayfs:
#     lower = the image's rootfs.tar (ss keeps it beside base.qcow2) unpacked once into
#     $FAKE_LIMA_CACHE (default $LIMA_HOME/_cache)/rootfs-KEY (Lima's basedisk), upper =
#     NAME/diffdisk/ (Lima's diffdisk).
#     Killing that PID 1 ends everything in it, and its mounts vanish with it. fake.json holds the
#     PIDs (`unshare` stands for the host agent, PID 1 for the driver) and the ssh port.
#   - The network is the host's: the image's own sshd listens on the host's 127.0.0.1:PORT, where
#     Lima forwards that port to the guest's port 22.
#   - Shares are idmapped bind mounts, whatever the mountType, made at cloud-init's mounts stage
#     (so even reverse-sshfs ones are there before boot.sh): the share's owner on the host is the
#     template's user in the guest and the reverse, as 9p and virtiofs show the host user that
#     runs QEMU as the guest user when their ids match; no other id is mapped, so root in the
#     guest cannot write there (9p would write as the host user); `writable: false` is read-only
#     and shows the owner's files as nobody's, so that root in the guest, which has every
#     capability here, cannot write there even after a remount (QEMU's readonly=on is enforced
#     on the host's side).
#   - It runs as root (real limactl refuses to). It refuses unknown template keys (real Lima only
#     warns "Non-strict YAML detected; please check for typos") so that a typo fails a test.
#   - Snapshots are `cp -a` copies of the overlay's upper dir: disk only, never memory, and not
#     frozen when taken while the VM runs. `apply` works only when stopped (qemu-img's offline
#     revert); while running it is refused, as the fake cannot revert a live VM (Lima's loadvm
#     would, and QEMU refuses to load disk-only snapshots that way). A duplicate tag is refused
#     (qemu-img would add a second snapshot of that name, savevm would replace it).
#   - Not provided: templates (template:NAME, `base:`, URLs), so `limactl start NAME` of a missing
#     instance fails where Lima would create one from template:default; yq beyond
#     `--set '.a.b = VALUE'`; `mode: yq` and `ansible` provisioning, readiness probes, port
#     forwards, containerd, the guest agent, `env:` in /etc/environment, the timezone. `limactl
#     shell` uses no ssh ControlMaster (a persistent master would hold the caller's pipes open).
#   - `list` prints every table column; a stopped instance's sshLocalPort is its template's
#     ssh.localPort (Lima 2.2 reads it back from ssh.config).

import contextlib
import copy
import ctypes
import datetime
import fcntl
import glob
import hashlib
import ipaddress
import json
import os
import platform
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

import yaml

VERSION = "2.0.0"
GUEST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SELF = os.path.realpath(__file__)
STARTED = time.time()


# ---------------------------------------------------------------------------------------------
# Logging, the way logrus's text formatter writes it

class Fatal(Exception):
    """An error limactl reports as level=fatal, exiting 1."""


class NotFound(Exception):
    """The instance has no lima.yaml (Lima's os.ErrNotExist from store.Inspect)."""


LEVELS = {"info": ("INFO", 36), "warning": ("WARN", 33), "error": ("ERRO", 31),
          "fatal": ("FATA", 31)}


def go_quote(s):
    """Go's %q of a string."""
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a",
               "\b": "\\b", "\f": "\\f", "\v": "\\v"}
    out = []
    for c in s:
        if c in escapes:
            out.append(escapes[c])
        elif ord(c) < 0x20 or ord(c) == 0x7f:
            out.append("\\x%02x" % ord(c))
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def logfmt(value):
    value = str(value)
    plain = all(c.isascii() and (c.isalnum() or c in "-._/@^+") for c in value)
    return value if plain else go_quote(value)


def log(level, msg, **fields):
    keys = sorted(fields)
    if sys.stderr.isatty():
        name, color = LEVELS[level]
        line = "\x1b[%dm%s\x1b[0m[%04d] %-44s " % (color, name, time.time() - STARTED, msg)
        line += "".join(" \x1b[%dm%s\x1b[0m=%s" % (color, k, logfmt(fields[k])) for k in keys)
    else:
        now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        parts = ["time=" + go_quote(now.replace("+00:00", "Z")), "level=" + level,
                 "msg=" + logfmt(msg)]
        line = " ".join(parts + ["%s=%s" % (k, logfmt(fields[k])) for k in keys])
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def info(msg, **fields):
    log("info", msg, **fields)


def warn(msg, **fields):
    log("warning", msg, **fields)


# ---------------------------------------------------------------------------------------------
# Paths and small helpers

def lima_home():
    home = os.environ.get("LIMA_HOME") or os.path.join(os.path.expanduser("~"), ".lima")
    return os.path.realpath(home) if os.path.exists(home) else home


def config_dir():
    return os.path.join(lima_home(), "_config")


def identity_file():
    return os.path.join(config_dir(), "user")


def host_arch():
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def hostname_of(name):
    return "lima-" + name.replace(".", "-").replace("_", "-")


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return {}


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


@contextlib.contextmanager
def dir_lock(path):
    """flock on a directory, as Lima's lockutil.WithDirLock."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def obj(parent, key):
    """parent[key] as a dict, made if absent or null."""
    if not isinstance(parent.get(key), dict):
        parent[key] = {}
    return parent[key]


def default(d, key, value):
    if d.get(key) is None:
        d[key] = value


def format_float(f):
    """pflag's Float32 Value.String()."""
    return format(float(f), "g")


# ---------------------------------------------------------------------------------------------
# Sizes (docker/go-units: RAMInBytes and BytesSize)

SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
SIZE_NAMES = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"]


def ram_in_bytes(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?) ?([kKmMgGtTpP])?[iI]?[bB]?", str(s))
    if not m:
        raise ValueError("invalid size: '%s'" % s)
    return int(float(m.group(1)) * SIZE_UNITS[(m.group(2) or "").lower()])


def bytes_size(n):
    n, i = float(n), 0
    while n >= 1024 and i < len(SIZE_NAMES) - 1:
        n, i = n / 1024, i + 1
    return "%.4g%s" % (n, SIZE_NAMES[i])


def parse_duration(s):
    """Go's time.ParseDuration, for --timeout."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)", s)
    if s == "0":
        return 0.0
    if not parts or "".join(a + b for a, b in parts) != s:
        raise Fatal('invalid argument %s for "--timeout" flag: time: invalid duration %s'
                    % (go_quote(s), go_quote(s)))
    return sum(float(a) * units[b] for a, b in parts)


# ---------------------------------------------------------------------------------------------
# The template schema of Lima 2.0.0 (pkg/limatype/lima_yaml.go)

S, I, U32, B, ANY = "string", "int", "uint32", "bool", "any"


def seq(item):
    return ("list", item)


def mapping(value):
    return ("map", value)


FILE = {"location": S, "arch": S, "digest": S}
LOCATOR = ("either", S, {"url": S, "digest": S})
ROSETTA = {"enabled": B, "binfmt": B}
SCHEMA = {
    "base": ("either", S, seq(LOCATOR)),
    "minimumLimaVersion": S,
    "vmType": S,
    "vmOpts": {"qemu": {"minimumVersion": S, "cpuType": mapping(S)}, "vz": {"rosetta": ROSETTA},
               "*": ANY},
    "os": S,
    "arch": S,
    "images": seq(dict(FILE, kernel=dict(FILE, cmdline=S), initrd=FILE)),
    "cpuType": mapping(S),
    "cpus": I,
    "memory": S,
    "disk": S,
    "additionalDisks": seq(("either", S, {"name": S, "format": B, "fsType": S,
                                          "fsArgs": seq(S)})),
    "mounts": seq({"location": S, "mountPoint": S, "writable": B,
                   "sshfs": {"cache": B, "followSymlinks": B, "sftpDriver": S},
                   "9p": {"securityModel": S, "protocolVersion": S, "msize": S, "cache": S},
                   "virtiofs": {"queueSize": I}}),
    "mountTypesUnsupported": seq(S),
    "mountType": S,
    "mountInotify": B,
    "ssh": {"localPort": I, "loadDotSSHPubKeys": B, "forwardAgent": B, "forwardX11": B,
            "forwardX11Trusted": B},
    "firmware": {"legacyBIOS": B, "images": seq(dict(FILE, vmType=S))},
    "audio": {"device": S},
    "video": {"display": S, "vnc": {"display": S}},
    "provision": seq({"mode": S, "skipDefaultDependencyResolution": B, "script": S,
                      "file": LOCATOR, "playbook": S, "content": S, "overwrite": B,
                      "owner": S, "path": S, "permissions": S, "expression": S, "format": S}),
    "upgradePackages": B,
    "containerd": {"system": B, "user": B, "archives": seq(FILE)},
    "guestInstallPrefix": S,
    "probes": seq({"mode": S, "description": S, "script": S, "file": LOCATOR, "hint": S}),
    "portForwards": seq({"guestIPMustBeZero": B, "guestIP": S, "guestPort": I,
                         "guestPortRange": ("pair", I), "guestSocket": S, "hostIP": S,
                         "hostPort": I, "hostPortRange": ("pair", I), "hostSocket": S,
                         "proto": S, "reverse": B, "ignore": B, "static": B}),
    "copyToHost": seq({"guest": S, "host": S, "deleteOnStop": B}),
    "message": S,
    "networks": seq({"lima": S, "socket": S, "vzNAT": B, "macAddress": S, "interface": S,
                     "metric": U32}),
    "env": mapping(S),
    "param": mapping(S),
    "dns": seq(S),
    "hostResolver": {"enabled": B, "ipv6": B, "hosts": mapping(S)},
    "propagateProxyEnv": B,
    "caCerts": {"removeDefaults": B, "files": seq(S), "certs": seq(S)},
    "rosetta": ROSETTA,
    "plain": B,
    "timezone": S,
    "nestedVirtualization": B,
    "user": {"name": S, "comment": S, "home": S, "shell": S, "uid": U32},
}

YAML_TAG = "tag:yaml.org,2002:"


class TypeMismatch(Exception):
    pass


def where(node):
    return "[%d:%d]" % (node.start_mark.line + 1, node.start_mark.column + 1)


def node_kind(node):
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    if isinstance(node, yaml.SequenceNode):
        return "sequence"
    tag = node.tag.replace(YAML_TAG, "")
    return {"str": "string", "float": "float64"}.get(tag, tag)


def mismatch(node, want, path):
    return TypeMismatch("%s cannot unmarshal %s into Go value of type %s (field %s)"
                        % (where(node), node_kind(node), want, path))


def construct(node):
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def decode(node, spec, path, unknown):
    """The YAML node as Lima's Go struct would take it: types checked, unknown keys collected."""
    if isinstance(node, yaml.ScalarNode) and node.tag == YAML_TAG + "null":
        return None
    if isinstance(spec, dict):
        return decode_struct(node, spec, path, unknown)
    kind = spec[0] if isinstance(spec, tuple) else spec
    if kind == "either":
        alternative = spec[1] if isinstance(node, yaml.ScalarNode) else spec[2]
        return decode(node, alternative, path, unknown)
    if kind in ("list", "pair"):
        if not isinstance(node, yaml.SequenceNode) or kind == "pair" and len(node.value) != 2:
            raise mismatch(node, "[2]int" if kind == "pair" else "slice", path)
        return [decode(item, spec[1], "%s[%d]" % (path, i), unknown)
                for i, item in enumerate(node.value)]
    if kind == "map":
        if not isinstance(node, yaml.MappingNode):
            raise mismatch(node, "map", path)
        return {k.value: decode(v, spec[1], path + "." + k.value, unknown) for k, v in node.value}
    return decode_scalar(node, kind, path)


def decode_struct(node, spec, path, unknown):
    if not isinstance(node, yaml.MappingNode):
        raise mismatch(node, "struct", path)
    out, seen = {}, {}
    for knode, vnode in node.value:
        if knode.value in seen:
            raise TypeMismatch("%s mapping key %s already defined at %s"
                               % (where(knode), go_quote(knode.value), seen[knode.value]))
        seen[knode.value] = where(knode)
        sub = spec.get(knode.value, spec.get("*"))
        if sub is None:
            unknown.append((where(knode), knode.value, path + "." + knode.value))
        else:
            out[knode.value] = decode(vnode, sub, path + "." + knode.value, unknown)
    return out


def decode_scalar(node, kind, path):
    if kind == ANY:
        return construct(node)
    if not isinstance(node, yaml.ScalarNode):
        raise mismatch(node, kind, path)
    tag = node_kind(node)
    if kind == S:
        return node.value
    if kind == B and tag == "bool":
        return construct(node)
    if kind in (I, U32) and tag == "int":
        value = construct(node)
        if kind == I or 0 <= value < 1 << 32:
            return value
    raise mismatch(node, kind, path)


def decode_template(text, origin):
    """The template as Lima's Unmarshal reads it, and the keys its strict mode would flag."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        unknown = []
        data = decode(root, SCHEMA, "", unknown) if root is not None else {}
    except (yaml.YAMLError, TypeMismatch) as e:
        raise Fatal("failed to unmarshal YAML (%s): %s" % (origin, e))
    return data or {}, unknown


def refuse_unknown(unknown, origin):
    for pos, key, _ in unknown:
        warn("Non-strict YAML detected; please check for typos", comment=origin,
             error="%s unknown field %s" % (pos, go_quote(key)))
    raise Fatal("the fake limactl refuses unknown template keys: " + "; ".join(
        "%s unknown field %s (%s)" % (pos, go_quote(key), path) for pos, key, path in unknown))


# ---------------------------------------------------------------------------------------------
# Go template actions in the template: only {{.Field}} and {{.Param.Key}}

ACTION = re.compile(r"(\s*)\{\{(-?)\s*\.(\w+)(?:\.(\w+))?\s*(-?)\}\}(\s*)")


def expand(text, data, what):
    """text/template on a map, as Lima's executeGuestTemplate/executeHostTemplate."""
    def one(m):
        value = data.get(m.group(3), "<no value>")
        if m.group(4):
            if not isinstance(value, dict):
                raise ValueError(m.group(0))
            value = value.get(m.group(4), "<no value>")
        lead = "" if m.group(2) else m.group(1)
        trail = "" if m.group(5) else m.group(6)
        return lead + str(value) + trail
    try:
        out = ACTION.sub(one, text)
        if "{{" not in out:
            return out
    except ValueError:
        pass
    warn("Couldn't process %s %s as a template (the fake limactl knows only {{.Field}})"
         % (what, go_quote(text)))
    return text


def host_user():
    pw = pwd.getpwuid(os.getuid())
    valid = re.fullmatch(r"[a-z_][a-z0-9_-]*", pw.pw_name) and pw.pw_name != "admin"
    return {"name": pw.pw_name if valid else "lima", "comment": pw.pw_gecos.split(",")[0],
            "uid": os.getuid()}


def host_vars(inst_dir, param):
    return {"Dir": inst_dir, "Name": os.path.basename(inst_dir), "UID": os.getuid(),
            "User": pwd.getpwuid(os.getuid()).pw_name, "Home": os.path.expanduser("~"),
            "Param": param, "GlobalTempDir": "/tmp", "TempDir": tempfile.gettempdir(),
            "Instance": os.path.basename(inst_dir), "LimaHome": lima_home()}


# ---------------------------------------------------------------------------------------------
# Lima's defaults (pkg/limayaml/defaults.go and the drivers' FillConfig)

def fill_defaults(template, inst_dir):
    c = copy.deepcopy(template)
    name = os.path.basename(inst_dir)
    param = c["param"] = c.get("param") or {}
    user = obj(c, "user")
    for key, value in host_user().items():
        default(user, key, value)
    default(user, "home", "/home/{{.User}}.linux")
    default(user, "shell", "/bin/bash")
    guest = {"Name": name, "Hostname": hostname_of(name), "UID": user["uid"],
             "User": user["name"], "Home": user["home"], "Param": param}
    user["home"] = guest["Home"] = expand(user["home"], guest, "`user.home` value")
    default(c, "vmType", "qemu")
    default(c, "os", "Linux")
    if c.get("arch") in (None, "", "default"):
        c["arch"] = host_arch()
    fill_images(c)
    if not c.get("cpus"):
        c["cpus"] = min(4, os.cpu_count())
    if not c.get("memory"):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        c["memory"] = bytes_size(min(4 << 30, total // 2))
    if not c.get("disk"):
        c["disk"] = "100GiB"
    ssh = obj(c, "ssh")
    default(ssh, "localPort", 0)
    for key in ("loadDotSSHPubKeys", "forwardAgent", "forwardX11", "forwardX11Trusted"):
        default(ssh, key, False)
    fill_provision(c, guest)
    containerd = obj(c, "containerd")
    default(containerd, "system", False)
    default(containerd, "user", c["arch"] in ("x86_64", "aarch64"))
    default(c, "upgradePackages", False)
    default(c, "guestInstallPrefix", "/usr/local")
    for rule in c.get("portForwards") or []:
        fill_port_forward(rule)
    default(c, "mountType", default_mount_type(c))
    default(c, "mountInotify", False)
    fill_mounts(c, inst_dir, guest)
    default(c, "plain", False)
    if c["plain"]:
        c["mounts"] = None
        containerd["system"] = containerd["user"] = False
        c["portForwards"] = [r for r in c.get("portForwards") or [] if r.get("static")]
    return c


def fill_images(c):
    for img in c.get("images") or []:
        default(img, "arch", c["arch"])
        for part in ("kernel", "initrd"):
            if isinstance(img.get(part), dict):
                default(img[part], "arch", img["arch"])


def fill_provision(c, guest):
    for p in c.get("provision") or []:
        default(p, "mode", "system")
        if p["mode"] == "dependency":
            default(p, "skipDefaultDependencyResolution", False)
        if p["mode"] == "data":
            p["content"] = expand(p.get("content") or "", guest, "data content")
            default(p, "overwrite", True)
        if p["mode"] in ("data", "yq"):
            p["owner"] = expand(p.get("owner") or "root:root", guest, "owner")
            if p.get("path") is not None:
                p["path"] = expand(p["path"], guest, "path")
            default(p, "permissions", "644")
        if p["mode"] == "yq":
            default(p, "format", "auto")
        if p.get("script"):
            p["script"] = expand(p["script"], guest, "provisioning script")


def fill_port_forward(rule):
    default(rule, "proto", "any")
    default(rule, "guestIP", "0.0.0.0" if rule.get("guestIPMustBeZero") else "127.0.0.1")
    default(rule, "guestIPMustBeZero", rule["guestIP"] == "0.0.0.0")
    default(rule, "hostIP", "127.0.0.1")
    port = rule.get("guestPort") or 0
    if not any(rule.get("guestPortRange") or []):
        rule["guestPortRange"] = [port, port] if port else [1, 65535]
    host = rule.get("hostPort") or 0
    if not rule.get("hostSocket") and not any(rule.get("hostPortRange") or []):
        rule["hostPortRange"] = [host, host] if host else list(rule["guestPortRange"])


def default_mount_type(c):
    if c["vmType"] == "qemu":
        return "reverse-sshfs" if "9p" in (c.get("mountTypesUnsupported") or []) else "9p"
    return "wsl2" if c["vmType"] == "wsl2" else "virtiofs"


def fill_mounts(c, inst_dir, guest):
    home = os.path.expanduser("~")
    for m in c.get("mounts") or []:
        loc = expand(m.get("location") or "", host_vars(inst_dir, c["param"]), "mount location")
        if loc == "~" or loc.startswith("~/"):
            loc = home + loc[1:]
        m["location"] = os.path.normpath(loc) if loc else loc
        if m.get("mountPoint") is None:
            m["mountPoint"] = m["location"]
        else:
            m["mountPoint"] = expand(m["mountPoint"], guest, "mount point")
        default(m, "writable", False)
        ninep = obj(m, "9p")
        default(ninep, "securityModel", "none")
        default(ninep, "protocolVersion", "9p2000.L")
        default(ninep, "msize", "128KiB")
        default(ninep, "cache", "mmap" if m["writable"] else "fscache")


# ---------------------------------------------------------------------------------------------
# Lima's checks (pkg/limayaml/validate.go, driverutil, the drivers' Validate)

ARCHS = ["x86_64", "aarch64", "armv7l", "ppc64le", "riscv64", "s390x"]
VM_TYPES = ["qemu", "vz", "wsl2", "krunkit"]
MODES = ["system", "user", "boot", "data", "dependency", "ansible", "yq"]
IDENTIFIER = re.compile(r"^[A-Za-z0-9]+(?:[._-](?:[A-Za-z0-9]+))*$")
SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")


def identifier_error(s):
    if not s:
        return "identifier must not be empty"
    if len(s) > 76:
        return "identifier %s greater than maximum length (76 characters)" % go_quote(s)
    if not IDENTIFIER.match(s):
        return "identifier %s must match %s" % (go_quote(s), IDENTIFIER.pattern)
    return None


def inst_name_error(name):
    err = identifier_error(name)
    if err:
        return "instance name %s is not a valid identifier: %s" % (go_quote(name), err)
    if name.lower().endswith((".yml", ".yaml")):
        return "instance name %s must not end with .yml or .yaml suffix" % go_quote(name)
    return None


def semver_key(s):
    m = SEMVER.fullmatch(s)
    return m and (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) is None)


def check_params_used(data):
    texts = []
    for p in data.get("provision") or []:
        texts += [p.get(k) for k in ("script", "content", "expression", "owner", "path",
                                     "permissions")]
    texts += [p.get("script") for p in data.get("probes") or []]
    texts += [r.get(k) for r in data.get("copyToHost") or [] for k in ("guest", "host")]
    texts += [r.get(k) for r in data.get("portForwards") or [] for k in ("guestSocket",
                                                                         "hostSocket")]
    texts += [m.get(k) for m in data.get("mounts") or [] for k in ("location", "mountPoint")]
    for key in data.get("param") or {}:
        used = re.compile(r"{{[^}]*\.Param\." + key + r"[^}]*}}|\bPARAM_" + key + r"\b")
        if not any(t and used.search(str(t)) for t in texts):
            raise Fatal("field `param` key %s is not used in any provision, probe, copyToHost, "
                        "or portForward" % go_quote(key))


def check_vm_type(c, path):
    if c["vmType"] not in VM_TYPES:
        raise Fatal("failed to resolve vm for %s: vmType %s is not a registered driver"
                    % (go_quote(path), go_quote(c["vmType"])))


def validate(c, warn_missing):
    errs = []
    if c.get("base"):
        errs.append("field `base` must be empty for YAML validation")
    minimum = c.get("minimumLimaVersion")
    if minimum is not None:
        if not semver_key(minimum):
            errs.append("field `minimumLimaVersion` must be a semvar value, got %s"
                        % go_quote(minimum))
        elif semver_key(minimum) > semver_key(VERSION):
            errs.append("template requires Lima version %s; this is only %s"
                        % (go_quote(minimum), go_quote(VERSION)))
    if c["os"] != "Linux":
        errs.append('field `os` must be "Linux"; got %s' % go_quote(c["os"]))
    if c["arch"] not in ARCHS:
        errs.append("field `arch` must be one of [%s]; got %s"
                    % (" ".join(ARCHS), go_quote(c["arch"])))
    errs += validate_images(c)
    for key in ("memory", "disk"):
        try:
            ram_in_bytes(c[key])
        except ValueError as e:
            errs.append("field `%s` has an invalid value: %s" % (key, e))
    for i, d in enumerate(c.get("additionalDisks") or []):
        err = identifier_error(d if isinstance(d, str) else d.get("name") or "")
        if err:
            errs.append("field `additionalDisks[%d].name is invalid`: %s" % (i, err))
    errs += validate_mounts(c, warn_missing)
    port = c["ssh"]["localPort"]
    if port:
        errs += port_errors("ssh.localPort", port)
    if c["mountType"] not in ("reverse-sshfs", "9p", "virtiofs", "wsl2"):
        errs.append('field `mountType` must be "reverse-sshfs" or "9p" or "virtiofs", or "wsl2", '
                    "got %s" % go_quote(c["mountType"]))
    errs += validate_provision(c)
    errs += validate_probes(c)
    errs += validate_port_forwards(c)
    for key, value in (c.get("param") or {}).items():
        if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_]*", key):
            errs.append('param %s name does not match regex "^[a-zA-Z][a-zA-Z0-9_]*$"'
                        % go_quote(key))
        if any(not ch.isprintable() and ch not in "\t " for ch in str(value)):
            errs.append("param %s value contains unprintable character" % go_quote(key))
    return errs


def validate_file(f, field):
    if f.get("arch") not in ARCHS:
        return ["field `arch` must be one of [%s]; got %s"
                % (" ".join(ARCHS), go_quote(f.get("arch") or ""))]
    if f.get("digest") and not re.fullmatch(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+",
                                            f["digest"]):
        return ["field `%s.digest` is invalid: %s" % (field, f["digest"])]
    return []


def validate_images(c):
    if not c.get("images"):
        return ["field `images` must be set"]
    errs = []
    for i, img in enumerate(c["images"]):
        errs += validate_file(img, "images[%d]" % i)
        for part in ("kernel", "initrd"):
            sub = img.get(part)
            if isinstance(sub, dict):
                errs += validate_file(sub, "images[%d].%s" % (i, part))
                if sub.get("arch") != img.get("arch"):
                    errs.append("images[%d].%s has unexpected architecture %s, must be %s"
                                % (i, part, go_quote(sub.get("arch") or ""),
                                   go_quote(img.get("arch") or "")))
    return errs


def validate_mounts(c, warn_missing):
    errs = []
    for i, m in enumerate(c.get("mounts") or []):
        loc = m["location"]
        if not os.path.isabs(loc):
            errs.append("field `mounts[%d].location` must be an absolute path, got %s"
                        % (i, go_quote(loc)))
        elif not os.path.exists(loc):
            if warn_missing:
                warn("field `mounts[%d].location` refers to a non-existent directory: %s:"
                     % (i, go_quote(loc)))
        elif not os.path.isdir(loc):
            errs.append("field `mounts[%d].location` refers to a non-directory path: %s"
                        % (i, go_quote(loc)))
        point = m["mountPoint"]
        if point in ("/", "/bin", "/dev", "/etc", "/home", "/opt", "/sbin", "/tmp", "/usr",
                     "/var"):
            errs.append("field `mounts[%d].mountPoint` must not be a system path such as /etc "
                        "or /usr" % i)
        elif point == c["user"]["home"]:
            errs.append("field `mounts[%d].mountPoint` is the reserved internal home directory %s"
                        % (i, go_quote(point)))
        if point.startswith("~"):
            errs.append('field `mounts[%d].mountPoint` must not start with "~"' % i)
        try:
            ram_in_bytes(m["9p"]["msize"])
        except ValueError as e:
            errs.append("field `msize` has an invalid value: %s" % e)
    return errs


def port_errors(field, port):
    if port < 0:
        return ["field `%s` must be > 0" % field]
    if port == 0:
        return ["field `%s` must be set" % field]
    if port == 22:
        return ["field `%s` must not be 22" % field]
    if port > 65535:
        return ["field `%s` must be < 65536" % field]
    return []


def validate_provision(c):
    errs = []
    for i, p in enumerate(c.get("provision") or []):
        mode = p["mode"]
        if p.get("file") is not None:
            errs.append("field `provision[%d].file.url` must be empty during validation (script "
                        "should already be embedded)" % i)
        if mode not in MODES:
            errs.append('field `provision[%d].mode` must one of "system", "user", "boot", "data", '
                        '"dependency", "ansible", or "yq"' % i)
        if mode != "dependency" and p.get("skipDefaultDependencyResolution") is not None:
            errs.append("field `provision[%d].mode` cannot set skipDefaultDependencyResolution, "
                        'only valid on scripts of type "dependency"' % i)
        if mode in ("data", "yq"):
            errs += validate_file_provision(i, p)
        else:
            errs += validate_script_provision(i, p)
        if p.get("playbook") and mode != "ansible":
            errs.append('field `provision[%d].playbook can only be set when mode is "ansible"' % i)
    return errs


def validate_file_provision(i, p):
    if p.get("path") is None:
        return ["field `provision[%d].path` must not be empty when mode is %s"
                % (i, go_quote(p["mode"]))]
    errs = []
    if not p["path"].startswith("/"):
        errs.append("field `provision[%d].path` must be an absolute path" % i)
    if p["mode"] == "data" and p.get("content") is None:
        errs.append('field `provision[%d].content` must not be empty when mode is "data"' % i)
    if p["mode"] == "yq" and p.get("expression") is None:
        errs.append('field `provision[%d].expression` must not be empty when mode is "yq"' % i)
    if not re.fullmatch(r"[0-7]+", str(p["permissions"])):
        errs.append("field `provision[%d].permissions` must be an octal number" % i)
    return errs


def validate_script_provision(i, p):
    errs = []
    if not p.get("script") and p["mode"] != "ansible":
        errs.append("field `provision[%d].script` must not be empty" % i)
    for key, modes in (("content", '"data"'), ("overwrite", '"data"'), ("owner", '"data"'),
                       ("path", '"data", or "yq"'), ("permissions", '"data", or "yq"'),
                       ("format", '"yq"')):
        if p.get(key) is not None:
            errs.append("field `provision[%d].%s` can only be set when mode is %s"
                        % (i, key, modes))
    return errs


def validate_probes(c):
    errs = []
    for i, p in enumerate(c.get("probes") or []):
        if p.get("script") is not None and not p["script"].startswith("#!"):
            errs.append("field `probe[%d].script` must start with a '#!' line" % i)
        if p.get("mode", "readiness") != "readiness":
            errs.append('field `probe[%d].mode` can only be "readiness"' % i)
    return errs


def validate_port_forwards(c):
    errs = []
    for i, r in enumerate(c.get("portForwards") or []):
        field = "portForwards[%d]" % i
        for key in ("guestIP", "hostIP"):
            try:
                ipaddress.ip_address(r[key])
            except ValueError:
                errs.append("field `%s.%s` is not an IP address: %s"
                            % (field, key, go_quote(r[key])))
        ranges = ["guestPortRange"] + ([] if r.get("hostSocket") else ["hostPortRange"])
        for key in ranges:
            for j in (0, 1):
                errs += port_errors("%s.%s[%d]" % (field, key, j), r[key][j])
            if r[key][0] > r[key][1]:
                errs.append("field `%s.%s[1]` must be greater than or equal to field `%s.%s[0]`"
                            % (field, key, field, key))
        if r["proto"] not in ("tcp", "udp", "any"):
            errs.append('field `%s.proto` must be "tcp", "udp", or "any"' % field)
        if r.get("guestSocket") and not r["guestSocket"].startswith("/"):
            errs.append("field `%s.guestSocket` must be an absolute path, but is %s"
                        % (field, go_quote(r["guestSocket"])))
    return errs


def check_driver(c):
    """The drivers' Validate, run by `limactl create` and `start` (instance.Prepare)."""
    if c["vmType"] == "vz" and c["mountType"] == "9p":
        raise Fatal('field `mountType` must be "reverse-sshfs" or "virtiofs" for VZ driver , got '
                    '"9p"')


def load_filled(text, path):
    """limayaml.Load + ResolveVMType: the filled config of a lima.yaml, not validated."""
    origin = "main file %s" % go_quote(path)
    data, unknown = decode_template(text, origin)
    if unknown:
        refuse_unknown(unknown, origin)
    check_params_used(data)
    c = fill_defaults(data, os.path.dirname(path))
    check_vm_type(c, path)
    return c


def load_config(text, path, warn_missing):
    """load_filled + Validate."""
    c = load_filled(text, path)
    errs = validate(c, warn_missing)
    if errs:
        raise Fatal("\n".join(errs))
    return c


# ---------------------------------------------------------------------------------------------
# Instances

def proc_stat(pid):
    """(state, start time) of a process, None if there is none."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])


def alive(pid, start):
    stat = proc_stat(pid) if pid else None
    return bool(stat) and stat[0] != "Z" and stat[1] == start


class Instance:
    """Lima's store.Inspect of one instance; NotFound when it has no lima.yaml."""

    def __init__(self, name):
        err = inst_name_error(name)
        if err:
            raise Fatal(err)
        self.name = name
        self.dir = os.path.join(lima_home(), name)
        self.yaml_path = os.path.join(self.dir, "lima.yaml")
        try:
            with open(self.yaml_path) as f:
                self.text = f.read()
        except FileNotFoundError:
            raise NotFound("open %s: no such file or directory" % self.yaml_path)
        self.errors, self.cfg = [], None
        try:
            self.cfg = load_config(self.text, self.yaml_path, False)
        except Fatal as e:
            self.errors.append(str(e))
        self.state = read_json(self.path("fake.json"))
        self.status = self.inspect_status()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def inspect_status(self):
        if self.cfg is None:
            return "Broken"
        agent = alive(self.state.get("hostAgentPID"), self.state.get("hostAgentStart"))
        driver = alive(self.state.get("driverPID"), self.state.get("driverStart"))
        if agent and driver:
            return "Running"
        if not agent and not driver:
            return "Stopped"
        self.errors.append("host agent is running but driver is not" if agent else
                           "%s driver is running but host agent is not" % self.cfg["vmType"])
        return "Broken"

    def pids(self):
        """(host agent, driver) PIDs still alive, 0 for a dead one."""
        return tuple(self.state.get(k + "PID") if alive(self.state.get(k + "PID"),
                                                          self.state.get(k + "Start")) else 0
                     for k in ("hostAgent", "driver"))

    def ssh_port(self):
        if self.status == "Running":
            return self.state["sshLocalPort"]
        return self.cfg["ssh"]["localPort"] if self.cfg else 0

    def message(self):
        if not self.cfg or not self.cfg.get("message"):
            return ""
        data = {"Name": self.name, "Hostname": hostname_of(self.name), "Status": self.status,
                "Dir": self.dir, "VMType": self.cfg["vmType"], "Arch": self.cfg["arch"],
                "SSHLocalPort": self.ssh_port(), "Param": self.cfg["param"], "HostOS": "linux",
                "HostArch": host_arch(), "LimaHome": lima_home(),
                "IdentityFile": identity_file()}
        return expand(self.cfg["message"], data, "message")

    def to_json(self):
        """The object `limactl list --json` prints, in Go's field order."""
        c = self.cfg or {}
        agent, driver = self.pids()
        out = {"name": self.name, "hostname": hostname_of(self.name), "status": self.status,
               "dir": self.dir, "vmType": c.get("vmType", ""), "arch": c.get("arch", "")}
        omitempty = {"cpus": c.get("cpus"), "memory": c and ram_in_bytes(c["memory"]),
                     "disk": c and ram_in_bytes(c["disk"]), "message": self.message(),
                     "additionalDisks": c.get("additionalDisks"), "network": c.get("networks"),
                     "sshLocalPort": self.ssh_port(),
                     "sshConfigFile": c and self.path("ssh.config"),
                     "hostAgentPID": agent, "driverPID": driver, "errors": self.errors,
                     "config": c, "sshAddress": c and "127.0.0.1"}
        out.update((k, v) for k, v in prune(omitempty).items() if v)
        out.update(protected=os.path.exists(self.path("protected")),
                   limaVersion=read_text(self.path("lima-version")))
        if c.get("param"):
            out["param"] = c["param"]
        out.update(HostOS="linux", HostArch=host_arch(), LimaHome=lima_home(),
                   IdentityFile=identity_file())
        return out


def prune(value):
    """Go's omitempty on nil pointers and empty slices, and Lima's yq pass that drops {}."""
    if isinstance(value, dict):
        pruned = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def instance_names():
    try:
        entries = sorted(os.listdir(lima_home()))
    except FileNotFoundError:
        return []
    return [e for e in entries if not e.startswith((".", "_"))
            and os.path.isdir(os.path.join(lima_home(), e))]


def inspect_existing(name):
    try:
        return Instance(name)
    except NotFound as e:
        raise Fatal(str(e))


def pick_image(c):
    """The image Lima's Prepare would take: the first of the instance's arch."""
    for img in c["images"]:
        if img["arch"] == c["arch"]:
            return img
    raise Fatal("%s: unsupported arch: %s" % (go_quote(c["images"][0]["location"]),
                                              go_quote(c["images"][0]["arch"])))


def prepare(c, announce):
    """instance.Prepare: the image (and kernel, initrd) must be there; the fake also needs the
    rootfs.tar beside it, which it unpacks once. Returns that unpacked tree."""
    img = pick_image(c)
    for what, f in (("the image", img), ("the kernel", img.get("kernel")),
                    ("the initrd", img.get("initrd"))):
        if not isinstance(f, dict):
            continue
        loc = f["location"]
        if announce:
            info("Attempting to download %s" % what, location=loc, arch=f["arch"],
                 digest=f.get("digest") or "")
        if "://" in loc:
            raise Fatal("failed to download %s: the fake limactl has no network, use a local file"
                        % go_quote(loc))
        path = os.path.expanduser(loc)
        if not os.path.isfile(path):
            raise Fatal("failed to download %s: stat %s: no such file or directory"
                        % (go_quote(loc), path))
        if announce:
            info("Downloaded %s from %s" % (what, go_quote(loc)))
    return unpack_rootfs(os.path.expanduser(img["location"]))


def unpack_rootfs(image):
    tar = os.path.join(os.path.dirname(image), "rootfs.tar")
    if not os.path.isfile(tar):
        raise Fatal("the fake limactl boots the rootfs.tar kept beside the image, and there is "
                    "none: %s" % tar)
    st = os.stat(tar)
    key = hashlib.sha256(("%s\0%d\0%d" % (os.path.realpath(tar), st.st_size, st.st_mtime_ns))
                         .encode()).hexdigest()[:16]
    # FAKE_LIMA_CACHE: where test runs keep unpacked images between LIMA_HOMEs.
    cache = os.environ.get("FAKE_LIMA_CACHE") or os.path.join(lima_home(), "_cache")
    os.makedirs(cache, exist_ok=True)
    dest = os.path.join(cache, "rootfs-" + key)
    with dir_lock(cache):
        if os.path.isdir(dest):
            return dest
        for stale in glob.glob(dest + ".tmp-*"):
            shutil.rmtree(stale)
        # The unpacked copies of images that are gone (rebuilt or removed) go too.
        for source in glob.glob(os.path.join(cache, "rootfs-*.source")):
            if not os.path.isfile(read_text(source).strip()):
                shutil.rmtree(source[:-len(".source")], ignore_errors=True)
                os.remove(source)
        tmp = tempfile.mkdtemp(prefix=os.path.basename(dest) + ".tmp-", dir=cache)
        info("Unpacking %s into %s (once per image; the fake's basedisk)" % (tar, dest))
        done = subprocess.run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*",
                               "-xpf", tar, "-C", tmp], stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            shutil.rmtree(tmp)
            raise Fatal("failed to unpack %s: %s" % (tar, done.stderr.strip()))
        with open(dest + ".source", "w") as f:
            f.write(os.path.realpath(tar) + "\n")
        os.rename(tmp, dest)
    return dest


def ensure_keys():
    """sshutil.DefaultPubKeys: Lima's own key pair, made on first need."""
    os.makedirs(config_dir(), mode=0o700, exist_ok=True)
    with dir_lock(config_dir()):
        if not os.path.exists(identity_file()):
            subprocess.run(["ssh-keygen", "-t", "ed25519", "-q", "-N", "", "-C", "lima", "-f",
                            identity_file()], check=True, stdin=subprocess.DEVNULL)


def public_keys(c):
    keys = [read_text(identity_file() + ".pub")]
    if c["ssh"]["loadDotSSHPubKeys"]:
        keys += [read_text(p) for p in sorted(glob.glob(os.path.expanduser("~/.ssh/*.pub")))]
    return keys


def ssh_options(inst, persistent):
    """sshutil.SSHOpts, as `ssh -o` values."""
    c = inst.cfg
    opts = ['IdentityFile="%s"' % identity_file(), "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null", "NoHostAuthenticationForLocalhost=yes",
            "PreferredAuthentications=publickey", "Compression=no", "BatchMode=yes",
            "IdentitiesOnly=yes", "GSSAPIAuthentication=no",
            'Ciphers="^aes128-gcm@openssh.com,aes256-gcm@openssh.com"',
            "User=" + c["user"]["name"]]
    if persistent:
        opts += ["ControlMaster=auto", 'ControlPath="%s"' % inst.path("ssh.sock"),
                 "ControlPersist=yes"]
    for key, opt in (("forwardAgent", "ForwardAgent"), ("forwardX11", "ForwardX11"),
                     ("forwardX11Trusted", "ForwardX11Trusted")):
        if c["ssh"][key]:
            opts.append(opt + "=yes")
    return opts


def ssh_argv(inst, port, *extra):
    """`limactl shell`'s ssh command line, up to the remote command."""
    argv = ["ssh", "-F", "/dev/null"]
    for o in ssh_options(inst, False):
        argv += ["-o", o]
    return argv + list(extra) + ["-o", "LogLevel=ERROR", "-p", str(port), "127.0.0.1", "--"]


def write_ssh_config(inst, port):
    lines = ["# This SSH config file can be passed to 'ssh -F'.",
             "# This file is created by Lima, but not used by Lima itself currently.",
             "# Modifications to this file will be lost on restarting the Lima instance.",
             "Host " + hostname_of(inst.name)]
    lines += ["  %s %s" % tuple(o.split("=", 1)) for o in ssh_options(inst, True)]
    lines += ["  Hostname 127.0.0.1", "  Port %d" % port]
    fd = os.open(inst.path("ssh.config"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Command-line flags, the way cobra/pflag read them

GLOBAL_FLAGS = {"tty": "bool", "yes": "bool", "debug": "bool", "log-level": "str",
                "log-format": "str"}
EDIT_FLAGS = {"cpus": "int", "memory": "float", "disk": "float", "set": "list",
              "vm-type": "str", "mount-type": "str", "ssh-port": "int"}
CREATE_FLAGS = dict(EDIT_FLAGS, name="str", arch="str")


def parse_bool(s, flag):
    table = {"1": True, "t": True, "T": True, "true": True, "TRUE": True, "True": True,
             "0": False, "f": False, "F": False, "false": False, "FALSE": False, "False": False}
    if s not in table:
        raise Fatal('invalid argument %s for "--%s" flag: strconv.ParseBool: parsing %s: invalid '
                    "syntax" % (go_quote(s), flag, go_quote(s)))
    return table[s]


def convert(kind, value, flag):
    try:
        return {"int": int, "float": float, "str": str}[kind](value)
    except ValueError:
        raise Fatal('invalid argument %s for "--%s" flag: invalid syntax' % (go_quote(value), flag))


def parse_flags(args, flags, short=None, interspersed=True):
    """(flag values, positional arguments)."""
    flags = dict(GLOBAL_FLAGS, **flags)
    short = dict(short or {}, y="yes")
    opts, pos = {}, []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            pos += args[i:]
            break
        if not arg.startswith("-") or arg == "-" or pos and not interspersed:
            pos.append(arg)
            if not interspersed:
                pos += args[i:]
                break
            continue
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name not in flags:
                raise Fatal("unknown flag: --" + name)
        else:
            name, eq, value = short.get(arg[1:2], ""), arg[2:3] == "=", arg[3:]
            if not name:
                raise Fatal("unknown shorthand flag: '%s' in %s" % (arg[1:2], arg))
        kind = flags[name]
        if kind == "bool":
            opts[name] = parse_bool(value, name) if eq else True
            continue
        if not eq:
            if i >= len(args):
                raise Fatal("flag needs an argument: --" + name)
            value, i = args[i], i + 1
        if kind == "list":
            opts.setdefault(name, []).append(value)
        else:
            opts[name] = convert(kind, value, name)
    return opts, pos


def tty_enabled(opts):
    if opts.get("yes"):
        return False
    return opts.get("tty", sys.stdout.isatty())


# ---------------------------------------------------------------------------------------------
# Template edits: the flags' yq expressions, and the one form of --set the fake understands

SET_EXPR = re.compile(r"\s*((?:\.[A-Za-z0-9_-]+)+)\s*=\s*(.+?)\s*")


def flag_edits(opts):
    """(key path, value) pairs, as editflags.YQExpressions would set them."""
    table = [("cpus", ["cpus"], int), ("memory", ["memory"], lambda v: format_float(v) + "GiB"),
             ("disk", ["disk"], lambda v: format_float(v) + "GiB"), ("vm-type", ["vmType"], str),
             ("mount-type", ["mountType"], str), ("ssh-port", ["ssh", "localPort"], int),
             ("arch", ["arch"], str)]
    edits = [(path, conv(opts[flag])) for flag, path, conv in table if flag in opts]
    for expr in opts.get("set", []):
        m = SET_EXPR.fullmatch(expr)
        if not m:
            raise Fatal("the fake limactl supports only `--set '.a.b = VALUE'`, not the yq "
                        "expression %s" % go_quote(expr))
        edits.append((m.group(1)[1:].split("."), yaml.safe_load(m.group(2))))
    return edits


class BlockDumper(yaml.SafeDumper):
    """Writes multi-line strings (scripts) as literal blocks."""


BlockDumper.add_representer(str, lambda d, s: d.represent_scalar(
    YAML_TAG + "str", s, style="|" if "\n" in s else None))


def dump_yaml(data):
    return yaml.dump(data, Dumper=BlockDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


def parse_yaml(text, origin):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise Fatal("failed to unmarshal YAML (%s): %s" % (origin, e))


def apply_edits(data, edits):
    data = copy.deepcopy(data)
    for path, value in edits:
        node = data
        for key in path[:-1]:
            node = obj(node, key)
        node[path[-1]] = value
    return data


def embed_files(data, template_dir):
    """limatmpl's Embed for local `file:` scripts of provision and probes."""
    for entry in (data.get("provision") or []) + (data.get("probes") or []):
        locator = entry.pop("file", None)
        if locator is None:
            continue
        url = locator if isinstance(locator, str) else locator.get("url", "")
        if "://" in url:
            raise Fatal("the fake limactl cannot fetch %s" % go_quote(url))
        with open(os.path.join(template_dir, os.path.expanduser(url))) as f:
            entry["script"] = f.read()
    return data


# ---------------------------------------------------------------------------------------------
# limactl create

def read_template(arg, name):
    """(template text, its directory, the instance name)."""
    if arg == "-":
        if not name:
            raise Fatal("must pass instance name with --name when reading template from stdin")
        return sys.stdin.read(), os.getcwd(), name
    if not arg or not inst_name_error(arg) or ":" in arg and not os.path.exists(arg):
        raise Fatal("the fake limactl has no templates (template:default, URLs); pass a FILE.yaml")
    try:
        with open(arg) as f:
            text = f.read()
    except FileNotFoundError:
        raise Fatal("open %s: no such file or directory" % arg)
    if not name:
        name = re.sub(r"\.ya?ml$", "", os.path.basename(arg).lower())
        err = identifier_error(name)
        if err:
            raise Fatal("filename %s is invalid: %s" % (go_quote(arg), err))
    return text, os.path.dirname(os.path.abspath(arg)), name


def create_instance(opts, arg, create_only):
    """loadOrCreateInstance for a template file, then instance.Create and Prepare."""
    name = opts.get("name", "")
    if name and inst_name_error(name):
        raise Fatal(inst_name_error(name))
    if arg == "-" and opts.get("tty"):
        raise Fatal("cannot use --tty=true when reading template from stdin")
    text, template_dir, name = read_template(arg, name)
    inst_dir = os.path.join(lima_home(), name)
    if create_only and os.path.exists(os.path.join(inst_dir, "lima.yaml")):
        raise Fatal("instance %s already exists" % go_quote(name))
    data = parse_yaml(text, "main file %s" % go_quote(arg))
    if isinstance(data, dict):
        edited = apply_edits(embed_files(copy.deepcopy(data), template_dir), flag_edits(opts))
        if edited != data:
            text = dump_yaml(edited)
    info("Terminal is not available, proceeding without opening an editor")
    if os.path.exists(inst_dir):
        raise Fatal("instance %s already exists (%s)" % (go_quote(name), go_quote(inst_dir)))
    path = os.path.join(inst_dir, "lima.yaml")
    c = load_config(text, path, True)
    os.makedirs(inst_dir, mode=0o700)
    with open(path, "w") as f:
        f.write(text)
    with open(os.path.join(inst_dir, "lima-version"), "w") as f:
        f.write(VERSION)
    os.chmod(os.path.join(inst_dir, "lima-version"), 0o444)
    ensure_keys()
    inst = Instance(name)
    check_driver(c)
    prepare(c, True)
    return inst


def cmd_create(args):
    opts, pos = parse_flags(args, CREATE_FLAGS)
    if len(pos) > 1:
        raise Fatal("accepts at most 1 arg(s), received %d" % len(pos))
    inst = create_instance(opts, pos[0] if pos else "", True)
    info("Run `limactl start %s` to start the instance." % inst.name)


# ---------------------------------------------------------------------------------------------
# limactl start

def cmd_start(args):
    opts, pos = parse_flags(args, dict(CREATE_FLAGS, timeout="str", foreground="bool",
                                       progress="bool"))
    if len(pos) > 1:
        raise Fatal("accepts at most 1 arg(s), received %d" % len(pos))
    timeout = parse_duration(opts.get("timeout", "10m")) or parse_duration("10m")
    arg = pos[0] if pos else ""
    if arg and inst_name_error(arg):
        inst = create_instance(opts, arg, False)
    else:
        inst = existing_for_start(opts, arg)
    if inst.errors:
        raise Fatal("errors inspecting instance: [%s]" % " ".join(inst.errors))
    if inst.status == "Running":
        info("The instance %s is already running. Run `%s` to open the shell."
             % (go_quote(inst.name), shell_cmd(inst.name)))
        return
    if inst.status != "Stopped":
        warn('expected status "Stopped", got %s' % go_quote(inst.status))
    boot(inst, timeout)


def existing_for_start(opts, arg):
    name = arg or opts.get("name") or "default"
    if arg and opts.get("name") and opts["name"] != arg:
        raise Fatal("instance name %s and CLI flag --name=%s cannot be specified together"
                    % (go_quote(arg), go_quote(opts["name"])))
    try:
        inst = Instance(name)
    except NotFound:
        if arg and arg != "default":
            info("Creating an instance %s from template:default (Not from template:%s)"
                 % (go_quote(name), name))
            warn("This form is deprecated. Use `limactl create --name=%s template:default` "
                 "instead" % name)
        raise Fatal("the fake limactl cannot create an instance from template:default; create "
                    "%s from a FILE.yaml first" % go_quote(name))
    info("Using the existing instance %s" % go_quote(name))
    edits = flag_edits(opts)
    if edits:
        data = apply_edits(parse_yaml(inst.text, inst.yaml_path) or {}, edits)
        text = dump_yaml(data)
        load_config(text, inst.yaml_path, True)
        with open(inst.yaml_path, "w") as f:
            f.write(text)
        inst = Instance(name)
    return inst


def shell_cmd(name):
    return "lima" if name == "default" else "limactl shell " + name


def warn_unsupported(c):
    if not c["plain"] and (c["containerd"]["system"] or c["containerd"]["user"]):
        warn("the fake limactl installs no containerd (containerd.system/containerd.user)")
    if c["upgradePackages"]:
        warn("the fake limactl does not upgrade packages (upgradePackages)")
    if c.get("probes"):
        warn("the fake limactl does not run readiness probes")
    for p in c.get("provision") or []:
        if p["mode"] == "ansible":
            warn('the fake limactl does not run provision mode "ansible"')


def boot(inst, timeout):
    """instance.Start: spawn the VM and wait for its boot scripts, as the host agent does."""
    c = inst.cfg
    info("Starting the instance %s with internal VM driver %s"
         % (go_quote(inst.name), go_quote(c["vmType"])))
    check_driver(c)
    cache = prepare(c, False)
    ensure_keys()
    warn_unsupported(c)
    port = c["ssh"]["localPort"] or free_port()
    write_ssh_config(inst, port)
    for m in c.get("mounts") or []:
        os.makedirs(m["location"], mode=0o755, exist_ok=True)
    for d in ("diffdisk/upper", "diffdisk/work", "root"):
        os.makedirs(inst.path(d), exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(inst.path("fake.json"))
    serial = inst.path("serial.log")
    with open(serial, "wb") as log_file:
        vm = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--uts", "--fork", "--kill-child", "--propagation",
             "private", sys.executable, SELF, "__vm", inst.name, str(port), cache],
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, cwd="/",
            start_new_session=True,
            env={"PATH": GUEST_PATH, "HOME": os.path.expanduser("~"), "LIMA_HOME": lima_home()})
    info("[hostagent] Starting the VM (hint: to watch the boot progress, see %s)"
         % go_quote(inst.path("serial*.log")))
    info("SSH Local Port: %d" % port)
    info('[hostagent] Waiting for the final requirement 1 of 1: "boot scripts must have finished"')
    wait_for_boot(inst, vm, port, time.time() + timeout)


def wait_for_boot(inst, vm, port, deadline):
    while True:
        state = read_json(inst.path("fake.json"))
        if state.get("phase") == "ready":
            info("[hostagent] The final requirement 1 of 1 is satisfied")
            info("READY. Run `%s` to open the shell." % shell_cmd(inst.name))
            show_message(Instance(inst.name))
            return
        if state.get("phase") == "degraded":
            log("error", "[%s]" % " ".join(state["errors"]))
            warn("DEGRADED. The VM seems running, but file sharing and port forwarding may not "
                 "work. (hint: see %s)" % go_quote(inst.path("serial.log")))
            raise Fatal("degraded, status={Running:true Degraded:true Exiting:false Errors:[%s] "
                        "SSHLocalPort:%d}" % (" ".join(state["errors"]), port))
        if vm.poll() is not None:
            for line in read_text(inst.path("serial.log")).splitlines()[-15:]:
                log("error", "[serial] " + line)
            raise Fatal("exiting, status={Running:false Degraded:false Exiting:true Errors:[] "
                        "SSHLocalPort:%d} (hint: see %s)"
                        % (port, go_quote(inst.path("serial.log"))))
        if time.time() > deadline:
            raise Fatal('did not receive an event with the "running" status')
        time.sleep(0.2)


def show_message(inst):
    message = inst.message()
    if message:
        info("Message from the instance %s:" % go_quote(inst.name))
        sys.stderr.write(message.rstrip("\n") + "\n")


# ---------------------------------------------------------------------------------------------
# limactl stop and delete

def kill(pid, sig):
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def wait_gone(inst, seconds):
    deadline = time.time() + seconds
    while any(inst.pids()) and time.time() < deadline:
        time.sleep(0.1)
    return not any(inst.pids())


def mark_stopped(inst):
    write_json(inst.path("fake.json"), {"status": "Stopped"})


def stop_gracefully(inst):
    if inst.status != "Running":
        raise Fatal('expected status "Running", got %s (maybe use `limactl stop -f`?)'
                    % go_quote(inst.status))
    agent, driver = inst.pids()
    info("Sending SIGTERM to the VM's init process %d (it stands in for the host agent)" % driver)
    kill(driver, signal.SIGTERM)
    info("Waiting for the host agent and the driver processes to shut down")
    if not wait_gone(inst, 10):
        warn("the VM did not stop within 10s; sending SIGKILL")
        kill(driver, signal.SIGKILL)
        kill(agent, signal.SIGKILL)
        wait_gone(inst, 10)
    info("Waiting for the instance to shut down")
    mark_stopped(inst)
    info("The instance %s has shut down" % inst.name)


def stop_forcibly(inst):
    agent, driver = inst.pids()
    vm_type = inst.cfg["vmType"] if inst.cfg else ""
    if driver:
        info("Sending SIGKILL to the %s driver process %d" % (vm_type, driver))
        kill(driver, signal.SIGKILL)
    else:
        info("The %s driver process seems already stopped" % vm_type)
    if agent:
        info("Sending SIGKILL to the host agent process %d" % agent)
        kill(agent, signal.SIGKILL)
    else:
        info("The host agent process seems already stopped")
    info("Removing *.pid *.sock *.tmp under %s" % go_quote(inst.dir))
    for f in sorted(os.listdir(inst.dir)):
        if f.endswith((".pid", ".sock", ".tmp")):
            info("Removing %s" % go_quote(inst.path(f)))
            os.remove(inst.path(f))
    wait_gone(inst, 10)
    if inst.state:
        mark_stopped(inst)


def cmd_stop(args):
    opts, pos = parse_flags(args, {"force": "bool"}, {"f": "force"})
    inst = inspect_existing(pos[0] if pos else "default")
    if opts.get("force"):
        stop_forcibly(inst)
    else:
        stop_gracefully(inst)


def cmd_delete(args):
    opts, pos = parse_flags(args, {"force": "bool"}, {"f": "force"})
    if not pos:
        raise Fatal("requires at least 1 arg(s), only received 0")
    for name in pos:
        try:
            inst = Instance(name)
        except NotFound:
            warn("Ignoring non-existent instance %s" % go_quote(name))
            continue
        if os.path.exists(inst.path("protected")):
            raise Fatal("failed to delete instance %s: instance is protected to prohibit "
                        "accidental removal (Hint: use `limactl unprotect`)" % go_quote(name))
        if not opts.get("force") and inst.status != "Stopped":
            raise Fatal('failed to delete instance %s: expected status "Stopped", got %s'
                        % (go_quote(name), go_quote(inst.status)))
        stop_forcibly(inst)
        shutil.rmtree(inst.dir)
        info("Deleted %s (%s)" % (go_quote(name), go_quote(inst.dir)))


# ---------------------------------------------------------------------------------------------
# limactl list

def cmd_list(args):
    opts, pos = parse_flags(args, {"json": "bool", "format": "str", "quiet": "bool",
                                   "all-fields": "bool"}, {"f": "format", "q": "quiet"})
    fmt = opts.get("format", "table")
    if opts.get("json"):
        if "format" in opts:
            raise Fatal("option --json conflicts with option --format")
        fmt = "json"
    if opts.get("quiet") and fmt != "table":
        raise Fatal("option --quiet can only be used with '--format table'")
    if fmt not in ("json", "table"):
        raise Fatal("the fake limactl supports only --format json and table, not %s"
                    % go_quote(fmt))
    names = instance_names()
    if not pos and not names:
        warn("No instance found. Run `limactl create` to create an instance.")
        return
    chosen = [n for n in pos if n in names] if pos else names
    for arg in pos:
        if arg not in names:
            warn("No instance matching %s found." % arg)
    if opts.get("quiet"):
        sys.stdout.write("".join(n + "\n" for n in chosen))
    else:
        print_instances(chosen, fmt)
    if len(chosen) < len(pos):
        raise Fatal("unmatched instances")


def print_instances(names, fmt):
    instances = []
    for name in names:
        try:
            instances.append(Instance(name))
        except NotFound as e:
            raise Fatal("unable to load instance %s: %s" % (name, e))
    for inst in instances:
        if inst.errors:
            warn("instance %s has errors" % go_quote(inst.name),
                 errors="[%s]" % " ".join(inst.errors))
    if fmt == "json":
        for inst in instances:
            sys.stdout.write(json.dumps(inst.to_json(), separators=(",", ":"), ensure_ascii=False,
                                        default=str) + "\n")
        return
    home = os.path.expanduser("~")
    rows = [["NAME", "STATUS", "SSH", "VMTYPE", "ARCH", "CPUS", "MEMORY", "DISK", "DIR"]]
    for inst in instances:
        c = inst.cfg or {}
        sizes = [bytes_size(ram_in_bytes(c[key])) if c else "0B" for key in ("memory", "disk")]
        shown_dir = "~" + inst.dir[len(home):] if inst.dir.startswith(home) else inst.dir
        rows.append([inst.name, inst.status, "127.0.0.1:%d" % inst.ssh_port(),
                     c.get("vmType", ""), c.get("arch", ""), str(c.get("cpus", 0))]
                    + sizes + [shown_dir])
    widths = [max(4, max(len(r[i]) for r in rows) + 4) for i in range(len(rows[0]) - 1)]
    for r in rows:
        sys.stdout.write("".join(cell.ljust(w) for cell, w in zip(r, widths)) + r[-1] + "\n")


# ---------------------------------------------------------------------------------------------
# limactl edit

def cmd_edit(args):
    opts, pos = parse_flags(args, dict(EDIT_FLAGS, start="bool"))
    name = pos[0] if pos else "default"
    if inst_name_error(name):
        raise Fatal("the fake limactl edits instances only, not the file %s" % go_quote(name))
    try:
        inst = Instance(name)
    except NotFound:
        raise Fatal("instance %s not found" % go_quote(name))
    if inst.status == "Running":
        raise Fatal("cannot edit a running instance")
    edits = flag_edits(opts)
    if not edits:
        if tty_enabled(opts):
            raise Fatal("the fake limactl cannot open an editor; use --set or --tty=false")
        info("Aborting, as requested by saving the file with empty content")
        return
    old = parse_yaml(inst.text, inst.yaml_path) or {}
    new = apply_edits(old, edits)
    if new == old:
        info("Aborting, no changes made to the instance")
        return
    text = dump_yaml(new)
    c = load_filled(text, inst.yaml_path)
    errs = validate(c, True)
    if not errs and inst.cfg and ram_in_bytes(c["disk"]) < ram_in_bytes(inst.cfg["disk"]):
        errs = ["field `disk`: shrinking the disk (%s --> %s) is not supported"
                % (inst.cfg["disk"], c["disk"])]
    if errs:
        with open("lima.REJECTED.yaml", "w") as f:
            f.write(text)
        raise Fatal('the YAML is invalid, saved the buffer as "lima.REJECTED.yaml": '
                    + "\n".join(errs))
    with open(inst.yaml_path, "w") as f:
        f.write(text)
    info("Instance %s configuration edited" % go_quote(name))
    if opts.get("start"):
        boot(Instance(name), parse_duration("10m"))


# ---------------------------------------------------------------------------------------------
# limactl shell

def remote_script(inst, opts, command):
    """The command line `limactl shell` hands to ssh."""
    if "workdir" in opts:
        cd = "cd %s || exit 1" % shlex.quote(opts["workdir"])
    elif inst.cfg.get("mounts"):
        cd = "cd %s || cd %s" % (shlex.quote(os.getcwd()), shlex.quote(os.path.expanduser("~")))
    else:
        cd = "false"
    shell = shlex.quote(opts["shell"]) if opts.get("shell") else '"$SHELL"'
    script = "%s ; exec %s --login" % (cd, shell)
    if command:
        quoted, leading_env = [], True
        for arg in command:
            key, eq, value = arg.partition("=")
            leading_env = leading_env and bool(eq)
            quoted.append(key + "=" + shlex.quote(value) if leading_env else shlex.quote(arg))
        script += " -c " + shlex.quote(" ".join(quoted))
    return script


def cmd_shell(args):
    opts, pos = parse_flags(args, {"shell": "str", "workdir": "str", "reconnect": "bool",
                                   "preserve-env": "bool", "start": "bool"},
                            interspersed=False)
    if not pos:
        raise Fatal("requires at least 1 arg(s), only received 0")
    name, command = pos[0], pos[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        inst = Instance(name)
    except NotFound:
        raise Fatal("instance %s does not exist, run `limactl create %s` to create a new instance"
                    % (go_quote(name), name))
    if inst.status == "Stopped":
        if not opts.get("start"):
            raise Fatal("instance %s is stopped (the fake limactl does not ask; pass --start)"
                        % go_quote(name))
        boot(inst, parse_duration("10m"))
        inst = Instance(name)
    extra = ["-t"] if sys.stdout.isatty() else []
    if "COLORTERM" in os.environ:
        extra += ["-o", "SendEnv=COLORTERM"]
    argv = ssh_argv(inst, inst.ssh_port(), *extra) + [remote_script(inst, opts, command)]
    sys.stdout.flush()
    os.execvp("ssh", argv)


# ---------------------------------------------------------------------------------------------
# limactl snapshot (QEMU: qemu-img offline, savevm/loadvm online; vz: unimplemented)

SNAPSHOT_ROW = "%-9s %-16s %8s%20s%13s%11s"


def snapshot_list(inst):
    found = [read_json(p) for p in glob.glob(inst.path("snapshots", "*", "meta.json"))]
    return sorted(found, key=lambda s: s["id"])


def snapshot_table(inst):
    snaps = snapshot_list(inst)
    if not snaps:
        return ""
    lines = [SNAPSHOT_ROW % ("ID", "TAG", "VM SIZE", "DATE", "VM CLOCK", "ICOUNT")]
    for s in snaps:
        date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s["date"]))
        ident = "--" if inst.status == "Running" else str(s["id"])
        lines.append(SNAPSHOT_ROW % (ident, s["tag"], "0 B", date, "00:00:00.000", "0"))
    return "\n".join(lines) + "\n"


def snapshot_dir(inst, tag):
    if tag in (".", "..") or "/" in tag or "\0" in tag:
        raise Fatal("the fake limactl cannot store a snapshot tagged %s" % go_quote(tag))
    return inst.path("snapshots", tag)


def snapshot_create(inst, tag):
    where_to = snapshot_dir(inst, tag)
    if os.path.exists(where_to):
        raise Fatal("snapshot %s already exists (the fake limactl refuses duplicate tags)"
                    % go_quote(tag))
    if inst.status == "Running":
        info("Sending HMP savevm command")
    ids = [s["id"] for s in snapshot_list(inst)]
    os.makedirs(where_to)
    subprocess.run(["cp", "-a", inst.path("diffdisk", "upper"), os.path.join(where_to, "upper")],
                   check=True)
    write_json(os.path.join(where_to, "meta.json"),
               {"id": max(ids, default=0) + 1, "tag": tag, "date": int(time.time())})


def snapshot_apply(inst, tag):
    if inst.status == "Running":
        raise Fatal("the fake limactl cannot apply a snapshot to a running VM (Lima's loadvm "
                    "would revert it live); stop %s first" % go_quote(inst.name))
    source = os.path.join(snapshot_dir(inst, tag), "upper")
    if not os.path.isdir(source):
        raise Fatal("exit status 1")
    for d in ("upper", "work"):
        shutil.rmtree(inst.path("diffdisk", d), ignore_errors=True)
    subprocess.run(["cp", "-a", source, inst.path("diffdisk", "upper")], check=True)
    os.makedirs(inst.path("diffdisk", "work"))


def snapshot_delete(inst, tag):
    where_to = snapshot_dir(inst, tag)
    if inst.status == "Running":
        info("Sending HMP delvm command")
        if not os.path.isdir(where_to):
            warn("output: Error: Snapshot '%s' not found" % tag)
            return
    elif not os.path.isdir(where_to):
        raise Fatal("exit status 1")
    shutil.rmtree(where_to)


def cmd_snapshot(args):
    if not args or args[0] not in ("create", "save", "apply", "load", "delete", "del", "list",
                                   "ls"):
        raise Fatal('unknown command %s for "limactl snapshot"' % go_quote(args[0] if args else ""))
    action = {"save": "create", "load": "apply", "del": "delete", "ls": "list"}.get(args[0],
                                                                                    args[0])
    flags = {"quiet": "bool"} if action == "list" else {"tag": "str"}
    opts, pos = parse_flags(args[1:], flags, {"q": "quiet"})
    warn("`limactl snapshot` is experimental")
    if not pos:
        raise Fatal("requires at least 1 arg(s), only received 0")
    inst = inspect_existing(pos[0])
    if action != "list" and not opts.get("tag"):
        raise Fatal("expected tag")
    if inst.cfg and inst.cfg["vmType"] == "vz":
        raise Fatal("unimplemented")
    if action == "list":
        table = snapshot_table(inst)
        if opts.get("quiet"):
            table = "".join(line.split()[1] + "\n" for line in table.splitlines()[1:])
        sys.stdout.write(table)
        return
    {"create": snapshot_create, "apply": snapshot_apply, "delete": snapshot_delete}[action](
        inst, opts["tag"])


# ---------------------------------------------------------------------------------------------
# The VM: PID 1 of its own mount, PID and UTS namespace (limactl __vm NAME PORT CACHE)

def in_root(root, path):
    """path inside the guest, resolved as the guest would (its symlinks stay in root)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done, hops = [], 0
    while parts:
        part = parts.pop(0)
        if part == "..":
            done = done[:-1]
            continue
        here = os.path.join(root, *done, part)
        if os.path.islink(here):
            hops += 1
            if hops > 40:
                raise OSError("too many levels of symbolic links: " + path)
            target = os.readlink(here)
            if target.startswith("/"):
                done = []
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        done.append(part)
    return os.path.join(root, *done)


def guest_accounts(root, name):
    """(uid, gid, home) of a user in the guest's /etc/passwd, None if absent."""
    with open(in_root(root, "/etc/passwd")) as f:
        for line in f:
            fields = line.rstrip("\n").split(":")
            if len(fields) >= 7 and fields[0] == name:
                return int(fields[2]), int(fields[3]), fields[5]
    return None


_libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _syscall(number, *args):
    ret = _libc.syscall(number, *args)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def _userns_fd(uid, gid, proc):
    """A user namespace for an idmapped mount that shows the on-disk uid[1] as uid[0], and gid
    likewise (an idmapped mount reads on-disk ids as the namespace's own, and shows them as what
    they map to): a child unshares one and waits while its maps are written and it is opened.
    `proc`: a procfs of this PID namespace."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(done_w)
        code = 0 if _libc.unshare(0x10000000) == 0 else 1  # CLONE_NEWUSER
        os.write(ready_w, b"x")
        os.read(done_r, 1)
        os._exit(code)
    os.close(ready_w)
    os.close(done_r)
    try:
        os.read(ready_r, 1)
        with open("%s/%d/uid_map" % (proc, pid), "w") as f:
            f.write("%d %d 1\n" % (uid[1], uid[0]))
        with open("%s/%d/setgroups" % (proc, pid), "w") as f:
            f.write("deny")
        with open("%s/%d/gid_map" % (proc, pid), "w") as f:
            f.write("%d %d 1\n" % (gid[1], gid[0]))
        return os.open("%s/%d/ns/user" % (proc, pid), os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def idmapped_bind(source, target, uid, gid, read_only, proc):
    """Lima's 9p and virtiofs shares show the host user's files as the guest user's and store
    what the guest user writes as the host user's: an idmapped bind mount (Linux 5.12+) of
    `source` at `target` in which the host's uid[1]/gid[1] is the guest's uid[0]/gid[0]. (No
    other id is mapped, so root in the guest cannot write there: stricter than 9p, which writes
    whatever root asks as the host user.)"""
    userns = _userns_fd(uid, gid, proc)
    tree = _syscall(428, -100, source.encode(), 1 | os.O_CLOEXEC)  # open_tree: OPEN_TREE_CLONE
    try:
        attr = _MountAttr(0x100000 | (0x1 if read_only else 0), 0, 0, userns)  # IDMAP, RDONLY
        _syscall(442, tree, b"", 0x1000, ctypes.byref(attr), ctypes.sizeof(attr))  # AT_EMPTY_PATH
        _syscall(429, tree, b"", -100, target.encode(), 0x4)  # move_mount: F_EMPTY_PATH
    finally:
        os.close(tree)
        os.close(userns)


class VM:
    def __init__(self, name, port, cache):
        self.inst = Instance(name)
        self.c = self.inst.cfg
        self.port = port
        self.cache = cache
        self.root = self.inst.path("root")
        self.user = self.c["user"]
        self.code = 0
        self.errors = []
        self.iid = "iid-%d" % (time.time() * 1000)

    # --- bookkeeping
    def say(self, text):
        sys.stdout.write("[fake-vm] %s\n" % text)
        sys.stdout.flush()

    def state(self, phase):
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        me = int(os.readlink("/proc/self"))
        agent = int(fields[1])
        write_json(self.inst.path("fake.json"), {
            "status": "Running", "phase": phase, "errors": self.errors,
            "hostAgentPID": agent, "hostAgentStart": proc_stat(agent)[1],
            "driverPID": me, "driverStart": int(fields[19]), "sshLocalPort": self.port,
            "startedAt": datetime.datetime.now().astimezone().isoformat(timespec="seconds")})

    def g(self, path):
        return in_root(self.root, path)

    def run(self, argv, env=None):
        """A command in the guest (chroot), its output to the guest's cloud-init-output.log and
        to the serial log; returns its exit status."""
        log_path = self.g("/var/log/cloud-init-output.log")
        with open(log_path, "ab") as out:
            start = out.tell()
            status = subprocess.call(["chroot", self.root] + argv, stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT,
                                     env=env or {"PATH": GUEST_PATH})
        with open(log_path, "rb") as f:
            f.seek(start)
            sys.stdout.buffer.write(f.read())
        sys.stdout.flush()
        return status

    def lima_say(self, text):
        """boot.sh's INFO/WARNING lines."""
        line = "LIMA %s| %s\n" % (datetime.datetime.now().astimezone().isoformat(
            timespec="seconds"), text)
        with open(self.g("/var/log/cloud-init-output.log"), "a") as f:
            f.write(line)
        sys.stdout.write(line)
        sys.stdout.flush()

    # --- the boot
    def boot(self):
        signal.signal(signal.SIGTERM, self.shutdown)
        signal.signal(signal.SIGINT, self.shutdown)
        self.claim_port()
        self.state("booting")
        subprocess.run(["hostname", hostname_of(self.inst.name)], check=True)
        self.mount_root()
        self.bootcmd()
        self.mount_shares()
        self.set_hostname()
        self.setup_user()
        self.start_sshd()
        finished = self.boot_sh()
        reachable = self.ssh_ready()
        if not finished:
            self.errors.append('failed to satisfy the final requirement 1 of 1 "boot scripts must '
                               'have finished": see /var/log/cloud-init-output.log')
        self.state("ready" if finished and reachable else "degraded")

    def mount(self, *args):
        subprocess.run(["mount"] + list(args), check=True)

    def mount_root(self):
        upper, work = self.inst.path("diffdisk", "upper"), self.inst.path("diffdisk", "work")
        self.mount("-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s,workdir=%s"
                   % (self.cache, upper, work), self.root)
        self.mount_system()
        os.makedirs(self.g("/run/lima-fake"), mode=0o700)
        os.makedirs(self.g("/var/log"), exist_ok=True)

    def mount_system(self):
        """What an init mounts before anything runs: /proc, /sys, /run, /tmp and /dev."""
        for d in ("proc", "sys", "dev", "run", "tmp"):
            os.makedirs(self.g("/" + d), exist_ok=True)
        self.mount("-t", "proc", "-o", "nosuid,nodev,noexec", "proc", self.g("/proc"))
        self.mount("-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs", self.g("/sys"))
        self.mount("-t", "tmpfs", "-o", "nosuid,mode=0755", "tmpfs", self.g("/run"))
        self.mount("-t", "tmpfs", "-o", "nosuid,nodev,mode=1777", "tmpfs", self.g("/tmp"))
        self.mount_dev(self.g("/dev"))

    def mount_dev(self, dev):
        self.mount("-t", "tmpfs", "-o", "nosuid,mode=0755", "tmpfs", dev)
        for node in ("null", "zero", "full", "random", "urandom", "tty"):
            open(os.path.join(dev, node), "w").close()
            self.mount("--bind", "/dev/" + node, os.path.join(dev, node))
        os.makedirs(os.path.join(dev, "pts"))
        os.makedirs(os.path.join(dev, "shm"))
        self.mount("-t", "devpts", "-o", "newinstance,ptmxmode=0666,mode=0620,gid=5", "devpts",
                   os.path.join(dev, "pts"))
        self.mount("-t", "tmpfs", "-o", "nosuid,nodev,mode=1777", "tmpfs", os.path.join(dev, "shm"))
        for link, target in (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"),
                             ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, os.path.join(dev, link))

    def bootcmd(self):
        """cloud-init's bootcmd: every `mode: boot` script in one /bin/sh script."""
        scripts = [p["script"] for p in self.c.get("provision") or [] if p["mode"] == "boot"]
        if not scripts:
            return
        params = "".join("PARAM_%s=%s\n" % kv for kv in sorted(self.c["param"].items()))
        body = "#!/bin/sh\n"
        for script in scripts:
            body += ("# We need to embed the params.env as a here-doc because /mnt/lima-cidata is"
                     " not yet mounted\nwhile read -r line; do [ -n \"$line\" ] && export "
                     "\"$line\"; done <<'EOF'\n%sEOF\n%s\n" % (params, script))
        path = "/run/lima-fake/bootcmd.sh"
        with open(self.g(path), "w") as f:
            f.write(body)
        os.chmod(self.g(path), 0o700)
        status = self.run(["/bin/sh", path], env={"PATH": GUEST_PATH, "INSTANCE_ID": self.iid})
        if status != 0:
            self.say("cloud-init: Running module bootcmd failed (exit status %d)" % status)

    def mount_shares(self):
        """cloud-init's mounts: the template's mounts (Lima's 9p/virtiofs ones; nofail)."""
        for m in self.c.get("mounts") or []:
            target = self.g(m["mountPoint"])
            try:
                os.makedirs(target, exist_ok=True)
                # A read-only share shows the owner's files as nobody's: with no id of the guest
                # mapped, not even root, which has every capability here and could remount it
                # read-write, can write there (QEMU enforces readonly=on on the host's side).
                st = os.stat(m["location"])
                shown = self.user["uid"] if m["writable"] else 65534
                idmapped_bind(m["location"], target, (shown, st.st_uid), (shown, st.st_gid),
                              not m["writable"], self.g("/proc"))
            except OSError as e:
                self.say("mount of %s at %s failed: %s" % (m["location"], m["mountPoint"], e))

    def set_hostname(self):
        with open(self.g("/etc/hostname"), "w") as f:
            f.write(hostname_of(self.inst.name) + "\n")

    def setup_user(self):
        """cloud-init's users-groups and ssh modules for Lima's user-data."""
        name = self.user["name"]
        if guest_accounts(self.root, name):
            self.say("User %s already exists, skipping." % name)
        else:
            comment = ["--comment", self.user["comment"]] if self.user["comment"] else []
            self.run(["useradd", name] + comment + ["--home", self.user["home"], "--shell",
                                                    self.user["shell"], "--uid",
                                                    str(self.user["uid"]), "-m"])
        self.run(["passwd", "-l", name])
        self.sudo_rule(name)
        account = guest_accounts(self.root, name)
        if account:
            self.authorize(account)
        for key in glob.glob(self.g("/etc/ssh") + "/ssh_host_*"):
            os.remove(key)
        self.run(["ssh-keygen", "-A"])

    def sudo_rule(self, name):
        path = self.g("/etc/sudoers.d/90-cloud-init-users")
        rule = "%s ALL=(ALL) NOPASSWD:ALL" % name
        old = read_text(path) if os.path.exists(path) else None
        if old and rule in old.splitlines():
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        header = "" if old else "# Created by cloud-init v. 22.4.2 on %s\n" % time.strftime(
            "%a, %d %b %Y %H:%M:%S +0000", time.gmtime())
        with open(path, "a") as f:
            f.write("%s\n# User rules for %s\n%s\n" % (header, name, rule))
        os.chmod(path, 0o440)

    def authorize(self, account):
        uid, gid, home = account
        ssh_dir = self.g(home + "/.ssh")
        os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
        os.chown(ssh_dir, uid, gid)
        path = os.path.join(ssh_dir, "authorized_keys")
        lines = read_text(path).splitlines() if os.path.exists(path) else []
        lines += [k for k in public_keys(self.c) if k not in lines]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chown(path, uid, gid)
        os.chmod(path, 0o600)

    def claim_port(self):
        """A port in use ends the VM before it boots, as QEMU's failing hostfwd would."""
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError as e:
                sys.exit("[fake-vm] could not set up host forwarding rule "
                         "'tcp:127.0.0.1:%d-:22': %s" % (self.port, e.strerror))

    def start_sshd(self):
        """The guest's own sshd, on the host's 127.0.0.1:PORT."""
        os.makedirs(self.g("/run/sshd"), mode=0o755, exist_ok=True)
        self.sshd = subprocess.Popen(
            ["chroot", self.root, "/usr/sbin/sshd", "-D", "-e", "-p", str(self.port), "-o",
             "ListenAddress=127.0.0.1"], stdin=subprocess.DEVNULL, env={"PATH": GUEST_PATH})

    def ssh_ready(self):
        """The host agent's essential requirement "ssh": Lima's key logs the user in (tried for
        10s, where Lima tries for 10 minutes)."""
        argv = ssh_argv(self.inst, self.port) + ["true"]
        for _ in range(40):
            if self.sshd.poll() is not None:
                error = "sshd exited with status %d" % self.sshd.returncode
                break
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode == 0:
                return True
            error = done.stderr.strip()
            time.sleep(0.25)
        self.errors.append('failed to satisfy the essential requirement 1 of 2 "ssh": %s' % error)
        return False

    def script_env(self):
        env = {"PATH": GUEST_PATH, "LIMA_CIDATA_NAME": self.inst.name,
               "LIMA_CIDATA_USER": self.user["name"], "LIMA_CIDATA_UID": str(self.user["uid"]),
               "LIMA_CIDATA_COMMENT": self.user["comment"], "LIMA_CIDATA_HOME": self.user["home"],
               "LIMA_CIDATA_SHELL": self.user["shell"],
               "LIMA_CIDATA_MOUNTTYPE": self.c["mountType"],
               "LIMA_CIDATA_VMTYPE": self.c["vmType"],
               "LIMA_CIDATA_PLAIN": "1" if self.c["plain"] else ""}
        env.update(("PARAM_" + k, v) for k, v in self.c["param"].items())
        env.update(self.c.get("env") or {})
        return env

    def boot_sh(self):
        """Lima's boot.sh after its own boot/ scripts; False where its `set -e` would stop it."""
        provisions = list(enumerate(self.c.get("provision") or []))
        for i, p in provisions:
            if p["mode"] == "dependency":
                self.root_script("dependency", i, p["script"])
        for i, p in provisions:
            if p["mode"] == "data" and not self.data_file(i, p):
                return False
            if p["mode"] == "yq":
                self.lima_say("WARNING: the fake limactl does not implement provision mode yq "
                              "(%s)" % p["path"])
                self.code = 1
        for i, p in provisions:
            if p["mode"] == "system":
                self.root_script("system", i, p["script"])
        for i, p in provisions:
            if p["mode"] == "user" and not self.user_script(i, p["script"]):
                return False
        with open(self.g("/run/lima-boot-done"), "w") as f:
            f.write("instance-id: %s\nlocal-hostname: %s\n" % (self.iid,
                                                                hostname_of(self.inst.name)))
        self.lima_say("Exiting with code %d" % self.code)
        return True

    def stage(self, kind, i, text, mode):
        path = "/run/lima-fake/provision.%s/%08d" % (kind, i)
        os.makedirs(self.g(os.path.dirname(path)), mode=0o700, exist_ok=True)
        with open(self.g(path), "w") as f:
            f.write(text)
        os.chmod(self.g(path), mode)
        return path

    def root_script(self, kind, i, script):
        path = self.stage(kind, i, script, 0o700)
        self.lima_say("Executing " + path)
        if self.run([path], env=self.script_env()) != 0:
            self.lima_say("WARNING: Failed to execute " + path)
            self.code = 1

    def data_file(self, i, p):
        path, owner = p["path"], p["owner"]
        if os.path.lexists(self.g(path)) and not p["overwrite"]:
            self.lima_say("Not overwriting " + path)
            return True
        source = self.stage("data", i, p["content"], 0o700)
        self.lima_say("Copying %s to %s" % (source, path))
        parent = os.path.dirname(path)
        if self.run(["sudo", "-iu", owner.split(":")[0], "mkdir", "-p", parent]) != 0:
            self.lima_say("WARNING: Failed to create directory for %s (as user %s)"
                          % (path, owner.split(":")[0]))
            self.lima_say("WARNING: Falling back to creating directory as root to maintain "
                          "compatibility")
            if self.run(["mkdir", "-p", parent]) != 0:
                return False
        return all(self.run(cmd) == 0 for cmd in (["cp", source, path], ["chown", owner, path],
                                                   ["chmod", str(p["permissions"]), path]))

    def user_script(self, i, script):
        name, uid = self.user["name"], self.user["uid"]
        source = self.stage("user", i, script, 0o700)
        account = guest_accounts(self.root, name)
        run_dir = self.g("/run/user/%d" % uid)
        os.makedirs(run_dir, mode=0o700, exist_ok=True)
        if account:
            os.chown(run_dir, account[0], account[1])
        home_script = self.user["home"] + "/.lima-user-script"
        self.lima_say("Executing %s (as user %s)" % (source, name))
        for cmd in (["cp", source, home_script], ["chown", name, home_script],
                    ["chmod", "755", home_script]):
            if self.run(cmd) != 0:
                return False
        params = ",".join("PARAM_" + k for k in sorted(self.c["param"]))
        if self.run(["sudo", "-iu", name, "--preserve-env=" + params,
                     "XDG_RUNTIME_DIR=/run/user/%d" % uid, home_script],
                    env=self.script_env()) != 0:
            self.lima_say("WARNING: Failed to execute %s (as user %s)" % (source, name))
            self.code = 1
        return self.run(["rm", home_script]) == 0

    # --- running and stopping
    def shutdown(self, signum, frame):
        self.say("received signal %d, shutting down" % signum)
        end_namespace()


def end_namespace():
    """PID 1's end: everything else in its namespace goes with it."""
    kill(-1, signal.SIGTERM)
    deadline = time.time() + 3
    while time.time() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.05)
        except ChildProcessError:
            break
    kill(-1, signal.SIGKILL)
    os._exit(0)


def reap_forever():
    """PID 1's life: it waits for every orphan of its namespace."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(1)


def vm_main(args):
    name, port, cache = args
    vm = VM(name, int(port), cache)
    try:
        vm.boot()
    except Exception:
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)
    reap_forever()


# ---------------------------------------------------------------------------------------------
# main

COMMANDS = {"create": cmd_create, "start": cmd_start, "stop": cmd_stop, "delete": cmd_delete,
            "remove": cmd_delete, "rm": cmd_delete, "list": cmd_list, "ls": cmd_list,
            "edit": cmd_edit, "shell": cmd_shell, "snapshot": cmd_snapshot}


def split_command(argv):
    """(command, its arguments): global flags may come before the command."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        takes_value = argv[i].lstrip("-") in ("log-level", "log-format")
        i += 2 if takes_value else 1
    if i >= len(argv):
        return None, argv
    return argv[i], argv[:i] + argv[i + 1:]


def main(argv):
    if argv and argv[0] == "__vm":
        vm_main(argv[1:])
        return 0
    if argv[:1] in (["--version"], ["-v"]):
        print("limactl version " + VERSION)
        return 0
    command, rest = split_command(argv)
    try:
        if command not in COMMANDS:
            if command is None:
                print("Lima: Linux virtual machines (fake)\n\nUsage:\n  limactl [command]\n\n"
                      "Commands: " + " ".join(sorted(COMMANDS)))
                return 0
            raise Fatal('unknown command %s for "limactl"' % go_quote(command))
        COMMANDS[command](rest)
    except Fatal as e:
        log("fatal", str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
