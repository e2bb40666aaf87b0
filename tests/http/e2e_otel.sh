#!/usr/bin/env bash
# HCM tracing end to end: curl through Arion, whose HCM traces with the
# OpenTelemetry tracer, to a node upstream that echoes the traceparent,
# tracestate and x-request-id it got, and a @grpc/grpc-js TraceService
# collector (e2e_otel.js, OpenTelemetry's .protos) that records the spans
# Arion exports: the trace continues from the client's traceparent (its
# trace id, the client's span id as parent, a new span id upstream, the
# sampled flag, tracestate on), a request without one starts a trace
# (x-request-id's trace status '9'), a malformed traceparent makes no span
# and passes unchanged, an unsampled parent's span is not exported, the
# route's decorator names its span and its random_sampling 0 is obeyed;
# the span's tags are Envoy's and the custom tags, the resource's
# service.name the configured one; batches of 5 go at once, a smaller one
# after the 5 s flush interval; the counters say so; with
# spawn_upstream_span, the upstream span (a CLIENT one, its id sent up).
# OpenTelemetry access logs to the same collector (LogsService/Export):
# a record's body and attributes, the resource, the access log's filter,
# and the queue's bound with the collector that never answers; Envoy's
# ALS (AccessLogService/StreamAccessLogs) for an HCM and a tcp_proxy.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/proto-loader" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-otl
http_e2e_topo || exit 1
log="$TOPO_DIR/spans.log"
: >"$log"
chmod 666 "$log"
chmod 755 "$TOPO_DIR"
topo_bg otel ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_otel.js" "$ub" 8083 "$log"
for i in $(seq 100); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8083" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_otel.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
span() { grep -F "\"trace_id\":\"$1\"" "$log" | head -1; }
wait_spans() { # wait_spans N SECONDS
	for i in $(seq $(($2 * 10))); do
		[ "$(wc -l <"$log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

tid=0af7651916cd43dd8448eb211c80319c
pid=b7ad6b7169203331
b=$(cc -H "traceparent: 00-$tid-$pid-01" -H "tracestate: congo=t61rcWkgMzE" \
	-H "x-tag: tagged" -H "User-Agent: ua/1" "http://$us/a/very/long/path?q=1")
expect "upstream: the trace id continues, a new span id, sampled" "$b" \
	"^tp=00-$tid-[0-9a-f]{16}-01 "
[[ "$b" == *"-$pid-"* ]] && bad "upstream: the client's span id sent on" ||
	ok "upstream: not the client's span id"
expect "upstream: tracestate on" "$b" " ts=congo=t61rcWkgMzE "
sent_span=$(sed -E 's/^tp=00-[0-9a-f]{32}-([0-9a-f]{16}).*/\1/' <<<"$b")
# a new trace: the decision (random_sampling 100) in x-request-id
b=$(cc "http://$us/new")
expect "no traceparent: a new trace, sampled" "$b" "^tp=00-[0-9a-f]{32}-[0-9a-f]{16}-01 ts=- "
expect "no traceparent: x-request-id's trace status 9 (sampled)" "$b" \
	"rid=[0-9a-f]{8}-[0-9a-f]{4}-9[0-9a-f]{3}-"
new_tid=$(sed -E 's/^tp=00-([0-9a-f]{32}).*/\1/' <<<"$b")
# malformed: Envoy's NullSpan, the header as it came
b=$(cc -H "traceparent: 00-$tid-0000000000000000-01" "http://$us/bad")
expect "a malformed traceparent: passed unchanged, no span" "$b" \
	"^tp=00-$tid-0000000000000000-01 "
# an unsampled parent: propagated with 00, not exported
uid=11111111111111111111111111111111
b=$(cc -H "traceparent: 00-$uid-$pid-00" "http://$us/unsampled")
expect "an unsampled parent: flag 00 upstream" "$b" "^tp=00-$uid-[0-9a-f]{16}-00 "
did=22222222222222222222222222222222
h="$TOPO_DIR/h"
b=$(cc -D "$h" -H "traceparent: 00-$did-$pid-01" "http://$us/deco/x")
expect "decorated route: traced" "$b" "^tp=00-$did-"
expect "decorated route: x-envoy-decorator-operation in the response" \
	"$(tr -d '\r' <"$h" | grep -i '^x-envoy-decorator-operation:')" \
	"^x-envoy-decorator-operation: deco-op$"
# an unsampled parent: the local reply has its span now (its id made as
# Envoy makes it at the head), which would take the batch's fifth place
cc -D "$h" -H "traceparent: 00-77777777777777777777777777777777-$pid-00" \
	"http://$us/decodead" >/dev/null
expect "a local reply (503) on a decorated route: x-envoy-decorator-operation" \
	"$(tr -d '\r' <"$h" | grep -i '^x-envoy-decorator-operation:')" \
	"^x-envoy-decorator-operation: dead-op$"
oid=66666666666666666666666666666666
b=$(cc -D "$h" -H "traceparent: 00-$oid-$pid-01" -H "x-envoy-decorator-operation: client-op" \
	"http://$us/deco/y")
expect "the request's x-envoy-decorator-operation: not sent on" "$b" " op=-$"
[ -z "$(tr -d '\r' <"$h" | grep -i '^x-envoy-decorator-operation:')" ] &&
	ok "the request's operation: none in the response" || bad "the request's operation: echoed"
# the route's random_sampling 0: a new trace not sampled
b=$(cc "http://$us/none/x")
expect "route random_sampling 0: not sampled" "$b" "^tp=00-[0-9a-f]{32}-[0-9a-f]{16}-00 "
expect "route random_sampling 0: x-request-id's status 4" "$b" \
	"rid=[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
# 5 sampled spans so far? 4 (/a, /new, /deco twice): one more makes a batch of 5
cc -H "traceparent: 00-44444444444444444444444444444444-$pid-01" --http2-prior-knowledge \
	"http://$us/h2" >/dev/null
wait_spans 5 3 && ok "a batch of 5 exported at once" || bad "a batch of 5: $(wc -l <"$log") spans"
s=$(span "$tid")
expect "span: its parent the client's span" "$s" "\"parent\":\"$pid\""
expect "span: its id the one sent upstream" "$s" "\"span_id\":\"$sent_span\""
expect "span: tracestate" "$s" '"trace_state":"congo=t61rcWkgMzE"'
expect "span: name ingress" "$s" '"name":"ingress"'
expect "span: kind SERVER" "$s" '"kind":"SPAN_KIND_SERVER"'
expect "span: service.name" "$s" '"service":"arion-e2e"'
expect "span: batch of 5" "$s" '"batch":5'
expect "span: initial_metadata" "$s" '"tenant":\["t1"\]'
expect "tag: component" "$s" '"component":"proxy"'
expect "tag: node_id (the bootstrap's node.id)" "$s" '"node_id":"arn-otl'
expect "tag: zone (no locality: empty)" "$s" '"zone":""'
expect "tag: http.method" "$s" '"http.method":"GET"'
expect "tag: http.status_code" "$s" '"http.status_code":"200"'
expect "tag: http.url, path bounded by max_path_tag_length" "$s" \
	"\"http.url\":\"http://$us/a/very/long\""
expect "tag: http.protocol" "$s" '"http.protocol":"HTTP/1.1"'
expect "tag: user_agent" "$s" '"user_agent":"ua/1"'
expect "tag: peer.address" "$s" '"peer.address":"198.18.2.1"'
expect "tag: upstream_cluster" "$s" '"upstream_cluster":"echo"'
expect "tag: upstream_address" "$s" '"upstream_address":"198.18.3.11:8084"'
expect "tag: response_flags" "$s" '"response_flags":"-"'
expect "tag: downstream_cluster" "$s" '"downstream_cluster":"-"'
expect "tag: guid:x-request-id" "$s" '"guid:x-request-id":"[0-9a-f-]{36}"'
expect "custom tag: literal" "$s" '"lit":"v1"'
expect "custom tag: request_header" "$s" '"hdr":"tagged"'
[[ "$s" == *'"error"'* ]] && bad "span: error on a 200" || ok "span: no error on a 200"
s=$(span "$new_tid")
expect "new trace's span: no parent" "$s" '"parent":""'
expect "new trace's span: request_header tag's default" "$s" '"hdr":"none"'
expect "decorated span: the operation" "$(span "$did")" '"name":"deco-op"'
expect "the request's operation names its span" "$(span "$oid")" '"name":"client-op"'
expect "HTTP/2 client's span" "$(span 44444444444444444444444444444444)" \
	'"http.protocol":"HTTP/2"'
[ -z "$(span "$uid")" ] && ok "unsampled: no span" || bad "unsampled: exported"
# a 5xx (the upstream refuses): error=true; fewer than 5 spans go at the
# flush interval (5 s)
cc -H "traceparent: 00-55555555555555555555555555555555-$pid-01" "http://$us/dead" >/dev/null
wait_spans 6 8 && ok "a single span after the flush interval" || bad "flush interval: no span"
s=$(span 55555555555555555555555555555555)
expect "5xx span: error" "$s" '"error":"true"'
expect "5xx span: status" "$s" '"http.status_code":"503"'
expect "5xx span: response_flags" "$s" '"response_flags":"UF"'
# two listeners with the same provider: their spans in one export
for i in 1 2 3 4 5; do
	port=80
	[ $((i % 2)) = 0 ] && port=82
	cc -H "traceparent: 00-7777777777777777777777777777777$i-$pid-01" "http://$us:$port/s" \
		>/dev/null
done
wait_spans 11 3 && ok "alternating listeners, one provider: 5 spans at once" ||
	bad "alternating listeners: $(wc -l <"$log") spans"
expect "alternating listeners: one batch of 5" "$(span 77777777777777777777777777777772)" \
	'"batch":5'
expect "spans_sent" "$(stat tracing.opentelemetry.spans_sent)" "^11$"
expect "timer_flushed" "$(stat tracing.opentelemetry.timer_flushed)" "^[1-9]"
expect "spans_dropped" "$(stat tracing.opentelemetry.spans_dropped)" "^0$"
expect "exports_failed" "$(stat tracing.opentelemetry.exports_failed)" "^0$"
expect "exports over HTTP/2" "$(stat cluster.otel.upstream_cx_http2_total)" "^[1-9]"
# spawn_upstream_span: the upstream gets its CLIENT span's id; the
# collector gets that span (parent: the request's SERVER span) and the
# SERVER span (parent: the client's), at the flush interval
b=$(cc -H "traceparent: 00-88888888888888888888888888888888-$pid-01" "http://$us:83/up")
up_span=$(sed -E 's/^tp=00-[0-9a-f]{32}-([0-9a-f]{16}).*/\1/' <<<"$b")
wait_spans 13 8 && ok "upstream span: two spans exported" || bad "upstream span: $(wc -l <"$log") spans"
cs=$(grep -F '"trace_id":"88888888888888888888888888888888"' "$log" | grep -F SPAN_KIND_CLIENT)
ss=$(grep -F '"trace_id":"88888888888888888888888888888888"' "$log" | grep -F SPAN_KIND_SERVER)
expect "upstream span: its id the one sent upstream" "$cs" "\"span_id\":\"$up_span\""
expect "upstream span: named router <cluster> egress" "$cs" '"name":"router echo egress"'
expect "upstream span: upstream_address" "$cs" '"upstream_address":"198.18.3.11:8084"'
expect "upstream span: upstream_cluster" "$cs" '"upstream_cluster":"echo"'
expect "upstream span: http.status_code" "$cs" '"http.status_code":"200"'
server_id=$(sed -E 's/.*"span_id":"([0-9a-f]{16})".*/\1/' <<<"$ss")
expect "upstream span: its parent the request's span" "$cs" "\"parent\":\"$server_id\""
expect "request's span: its parent the client's" "$ss" "\"parent\":\"$pid\""
[ -n "$server_id" ] && [ "$server_id" != "$up_span" ] && ok "request's span: not the id sent upstream" ||
	bad "request's span: id '$server_id'"
expect "spans_sent with the upstream span" "$(stat tracing.opentelemetry.spans_sent)" "^13$"
# OpenTelemetry access logs ("up"): a request with x-log is a record (its
# body and attributes from their format strings, the resource's built-in
# labels and resource_attributes) at the 0.3 s flush interval; one without
# is not (the access log's filter)
lg="$log.logs"
cc "http://$us:83/al/nolog" >/dev/null
cc -H "x-log: 1" -H "User-Agent: al/1" "http://$us:83/al/1?x=y" >/dev/null
for i in $(seq 30); do
	[ -s "$lg" ] && break
	sleep 0.1
done
sleep 0.4
r=$(grep -F '/al/1' "$lg" 2>/dev/null | head -1)
expect "access log: the body's format string expanded" "$r" '"body":"GET /al/1\?x=y 200 -"'
expect "access log: attribute ua" "$r" '"ua":"al/1"'
expect "access log: attribute up (%UPSTREAM_CLUSTER%)" "$r" '"up":"echo"'
expect "access log: resource log_name" "$r" '"log_name":"otel_envoy_accesslog"'
expect "access log: resource node_name (the bootstrap's node.id)" "$r" '"node_name":"arn-otl'
expect "access log: resource zone_name" "$r" '"zone_name":""'
expect "access log: resource_attributes" "$r" '"k8s.cluster.name":"east"'
expect "access log: time_unix_nano, the request's start" "$r" '"time":"1[0-9]{18}"'
expect "access log: the filter (no x-log, no record)" "$(wc -l <"$lg")" "^1$"
expect "access log: logs_written" "$(stat access_logs.open_telemetry_access_log.logs_written)" "^1$"
# Envoy's ALS on the same listener and request: one StreamAccessLogsMessage
# on the stream the logger opens, the identifier (node, log_name) first,
# the entry's request, response and common properties
als="$log.als"
m=$(grep -F '"als-http"' "$als" 2>/dev/null | head -1)
expect "ALS: the identifier's log_name" "$m" '"log_name":"als-http"'
expect "ALS: the identifier's node id" "$m" '"node":\{"id":"arn-otl'
expect "ALS: method" "$m" '"request_method":"GET"'
expect "ALS: path" "$m" '"path":"/al/1\?x=y"'
expect "ALS: user agent" "$m" '"user_agent":"al/1"'
expect "ALS: authority" "$m" "\"authority\":\"$us:83\""
expect "ALS: request id" "$m" '"request_id":"[0-9a-f-]{36}"'
expect "ALS: additional request header" "$m" '"request_headers":\{"x-log":"1"\}'
expect "ALS: status" "$m" '"response_code":\{"value":200\}'
expect "ALS: additional response header" "$m" '"response_headers":\{"content-length":"[0-9]+"\}'
expect "ALS: upstream cluster" "$m" '"upstream_cluster":"echo"'
expect "ALS: upstream address" "$m" '"upstream_remote_address":\{"socket_address":\{"address":"198.18.3.11","port_value":8084\}\}'
expect "ALS: protocol" "$m" '"protocol_version":"HTTP11"'
expect "ALS: access_log_type" "$m" '"access_log_type":"DownstreamEnd"'
expect "ALS: the filter (one entry)" "$(grep -o '"request_method"' "$als" | wc -l)" "^1$"
expect "ALS: logs_written" "$(stat access_logs.grpc_access_log.logs_written)" "^1$"
# Envoy keeps the logger's stream open (GrpcAccessLoggerImpl): two more
# entries, each at its flush interval, go on the same stream, their
# messages without the identifier; the OpenTelemetry logger's records
# carry the request's active span (Envoy's populateTraceContext): the
# client's trace id, the request's own span id
cc -H "x-log: 1" -H "traceparent: 00-abababababababababababababababab-$pid-01" \
	"http://$us:83/al/2" >/dev/null
sleep 0.5
cc -H "x-log: 1" "http://$us:83/al/3" >/dev/null
for i in $(seq 30); do
	[ "$(grep -c '"request_method"' "$als")" -ge 3 ] && break
	sleep 0.1
done
expect "ALS stream: three entries" "$(grep -c '"request_method"' "$als")" "^3$"
expect "ALS stream: three messages" "$(grep -c '"http_logs"' "$als")" "^3$"
expect "ALS stream: one stream for them" \
	"$(grep -F '"http_logs"' "$als" | grep -o '"stream":[0-9]*' | sort -u | wc -l)" "^1$"
expect "ALS stream: the identifier on its first message only" \
	"$(grep -F '"http_logs"' "$als" | grep -c '"identifier"')" "^1$"
expect "ALS stream: the identifier's message first" \
	"$(grep -F '"http_logs"' "$als" | head -1)" '"log_name":"als-http"'
expect "ALS stream: logs_written" "$(stat access_logs.grpc_access_log.logs_written)" "^3$"
expect "ALS stream: no failed export (the stream is open)" \
	"$(stat access_logs.grpc_access_log.exports_failed)" "^0$"
for i in $(seq 30); do
	grep -qF '/al/3' "$lg" 2>/dev/null && break
	sleep 0.1
done
r=$(grep -F '/al/2' "$lg" | head -1)
expect "access log: trace_id, the request's trace" "$r" '"trace_id":"abababababababababababababababab"'
expect "access log: span_id, the request's span" "$r" '"span_id":"[0-9a-f]{16}"'
[[ "$r" != *"\"span_id\":\"$pid\""* ]] && ok "access log: span_id not the client's" ||
	bad "access log: span_id the client's"
r=$(grep -F '/al/3' "$lg" | head -1)
expect "access log: a new trace's trace_id" "$r" '"trace_id":"[0-9a-f]{32}"'
# tcp_proxy's TCP ALS: the connection's entry, its bytes
b=$(cc "http://$us:84/tcp")
expect "tcp_proxy: the upstream answers" "$b" "^tp=-"
for i in $(seq 30); do
	grep -qF '"als-tcp"' "$als" 2>/dev/null && break
	sleep 0.1
done
m=$(grep -F '"als-tcp"' "$als" | head -1)
expect "TCP ALS: the identifier" "$m" '"log_name":"als-tcp"'
expect "TCP ALS: received bytes" "$m" '"received_bytes":"[1-9][0-9]*"'
expect "TCP ALS: sent bytes" "$m" '"sent_bytes":"[1-9][0-9]*"'
expect "TCP ALS: access_log_type" "$m" '"access_log_type":"TcpConnectionEnd"'
expect "TCP ALS: upstream cluster" "$m" '"upstream_cluster":"echo"'
# a collector that never answers: one export waits (its timeout), the
# queue keeps what its bound holds and drops the rest; every request is
# answered as ever. The access log's records (300 bytes each, x-pad) fill
# its queue's 64 KiB.
pad=$(printf 'p%.0s' $(seq 300))
codes=$(cc -H "x-pad: $pad" -o /dev/null -w '%{http_code}\n' "http://$us:81/q/[1-300]" | sort | uniq -c)
expect "never-answering collector: 300 requests answered 200" "$codes" "^ *300 200$"
d=$(stat tracing.opentelemetry.spans_dropped)
expect "never-answering collector: spans dropped past the queue's bound" "$d" "^[0-9]{3}$"
q=$((300 - 5 - d))
[ $q -le 512 ] && [ $q -ge 50 ] && ok "queue holds $q spans (<= 512, 64 KiB)" ||
	bad "queue holds $q spans"
for i in $(seq 60); do
	[ "$(stat tracing.opentelemetry.exports_failed)" -ge 1 ] && break
	sleep 0.1
done
expect "never-answering collector: the export timed out" \
	"$(stat tracing.opentelemetry.exports_failed)" "^[1-9]"
expect "never-answering collector's cluster: a timeout" \
	"$(stat cluster.hole.upstream_rq_timeout)" "^[1-9]"
w=$(stat access_logs.open_telemetry_access_log.logs_written)
ld=$(stat access_logs.open_telemetry_access_log.logs_dropped)
expect "never-answering collector: access log records dropped past the queue's bound" "$ld" "^[1-9]"
expect "never-answering collector: every record written or dropped" "$((w + ld))" "^303$"
[ $((w - 3)) -le $((16384 / 300 + 1 + 65536 / 300)) ] && ok "access log queue: at most 64 KiB held" ||
	bad "access log queue: $w written"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
