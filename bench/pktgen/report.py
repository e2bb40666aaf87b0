#!/usr/bin/python3
"""bench/pktgen/run's report: pktgen's TX/RX beside Arion's and the kernel's
counters, per step; the tables of docs/benchmarks/pktgen.md; the smoke checks.

    report.py --work DIR --profiles "l3 synflood malformed" --seconds S
              [--meta key=value ...] (--check | --md FILE)

DIR holds what run and the profiles' hook left: <profile>.out (pktgen's
steps), <profile>.targets (the rates asked for, pps), frames.<profile>.json
(frames.py's description of the pcap), snap/<step>.{pre,post}.{stats,
link_a,link_g,snmp_a} and the clients' results snap/<step>.{keepalive,new,
ping}. --check exits 1 if a profile did not do what it says (see run).
"""
import argparse
import json
import os
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--work", required=True)
ap.add_argument("--profiles", required=True)
ap.add_argument("--seconds", type=float, required=True)
ap.add_argument("--meta", action="append", default=[])
ap.add_argument("--check", action="store_true")
ap.add_argument("--md")
a = ap.parse_args()
W = a.work
meta = dict(m.split("=", 1) for m in a.meta)
failures = []

# lib/net's per-frame outcomes: each frame a worker receives lands in exactly
# one of these (docs/dataplane.md), so their sum is rx_packets.
OUTCOMES = ["rx_drop_runt", "rx_drop_not_ours", "rx_drop_ethertype", "rx_drop_split_header",
            "arp_rx_bad", "arp_rx_request", "arp_rx_reply", "ip4_drop_truncated",
            "ip4_drop_version", "ip4_drop_hdr_len", "ip4_drop_cksum", "ip4_drop_options",
            "ip4_drop_fragment", "ip4_drop_ttl", "ip4_drop_bad_src", "ip4_drop_not_local",
            "ip4_drop_proto", "icmp_rx_echo", "icmp_rx_unreach", "icmp_rx_other",
            "icmp_drop_truncated", "icmp_drop_cksum", "tcp_rx", "tcp_drop_truncated"]


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def stats(label):
    d = {}
    for line in (read(f"{W}/snap/{label}.stats", "") or "").splitlines():
        k, _, v = line.partition(": ")
        if re.fullmatch(r"-?\d+", v.strip()):
            d[k] = int(v)
    return d


def link(label, side):
    try:
        s = json.loads(read(f"{W}/snap/{label}.link_{side}", "[]"))[0]["stats64"]
        return {"rx": s["rx"]["packets"], "tx": s["tx"]["packets"],
                "rx_dropped": s["rx"]["dropped"], "tx_dropped": s["tx"]["dropped"]}
    except (IndexError, KeyError, ValueError):
        return {"rx": 0, "tx": 0, "rx_dropped": 0, "tx_dropped": 0}


def snmp(label):
    lines = (read(f"{W}/snap/{label}.snmp_a", "") or "").splitlines()
    for i in range(0, len(lines) - 1, 2):
        if lines[i].startswith("Ip:"):
            return dict(zip(lines[i].split()[1:], map(int, lines[i + 1].split()[1:])))
    return {}


class Step:
    """The counters' movement during one step of a profile."""

    def __init__(self, line):
        f = dict(kv.split("=", 1) for kv in line.split()[2:])
        self.label = line.split()[1]
        self.rate_pct = float(f["rate_pct"])
        self.secs = float(f["seconds"])
        self.tx = int(f["pktgen_tx"])
        self.rx = int(f["pktgen_rx"])
        s0, s1 = stats(self.label + ".pre"), stats(self.label + ".post")
        self.ok_stats = bool(s0) and bool(s1)
        self.d = {k: s1.get(k, 0) - s0.get(k, 0) for k in s1}
        a0, a1 = link(self.label + ".pre", "a"), link(self.label + ".post", "a")
        g0, g1 = link(self.label + ".pre", "g"), link(self.label + ".post", "g")
        self.ka = {k: a1[k] - a0[k] for k in a0}
        self.kg = {k: g1[k] - g0[k] for k in g0}
        n0, n1 = snmp(self.label + ".pre"), snmp(self.label + ".post")
        self.reasm = n1.get("ReasmReqds", 0) - n0.get("ReasmReqds", 0)

    def port(self, c):
        return self.d.get("dpdk.port.wan." + c, 0)

    def tcp(self, c):
        return sum(v for k, v in self.d.items() if re.fullmatch(r"tcp\.\d+\." + re.escape(c), k))

    def pps(self, n):
        return n / self.secs if self.secs else 0

    def client(self, kind):
        t = read(f"{W}/snap/{self.label}.{kind}")
        if t is None:
            return None
        if kind == "ping":
            m = re.search(r"(\d+) packets transmitted, (\d+) received", t)
            return {"sent": int(m.group(1)), "ok": int(m.group(2))} if m else None
        try:
            return json.loads(t)
        except ValueError:
            return None

    def accounted(self):
        """Frames that reached Arion's interface minus what the worker got,
        what the ring overflow counted and what the kernel's defragmentation
        held: 0 when every frame is accounted for."""
        return self.ka["rx"] - self.port("rx_packets") - self.port("nic_rx_missed") - self.reasm


