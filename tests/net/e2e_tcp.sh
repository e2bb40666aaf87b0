#!/usr/bin/env bash
# TCP through the data plane with two workers on virtual devices: segments
# that land on the wrong worker are handed to the flow's owner, replies
# leave with correct checksums (in software on net_af_packet, through the
# PMD's offload on net_tap), and every byte comes back from the TCP layer's
# echo listener (envoy.filters.network.echo) (issue 5: RSS and ownership).
#
#   e2e_tcp.sh af_packet|tap
set -u
dev=${1:?af_packet or tap}
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ethtool || exit 77
topo_init "arn-nk${dev:0:1}"

# net_e2e_up writes the config; put an echo listener in front of it.
topo_bootstrap() {
	echo "envoy_bootstrap:"
	echo "  node: { id: $TOPO_ID, cluster: test }"
	echo "  static_resources:"
	echo "    listeners:"
	echo "      - name: echo"
	echo "        address: { socket_address: { address: 0.0.0.0, port_value: 7 } }"
	echo "        filter_chains:"
	echo "          - filters:"
	echo "              - name: envoy.filters.network.echo"
	echo "                typed_config: { \"@type\": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo }"
}
net_e2e_up "$dev" 2 || exit 1

out=$(ip netns exec "$ns" /usr/bin/python3 - "$us" <<'PY' 2>&1
import socket, sys
ok = 0
for i in range(16):
    msg = (b"connection %02d " % i) * 700
    s = socket.create_connection((sys.argv[1], 7), timeout=5)
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        c = s.recv(65536)
        if not c:
            break
        got += c
    s.close()
    ok += got == msg
print(ok)
PY
)
[ "$out" = 16 ] && ok "16 connections echoed every byte" || bad "echo: $out"

topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
tcp=$(topo_counter "$log" "port wan" tcp_rx)
[ "$tcp" -gt 0 ] && ok "tcp_rx=$tcp" || bad "tcp_rx=$tcp"
ho=$(($(topo_counter "$log" worker0 handoff_out) + $(topo_counter "$log" worker1 handoff_out)))
hi=$(($(topo_counter "$log" worker0 handoff_in) + $(topo_counter "$log" worker1 handoff_in)))
# Segments still in a ring when the workers stop (the peer's answers to what
# the TCP layer sends as it closes) are counted as dropped at stop: every
# segment handed over is accounted for, one way or the other.
hs=$(($(topo_counter "$log" worker0 handoff_drop_stop) + $(topo_counter "$log" worker1 handoff_drop_stop)))
# The kernel's hash is not ours: among 16 flows (both directions of each),
# some segments reach a worker that does not own them and are handed over
# (chance of none: about 2^-16). handoff_in also counts ARP copies.
[ "$ho" -gt 0 ] && ok "segments handed to their owner: $ho" || bad "no hand-off at all"
[ $((hi + hs)) -ge "$ho" ] && ok "hand-offs received: $hi, dropped at stop: $hs" ||
	bad "handoff_out=$ho > handoff_in=$hi + handoff_drop_stop=$hs"
hd=$(($(topo_counter "$log" worker0 handoff_drop_full) + $(topo_counter "$log" worker1 handoff_drop_full)))
[ "$hd" = 0 ] && ok "no hand-off drops" || bad "handoff_drop_full=$hd"
txd=$(topo_counter "$log" "port wan" tx_drop_full)
[ "$txd" = 0 ] && ok "no TX drops" || bad "tx_drop_full=$txd"
net_e2e_finish
