#!/usr/bin/python3
"""What a normal client sees: requests to Arion for a while, as JSON.

    client.py keepalive|new HOST PORT SECONDS INTERVAL_MS SOURCE_IP

keepalive: one HTTP/1.1 connection, a GET every INTERVAL_MS (a new
connection only after a failure). new: a new connection for every GET,
every INTERVAL_MS. A request fails if it gets no complete 200 response
within 2 s (connect included). Prints {"mode", "sent", "ok", "failed",
"p50_ms", "p99_ms", "max_ms"} (latencies of the successful ones, connect
included for "new").
"""
import json
import socket
import sys
import time

mode, host, port, secs, interval, src = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(
    sys.argv[4]), float(sys.argv[5]) / 1000, sys.argv[6]
REQ = ("GET /probe HTTP/1.1\r\nHost: %s\r\nUser-Agent: arion-bench\r\n\r\n" % host).encode()


def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.bind((src, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.connect((host, port))
    return s


def get(s):
    """One GET on @s; True if a complete 200 came back."""
    s.sendall(REQ)
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            return False
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        return False
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    while len(body) < n:
        d = s.recv(4096)
        if not d:
            return False
        body += d
    return True


lat, sent, failed = [], 0, 0
conn = None
end = time.monotonic() + secs
nxt = time.monotonic()
while time.monotonic() < end:
    t0 = time.monotonic()
    sent += 1
    try:
        if conn is None:
            conn = connect()
        ok = get(conn)
    except OSError:
        ok = False
    if ok:
        lat.append((time.monotonic() - t0) * 1000)
    else:
        failed += 1
    if mode == "new" or not ok:
        if conn is not None:
            conn.close()
        conn = None
    nxt += interval
    time.sleep(max(0, nxt - time.monotonic()))
lat.sort()


def pct(p):
    return round(lat[min(len(lat) - 1, int(len(lat) * p))], 2) if lat else None


print(json.dumps({"mode": mode, "sent": sent, "ok": len(lat), "failed": failed,
                  "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": round(lat[-1], 2) if lat else None}))
