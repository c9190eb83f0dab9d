#!/usr/bin/env python3
"""A server that answers "outside says hi" to every TCP connection and every UDP datagram on the
ports given, and appends each datagram to LOG: what a sandbox must not reach, made visible.

usage: outside.py ADDR LOG tcp:PORT... udp:PORT...    (tcp:0: a free port, printed on stdout)
"""
import socket
import sys
import threading

MARK = b"outside says hi\n"


def serve_tcp(sock):
    while True:
        conn, _ = sock.accept()
        conn.settimeout(2)
        try:
            conn.recv(4096)
        except OSError:
            pass
        try:
            conn.sendall(MARK)
        except OSError:
            pass
        conn.close()


def serve_udp(sock, log):
    while True:
        data, peer = sock.recvfrom(65536)
        with open(log, "ab") as f:
            f.write(data[:200] + b"\n")
        sock.sendto(MARK, peer)


def main():
    addr, log = sys.argv[1], sys.argv[2]
    threads = []
    for spec in sys.argv[3:]:
        proto, port = spec.split(":")
        if proto == "tcp":
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, int(port)))
            s.listen(64)
            print(s.getsockname()[1], flush=True)
            threads.append(threading.Thread(target=serve_tcp, args=(s,), daemon=True))
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((addr, int(port)))
            threads.append(threading.Thread(target=serve_udp, args=(s, log), daemon=True))
    for t in threads:
        t.start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
