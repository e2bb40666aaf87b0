# Shared by tests/tcp/e2e_*.sh (source after tests/topo/topo.sh): one
# namespace with Linux's stack as the peer, one Arion port over
# net_af_packet (net_af_xdp with TCP_E2E_PORT=af_xdp; Arion's own
# arn_af_packet, with every veth's offloads on, with
# TCP_E2E_PORT=arn_af_packet), and echo listeners (envoy.filters.network.echo) on
# $us:7 and $us:9.
#
#   tcp_e2e_up [WORKERS] [EXTRA_DATAPLANE_YAML]
#
# sets ns (the client's namespace), rns (the router's), peer_if, us, peer,
# log, and starts Arion. WORKERS 2 puts two
# worker lcores on one CPU (--lcores 0@0,1@1,2@1).

fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
PY=/usr/bin/python3 # Debian's, with python3-scapy
here=$ARION_SRC/tests/tcp

tcp_e2e_finish() {
	if [ $fails != 0 ]; then
		echo "$fails failed; arion's log (tail):"
		tail -50 "$log" | sed 's/^/    /'
		exit 1
	fi
	exit 0
}

# The echo listeners the tests use, as an Envoy user writes them.
tcp_e2e_listeners() {
	local addr=$1 p
	echo "  static_resources:"
	echo "    listeners:"
	for p in 7 9; do
		cat <<YAML
      - name: echo$p
        address: { socket_address: { address: $addr, port_value: $p } }
$([ $p = 9 ] && echo "        tcp_backlog_size: 64  # SYN queue bound: e2e_scapy.py floods past it")
        filter_chains:
          - filters:
              - name: envoy.filters.network.echo
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo
YAML
	done
}

tcp_e2e_up() {
	local workers=${1:-1} extra=${2:-} host_if lcores eal=()
	# client namespace (Linux's stack) -> router namespace -> Arion. Loss
	# and impairment happen in the router's FORWARD chain: a packet dropped
	# there is really lost (a drop in the client's own OUTPUT chain is
	# reported to its TCP, which just sends again), and packets held for
	# delay there do not count against the client socket's small queues.
	ns=$(topo_name c) && rns=$(topo_name r) || return 1
	topo_ns "$ns" && topo_ns "$rns" || return 1
	local x=$((100 + $$ % 70)) y=$((170 + $$ % 70))
	us=198.18.$y.2
	gw=198.18.$y.1
	peer=198.18.$x.1
	host_if=$(topo_name h) && local r_up=$(topo_name u) || return 1
	topo_veth "$host_if" "$rns" "$r_up" "$gw/24" || return 1
	peer_if=$(topo_name p) && local r_dn=$(topo_name d) || return 1
	ip -n "$ns" link add "$peer_if" type veth peer name "$r_dn" netns "$rns" || return 1
	ip -n "$ns" addr add "$peer/24" dev "$peer_if"
	ip -n "$rns" addr add "198.18.$x.254/24" dev "$r_dn"
	topo_offloads_off "$ns" "$peer_if"
	topo_offloads_off "$rns" "$r_dn"
	ip -n "$ns" link set "$peer_if" up
	ip -n "$rns" link set "$r_dn" up
	ip -n "$ns" route add default via "198.18.$x.254"
	ip netns exec "$rns" sysctl -qw net.ipv4.ip_forward=1
	if [ "$workers" = 2 ]; then
		lcores="1, 2"
		eal=(-- --lcores 0@0,1@1,2@1)
	else
		lcores="1"
	fi
	local cfg="$TOPO_DIR/arion.yaml" device="net_${TCP_E2E_PORT:-af_packet}0,iface=$host_if"
	if [ "${TCP_E2E_PORT:-}" = arn_af_packet ]; then
		# the kernel's super-segments both ways: TSO and GSO on the
		# senders, GRO on the router's inputs (a veth's defaults, which
		# topo_veth turned off for DPDK's ports)
		device="arn_af_packet,iface=$host_if"
		ethtool -K "$host_if" tx on tso on gso on gro on >/dev/null 2>&1
		ip netns exec "$rns" ethtool -K "$r_up" tx on tso on gso on gro on >/dev/null 2>&1
		ip netns exec "$rns" ethtool -K "$r_dn" tx on tso on gso on gro on >/dev/null 2>&1
		ip netns exec "$ns" ethtool -K "$peer_if" tx on tso on gso on gro on >/dev/null 2>&1
	fi
	{
		topo_bootstrap
		tcp_e2e_listeners "$us"
		topo_dataplane "$device" "$us/24" "$gw" "$lcores"
		[ -n "$extra" ] && echo "$extra"
	} >"$cfg"
	topo_arion_start "$cfg" "${eal[@]}" || return 1
	log=$TOPO_ARION_LOG
	return 0
}

# tcp_stat NAME [WORKER]: a TCP counter from Arion's shutdown log line
# "stats tcp worker0: name=value ..." (0 if absent).
tcp_stat() {
	local v
	v=$(grep -E "stats tcp worker${2:-0}:" "$log" | tail -1 | grep -oE "[ ]$1=[0-9]+" | cut -d= -f2)
	echo "${v:-0}"
}
