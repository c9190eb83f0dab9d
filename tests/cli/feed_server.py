#!/usr/bin/env python3
"""A release feed for the update tests: serves DIR over HTTP on a free loopback port.

usage: feed_server.py DIR PORT_FILE LOG_FILE

Writes the port it listens on to PORT_FILE and one line per request ("GET /latest") to
LOG_FILE. A file with a sibling named FILE.truncate is sent with its full Content-Length but
only half of its bytes, then the connection is closed: a truncated download.
"""
import http.server
import os
import sys

root, port_file, log_file = sys.argv[1:4]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log_file, "a") as log:
            log.write(f"GET {self.path}\n")
        path = os.path.join(root, self.path.lstrip("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if os.path.exists(path + ".truncate"):
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
