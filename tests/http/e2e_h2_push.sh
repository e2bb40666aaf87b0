#!/usr/bin/env bash
# A configuration push under HTTP/2 load (issue 19, tests): h2load sends
# H2_PUSH_N (default 200000: 10-30 s here) requests over 4 h2c connections with 10
# streams each while e2e_h2_push.js pushes route (RDS), cluster (CDS) and
# endpoint (EDS) changes one after the other as fast as Arion ACKs them.
# None of these changes the listener, so no connection drains: every
# stream must succeed (h2load: 0 failed, 0 errored, all 2xx), and the
# pushes must have been applied meanwhile (both clusters served).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl h2load node || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
N=${H2_PUSH_N:-200000}
topo_init arn-h2p
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_h2_push.js" "$cp_dir" || exit 1
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 300); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "first configuration not ACKed"; http_e2e_finish; }
for i in $(seq 50); do
	[ "$(cc --http2-prior-knowledge -s -o /dev/null -w '%{http_code}' http://$us/ 2>/dev/null)" = 200 ] && break
	sleep 0.1
done

touch "$cp_dir/go"
ip netns exec "$cns" h2load -n "$N" -c 4 -m 10 "http://$us/" >"$TOPO_DIR/h2load.out" 2>&1
touch "$cp_dir/stop"
for i in $(seq 100); do [ -e "$cp_dir/done" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/failed" ] && bad "control plane: $(cat "$cp_dir/failed")"
read -r pushes ms maxack <"$cp_dir/done"
echo "    $pushes pushes in $ms ms (slowest ACK $maxack ms)"
grep -E '^(finished|requests|status codes):' "$TOPO_DIR/h2load.out" | sed 's/^/    /'
[ "${pushes:-0}" -ge 30 ] && ok "$pushes route/cluster/endpoint pushes ACKed during the load" ||
	bad "only ${pushes:-0} pushes during the load"
req=$(grep '^requests:' "$TOPO_DIR/h2load.out")
[[ "$req" =~ " $N succeeded, 0 failed, 0 errored, 0 timeout" ]] &&
	ok "h2load: $N streams, 0 failed, 0 errored" || bad "h2load: $req"
[[ "$(grep '^status codes:' "$TOPO_DIR/h2load.out")" =~ ^"status codes: $N 2xx" ]] &&
	ok "h2load: every status 2xx" || bad "h2load: $(grep '^status codes:' "$TOPO_DIR/h2load.out")"
w1=$(stat cluster.web.upstream_rq_total)
w2=$(stat cluster.web2.upstream_rq_total)
[ "$w1" -gt 0 ] && [ "$w2" -gt 0 ] && ok "both route targets served (web $w1, web2 $w2)" ||
	bad "route changes not seen: web $w1, web2 $w2"
v=$(stat http.h2.downstream_rq_http2_total)
[ "$v" -ge "$N" ] && ok "http.h2.downstream_rq_http2_total = $v" || bad "http.h2.downstream_rq_http2_total = $v"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
