#!/usr/bin/env python3
"""A small MCP server speaking Streamable HTTP (JSON and event-stream
answers), a backend of tests/http/e2e_mcp.sh.

    mcp_backend.py ADDR PORT NAME TOOL[,TOOL...] [sse]

Serves POST /mcp: initialize (issues its own Mcp-Session-Id, which every
later request must carry: 404 otherwise, as the SDK's server answers),
notifications (202), tools/list (TOOLs), tools/call (text
"NAME:TOOL:ARGUMENTS"; with 'sse' the answer is an event stream: a
progress notification, then the result; an argument "sleep": S first
prints "slow call" and waits S seconds, for a test to kill the backend
mid-call), a prompt 'greet'
("NAME:prompt:greet") and a resource mem://NAME/doc ("NAME:resource:URI"). Prints "ready" once listening.
"""
import json
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

addr, port, name, tools = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
sse = len(sys.argv) > 5 and sys.argv[5] == "sse"
sessions = set()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body=None, ctype="application/json", extra=()):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(n))
        sid = self.headers.get("Mcp-Session-Id")
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            s = uuid.uuid4().hex
            sessions.add(s)
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": name, "version": "1"}}},
                extra=[("Mcp-Session-Id", s)])
            return
        if sid not in sessions:
            self.send(404, {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32001, "message": "Session not found"}})
            return
        if mid is None:
            self.send(202)
            return
        if method == "tools/list":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"tools": [
                {"name": t, "description": f"{name}'s {t}", "inputSchema": {"type": "object"}}
                for t in tools]}})
            return
        if method == "tools/call":
            p = msg["params"]
            slow = (p.get("arguments") or {}).get("sleep")
            if slow:
                print("slow call", flush=True)
                time.sleep(slow)
            text = f"{name}:{p['name']}:{json.dumps(p.get('arguments', {}), sort_keys=True)}"
            res = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}}
            if sse:
                prog = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1}}
                body = f"event: message\ndata: {json.dumps(prog)}\n\nevent: message\ndata: {json.dumps(res)}\n\n"
                self.send(200, body.encode(), ctype="text/event-stream")
            else:
                self.send(200, res)
            return
        # one prompt and one resource, named after the backend
        p = msg.get("params") or {}
        if method == "prompts/list":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"prompts": [{"name": "greet"}]}})
            return
        if method == "prompts/get":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"messages": [
                {"role": "user", "content": {"type": "text", "text": f"{name}:prompt:{p.get('name')}"}}]}})
            return
        if method == "resources/list":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"resources": [
                {"uri": f"mem://{name}/doc", "name": "doc"}]}})
            return
        if method == "resources/templates/list":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"resourceTemplates": []}})
            return
        if method == "resources/read":
            self.send(200, {"jsonrpc": "2.0", "id": mid, "result": {"contents": [
                {"uri": p.get("uri"), "text": f"{name}:resource:{p.get('uri')}"}]}})
            return
        self.send(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


srv = ThreadingHTTPServer((addr, port), H)
print("ready", flush=True)
srv.serve_forever()
