#!/usr/bin/python3
"""Two attacks on Arion's mbuf pool (issue 12, item 2), run in the client
namespace by e2e_mbuf_attack.sh while a kernel client's echo transfer runs:

  e2e_mbuf_attack.py US PORT IFACE

  A. one connection, its window closed to Arion (so the echo listener
     stalls once its send buffer is full), then 15,000 one-byte segments
     in order: without mbuf accounting each pinned a 2 KB mbuf;
  B. 32 connections x 512 one-byte segments out of order, every other
     byte missing, so nothing can be merged: 16,384 mbufs, twice the pool.

Raw IP packets are built once with scapy and sent through one raw socket
(scapy's own send() is too slow for 30,000 packets). Prints ok/FAIL lines;
exit 1 on failure.
"""
import random
import socket
import struct
import sys
import threading
import time

from scapy.all import IP, TCP, AsyncSniffer, Raw, conf, send  # noqa: E402

conf.verb = 0
US, PORT, IFACE = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fails = 0


def check(cond, msg):
    global fails
    print(("ok   " if cond else "FAIL ") + msg)
    fails += 0 if cond else 1


raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)


def blast(pkts, pace=False):
    """Send; paced, 32 packets per millisecond at most, so that the kernel's
    and af_packet's queues lose none and every segment reaches Arion's TCP
    (a lost one would turn the rest of an in-order attack into
    out-of-order segments)."""
    for i, p in enumerate(pkts):
        raw.sendto(p, (US, 0))
        if pace and i % 32 == 31:
            time.sleep(0.001)


def handshake(sports, wnd_after):
    """SYN, SYN-ACK, ACK (window wnd_after) on every port of sports at once.
    Returns {sport: (our next seq, Arion's next seq)}."""
    isn = {sp: random.randrange(1 << 32) for sp in sports}
    want = set(sports)
    ready = threading.Event()
    sn = AsyncSniffer(iface=IFACE, filter="tcp and src host %s and src port %d" % (US, PORT),
                      lfilter=lambda p: TCP in p and p[TCP].dport in want, store=True,
                      started_callback=ready.set)
    sn.start()
    # the capture socket open before the SYNs go (a fixed sleep was racy)
    if not ready.wait(5):
        raise RuntimeError("the sniffer did not start")
    time.sleep(0.05)
    blast([bytes(IP(dst=US, ttl=99) / TCP(sport=sp, dport=PORT, flags="S", seq=isn[sp],
                                          window=65535,
                                          options=[("MSS", 1460), ("SAckOK", b""), ("WScale", 0)]))
           for sp in sports])
    for _ in range(60):
        if len({p[TCP].dport for p in sn.results or [] if p[TCP].flags == "SA"}) == len(want):
            break
        time.sleep(0.05)
    res = sn.stop() or []
    sa = {p[TCP].dport: p[TCP].seq + 1 for p in res if p[TCP].flags == "SA"}
    if set(sa) != want:
        raise RuntimeError("no SYN-ACK on ports %s" % sorted(want - set(sa)))
    blast([bytes(IP(dst=US, ttl=99) / TCP(sport=sp, dport=PORT, flags="A", seq=isn[sp] + 1,
                                          ack=sa[sp], window=wnd_after)) for sp in sports])
    return {sp: (isn[sp] + 1, sa[sp]) for sp in sports}


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


SRC = None


def seg(sport, seq, ack, data, wnd=0):
    """An IPv4/TCP ACK segment as bytes, built by hand: scapy takes about a
    millisecond per packet, which would stretch attack B over 20 s."""
    global SRC
    if SRC is None:
        SRC = socket.inet_aton(IP(dst=US).src)
    dst = socket.inet_aton(US)
    tcp = struct.pack("!HHIIBBHHH", sport, PORT, seq & 0xffffffff, ack & 0xffffffff, 5 << 4,
                      0x10, wnd, 0, 0) + data
    ck = csum(SRC + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)
    tcp = tcp[:16] + struct.pack("!H", ck) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.randrange(65536), 0x4000,
                     99, 6, 0, SRC, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return ip + tcp


# A: a stalled connection fed one byte at a time
seq, ack = handshake([50100], 0)[50100]
pkts = [seg(50100, seq + i, ack, bytes([i & 0xff])) for i in range(15000)]
t0 = time.time()
blast(pkts, pace=True)
check(True, "A: 15,000 one-byte segments sent in order in %.1f s" % (time.time() - t0))

# B: out-of-order one-byte segments with gaps on 32 connections
t0 = time.time()
conns = handshake(range(50200, 50232), 65535)
for sport, (seq, ack) in conns.items():
    blast([seg(sport, seq + 2 + 2 * i, ack, b"x", 65535) for i in range(512)], pace=True)
check(True, "B: 32 x 512 out-of-order one-byte segments sent in %.1f s" % (time.time() - t0))

# A last connection must still be accepted and served: the pool held.
time.sleep(1)
k = socket.create_connection((US, PORT), timeout=5)
k.sendall(b"after the attacks")
got = b""
while len(got) < 17:
    got += k.recv(100)
check(got == b"after the attacks", "a new client is served after the attacks")
k.close()
sys.exit(1 if fails else 0)
