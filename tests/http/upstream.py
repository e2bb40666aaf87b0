#!/usr/bin/env python3
"""A small HTTP/1.1 upstream for Arion's end-to-end tests, for what nginx
cannot be told to do. Raw sockets, so every byte is under control.

    upstream.py ADDR PORT

Paths:
  /upload            read the body (Content-Length or chunked), answer its
                     SHA-256 and length
  /slow?ms=N         wait N ms, then answer (?sleep=N does it on any path)
  /reset-mid         send the head and half the body, then reset (RST)
  /close-mid         send the head and half the body, then close (FIN)
  /close-early       close without answering
  /early-413         answer 413 before reading the request body, then close
  /hints             a 103 Early Hints, then the 200
  /big-head?n=N      a 200 with an X-Big header of N bytes (and X-Seen-Test-Len:
                     the length of the request's X-Test)
  /bad?kind=K        a broken response: cl-te (both framings), status (a
                     four-digit status), huge-head (a 100 KB header)
  /close-after       a complete 200 (keep-alive by default), then close
  /eof-body?n=N      an HTTP/1.1 200 with neither Content-Length nor chunked:
                     N bytes (known pattern), then close (the body ends there)
  /stall-mid?ms=N    send the head and half the body, wait N ms, send the rest
  /ws                answer 101 to an upgrade and echo every byte after it
  /chunked?n=N       a chunked response of N bytes (known pattern)
  /hits?p=PATH       how many requests for PATH this server saw
  /grpc.Echo/*       a gRPC-like answer: 200 application/grpc, the request's
                     body echoed in chunks, then trailers grpc-status: 0 and
                     grpc-message: echoed (X-Seen-TE: the request's TE)
  anything else      200 "upstream.py <path>" (x-seen-attempt: the request's
                     x-envoy-attempt-count)

On any path, after the body is read: ?fail=CODE answers CODE instead, and
?sleep=MS waits first; with &on=ADDR both apply only on the server bound to
ADDR (one of a cluster's hosts fails, the other does not).
"""
import hashlib
import socket
import socketserver
import struct
import sys
import threading
import time

hits = {}
hits_lock = threading.Lock()


def read_head(f):
    line = f.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    hdrs = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, v = h.decode("latin-1").split(":", 1)
        hdrs[k.strip().lower()] = v.strip()
    return method, target, hdrs


def body_iter(f, hdrs):
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return
            left = size
            while left:
                d = f.read(min(left, 65536))
                if not d:
                    return
                left -= len(d)
                yield d
            f.readline()
    else:
        left = int(hdrs.get("content-length", "0"))
        while left:
            d = f.read(min(left, 65536))
            if not d:
                return
            left -= len(d)
            yield d


