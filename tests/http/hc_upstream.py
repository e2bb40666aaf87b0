#!/usr/bin/env python3
"""An upstream whose health the test flips, for active health checks
(tests/http/e2e_active_hc.sh).

    hc_upstream.py ADDR PORT [CERT KEY]

Serves on ADDR:PORT (HTTP/1.1, one request per connection unless
keepalive; over TLS with CERT and KEY when given):
  /healthz   200 "ok", or the status set by the control port
  anything   200 "hc_upstream ADDR" (which host answered)
and counts the requests of each kind.

Control on ADDR:PORT+1000, one line per connection, answered "ok\n" or a
number:
  health CODE   /healthz answers CODE from now on
  listen 0|1    stop listening on PORT (connections are refused) or start again
  hits          requests served on other paths than /healthz
  checks        /healthz requests served
  keepalive 0|1 1: answers without connection: close (unless the request
                has it) and serves the next request on the connection
  body cl|chunked|big   /healthz's body: "ok" with content-length, "ok"
                chunked (with a trailer), or 100000 bytes with content-length
  maxreq N      keepalive: close a connection after N requests, without
                saying so in the answer (0: never)
  conns PATH    connections whose first request was an Envoy/HC check of
                PATH (exactly)
  reqs PATH     Envoy/HC checks of PATH served
"""
import socket
import ssl
import sys
import threading
import time

addr, port = sys.argv[1], int(sys.argv[2])
tls = None
if len(sys.argv) > 4:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[3], sys.argv[4])
state = {"health": 200, "listen": True, "hits": 0, "checks": 0, "keepalive": False,
         "body": "cl", "maxreq": 0}
per_path = {}  # PATH: [connections, requests] of Envoy/HC checks
lock = threading.Lock()


def serve(c):
    try:
        c.settimeout(5)
        if tls:
            c = tls.wrap_socket(c, server_side=True)
        data = b""
        nreq = 0
        while True:
            while b"\r\n\r\n" not in data and len(data) < 16384:
                d = c.recv(4096)
                if not d:
                    return
                data += d
            head, data = data.split(b"\r\n\r\n", 1)
            head = head.decode("latin-1")
            line = head.split("\r\n", 1)[0]
            path = line.split(" ")[1] if " " in line else "/"
            lower = head.lower()
            nreq += 1
            with lock:
                say_keep = state["keepalive"] and "connection: close" not in lower
                # maxreq: closed after the answer without saying so
                keep = say_keep and not (state["maxreq"] and nreq >= state["maxreq"])
                if "user-agent: envoy/hc" in lower:
                    pp = per_path.setdefault(path, [0, 0])
                    pp[0] += nreq == 1
                    pp[1] += 1
                if path.startswith("/healthz"):
                    state["checks"] += 1
                    code = state["health"]
                    kind = state["body"]
                else:
                    state["hits"] += 1
                    code = 200
                    kind = "cl"
            body = b"ok" if path.startswith("/healthz") else ("hc_upstream %s" % addr).encode()
            if kind == "big":
                body = b"x" * 100000
            hdrs = b"" if say_keep else b"connection: close\r\n"
            if kind == "chunked":
                c.sendall(b"HTTP/1.1 %d X\r\ntransfer-encoding: chunked\r\n%s\r\n"
                          b"1;e=1\r\no\r\n1\r\nk\r\n0\r\nx-t: 1\r\n\r\n" % (code, hdrs))
            else:
                c.sendall(b"HTTP/1.1 %d X\r\ncontent-length: %d\r\n%s\r\n%s"
                          % (code, len(body), hdrs, body))
            if not keep:
                break
        if tls:
            c = c.unwrap()  # close_notify, then wait for the peer's
        c.shutdown(socket.SHUT_WR)
        while c.recv(4096):
            pass
    except (OSError, ValueError):
        pass
    finally:
        c.close()


def listener():
    s = None
    while True:
        with lock:
            want = state["listen"]
        if want and s is None:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
            s.listen(128)
            s.settimeout(0.05)
        elif not want and s is not None:
            s.close()
            s = None
        if s is None:
            time.sleep(0.05)
            continue
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def control():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port + 1000))
    s.listen(16)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        try:
            words = c.recv(256).decode().split()
            out = "ok"
            with lock:
                if words[0] == "health":
                    state["health"] = int(words[1])
                elif words[0] in ("keepalive", "maxreq"):
                    state[words[0]] = int(words[1])
                elif words[0] == "body":
                    state["body"] = words[1]
                elif words[0] in ("conns", "reqs"):
                    out = str(per_path.get(words[1], [0, 0])[words[0] == "reqs"])
                elif words[0] == "listen":
                    state["listen"] = words[1] == "1"
                else:
                    out = str(state[words[0]])
            c.sendall((out + "\n").encode())
        except (OSError, IndexError, KeyError, ValueError):
            pass
        finally:
            c.close()


threading.Thread(target=listener, daemon=True).start()
control()
