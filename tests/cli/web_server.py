#!/usr/bin/env python3
"""An HTTP (or, with a certificate and key, HTTPS) server of DIR for tests and benchmarks,
HTTP/1.1 with keep-alive, quiet, without the reverse lookup http.server makes at start (which
waits for a resolver where there is none).

usage: web_server.py ADDR PORT DIR [CERT KEY]      (PORT 0: a free one; the port is printed)
"""
import functools
import http.server
import socketserver
import ssl
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 1024


def main():
    addr, port, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    server = Server((addr, port), functools.partial(Handler, directory=root))
    if len(sys.argv) == 6:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[4], sys.argv[5])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
