#!/usr/bin/env bash
# Issue 7 end to end: per-host counters on /clusters and /stats while
# requests are in flight and after; Envoy's HTTP health check filter answered
# locally (never upstream: nginx's access logs prove it), in pass-through
# mode, with cache_time and cluster_min_healthy_percentages; POST
# /healthcheck/fail turning health checks to 503 (flag LH) and draining
# keep-alive clients with "connection: close", and /healthcheck/ok undoing it.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hc
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
topo_bg py ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
alog="$TOPO_DIR/access.log"
sed "s|ACCESS_LOG|$alog|" "$ARION_SRC/tests/http/e2e_hc.yaml" | grep -v '^#' >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

admin="http://127.0.0.1:$admin_port"
code() { cc -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
hdrs() { cc -s -D - -o /dev/null "$@" 2>&1 | tr -d '\r' | tr 'A-Z' 'a-z'; }
expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}
# host CLUSTER ADDR:PORT STAT: a per-host value from /clusters
host() { curl -s "$admin/clusters" | grep -F "$1::$2::$3::" | head -1 | awk -F:: '{print $NF}'; }
# upstream_saw NGINX PATH: requests for PATH in nginx a|b's access log
upstream_saw() { grep -c " $2 HTTP" "$TOPO_DIR/nginx-$1/access.log" 2>/dev/null || true; }

# ---- per-host counters, during traffic (requests held by upstream.py) and after
slow=()
for i in 1 2; do
	cc -o /dev/null "http://$us/slow?ms=2500" &
	slow+=($!)
done
sleep 1
expect "/clusters: rq_active per host while 2 requests wait" "$(host py 198.18.3.10:8081 rq_active)" "^2$"
expect "/clusters: cx_active per host while 2 requests wait" "$(host py 198.18.3.10:8081 cx_active)" "^2$"
expect "/stats: the same as cluster.py.endpoint.<address>.rq_active" \
	"$(stat cluster.py.endpoint.198.18.3.10_8081.rq_active)" "^2$"
wait "${slow[@]}"
urls=()
for i in $(seq 20); do urls+=("http://$us/n$i"); done
cc -o /dev/null "${urls[@]}" # one keep-alive client connection, round robin over A and B
ra=$(host web 198.18.3.10:8080 rq_total) rb=$(host web 198.18.3.11:8080 rq_total)
expect "/clusters: rq_total per host after traffic ($ra + $rb)" "$((ra + rb)):$ra:$rb" "^20:[1-9][0-9]*:[1-9][0-9]*$"
expect "/clusters: rq_success per host" "$(host web 198.18.3.10:8080 rq_success)" "^$ra$"
ca=$(host web 198.18.3.10:8080 cx_active) cb=$(host web 198.18.3.11:8080 cx_active)
expect "/clusters: cx_active after traffic (idle keep-alive upstream connections)" "$ca:$cb" "^[1-9][0-9]*:[1-9][0-9]*$"
expect "/clusters: cx_total" "$(host web 198.18.3.10:8080 cx_total)" "^[1-9][0-9]*$"
expect "/clusters: rq_active back to 0" "$(host py 198.18.3.10:8081 rq_active):$(host py 198.18.3.10:8081 rq_success)" "^0:2$"
j=$(curl -s "$admin/clusters?format=json")
expect "/clusters?format=json: per-host stats[] with Envoy's names and types" "$(
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
for c in d["cluster_statuses"]:
    if c["name"] == "web":
        for h in c["host_statuses"]:
            if h["address"]["socket_address"]["address"] == "198.18.3.10":
                s = {x["name"]: (x.get("type", "COUNTER"), int(x.get("value", 0))) for x in h["stats"]}
                print(s["rq_total"][0], s["rq_total"][1], s["cx_active"][0], s["cx_active"][1] > 0)
' "$j")" "^COUNTER $ra GAUGE True$"
p=$(curl -s "$admin/stats/prometheus")
expect "/stats/prometheus: envoy_cluster_endpoint_rq_total with both labels" "$p" \
	"envoy_cluster_endpoint_rq_total\{envoy_cluster_name=\"web\",envoy_endpoint_address=\"198.18.3.10:8080\"\} $ra"
# promtool is installed by scripts/setup-deps --test (Debian's prometheus):
# without it this check fails rather than quietly not running
if ! command -v promtool >/dev/null; then
	bad "promtool missing: run scripts/setup-deps --test"
else
	printf '%s\n' "$p" >"$TOPO_DIR/prom"
	promtool check metrics <"$TOPO_DIR/prom" >"$TOPO_DIR/promtool" 2>&1
	prc=$?
	# as tests/admin/test_admin_e2e.sh: lint remarks on Envoy's own names
	# only (cx_connect_fail, upstream_rq_xx, *_ms, the membership_total gauge)
	lint() { grep -v -e 'should have "_total" suffix' -e 'should not have "_total" suffix' \
		-e '_ms metric names should not contain abbreviated units' "$TOPO_DIR/promtool"; }
	if [ $prc = 0 ] || { [ $prc = 3 ] && ! lint | grep -q .; }; then
		ok "promtool check metrics accepts the per-endpoint families (exit $prc)"
	else
		bad "promtool check metrics exit $prc: $(lint | head -5)"
	fi
