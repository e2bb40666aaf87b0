#!/usr/bin/env bash
# The MCP gateway's stateless era (2026-07-28) end to end (issue 20): the
# real binary between clients of both eras and backends of both eras.
# Backend 'a' is built with the official SDK 2.x (mcp_backend2.mjs) and
# speaks 2026-07-28 only (initialize refused), listing its tools two per
# page; backend 'b' (mcp_backend.py) speaks only the session era. The
# control plane is e2e_mcp.js's (ToolSet 'tools': a, b; 'secret' denied).
#
# * the SDK 2.x client negotiates 2026-07-28 with the gateway
#   (server/discover), walks tools/list (a's two pages merged, each tool
#   once), calls a tool of each backend: the gateway speaks each backend's
#   own era (a: stateless, the prefix stripped and Mcp-Name rewritten; b:
#   its own session opened);
# * prompts and resources: lists merged (prompt names prefixed, URIs as
#   they are), prompts/get and resources/read routed to their backend;
# * the SDK 1.x client (session era) reaches the stateless backend too;
# * headers that disagree with the body: HTTP 400, JSON-RPC -32020.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node /usr/bin/python3 || exit 77
peer=$ARION_SRC/tests/xds/peer/node_modules
[ -d "$peer/@grpc/grpc-js" ] && [ -d "$peer/@modelcontextprotocol/server" ] &&
	[ -d "$peer/@modelcontextprotocol/client" ] && [ -d "$peer/@modelcontextprotocol/sdk" ] || {
	echo "tests/xds/peer/node_modules incomplete (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-mcp26
http_e2e_topo || exit 1

topo_bg be-a ip netns exec "$uns" node "$ARION_SRC/tests/http/mcp_backend2.mjs" "$ua" 9001 a add,mul,secret modern 2
topo_wait_log "$TOPO_DIR/be-a.log" ready 20 || { echo "backend a did not start"; cat "$TOPO_DIR/be-a.log"; exit 1; }
topo_bg be-b ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/mcp_backend.py" "$ub" 9001 b search,secret sse
topo_wait_log "$TOPO_DIR/be-b.log" ready 10 || { echo "backend b did not start"; exit 1; }

cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_mcp.js" "$cp_dir" || exit 1
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 200); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "configuration not ACKed"; http_e2e_finish; }

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
# mcp26 BODY [HEADER...]: a stateless POST; head to $TOPO_DIR/h, body to stdout
mcp26() {
	local body=$1
	shift
	local hs=()
	for h in "$@"; do hs+=(-H "$h"); done
	cc -D "$TOPO_DIR/h" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "${hs[@]}" \
		--data-binary "$body" "http://$us/mcp"
}

for i in $(seq 50); do
	out=$(mcp26 '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{'"$META"'}}' \
		'MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: server/discover' 2>&1) && break
	sleep 0.1
done
echo "$out" | grep -q '"supportedVersions":\["2026-07-28"\]' && echo "$out" | grep -q '"resultType":"complete"' &&
	! grep -qi '^mcp-session-id' "$TOPO_DIR/h" &&
	ok "server/discover answered by the gateway, no session" || bad "server/discover: $out / $(cat "$TOPO_DIR/h")"

# 2026-07-28: Mcp-Name must be the body's params.name (SEP-2243; the SDK's server answers the same)
out=$(mcp26 '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a__add","arguments":{},'"$META"'}}' \
	'MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: tools/call' 'Mcp-Name: a__mul')
grep -q '^HTTP/1.1 400' "$TOPO_DIR/h" && echo "$out" | grep -q '"id":2,"error":{"code":-32020' &&
	ok "Mcp-Name differing from params.name: 400, -32020" || bad "Mcp-Name mismatch: $out / $(head -1 "$TOPO_DIR/h")"
out=$(mcp26 '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{'"$META"'}}' 'MCP-Protocol-Version: 2026-07-28')
grep -q '^HTTP/1.1 400' "$TOPO_DIR/h" && echo "$out" | grep -q '"code":-32020' &&
	ok "no Mcp-Method: 400, -32020" || bad "Mcp-Method missing: $out"
out=$(mcp26 '{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{'"$META"'}}' \
	'MCP-Protocol-Version: 2026-07-28' 'Mcp-Method: tools/call')
grep -q '^HTTP/1.1 400' "$TOPO_DIR/h" && echo "$out" | grep -q '"code":-32020' &&
	ok "Mcp-Method differing from the body's method: 400, -32020" || bad "Mcp-Method mismatch: $out"
