#!/usr/bin/env bash
# The MCP gateway end to end (issue 20): the real binary between curl and
# two MCP backends (tests/http/mcp_backend.py: 'a' answers JSON, 'b' an
# event stream), its listener, clusters and ToolSet over ADS
# (e2e_mcp.js). tools/list aggregates both backends' tools (prefixed,
# the denied one left out), tools/call reaches the backend that owns the
# tool (each backend's own session opened by the gateway), and a denied
# tool is refused without reaching any backend. A second listener (:81,
# ToolSet 'tools2', issue 20 item 6) covers name collisions (ON_COLLISION),
# an access rule keyed by a request header, and backend b killed mid-call.
# A third (:82, mTLS, ToolSet 'tools3') has access rules keyed by the
# client certificate's URI and DNS SANs (client_cert_san).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node openssl /usr/bin/python3 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-mcp
http_e2e_topo || exit 1

be=$ARION_SRC/tests/http/mcp_backend.py
topo_bg be-a ip netns exec "$uns" /usr/bin/python3 "$be" "$ua" 9001 a add,secret
topo_wait_log "$TOPO_DIR/be-a.log" ready 10 || { echo "backend a did not start"; exit 1; }
topo_bg be-b ip netns exec "$uns" /usr/bin/python3 "$be" "$ub" 9001 b search,secret sse
be_b_pid=$TOPO_PID # ip netns exec execs: the Python process itself
topo_wait_log "$TOPO_DIR/be-b.log" ready 10 || { echo "backend b did not start"; exit 1; }

cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
# certificates of :82 (e2e_mcp.js reads them): the server's, and clients'
# of a client CA: cops has the URI and a DNS SAN tools3's rules name, cdev
# neither (and its CN is under .ops.test: a subject is no SAN)
d="$cp_dir/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "mcp test server CA" && pki_ca cca "mcp test client CA" &&
	pki_leaf srv ca mcp.test "subjectAltName=DNS:mcp.test" &&
	pki_leaf cops cca cops "subjectAltName=URI:spiffe://arion.test/ops,DNS:bot.ops.test" &&
	pki_leaf cdev cca dev.ops.test "subjectAltName=DNS:dev.test,URI:spiffe://arion.test/dev" ||
	{ echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_mcp.js" "$cp_dir" || exit 1
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 200); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "configuration not ACKed"; http_e2e_finish; }

# mcp BODY [SESSION]: POST BODY to /mcp; the response's head goes to
# $TOPO_DIR/h, its body to stdout
mcp() {
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		${2:+-H "Mcp-Session-Id: $2"} ${2:+-H 'MCP-Protocol-Version: 2025-06-18'} \
		--data-binary "$1" "http://$us/mcp"
}

for i in $(seq 50); do
	out=$(mcp '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}' 2>&1) && break
	sleep 0.1
