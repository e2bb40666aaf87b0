#!/usr/bin/env bash
# Start-up of the data plane: the static example config answers ping over
# net_af_packet and stops on SIGTERM with exit 0; a missing port, a port
# that cannot be configured, too few lcores, bad EAL arguments and missing
# hugepages each exit 3 with a message that says what to do (issue 5).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ping ethtool || exit 77
topo_init arn-ns
log=/dev/null

ns=$(topo_name c) && host_if=$(topo_name h) && peer_if=$(topo_name p) || exit 1
topo_ns "$ns" || exit 1
topo_veth "$host_if" "$ns" "$peer_if" 198.18.0.1/24 || exit 1

# expect_fail NAME PATTERN ARION-ARGS...: exit 3 and PATTERN in the output.
expect_fail() {
	local name=$1 pat=$2
	shift 2
	local out="$TOPO_DIR/$name.out" rc
	timeout 60 "$ARION_BIN" "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" != 3 ]; then
		bad "$name: exit $rc, wanted 3"
		sed 's/^/    /' "$out"
	elif ! grep -qF -- "$pat" "$out"; then
		bad "$name: output lacks: $pat"
		sed 's/^/    /' "$out"
	else
		ok "$name: exit 3, says: $pat"
	fi
}

# The static example, on our veth (and an admin port of our own range).
admin_port=$((20300 + $$ % 100)) # below the ephemeral ports (32768-60999)
sed -e "s/iface=arn-dp0/iface=$host_if/" -e "s/port_value: 9901/port_value: $admin_port/" \
	"$ARION_SRC/config/static.yaml" >"$TOPO_DIR/static.yaml"
topo_arion_start "$TOPO_DIR/static.yaml" || exit 1
log=$TOPO_ARION_LOG
out=$(ip netns exec "$ns" ping -q -c 100 -i 0.01 -W 2 198.18.0.2 2>&1)
echo "$out" | grep -q '100 received' && ok "static example answers ping" || bad "static example ping: $out"
out=$(ip netns exec "$ns" arping -c 3 -C 3 -W 0.2 -w 10 -i "$peer_if" 198.18.0.2 2>&1)
echo "$out" | grep -q '3 packets received' && ok "static example answers arping" || bad "arping: $out"
topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "static example: SIGTERM exits 0" || bad "static example: exit $rc"
req=$(topo_counter "$log" "port wan" arp_tx_request)
[ "$req" -ge 1 ] && ok "gratuitous ARP sent at start" || bad "arp_tx_request=$req"

# The same example with two workers (two lcores on one CPU).
sed -i 's/worker_lcores: \[1\]/worker_lcores: [1, 2]/' "$TOPO_DIR/static.yaml"
topo_arion_start "$TOPO_DIR/static.yaml" -- --lcores 0@0,1@1,2@1 || exit 1
log=$TOPO_ARION_LOG
grep -q "2 workers" "$log" && ok "static example: 2 workers" || bad "static example: not 2 workers"
out=$(ip netns exec "$ns" ping -q -c 100 -i 0.01 -W 2 198.18.0.2 2>&1)
echo "$out" | grep -q '100 received' && ok "static example, 2 workers: ping" || bad "2 workers ping: $out"
out=$(ip netns exec "$ns" arping -c 3 -C 3 -W 0.2 -w 10 -i "$peer_if" 198.18.0.2 2>&1)
echo "$out" | grep -q '3 packets received' && ok "static example, 2 workers: arping" || bad "2 workers arping: $out"
topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "static example, 2 workers: SIGTERM exits 0" || bad "2 workers: exit $rc"

cfg() { # DEVICE [WORKERS] [EAL ARGS as YAML list items]
	topo_bootstrap
	echo "dataplane:"
	echo "  eal_args: [${3:-\"--no-huge\", \"--no-pci\", \"--in-memory\", \"-m\", \"256\"}]"
	[ -n "${2:-}" ] && echo "  worker_lcores: [$2]"
	echo "  ports:"
	echo "    - { name: wan, device: \"$1\", ipv4: 198.18.0.2/24 }"
	echo "  mbuf_pool: { mbufs_per_socket: 4095 }"
}

cfg "net_af_packet0,iface=${TOPO_ID}x" 1 >"$TOPO_DIR/noport.yaml"
expect_fail "missing interface" "net_af_packet's interface '${TOPO_ID}x' does not exist" \
	-c "$TOPO_DIR/noport.yaml"
# (issue 15) and not first a misleading "Operation not permitted" as root
grep -q "not permitted" "$TOPO_DIR/missing interface.out" && bad "missing interface: says 'not permitted'" ||
	ok "missing interface: no 'Operation not permitted'"

cfg "arn_af_packet,iface=${TOPO_ID}x" 1 >"$TOPO_DIR/novport.yaml"
expect_fail "arn_af_packet: missing interface" "arn_af_packet's interface '${TOPO_ID}x' does not exist" \
	-c "$TOPO_DIR/novport.yaml"
cfg "arn_af_packet,mtu=9000" 1 >"$TOPO_DIR/vpkt_noif.yaml"
expect_fail "arn_af_packet: no iface=" "arn_af_packet needs the interface to use" \
	-c "$TOPO_DIR/vpkt_noif.yaml"

cfg "net_af_packet0,iface=$host_if,qpairs=1" "1, 2" >"$TOPO_DIR/queues.yaml"
expect_fail "too few queues" "2 workers need 2 of each (net_af_packet: qpairs=N)" \
	-c "$TOPO_DIR/queues.yaml" -- --lcores 0@0,1@1,2@1

cfg "net_af_packet0,iface=$host_if" "" >"$TOPO_DIR/lcores.yaml"
expect_fail "too few lcores" "too few lcores" -c "$TOPO_DIR/lcores.yaml" -- -l 0

cfg "net_af_packet0,iface=$host_if" 3 >"$TOPO_DIR/lcore3.yaml"
expect_fail "worker lcore not in EAL" "lcore 3 is not enabled" -c "$TOPO_DIR/lcore3.yaml" -- -l 0-1

expect_fail "bad EAL argument" "check dataplane.eal_args" -c "$TOPO_DIR/lcores.yaml" -- --no-such-eal-flag

if [ "$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)" = 0 ]; then
	cfg "net_af_packet0,iface=$host_if" 1 '"--no-pci", "--in-memory"' >"$TOPO_DIR/huge.yaml"
	expect_fail "no hugepages" "add --no-huge" -c "$TOPO_DIR/huge.yaml"
else
	echo "skip no hugepages: this machine has hugepages reserved"
fi

# Nothing of ours is left behind by the failed starts.
ip link show | grep -q "${TOPO_ID}x" && bad "an interface was left behind" || ok "nothing left behind"
net_e2e_finish
