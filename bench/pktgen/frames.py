#!/usr/bin/python3
"""Frames for pktgen to replay at Arion, written as a pcap (python3-scapy).

    frames.py echo      OUT.pcap ARION_MAC SRC_MAC SRC_IP ARION_IP
    frames.py malformed OUT.pcap ARION_MAC SRC_MAC SRC_IP ARION_IP

echo: 64 ICMP echo requests (different ids and sequence numbers, valid
checksums, 60-byte frames). pktgen's own ICMP mode cannot be used: in
24.03.1 it writes a Timestamp message 8 bytes past the IP header, which
Arion counts as icmp_drop_cksum (issue 23).

malformed: one frame of each kind below, in order. Each kind lands in
exactly one of lib/net's per-frame counters (docs/dataplane.md, "What is
dropped, and counted"); TCP kinds are passed to the TCP layer (tcp_rx)
and name the lib/tcp counter they must also move. Fragments never reach
the port: net_af_packet's fanout group defragments (PACKET_FANOUT_FLAG_
DEFRAG), so the kernel holds them and counts them (Ip ReasmReqds).

Prints a JSON object on stdout: {"frames": N, "avg_size": pktgen's
average frame size, "kinds": [[name, counter, tcp_counter or null], ...]}.
Every frame is padded to 60 bytes, as pktgen would pad it anyway.
"""
import json
import sys

from scapy.all import (ARP, ICMP, IP, TCP, UDP, Dot1AD, Dot1Q, Ether, IPOption, Raw,
                       wrpcap)

mode, out, amac, smac, sip, aip = sys.argv[1:7]
subnet = aip.rsplit(".", 1)[0]
other_ip = subnet + ".99"
kinds = []  # (name, lib/net counter, lib/tcp counter or None, frame)


def eth(dst=None, type=0x0800):
    return Ether(dst=dst or amac, src=smac, type=type)


def patched(pkt, patches):
    """The bytes of @pkt (built, checksums computed) with bytes patched."""
    b = bytearray(bytes(pkt))
    for off, val in patches:
        b[off] = val
    return bytes(b)


def add(name, counter, frame, tcp=None):
    kinds.append((name, counter, tcp, bytes(frame)))


def ip(**kw):
    return IP(src=kw.pop("src", sip), dst=kw.pop("dst", aip), **kw)


echo = ICMP(type=8, id=0x4152, seq=1) / Raw(b"arion-pktgen-mix")

if mode == "echo":
    for i in range(64):
        add("echo request", "icmp_rx_echo",
            eth() / IP(src=sip, dst=aip, id=i, flags="DF") / ICMP(type=8, id=0x4152, seq=i) /
            Raw(b"arion-pktgen" + bytes(6)))
