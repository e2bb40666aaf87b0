#!/usr/bin/env python3
"""HTTP/2 attacks from a raw-frame client (standard library only), for
e2e_h2_attacks.sh: each opens its own h2c connection with prior knowledge,
sends frames no well-behaved client would, and prints one line

    <attack> goaway=<code or -> rst=<RST_STREAMs received> closed=<0|1>
             sent=<frames sent> status=<:status of the stream if any>

so that the shell script checks what Arion did. Usage:

    h2_attack.py HOST PORT ATTACK [ARG]

ATTACK is one of rapid_reset, continuation_small, continuation_big,
settings_flood, ping_flood, empty_data, priority_flood, window_update_flood,
hpack_bomb, zero_window (ARG: the path of a large response).
"""
import socket
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, \
    WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(ftype, flags, sid, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xFFFF, ftype, flags, sid) + payload


def hpack_str(s):
    b = s.encode() if isinstance(s, str) else s
    return hpack_int(len(b), 7, 0) + b


def hpack_int(v, prefix, first):
    m = (1 << prefix) - 1
    if v < m:
        return bytes([first | v])
    out = [first | m]
    v -= m
    while v >= 128:
        out.append((v & 127) | 128)
        v >>= 7
    out.append(v)
    return bytes(out)


def request_block(path="/", extra=b""):
    # GET (static 2), scheme http (static 6), :path literal (name 4),
    # :authority literal (name 1), all without indexing
    return (b"\x82\x86" + b"\x04" + hpack_str(path) + b"\x01" + hpack_str("a.test")
            + extra)


class Conn:
    def __init__(self, host, port, rcvbuf=0, window=None):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(5)
        self.s.connect((host, port))
        self.buf = b""
        self.goaway = None
        self.rst = 0
        self.closed = False
        self.status = {}
        self.data = {}
        self.sent = 0
        settings = b""
        if window is not None:
            settings = struct.pack(">HI", 4, window)  # INITIAL_WINDOW_SIZE
        self.send(PREFACE + frame(SETTINGS, 0, 0, settings))

    def send(self, b):
        try:
            self.s.sendall(b)
            return True
        except OSError:
            self.closed = True
            return False

    def frames(self, ftype, flags, sid, payload, n):
        f = frame(ftype, flags, sid, payload)
        for _ in range(n):
            if not self.send(f):
                return
            self.sent += 1

    def read(self, seconds):
        """Read and note frames for up to @seconds, or until closed."""
        end = time.time() + seconds
        while not self.closed and time.time() < end:
            self.s.settimeout(max(0.05, end - time.time()))
            try:
                b = self.s.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                self.closed = True
                break
            if not b:
                self.closed = True
                break
            self.buf += b
            self.parse()

    def parse(self):
        while len(self.buf) >= 9:
            n = (self.buf[0] << 16) | (self.buf[1] << 8) | self.buf[2]
            if len(self.buf) < 9 + n:
                return
            t, fl = self.buf[3], self.buf[4]
            sid = struct.unpack(">I", self.buf[5:9])[0] & 0x7FFFFFFF
            p = self.buf[9:9 + n]
            self.buf = self.buf[9 + n:]
            if t == GOAWAY:
                self.goaway = struct.unpack(">I", p[4:8])[0]
            elif t == RST_STREAM:
                self.rst += 1
            elif t == SETTINGS and not fl & 1:
                self.send(frame(SETTINGS, 1, 0))
            elif t == HEADERS and p[:1] == b"\x88":
                self.status[sid] = 200  # indexed :status 200
            elif t == HEADERS and sid not in self.status:
                self.status[sid] = -1
            elif t == DATA:
                self.data[sid] = self.data.get(sid, 0) + n

    def report(self, name, sid=1):
        g = "-" if self.goaway is None else str(self.goaway)
        st = self.status.get(sid, 0)
        print(f"{name} goaway={g} rst={self.rst} closed={int(self.closed)} "
              f"sent={self.sent} status={st} data={self.data.get(sid, 0)}", flush=True)


def main():
    host, port, attack = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else "/"
    if attack in ("settings_flood", "ping_flood"):
        # a client that does not read: Arion's ACKs queue up
        c = Conn(host, port, rcvbuf=4096)
        c.s.setblocking(False)
        f = (frame(SETTINGS, 0, 0) if attack == "settings_flood"
             else frame(PING, 0, 0, b"01234567"))
        end = time.time() + 20
        pending = b""
        while time.time() < end and not c.closed:
            if not pending:
                pending = f * 64
            try:
                k = c.s.send(pending)
                pending = pending[k:]
                c.sent += k // len(f)
            except BlockingIOError:
                time.sleep(0.01)  # Arion stopped reading us
            except OSError:
                c.closed = True
        c.s.setblocking(True)
        c.read(3)
        c.report(attack, 0)
        return
    c = Conn(host, port, window=0 if attack == "zero_window" else None)
    c.read(0.2)
    if attack == "rapid_reset":
        sid = 1
        for _ in range(2000):
            if not c.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block(arg))
                          + frame(RST_STREAM, 0, sid, struct.pack(">I", 8))):
                break
            c.sent += 1
            sid += 2
        c.read(3)
    elif attack == "continuation_small":
        c.send(frame(HEADERS, 0, 1, request_block(arg)))
        c.frames(CONTINUATION, 0, 1, b"", 10000)
        c.read(3)
    elif attack == "continuation_big":
        # one field whose value never ends, 16 KiB at a time
        c.send(frame(HEADERS, 0, 1, request_block(arg, b"\x00\x01x" + hpack_int(60000, 7, 0))))
        c.frames(CONTINUATION, 0, 1, b"v" * 16384, 100)
        c.read(3)
    elif attack == "empty_data":
        # the request and its flood in one write: frame by frame, the
        # upstream's answer could end the stream (RST_STREAM NO_ERROR)
        # before the flood reached Arion, and frames for a closed stream
        # are not the open stream's flood; which came first was timing
        if c.send(frame(HEADERS, END_HEADERS, 1, request_block(arg)) + frame(DATA, 0, 1, b"") * 1000):
            c.sent += 1000
        c.read(3)
    elif attack == "priority_flood":
        c.frames(PRIORITY, 0, 3, struct.pack(">IB", 0, 16), 10000)
        c.read(3)
    elif attack == "window_update_flood":
        c.frames(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1), 10000)
        c.read(3)
    elif attack == "hpack_bomb":
        # a 4000-byte field indexed once, then referenced: tiny on the
        # wire, 4 KB each decoded
        lit = b"\x40" + hpack_str("x-bomb") + hpack_str("b" * 4000)
        refs = bytes([0x80 | 62]) * 100  # dynamic table entry 62
        c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(arg, lit + refs)))
        c.read(2)
        # the connection goes on
        c.send(frame(HEADERS, END_HEADERS | END_STREAM, 3, request_block("/")))
        c.read(2)
        c.report(attack, 3)
        return
    elif attack == "zero_window":
        # every stream's window 0: the response's head comes, no DATA;
        # Arion must end the stream (stream_idle_timeout) and keep nothing
        c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block(arg)))
        c.read(float(sys.argv[5]) if len(sys.argv) > 5 else 4)
    else:
        sys.exit(f"unknown attack {attack}")
    c.report(attack)


if __name__ == "__main__":
    main()