def steps(prof):
    out = read(f"{W}/{prof}.out", "") or ""
    return [Step(l) for l in out.splitlines() if l.startswith("step ")]


def k(n):
    return f"{n / 1000:.0f}k" if n >= 10000 else f"{n:.0f}"


def lat(c):
    if not c:
        return "no result"
    s = f"{c['ok']}/{c['sent']} ok"
    if c.get("p50_ms") is not None:
        s += f", {c['p50_ms']:.1f} / {c['p99_ms']:.1f} / {c['max_ms']:.0f} ms"
    return s


md = []
say = print


def common_checks(prof, st):
    for s in st:
        check(s.ok_stats, f"{prof} {s.label}: no /stats snapshot")
        u = s.accounted()
        check(u == 0, f"{prof} {s.label}: {u} frames reached Arion's interface but are in no counter "
              f"(kernel rx {s.ka['rx']}, worker rx {s.port('rx_packets')}, "
              f"nic_rx_missed {s.port('nic_rx_missed')}, held for reassembly {s.reasm})")


# ---- l3 ---------------------------------------------------------------------------
def l3():
    st = steps("l3")
    targets = (read(f"{W}/l3.targets", "") or "").split()
    check(len(st) > 0, "l3: no steps")
    common_checks("l3", st)
    say("l3: ICMP echo at rising rates (per step; pps over the step)")
    hdr = ("| asked (pps) | pktgen TX (pps) | at Arion's veth | worker received | nic_rx_missed "
           "| echo replies | answered | pktgen RX | lost after Arion | every echo answered |")
    rows, best = [], 0
    for i, s in enumerate(st):
        rep = s.port("icmp_tx_echo_reply")
        answered = s.tx > 0 and rep == s.tx
        if answered:
            best = max(best, s.pps(s.tx))
        lost_back = s.kg["rx"] - s.rx
        row = (f"| {targets[i] if i < len(targets) else '?'} | {k(s.pps(s.tx))} | {s.ka['rx']} "
               f"| {s.port('rx_packets')} | {s.port('nic_rx_missed')} | {rep} "
               f"| {100 * rep / s.tx if s.tx else 0:.2f}% | {s.rx} "
               f"| {lost_back} | {'yes' if answered else 'no'} |")
        rows.append(row)
        say("  " + row)
        check(s.tx > 0, f"l3 {s.label}: pktgen sent nothing")
        check(s.port("icmp_rx_echo") > 0, f"l3 {s.label}: Arion received no echo request")
        check(rep == s.port("icmp_rx_echo"),
              f"l3 {s.label}: {s.port('icmp_rx_echo')} echo requests received, {rep} answered")
        check(s.port("icmp_drop_cksum") == 0,
              f"l3 {s.label}: icmp_drop_cksum={s.port('icmp_drop_cksum')}: pktgen sent broken ICMP")
        check(s.rx > 0, f"l3 {s.label}: pktgen received no reply")
    say(f"  highest rate with every echo answered: {k(best)} pps" if best else
        "  no step had every echo answered")
    md.extend([
        "## L3: ICMP echo at rising rates",
        "",
        f"`bench/pktgen/arion-l3.lua`: pktgen replays 64 ICMP echo requests (60-byte frames, "
        f"a pcap `frames.py echo` makes) at each rate for {a.seconds:g} s. Arion's worker "
        "answers each one it receives. \"at Arion's veth\" is the kernel's receive count of "
        "Arion's interface; what the worker did not get is `nic_rx_missed` (the af_packet "
        "ring was full: the worker fell behind). \"lost after Arion\" is what reached "
        "pktgen's interface but not pktgen (its own af_packet ring, on a core it shares).",
        "",
        hdr,
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"**Highest rate with every echo answered: {k(best)} pps**" if best else
        "**No rate had every echo answered.**",
        "",
    ])


