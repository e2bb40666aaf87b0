#!/usr/bin/env python3
"""Raw TCP upstreams for tcp_proxy's e2e test (e2e_tcp_proxy.sh).

    tcp_upstream.py ADDR PORT MODE [ARG]

MODE:
  echo    every byte back; after the client's FIN, what is left, then FIN
          (half-close: the client's side is closed, ours still sends)
  sink    reads nothing for ARG seconds (the proxy's send buffer toward us
          fills), then reads to the client's FIN and answers
          "<bytes> <sha256>\\n", then FIN
  source  sends ARG MiB of the test pattern (pattern(i) below), then FIN;
          ignores what it receives

Prints "ready" once listening. One thread per connection.
"""
import hashlib
import socket
import sys
import threading
import time


BLOCK = bytes(((i * 7 + (i >> 8)) & 255) for i in range(65536))


def pattern(n):
    """The first n bytes of the test pattern: byte i is (i * 7 + i // 256) % 256,
    whose period is 64 KiB."""
    return (BLOCK * (n // 65536 + 1))[:n]


def echo(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.shutdown(socket.SHUT_WR)


def sink(c, hold):
    time.sleep(hold)
    h = hashlib.sha256()
    n = 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        n += len(b)
        h.update(b)
    c.sendall(f"{n} {h.hexdigest()}\n".encode())
    c.shutdown(socket.SHUT_WR)


def source(c, mib):
    chunk = pattern(1 << 20)  # a whole number of periods
    for _ in range(mib):
        c.sendall(chunk)
    c.shutdown(socket.SHUT_WR)
    try:
        while c.recv(65536):
            pass
    except OSError:
        pass


def serve(c, mode, arg):
    try:
        if mode == "echo":
            echo(c)
        elif mode == "sink":
            sink(c, float(arg))
        else:
            source(c, int(arg))
    except OSError:
        pass
    finally:
        c.close()


def main():
    addr, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else "0"
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(128)
    print("ready", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, mode, arg), daemon=True).start()


if __name__ == "__main__":
    main()
