#!/usr/bin/env python3
"""An HTTPS server for credential-injection tests: HTTP/1.1 with keep-alive, it writes every
request it receives (method, path, headers, body, and the TLS server name asked for) as one JSON
line to LOG, and answers 200 with the body "ok <n>\\n" (n counts requests), in chunks when the
request asks for it with the header X-Chunked-Response.

usage: header_server.py ADDR PORT CERT KEY LOG      (PORT 0: a free one; the port is printed)
"""
import json
import socketserver
import ssl
import sys
import threading

count = 0
lock = threading.Lock()


def read_line(f):
    line = f.readline(65537)
    if not line.endswith(b"\r\n"):
        raise EOFError
    return line[:-2]


def read_body(f, headers):
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(read_line(f).split(b";")[0], 16)
            if size == 0:
                while read_line(f):
                    pass
                return body, "chunked"
            body += f.read(size)
            read_line(f)
    n = int(headers.get("content-length", "0"))
    return f.read(n), "length"


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        global count
        sni = getattr(self.request, "sni", None)
        try:
            while True:
                line = read_line(self.rfile)
                method, path, _ = line.decode("latin-1").split(" ")
                headers, raw = {}, []
                while True:
                    h = read_line(self.rfile)
                    if not h:
                        break
                    name, value = h.decode("latin-1").split(":", 1)
                    headers[name.lower()] = value.strip()
                    raw.append([name, value.strip()])
                body, framing = read_body(self.rfile, headers)
                with lock:
                    count += 1
                    n = count
                    with open(sys.argv[5], "a") as log:
                        log.write(json.dumps({"method": method, "path": path, "headers": raw,
                                              "body": body.decode("latin-1"), "framing": framing,
                                              "sni": sni}) + "\n")
                reply = f"ok {n}\n".encode()
                if "x-chunked-response" in headers:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for i in range(0, len(reply), 2):
                        part = reply[i:i + 2]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                                     % (len(reply), reply))
                self.wfile.flush()
        except (EOFError, ValueError, OSError, ssl.SSLError):
            pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    addr, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def remember(sock, name, _):
        sock.sni = name

    context.sni_callback = remember
    server = Server((addr, port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