# ---- synflood ----------------------------------------------------------------------
def synflood():
    st = steps("synflood")
    targets = (read(f"{W}/synflood.targets", "") or "").split()
    check(len(st) > 1, "synflood: no steps")
    common_checks("synflood", st)
    say("synflood: SYNs from 16.0.0.0/16 to :80, clients meanwhile")
    rows = []
    for i, s in enumerate(st):
        base = s.label == "base"
        ka, nc = s.client("keepalive"), s.client("new")
        asked = "none (baseline)" if base else (targets[i - 1] if i - 1 < len(targets) else "?")
        row = (f"| {asked} | {k(s.pps(s.tx))} | {s.port('tcp_rx')} | {s.port('nic_rx_missed')} "
               f"| {s.tcp('syn_cookies_sent')} | {s.tcp('syn_queue_overflow')} | {s.rx} "
               f"| {s.port('arp_drop_queue_full')} | {lat(ka)} | {lat(nc)} |")
        rows.append(row)
        say("  " + row)
        for name, c in (("keep-alive client", ka), ("new-connection client", nc)):
            if check(c is not None, f"synflood {s.label}: the {name} left no result"):
                check(c["ok"] > 0, f"synflood {s.label}: the {name} got no response")
                check(c["failed"] == 0 or s.port("nic_rx_missed") > 0,
                      f"synflood {s.label}: the {name} failed {c['failed']} of {c['sent']} "
                      "requests while Arion lost no frame")
        if not base:
            check(s.tx > 0, f"synflood {s.label}: pktgen sent nothing")
            check(s.tcp("syn_cookies_sent") > 0, f"synflood {s.label}: no SYN cookie sent")
            check(s.port("arp_drop_queue_full") == 0,
                  f"synflood {s.label}: arp_drop_queue_full={s.port('arp_drop_queue_full')}: "
                  "nothing answered ARP for the gateway")
            check(s.rx > 0, f"synflood {s.label}: pktgen received no SYN-ACK")
    md.extend([
        "## SYN flood, and what a normal client sees",
        "",
        "`bench/pktgen/arion-synflood.lua`: pktgen's range mode sends 64-byte SYNs from "
        "65,534 addresses (16.0.0.0/16, stepping; pktgen's random bits would leave the "
        "checksums wrong) and changing ports to Arion's listener (a direct response), and "
        "answers Arion's ARP for its gateway, 198.18.0.1. Meanwhile, on pktgen's core, a "
        "keep-alive client sends a GET every 10 ms on one connection and a second client "
        "opens a new connection for a GET every 50 ms (bench/pktgen/client.py; a request "
        "fails without a whole 200 within 2 s). The first row is the same clients with "
        "pktgen idle. Client columns: answered/sent, then p50 / p99 / max latency "
        "(connect included for new connections).",
        "",
        "| SYNs asked (pps) | pktgen TX (pps) | TCP segments to the TCP layer | nic_rx_missed "
        "| SYN cookies sent | SYN queue overflows | pktgen RX | arp_drop_queue_full "
        "| keep-alive client | new connections |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])


# ---- malformed ---------------------------------------------------------------------
def malformed():
    st = steps("malformed")
    targets = (read(f"{W}/malformed.targets", "") or "").split()
    fr = json.loads(read(f"{W}/frames.malformed.json", "{}") or "{}")
    kinds = fr.get("kinds", [])
    check(len(st) > 0 and kinds, "malformed: no steps or no frames")
    common_checks("malformed", st)
    want = {}
    for _, c, t in kinds:
        want[c] = want.get(c, 0) + 1
    # Background frames that are not part of the mix: pktgen's ARP replies
    # and requests, the ping's echo requests.
    background = {"arp_rx_request", "arp_rx_reply", "icmp_rx_echo"}
    say(f"malformed: {len(kinds)} kinds, replayed at rising rates; a ping meanwhile")
    rows = []
    for i, s in enumerate(st):
        p = s.client("ping")
        unexpected = {c: s.port(c) for c in OUTCOMES
                      if c not in want and c not in background and s.port(c)}
        total = sum(s.port(c) for c in OUTCOMES)
        row = (f"| {targets[i] if i < len(targets) else '?'} | {k(s.pps(s.tx))} | {s.ka['rx']} "
               f"| {s.port('rx_packets')} | {s.port('nic_rx_missed')} | {s.reasm} "
               f"| {s.accounted()} | {p['ok'] if p else '?'}/{p['sent'] if p else '?'} |")
        rows.append(row)
        say("  " + row)
        check(s.tx > 0, f"malformed {s.label}: pktgen sent nothing")
        check(total == s.port("rx_packets"),
              f"malformed {s.label}: outcome counters sum to {total}, rx_packets is "
              f"{s.port('rx_packets')}")
        check(not unexpected, f"malformed {s.label}: counters outside the mix moved: {unexpected}")
        for c in want:
            if c == "kernel_defrag":
                check(s.reasm > 0, f"malformed {s.label}: the kernel held no fragment")
            else:
                check(s.port(c) > 0, f"malformed {s.label}: {c} did not move")
        for _, c, t in kinds:
            if t:
                check(s.tcp(t) > 0, f"malformed {s.label}: tcp {t} did not move")
        if check(p is not None, f"malformed {s.label}: the ping left no result"):
            check(p["sent"] - p["ok"] <= s.port("nic_rx_missed"),
                  f"malformed {s.label}: {p['sent'] - p['ok']} pings lost, "
                  f"nic_rx_missed={s.port('nic_rx_missed')}")
    last = st[-1] if st else None
    krows = []
    if last:
        n = max(1, len(kinds))
        per = {}
        for name, c, t in kinds:
            per.setdefault(c, []).append(name)
        for c in sorted(per, key=lambda c: OUTCOMES.index(c) if c in OUTCOMES else 99):
            got = last.reasm if c == "kernel_defrag" else last.port(c)
            exp = last.ka["rx"] * len(per[c]) / n
            krows.append(f"| `{c}` | {len(per[c])} | {'; '.join(per[c])} | ~{exp:.0f} | {got} |")
        tk = {}
        for name, _, t in kinds:
            if t:
                tk.setdefault(t, []).append(name)
        tcp_rows = [f"| `tcp.*.{t}` | {'; '.join(v)} | {last.tcp(t)} |" for t, v in tk.items()]
    md.extend([
        "## Malformed and unwanted frames",
        "",
        f"`bench/pktgen/arion-malformed.lua`: {len(kinds)} kinds of frame (`frames.py "
        "malformed`), one of each in a pcap pktgen replays at each rate, while a ping "
        "(every 20 ms) runs from pktgen's side. \"unaccounted\" is the frames that reached "
        "Arion's interface minus those the worker counted, `nic_rx_missed` and the "
        "fragments the kernel held for reassembly (net_af_packet's fanout group "
        "defragments, so lone fragments never reach the port; `ReasmReqds` in the "
        "namespace's /proc/net/snmp counts them): it must be 0.",
        "",
        "| asked (pps) | pktgen TX (pps) | at Arion's veth | worker received | nic_rx_missed "
        "| held by the kernel (fragments) | unaccounted | ping answered |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Where each kind went in the last step (\"expected\": the kind's share of the frames "
        "that reached Arion's interface; pktgen sends the pcap's frames in its mempool's "
        "order, not strictly in turn, and the ping and ARP add a few):",
        "",
        "| counter | kinds | which | expected | counted |",
        "|---|---|---|---|---|",
        *krows,
        "",
        "And in the TCP layer (all of these are also in `tcp_rx` above):",
        "",
        "| counter | kinds | counted |",
        "|---|---|---|",
        *(tcp_rows if last else []),
        "",
    ])


for prof in a.profiles.split():
    {"l3": l3, "synflood": synflood, "malformed": malformed}[prof]()

if a.md:
    keep = ""
    old = read(a.md)
    if old and "<!-- analysis -->" in old:
        keep = old[old.index("<!-- analysis -->"):]
    head = [
        "# pktgen-dpdk against Arion",
        "",
        "Written by `bench/pktgen/run` (see docs/benchmarks/README.md). pktgen and Arion run "
        "on one machine, each with a `net_af_packet` port on one end of a veth pair: "
        "pktgen's port lcore (and the clients) on CPU 0, Arion's worker on CPU 1. So this "
        "measures Arion's L3 path and TCP listener behind the kernel's af_packet path on a "
        "VM, not a NIC's line rate; on hardware the same profiles run with pktgen on its "
        "own machine (docs/benchmarks/hardware.md).",
        "",
        " · ".join(f"{k_}: {v}" for k_, v in meta.items()),
        "",
        "**The machine is shared with other engineers' builds and tests and is noisy**: "
        "rerun before comparing numbers.",
        "",
    ]
    with open(a.md + ".tmp", "w") as f:
        f.write("\n".join(head + md) + "\n" + keep)
    os.replace(a.md + ".tmp", a.md)

if failures:
    print("bench/pktgen: FAILED:", file=sys.stderr)
    for f in failures:
        print("  " + f, file=sys.stderr)
    if a.check:
        sys.exit(1)
elif a.check:
    print("bench/pktgen: every profile did what it says")
