#!/usr/bin/env bash
# Configuration churn under load (issue 22, item 4), against
# bench/churn/cp.js's control plane with CHURN_SECONDS set:
#
#  1. EDS churn under wrk -c50: for CHURN_S seconds (default 20) web
#     switches between [A] and [B] as fast as Arion ACKs (each push removes
#     the endpoint the pools were using, so every upstream connection of
#     the load is closed by a configuration change), while a probe opens a
#     new connection per request: no probe over 1 s, every one a 200;
#  2. then an LDS change (a filter chain change: its connections drain
#     gradually over --drain-time-s 5) under the same load: no stall either
#     (probe <= 1 s, no non-2xx), and Arion keeps serving.
#
# What made new clients wait before (issue 22): every upstream connection
# a configuration change closed left a full connection block in TIME_WAIT
# for 60 s, and past 16,384 - 2,048 blocks clients got SYN cookies whose
# ACKs found no block: the probe stalled for seconds. The test checks that
# its churn closes at least that many upstream connections (so it would
# have stalled then), and reports the TCP block pool's high-water mark
# (tcp.<w>.connection_blocks_high_water), which is now far below it.
# Against the binary of the commit before "tcp: TIME_WAIT is a 48-byte
# record in its own table" (8cf486f^) it fails: see the commit message.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl wrk node python3 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
CHURN_S=${CHURN_S:-20}
# the connections the old TIME_WAIT (a block each, 60 s) would have held
# past the passive-open reserve of the default pool: 16384 - 2048
OLD_LIMIT=14336
topo_init arn-cl
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
export CHURN_SECONDS=$CHURN_S
http_e2e_xds_cp "$ARION_SRC/bench/churn/cp.js" "$cp_dir" || exit 1
# (CHURN_ARION_EXTRA: other options, for a binary older than
# --drain-time-s, to see the test fail on the behaviour before issue 22)
export ARION_EXTRA=${CHURN_ARION_EXTRA-"--drain-time-s 5"}
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 300); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "first configuration not ACKed"; http_e2e_finish; }
for i in $(seq 50); do
	[ "$(cc -s -o /dev/null -w '%{http_code}' http://$us/ 2>/dev/null)" = 200 ] && break
	sleep 0.1
done

# the probe: a new connection per request, its status and time
# (connect and first response), into $1 until $2 exists and it has more
# than 20 samples (at most 30 s more): on a loaded 2-core machine starting
# `ip netns exec curl` took 0.4 s, and a run had 19 samples in the 8 s of
# the LDS change, every one fast and 200, which failed the count
probe() {
	local n=0 end=$((SECONDS + 40))
	while { [ ! -e "$2" ] || [ "$n" -le 20 ]; } && [ "$SECONDS" -lt "$end" ]; do
		ip netns exec "$cns" curl -s -o /dev/null --max-time 10 \
			-w '%{http_code} %{time_total}\n' "http://$us/" >>"$1"
		n=$((n + 1))
		sleep 0.05
	done
}
# summary of a probe file; sets p_n p_bad p_over p_max
probe_sum() {
	read -r p_n p_bad p_over p_max < <(sort -k2 -n "$1" | awk '
		{ n++; if ($1 != 200) bad++; if ($2 > 1) over++; max = $2 }
		END { printf "%d %d %d %.3f\n", n, bad, over, max }')
	echo "    $2: $p_n probes, $p_bad not 200, $p_over over 1 s, slowest $p_max s"
}

# 1. EDS churn under load
touch "$cp_dir/go"
ip netns exec "$cns" wrk -t1 -c50 -d$((CHURN_S + 12))s --timeout 5s "http://$us/" >"$TOPO_DIR/wrk.txt" 2>&1 &
wrk_pid=$!
probe "$TOPO_DIR/probe1.txt" "$cp_dir/done" &
probe_pid=$!
wait "$probe_pid"
[ -e "$cp_dir/failed" ] && bad "control plane: $(cat "$cp_dir/failed")"
read -r n ms maxack <"$cp_dir/done"
echo "    $n EDS pushes in $ms ms (slowest ACK $maxack ms)"
probe_sum "$TOPO_DIR/probe1.txt" "EDS churn"
[ "$p_n" -gt 20 ] && ok "probe during the churn: $p_n new connections" || bad "probe: only $p_n samples"
[ "$p_over" = 0 ] && ok "EDS churn: no new connection took over 1 s (slowest $p_max s)" ||
	bad "EDS churn: $p_over new connections took over 1 s (slowest $p_max s)"
[ "$p_bad" = 0 ] && ok "EDS churn: every probe 200" || bad "EDS churn: $p_bad probes not 200"
closed=$(stat cluster.web.upstream_cx_destroy)
echo "    upstream connections closed: $closed; $(stat cluster.web.upstream_cx_total) opened"
# with TIME_WAIT in a block for 60 s, these would have held the pool
[ "$closed" -ge "$OLD_LIMIT" ] && ok "the churn closed $closed upstream connections (>= $OLD_LIMIT: it reproduces issue 22's exhaustion)" ||
	bad "the churn closed only $closed upstream connections (< $OLD_LIMIT: it would not have exhausted the old pool)"

# 2. an LDS change after the churn, under the same load
touch "$cp_dir/go2"
for i in $(seq 100); do [ -e "$cp_dir/step2" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/step2" ] && ok "LDS change ACKed" || bad "LDS change: $(cat "$cp_dir/failed" 2>/dev/null)"
(sleep 8; touch "$TOPO_DIR/probe2.stop") &
probe "$TOPO_DIR/probe2.txt" "$TOPO_DIR/probe2.stop"
probe_sum "$TOPO_DIR/probe2.txt" "after the LDS change"
[ "$p_n" -gt 20 ] && [ "$p_over" = 0 ] && [ "$p_bad" = 0 ] &&
	ok "LDS change: no stall ($p_n new connections, slowest $p_max s, all 200)" ||
	bad "LDS change: $p_n probes, $p_over over 1 s, $p_bad not 200 (slowest $p_max s)"
wait "$wrk_pid"
cat "$TOPO_DIR/wrk.txt"
total=$(awk '/requests in/ {print $1}' "$TOPO_DIR/wrk.txt")
[ "${total:-0}" -gt 1000 ] && ok "wrk: $total requests" || bad "wrk: only ${total:-0} requests"
grep -q "Non-2xx" "$TOPO_DIR/wrk.txt" && bad "wrk: non-2xx responses" || ok "wrk: every response 2xx"
grep -q "Socket errors" "$TOPO_DIR/wrk.txt" && bad "wrk: socket errors" || ok "wrk: no socket errors"
[ "$(stat listener.198.18.2.2_80.downstream_cx_drained)" -gt 0 ] &&
	ok "the LDS change drained connections: $(stat listener.198.18.2.2_80.downstream_cx_drained)" ||
	bad "the LDS change drained no connection"
echo "    TCP connection block pool high-water mark: $(stat tcp.0.connection_blocks_high_water) of 16384" \
	"(time-wait records $(stat tcp.0.connections_time_wait), reused $(stat tcp.0.time_wait_reused)," \
	"recycled $(stat tcp.0.time_wait_recycled); quiet RST closes $(stat tcp.0.resets_sent_quiet_close);" \
	"SYN cookies $(stat tcp.0.syn_cookies_sent); pool exhausted $(stat tcp.0.pool_exhausted))"
[ "$(stat tcp.0.pool_exhausted)" = 0 ] && ok "tcp.0.pool_exhausted 0" || bad "tcp.0.pool_exhausted $(stat tcp.0.pool_exhausted)"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