done
sid=$(tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip')
[ ${#sid} = 48 ] && echo "$out" | grep -q '"protocolVersion":"2025-06-18"' &&
	ok "initialize answered by the gateway, session $sid" || bad "initialize: $out / $(cat "$TOPO_DIR/h")"
out=$(mcp '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$sid")
grep -q '^HTTP/1.1 202' "$TOPO_DIR/h" && ok "notifications/initialized: 202" || bad "initialized: $(cat "$TOPO_DIR/h")"

out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$sid")
names=$(echo "$out" | /usr/bin/python3 -c 'import json,sys; print(",".join(t["name"] for t in json.load(sys.stdin)["result"]["tools"]))' 2>&1)
[ "$names" = "a__add,b__search" ] && ok "tools/list aggregates both backends, the denied tool left out: $names" ||
	bad "tools/list: $names / $out"

out=$(mcp '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__add","arguments":{"x":1}}}' "$sid")
echo "$out" | grep -q '"id":3,"result":{"content":\[{"type":"text","text":"a:add:{\\"x\\": 1}"}\]}' &&
	ok "tools/call a__add reaches backend a (JSON answer)" || bad "tools/call a__add: $out"
out=$(mcp '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"b__search","arguments":{}}}' "$sid")
echo "$out" | grep -q '"id":4,"result":{"content":\[{"type":"text","text":"b:search:{}"}\]}' &&
	ok "tools/call b__search reaches backend b (event-stream answer)" || bad "tools/call b__search: $out"
grep -qi '^content-type: text/event-stream' "$TOPO_DIR/h" && echo "$out" | grep -q '"method":"notifications/progress"' &&
	ok "its progress notification is relayed on an event stream" || bad "b__search stream: $(cat "$TOPO_DIR/h") $out"

calls_before=$(stat cluster.ma.upstream_rq_total)
out=$(mcp '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a__secret","arguments":{}}}' "$sid")
echo "$out" | grep -q '"code":-32602' && [ "$(stat cluster.ma.upstream_rq_total)" = "$calls_before" ] &&
	ok "a denied tool is refused (-32602) without reaching the backend" || bad "denied tool: $out"

[ "$(stat http.mcp.mcp_tools_call)" = 2 ] && [ "$(stat http.mcp.mcp_tool_unknown)" = 1 ] &&
	[ "$(stat mcp.tools.backend.a.tools_call)" = 1 ] && [ "$(stat mcp.tools.backend.b.tools_call)" = 1 ] &&
	ok "counted: 2 calls routed (one per backend), 1 unknown" ||
	bad "stats: calls $(stat http.mcp.mcp_tools_call) unknown $(stat http.mcp.mcp_tool_unknown)"
# per tool, pulled from the worker's table; the refused tool has no row
[ "$(stat mcp.tools.tool.a__add.calls)" = 1 ] && [ "$(stat mcp.tools.tool.b__search.calls)" = 1 ] &&
	[ "$(stat mcp.tools.tool.a__add.errors)" = 0 ] && [ "$(stat mcp.tools.tool.a__secret.calls)" = 0 ] &&
	[ "$(stat mcp.tool_stats.0.rows)" = 2 ] &&
	ok "per-tool statistics: one call each of a__add and b__search, none of the refused tool" ||
	bad "per-tool stats: $(curl -s "http://127.0.0.1:$admin_port/stats" | grep -E '^mcp\.(tools\.tool|tool_stats)')"
# the tool and the backend in the access log (%MCP_TOOL%, %MCP_BACKEND%)
for i in $(seq 50); do grep -q 'tool=b__search' "$cp_dir/access.log" 2>/dev/null && break; sleep 0.1; done
grep -q '^200 tool=a__add backend=a$' "$cp_dir/access.log" && grep -q '^200 tool=b__search backend=b$' "$cp_dir/access.log" &&
	grep -q '^200 tool=a__secret backend=-$' "$cp_dir/access.log" &&
	ok "the access log names the tool and its backend" || bad "access log: $(cat "$cp_dir/access.log" 2>&1)"

# the official SDK's client, when tests/xds/peer has it (scripts/setup-deps --test)
if [ -d "$ARION_SRC/tests/xds/peer/node_modules/@modelcontextprotocol/sdk" ]; then
	out=$(ip netns exec "$cns" timeout 30 node "$ARION_SRC/tests/http/e2e_mcp_sdk.js" "http://$us/mcp" 2>&1)
	sv() { echo "$out" | /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('$1'))" 2>/dev/null; }
	[ "$(sv names)" = "a__add,b__search" ] && [ "$(sv a)" = 'a:add:{"x": 2}' ] &&
		[ "$(sv b)" = 'b:search:{"q": "z"}' ] && [ "$(sv denied)" = -32602 ] &&
		ok "the MCP SDK's client: session $(sv session) at $(sv version), tools listed, both calls routed, the denied tool refused" ||
		bad "the MCP SDK's client: $out"
	[ "$(stat http.mcp.mcp_session_closed)" = 1 ] && ok "its DELETE ended the session" ||
		bad "sessions closed: $(stat http.mcp.mcp_session_closed)"
else
	echo "skip the SDK client: tests/xds/peer/node_modules/@modelcontextprotocol/sdk missing"
fi
# ToolSet 'tools2' on :81 (e2e_mcp.js): prefix_mode ON_COLLISION, 'add'
# only for x-team: ops. mcp2 BODY SESSION [HEADER] as mcp, there.
mcp2() {
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' ${3:+-H "$3"} \
		${2:+-H "Mcp-Session-Id: $2"} ${2:+-H 'MCP-Protocol-Version: 2025-06-18'} \
		--data-binary "$1" "http://$us:81/mcp"
}
# mcp2_open [HEADER]: a new session on :81, its id on stdout
mcp2_open() {
	mcp2 '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e2","version":"1"}}}' "" "${1:-}" >/dev/null
	local s
	s=$(tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip')
	mcp2 '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$s" "${1:-}" >/dev/null
	echo "$s"
}
tool_names() { /usr/bin/python3 -c 'import json,sys; print(",".join(sorted(t["name"] for t in json.load(sys.stdin)["result"]["tools"])))' 2>&1; }
sid2=$(mcp2_open)
sid3=$(mcp2_open 'x-team: ops')

# issue 20 item 6, name collisions: both backends list 'secret'; with
# ON_COLLISION only it is prefixed, and each prefixed name reaches its own
# backend (b's answer an event stream)
out=$(mcp2 '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$sid3" 'x-team: ops')
names=$(echo "$out" | tool_names)
[ "$names" = "a__secret,add,b__secret,search" ] &&
	ok "ON_COLLISION: the colliding tool listed prefixed for each backend, the others as they are: $names" ||
	bad "ON_COLLISION tools/list: $names / $out"
out=$(mcp2 '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__secret","arguments":{}}}' "$sid2")
out_b=$(mcp2 '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"b__secret","arguments":{}}}' "$sid2")
echo "$out" | grep -q '"id":3,"result":{"content":\[{"type":"text","text":"a:secret:{}"}\]}' &&
	echo "$out_b" | grep -q '"id":4,"result":{"content":\[{"type":"text","text":"b:secret:{}"}\]}' &&
	ok "ON_COLLISION: a__secret reaches a and b__secret reaches b, as 'secret'" ||
	bad "ON_COLLISION calls: $out / $out_b"

# issue 20 item 6, access rules: 'add' is for x-team: ops only; without
# the header it is not listed and a call is refused as an unknown tool
# without reaching backend a
out=$(mcp2 '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' "$sid2")
names=$(echo "$out" | tool_names)
[ "$names" = "a__secret,b__secret,search" ] && ok "access rule: 'add' hidden from a client without x-team: ops" ||
	bad "access rule tools/list without the header: $names / $out"
calls_before=$(stat cluster.ma.upstream_rq_total)
out=$(mcp2 '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","arguments":{}}}' "$sid2")
echo "$out" | grep -q '"id":6,"error":{"code":-32602' && [ "$(stat cluster.ma.upstream_rq_total)" = "$calls_before" ] &&
	[ "$(stat http.mcp2.mcp_tool_forbidden)" = 1 ] &&
	ok "access rule: a call of 'add' without the header is refused (-32602) without reaching a" ||
	bad "access rule call without the header: $out (forbidden $(stat http.mcp2.mcp_tool_forbidden))"
out=$(mcp2 '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"x":3}}}' "$sid3" 'x-team: ops')
echo "$out" | grep -q '"id":7,"result":{"content":\[{"type":"text","text":"a:add:{\\"x\\": 3}"}\]}' &&
	ok "access rule: a client with x-team: ops lists and calls 'add'" || bad "access rule call with the header: $out"

# client_cert_san access rules on :82 (mTLS): 'add' for a DNS SAN under
# .ops.test, 'search' for the URI SAN spiffe://arion.test/ops. mcp3 CLIENT
# BODY [SESSION]: as mcp, there, with CLIENT's certificate.
mcp3() {
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		--cacert "$d/ca.pem" --cert "$d/$1.pem" --key "$d/$1.key" --resolve "mcp.test:82:$us" \
		${3:+-H "Mcp-Session-Id: $3"} ${3:+-H 'MCP-Protocol-Version: 2025-06-18'} \
		--data-binary "$2" "https://mcp.test:82/mcp"
}
mcp3_open() { # mcp3_open CLIENT: a new session on :82, its id on stdout
	mcp3 "$1" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e3","version":"1"}}}' >/dev/null
	local s
	s=$(tr -d '\r' <"$TOPO_DIR/h" | sed -n 's/^mcp-session-id: //Ip')
	mcp3 "$1" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$s" >/dev/null
	echo "$s"
}
sops=$(mcp3_open cops)
sdev=$(mcp3_open cdev)
out=$(mcp3 cops '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' "$sops")
names=$(echo "$out" | tool_names)
[ "$names" = "a__secret,add,b__secret,search" ] &&
	ok "client_cert_san: the client whose certificate has the URI and a DNS SAN the rules name lists 'add' and 'search'" ||
	bad "client_cert_san tools/list (cops): $names / $out"
out=$(mcp3 cdev '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' "$sdev")
names=$(echo "$out" | tool_names)
[ "$names" = "a__secret,b__secret" ] &&
	ok "client_cert_san: a certificate with other SANs (its CN under .ops.test) lists neither" ||
	bad "client_cert_san tools/list (cdev): $names / $out"
out=$(mcp3 cops '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"x":5}}}' "$sops")
echo "$out" | grep -q '"id":4,"result":{"content":\[{"type":"text","text":"a:add:{\\"x\\": 5}"}\]}' &&
	ok "client_cert_san: the matching client calls 'add'" || bad "client_cert_san call (cops): $out"
out=$(mcp3 cdev '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{}}}' "$sdev")
echo "$out" | grep -q '"id":5,"error":{"code":-32602' &&
	ok "client_cert_san: the other client's call of 'add' is refused (-32602)" ||
	bad "client_cert_san call (cdev): $out"

# issue 20 item 6, a backend killed mid-call: b sleeps 4 s in 'search'
# (its timeout is 5 s); killed while the call waits, the client gets an
# error naming b at once, and a's tools keep serving. Last: b stays down.
t0=${EPOCHREALTIME/./} # microseconds
mcp2 '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search","arguments":{"sleep":4}}}' "$sid2" >"$TOPO_DIR/killed.out" 2>&1 &
call_pid=$!
topo_wait_log "$TOPO_DIR/be-b.log" 'slow call' 5 && kill -9 "$be_b_pid"
wait "$call_pid"
took=$(((${EPOCHREALTIME/./} - t0) / 1000)) # ms
out=$(cat "$TOPO_DIR/killed.out")
echo "$out" | grep -q "\"id\":8,\"error\":{\"code\":-32000,\"message\":\"Backend unavailable: backend 'b'" &&
	[ "$took" -lt 3000 ] &&
	ok "backend b killed mid-call: the client's error names it after $took ms (not its 4 s answer or 5 s timeout)" ||
	bad "backend killed mid-call: after $took ms: $out"
out=$(mcp2 '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"x":4}}}' "$sid3" 'x-team: ops')
echo "$out" | grep -q '"id":9,"result":{"content":\[{"type":"text","text":"a:add:{\\"x\\": 4}"}\]}' &&
	ok "with b down, a call to backend a still succeeds" || bad "backend a after b was killed: $out"

out=$(cc "http://$us/other")
[ "$out" = "not mcp" ] && ok "other paths are routed as before" || bad "other path: $out"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
