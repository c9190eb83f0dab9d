#!/usr/bin/env python3
"""A DNS server for tests: answers A and AAAA queries for the names given (a name given twice
has both addresses; a name with no address of the type asked has none, NOERROR), NXDOMAIN for
any other name, over UDP and TCP, and writes every question it receives to a log (to show what
reached it).

usage: dns_server.py ADDR PORT LOG NAME=IPV4|IPV6...   (PORT 0: a free one, printed on stdout)
"""
import socket
import socketserver
import struct
import sys
import threading


def parse_question(msg):
    at, labels = 12, []
    while msg[at]:
        n = msg[at]
        labels.append(msg[at + 1:at + 1 + n].decode("latin-1"))
        at += 1 + n
    qtype, qclass = struct.unpack("!HH", msg[at + 1:at + 5])
    return ".".join(labels).lower(), qtype, at + 5


def answer(msg, records, log):
    name, qtype, end = parse_question(msg)
    with open(log, "a") as f:
        f.write(f"{name} {qtype}\n")
    ident, flags = struct.unpack("!HH", msg[:4])
    rd = flags & 0x0100
    if name in records:
        family = {1: socket.AF_INET, 28: socket.AF_INET6}.get(qtype)
        rcode, answers = 0, [(family, ip) for f, ip in records[name] if f == family]
    else:
        rcode, answers = 3, []
    head = struct.pack("!HHHHHH", ident, 0x8000 | 0x0400 | rd | 0x0080 | rcode, 1, len(answers), 0, 0)
    body = msg[12:end]
    for family, ip in answers:
        data = socket.inet_pton(family, ip)
        body += b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, 60, len(data)) + data
    return head + body


def main():
    addr, port, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    records = {}
    for arg in sys.argv[4:]:
        name, ip = arg.split("=", 1)
        family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        records.setdefault(name.lower(), []).append((family, ip))
    asked = port

    class Tcp(socketserver.BaseRequestHandler):
        def handle(self):
            data = self.request.recv(2)
            if len(data) < 2:
                return
            (n,) = struct.unpack("!H", data)
            msg = b""
            while len(msg) < n:
                chunk = self.request.recv(n - len(msg))
                if not chunk:
                    return
                msg += chunk
            reply = answer(msg, records, log)
            self.request.sendall(struct.pack("!H", len(reply)) + reply)

    socketserver.TCPServer.allow_reuse_address = True
    # A free UDP port may be taken for TCP (by tests running beside this one): then another.
    for attempt in range(20):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((addr, asked))
        port = udp.getsockname()[1]
        try:
            tcp = socketserver.ThreadingTCPServer((addr, port), Tcp)
            break
        except OSError:
            udp.close()
            if asked or attempt == 19:
                raise
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    print(port, flush=True)
    while True:
        msg, peer = udp.recvfrom(4096)
        try:
            udp.sendto(answer(msg, records, log), peer)
        except Exception:  # a malformed query: no answer, as a resolver would
            pass


if __name__ == "__main__":
    main()
