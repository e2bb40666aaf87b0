#!/usr/bin/env python3
"""Bulk TCP load for bench/tcp_proxy/run.

    load.py server ADDR PORT
        per connection, the client's first byte says what to do: 'U' read
        and discard everything (an upload's sink), 'D' send without end (a
        download's source), until the client goes
    load.py client ADDR PORT U|D CONNS SECONDS
        CONNS connections through the proxy, each uploading or downloading
        for SECONDS; prints the bytes moved (sent for U, received for D)

One thread per connection; buffers are reused (no allocation per call),
so the Python side costs little next to the proxy.
"""
import socket
import sys
import threading
import time

BUF = 256 * 1024


def serve_conn(c):
    try:
        mode = c.recv(1)
        if mode == b"U":
            b = bytearray(BUF)
            while c.recv_into(b):
                pass
        elif mode == b"D":
            data = memoryview(bytes(BUF))
            while True:
                c.sendall(data)
    except OSError:
        pass
    finally:
        c.close()


def server(addr, port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(256)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve_conn, args=(c,), daemon=True).start()


def client(addr, port, mode, conns, secs):
    total = [0] * conns
    start = threading.Barrier(conns + 1)

    def one(i):
        s = socket.create_connection((addr, port), timeout=5)
        s.sendall(mode.encode())
        start.wait()
        end = time.monotonic() + secs
        n = 0
        try:
            if mode == "U":
                data = memoryview(bytes(BUF))
                s.settimeout(0.5)
                while time.monotonic() < end:
                    try:
                        n += s.send(data)
                    except socket.timeout:
                        pass
            else:
                b = bytearray(BUF)
                s.settimeout(0.5)
                while time.monotonic() < end:
                    try:
                        k = s.recv_into(b)
                    except socket.timeout:
                        continue
                    if not k:
                        break
                    n += k
        except OSError:
            pass
        total[i] = n
        s.close()

    th = [threading.Thread(target=one, args=(i,)) for i in range(conns)]
    for t in th:
        t.start()
    start.wait()
    for t in th:
        t.join()
    print(sum(total))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(sys.argv[2], int(sys.argv[3]))
    else:
        client(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
