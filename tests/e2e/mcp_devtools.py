#!/usr/bin/env python3
"""An MCP client over stdio for the DevTools end-to-end test, run in the sandbox: it starts the
chrome-devtools MCP server exactly as Claude Code's user configuration (~/.claude.json) says,
then initialize, tools/list, navigate_page to URL, list_pages and take_screenshot. Prints one
JSON line: the tool count, the page list text and the PNG's size. Exits non-zero on any error.

  mcp_devtools.py URL
"""
import base64
import json
import os
import select
import subprocess
import sys
import time


def main():
    url = sys.argv[1]
    with open(os.path.expanduser("~/.claude.json")) as f:
        server = json.load(f)["mcpServers"]["chrome-devtools"]
    env = dict(os.environ, CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS="1", CI="1")
    env.update(server.get("env", {}))
    proc = subprocess.Popen([server["command"]] + server.get("args", []), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    next_id = [0]
    pending = b""

    def send(obj):
        proc.stdin.write(json.dumps(obj).encode() + b"\n")
        proc.stdin.flush()

    def request(method, params):
        nonlocal pending
        next_id[0] += 1
        rid = next_id[0]
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + 90
        while True:
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if not line.strip():
                    continue
                msg = json.loads(line)
                if msg.get("id") == rid and "method" not in msg:
                    if "error" in msg:
                        raise SystemExit("%s failed: %s" % (method, msg["error"]))
                    return msg["result"]
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit("%s: no answer in 90 s" % method)
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise SystemExit("%s: the server exited (status %s)" % (method, proc.wait()))
                pending += chunk

    def call(tool, args):
        result = request("tools/call", {"name": tool, "arguments": args})
        if result.get("isError"):
            raise SystemExit("%s: %s" % (tool, json.dumps(result["content"])))
        return result["content"]

    def text(content):
        return "\n".join(c["text"] for c in content if c.get("type") == "text")

    try:
        init = request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "ss-e2e", "version": "1"}})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = [t["name"] for t in request("tools/list", {})["tools"]]
        for needed in ("navigate_page", "take_screenshot", "list_pages"):
            if needed not in tools:
                raise SystemExit("tools/list has no %s: %s" % (needed, tools))
        pages = text(call("list_pages", {}))
        page_id = None
        for line in pages.splitlines():
            head = line.split(":", 1)[0].strip()
            if head.isdigit():
                page_id = int(head)
                if "[selected]" in line:
                    break
        if page_id is None:
            raise SystemExit("no page in list_pages: " + pages)
        call("navigate_page", {"pageId": page_id, "type": "url", "url": url})
        pages = text(call("list_pages", {}))
        shot = call("take_screenshot", {"pageId": page_id, "format": "png"})
        images = [c for c in shot if c.get("type") == "image"]
        if not images:
            raise SystemExit("take_screenshot returned no image: " + json.dumps(shot)[:500])
        png = base64.b64decode(images[0]["data"])
        if not png.startswith(b"\x89PNG\r\n\x1a\n"):
            raise SystemExit("the screenshot is not a PNG")
        print(json.dumps({"server": init["serverInfo"]["name"], "tools": len(tools),
                          "pages": pages, "png_bytes": len(png)}))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