elif mode == "malformed":
    # ---- Ethernet -----------------------------------------------------------
    add("unicast MAC of another host", "rx_drop_not_ours", eth("02:00:00:00:00:99") / ip() / echo)
    add("IPv4 multicast MAC", "rx_drop_not_ours", eth("01:00:5e:00:00:fb") / ip(dst="224.0.0.251") / UDP(dport=5353))
    add("IPv6 multicast MAC", "rx_drop_not_ours", eth("33:33:00:00:00:01", 0x86DD) / Raw(bytes(40)))
    add("LLDP to its multicast MAC", "rx_drop_not_ours", eth("01:80:c2:00:00:0e", 0x88CC) / Raw(bytes(40)))
    add("IPv6 to our MAC", "rx_drop_ethertype", eth(type=0x86DD) / Raw(b"\x60" + bytes(39)))
    add("IPv6 broadcast", "rx_drop_ethertype", eth("ff:ff:ff:ff:ff:ff", 0x86DD) / Raw(b"\x60" + bytes(39)))
    add("802.1Q VLAN-tagged IPv4", "rx_drop_ethertype", Ether(dst=amac, src=smac) / Dot1Q(vlan=7) / ip() / echo)
    add("802.1ad (QinQ) tagged IPv4", "rx_drop_ethertype", Ether(dst=amac, src=smac) / Dot1AD(vlan=7) / Dot1Q(vlan=8) / ip() / echo)
    add("LLDP to our MAC", "rx_drop_ethertype", eth(type=0x88CC) / Raw(bytes(40)))
    add("802.3 length field (LLC)", "rx_drop_ethertype", eth(type=0x002E) / Raw(b"\xaa\xaa\x03" + bytes(43)))
    add("PPPoE discovery", "rx_drop_ethertype", eth("ff:ff:ff:ff:ff:ff", 0x8863) / Raw(b"\x11\x09" + bytes(38)))
    add("MPLS unicast", "rx_drop_ethertype", eth(type=0x8847) / Raw(b"\x00\x01\x01\x40") / ip() / echo)
    # ---- ARP ------------------------------------------------------------------
    req = dict(op=1, hwsrc=smac, psrc=sip, pdst=aip)
    add("ARP: hardware type 6 (IEEE 802)", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / ARP(hwtype=6, **req))
    add("ARP: protocol IPv6", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / ARP(ptype=0x86DD, **req))
    add("ARP: hardware length 8", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / Raw(patched(ARP(**req), [(4, 8)])))
    add("ARP: protocol length 16", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / Raw(patched(ARP(**req), [(5, 16)])))
    add("ARP: opcode 3 (RARP)", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / ARP(op=3, hwsrc=smac, psrc=sip, pdst=aip))
    add("ARP: opcode 0", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / ARP(op=0, hwsrc=smac, psrc=sip, pdst=aip))
    add("ARP: broadcast sender MAC", "arp_rx_bad", eth("ff:ff:ff:ff:ff:ff", 0x0806) / ARP(op=1, hwsrc="ff:ff:ff:ff:ff:ff", psrc=sip, pdst=aip))
    add("ARP: multicast sender MAC", "arp_rx_bad", eth(type=0x0806) / ARP(op=2, hwsrc="01:00:5e:00:00:01", psrc=sip, pdst=aip, hwdst=amac))
    # ---- IPv4 header ----------------------------------------------------------
    good = ip() / echo
    add("IP version 6 in an IPv4 frame", "ip4_drop_version", eth() / Raw(patched(good, [(0, 0x65)])))
    add("IP version 0", "ip4_drop_version", eth() / Raw(patched(good, [(0, 0x05)])))
    add("IP version 15", "ip4_drop_version", eth() / Raw(patched(good, [(0, 0xF5)])))
    add("IHL 4", "ip4_drop_hdr_len", eth() / Raw(patched(good, [(0, 0x44)])))
    add("IHL 0", "ip4_drop_hdr_len", eth() / Raw(patched(good, [(0, 0x40)])))
    add("total length 12, below the header", "ip4_drop_hdr_len", eth() / ip(len=12) / echo)
    add("total length beyond the frame", "ip4_drop_truncated", eth() / ip(len=1400) / echo)
    add("IHL 15 in a 46-byte packet", "ip4_drop_truncated", eth() / Raw(patched(ip(len=60) / Raw(bytes(26)), [(0, 0x4F)])))
    add("bad header checksum", "ip4_drop_cksum", eth() / ip(chksum=0x1234) / echo)
    add("header checksum 0", "ip4_drop_cksum", eth() / ip(chksum=0) / echo)
    ck = IP(bytes(good)).chksum
    add("header checksum byte-swapped", "ip4_drop_cksum", eth() / ip(chksum=((ck & 0xFF) << 8) | (ck >> 8) if (ck >> 8) != (ck & 0xFF) else ck ^ 1) / echo)
    add("options: 4 NOPs", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x01\x01\x01\x01")]) / echo)
    add("options: record route", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x07\x07\x04" + bytes(4) + b"\x00")]) / echo)
    add("options: loose source route", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x83\x07\x04" + bytes([198, 18, 0, 1]) + b"\x00")]) / echo)
    add("options: strict source route", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x89\x07\x04" + bytes([198, 18, 0, 1]) + b"\x00")]) / echo)
    add("options: timestamp", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x44\x08\x05\x00" + bytes(4))]) / echo)
    add("options: router alert", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x94\x04\x00\x00")]) / echo)
    add("options: end of list only", "ip4_drop_options", eth() / ip(options=[IPOption(b"\x00\x00\x00\x00")]) / echo)
    add("fragment: first (MF)", "kernel_defrag", eth() / ip(id=0x0AA1, flags="MF") / ICMP(type=8) / Raw(b"f" * 16))
    add("fragment: a later one (offset)", "kernel_defrag", eth() / ip(id=0x0AA2, frag=100, proto=1) / Raw(b"g" * 16))
    add("TTL 0", "ip4_drop_ttl", eth() / ip(ttl=0) / echo)
    add("source 0.0.0.0", "ip4_drop_bad_src", eth() / ip(src="0.0.0.0") / echo)
    add("source 127.0.0.1", "ip4_drop_bad_src", eth() / ip(src="127.0.0.1") / echo)
    add("source multicast 224.0.0.1", "ip4_drop_bad_src", eth() / ip(src="224.0.0.1") / echo)
    add("source 255.255.255.255", "ip4_drop_bad_src", eth() / ip(src="255.255.255.255") / echo)
    add("source: Arion's own address", "ip4_drop_bad_src", eth() / ip(src=aip) / echo)
    add("destination: another host", "ip4_drop_not_local", eth() / ip(dst=other_ip) / echo)
    add("destination 255.255.255.255", "ip4_drop_not_local", eth("ff:ff:ff:ff:ff:ff") / ip(dst="255.255.255.255") / echo)
    add("destination: the subnet's broadcast", "ip4_drop_not_local", eth("ff:ff:ff:ff:ff:ff") / ip(dst=subnet + ".255") / echo)
    add("destination multicast, our MAC", "ip4_drop_not_local", eth() / ip(dst="224.0.0.251") / echo)
    add("destination 0.0.0.0", "ip4_drop_not_local", eth() / ip(dst="0.0.0.0") / echo)
    add("UDP to port 53", "ip4_drop_proto", eth() / ip() / UDP(sport=5353, dport=53) / Raw(bytes(12)))
    add("UDP to port 80 (QUIC)", "ip4_drop_proto", eth() / ip() / UDP(sport=5353, dport=80) / Raw(bytes(12)))
    add("GRE", "ip4_drop_proto", eth() / ip(proto=47) / Raw(b"\x00\x00\x08\x00" + bytes(20)))
    add("ESP", "ip4_drop_proto", eth() / ip(proto=50) / Raw(bytes(24)))
    add("SCTP", "ip4_drop_proto", eth() / ip(proto=132) / Raw(bytes(24)))
    add("IPv6 in IPv4", "ip4_drop_proto", eth() / ip(proto=41) / Raw(b"\x60" + bytes(39)))
    add("IGMP", "ip4_drop_proto", eth() / ip(proto=2) / Raw(b"\x11\x64\xee\x9b" + bytes(4)))
    # ---- ICMP -----------------------------------------------------------------
    add("ICMP: bad checksum", "icmp_drop_cksum", eth() / ip() / ICMP(type=8, chksum=0x1111) / Raw(b"x" * 16))
    add("ICMP: echo with checksum 0", "icmp_drop_cksum", eth() / ip() / ICMP(type=8, chksum=0) / Raw(b"x" * 16))
    add("ICMP: 2 bytes", "icmp_drop_truncated", eth() / ip(proto=1) / Raw(b"\x08\x00"))
    add("ICMP: unreachable quoting 10 bytes", "icmp_drop_truncated", eth() / ip() / ICMP(type=3, code=1) / Raw(bytes(10)))
    add("ICMP: timestamp request", "icmp_rx_other", eth() / ip() / ICMP(type=13) / Raw(bytes(12)))
    add("ICMP: echo reply", "icmp_rx_other", eth() / ip() / ICMP(type=0, id=9, seq=9) / Raw(b"x" * 16))
    add("ICMP: redirect", "icmp_rx_other", eth() / ip() / ICMP(type=5, gw=other_ip) / IP(src=aip, dst=sip) / Raw(bytes(8)))
    add("ICMP: echo request with code 1", "icmp_rx_other", eth() / ip() / ICMP(type=8, code=1) / Raw(b"x" * 16))
    add("ICMP: unreachable quoting UDP", "icmp_rx_other", eth() / ip() / ICMP(type=3, code=3) / IP(src=aip, dst=sip) / UDP(sport=53, dport=53))
    add("ICMP: unreachable quoting another host's TCP", "icmp_rx_other", eth() / ip() / ICMP(type=3, code=1) / IP(src=other_ip, dst=sip) / Raw(bytes(8)))
    add("ICMP: fragmentation needed for no connection", "icmp_rx_unreach", eth() / ip() / ICMP(type=3, code=4, nexthopmtu=1200) / IP(src=aip, dst=sip, proto=6) / Raw(b"\x00\x50\x9c\x40" + bytes(4)))
    # ---- TCP ------------------------------------------------------------------
    add("TCP: 5 bytes", "tcp_drop_truncated", eth() / ip(proto=6) / Raw(b"\x9c\x40\x00\x50\x00"))
    add("TCP: 19 bytes", "tcp_drop_truncated", eth() / ip(proto=6) / Raw(bytes(TCP(sport=40000, dport=80))[:19]))
    add("TCP: bad checksum", "tcp_rx", eth() / ip() / TCP(sport=40001, dport=80, flags="S", chksum=0x2222), "bad_checksum")
    add("TCP: data offset 4", "tcp_rx", eth() / ip() / TCP(sport=40002, dport=80, flags="S", dataofs=4), "malformed")
    add("TCP: data offset beyond the segment", "tcp_rx", eth() / ip() / TCP(sport=40003, dport=80, flags="S", dataofs=15), "malformed")
    add("TCP: SYN to a closed port", "tcp_rx", eth() / ip() / TCP(sport=40004, dport=81, flags="S"), "resets_sent_no_listener")
    add("TCP: FIN to a closed port", "tcp_rx", eth() / ip() / TCP(sport=40005, dport=81, flags="FA", seq=5, ack=5), "resets_sent_no_listener")
    # No SYN cookie is out (no flood): not even checked as one (lib/tcp's
    # listen_input), answered with a RST.
    add("TCP: ACK to the listener, no connection", "tcp_rx", eth() / ip() / TCP(sport=40006, dport=80, flags="A", seq=7, ack=7), "resets_sent_no_listener")
else:
    sys.exit("frames.py: mode is echo or malformed")

frames = []
for _, _, _, f in kinds:
    frames.append(Ether(f + bytes(max(0, 60 - len(f)))))
wrpcap(out, frames)
print(json.dumps({
    "frames": len(frames),
    # pktgen's rate arithmetic uses the average frame length (without FCS)
    "avg_size": sum(len(f) for f in frames) // len(frames),
    "kinds": [[n, c, t] for n, c, t, _ in kinds],
}))
