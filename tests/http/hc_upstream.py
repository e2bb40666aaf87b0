#!/usr/bin/env python3
"""An upstream whose health the test flips, for active health checks
(tests/http/e2e_active_hc.sh).

    hc_upstream.py ADDR PORT [CERT KEY]

Serves on ADDR:PORT (HTTP/1.1, one request per connection; over TLS with
CERT and KEY when given):
  /healthz   200 "ok", or the status set by the control port
  anything   200 "hc_upstream ADDR" (which host answered)
and counts the requests of each kind.

Control on ADDR:PORT+1000, one line per connection, answered "ok\n" or a
number:
  health CODE   /healthz answers CODE from now on
  listen 0|1    stop listening on PORT (connections are refused) or start again
  hits          requests served on other paths than /healthz
  checks        /healthz requests served
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
state = {"health": 200, "listen": True, "hits": 0, "checks": 0}
lock = threading.Lock()


def serve(c):
    try:
        c.settimeout(5)
        if tls:
            c = tls.wrap_socket(c, server_side=True)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 16384:
            d = c.recv(4096)
            if not d:
                return
            data += d
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        path = line.split(" ")[1] if " " in line else "/"
        with lock:
            if path.startswith("/healthz"):
                state["checks"] += 1
                code = state["health"]
                body = b"ok"
            else:
                state["hits"] += 1
                code = 200
                body = ("hc_upstream %s" % addr).encode()
        c.sendall(b"HTTP/1.1 %d X\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
                  % (code, len(body), body))
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
