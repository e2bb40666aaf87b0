#!/usr/bin/python3
"""Send malformed IPv4 frames to Arion from a namespace (python3-scapy).

    malformed.py IFACE DST_MAC SRC_IP DST_IP COUNT

Sends COUNT copies of each kind of bad frame and prints, one per line,
"<counter> <number sent>": the lib/net counter each kind must land in
(tests/net/e2e_malformed.sh compares them with Arion's shutdown log).
"""
import sys

from scapy.all import ICMP, IP, TCP, UDP, Ether, IPOption, Raw, conf, get_if_hwaddr, sendp

conf.verb = 0
iface, dmac, src, dst, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
eth = Ether(dst=dmac, src=get_if_hwaddr(iface), type=0x0800)


def raw_ip(pkt, **patch):
    """The bytes of IP packet @pkt with header fields patched after checksumming."""
    b = bytearray(bytes(pkt))
    for off, val in patch.get("bytes", []):
        b[off] = val
    return bytes(b)


echo = IP(src=src, dst=dst) / ICMP(id=7, seq=1) / Raw(b"x" * 32)
good = bytes(echo)

cases = []
# Truncated: the IPv4 total length says more than the frame carries.
cases.append(("ip4_drop_truncated", eth / Raw(good[:30])))
# Bad length: total length beyond the frame, with a valid checksum.
cases.append(("ip4_drop_truncated", eth / IP(src=src, dst=dst, len=1400) / ICMP() / Raw(b"y" * 10)))
# Bad length: total length shorter than the header.
cases.append(("ip4_drop_hdr_len", eth / IP(src=src, dst=dst, len=12) / ICMP()))
# IHL below 5.
cases.append(("ip4_drop_hdr_len", eth / Raw(raw_ip(echo, bytes=[(0, 0x44)]))))
# Bad header checksum.
cases.append(("ip4_drop_cksum", eth / IP(src=src, dst=dst, chksum=0x1234) / ICMP()))
# Version 6 inside an IPv4 EtherType.
cases.append(("ip4_drop_version", eth / Raw(raw_ip(echo, bytes=[(0, 0x65)]))))
# Options (four NOPs).
cases.append(("ip4_drop_options", eth / IP(src=src, dst=dst, options=[IPOption(b"\x01\x01\x01\x01")]) / ICMP()))
# Fragments: first (MF) and a later one (offset).
cases.append(("ip4_drop_fragment", eth / IP(src=src, dst=dst, flags="MF") / ICMP() / Raw(b"z" * 16)))
cases.append(("ip4_drop_fragment", eth / IP(src=src, dst=dst, frag=100) / Raw(b"z" * 16)))
# TTL 0.
cases.append(("ip4_drop_ttl", eth / IP(src=src, dst=dst, ttl=0) / ICMP()))
# A protocol we do not serve.
cases.append(("ip4_drop_proto", eth / IP(src=src, dst=dst) / UDP(sport=5000, dport=53)))
# Bad ICMP checksum.
cases.append(("icmp_drop_cksum", eth / IP(src=src, dst=dst) / ICMP(chksum=0x1111)))
# ICMP shorter than its 8-byte header.
cases.append(("icmp_drop_truncated", eth / IP(src=src, dst=dst, proto=1) / Raw(b"\x08\x00")))
# TCP shorter than a TCP header.
cases.append(("tcp_drop_truncated", eth / IP(src=src, dst=dst, proto=6) / Raw(b"\x00\x50\x00\x50\x00")))
# Not for us: another address on the subnet.
other = dst.rsplit(".", 1)[0] + ".99"
cases.append(("ip4_drop_not_local", eth / IP(src=src, dst=other) / ICMP()))

want = {}
for counter, frame in cases:
    sendp([frame] * count, iface=iface)
    want[counter] = want.get(counter, 0) + count
for counter, n in sorted(want.items()):
    print(counter, n)
