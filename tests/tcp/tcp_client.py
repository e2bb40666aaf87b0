#!/usr/bin/python3
"""Linux-side peer for lib/tcp's end-to-end tests (run inside the test's
namespace with Debian's python3).

  tcp_client.py bulk HOST PORT BYTES [SECONDS]
      one connection: send BYTES of a seeded pseudo-random stream while
      reading the echo, then shut down writing and read to EOF; the SHA-256
      of what came back must equal that of what was sent.
  tcp_client.py many HOST PORT CONNS BYTES [SECONDS]
      CONNS connections open at once, each sends BYTES, reads them back
      (verified), then closes.
  tcp_client.py cps HOST PORT SECONDS CONCURRENCY
      connections per second (bench/tcp): connect, 64 bytes each way, close
      (with SO_LINGER 0, so the client side keeps no TIME_WAIT).
  tcp_client.py reuse HOST PORT ROUNDS
      ROUNDS connections one after another from the same source port
      (SO_REUSEADDR): each one's SYN meets the previous one's TIME_WAIT on
      Arion's side, which must accept it (RFC 6191 with timestamps).
Prints one line of results; exit 0 on success.
"""
import hashlib
import os
import resource
import selectors
import socket
import sys
import threading
import time


def stream(seed, n):
    """Deterministic bytes: SHA-256 in counter mode, 1 MB at a time."""
    block = b"".join(hashlib.sha256(b"%d:%d" % (seed, i)).digest() for i in range(32768))
    sent = 0
    while sent < n:
        k = min(len(block), n - sent)
        yield block[:k]
        sent += k


def bulk(host, port, total, limit):
    s = socket.create_connection((host, port), timeout=limit)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    h_out, h_in = hashlib.sha256(), hashlib.sha256()
    got = [0]
    err = []

    def reader():
        try:
            while True:
                d = s.recv(1 << 20)
                if not d:
                    break
                h_in.update(d)
                got[0] += len(d)
        except Exception as e:  # noqa: BLE001
            err.append(repr(e))

    t = threading.Thread(target=reader)
    t0 = time.monotonic()
    t.start()
    for chunk in stream(1, total):
        h_out.update(chunk)
        s.sendall(chunk)
    s.shutdown(socket.SHUT_WR)
    t.join(limit)
    dt = time.monotonic() - t0
    s.close()
    okay = not err and got[0] == total and h_in.digest() == h_out.digest()
    print("bulk %s: %d bytes each way in %.2f s (%.1f MB/s each way) sha256 %s%s" % (
        "ok" if okay else "FAILED", got[0], dt, total / dt / 1e6 if dt else 0,
        "match" if h_in.digest() == h_out.digest() else "MISMATCH",
        (" error " + err[0]) if err else ""))
    return okay


def many(host, port, conns, size, limit):
    resource.setrlimit(resource.RLIMIT_NOFILE, (conns + 256, conns + 256))
    sel = selectors.DefaultSelector()
    payload = [bytes((i * 31 + j) & 255 for j in range(size)) for i in range(8)]
    state = {}
    t0 = time.monotonic()
    for i in range(conns):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, port))
        state[s] = {"i": i, "out": payload[i % 8], "sent": 0, "in": bytearray()}
        sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    done = bad = 0
    peak = conns
    while state and time.monotonic() - t0 < limit:
        for key, ev in sel.select(1.0):
            s = key.fileobj
            st = state[s]
            try:
                if ev & selectors.EVENT_WRITE and st["sent"] < size:
                    st["sent"] += s.send(st["out"][st["sent"]:])
                    if st["sent"] == size:
                        sel.modify(s, selectors.EVENT_READ)
                if ev & selectors.EVENT_READ:
                    d = s.recv(65536)
                    if d:
                        st["in"] += d
                    if not d or len(st["in"]) >= size:
                        if bytes(st["in"]) == st["out"]:
                            done += 1
                        else:
                            bad += 1
                        sel.unregister(s)
                        s.close()
                        del state[s]
            except OSError:
                bad += 1
                sel.unregister(s)
                s.close()
                del state[s]
    dt = time.monotonic() - t0
    okay = done == conns and bad == 0
    print("many %s: %d connections open at once, %d verified, %d failed, %d unfinished, %.2f s" %
          ("ok" if okay else "FAILED", peak, done, bad, len(state), dt))
    return okay


def reuse(host, port, rounds):
    """Reconnect from one source port: Linux holds TIME_WAIT for it (it
    receives Arion's FIN last) and, with net.ipv4.tcp_tw_reuse=1, reuses the
    4-tuple a second later with newer timestamps; Arion must see a fresh
    connection each time and echo it."""
    sport = 0
    okay = 0
    for r in range(rounds):
        if r:
            time.sleep(1.1)  # tw_reuse wants a newer timestamp second
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.settimeout(10)
        s.bind(("0.0.0.0", sport))
        sport = s.getsockname()[1]
        try:
            s.connect((host, port))
            msg = b"round %d" % r
            s.sendall(msg)
            s.shutdown(socket.SHUT_WR)
            d = b""
            while True:
                x = s.recv(100)
                if not x:
                    break
                d += x
            okay += d == msg
        except OSError as e:
            print("round %d: %r" % (r, e))
        s.close()
    print("reuse %s: %d of %d rounds from source port %d" % (
        "ok" if okay == rounds else "FAILED", okay, rounds, sport))
    return okay == rounds


def cps(host, port, seconds, conc):
    """Connections per second: CONC connections in flight, each connect,
    send 64 bytes, read them back, close; as many as fit in SECONDS."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (conc + 256, conc + 256))
    sel = selectors.DefaultSelector()
    msg = b"x" * 64
    done = bad = 0

    def start():
        s = socket.socket()
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.connect_ex((host, port))
        sel.register(s, selectors.EVENT_WRITE, [0, b""])

    t0 = time.monotonic()
    for _ in range(conc):
        start()
    while time.monotonic() - t0 < seconds:
        for key, ev in sel.select(0.5):
            s, st = key.fileobj, key.data
            try:
                if ev & selectors.EVENT_WRITE:
                    s.send(msg)
                    sel.modify(s, selectors.EVENT_READ, st)
                    continue
                d = s.recv(1024)
                st[1] += d
                if len(st[1]) < len(msg) and d:
                    continue
                done += st[1] == msg
                bad += st[1] != msg
            except OSError:
                bad += 1
            sel.unregister(s)
            s.close()
            start()
    dt = time.monotonic() - t0
    print("cps: %.0f connections/s (%d in %.1f s, %d failed, %d in flight)" % (done / dt, done, dt, bad, conc))
    return bad == 0


def main():
    mode = sys.argv[1]
    host, port = sys.argv[2], int(sys.argv[3])
    if mode == "bulk":
        r = bulk(host, port, int(sys.argv[4]), float(sys.argv[5]) if len(sys.argv) > 5 else 300)
    elif mode == "many":
        r = many(host, port, int(sys.argv[4]), int(sys.argv[5]),
                 float(sys.argv[6]) if len(sys.argv) > 6 else 120)
    elif mode == "cps":
        r = cps(host, port, float(sys.argv[4]), int(sys.argv[5]))
    elif mode == "reuse":
        r = reuse(host, port, int(sys.argv[4]))
    else:
        sys.exit("unknown mode " + mode)
    sys.exit(0 if r else 1)


if __name__ == "__main__":
    main()
