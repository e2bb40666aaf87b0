"""The benchmarks' one reader of libpcap files (tcpdump -w), for the
tools that read their captures: bench/tcp/loss_pcap.py,
bench/tcp/ack_policy and bench/xds/run's report (bench/pcap_test.py
tests it; scripts/test runs that). Pure Python, no
dependencies (no tshark, no dpkt on a fresh machine).

  ipv4(path)     each IPv4 packet of the file: (time in s, the packet)
  tcp(ip)        an IPv4 packet's TCP segment, or None
  tcp_options(o) the (kind, value) pairs of a TCP header's options

The file: either byte order, micro- or nanosecond timestamps; link types
Ethernet (1, with or without one 802.1Q tag) and Linux cooked capture
(113, tcpdump -i any). A packet cut short by the snap length is given as
captured: tcp() reports the payload length the IPv4 header says and the
payload bytes that were captured, which may be fewer.
"""
import struct
from collections import namedtuple

# src/dst: the IPv4 addresses, 4 bytes each; flags: the TCP header's
# 13th byte (FIN 0x01 ... CWR 0x80); hlen: the TCP header's length;
# plen: the payload's length by the IPv4 header; opts: the options'
# bytes; payload: the payload's captured bytes
Seg = namedtuple("Seg", "src dst sport dport seq ack flags win hlen plen opts payload")

_MAGIC = {
    0xA1B2C3D4: ("<", 1e-6),
    0xD4C3B2A1: (">", 1e-6),
    0xA1B23C4D: ("<", 1e-9),
    0x4D3CB2A1: (">", 1e-9),
}


def ipv4(path):
    """Yield (time, ip) for each IPv4 packet of libpcap file @p path, ip
    the bytes from the IPv4 header on (as captured)."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        if magic not in _MAGIC:
            raise ValueError(f"{path}: not a libpcap file (magic {magic:#010x})")
        order, scale = _MAGIC[magic]
        link = struct.unpack(order + "I", head[20:24])[0]
        if link not in (1, 113):
            raise ValueError(f"{path}: link type {link}: only Ethernet (1) and Linux cooked (113)")
        rec = struct.Struct(order + "IIII")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, _ = rec.unpack(h)
            d = f.read(incl)
            if link == 1:
                off, et = 14, d[12:14]
                if et == b"\x81\x00":
                    off, et = 18, d[16:18]
            else:
                off, et = 16, d[14:16]
            if et != b"\x08\x00" or len(d) < off + 20 or d[off] >> 4 != 4:
                continue
            yield sec + frac * scale, d[off:]


def tcp(ip):
    """@p ip's TCP segment as a Seg, or None (not TCP, or its fixed header
    not captured)."""
    if ip[9] != 6:
        return None
    ihl = (ip[0] & 15) * 4
    t = ip[ihl:]
    if len(t) < 20:
        return None
    total = struct.unpack(">H", ip[2:4])[0]
    sport, dport, seq, ack, off, flags, win = struct.unpack(">HHIIBBH", t[:16])
    hlen = (off >> 4) * 4
    return Seg(bytes(ip[12:16]), bytes(ip[16:20]), sport, dport, seq, ack, flags, win, hlen,
               total - ihl - hlen, t[20:hlen], t[hlen:])


def tcp_options(opts):
    """Yield (kind, value) for each option in @p opts (a TCP header's
    option bytes), value the bytes after the kind and length; stops at
    End of Option List or at an option whose length is malformed or
    past the bytes captured."""
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2 or i + opts[i + 1] > len(opts):
            return
        yield kind, opts[i + 2:i + opts[i + 1]]
        i += opts[i + 1]
