#!/usr/bin/env python3
"""A client that sends a request slowly, for Arion's request timeouts.

    slow_client.py ADDR PORT MODE

MODE "head": the request head one byte every 0.1 s (no request completes
before ~4 s); MODE "body": the head at once with Content-Length: 40, then
one body byte every 0.2 s. Sending stops as soon as the server answers.
Prints the status line, the body and the seconds until the answer, then
whether the server closed the connection ("closed" or "open").
"""
import select
import socket
import sys
import time

addr, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((addr, port))
if mode == "head":
    first, trickle, gap = b"", b"GET /slow-head HTTP/1.1\r\nHost: a\r\nX-Pad: 0123456789\r\n\r\n", 0.1
else:
    first = b"POST /slow-body HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\n"
    trickle, gap = b"x" * 40, 0.2
t0 = time.time()
s.sendall(first)
resp = b""
for b in trickle:
    r, _, _ = select.select([s], [], [], gap)
    if r:
        break
    try:
        s.send(bytes([b]))
    except OSError:
        break
s.settimeout(5)
closed = "open"
try:
    while True:
        d = s.recv(4096)
        if not d:
            closed = "closed"
            break
        resp += d
        if b"\r\n\r\n" in resp:
            head, _, body = resp.partition(b"\r\n\r\n")
            n = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            if len(body) >= n:
                elapsed = time.time() - t0
                s.settimeout(2)
                try:
                    closed = "closed" if not s.recv(1) else "open"
                except socket.timeout:
                    closed = "open"
                except OSError:
                    closed = "closed"
                print(head.split(b"\r\n")[0].decode(), "|", body.decode().strip(), "|",
                      "%.1f" % elapsed, "|", closed)
                sys.exit(0)
except (socket.timeout, ConnectionResetError):
    pass
print("no answer:", resp[:80], "%.1f" % (time.time() - t0), closed)