fi

# ---- health checks answered locally: 200, never upstream
h=$(hdrs "http://$us/healthz")
expect "health check answered 200" "$h" "^http/1.1 200"
expect "health check: empty body" "$h" "content-length: 0"
expect "health check did not reach an upstream" "$(upstream_saw a /healthz):$(upstream_saw b /healthz)" "^0:0$"
expect "a non-health-check path goes upstream" "$(cc "http://$us/healthz2")" "^upstream-[ab] /healthz2"
expect "cluster_min_healthy_percentages unmet: 503" "$(code "http://$us:83/mh-healthz")" "^503$"
# pass-through: forwarded, answered by the upstream
expect "pass-through health check forwarded" "$(cc "http://$us:81/pt-healthz")" "^upstream-a /pt-healthz"
expect "pass-through reached nginx A once" "$(upstream_saw a /pt-healthz)" "^1$"
expect "pass-through: every header must match (a POST is no health check)" "$(cc -X POST "http://$us:81/pt-healthz")" "^upstream-a"
pt_seen=$(upstream_saw a /pt-healthz)
expect "cache_time: first one forwarded" "$(cc "http://$us:82/ptc-healthz")" "^upstream-b /ptc-healthz"
expect "cache_time: second one answered from the cache" "$(code "http://$us:82/ptc-healthz"):$(upstream_saw b /ptc-healthz)" "^200:1$"

# ---- POST /healthcheck/fail
expect "POST /healthcheck/fail" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$admin/healthcheck/fail")" "^200$"
expect "/ready 503 DRAINING" "$(curl -s "$admin/ready" | head -1)" "DRAINING"
expect "health check now 503" "$(code "http://$us/healthz")" "^503$"
expect "pass-through health check answered 503 locally" "$(code "http://$us:81/pt-healthz"):$(upstream_saw a /pt-healthz)" "^503:$pt_seen$"
h=$(hdrs "http://$us/x")
expect "other requests still served" "$h" "^http/1.1 200"
expect "... with connection: close (drain keep-alive clients)" "$h" "connection: close"
expect "... and x-envoy-immediate-health-check-fail" "$h" "x-envoy-immediate-health-check-fail: true"
# a keep-alive client is made to reconnect: curl opens a new connection per request
n=$(cc -s -o /dev/null -w '%{num_connects}\n' "http://$us/k1" "http://$us/k2" | awk '{n += $1} END {print n}')
expect "keep-alive client reconnects for its second request" "$n" "^2$"
expect "downstream_cx_drain_close counted" "$(stat http.hc.downstream_cx_drain_close)" "^[1-9][0-9]*$"
h=$(hdrs "http://$us:83/z")
expect "drain_type MODIFY_ONLY: not drained" "${h/connection: close/CLOSE}:$(stat http.mh.downstream_cx_drain_close)" "^[^C]*:0$"

# ---- POST /healthcheck/ok
expect "POST /healthcheck/ok" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$admin/healthcheck/ok")" "^200$"
expect "health check 200 again" "$(code "http://$us/healthz")" "^200$"
expect "/ready LIVE again" "$(curl -s "$admin/ready")" "LIVE"
h=$(hdrs "http://$us/y")
expect "no more connection: close" "${h/connection: close/CLOSE}" "^[^C]*$"
n=$(cc -s -o /dev/null -w '%{num_connects}\n' "http://$us/k1" "http://$us/k2" | awk '{n += $1} END {print n}')
expect "keep-alive kept again" "$n" "^1$"
expect "no health check ever reached an upstream" "$(upstream_saw a /healthz):$(upstream_saw b /healthz)" "^0:0$"

# ---- what the access log and stats say
sleep 1.2 # the admin drains access-log rings on its poll
for pat in "^80 200 - /healthz health_check_ok_cluster_healthy -$" \
	"^80 503 LH /healthz health_check_failed -$" \
	"^83 503 LH /mh-healthz health_check_failed_cluster_empty -$" \
	"^81 200 - /pt-healthz via_upstream 198.18.3.10:8080$" \
	"^81 503 LH /pt-healthz health_check_failed -$" \
	"^82 200 - /ptc-healthz health_check_cached -$"; do
	grep -qE "$pat" "$alog" && ok "access log: $pat" || bad "access log lacks /$pat/"
done
# access log filters on the same requests
expect "not_health_check_filter: no health check logged" "$(grep -c '/healthz$' "$alog.nohc")" "^0$"
expect "not_health_check_filter: the other requests logged" "$(grep -cE '^200 /(k[12]|healthz2)$' "$alog.nohc")" "^5$"
expect "status_code_filter GE 500: the failed health check logged" "$(grep -c '^503 /healthz$' "$alog.5xx")" "^[1-9]"
expect "status_code_filter GE 500: nothing below 500 logged" "$(grep -cvE '^5[0-9][0-9] ' "$alog.5xx")" "^0$"
for s in "http.hc.downstream_rq_2xx 20" "http.hc.downstream_rq_5xx 1" "http.mh.downstream_rq_5xx 1"; do
	set -- $s
	v=$(stat "$1")
	[ "$v" -ge "$2" ] && ok "stat $1 = $v" || bad "stat $1 = $v, wanted >= $2"
done
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
