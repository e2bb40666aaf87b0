#!/usr/bin/env bash
# envoy.filters.http.lua end to end: curl (HTTP/1.1 and HTTP/2 prior
# knowledge) through Arion to a node http server (e2e_lua.js) that echoes
# the request's headers: the script's added header arrives upstream and a
# removed one does not; the response loses x-secret and gains the status
# the script read; /deny is answered by the script (403, its header and
# body) and never reaches the upstream; /loop ends on the instruction
# bound, goes upstream as it came and the next request is served; a
# route's LuaPerRoute name runs its script, disabled none; a script that
# waits for the body (body()) reads a POST's; a response script rewrites
# the response's body (body(), setBytes, gsub); a script's synchronous
# httpCall() to the same server (its answer's status, a header and body
# fields passed on upstream); a script that counts a 100 KB POST's bytes
# as they pass (bodyChunks()), the body reaching the upstream whole, and
# streams the response's body; for a GET the response script asks the
# server (httpCall()) before the head goes on; an answer the upstream
# gives before reading a 1 MB POST's body reaches the client whole (and,
# over HTTP/2, its stream's RST_STREAM NO_ERROR comes after END_STREAM),
# also when the upstream then resets its connection and the client's
# window still holds the answer back;
# the counters.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-lua
http_e2e_topo || exit 1
log="$TOPO_DIR/upstream.log"
: >"$log"
chmod 666 "$log"
topo_bg upstream ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_lua.js" "$ua" 8080 "$log"
for i in $(seq 50); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ua/8080" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_lua.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
h="$TOPO_DIR/h"
hdr() { tr -d '\r' <"$h" | grep -i "^$1:" | head -1 | sed 's/^[^:]*: //'; }

