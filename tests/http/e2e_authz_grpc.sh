#!/usr/bin/env bash
# External authorization over gRPC end to end: curl through Arion's
# envoy.filters.http.ext_authz whose grpc_service (envoy_grpc) is a
# @grpc/grpc-js Authorization server reading Envoy's own .protos
# (e2e_authz_grpc.js), before nginx A (/echo shows what it received): an
# allowed request reaches it with the service's header set and the one
# it removed gone, and the client gets the service's response header; a
# denied one gets the service's 401, WWW-Authenticate and body and never
# reaches it; a failed call is status_on_error (403); a route with the
# check disabled goes straight on; what the service received (peers,
# method, path, host, scheme, protocol, headers joined, the cookie left
# out, context_extensions, initial_metadata, :authority) is what Envoy
# sends; with_request_body: a POST's body goes with the check, then
# upstream unchanged, and one past max_request_bytes is a 413; the
# counters say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node || exit 77
curl -V | grep -q 'HTTP2' || { echo "curl without HTTP/2"; exit 77; }
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/proto-loader" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-azg
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
log="$TOPO_DIR/checks.log"
: >"$log"
chmod 666 "$log"
chmod 755 "$TOPO_DIR"
topo_bg authz ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_authz_grpc.js" "$ub" 8081 "$log"
for i in $(seq 100); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8081" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_authz_grpc.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
hdr() { tr -d '\r' <"$1" | grep -i "^$2:" | head -1; }

h="$TOPO_DIR/h"
body=$(cc -D "$h" -H "X-Test: client" -H "X-Route: r" -H "X-A: 1" -H "X-A: 2" \
	-H "Cookie: c=1" "http://$us/echo/allow?q=1")
expect "allowed: the upstream answers" "$body" "^echo-a /echo/allow\?q=1"
expect "allowed: the service's header set upstream" "$(hdr "$h" x-seen-test)" "from-grpc"
expect "allowed: the header it removed is gone (nginx shows none)" "$(hdr "$h" x-seen-route)" "^$"
expect "allowed: its response header" "$(hdr "$h" x-resp)" "r1"
c=$(head -1 "$log")
expect "check: the path" "$c" '"path":"/echo/allow\?q=1"'
expect "check: the method" "$c" '"method":"GET"'
expect "check: the host" "$c" '"host":"198.18.2.2"'
expect "check: the scheme" "$c" '"scheme":"http"'
expect "check: the protocol" "$c" '"protocol":"HTTP/1.1"'
expect "check: repeated headers joined" "$c" '"x-a":"1,2"'
expect "check: :authority in the map" "$c" '":authority":"198.18.2.2"'
[[ "$c" == *'"cookie"'* ]] && bad "check: the cookie was sent" || ok "check: no cookie"
expect "check: the source peer" "$c" '"source":\{"address":\{"socket_address":\{"address":"198.18.2.1"'
expect "check: the destination peer" "$c" '"destination":\{"address":\{"socket_address":\{"address":"198.18.2.2","port_value":80'
expect "check: the request time" "$c" '"time":\{"seconds":"1[0-9]{9}"'
expect "check: context_extensions" "$c" '"context_extensions":\{"route":"main"\}'
expect "check: initial_metadata" "$c" '"x-tenant":"t1"'
expect "check: the :authority configured" "$c" '"authority":"authz.test"'
body=$(cc -D "$h" http://$us/echo/deny)
expect "denied: the body is the service's" "$body" "^denied by the grpc service"
expect "denied: 401" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 401"
expect "denied: WWW-Authenticate" "$(hdr "$h" www-authenticate)" 'Bearer realm="grpc"'
expect "denied: not the upstream's" "$(tr -d '\r' <"$h" | grep -ci '^x-upstream:')" "^0$"
expect "a failed call (UNAVAILABLE): 403" "$(cc -o /dev/null -w '%{http_code}' http://$us/echo/fail)" "^403$"
body=$(cc http://$us/echo/open)
expect "disabled on the route: straight on" "$body" "^echo-a /echo/open"
# with_request_body (64 bytes): the body goes with the check, then
# upstream unchanged; past 64 bytes a 413
body=$(cc -d 'a=1&b=2' http://$us/body/allow)
expect "body: the upstream got it unchanged" "$body" "^got a=1&b=2$"
c=$(sed -n 4p "$log")
expect "body: the check carried it" "$c" '"body":"a=1&b=2"'
expect "body: its size" "$c" '"size":"7"'
expect "body: not partial" "$c" '"x-envoy-auth-partial-body":"false"'
expect "body: past max_request_bytes, 413" \
	"$(cc -o /dev/null -w '%{http_code}' -d "$(printf 'x%.0s' $(seq 100))" http://$us/body/big)" "^413$"
# the same from an HTTP/2 client (h2c, prior knowledge)
body=$(cc --http2-prior-knowledge -d 'h2=1' http://$us/body/h2)
expect "h2 body: the upstream got it unchanged" "$body" "^got h2=1$"
c=$(sed -n 5p "$log")
expect "h2 body: the check carried it" "$c" '"body":"h2=1"'
expect "h2 body: the protocol" "$c" '"protocol":"HTTP/2"'
expect "checks the service received" "$(wc -l <"$log")" "^5$"
expect "the upstream never saw the denied request" \
	"$(grep -c '/echo/deny' "$TOPO_DIR/nginx-a/access.log")" "^0$"
expect "ok counted" "$(stat http.az.ext_authz.ok)" "^3$"
expect "denied counted" "$(stat http.az.ext_authz.denied)" "^1$"
expect "error counted" "$(stat http.az.ext_authz.error)" "^1$"
expect "the check went over HTTP/2" "$(stat cluster.authz.upstream_cx_http2_total)" "^[1-9]"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
