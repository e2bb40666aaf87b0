#!/usr/bin/env bash
# TCP checksums on a veth (lib/net/port.c, if_l4_cksum_vouched): Linux's
# stack does not verify what a veth with rx-checksumming on delivers, and
# neither does Arion on net_af_packet over one; with rx-checksumming off
# (`ethtool -K IF rx off`) both verify. Each half sends TCP SYNs with a
# bad checksum to a port nobody listens on: taken, they are answered with
# resets (resets_sent_no_listener); verified, they are counted and dropped
# (bad_checksum). IPv4 header checksums are verified either way.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ping ethtool || exit 77
if ! /usr/bin/python3 -c 'import scapy' 2>/dev/null; then
	echo "needs python3-scapy (scripts/setup-deps --test)"
	exit 77
fi
topo_init arn-vck
net_e2e_up af_packet 1 || exit 1
host_if=$(grep -oE 'iface=[^ ,"]+' "$TOPO_DIR/arion.yaml" | head -1 | cut -d= -f2)
[ -n "$host_if" ] || {
	bad "no iface in the configuration"
	net_e2e_finish
}

# send_bad N: N SYNs with a bad TCP checksum and N frames with a bad IPv4
# header checksum, from the namespace to Arion
send_bad() {
	ip netns exec "$ns" ping -c 1 -W 2 "$us" >/dev/null || bad "ping"
	local mac
	mac=$(ip -n "$ns" neigh show "$us" | grep -oE '([0-9a-f]{2}:){5}[0-9a-f]{2}')
	ip netns exec "$ns" /usr/bin/python3 - "$peer_if" "$mac" "$peer" "$us" "$1" <<'PY' || bad "scapy"
import sys
from scapy.all import IP, TCP, Ether, conf, get_if_hwaddr, sendp
conf.verb = 0
iface, dmac, src, dst, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
eth = Ether(dst=dmac, src=get_if_hwaddr(iface), type=0x0800)
for i in range(n):
    sendp(eth / IP(src=src, dst=dst) / TCP(sport=41000 + i, dport=9, flags="S", seq=7, chksum=0x1234), iface=iface)
    sendp(eth / IP(src=src, dst=dst, chksum=0x1234) / TCP(sport=42000 + i, dport=9, flags="S", seq=7), iface=iface)
PY
	sleep 0.5
}

# 1. rx-checksumming on (a veth's default): taken as Linux takes them
grep -q "$host_if is a veth with rx-checksumming on" "$log" &&
	ok "the port says its TCP checksums are taken unverified" ||
	bad "no line saying the veth's TCP checksums are taken"
send_bad 5
topo_arion_stop INT || bad "SIGINT"
rst=$(topo_counter "$log" "tcp worker0" resets_sent_no_listener)
ck=$(topo_counter "$log" "tcp worker0" bad_checksum)
ip4=$(topo_counter "$log" "port wan" ip4_drop_cksum)
[ "$rst" = 5 ] && ok "rx on: the 5 SYNs were answered (resets_sent_no_listener=5)" ||
	bad "rx on: resets_sent_no_listener=$rst, wanted 5"
[ "$ck" = 0 ] && ok "rx on: bad_checksum=0" || bad "rx on: bad_checksum=$ck, wanted 0"
[ "$ip4" = 5 ] && ok "rx on: IPv4 header checksums still verified" || bad "rx on: ip4_drop_cksum=$ip4, wanted 5"

# 2. rx-checksumming off: verified
ethtool -K "$host_if" rx off >/dev/null 2>&1 || bad "ethtool -K $host_if rx off"
topo_arion_start "$TOPO_DIR/arion.yaml" || {
	bad "restart"
	net_e2e_finish
}
log=$TOPO_ARION_LOG
grep -q "is a veth with rx-checksumming on" "$log" &&
	bad "rx off: the port still takes TCP checksums unverified" ||
	ok "rx off: no such line"
send_bad 5
topo_arion_stop INT || bad "SIGINT"
rst=$(topo_counter "$log" "tcp worker0" resets_sent_no_listener)
ck=$(topo_counter "$log" "tcp worker0" bad_checksum)
[ "$ck" = 5 ] && ok "rx off: the 5 SYNs were counted and dropped (bad_checksum=5)" ||
	bad "rx off: bad_checksum=$ck, wanted 5"
[ "$rst" = 0 ] && ok "rx off: none answered" || bad "rx off: resets_sent_no_listener=$rst, wanted 0"
net_e2e_finish
