#!/usr/bin/env bash
# Many connections and port reuse through Arion's echo listener (issue 9).
#
#   e2e_conns.sh WORKERS [arn_af_packet]
#
# With arn_af_packet: on Arion's own port, whose fanout group's program
# (lib/net/rss.c) delivers every segment to the worker that owns its flow:
# with 2 workers both take connections and none is handed over (the DPDK
# ports' hand-offs are tests/net/e2e_tcp.sh's).
#
# 2,000 connections open at once, each exchanging 1 KB and closing (more
# half-open connections than the SYN queue holds, so SYN cookies answer
# part of them); then 5 reconnections from one source port whose previous
# connection Linux holds in TIME_WAIT (tcp_tw_reuse); then nothing may be
# left open on Arion's side.
set -u
workers=${1:-1}
[ -n "${2:-}" ] && export TCP_E2E_PORT=$2
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/tcp/e2e_lib.sh"
topo_init "arn-tc$workers${2:+v}"
tcp_e2e_up "$workers" || exit 1

out=$(ip netns exec "$ns" $PY "$here/tcp_client.py" many "$us" 7 2000 1024 120 2>&1)
echo "$out" | grep -q "^many ok" && ok "$out" || bad "$out"
# and again on the second listener, after the first batch has closed
out=$(ip netns exec "$ns" $PY "$here/tcp_client.py" many "$us" 9 2000 1024 120 2>&1)
echo "$out" | grep -q "^many ok" && ok "second round: $out" || bad "second round: $out"

ip netns exec "$ns" sysctl -qw net.ipv4.tcp_tw_reuse=1
out=$(ip netns exec "$ns" $PY "$here/tcp_client.py" reuse "$us" 7 5 2>&1)
echo "$out" | grep -q "^reuse ok" && ok "$out" || bad "$out"
sleep 1

topo_arion_stop TERM || bad "arion exit code $?"
acc=0 act=0
for w in $(seq 0 $((workers - 1))); do
	grep "stats tcp worker$w" "$log"
	acc=$((acc + $(tcp_stat connections_accepted $w)))
	act=$((act + $(tcp_stat connections_active $w)))
done
[ "$acc" -ge 4005 ] && ok "connections_accepted=$acc" || bad "connections_accepted=$acc, wanted 4005"
[ "$act" = 0 ] && ok "none left open" || bad "connections_active=$act"
if [ "$workers" -gt 1 ] && [ "${2:-}" = arn_af_packet ]; then
	grep -q "RSS in the kernel (a fanout program" "$log" && ok "steered by the fanout program" ||
		bad "the port's log line does not say the kernel steers"
	ho=0 hi=0
	for w in $(seq 0 $((workers - 1))); do
		a=$(tcp_stat connections_accepted $w)
		[ "$a" -ge 1000 ] && ok "worker$w accepted $a" || bad "worker$w accepted $a, wanted a share (1000+)"
		ho=$((ho + $(topo_counter "$log" worker$w handoff_out)))
	done
	[ "$ho" = 0 ] && ok "no segment handed over" || bad "handoff_out=$ho: the kernel delivered segments to a worker that does not own them"
fi
tcp_e2e_finish