post="$TOPO_DIR/post"
head -c 1000000 /dev/zero | tr '\0' a >"$post"
chmod 644 "$post"
# nghttp -v's frames received: " HEADERS DATA DATA+END RST_STREAM(NO_ERROR)"
h2_frames() {
	awk '/ (send|recv) [A-Z_]+ frame/ { t = "" }
		/recv (HEADERS|DATA|RST_STREAM) frame/ {
			match($0, /recv [A-Z_]+/); t = substr($0, RSTART + 5, RLENGTH - 5); s = s " " t; next }
		/; END_STREAM/ && t != "" { s = s "+END" }
		/error_code=/ && t == "RST_STREAM" {
			match($0, /error_code=[A-Z_]+/); s = s "(" substr($0, RSTART + 11, RLENGTH - 11) ")" }
		END { print s }' <<<"$1"
}
for v in --http1.1 --http2-prior-knowledge; do
	p=HTTP/1.1
	[ $v = --http1.1 ] || p=HTTP/2
	body=$(cc $v -D "$h" -H 'x-drop: gone' -H 'x-stay: here' "http://$us/echo")
	expect "$v: 200" "$(head -1 "$h" | tr -d '\r')" "^HTTP/(1.1|2) 200"
	expect "$v: the script's header upstream" "$body" "\"x-lua-added\":\"by lua $p\""
	expect "$v: the client's header upstream" "$body" '"x-stay":"here"'
	[[ "$body" == *x-drop* ]] && bad "$v: x-drop reached the upstream: $body" || ok "$v: x-drop removed"
	expect "$v: x-secret removed" "$(hdr x-secret)" "^$"
	expect "$v: x-keep kept" "$(hdr x-keep)" "^kept$"
	expect "$v: the status the response script read" "$(hdr x-lua-status)" "^200$"
	n0=$(wc -l <"$log")
	body=$(cc $v -D "$h" "http://$us/deny")
	expect "$v /deny: 403" "$(head -1 "$h" | tr -d '\r')" "^HTTP/(1.1|2) 403"
	expect "$v /deny: the script's header" "$(hdr x-lua)" "^denied$"
	expect "$v /deny: the script's body" "$body" "^no entry$"
	expect "$v /deny: nothing upstream" "$(wc -l <"$log")" "^$n0$"
	body=$(cc $v -D "$h" "http://$us/loop")
	expect "$v /loop: went upstream" "$(head -1 "$h" | tr -d '\r')" "^HTTP/(1.1|2) 200"
	[[ "$body" == *x-lua-added* ]] && bad "$v /loop: edits after the loop: $body" || ok "$v /loop: as it came"
	body=$(cc $v "http://$us/named")
	expect "$v /named: its script" "$body" '"x-named":"yes"'
	[[ "$body" == *x-lua-added* ]] && bad "$v /named: the default ran too" || ok "$v /named: not the default"
	body=$(cc $v --data-binary 'payload of the post' "http://$us/lbody")
	expect "$v /lbody: the length body() read" "$body" '"x-body-len":"19"'
	expect "$v /lbody: its first bytes" "$body" '"x-body-start":"payl"'
	expect "$v /lbody: the body upstream" "$body" '"content-length":"19"'
	body=$(cc $v "http://$us/lbody")
	expect "$v /lbody: a GET's body() is nil" "$body" '"x-body-len":"0"'
	body=$(cc $v -D "$h" "http://$us/rbody")
	expect "$v /rbody: the body the response script rewrote" "$body" '[{,]host="'
	expect "$v /rbody: every %w+ name" "$body" '[{,]accept="[*]/[*]"'
	expect "$v /rbody: its count of rewrites" "$(hdr x-rewrites)" '^[0-9]+$'
	cl=$(hdr content-length)
	[ -z "$cl" ] || expect "$v /rbody: content-length the new length" "$cl" "^$((${#body} + 1))$"
	n0=$(wc -l <"$log")
	body=$(cc $v "http://$us/hcall")
	expect "$v /hcall: what the script's httpCall() got" "$body" '"x-side":"200 kept side lua 3"'
	expect "$v /hcall: the call, then the request" "$(tail -n +$((n0 + 1)) "$log" | tr '\n' ' ')" "^/side /hcall $"
	n0=$(wc -l <"$log")
	body=$(head -c 100000 /dev/zero | tr '\0' a | cc $v -D "$h" -H 'Expect:' --data-binary @- "http://$us/chunks")
	expect "$v /chunks: the bytes bodyChunks() saw" "$(hdr x-chunk-bytes)" "^100000$"
	expect "$v /chunks: the body upstream whole" "$(hdr x-body-bytes)" "^100000$"
	# The upstream answers a 1 MB POST at once, before reading its body
	# (/chunks/early, through the bodyChunks() script): the answer reaches
	# the client whole. HTTP/1.1: with connection: close, the connection
	# ending after it (Envoy's). HTTP/2 (RFC 9113 8.1, Envoy's doEndStream
	# and deferred reset): HEADERS, DATA with END_STREAM, then at most
	# RST_STREAM NO_ERROR, never before the end nor with another code.
	# nghttp shows the frames; curl 7.88 is no judge here: it fails such a
	# stream (92) once its upload resumes after the clean close (curl
	# issues 22984, 22987), whatever the server does.
	if [ $v = --http1.1 ]; then
		body=$(cc $v -D "$h" -H 'Expect:' --data-binary @"$post" "http://$us/chunks/early")
		expect "$v /chunks/early: the early answer" "$body" "^early$"
		expect "$v /chunks/early: 200" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 200"
		expect "$v /chunks/early: connection: close" "$(hdr connection)" "^close$"
	elif command -v nghttp >/dev/null; then
		o=$(ip netns exec "$cns" timeout 20 nghttp -v -d "$post" "http://$us/chunks/early" 2>&1)
		expect "$v /chunks/early: nghttp's exit" "$?" "^0$"
		expect "$v /chunks/early: the early answer" "$o" $'(^|\n)early(\n|$)'
		expect "$v /chunks/early: 200" "$o" ':status: 200'
		frames=$(h2_frames "$o")
		echo "     (its frames:$frames)"
		expect "$v /chunks/early: END_STREAM, then RST_STREAM NO_ERROR" "$frames" \
			'^ HEADERS( DATA)* DATA\+END( RST_STREAM\(NO_ERROR\))?$'
		# The same early answer (1000 bytes, connection: close, lua off)
		# from an upstream that then resets its connection (node's
		# destroy() with the POST's body unread) while the client's
		# 255-byte stream window (-w 8) still holds most of it back: its
		# end was read, so it reaches the client whole with END_STREAM,
		# as Envoy's, not cut by RST_STREAM INTERNAL_ERROR.
		o=$(ip netns exec "$cns" timeout 20 nghttp -v -w 8 -d "$post" "http://$us/off/early-rst" 2>&1)
		n=$(grep -o 'recv DATA frame <length=[0-9]*' <<<"$o" | awk -F= '{ n += $2 } END { print n + 0 }')
		expect "$v /off/early-rst: the answer whole" "$n" "^1000$"
		frames=$(h2_frames "$o")
		echo "     (its frames:$frames)"
		expect "$v /off/early-rst: END_STREAM after the upstream's reset" "$frames" \
			'^ HEADERS( DATA)* DATA\+END( RST_STREAM\(NO_ERROR\))?$'
	else
		echo "skip $v /chunks/early: no nghttp"
	fi
	n0=$(wc -l <"$log")
	body=$(cc $v -D "$h" "http://$us/chunks")
	expect "$v GET /chunks: the response script's httpCall()" "$(hdr x-rcall)" "^200$"
	expect "$v GET /chunks: the body after it" "$body" '"host":"'
	expect "$v GET /chunks: the request, then the response's call" "$(tail -n +$((n0 + 1)) "$log" | tr '\n' ' ')" "^/chunks /rside $"
	body=$(cc $v -H 'x-drop: stays' "http://$us/off")
	expect "$v /off: no script" "$body" '"x-drop":"stays"'
done
expect "errors counted" "$(stat http.lx.lua.errors)" "^2$"
expect "the instruction bound counted" "$(stat http.lx.lua.instructions_exhausted)" "^2$"
echo "     (rs_upstream_close_copied: $(stat http.lx.rs_upstream_close_copied))"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
