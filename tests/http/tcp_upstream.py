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
  tlsecho echo over TLS with certificate ARG (ARG.key its key): after the
          client's close_notify, what is left, then close_notify and FIN
          (openssl s_server cannot echo at volume)
  resp    a Redis-like request/response server (RESP2, what redis-server
          answers for PING, ECHO, SET, GET, DEL, INCR, DBSIZE, QUIT, and an
          error for anything else), pipelined commands answered in order;
          one keyspace shared by its connections; after the client's FIN,
          the answers to what came before it, then FIN

tls_transfer() is the client side of a TLS transfer both ways at once, with
the half-close a TLS peer has: close_notify and FIN after its last byte,
while it goes on reading.

Prints "ready" once listening. One thread per connection.
"""
import hashlib
import select
import socket
import ssl
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


def tlsecho(c, ctx):
    t = ctx.wrap_socket(c, server_side=True)
    while True:
        try:
            b = t.recv(65536)
        except ssl.SSLZeroReturnError:
            b = b""
        if not b:
            break
        t.sendall(b)
    t.unwrap()  # close_notify (the client's came already)
    c.shutdown(socket.SHUT_WR)


class RespError(Exception):
    pass


def resp_read(buf, i):
    """One RESP2 command (an array of bulk strings) from buf[i:]; returns
    (list of bytes, next index) or (None, i) when buf ends before it."""
    if i >= len(buf):
        return None, i
    if buf[i:i + 1] != b"*":
        raise RespError("expected an array")
    e = buf.find(b"\r\n", i)
    if e < 0:
        return None, i
    n, j, args = int(buf[i + 1:e]), e + 2, []
    for _ in range(n):
        e = buf.find(b"\r\n", j)
        if e < 0:
            return None, i
        if buf[j:j + 1] != b"$":
            raise RespError("expected a bulk string")
        ln = int(buf[j + 1:e])
        if len(buf) < e + 2 + ln + 2:
            return None, i
        args.append(bytes(buf[e + 2:e + 2 + ln]))
        j = e + 2 + ln + 2
    return args, j


RESP_DB = {}
RESP_LOCK = threading.Lock()


def resp_bulk(v):
    return b"$-1\r\n" if v is None else b"$%d\r\n%s\r\n" % (len(v), v)


def resp_answer(args):
    """The reply to one command, and whether the connection ends after it."""
    cmd = args[0].upper() if args else b""
    with RESP_LOCK:
        if cmd == b"PING":
            return (resp_bulk(args[1]) if len(args) > 1 else b"+PONG\r\n"), False
        if cmd == b"ECHO" and len(args) == 2:
            return resp_bulk(args[1]), False
        if cmd == b"SET" and len(args) == 3:
            RESP_DB[args[1]] = args[2]
            return b"+OK\r\n", False
        if cmd == b"GET" and len(args) == 2:
            return resp_bulk(RESP_DB.get(args[1])), False
        if cmd == b"DEL" and len(args) >= 2:
            return b":%d\r\n" % sum(RESP_DB.pop(k, None) is not None for k in args[1:]), False
        if cmd == b"INCR" and len(args) == 2:
            v = int(RESP_DB.get(args[1], b"0")) + 1
            RESP_DB[args[1]] = str(v).encode()
            return b":%d\r\n" % v, False
        if cmd == b"DBSIZE":
            return b":%d\r\n" % len(RESP_DB), False
        if cmd == b"QUIT":
            return b"+OK\r\n", True
    return b"-ERR unknown command '%s'\r\n" % cmd.lower(), False


def resp(c):
    buf, i = bytearray(), 0
    while True:
        b = c.recv(1 << 18)
        if not b:
            break
        buf += b
        out = []
        while True:
            try:
                args, i = resp_read(buf, i)
            except (RespError, ValueError):
                c.sendall(b"".join(out) + b"-ERR Protocol error\r\n")
                return
            if args is None:
                break
            a, quit_ = resp_answer(args)
            out.append(a)
            if quit_:
                c.sendall(b"".join(out))
                c.shutdown(socket.SHUT_WR)
                return
        if out:
            c.sendall(b"".join(out))
        del buf[:i]
        i = 0
    c.shutdown(socket.SHUT_WR)


def tls_transfer(addr, port, sni, cafile, mib, wait=0.0):
    """Send mib MiB of the pattern over TLS to (addr, port) while reading,
    then close_notify and FIN, wait seconds without reading, and read to
    the peer's end. Returns (bytes read, their sha256, whether the peer
    ended with close_notify, the first 200 bytes read)."""
    ctx = ssl.create_default_context(cafile=cafile)
    # a FIN without close_notify must read as a truncation, not as the end
    # (Debian's Python turns this on by default)
    ctx.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    o = ctx.wrap_bio(inc, out, server_hostname=sni)
    s = socket.create_connection((addr, port), timeout=30)
    s.setblocking(False)
    chunk = pattern(1 << 20)
    h, got, sent, wbuf, head = hashlib.sha256(), 0, 0, b"", b""
    shaken = closed = notify = eof = False
    while not eof:
        if not shaken:
            try:
                o.do_handshake()
                shaken = True
            except ssl.SSLWantReadError:
                pass
        if shaken and not closed and len(wbuf) < (1 << 18):
            if sent < mib << 20:
                n = min(1 << 16, (mib << 20) - sent)
                off = sent % len(chunk)
                o.write(chunk[off:off + n])
                sent += n
            else:
                try:
                    o.unwrap()  # our close_notify; reading goes on
                except ssl.SSLWantReadError:
                    pass
                closed = True
        wbuf += out.read()
        if wait and closed == "fin":
            time.sleep(wait)  # all sent: a reader that does not read yet
            wait = 0
        r, w, _ = select.select([s], [s] if wbuf else [], [], 30)
        if not r and not w:
            raise TimeoutError("tls_transfer stalled")
        if w:
            try:
                wbuf = wbuf[s.send(wbuf):]
            except BlockingIOError:
                pass
            if closed is True and not wbuf:
                s.shutdown(socket.SHUT_WR)  # FIN after our close_notify
                closed = "fin"
        if r:
            b = s.recv(1 << 18)
            if b:
                inc.write(b)
            else:
                inc.write_eof()
            while shaken:
                try:
                    d = o.read(1 << 18)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    notify = eof = True
                    break
                except ssl.SSLEOFError:
                    eof = True
                    break
                if not d:
                    notify = eof = True
                    break
                h.update(d)
                got += len(d)
                if len(head) < 200:
                    head += d[:200 - len(head)]
            if not b and not eof:
                eof = True
    s.close()
    return got, h.hexdigest(), notify, head


def serve(c, mode, arg):
    try:
        if mode == "echo":
            echo(c)
        elif mode == "tlsecho":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(arg, arg + ".key")
            tlsecho(c, ctx)
        elif mode == "resp":
            resp(c)
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
