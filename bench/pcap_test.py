#!/usr/bin/env python3
"""bench/pcap.py against captures written here, byte by byte: both byte
orders, micro- and nanosecond stamps, Ethernet with and without an
802.1Q tag, Linux cooked capture, IPv6 and ARP frames passed over, a
segment cut by the snap length, TCP options (SACK, window scale, a
malformed length). Run by scripts/test with the benchmark smoke.
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcap  # noqa: E402 (bench/pcap.py)


def ipv4_tcp(sport, dport, seq, ack, flags, opts=b"", payload=b""):
    opts += b"\x00" * (-len(opts) % 4)
    hlen = 20 + len(opts)
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, ack, (hlen // 4) << 4, flags, 512, 0, 0)
    total = 20 + hlen + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 1, 0, 64, 6, 0, bytes([198, 18, 0, 1]),
                     bytes([198, 18, 0, 2]))
    return ip + tcp + opts + payload


def write(path, order, nano, link, frames, snap=65535):
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snap, link))
        for sec, frac, data in frames:
            cut = data[:snap]
            f.write(struct.pack(order + "IIII", sec, frac, len(cut), len(data)))
            f.write(cut)


def eth(payload, ethertype=0x0800, vlan=None):
    h = b"\x02" * 6 + b"\x04" * 6
    if vlan is not None:
        h += struct.pack(">HH", 0x8100, vlan)
    return h + struct.pack(">H", ethertype) + payload


def sll(payload, proto=0x0800):
    return struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 8, proto) + payload


def main():
    sack = bytes([5, 18]) + struct.pack(">IIII", 1000, 2448, 3000, 4448)
    wscale = bytes([1, 3, 3, 7])
    seg1 = ipv4_tcp(7, 40000, 100, 200, 0x12, wscale)
    seg2 = ipv4_tcp(40000, 7, 200, 101, 0x10, sack, b"hello")
    seg3 = ipv4_tcp(7, 40000, 101, 205, 0x18, b"", b"x" * 1448)
    bad = ipv4_tcp(7, 40000, 1, 2, 0x10, bytes([8, 1, 0, 0]))  # length 1: malformed
    ipv6 = b"\x60" + b"\x00" * 39
    arp = b"\x00\x01\x08\x00\x06\x04\x00\x01" + b"\x00" * 20
    frames = [(1, 500000, eth(seg1)), (1, 600000, eth(ipv6, 0x86DD)), (1, 700000, eth(arp, 0x0806)),
              (2, 5, eth(seg2, vlan=7)), (3, 0, eth(seg3)), (4, 0, eth(bad))]
    fails = 0

    def check(what, got, want):
        nonlocal fails
        if got != want:
            print(f"FAIL {what}: {got!r} != {want!r}")
            fails += 1

    with tempfile.TemporaryDirectory() as d:
        for order, nano in (("<", False), (">", False), ("<", True), (">", True)):
            p = os.path.join(d, "eth.pcap")
            scale = 1e-9 if nano else 1e-6
            write(p, order, nano, 1, frames, snap=96)
            got = list(pcap.ipv4(p))
            tag = f"{order} {'ns' if nano else 'us'}"
            check(f"{tag}: IPv4 packets (IPv6, ARP passed over)", len(got), 4)
            check(f"{tag}: time", got[0][0], 1 + 500000 * scale)
            g = [pcap.tcp(ip) for _, ip in got]
            check(f"{tag}: SYN-ACK", (g[0].sport, g[0].seq, g[0].flags), (7, 100, 0x12))
            check(f"{tag}: window scale", list(pcap.tcp_options(g[0].opts)), [(3, b"\x07")])
            check(f"{tag}: tagged frame", (g[1].sport, g[1].plen, bytes(g[1].payload)),
                  (40000, 5, b"hello"))
            check(f"{tag}: SACK", [(k, v) for k, v in pcap.tcp_options(g[1].opts) if k == 5],
                  [(5, struct.pack(">IIII", 1000, 2448, 3000, 4448))])
            # cut by the 96-byte snap length: the length is the header's,
            # the payload what was captured
            check(f"{tag}: cut segment", (g[2].plen, len(g[2].payload)), (1448, 96 - 14 - 40))
            check(f"{tag}: malformed option", list(pcap.tcp_options(g[3].opts)), [])
            check(f"{tag}: addresses", (g[0].src, g[0].dst),
                  (bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])))
        p = os.path.join(d, "sll.pcap")
        write(p, "<", False, 113, [(5, 0, sll(seg2)), (5, 1, sll(ipv6, 0x86DD))])
        got = [pcap.tcp(ip) for _, ip in pcap.ipv4(p)]
        check("Linux cooked: packets", len(got), 1)
        check("Linux cooked: segment", (got[0].dport, got[0].ack), (7, 101))
        # not TCP: None
        udp = bytearray(seg1)
        udp[9] = 17
        check("UDP", pcap.tcp(bytes(udp)), None)
        p = os.path.join(d, "raw.pcap")
        write(p, "<", False, 101, [])
        try:
            list(pcap.ipv4(p))
            check("link type 101 refused", "accepted", "refused")
        except ValueError:
            pass
        p = os.path.join(d, "junk.pcap")
        with open(p, "wb") as f:
            f.write(b"\x00" * 24)
        try:
            list(pcap.ipv4(p))
            check("not a pcap refused", "accepted", "refused")
        except ValueError:
            pass
    print("ok   bench/pcap.py" if fails == 0 else f"FAIL bench/pcap.py: {fails} checks")
    return 1 if fails else 0


sys.exit(main())
