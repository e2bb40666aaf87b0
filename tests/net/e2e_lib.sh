# Shared by tests/net/e2e_*.sh (source after tests/topo/topo.sh): one
# namespace and one Arion port, over net_af_packet or net_tap.
#
#   net_e2e_up af_packet|tap WORKERS
#
# sets ns, peer_if (the namespace's interface), us / peer (Arion's and the
# namespace's addresses, in 198.18.X.0/24 with X from the pid), log (Arion's
# log), and starts Arion with WORKERS workers (2: two lcores on one CPU).

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

# Print Arion's log and exit 1 if anything failed.
net_e2e_finish() {
	if [ $fails != 0 ]; then
		echo "$fails failed; arion's log:"
		sed 's/^/    /' "$log"
		exit 1
	fi
	exit 0
}

net_e2e_up() {
	local dev=$1 workers=$2 device lcores host_if
	ns=$(topo_name c) || return 1
	topo_ns "$ns" || return 1
	local subnet=$((100 + $$ % 150))
	us=198.18.$subnet.2
	peer=198.18.$subnet.1
	if [ "$dev" = af_packet ] || [ "$dev" = arn_af_packet ]; then
		host_if=$(topo_name h) && peer_if=$(topo_name p) || return 1
		topo_veth "$host_if" "$ns" "$peer_if" "$peer/24" || return 1
		device="net_af_packet0,iface=$host_if"
		[ "$dev" = arn_af_packet ] && device="arn_af_packet,iface=$host_if"
	else
		peer_if=$(topo_name t) || return 1
		device="net_tap0,iface=$peer_if"
	fi
	local eal=()
	if [ "$workers" = 2 ]; then
		lcores="1, 2"
		eal=(-- --lcores 0@0,1@1,2@1)
	else
		lcores="1"
	fi
	local cfg="$TOPO_DIR/arion.yaml"
	{
		topo_bootstrap
		topo_dataplane "$device" "$us/24" "" "$lcores"
	} >"$cfg"
	topo_arion_start "$cfg" "${eal[@]}" || return 1
	log=$TOPO_ARION_LOG
	if [ "$dev" = tap ]; then
		topo_tap_adopt "$peer_if" "$ns" "$peer/24" || return 1
	fi
	return 0
}
