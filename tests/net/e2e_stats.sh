#!/usr/bin/env bash
# lib/net's counters on the admin endpoint while Arion runs: /stats has
# dpdk.port.<port>.* and dpdk.worker.<n>.*, /stats/prometheus has them with
# the port and worker labels (issue 5: counters for the admin endpoint).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ping ethtool curl || exit 77
topo_init arn-nd
admin=$((20400 + $$ % 40)) # below the ephemeral ports (32768-60999)

topo_bootstrap() {
	echo "envoy_bootstrap:"
	echo "  node: { id: $TOPO_ID, cluster: test }"
	echo "  admin: { address: { socket_address: { address: 127.0.0.1, port_value: $admin } } }"
}
net_e2e_up af_packet 2 || exit 1

out=$(ip netns exec "$ns" ping -q -c 10 -i 0.05 -W 2 "$us" 2>&1)
echo "$out" | grep -q '10 received' || bad "ping: $out"
stats=$(curl -s --max-time 5 "http://127.0.0.1:$admin/stats")
echo "$stats" | grep -qx 'dpdk.port.wan.icmp_rx_echo: 10' && ok "/stats: dpdk.port.wan.icmp_rx_echo: 10" ||
	bad "/stats lacks dpdk.port.wan.icmp_rx_echo: 10"
for w in 0 1; do
	echo "$stats" | grep -qE "^dpdk\.worker\.$w\.loop_idle_iterations: [1-9]" &&
		ok "/stats: worker $w loop counters" || bad "/stats lacks dpdk.worker.$w.loop_idle_iterations"
done
echo "$stats" | grep -qE '^dpdk\.port\.wan\.nic_rx_missed: ' && ok "/stats: device counters" ||
	bad "/stats lacks dpdk.port.wan.nic_rx_missed"
prom=$(curl -s --max-time 5 "http://127.0.0.1:$admin/stats/prometheus")
echo "$prom" | grep -qx 'arion_dpdk_port_icmp_tx_echo_reply_total{arion_port="wan"} 10' &&
	ok "prometheus: arion_dpdk_port_icmp_tx_echo_reply_total{arion_port=\"wan\"} 10" ||
	bad "prometheus lacks the echo reply counter"
echo "$prom" | grep -qE '^arion_dpdk_worker_loop_busy_cycles_total\{envoy_worker_id="1"\} ' &&
	ok "prometheus: per-worker busy cycles" || bad "prometheus lacks worker 1's busy cycles"
echo "$stats" | grep -qE '^dpdk\.worker\.0\.arp_entries: [1-9]' && echo "$stats" | grep -qE '^dpdk\.worker\.0\.arp_waiting: 0$' &&
	ok "/stats: each worker's ARP entries and packets waiting (issue 22)" || bad "/stats lacks dpdk.worker.0.arp_entries / arp_waiting"
echo "$prom" | grep -qE '^arion_tcp_segments_received_total\{envoy_worker_id="0"\} ' &&
	ok "prometheus: arion_tcp_segments_received_total" || bad "prometheus lacks the TCP counters"
# Arion's own families follow Prometheus's conventions (issue 15): promtool
# has no remark about any arion_* name (its remarks on Envoy's own names,
# kept as Envoy writes them, are docs/admin.md's business)
if ! command -v promtool >/dev/null; then
	bad "promtool missing: run scripts/setup-deps --test"
else
	echo "$prom" | promtool check metrics >"$TOPO_DIR/promtool" 2>&1
	if grep -q "arion_" "$TOPO_DIR/promtool"; then
		bad "promtool remarks on Arion's own names: $(grep arion_ "$TOPO_DIR/promtool" | head -3)"
	else
		ok "promtool: no remark on an arion_* family"
	fi
fi

topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
net_e2e_finish
