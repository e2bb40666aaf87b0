#!/usr/bin/env bash
# HCM tracing with the Zipkin tracer end to end: curl through Arion to a
# node upstream that echoes the B3 headers it got, and a node http Zipkin
# collector (e2e_zipkin.js) that records the reports POSTed to
# /api/v2/spans. With Envoy's defaults (shared_span_context): the trace
# continues from the client's x-b3-* headers or single b3 header (its
# span id shared), a request without one starts a trace (a 64-bit id, the
# span's id its trace id), a malformed b3 makes no span and passes
# unchanged, x-b3-sampled 0 is sent on and not reported; five spans go in
# one report at once, as JSON v2 (ids, kind, "shared", the authority as
# name, localEndpoint the node's cluster, Envoy's tags), POSTed with
# collector_hostname as Host. In Envoy Gateway's shape (trace_id_128bit,
# shared_span_context false, spawn_upstream_span): the upstream gets the
# attempt's CLIENT span id whose parent is the request's new SERVER span,
# itself the client's span's child; the counters say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-zpk
http_e2e_topo || exit 1
log="$TOPO_DIR/reports.log"
: >"$log"
chmod 666 "$log"
chmod 755 "$TOPO_DIR"
topo_bg zipkin ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_zipkin.js" "$ub" 8083 "$log" 8084
for i in $(seq 100); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8084" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_zipkin.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
wait_reports() { # wait_reports N SECONDS
	for i in $(seq $(($2 * 10))); do
		[ "$(wc -l <"$log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# the reports, read once (python3 starts slowly): "R<n> <field> <value>"
# and "S<n> <traceId> <kind> <span as compact JSON, keys sorted>" lines
flat="$TOPO_DIR/flat"
flatten() {
	python3 -c '
import json, sys
for i, l in enumerate(open(sys.argv[1]), 1):
    r = json.loads(l)
    for f in ("method", "path", "host", "type"):
        print("R%d %s %s" % (i, f, r[f]))
    print("R%d count %d" % (i, len(r["spans"])))
    for s in r["spans"]:
        print("S%d %s %s %s" % (i, s["traceId"], s["kind"],
              json.dumps(s, sort_keys=True, separators=(",", ":"))))
' "$log" >"$flat"
}
report() { grep "^R$1 $2 " "$flat" | head -1 | cut -d' ' -f3-; }
span() { grep "^S$1 $2 ${3:-}" "$flat" | head -1 | cut -d' ' -f4-; }
field() { sed -E 's/^tid=([^ ]*) sid=([^ ]*) pid=([^ ]*) s=([^ ]*) b3=(.*)$/'"$2"'/' <<<"$1"; }

t1=463ac35c9f6413ad48485a3953bb6124
s1=a2fb4a1d1a96d312
p1=0020000000000001
b=$(cc -H "x-b3-traceid: $t1" -H "x-b3-spanid: $s1" -H "x-b3-parentspanid: $p1" \
	-H "x-b3-sampled: 1" -H "x-tag: tagged" -H "User-Agent: ua/1" "http://$us/a?q=1")
expect "x-b3-*: the trace continues, the span shared (its id and parent)" "$b" \
	"^tid=$t1 sid=$s1 pid=$p1 s=1 b3=-$"
t2=0000000000000abc
s2=0000000000000def
b=$(cc -H "b3: $t2-$s2-1" "http://$us/b")
expect "b3: the trace continues" "$b" "^tid=$t2 sid=$s2 pid=- s=1 b3=$t2-$s2-1$"
b=$(cc "http://$us/new")
expect "no context: a new 64-bit trace, sampled" "$b" "^tid=[0-9a-f]{16} sid=[0-9a-f]{16} pid=- s=1 "
new_tid=$(field "$b" '\1')
expect "no context: the root span's id is its trace id" "$(field "$b" '\2')" "^$new_tid$"
b=$(cc -H "b3: 463ac35c9f6413ad-garbage" "http://$us/bad")
expect "a malformed b3: no span, passed unchanged" "$b" \
	"^tid=- sid=- pid=- s=- b3=463ac35c9f6413ad-garbage$"
t3=1111111111111111
b=$(cc -H "x-b3-traceid: $t3" -H "x-b3-spanid: $s1" -H "x-b3-sampled: 0" "http://$us/un")
expect "x-b3-sampled 0: sent on" "$b" "^tid=$t3 sid=$s1 pid=- s=0 "
b=$(cc -H "b3: d" "http://$us/debug")
expect "b3 'd' alone: a new trace, sampled" "$b" "^tid=[0-9a-f]{16} sid=[0-9a-f]{16} pid=- s=1 b3=d$"
t4=2222222222222222
cc -H "b3: $t4-$s1" "http://$us/fifth" >/dev/null
wait_reports 1 3 && ok "five spans: one report at once" || bad "five spans: $(wc -l <"$log") reports"
# (the checks come after the second batch: both within the 5 s flush
# interval, which would send a batch early)
# Envoy Gateway's shape: Arion a hop of its own
b=$(cc -H "x-b3-traceid: $t1" -H "x-b3-spanid: $s1" -H "x-b3-sampled: 1" "http://$us:81/up")
expect "spawn_upstream_span: the client's trace" "$b" "^tid=$t1 sid=[0-9a-f]{16} pid=[0-9a-f]{16} s=1 "
up_id=$(field "$b" '\2')
server_id=$(field "$b" '\3')
[ "$up_id" != "$s1" ] && [ "$server_id" != "$s1" ] && [ "$up_id" != "$server_id" ] &&
	ok "not shared: new span ids upstream" || bad "span ids: $b"
b=$(cc "http://$us:81/root")
expect "trace_id_128bit: a new 128-bit trace" "$b" "^tid=[0-9a-f]{32} sid=[0-9a-f]{16} pid=[0-9a-f]{16} "
# (x-b3-sampled: a local reply has no x-request-id to carry the decision)
cc -o /dev/null -H "x-b3-sampled: 1" "http://$us:81/local"
wait_reports 2 3 && ok "five more spans: a second report" || bad "second report: $(wc -l <"$log") reports"
flatten
stats=$(curl -s "http://127.0.0.1:$admin_port/stats" | grep '^tracing.zipkin.')
zstat() { grep "^tracing.zipkin.$1: " <<<"$stats" | awk '{print $2}'; }
expect "report: POST" "$(report 1 method)" "^POST$"
expect "report: collector_endpoint" "$(report 1 path)" "^/api/v2/spans$"
expect "report: collector_hostname as Host" "$(report 1 host)" "^zipkin.test$"
expect "report: JSON" "$(report 1 type)" "^application/json$"
expect "report: five spans" "$(report 1 count)" "^5$"
s=$(span 1 "$t1")
expect "span: its id the client's (shared)" "$s" "\"id\":\"$s1\""
expect "span: its parent the client's parent" "$s" "\"parentId\":\"$p1\""
expect "span: kind SERVER" "$s" '"kind":"SERVER"'
expect "span: shared" "$s" '"shared":true'
expect "span: named after the authority" "$s" "\"name\":\"$us\""
expect "span: localEndpoint the node's cluster" "$s" '"localEndpoint":\{"serviceName":"test"\}'
expect "span: timestamp in microseconds" "$s" '"timestamp":1[0-9]{15},'
expect "span: its ss annotation" "$s" '"annotations":\[\{"timestamp":1[0-9]{15},"value":"ss"\}\]'
expect "tag: http.method" "$s" '"http.method":"GET"'
expect "tag: http.url" "$s" "\"http.url\":\"http://$us/a\\?q=1\""
expect "tag: http.status_code" "$s" '"http.status_code":"200"'
expect "tag: upstream_cluster" "$s" '"upstream_cluster":"echo"'
expect "tag: user_agent" "$s" '"user_agent":"ua/1"'
expect "tag: node_id" "$s" '"node_id":"arn-zpk'
expect "custom tag: request_header" "$s" '"hdr":"tagged"'
[[ "$s" == *'"zone"'* ]] && bad "an empty tag (zone) reported" || ok "an empty tag (zone) left out"
expect "span of b3: no parent" "$(span 1 "$t2")" "^\\{\"annotations\".*\"id\":\"$s2\",\"kind\""
expect "the new trace's span" "$(span 1 "$new_tid")" "\"id\":\"$new_tid\""
[ -z "$(span 1 "$t3")" ] && ok "unsampled: not reported" || bad "unsampled: reported"
expect "second report: Host the cluster's name" "$(report 2 host)" "^zipkin$"
cs=$(span 2 "$t1" CLIENT)
ss=$(span 2 "$t1" SERVER)
expect "CLIENT span: the id sent upstream" "$cs" "\"id\":\"$up_id\""
expect "CLIENT span: its parent the request's span" "$cs" "\"parentId\":\"$server_id\""
expect "CLIENT span: router <cluster> egress" "$cs" '"name":"router echo egress"'
expect "CLIENT span: its cr annotation" "$cs" '"value":"cr"'
expect "SERVER span: its own id" "$ss" "\"id\":\"$server_id\""
expect "SERVER span: its parent the client's span" "$ss" "\"parentId\":\"$s1\""
[[ "$ss" == *shared* ]] && bad "not shared: \"shared\" set" || ok "not shared: no \"shared\""
expect "a local reply's span: the decorator names it" "$(grep '^S2 ' "$flat")" '"name":"local-op"'
expect "spans_sent" "$(zstat spans_sent)" "^10$"
expect "reports_sent (202)" "$(zstat reports_sent)" "^2$"
expect "reports_dropped" "$(zstat reports_dropped)" "^0$"
expect "reports_failed" "$(zstat reports_failed)" "^0$"
expect "spans_dropped" "$(zstat spans_dropped)" "^0$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
