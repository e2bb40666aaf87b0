#!/usr/bin/env bash
# The MCP gateway's session era, server-to-client side (issue 20), end to
# end: the real binary between the official MCP TypeScript SDK's client
# (e2e_mcp_session_sdk.js) or curl and two backends made with the SDK's
# server (mcp_sdk_backend.js), its configuration over ADS
# (e2e_mcp_session.js). The GET stream and notifications/tools/list_changed
# (a backend's own, on a call's stream and on the backend session's GET
# stream the gateway holds, and a ToolSet pushed over xDS); elicitation and
# sampling requests relayed and their answers routed back; cancellation
# forwarded with progress relayed; 2024-11-05 clients on Streamable HTTP;
# 400, 404 (unknown and expired), 409 for a second GET stream; DELETE
# ending the GET stream; the limit of unanswered backend requests per
# session attacked by a backend (docs/security.md). With two workers
# (RSS spreading connections): a session's requests, GET stream, answers
# and DELETE served whichever worker each connection lands on, and an
# idle-expired session's backend sessions DELETEd.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool openssl curl node /usr/bin/python3 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@modelcontextprotocol/sdk" ] || {
	echo "tests/xds/peer/node_modules/@modelcontextprotocol/sdk missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-mcps
http_e2e_topo || exit 1

be=$ARION_SRC/tests/http/mcp_sdk_backend.js
topo_bg be-a ip netns exec "$uns" node "$be" "$ua" 9002 a
topo_wait_log "$TOPO_DIR/be-a.log" ready 20 || { echo "backend a did not start"; exit 1; }
topo_bg be-b ip netns exec "$uns" node "$be" "$ub" 9002 b
topo_wait_log "$TOPO_DIR/be-b.log" ready 20 || { echo "backend b did not start"; exit 1; }

cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
# certificates of the mTLS listener :82 (e2e_mcp_session.js reads them):
# the server's, and two clients': cops with a DNS SAN under .ops.test,
# cdev without
d="$cp_dir/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "mcp test server CA" && pki_ca cca "mcp test client CA" &&
	pki_leaf srv ca mcp.test "subjectAltName=DNS:mcp.test" &&
	pki_leaf cops cca cops "subjectAltName=URI:spiffe://arion.test/ops,DNS:bot.ops.test" &&
	pki_leaf cdev cca cdev "subjectAltName=DNS:dev.test" || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_mcp_session.js" "$cp_dir" || exit 1
# two workers, both on CPU 1: a session lives on the worker that answered
# its initialize, and RSS spreads a client's connections (each from its
# own source port) over both; the other worker hands its requests over
export HTTP_E2E_WORKERS="1, 2" ARION_EXTRA="-- --lcores 0@0,1@1,2@1"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 200); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "configuration not ACKed"; http_e2e_finish; }

