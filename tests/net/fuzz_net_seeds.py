#!/usr/bin/env python3
"""Write the seed corpus of fuzz_net_input (tests/net/fuzz_net_input.c).

    tests/net/fuzz_net_seeds.py [DIR]    (default: tests/net/corpus/fuzz_net_input)

An input is a list of records [flags][length, 2 bytes big-endian][bytes];
see the top of fuzz_net_input.c. The single-frame seeds are the ones the
fuzzer had before it drove the real TCP stack; the TCP seeds are whole
conversations with the listeners (7 echo, 80 request/response, 81 a sink
that never reads), written with flags bit 3 so that the harness fixes the
headers and makes the ACK numbers relative to what Arion sent: an ACK
field of 0 acknowledges everything the flow was sent so far.
"""
import os
import struct
import sys

OUR_MAC = bytes.fromhex("aa0200000000")  # replaced by the port's MAC
PEER_MAC = bytes.fromhex("020000000001")
BCAST = b"\xff" * 6

FIX_TCP = 8
SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10


def record(flags, body):
    return struct.pack(">BH", flags, len(body)) + body


def cksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip4(src, dst, proto, payload, ihl=5, frag=0, ttl=64):
    opts = b"\x01" * (4 * (ihl - 5))
    h = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(opts) + len(payload), 1,
                    frag, ttl, proto, 0, bytes(src), bytes(dst)) + opts
    h = h[:10] + struct.pack(">H", cksum(h)) + h[12:]
    return h + payload


def eth(dst, etype, payload):
    frame = dst + PEER_MAC + struct.pack(">H", etype) + payload
    return frame + b"\0" * max(0, 60 - len(frame))


def tcp_opts(mss=None, ws=None, sack_ok=False, ts=None):
    o = b""
    if mss is not None:
        o += struct.pack(">BBH", 2, 4, mss)
    if sack_ok:
        o += b"\x04\x02"
    if ts is not None:
        o += struct.pack(">BBII", 8, 10, ts[0], ts[1])
    if ws is not None:
        o += b"\x01" + struct.pack(">BBB", 3, 3, ws)
    while len(o) % 4:
        o += b"\x01"
    return o


