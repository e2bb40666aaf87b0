#!/usr/bin/env python3
"""Slow request heads against one Arion listener, for issue 12's test.

    slowloris.py ADDR PORT N NORMAL SECONDS

Opens N connections that send a request line and then one more byte of a
header every second, never ending the head (a slowloris). Once all N have
sent their first bytes, NORMAL ordinary requests go one after another on
fresh connections, each given 2 s to be answered. The slow connections
keep trickling until SECONDS have passed since the last of them started,
or until the server answered and closed them all.

Prints one line:
  normal=<answered 200 within 2 s> worst=<slowest normal, s>
  slow_408=<slow ones answered 408 and closed> slow_other=<slow ones closed
  otherwise or left open> first_408=<s from the first slow byte to the
  first 408> started=<slow connections that sent their first byte>
"""
import errno
import resource
import selectors
import socket
import sys
import time

addr, port, n, normal, seconds = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                  int(sys.argv[4]), float(sys.argv[5]))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = n + 256
if soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

sel = selectors.DefaultSelector()  # epoll: more than FD_SETSIZE sockets
conns = {}  # fd -> state


class Slow:
    def __init__(self, s):
        self.s = s
        self.sent = 0
        self.rx = b""
        self.done = False
        self.ok408 = False


head = b"GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow-"
t_start = time.time()
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    rc = s.connect_ex((addr, port))
    if rc not in (0, errno.EINPROGRESS):
        s.close()
        continue
    c = Slow(s)
    conns[s.fileno()] = c
    sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, c)
    if i % 200 == 199:
        time.sleep(0.05)  # do not flood the SYN queue all at once


def pump(until, send_tick):
    """Connect, send the first bytes, read answers, until `until`."""
    while time.time() < until:
        for key, ev in sel.select(timeout=0.05):
            c = key.data
            if c.done:
                continue
            if ev & selectors.EVENT_WRITE and c.sent == 0:
                try:
                    c.s.send(head)
                    c.sent = len(head)
                    sel.modify(c.s, selectors.EVENT_READ, c)
                except BlockingIOError:
                    pass
                except OSError:
                    finish(c)
                continue
            if ev & selectors.EVENT_READ:
                try:
                    d = c.s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    d = b""
                if d:
                    c.rx += d
                else:
                    c.ok408 = c.rx.startswith(b"HTTP/1.1 408")
                    finish(c)
        if send_tick and time.time() >= send_tick[0]:
            send_tick[0] += 1.0
            for c in conns.values():
                if c.sent and not c.done:
                    try:
                        c.s.send(b"a")  # one more byte of the header name
                        c.sent += 1
                    except OSError:
                        pass


first_408 = [None]


def finish(c):
    if c.done:
        return
    c.done = True
    if c.ok408 and first_408[0] is None:
        first_408[0] = time.time() - t_start
    try:
        sel.unregister(c.s)
    except (KeyError, ValueError):
        pass
    c.s.close()


tick = [time.time() + 1.0]
# until every slow connection has sent its first bytes (at most 20 s)
deadline = time.time() + 20
while time.time() < deadline and any(c.sent == 0 and not c.done for c in conns.values()):
    pump(time.time() + 0.2, tick)
t_last = time.time()
started = sum(1 for c in conns.values() if c.sent)

# ordinary requests while the slow ones trickle
ok = 0
worst = 0.0
for i in range(normal):
    t0 = time.time()
    try:
        s = socket.create_connection((addr, port), timeout=2)
        s.settimeout(2)
        s.sendall(b"GET /normal?i=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
        d = b""
        while True:
            r = s.recv(4096)
            if not r:
                break
            d += r
        s.close()
        if d.startswith(b"HTTP/1.1 200") and time.time() - t0 <= 2.0:
            ok += 1
    except OSError:
        pass
    worst = max(worst, time.time() - t0)
    pump(time.time() + 0.05, tick)

pump(t_last + seconds, tick)
while time.time() < t_last + seconds and not all(c.done for c in conns.values()):
    pump(time.time() + 0.2, tick)
slow_408 = sum(1 for c in conns.values() if c.ok408)
print("normal=%d worst=%.2f slow_408=%d slow_other=%d first_408=%s started=%d" %
      (ok, worst, slow_408, len(conns) - slow_408,
       "%.1f" % first_408[0] if first_408[0] is not None else "none", started))
