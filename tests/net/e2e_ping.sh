#!/usr/bin/env bash
# ping and arping from a namespace to Arion's address, through the real
# binary, then SIGTERM: exit 0 and counters that add up (issue 5).
#
#   e2e_ping.sh af_packet|arn_af_packet|tap WORKERS
#
# af_packet: a net_af_packet port on the root end of a veth pair whose
# other end is in the test's namespace; arn_af_packet: Arion's own port
# there (its fanout program sends IPv4 that is not TCP by its addresses). tap: a net_tap port whose kernel
# side the test moves into its namespace once Arion has created it.
# WORKERS 2 maps two worker lcores onto one CPU (--lcores 0@0,1@1,2@1) so
# that it runs on a two-core machine; oversubscribed, but no packet may be
# lost.
set -u
dev=${1:?af_packet, arn_af_packet or tap}
workers=${2:?1 or 2}
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ping arping ethtool || exit 77
. "$ARION_SRC/tests/net/e2e_lib.sh"
case $dev in arn_af_packet) topo_init arn-nv ;; *) topo_init "arn-n${dev:0:1}" ;; esac
net_e2e_up "$dev" "$workers" || exit 1
grep -q "data plane ready: control lcore 0, $workers worker" "$log" &&
	ok "$workers worker(s) on $dev" || bad "data plane did not report $workers workers"

# arping first: ARP for our address, answered by whichever worker got it.
out=$(ip netns exec "$ns" arping -c 5 -C 5 -W 0.2 -w 10 -i "$peer_if" "$us" 2>&1)
if echo "$out" | grep -qE '5 packets transmitted, 5 packets received'; then
	ok "arping: 5 of 5 answered"
else
	bad "arping: $out"
fi
mac=$(echo "$out" | grep -oE 'from ([0-9a-f]{2}:){5}[0-9a-f]{2}' | head -1 | cut -d' ' -f2)
if grep -qi "MAC $mac" "$log"; then ok "arping: the port's MAC ($mac)"; else bad "arping answered with '$mac', not the port's MAC"; fi

out=$(ip netns exec "$ns" ping -q -c 1000 -i 0.002 -W 5 "$us" 2>&1)
if echo "$out" | grep -qE '1000 packets transmitted, 1000 received, 0% packet loss'; then
	ok "ping: 1000 of 1000 answered"
else
	bad "ping: $out"
fi
# A large echo (a full-MTU frame) comes back whole.
out=$(ip netns exec "$ns" ping -c 2 -i 0.2 -W 3 -s 1472 -M do "$us" 2>&1)
echo "$out" | grep -qE '2 received' && ok "ping: 1500-byte packets" || bad "ping -s 1472: $out"

topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
grep -q "data plane stopped; ports released" "$log" && ok "ports released" || bad "no 'ports released' line"

echo_in=$(topo_counter "$log" "port wan" icmp_rx_echo)
echo_out=$(topo_counter "$log" "port wan" icmp_tx_echo_reply)
arp_out=$(topo_counter "$log" "port wan" arp_tx_reply)
[ "$echo_in" = 1002 ] && ok "icmp_rx_echo=1002" || bad "icmp_rx_echo=$echo_in, wanted 1002"
[ "$echo_out" = 1002 ] && ok "icmp_tx_echo_reply=1002" || bad "icmp_tx_echo_reply=$echo_out, wanted 1002"
[ "$arp_out" -ge 5 ] && ok "arp_tx_reply=$arp_out" || bad "arp_tx_reply=$arp_out, wanted at least 5"
drops=$(grep -E "stats port wan:" "$log" | grep -oE ' (ip4|icmp)_drop_[a-z_]+=[0-9]+' | tr '\n' ' ')
[ -z "$drops" ] && ok "no IPv4/ICMP drops" || bad "unexpected drops: $drops"
for w in $(seq 0 $((workers - 1))); do
	it=$(topo_counter "$log" "worker$w" loop_busy_iterations)
	[ "$it" -gt 0 ] && ok "worker$w busy iterations: $it" || bad "worker$w did no work"
done

net_e2e_finish
