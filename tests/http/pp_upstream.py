#!/usr/bin/env python3
"""An upstream that requires a PROXY protocol header (v1 or v2) as the
first bytes of every connection, as nginx's `listen ... proxy_protocol`
does, and says what it got (tests/http/e2e_proxy_protocol.sh).

pp_upstream.py ADDR PORT [TLS_PORT CERT KEY]

After the header: an HTTP/1.1 request is answered (keep-alive) with the
body "<hdr> src=<a:p> dst=<a:p> conn=<n> tls=<0|1> path=<path>\\n"; any
other first byte gets that line (path "-") and the connection closes
(tcp_proxy). <hdr> is v1, v2, v1-unknown or v2-local. A connection whose
first bytes are no header is closed, and counted in the line
"noheader <n>" of the log. Each request's line is also printed (the
log: $TOPO_DIR/<name>.log). On TLS_PORT the header comes first, then
the TLS handshake (the header wraps the ClientHello).
"""
import socket
import socketserver
import ssl
import struct
import sys
import threading

SIG2 = b"\r\n\r\n\x00\r\nQUIT\n"
conn_ids = iter(range(1, 1 << 30))
lock = threading.Lock()


def read_exact(s, n):
    b = b""
    while len(b) < n:
        r = s.recv(n - len(b))
        if not r:
            raise EOFError
        b += r
    return b


def read_header(s):
    """The PROXY header, byte by byte (nothing after it is read)."""
    first = read_exact(s, 1)
    if first == b"P":
        line = first
        while not line.endswith(b"\r\n"):
            line += read_exact(s, 1)
            if len(line) > 107:
                raise ValueError("v1 too long")
        f = line[:-2].decode().split(" ")
        if f[0] != "PROXY":
            raise ValueError("not PROXY")
        if f[1] == "UNKNOWN":
            return "v1-unknown", "-", "-"
        return "v1", "%s:%s" % (f[2], f[4]), "%s:%s" % (f[3], f[5])
    if first == b"\r":
        rest = read_exact(s, 15)
        hdr = first + rest
        if hdr[:12] != SIG2:
            raise ValueError("bad v2 signature")
        vc, fam, ln = hdr[12], hdr[13], struct.unpack("!H", hdr[14:16])[0]
        body = read_exact(s, ln) if ln else b""
        if vc == 0x20:
            return "v2-local", "-", "-"
        if vc != 0x21 or fam != 0x11 or ln < 12:
            raise ValueError("v2 %02x %02x %d" % (vc, fam, ln))
        src, dst = socket.inet_ntoa(body[0:4]), socket.inet_ntoa(body[4:8])
        sp, dp = struct.unpack("!HH", body[8:12])
        return "v2", "%s:%d" % (src, sp), "%s:%d" % (dst, dp)
    raise ValueError("no header")


class Handler(socketserver.BaseRequestHandler):
    tls_ctx = None

    def handle(self):
        s = self.request
        s.settimeout(10)
        try:
            kind, src, dst = read_header(s)
        except (ValueError, EOFError, OSError) as e:
            print("noheader %s" % e, flush=True)
            return
        tls = 0
        if self.tls_ctx:
            s = self.tls_ctx.wrap_socket(s, server_side=True)
            tls = 1
        with lock:
            cid = next(conn_ids)
        buf = b""
        while True:
            try:
                while b"\r\n\r\n" not in buf:
                    r = s.recv(65536)
                    if not r:
                        if buf:
                            line = "%s src=%s dst=%s conn=%d tls=%d path=-\n" % (
                                kind, src, dst, cid, tls)
                            print(line, end="", flush=True)
                            s.sendall(line.encode())
                        return
                    buf += r
                    if not buf[:1].isalpha() or (len(buf) >= 4 and buf[:4] not in (
                            b"GET ", b"HEAD", b"POST")):
                        line = "%s src=%s dst=%s conn=%d tls=%d path=-\n" % (
                            kind, src, dst, cid, tls)
                        print(line, end="", flush=True)
                        s.sendall(line.encode())
                        return
            except (OSError, ssl.SSLError):
                return
            head, buf = buf.split(b"\r\n\r\n", 1)
            path = head.split(b"\r\n")[0].split(b" ")[1].decode()
            line = "%s src=%s dst=%s conn=%d tls=%d path=%s\n" % (kind, src, dst, cid, tls, path)
            print(line, end="", flush=True)
            body = line.encode()
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)


class TLSHandler(Handler):
    pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    servers = [Server((addr, port), Handler)]
    if len(sys.argv) > 3:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        TLSHandler.tls_ctx = ctx
        servers.append(Server((addr, int(sys.argv[3])), TLSHandler))
    for srv in servers[1:]:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    print("ready", flush=True)
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
