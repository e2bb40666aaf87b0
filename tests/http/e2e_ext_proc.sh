#!/usr/bin/env bash
# External processing end to end: curl through Arion's
# envoy.filters.http.ext_proc whose grpc_service (envoy_grpc) is a
# @grpc/grpc-js ExternalProcessor reading Envoy's own .protos
# (e2e_ext_proc.js): what the processor received (request_headers with
# the pseudo-headers and the client's fields, end_of_stream, the
# initial_metadata) is what Envoy sends; its header mutations reach the
# upstream (x-user set, x-a appended, x-drop removed; host refused by the
# mutation rules); its immediate response answers the client (403, its
# header, body and details); a stream that fails answers 500
# ext_proc_error_gRPC_error_14; the filter disabled on a route opens no
# stream; an HTTP/2 client likewise; on a route whose processing_mode
# sends the response's headers too, the upstream's head goes to the
# processor (response_headers, :status and its fields) and comes to the
# client with its mutations (:status 202, x-proc set, x-secret removed),
# the body after it; on a route with request_body_mode BUFFERED the
# body goes to the processor whole (request_body, end_of_stream) and its
# body_mutation replaces it upstream, content-length the new length
# (HTTP/1.1 with a length, HTTP/2; a chunked request stays chunked, as
# Envoy's); with response_body_mode
# BUFFERED the upstream's body goes to the processor whole after its head
# and the client gets the processor's body with its length;
# clear_route_cache with the processor's x-ai-eg-model routes the request
# again (Envoy AI Gateway's way), its absence keeps the route; the
# router's 503 on a route whose processor waits for the response goes
# to no processor, counted in local_replies_unprocessed; an SSE
# completion whose response head the processor answers with
# mode_override {response_body_mode: STREAMED} (Envoy AI Gateway's way)
# reaches the client piece by piece, each rewritten, chunked without a
# length (HTTP/1.1) or as HTTP/2 DATA; the counters say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/proto-loader" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-epg
http_e2e_topo || exit 1
log="$TOPO_DIR/calls.log"
: >"$log"
chmod 666 "$log"
chmod 755 "$TOPO_DIR"
topo_bg proc ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_ext_proc.js" "$ub" 8081 "$log"
for i in $(seq 100); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8081" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_ext_proc.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
hdr() { tr -d '\r' <"$1" | grep -i "^$2:" | head -1; }

h="$TOPO_DIR/h"
body=$(cc -D "$h" -H "X-A: 1" -H "X-Drop: d" -H "X-User: mallory" "http://$us/echo/1?q=1")
expect "mutated: x-user set, x-drop removed, x-a appended, host kept" "$body" \
	"^got alice - 1[|]2 $us$"
expect "mutated: 200" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 200"
c=$(head -1 "$log")
expect "message: request_headers" "$c" '"kind":"request_headers"'
expect "message: :path" "$c" '":path":"/echo/1\?q=1"'
expect "message: :method" "$c" '":method":"GET"'
expect "message: :authority (the client's Host)" "$c" "\":authority\":\"$us\""
expect "message: :scheme" "$c" '":scheme":"http"'
expect "message: the client's field, lower-cased" "$c" '"x-drop":"d"'
expect "message: end_of_stream (no body)" "$c" '"eos":true'
expect "message: initial_metadata" "$c" '"tenant":"t1"'
[[ "$c" == *'"host"'* ]] && bad "message: host sent as a field" || ok "message: no host field"
body=$(cc -D "$h" "http://$us/deny/x")
expect "immediate response: 403" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 403"
expect "immediate response: its header" "$(hdr "$h" x-why)" "x-why: denied"
expect "immediate response: its body" "$body" "^denied by processor$"
body=$(cc -D "$h" -X POST -d 'abc' "http://$us/echo/post")
expect "a request with a body: through" "$body" "^got alice - 2 "
c=$(sed -n 3p "$log")
expect "message: end_of_stream false with a body" "$c" '"eos":false'
cc -D "$h" "http://$us/fail/x" >/dev/null
expect "a failed stream: 500" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 500"
expect "disabled on the route: no stream, through" "$(cc "http://$us/open/x")" "^got - - "
body=$(cc --http2-prior-knowledge -D "$h" "http://$us/echo/h2")
expect "an HTTP/2 client: mutated" "$body" "^got alice - 2 "
expect "streams the processor received" "$(wc -l <"$log")" "^5$"
expect "streams_started" "$(stat http.ep.ext_proc.streams_started)" "^5$"
expect "stream_msgs_received" "$(stat http.ep.ext_proc.stream_msgs_received)" "^4$"
expect "streams_failed" "$(stat http.ep.ext_proc.streams_failed)" "^1$"
expect "rejected_header_mutations (host, 3 times)" \
	"$(stat http.ep.ext_proc.rejected_header_mutations)" "^3$"
