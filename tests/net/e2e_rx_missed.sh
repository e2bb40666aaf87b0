#!/usr/bin/env bash
# Every frame lost below the worker is counted (issue 23): a net_af_packet
# port gets rx_descriptors as its ring size (framecnt), and frames the kernel
# drops because that ring is full show in nic_rx_missed, on /stats and in
# the shutdown log. The ring is overflowed deterministically: Arion is
# stopped (SIGSTOP) while a burst of echo requests arrives, so the kernel
# can queue only a ring's worth; after SIGCONT the worker answers those and
# every other frame of the burst must be in nic_rx_missed. Counted, not
# timed: the kernel's receive count for the interface is the reference.
#
#   e2e_rx_missed.sh WORKERS
#
# WORKERS 2: two queue pairs, so two sockets in a fanout group whose
# rollover fills the second ring when the first is full.
set -u
workers=${1:?1 or 2}
. "${ARION_SRC:?}/tests/topo/topo.sh"
. "$ARION_SRC/tests/net/e2e_lib.sh"
topo_require ip ping ethtool curl || exit 77
topo_init "arn-nq$workers"
admin=$((20440 + $$ % 40)) # below the ephemeral ports (32768-60999)
ring=64  # dataplane.ports[].rx_descriptors: the smallest Arion accepts
burst=3000

ns=$(topo_name c) && host_if=$(topo_name h) && peer_if=$(topo_name p) || exit 1
topo_ns "$ns" || exit 1
subnet=$((100 + $$ % 150))
us=198.18.$subnet.2
peer=198.18.$subnet.1
topo_veth "$host_if" "$ns" "$peer_if" "$peer/24" || exit 1
cfg="$TOPO_DIR/arion.yaml"
{
	topo_bootstrap
	echo "  admin: { address: { socket_address: { address: 127.0.0.1, port_value: $admin } } }"
	lcores=1 eal=()
	[ "$workers" = 2 ] && lcores="1, 2" eal=(-- --lcores 0@0,1@1,2@1)
	topo_dataplane "net_af_packet0,iface=$host_if" "$us/24" "" "$lcores" |
		sed "s|^      ipv4: .*|&\n      rx_descriptors: $ring|"
} >"$cfg"
topo_arion_start "$cfg" "${eal[@]}" || exit 1
log=$TOPO_ARION_LOG

qp=
[ "$workers" = 2 ] && qp=,qpairs=2
grep -qE "port wan \(net_af_packet0,iface=$host_if$qp,framecnt=$ring," "$log" &&
	ok "rx_descriptors $ring passed to net_af_packet as framecnt=$ring" ||
	bad "the port line lacks framecnt=$ring: $(grep 'port wan (' "$log")"
grep -q "not counted in nic_rx_missed" "$log" && bad "Arion did not find the af_packet socket"

stat() { # COUNTER: its value on /stats
	curl -s --max-time 5 "http://127.0.0.1:$admin/stats" | grep -E "^dpdk\.port\.wan\.$1: " |
		cut -d' ' -f2
}
kernel_rx() { cat "/sys/class/net/$host_if/statistics/rx_packets"; }

# Resolve Arion's MAC the ordinary way, then send the burst raw (a ping
# flood would wait for replies that cannot come while Arion is stopped).
ip netns exec "$ns" ping -c 1 -W 2 "$us" >/dev/null || bad "first ping"
mac=$(ip -n "$ns" neigh show "$us" | grep -oE '([0-9a-f]{2}:){5}[0-9a-f]{2}')
[ -n "$mac" ] || {
	bad "no neighbour entry for $us"
	net_e2e_finish
}
missed0=$(stat nic_rx_missed)
echo0=$(stat icmp_rx_echo)
[ "$missed0" = 0 ] && ok "nic_rx_missed 0 before the burst" || bad "nic_rx_missed=$missed0 before the burst"

k0=$(kernel_rx)
kill -STOP "$TOPO_ARION_PID"
ip netns exec "$ns" /usr/bin/python3 - "$peer_if" "$mac" "$peer" "$us" "$burst" <<'PY'
import socket, struct, sys

iface, dmac, src, dst, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
eth = bytes.fromhex(dmac.replace(":", "")) + s.getsockname()[4] + b"\x08\x00"
for i in range(n):
    icmp = struct.pack("!BBHHH", 8, 0, 0, 0x7171, i & 0xFFFF) + b"rx-missed-burst!"
    icmp = icmp[:2] + struct.pack("!H", csum(icmp)) + icmp[4:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), i & 0xFFFF, 0x4000, 64, 1, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(eth + ip + icmp)
PY
k1=$(kernel_rx)
kill -CONT "$TOPO_ARION_PID"
arrived=$((k1 - k0))
[ "$arrived" -gt $((ring * 4)) ] && ok "the kernel received $arrived of $burst frames for the port" ||
	bad "only $arrived frames reached the port's interface; the ring ($ring) did not overflow"

# The worker answers what the ring held; wait until it has.
for ((i = 0; i < 50; i++)); do
	[ "$(stat icmp_rx_echo)" -gt "$echo0" ] && break
	sleep 0.1
done
sleep 0.5
echoed=$(($(stat icmp_rx_echo) - echo0))
missed=$(($(stat nic_rx_missed) - missed0))
[ "$echoed" -gt 0 ] && [ "$echoed" -le $((ring * workers)) ] &&
	ok "the workers received $echoed of the burst (at most $workers ring(s) of $ring)" ||
	bad "the workers received $echoed of the burst, wanted 1..$((ring * workers))"
[ $((echoed + missed)) = "$arrived" ] &&
	ok "/stats: received $echoed + nic_rx_missed $missed = the kernel's $arrived" ||
	bad "/stats: received $echoed + nic_rx_missed $missed != the kernel's $arrived"

out=$(ip netns exec "$ns" ping -q -c 5 -i 0.05 -W 2 "$us" 2>&1)
echo "$out" | grep -q '5 received' && ok "ping after the overflow" || bad "ping after: $out"
topo_arion_stop TERM
rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || bad "SIGTERM: exit $rc"
v=$(topo_counter "$log" "port wan" nic_rx_missed)
[ "$v" = $((missed0 + missed)) ] && ok "shutdown log: nic_rx_missed=$v" ||
	bad "shutdown log: nic_rx_missed=$v, wanted $((missed0 + missed))"
net_e2e_finish
