#!/usr/bin/env bash
# bench/tcp: Arion's echo listener vs Linux's stack (echo_server in a
# namespace), measured in the same run on the same topology:
#
#   client ns ---- router ns ---- Arion (net_af_packet, worker on CPU 1)
#                            \--- Linux ns (echo_server pinned to CPU 1)
#
#   bench_tcp.sh ECHO_SERVER_BINARY TCP_LOAD_BINARY [BULK_BYTES] [CPS_SECONDS]
#
# Prints bulk throughput (one connection, both directions at once, data
# verified) and connections per second for each, and the ratios. The load
# generator is tcp_load (C, epoll) on CPU 0; the server under test gets
# CPU 1 to itself. Needs root. Speed is reported, never asserted.
set -u
srv_bin=$(realpath "${1:?path of bench/tcp echo_server}")
load_bin=$(realpath "${2:?path of bench/tcp tcp_load}")
bytes=${3:-200000000}
secs=${4:-10}
ARION_SRC=${ARION_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ARION_SRC/tests/topo/topo.sh"
topo_require ip ethtool taskset || exit 77
. "$ARION_SRC/tests/tcp/e2e_lib.sh"
topo_init arn-tb
tcp_e2e_up 1 || exit 1

# the Linux server's namespace, one veth hop from the router like Arion
lns=$(topo_name l) && l_if=$(topo_name i) && r_l=$(topo_name k) || exit 1
topo_ns "$lns"
ip -n "$lns" link add "$l_if" type veth peer name "$r_l" netns "$rns"
z=$((10 + $$ % 80))
ip -n "$lns" addr add "198.18.$z.2/24" dev "$l_if"
ip -n "$rns" addr add "198.18.$z.1/24" dev "$r_l"
topo_offloads_off "$lns" "$l_if"
topo_offloads_off "$rns" "$r_l"
ip -n "$lns" link set "$l_if" up
ip -n "$rns" link set "$r_l" up
ip -n "$lns" route add default via "198.18.$z.1"
topo_bg linux_echo ip netns exec "$lns" taskset -c 1 "$srv_bin" 7
topo_wait_log "$TOPO_DIR/linux_echo.log" listening 5 || {
	echo "echo_server did not start"
	exit 1
}
linux=198.18.$z.2

run() { ip netns exec "$ns" taskset -c 0 "$load_bin" "$@"; }
num() { grep -oE "$1" | grep -oE "[0-9.]+" | head -1; }

# Arion first, then stop it: its worker polls CPU 1 at 100%, where the
# Linux server is pinned next.
echo "== arion: bulk $bytes bytes each way (one connection); connections/s for $secs s, 64 in flight"
a_bulk=$(run bulk "$us" 7 "$bytes" 300) && echo "$a_bulk"
a_cps=$(run cps "$us" 7 "$secs" 64) && echo "$a_cps"
topo_arion_stop TERM
grep "stats worker0" "$log" | grep -oE "loop_busy_cycles=[0-9]+"
echo "== linux (echo_server on CPU 1)"
l_bulk=$(run bulk "$linux" 7 "$bytes" 300) && echo "$l_bulk"
l_cps=$(run cps "$linux" 7 "$secs" 64) && echo "$l_cps"

ab=$(echo "$a_bulk" | num '[0-9.]+ MB/s') lb=$(echo "$l_bulk" | num '[0-9.]+ MB/s')
ac=$(echo "$a_cps" | num '^cps: [0-9]+') lc=$(echo "$l_cps" | num '^cps: [0-9]+')
echo "== summary"
printf 'bulk MB/s each way: arion %s, linux %s, ratio %s\n' "$ab" "$lb" \
	"$(awk -v a="$ab" -v b="$lb" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
printf 'connections/s:      arion %s, linux %s, ratio %s\n' "$ac" "$lc" \
	"$(awk -v a="$ac" -v b="$lc" 'BEGIN { if (b > 0) printf "%.2f", a / b }')"