def seg(sport, dport, flags, seq, ack=0, wnd=65535, opts=b"", data=b""):
    """A TCP segment for FIX_TCP: the harness writes the IPv4 header and
    both checksums; ack is relative to what the flow was sent."""
    th = struct.pack(">HHIIBBHHH", sport, dport, seq, ack & 0xFFFFFFFF,
                     (5 + len(opts) // 4) << 4, flags, wnd, 0, 0) + opts
    return OUR_MAC + PEER_MAC + b"\x08\x00" + b"\0" * 20 + th + data


def tcp(*a, q=0, **k):
    """A segment from the peer on RX queue q, as a FIX_TCP record."""
    return record(FIX_TCP | q, seg(*a, **k))


US = [198, 18, 0, 2]
PEER = [198, 18, 0, 1]


def legacy():
    """The single-frame seeds of the earlier format, one record each."""
    arp = lambda op, dst, sip, tip: eth(dst, 0x0806, struct.pack(
        ">HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, PEER_MAC, bytes(sip), b"\0" * 6, bytes(tip)))
    icmp_echo = lambda n: (lambda b: b[:2] + struct.pack(">H", cksum(b)) + b[4:])(
        struct.pack(">BBHHH", 8, 0, 0, 0x1234, 1) + bytes(range(n)))
    syn = struct.pack(">HHIIBBHHH", 40000, 80, 1, 0, 0x50, SYN, 65535, 0, 0)
    quoted = ip4(US, [203, 0, 113, 9], 6, struct.pack(">HHI", 80, 40000, 1))
    frag_needed = (lambda b: b[:2] + struct.pack(">H", cksum(b)) + b[4:])(
        struct.pack(">BBHHH", 3, 4, 0, 0, 1400) + quoted)
    return {
        "arp_request": record(0, arp(1, BCAST, PEER, US)),
        "arp_reply_gw": record(1, arp(2, OUR_MAC, [198, 18, 0, 254], US)),
        "echo": record(0, eth(OUR_MAC, 0x0800, ip4(PEER, US, 1, icmp_echo(56)))),
        "echo_q1": record(1, eth(OUR_MAC, 0x0800, ip4(PEER, US, 1, icmp_echo(8)))),
        "fragment": record(0, eth(OUR_MAC, 0x0800, ip4(PEER, US, 1, icmp_echo(24),
                                                      frag=0x2000))),
        "icmp_frag_needed": record(0, eth(OUR_MAC, 0x0800, ip4([203, 0, 113, 1], US, 1,
                                                              frag_needed))),
        "options": record(0, eth(OUR_MAC, 0x0800, ip4(PEER, US, 1, icmp_echo(8), ihl=6))),
        "tcp_syn": record(0, eth(OUR_MAC, 0x0800, ip4(PEER, US, 6, syn))),
        "tcp_syn_q1": record(1, eth(OUR_MAC, 0x0800, ip4(PEER, US, 6, syn))),
        "udp": record(2, eth(BCAST, 0x0800, ip4(PEER, US, 17, b"\0" * 8))),
        "output_on_link": record(4 | (6 << 3), bytes([1]) + syn),
        "output_unresolved": record(0xFD, bytes([0x4D]) + b"x" * 38),
    }


def conversations():
    s = {}
    o = tcp_opts(mss=1460, ws=7, sack_ok=True)
    # Echo (port 7): handshake, data echoed back, both FINs.
    s["tcp_echo"] = b"".join([
        tcp(40000, 7, SYN, 1000, opts=o),
        tcp(40000, 7, ACK, 1001),
        tcp(40000, 7, ACK | PSH, 1001, data=b"hello, echo\n"),
        tcp(40000, 7, ACK, 1013),
        tcp(40000, 7, ACK | FIN, 1013),
        tcp(40000, 7, ACK, 1014),
    ])
    # Request/response (port 80), pipelined on a keep-alive connection,
    # then one with Connection: close, arriving on the other queue.
    req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    close = b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    s["tcp_http"] = b"".join([
        tcp(40001, 80, SYN, 5000, opts=o),
        tcp(40001, 80, ACK, 5001),
        tcp(40001, 80, ACK | PSH, 5001, data=req),
        tcp(40001, 80, ACK, 5001 + len(req)),
        tcp(40001, 80, ACK | PSH, 5001 + len(req), q=1, data=close),
        tcp(40001, 80, ACK, 5001 + len(req) + len(close), q=1),
        tcp(40001, 80, ACK | FIN, 5001 + len(req) + len(close)),
        tcp(40001, 80, ACK, 5002 + len(req) + len(close)),
    ])
    # Timestamps (RFC 7323) on every segment.
    t = lambda v: tcp_opts(ts=(v, 0))
    s["tcp_timestamps"] = b"".join([
        tcp(40002, 7, SYN, 9000, opts=tcp_opts(mss=1400, ws=2, sack_ok=True, ts=(50, 0))),
        tcp(40002, 7, ACK, 9001, opts=t(51)),
        tcp(40002, 7, ACK | PSH, 9001, opts=t(52), data=b"x" * 100),
        tcp(40002, 7, ACK, 9101, opts=t(53)),
        tcp(40002, 7, ACK | RST, 9101, opts=t(54)),
    ])
    # A reader that never reads (port 81): the 4 KiB window fills and
    # closes; out-of-order data and a SACK-carrying ACK; then RST.
    sack = struct.pack(">BBBBII", 1, 1, 5, 10, 0, 0)
    s["tcp_sink_window"] = b"".join([
        tcp(40003, 81, SYN, 100, opts=o),
        tcp(40003, 81, ACK, 101),
        tcp(40003, 81, ACK, 101, data=b"a" * 1400),
        tcp(40003, 81, ACK, 2901, data=b"c" * 1400),  # a hole at 1501..2900
        tcp(40003, 81, ACK, 1501, data=b"b" * 1400),
        tcp(40003, 81, ACK, 4301, data=b"d" * 1400),  # beyond the window
        tcp(40003, 81, ACK, 4301, opts=sack),
        tcp(40003, 81, RST, 101 + 4096),  # exactly at RCV.NXT: accepted
    ])
    # More SYNs than the backlog (4 per worker): SYN cookies, then an ACK
    # for the last.
    s["tcp_syn_cookies"] = b"".join(
        [tcp(41000 + i, 80, SYN, 7000 + i, opts=o, q=i & 1) for i in range(12)] +
        [tcp(41011, 80, ACK, 7012, q=1),
         tcp(41011, 80, ACK | PSH, 7012, q=1, data=req)])
    # Trouble: a duplicate SYN, data with the handshake's ACK, a RST inside
    # the window but not at RCV.NXT (challenge ACK, RFC 5961), one far
    # outside it (ignored), then a good one; a SYN to a closed port.
    s["tcp_odd"] = b"".join([
        tcp(40004, 7, SYN, 300),
        tcp(40004, 7, SYN, 300),
        tcp(40004, 7, ACK | PSH, 301, data=b"early"),
        tcp(40004, 7, RST, 320),
        tcp(40004, 7, RST, 99999),
        tcp(40004, 7, ACK, 306),
        tcp(40004, 7, RST | ACK, 306),
        tcp(40005, 9, SYN, 1),  # a closed port: RST
    ])
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "fuzz_net_input")
    os.makedirs(out, exist_ok=True)
    for name, data in {**legacy(), **conversations()}.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