class H(socketserver.StreamRequestHandler):
    def send(self, status, body, extra=""):
        self.wfile.write(
            ("HTTP/1.1 %s\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n%s\r\n"
             % (status, len(body), extra)).encode() + body)
        self.wfile.flush()

    def handle(self):
        while True:
            r = read_head(self.rfile)
            if r is None:
                return
            method, target, hdrs = r
            path, _, q = target.partition("?")
            args = dict(p.split("=", 1) for p in q.split("&") if "=" in p)
            with hits_lock:
                hits[path] = hits.get(path, 0) + 1
            mine = args.get("on", self.server.server_address[0]) == self.server.server_address[0]
            if path == "/hits":
                with hits_lock:
                    n = hits.get(args.get("p", ""), 0)
                self.send("200 OK", ("%d\n" % n).encode())
                continue
            if mine and "fail" in args:
                for _ in body_iter(self.rfile, hdrs):
                    pass
                if "sleep" in args:
                    time.sleep(int(args["sleep"]) / 1000.0)
                self.send("%s Failing" % args["fail"], ("failed by %s\n" %
                          self.server.server_address[0]).encode())
                continue
            if path == "/early-413":
                self.send("413 Payload Too Large", b"too large\n", "Connection: close\r\n")
                time.sleep(0.2)
                self.connection.close()
                return
            if path.startswith("/grpc.Echo/"):
                msg = b"".join(body_iter(self.rfile, hdrs))
                self.wfile.write(
                    ("HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\n"
                     "X-Seen-TE: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
                     % hdrs.get("te", "-")).encode())
                if msg:
                    self.wfile.write(b"%x\r\n" % len(msg) + msg + b"\r\n")
                self.wfile.write(b"0\r\ngrpc-status: 0\r\ngrpc-message: echoed\r\n\r\n")
                self.wfile.flush()
                continue
            if path == "/upload":
                h = hashlib.sha256()
                n = 0
                for d in body_iter(self.rfile, hdrs):
                    h.update(d)
                    n += len(d)
                self.send("200 OK", ("%s %d\n" % (h.hexdigest(), n)).encode())
                continue
            for _ in body_iter(self.rfile, hdrs):
                pass
            if "sleep" in args and mine:
                time.sleep(int(args["sleep"]) / 1000.0)
            if path == "/slow":
                time.sleep(int(args.get("ms", "3000")) / 1000.0)
                self.send("200 OK", b"slow\n")
            elif path in ("/reset-mid", "/close-mid"):
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 50000)
                self.wfile.flush()
                time.sleep(0.2)
                if path == "/reset-mid":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                self.connection.close()
                return
            elif path == "/stall-mid":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 50000)
                self.wfile.flush()
                time.sleep(int(args.get("ms", "1500")) / 1000.0)
                try:
                    self.wfile.write(b"x" * 50000)
                    self.wfile.flush()
                except OSError:
                    return
            elif path == "/close-early":
                self.connection.close()
                return
            elif path == "/bad":
                k = args.get("kind", "")
                if k == "cl-te":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                                     b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                elif k == "status":
                    self.wfile.write(b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok")
                elif k == "204-cl":
                    self.wfile.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello")
                elif k == "204-te":
                    self.wfile.write(b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n")
                elif k == "huge-head":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100000 +
                                     b"\r\nContent-Length: 2\r\n\r\nok")
                self.wfile.flush()
                time.sleep(0.2)
                self.connection.close()
                return
            elif path == "/big-head":
                self.send("200 OK", b"big head\n", "X-Big: %s\r\nX-Seen-Test-Len: %d\r\n" % (
                    "h" * int(args.get("n", "30000")), len(hdrs.get("x-test", ""))))
            elif path == "/no-content":
                self.wfile.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                self.wfile.flush()
            elif path == "/hints":
                self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
                self.wfile.flush()
                time.sleep(0.05)
                self.send("200 OK", b"after hints\n")
            elif path == "/close-after":
                self.send("200 OK", b"closing after\n")
                self.connection.close()
                return
            elif path == "/eof-body":
                n = int(args.get("n", "100000"))
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
                self.wfile.write(bytes(i % 251 for i in range(n)))
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_WR)
                return
            elif path == "/ws":
                self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                 b"Connection: Upgrade\r\n\r\n")
                self.wfile.flush()
                while True:
                    d = self.connection.recv(65536)
                    if not d:
                        return
                    self.connection.sendall(d)
            elif path == "/chunked":
                n = int(args.get("n", "100000"))
                self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                sent = 0
                while sent < n:
                    k = min(7000, n - sent)
                    self.wfile.write(b"%x\r\n" % k + bytes((sent + i) % 251 for i in range(k)) + b"\r\n")
                    sent += k
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            else:
                extra = ""
                if "x-envoy-attempt-count" in hdrs:
                    extra = "X-Seen-Attempt: %s\r\n" % hdrs["x-envoy-attempt-count"]
                self.send("200 OK", ("upstream.py %s\n" % path).encode(), extra)


class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = S((sys.argv[1], int(sys.argv[2])), H)
    print("ready", flush=True)
    srv.serve_forever()
