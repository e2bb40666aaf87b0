#!/usr/bin/env python3
"""The server's sending pattern in a capture of bench/tcp/loss_matrix
--capture DIR (the router's interface towards the server: every segment
the server sent, and what reached it from the client). For docs/tcp.md's
"Seventh pass" (issue 16): how much of the server's data is on the wire,
how it leaves, whether it ever waits for data or window.

  bench/tcp/loss_pcap.py FILE.pcap ...

Per capture:
  flight      the server's data past the client's last ACK, as the router
              sees it (segments of 1448 bytes): at each server segment,
              and the share of the time with 0, 1, ... in flight
  bursts      server segments less than 20 us apart
  iterations  server segments that carry the same ACK field: what one
              pass of the server's loop (Arion) or one softirq (Linux)
              sent; their count, size and the spacing between them
  backlog     the client's data that has passed the router minus the
              server's data sent: what the echo server had to send
  client win  the window the client advertised

Only IPv4 TCP, one connection (the first SYN's); pure Python, no
dependencies. Nothing here is asserted.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pcap  # noqa: E402 (bench/pcap.py)

SEG = 1448


def packets(path):
    """(time, (server address, port), seq, ack, payload length, flags,
    window, window scale of a SYN or None) of each TCP segment."""
    for t, ip in pcap.ipv4(path):
        g = pcap.tcp(ip)
        if g is None:
            continue
        wscale = None
        if g.flags & 2:
            wscale = next((v[0] for k, v in pcap.tcp_options(g.opts) if k == 3 and v), None)
        yield (t, (g.src, g.sport), g.seq, g.ack, g.plen, g.flags, g.win, wscale)


def sdiff(a, b):
    return (a - b + 2**31) % 2**32 - 2**31


def pct(xs, p):
    xs = sorted(xs)
    return xs[int(p * (len(xs) - 1))] if xs else float("nan")


def summary(xs, scale=1.0, fmt="{:.1f}"):
    if not xs:
        return "none"
    f = lambda v: fmt.format(v * scale)
    return (f"median {f(pct(xs, .5))} mean {f(statistics.mean(xs))} "
            f"p10 {f(pct(xs, .1))} p90 {f(pct(xs, .9))} (n {len(xs)})")


def analyse(path):
    pk = list(packets(path))
    syn = next(p for p in pk if p[5] & 2 and not p[5] & 16)
    cli = syn[1]
    cisn, cws = syn[2] + 1, syn[7] or 0
    sisn = None
    smax = cmax = 0
    una = None
    at_send, backlog, wins, bursts, groups = [], [], [], [], []
    share = {}
    last_t = last_data = None
    burst = 0
    group = None
    for t, src, seq, ack, plen, flags, win, _ in pk:
        if flags & 2:
            if src != cli:
                sisn = seq + 1
            continue
        if sisn is None:
            continue
        if last_t is not None and una is not None:
            k = min(int(sdiff(smax, una) / SEG), 20)
            share[k] = share.get(k, 0) + t - last_t
        last_t = t
        if src == cli:
            if plen:
                cmax = max(cmax, (seq + plen - cisn) % 2**32)
            una = (ack - sisn) % 2**32
            wins.append(win << cws)
            continue
        if plen == 0:
            continue
        end = (seq + plen - sisn) % 2**32
        smax = max(smax, end)
        if una is not None:
            at_send.append(sdiff(smax, una) / SEG)
        backlog.append((cmax - smax) / SEG)
        if last_data is not None and t - last_data > 20e-6:
            bursts.append(burst)
            burst = 0
        burst += 1
        last_data = t
        if group and group[0] == ack:
            group[1].append(t)
        else:
            if group:
                groups.append(group[1])
            group = [ack, [t]]
    if group:
        groups.append(group[1])
    total = sum(share.values()) or 1
    gaps = [(g[i + 1] - g[i]) for g in groups for i in range(len(g) - 1)]
    print(path)
    print(f"  flight at each server segment, segments: {summary(at_send)}")
    print("  share of time with N in flight (20: 20 or more): " +
          " ".join(f"{k}:{v / total:.2f}" for k, v in sorted(share.items())))
    print(f"  bursts (< 20 us apart), segments: {summary(bursts)}")
    print(f"  iterations (same ACK field), segments: {summary([len(g) for g in groups])}")
    print(f"  spacing inside an iteration, us: {summary(gaps, 1e6)}")
    print(f"  backlog at the server, segments: {summary(backlog)}")
    print(f"  client window, bytes: {summary(wins, 1, '{:.0f}')}")


for arg in sys.argv[1:]:
    analyse(arg)
