#!/usr/bin/env bash
# Issue 12, item 2: one client must not be able to take the shared mbuf
# pool. Two attacks (e2e_mbuf_attack.py: 15,000 one-byte in-order segments
# on a stalled connection; 32 connections x 512 one-byte out-of-order
# segments) against the echo listener, with a pool of 8,191 mbufs that
# either attack would empty without Arion's mbuf accounting, while a kernel
# client moves 300 MB through the other echo listener (a few seconds: it
# starts first and ends after the attacks) and must get every byte back. Then: no mbuf allocation failed, no frame was dropped for
# want of an mbuf, and the defences are counted.
#   e2e_mbuf_attack.sh [arn_af_packet]
# With arn_af_packet, the same on Arion's own port, the veths' offloads on:
# the legitimate transfer arrives as the kernel's super-segments (mbuf
# chains, counted link by link as segments), beside the attacks.
set -u
[ "${1:-}" = arn_af_packet ] && export TCP_E2E_PORT=arn_af_packet
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool iptables /usr/bin/python3 || exit 77
/usr/bin/python3 -c "import scapy" 2>/dev/null || {
	echo "needs python3-scapy"
	exit 77
}
. "$ARION_SRC/tests/tcp/e2e_lib.sh"
topo_init arn-tm
# a 4 KB send buffer makes the echo stall after 4 KB, so that attack A's
# bytes stay in the receive queue; the default 256 KB receive window takes
# them all, and lets each of attack B's connections queue 512 segments
# out of order without the mbuf bounds
tcp_e2e_up 1 "  tcp: { sndbuf: 4096 }" || exit 1
ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="32768 49999"
ip netns exec "$ns" iptables -A OUTPUT -p tcp --sport 50000:59999 --tcp-flags RST RST \
	-m ttl --ttl-eq 64 -j DROP || bad "iptables ttl match"
ip netns exec "$ns" $PY "$here/tcp_client.py" bulk "$us" 9 300000000 120 >"$TOPO_DIR/bulk.out" 2>&1 &
bulk=$!
sleep 0.5
ip netns exec "$ns" $PY "$here/e2e_mbuf_attack.py" "$us" 7 "$peer_if" 2>&1 | tee "$TOPO_DIR/attack.log"
[ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails + 1))
if wait $bulk; then
	ok "legitimate echo transfer during the attacks: $(cat "$TOPO_DIR/bulk.out")"
else
	bad "legitimate echo transfer failed: $(cat "$TOPO_DIR/bulk.out")"
fi
topo_arion_stop TERM || bad "arion exit code $?"
grep -E "stats (tcp worker0|worker0|port)" "$log"
v=$(topo_counter "$log" worker0 mbuf_alloc_failed)
[ "$v" = 0 ] && ok "no mbuf allocation failed" || bad "mbuf_alloc_failed=$v"
v=$(topo_counter "$log" "port wan" nic_rx_nombuf)
[ "$v" = 0 ] && ok "no frame dropped for want of an mbuf" || bad "nic_rx_nombuf=$v"
v=$(tcp_stat output_no_mbuf)
[ "$v" = 0 ] && ok "no segment unsent for want of an mbuf" || bad "output_no_mbuf=$v"
v=$(tcp_stat receive_mbufs_collapsed)
[ "$v" -gt 10000 ] && ok "attack A's tiny segments collapsed: $v mbufs saved" || bad "receive_mbufs_collapsed=$v"
v=$(tcp_stat out_of_order_dropped)
[ "$v" -gt 0 ] && ok "attack B bounded: out_of_order_dropped=$v" || bad "out_of_order_dropped=$v"
if [ "${TCP_E2E_PORT:-}" = arn_af_packet ]; then
	v=$(tcp_stat chains_received)
	[ "$v" -gt 0 ] && ok "super-segments taken as chains beside the attacks: $v" ||
		bad "chains_received=0: the port's super-segments were not exercised"
fi
tcp_e2e_finish