expect "the streams went over HTTP/2" "$(stat cluster.proc.upstream_cx_http2_total)" "^[1-9]"
body=$(cc -D "$h" "http://$us/resp/x")
expect "response headers: the body after the held head" "$body" "^got alice - "
expect "response headers: :status mutated" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 202"
expect "response headers: x-proc set" "$(hdr "$h" x-proc)" "x-proc: seen"
expect "response headers: x-secret removed" "$(hdr "$h" x-secret)" "^$"
c=$(sed -n 7p "$log")
expect "message: response_headers" "$c" '"kind":"response_headers"'
expect "message: :status" "$c" '":status":"200"'
expect "message: the upstream's field" "$c" '"x-secret":"s"'
body=$(cc --http2-prior-knowledge -D "$h" "http://$us/resp/h2")
expect "response headers, HTTP/2 client: mutated" "$(hdr "$h" x-proc)" "x-proc: seen"
expect "response headers, HTTP/2 client: body" "$body" "^got alice - "
expect "stream_msgs_sent (2 a /resp request)" "$(stat http.ep.ext_proc.stream_msgs_sent)" "^9$"
expect "stream_msgs_received (2 a /resp request)" \
	"$(stat http.ep.ext_proc.stream_msgs_received)" "^8$"
body=$(cc -D "$h" -X POST --data-binary 'hello body' "http://$us/body/1")
expect "request body: replaced upstream, content-length its length" "$body" \
	"len=22 x-body-len=10 body=HELLO BODY \[processed\]$"
c=$(grep '"kind":"request_body"' "$log" | head -1)
expect "message: request_body, whole, end_of_stream" "$c" '"eos":true,"body":"hello body"'
body=$(cc -D "$h" -X POST -H "Transfer-Encoding: chunked" --data-binary 'abc' "http://$us/body/2")
expect "request body, chunked: chunked still, as Envoy's" "$body" \
	"len=chunked x-body-len=3 body=ABC \[processed\]$"
body=$(cc --http2-prior-knowledge -D "$h" -X POST --data-binary 'h2 body' "http://$us/body/3")
expect "request body, HTTP/2 client: replaced" "$body" "body=H2 BODY \[processed\]$"
expect "stream_msgs_sent (2 a /body request)" "$(stat http.ep.ext_proc.stream_msgs_sent)" "^15$"
body=$(cc -D "$h" "http://$us/rbody/1")
expect "response body: replaced" "$body" "^got alice - .* \[resp\]$"
expect "response body: the head's mutations" "$(hdr "$h" x-proc)" "x-proc: seen"
expect "response body: content-length the new length" "$(hdr "$h" content-length)" \
	"content-length: $((${#body} + 1))"
c=$(grep '"kind":"response_body"' "$log" | head -1)
expect "message: response_body, whole, end_of_stream" "$c" '"eos":true,"body":"got alice'
body=$(cc --http2-prior-knowledge -D "$h" "http://$us/rbody/h2")
expect "response body, HTTP/2 client: replaced" "$body" "^got alice - .* \[resp\]$"
expect "stream_msgs_sent (3 a /rbody request)" "$(stat http.ep.ext_proc.stream_msgs_sent)" "^21$"
body=$(cc -D "$h" "http://$us/model/chat")
expect "clear_route_cache: routed again on the processor's header" "$body" \
	"^routed on the model m2$"
body=$(cc -D "$h" "http://$us/model-keep/chat")
expect "no clear_route_cache: the route the client's headers matched" "$body" "^got - - "
n0=$(wc -l <"$log")
cc -D "$h" "http://$us/none/x" >/dev/null
expect "the router's 503 after the filter (no endpoint)" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 503"
expect "the router's 503: not sent to the processor (request_headers alone)" \
	"$(($(wc -l <"$log") - n0))" "^1$"
expect "local_replies_unprocessed (the router's 503)" \
	"$(stat http.ep.ext_proc.local_replies_unprocessed)" "^1$"
n0=$(grep -c '"kind":"response_body"' "$log")
body=$(cc -N -D "$h" "http://$us/sse/1")
expect "streamed: every event rewritten, in order" "$(echo "$body" | tr '\n' '|')" \
	"^DATA: ONE[|][|]DATA: TWO[|][|]DATA: \[DONE\][|]$"
expect "streamed: chunked, no length" "$(hdr "$h" transfer-encoding)" "chunked"
expect "streamed: the pieces went one by one, the end's last" \
	"$(grep '"kind":"response_body"' "$log" | tail -n +$((n0 + 1)) | sed 's/.*"eos":\([a-z]*\),"body":"\([^"]*\)".*/\1 \2/' | tr '\n' '|')" \
	'^false data: one\\n\\n[|]false data: two\\n\\n[|]false data: \[DONE\]\\n\\n[|]true [|]$'
body=$(cc -N --http2-prior-knowledge "http://$us/sse/h2")
expect "streamed, HTTP/2 client: rewritten" "$(echo "$body" | tr '\n' '|')" \
	"^DATA: ONE[|][|]DATA: TWO[|][|]DATA: \[DONE\][|]$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