# mcp BODY [SESSION [VERSION]]: POST BODY to /mcp; head to $TOPO_DIR/h, body to stdout
mcp() {
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		${2:+-H "Mcp-Session-Id: $2"} ${3:+-H "MCP-Protocol-Version: $3"} \
		--data-binary "$1" "http://$us/mcp"
}
status() { sed -n '1s/^HTTP\/1.1 \([0-9]*\).*/\1/p' "$TOPO_DIR/h"; }
init() { # init VERSION [CAPABILITIES]: a session's id
	mcp "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"$1\",\"capabilities\":${2:-{\}},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}}" >"$TOPO_DIR/init.out"
	tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip'
}
for i in $(seq 50); do sid=$(init 2025-06-18) && [ ${#sid} = 48 ] && break; sleep 0.1; done

# 1. the SDK's client: GET stream, list_changed, elicitation, sampling, cancellation
out=$(ip netns exec "$cns" timeout 60 node "$ARION_SRC/tests/http/e2e_mcp_session_sdk.js" "http://$us/mcp" "$cp_dir" 2>&1)
sv() { echo "$out" | /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('$1'))" 2>/dev/null; }
[ "$(sv names1)" = "a__ask,a__flood,a__grow,a__hidden,a__later,a__muse,a__slow,b__ask,b__flood,b__grow,b__hidden,b__later,b__muse,b__slow" ] &&
	ok "the SDK client lists both SDK backends' tools (session $(sv session), $(sv version))" || bad "SDK client: $out"
[ "$(stat http.mcp.mcp_get_stream)" -ge 1 ] && ok "its GET stream was accepted" ||
	bad "GET streams: $(stat http.mcp.mcp_get_stream) / $out"
[ "$(sv ask)" = "a:hello arion" ] && [ "$(sv elicit_message)" = "your name?" ] &&
	ok "a backend's elicitation/create reached the client, its answer went back to that backend" ||
	bad "elicitation: $(sv ask) / $(sv elicit_message) / $out"
[ "$(sv muse)" = "b:pong" ] && ok "a backend's sampling/createMessage reached the client and was answered" ||
	bad "sampling: $(sv muse)"
[ "$(stat http.mcp.mcp_relayed_request)" = 2 ] && [ "$(stat http.mcp.mcp_reply_forwarded)" = 2 ] &&
	ok "counted: 2 requests relayed, 2 answers forwarded" ||
	bad "relayed $(stat http.mcp.mcp_relayed_request) forwarded $(stat http.mcp.mcp_reply_forwarded)"
for i in $(seq 50); do grep -q '^cancelled slow' "$TOPO_DIR/be-a.log" && break; sleep 0.1; done
[ "$(sv progress)" = 1 ] && [ "$(sv cancel)" = aborted ] && grep -q '^cancelled slow' "$TOPO_DIR/be-a.log" &&
	[ "$(stat http.mcp.mcp_cancelled)" = 1 ] &&
	ok "progress relayed; notifications/cancelled reached the backend running the call" ||
	bad "cancel: progress $(sv progress) $(sv cancel) cancelled $(stat http.mcp.mcp_cancelled) / $(tail -3 "$TOPO_DIR/be-a.log")"
[ "$(sv grow)" = "b:grown" ] && [ "$(sv grow_changed)" = True ] && echo "$(sv names2)" | grep -q 'b__extra' &&
	ok "a backend's own tools/list_changed reached the client; the new tool is listed" ||
	bad "backend list_changed: $(sv grow_changed) $(sv names2)"
[ "$(sv later)" = "a:later" ] && [ "$(sv later_changed)" = True ] && echo "$(sv names_late)" | grep -q 'a__late' &&
	[ "$(stat http.mcp.mcp_backend_list_changed)" -ge 1 ] &&
	ok "a tool registered after connect: list_changed on the backend session's GET stream reached the client ($(stat http.mcp.mcp_backend_list_changed) relayed)" ||
	bad "list_changed outside a request: $(sv later) $(sv later_changed) $(sv names_late) backend_list_changed $(stat http.mcp.mcp_backend_list_changed) opened $(stat http.mcp.mcp_backend_get_opened)"
[ "$(stat http.mcp.mcp_backend_get_opened)" -ge 2 ] &&
	ok "the client's GET stream held one to each backend session ($(stat http.mcp.mcp_backend_get_opened) opened)" ||
	bad "backend GET streams opened: $(stat http.mcp.mcp_backend_get_opened)"
[ "$(sv push_changed)" = True ] && ! echo "$(sv names3)" | grep -q hidden &&
	ok "a ToolSet pushed over xDS: tools/list_changed on the GET stream, the denied tools gone" ||
	bad "pushed ToolSet: $(sv push_changed) $(sv names3)"
[ -n "$(sv names4)" ] && [ "$(sv names4)" != None ] &&
	ok "an open GET stream keeps its session past session_idle_timeout" || bad "idle with GET: $out"
# the SDK client's DELETE (terminateSession) reached both backends' sessions
for i in $(seq 50); do grep -q '^delete ' "$TOPO_DIR/be-b.log" && break; sleep 0.1; done
grep -q '^delete ' "$TOPO_DIR/be-a.log" && grep -q '^delete ' "$TOPO_DIR/be-b.log" &&
	ok "DELETE ended the session at both backends too" ||
	bad "backends' DELETE: $(grep -c '^delete' "$TOPO_DIR/be-a.log") $(grep -c '^delete' "$TOPO_DIR/be-b.log")"
for i in $(seq 50); do [ "$(stat http.mcp.mcp_backend_get_active)" = 0 ] && break; sleep 0.1; done
[ "$(stat http.mcp.mcp_backend_get_active)" = 0 ] && ok "the session ended: no backend GET stream left open" ||
	bad "backend GET streams still open: $(stat http.mcp.mcp_backend_get_active)"
[ "$(stat http.mcp.mcp_list_changed)" -ge 2 ] && ok "list_changed sent on GET streams: $(stat http.mcp.mcp_list_changed)" ||
	bad "list_changed: $(stat http.mcp.mcp_list_changed)"

# 2. 2024-11-05 on Streamable HTTP, negotiated per client
sid=$(init 2024-11-05)
grep -q '"protocolVersion":"2024-11-05"' "$TOPO_DIR/init.out" && [ ${#sid} = 48 ] &&
	ok "a 2024-11-05 client gets 2024-11-05" || bad "2024-11-05 initialize: $(cat "$TOPO_DIR/init.out")"
out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__grow","arguments":{}}}' "$sid")
echo "$out" | grep -q '"text":"a:grown"' && ok "its tools/call reaches a backend (no MCP-Protocol-Version, as 2024-11-05 sends)" ||
	bad "2024-11-05 call: $out"
out=$(mcp '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' "$sid" 2025-06-18)
[ "$(status)" = 400 ] && ok "MCP-Protocol-Version other than the session's: 400" || bad "version mismatch: $(status) $out"

# 3. 400, 404 (unknown, expired)
out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
[ "$(status)" = 400 ] && echo "$out" | grep -q '"code":-32000' && ok "no Mcp-Session-Id: 400" || bad "missing session: $(status) $out"
out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' 000000000000000000000000000000000000000000000000)
[ "$(status)" = 404 ] && echo "$out" | grep -q '"code":-32001' && ok "an unknown session: 404" || bad "unknown session: $(status) $out"
sid=$(init 2025-06-18)
sleep 3.5
out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$sid")
[ "$(status)" = 404 ] && ok "a session idle past session_idle_timeout: 404" || bad "expired session: $(status) $out"

# 4. GET streams: one per session (409), ended by DELETE
sid=$(init 2025-06-18)
ip netns exec "$cns" curl -sS -N --max-time 20 -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $sid" \
	-D "$TOPO_DIR/get.h" "http://$us/mcp" >"$TOPO_DIR/get.out" 2>&1 &
getpid=$!
for i in $(seq 50); do [ -s "$TOPO_DIR/get.h" ] && break; sleep 0.1; done
grep -qi '^content-type: text/event-stream' "$TOPO_DIR/get.h" && ok "GET with a session: an event stream" ||
	bad "GET stream: $(cat "$TOPO_DIR/get.h")"
code=$(cc -o /dev/null -w '%{http_code}' -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $sid" "http://$us/mcp")
[ "$code" = 409 ] && ok "a second GET stream for the session: 409 (limit: one per session)" || bad "second GET: $code"
code=$(cc -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $sid" "http://$us/mcp")
t0=$(date +%s)
wait $getpid
getrc=$?
[ "$code" = 200 ] && [ $getrc = 0 ] && [ $(($(date +%s) - t0)) -lt 10 ] &&
	ok "DELETE ended the session and its GET stream (cleanly)" || bad "DELETE: $code, GET curl $getrc"

# 5. the limit of unanswered backend requests per session, attacked by a backend
sid=$(init 2025-06-18 '{"elicitation":{}}')
out=$(mcp '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a__flood","arguments":{}}}' "$sid")
relayed=$(echo "$out" | grep -c '"method":"elicitation/create"')
echo "$out" | grep -q '"text":"a:flood 4 refused"' && [ "$relayed" = 16 ] && [ "$(stat http.mcp.mcp_pending_full)" = 4 ] &&
	ok "a backend asking 20 times at once: 16 relayed (ARN_MCP_MAX_PENDING), 4 refused to it" ||
	bad "flood: relayed $relayed, pending_full $(stat http.mcp.mcp_pending_full): $(echo "$out" | tail -3)"
out=$(mcp '{"jsonrpc":"2.0","id":"arn.0.12345","result":{"action":"accept","content":{}}}' "$sid")
[ "$(status)" = 202 ] && [ "$(stat http.mcp.mcp_reply_dropped)" -ge 1 ] &&
	ok "an answer to nothing the gateway relayed is dropped (202, not forwarded)" || bad "stray answer: $(status) $out"

# 6. two workers: one session's requests, each on a connection of its own
# (a new source port, so RSS puts about half on the other worker)
sid=$(init 2025-06-18)
n=0
for i in $(seq 16); do
	out=$(mcp "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/list\"}" "$sid")
	[ "$(status)" = 200 ] && echo "$out" | grep -q '"a__ask"' && echo "$out" | grep -q "\"id\":$i," &&
		n=$((n + 1))
done
[ $n = 16 ] && [ "$(stat http.mcp.mcp_handoff_out)" -ge 1 ] && [ "$(stat http.mcp.mcp_handoff_in)" -ge 1 ] &&
	[ "$(stat http.mcp.mcp_handoff_dropped)" = 0 ] &&
	ok "16 connections of one session over 2 workers: all served ($(stat http.mcp.mcp_handoff_out) handed to the session's worker)" ||
	bad "across workers: $n of 16, handed $(stat http.mcp.mcp_handoff_out)/$(stat http.mcp.mcp_handoff_in), dropped $(stat http.mcp.mcp_handoff_dropped): $out"
# 6b. the same over mTLS (:82, ToolSet tools3): the client certificate's
# SANs go with a request handed to the session's worker, where
# client_cert_san admits a__muse (only a DNS SAN under .ops.test)
mcp3() { # mcp3 CLIENT BODY [SESSION]
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		--cacert "$d/ca.pem" --cert "$d/$1.pem" --key "$d/$1.key" --resolve "mcp.test:82:$us" \
		${3:+-H "Mcp-Session-Id: $3"} ${3:+-H 'MCP-Protocol-Version: 2025-06-18'} \
		--data-binary "$2" "https://mcp.test:82/mcp"
}
mcp3 cops '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' >/dev/null
sid3=$(tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip')
n=0
for i in $(seq 12); do
	out=$(mcp3 cops "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/list\"}" "$sid3")
	[ "$(status)" = 200 ] && echo "$out" | grep -q '"a__muse"' && n=$((n + 1))
done
[ $n = 12 ] && [ "$(stat http.mcp3.mcp_handoff_out)" -ge 1 ] &&
	ok "mTLS, 12 connections of one session over 2 workers: a__muse listed by its DNS SAN every time ($(stat http.mcp3.mcp_handoff_out) handed over)" ||
	bad "client_cert_san across workers: $n of 12, handed $(stat http.mcp3.mcp_handoff_out): $out"
mcp3 cdev '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' >/dev/null
sid4=$(tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip')
n=0
for i in $(seq 6); do
	out=$(mcp3 cdev "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/list\"}" "$sid4")
	[ "$(status)" = 200 ] && echo "$out" | grep -q '"a__ask"' && ! echo "$out" | grep -q '"a__muse"' && n=$((n + 1))
done
[ $n = 6 ] && ok "mTLS: a certificate without such a SAN never lists a__muse" ||
	bad "client_cert_san, other client: $n of 6: $out"
alog=$cp_dir/access.log
g0=$(cat "$alog" 2>/dev/null | grep -c '^POST 200 tool=a__grow backend=a$')
k=0
for i in $(seq 4); do
	sid=$(init 2025-06-18)
	ip netns exec "$cns" curl -sS -N --max-time 20 -H 'Accept: text/event-stream' -H "Mcp-Session-Id: $sid" \
		-D "$TOPO_DIR/get$i.h" "http://$us/mcp" >"$TOPO_DIR/get$i.out" 2>&1 &
	getpid=$!
	for j in $(seq 50); do [ -s "$TOPO_DIR/get$i.h" ] && break; sleep 0.1; done
	out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__grow","arguments":{}}}' "$sid")
	code=$(cc -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $sid" "http://$us/mcp")
	wait $getpid
	getrc=$?
	grep -qi '^content-type: text/event-stream' "$TOPO_DIR/get$i.h" && echo "$out" | grep -q '"text":"a:grown"' &&
		[ "$code" = 200 ] && [ $getrc = 0 ] && k=$((k + 1))
done
[ $k = 4 ] && ok "GET stream, call and DELETE of a session on three connections: served, DELETE ended the GET stream" ||
	bad "GET/DELETE across workers: $k of 4 ($code, $getrc, $out)"
# each of those 4 calls, served by either worker (a handed-over one logs
# on the worker its client reached), names its tool and backend
for i in $(seq 50); do [ "$(grep -c '^POST 200 tool=a__grow backend=a$' "$alog")" -ge $((g0 + 4)) ] && break; sleep 0.1; done
[ "$(grep -c '^POST 200 tool=a__grow backend=a$' "$alog")" -ge $((g0 + 4)) ] &&
	ok "the access log names the tool and backend of each call, handed over or not" ||
	bad "access log across workers: $g0 -> $(grep -c '^POST 200 tool=a__grow backend=a$' "$alog") a__grow lines: $(tail -12 "$alog")"
# an idle session that opened backend sessions: they are DELETEd when it expires
sid=$(init 2025-06-18)
d0=$(grep -c '^delete ' "$TOPO_DIR/be-a.log")
out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$sid")
for i in $(seq 60); do [ "$(grep -c '^delete ' "$TOPO_DIR/be-a.log")" -gt "$d0" ] && break; sleep 0.1; done
[ "$(grep -c '^delete ' "$TOPO_DIR/be-a.log")" -gt "$d0" ] && [ "$(stat http.mcp.mcp_session_expired)" -ge 1 ] &&
	[ "$(stat http.mcp.mcp_backend_session_deleted)" -ge 2 ] &&
	ok "a session expired by idling DELETEd its backend sessions ($(stat http.mcp.mcp_backend_session_deleted) DELETEs)" ||
	bad "idle expiry: deletes $d0 -> $(grep -c '^delete ' "$TOPO_DIR/be-a.log"), expired $(stat http.mcp.mcp_session_expired), deleted $(stat http.mcp.mcp_backend_session_deleted)"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
