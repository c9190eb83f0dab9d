#!/usr/bin/env python3
"""A stand-in of Anthropic's Messages API for end-to-end tests of a real agent (HTTPS, HTTP/1.1
with keep-alive). Every request is written as one JSON line to LOG (method, path, headers, the
body's model and last message, and whether any of its messages holds a tool's result). POST
/v1/messages answers, streamed when asked ("stream": true) and as one JSON message otherwise:

  - a request offering the tool Bash whose conversation holds no tool result yet: one tool call,
    Bash with the command in the file COMMAND;
  - anything else (the tool's result came back; a title, a quota check): the final text "Done.".

POST /v1/messages/count_tokens answers a count; anything else a 404 in the API's error form.

usage: messages_api.py ADDR PORT CERT KEY COMMAND LOG    (PORT 0: a free one; it is printed)
"""
import http.server
import json
import socketserver
import ssl
import sys
import threading

lock = threading.Lock()
serial = 0


def next_id(prefix):
    global serial
    with lock:
        serial += 1
        return f"{prefix}_standin{serial:04d}"


def has_tool_result(messages):
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return True
    return False


def answer(request):
    """The content blocks and stop reason for a request."""
    tools = [t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)]
    if "Bash" in tools and not has_tool_result(request.get("messages") or []):
        with open(sys.argv[5]) as f:
            command = f.read().strip()
        return [{"type": "tool_use", "id": next_id("toolu"), "name": "Bash",
                 "input": {"command": command, "description": "Commit the change"}}], "tool_use"
    return [{"type": "text", "text": "Done."}], "end_turn"


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def streamed(message, blocks, stop):
    out = [sse("message_start", {"type": "message_start", "message": dict(message, content=[],
                                                                         stop_reason=None)})]
    for i, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = dict(block, text="")
            delta = {"type": "text_delta", "text": block["text"]}
        out.append(sse("content_block_start",
                       {"type": "content_block_start", "index": i, "content_block": start}))
        out.append(sse("content_block_delta",
                       {"type": "content_block_delta", "index": i, "delta": delta}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 12}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def record(self, request):
        messages = (request.get("messages") or []) if isinstance(request, dict) else []
        last = messages[-1] if messages else {}
        with lock, open(sys.argv[6], "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path,
                                  "headers": [[k, v] for k, v in self.headers.items()],
                                  "model": request.get("model") if isinstance(request, dict)
                                  else None,
                                  "last": last,
                                  "tool_result": has_tool_result(messages)}) + "\n")

    def do_GET(self):
        self.record({})
        self.reply(404, json.dumps({"type": "error", "error": {
            "type": "not_found_error", "message": "not in the stand-in"}}).encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            request = {}
        self.record(request)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self.reply(200, b'{"input_tokens": 42}')
            return
        if path != "/v1/messages":
            self.do_GET()
            return
        blocks, stop = answer(request)
        message = {"id": next_id("msg"), "type": "message", "role": "assistant",
                   "model": request.get("model", "claude-standin"), "content": blocks,
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 42, "output_tokens": 12}}
        if request.get("stream"):
            self.reply(200, streamed(message, blocks, stop), "text/event-stream")
        else:
            self.reply(200, json.dumps(message).encode())


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    addr, port, cert, key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = Server((addr, port), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