[ "$(stat http.mcp.mcp_header_mismatch)" = 3 ] && ok "counted: 3 header mismatches" ||
	bad "mcp_header_mismatch $(stat http.mcp.mcp_header_mismatch)"
before=$(stat cluster.ma.upstream_rq_total)

# the SDK 2.x client: 2026-07-28 with the gateway, each backend in its own era
out=$(ip netns exec "$cns" timeout 60 node "$ARION_SRC/tests/http/e2e_mcp26_sdk.mjs" "http://$us/mcp" 2>&1)
sv() { echo "$out" | /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get('$1'))" 2>/dev/null; }
[ "$(sv version)" = 2026-07-28 ] && [ "$(sv tools)" = True ] &&
	ok "the SDK 2.x client negotiated 2026-07-28 (server/discover), tools offered" || bad "SDK 2.x connect: $out"
[ "$(sv names)" = "a__add,a__mul,b__search" ] &&
	ok "tools/list: a's two pages and b's list merged, each tool once, the denied one left out" ||
	bad "SDK 2.x tools: $out"
[ "$(sv a)" = 'a:add:{"x":2}' ] && [ "$(sv b)" = 'b:search:{"q": "z"}' ] && [ "$(sv denied)" = -32602 ] &&
	ok "tools/call reaches the 2026 backend and the 2025 backend; the denied tool is refused" ||
	bad "SDK 2.x calls: $out"
grep -q '^rq tools/call pv=2026-07-28 method=tools/call name=add session=no$' "$TOPO_DIR/be-a.log" &&
	ok "backend a got a stateless tools/call: prefix stripped, Mcp-Name rewritten to 'add'" ||
	bad "backend a's requests: $(cat "$TOPO_DIR/be-a.log")"
grep -q '^rq server/discover pv=2026-07-28 method=server/discover' "$TOPO_DIR/be-a.log" &&
	ok "the gateway learnt backend a's era with server/discover" || bad "no discover at a: $(cat "$TOPO_DIR/be-a.log")"

[ "$(sv prompts)" = "a__greet,b__greet" ] && [ "$(sv prompt)" = "b:prompt:greet" ] &&
	ok "prompts/list merged (names prefixed), prompts/get routed to b with its own name" ||
	bad "SDK 2.x prompts: $out"
[ "$(sv resources)" = "mem://a/doc,mem://b/doc" ] && [ "$(sv resource)" = "a:resource:mem://a/doc" ] &&
	[ "$(sv templates)" = 0 ] && [ "$(sv noResource)" = -32002 ] &&
	ok "resources/list merged, resources/read routed by URI, an unknown URI -32002" ||
	bad "SDK 2.x resources: $out"
grep -q '^rq resources/read pv=2026-07-28 method=resources/read name=mem://a/doc session=no$' "$TOPO_DIR/be-a.log" &&
	ok "backend a got resources/read statelessly, Mcp-Name its URI" || bad "a's reads: $(grep resources "$TOPO_DIR/be-a.log")"

# the SDK 1.x client (session era) against the stateless backend
out=$(ip netns exec "$cns" timeout 30 node "$ARION_SRC/tests/http/e2e_mcp_sdk.js" "http://$us/mcp" 2>&1)
[ "$(sv names)" = "a__add,a__mul,b__search" ] && [ "$(sv a)" = 'a:add:{"x":2}' ] &&
	[ "$(sv b)" = 'b:search:{"q": "z"}' ] && [ "$(sv denied)" = -32602 ] &&
	ok "the SDK 1.x client ($(sv version), session $(sv session)) reaches both backends" ||
	bad "SDK 1.x: $out"
[ "$(sv prompts)" = "a__greet,b__greet" ] && [ "$(sv prompt)" = "a:prompt:greet" ] &&
	ok "in a session too: prompts merged, a__greet got from the 2026 backend" || bad "SDK 1.x prompts: $out"
[ "$(grep -c '^rq tools/call .*session=yes' "$TOPO_DIR/be-a.log")" = 0 ] &&
	ok "backend a never saw a session id" || bad "a saw sessions: $(cat "$TOPO_DIR/be-a.log")"
[ "$(stat http.mcp.mcp_stateless)" -ge 4 ] 2>/dev/null && ok "counted: $(stat http.mcp.mcp_stateless) stateless requests" ||
	bad "mcp_stateless $(stat http.mcp.mcp_stateless)"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
