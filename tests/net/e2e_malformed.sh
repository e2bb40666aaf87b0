#!/usr/bin/env bash
# Malformed IPv4 frames (truncated, bad checksum, bad length, options,
# fragments, TTL 0, ...) sent with scapy from a namespace: each is counted
# under its reason and dropped, Arion keeps answering ping, and SIGINT stops
# it with exit 0 (issue 5).
#
#   e2e_malformed.sh af_packet|tap WORKERS
set -u
dev=${1:?af_packet or tap}
workers=${2:?1 or 2}
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ping ethtool || exit 77
if ! /usr/bin/python3 -c 'import scapy' 2>/dev/null; then
	echo "needs python3-scapy (scripts/setup-deps --test)"
	exit 77
fi
topo_init "arn-nm${dev:0:1}"
net_e2e_up "$dev" "$workers" || exit 1

ip netns exec "$ns" ping -c 1 -W 2 "$us" >/dev/null || bad "first ping"
mac=$(ip -n "$ns" neigh show "$us" | grep -oE '([0-9a-f]{2}:){5}[0-9a-f]{2}')
[ -n "$mac" ] || {
	bad "no neighbour entry for $us"
	net_e2e_finish
}

n=20
want=$(ip netns exec "$ns" /usr/bin/python3 "$ARION_SRC/tests/net/malformed.py" "$peer_if" "$mac" "$peer" "$us" $n 2>&1)
[ $? = 0 ] || {
	bad "scapy: $want"
	net_e2e_finish
}
if [ "$dev" = af_packet ]; then
	# net_af_packet joins its sockets in a PACKET_FANOUT group with
	# PACKET_FANOUT_FLAG_DEFRAG: the kernel holds fragments for reassembly,
	# and lone fragments never reach the port (docs/dataplane.md).
	want=$(echo "$want" | grep -v '^ip4_drop_fragment ')
fi

out=$(ip netns exec "$ns" ping -q -c 200 -i 0.005 -W 2 "$us" 2>&1)
echo "$out" | grep -q '200 received' && ok "ping after the malformed frames" || bad "ping after: $out"
kill -0 "$TOPO_ARION_PID" 2>/dev/null && ok "still running" || bad "arion died"

topo_arion_stop INT
rc=$?
[ "$rc" = 0 ] && ok "SIGINT: exit 0" || bad "SIGINT: exit $rc"

while read -r counter count; do
	got=$(topo_counter "$log" "port wan" "$counter")
	[ "$got" = "$count" ] && ok "$counter=$got" || bad "$counter=$got, wanted $count"
done <<<"$want"
replies=$(topo_counter "$log" "port wan" icmp_tx_echo_reply)
[ "$replies" = 201 ] && ok "only the good pings were answered" || bad "icmp_tx_echo_reply=$replies, wanted 201"
tcp=$(topo_counter "$log" "port wan" tcp_rx)
[ "$tcp" = 0 ] && ok "nothing malformed reached TCP" || bad "tcp_rx=$tcp"
net_e2e_finish
