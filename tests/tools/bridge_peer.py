#!/usr/bin/env python3
"""Both ends of Claude in Chrome's socket protocol for the bridge tests and the bench: frames of a
4-byte little-endian length and a payload (JSON in real use; any bytes here).

  bridge_peer.py serve PATH            a native host stand-in: listens on PATH (its directory
                                       0700, the socket 0600), echoes every frame back; prints
                                       "ready" once listening; runs until SIGTERM
  bridge_peer.py sink PATH             listens on PATH, reads each connection to its end and
                                       answers with the byte count (8 bytes, little-endian)
  bridge_peer.py messages PATH N MAX   one connection, N frames of random sizes up to MAX bytes
                                       (the first and the last MAX exactly), each echoed back
                                       byte-exact
  bridge_peer.py concurrent PATH C     C connections at once, each 20 frames up to 64 KiB
  bridge_peer.py sequential PATH N     N connections one after the other, one frame each
  bridge_peer.py until-ok PATH SECS    retries a connection and one frame until it works; prints
                                       the seconds it took
  bridge_peer.py rtt PATH N SIZE       N round trips of SIZE-byte frames on one connection;
                                       prints "p50_us p99_us"
  bridge_peer.py tput PATH MIB         sends MIB MiB to a sink and waits for its count; prints
                                       MiB/s
  bridge_peer.py hold PATH C           opens C connections, checks each with a frame, prints
                                       "held", keeps them until stdin ends
"""
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

LEN = struct.Struct("<I")


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def send_frame(sock, payload):
    sock.sendall(LEN.pack(len(payload)) + payload)


def recv_frame(sock):
    (n,) = LEN.unpack(recv_exact(sock, 4))
    return recv_exact(sock, n)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def round_trip(sock, payload):
    send_frame(sock, payload)
    got = recv_frame(sock)
    if got != payload:
        raise SystemExit("frame of %d bytes came back as %d different bytes" % (len(payload), len(got)))


def listen(path):
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o700, exist_ok=True)
    os.chmod(d, 0o700)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o600)
    s.listen(512)
    return s


def serve_forever(server, handler):
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handler, args=(conn,), daemon=True).start()


def echo(conn):
    with conn:
        try:
            while True:
                send_frame(conn, recv_frame(conn))
        except (EOFError, OSError):
            pass


def sink(conn):
    with conn:
        total = 0
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            total += len(chunk)
        conn.sendall(struct.pack("<Q", total))


def payload(size, rng):
    return rng.randbytes(size)


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    rng = random.Random(7)
    if cmd == "serve":
        serve_forever(listen(path), echo)
    elif cmd == "sink":
        serve_forever(listen(path), sink)
    elif cmd == "messages":
        n, biggest = int(args[0]), int(args[1])
        total = 0
        with connect(path) as s:
            for i in range(n):
                size = biggest if i in (0, n - 1) else rng.randint(1, biggest)
                round_trip(s, payload(size, rng))
                total += size
        print("ok %d frames %d bytes" % (n, total))
    elif cmd == "concurrent":
        c = int(args[0])
        errors = []
        socks = [connect(path) for _ in range(c)]

        def work(s, seed):
            r = random.Random(seed)
            try:
                for _ in range(20):
                    round_trip(s, payload(r.randint(1, 65536), r))
            except BaseException as e:  # noqa: B902 - reported below
                errors.append(repr(e))
            finally:
                s.close()

        threads = [threading.Thread(target=work, args=(s, i)) for i, s in enumerate(socks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise SystemExit("%d of %d connections failed: %s" % (len(errors), c, errors[0]))
        print("ok %d connections" % c)
    elif cmd == "sequential":
        n = int(args[0])
        for i in range(n):
            with connect(path) as s:
                round_trip(s, b'{"method":"ping","n":%d}' % i)
        print("ok %d connections" % n)
    elif cmd == "until-ok":
        deadline = time.monotonic() + float(args[0])
        start = time.monotonic()
        while True:
            try:
                with connect(path) as s:
                    s.settimeout(2)
                    round_trip(s, b'{"method":"ping"}')
                print("%.3f" % (time.monotonic() - start))
                return
            except (OSError, EOFError) as e:
                if time.monotonic() > deadline:
                    raise SystemExit("no answer within %s s: %r" % (args[0], e))
                time.sleep(0.02)
    elif cmd == "rtt":
        n, size = int(args[0]), int(args[1])
        data = payload(size, rng)
        times = []
        with connect(path) as s:
            for _ in range(50):
                round_trip(s, data)
            for _ in range(n):
                t0 = time.perf_counter_ns()
                round_trip(s, data)
                times.append(time.perf_counter_ns() - t0)
        times.sort()
        print("%d %d" % (times[len(times) // 2] // 1000, times[min(len(times) - 1, len(times) * 99 // 100)] // 1000))
    elif cmd == "tput":
        mib = int(args[0])
        block = payload(1 << 20, rng)
        with connect(path) as s:
            t0 = time.perf_counter()
            for _ in range(mib):
                s.sendall(block)
            s.shutdown(socket.SHUT_WR)
            (total,) = struct.unpack("<Q", recv_exact(s, 8))
            dt = time.perf_counter() - t0
        if total != mib << 20:
            raise SystemExit("sink counted %d bytes, sent %d" % (total, mib << 20))
        print("%.1f" % (mib / dt))
    elif cmd == "hold":
        c = int(args[0])
        socks = [connect(path) for _ in range(c)]
        for s in socks:
            round_trip(s, b'{"method":"ping"}')
        print("held", flush=True)
        sys.stdin.read()
    else:
        raise SystemExit("unknown command " + cmd)


if __name__ == "__main__":
    main()
