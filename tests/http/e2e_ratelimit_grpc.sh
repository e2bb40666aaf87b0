#!/usr/bin/env bash
# Global rate limiting end to end: curl through Arion's
# envoy.filters.http.ratelimit whose rate_limit_service (envoy_grpc) is a
# @grpc/grpc-js RateLimitService reading Envoy's own .protos
# (e2e_ratelimit_grpc.js, 2 requests a minute per descriptor set): what
# the service received (domain, the route's descriptors of stage 0 with
# the x-user header's value, :authority) is what Envoy sends; the first
# two requests reach the upstream with the service's request header and
# come back with its response header and x-ratelimit-*; the third is a
# 429 with x-envoy-ratelimited and the service's raw_body, never
# upstream; another user has its own window; a failed call lets the
# request on (failure_mode_deny unset); a route without rate_limits
# makes no call; the counters (cluster.echo.ratelimit.*) say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/proto-loader" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-rlg
http_e2e_topo || exit 1
log="$TOPO_DIR/calls.log"
: >"$log"
chmod 666 "$log"
chmod 755 "$TOPO_DIR"
topo_bg rls ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_ratelimit_grpc.js" "$ub" 8081 "$log"
for i in $(seq 100); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8081" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_ratelimit_grpc.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
hdr() { tr -d '\r' <"$1" | grep -i "^$2:" | head -1; }

h="$TOPO_DIR/h"
body=$(cc -D "$h" -H "X-User: alice" "http://$us/echo/1")
expect "1st: the upstream answers with the service's request header" "$body" "^got ok$"
expect "1st: 200" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 200"
expect "1st: the service's response header" "$(hdr "$h" x-rls)" "x-rls: ok"
expect "1st: x-ratelimit-limit" "$(hdr "$h" x-ratelimit-limit)" "x-ratelimit-limit: 2, 2;w=60$"
expect "1st: x-ratelimit-remaining" "$(hdr "$h" x-ratelimit-remaining)" "x-ratelimit-remaining: 1$"
expect "1st: x-ratelimit-reset" "$(hdr "$h" x-ratelimit-reset)" "x-ratelimit-reset: 60$"
c=$(head -1 "$log")
expect "call: the domain" "$c" '"domain":"edge"'
expect "call: the descriptor (generic_key, x-user's value)" "$c" \
	'"descriptors":\[\{"entries":\[\{"key":"generic_key","value":"echo"\},\{"key":"user","value":"alice"\}\]\}\]'
[[ "$c" == *other-stage* ]] && bad "call: the stage 1 descriptor was sent" || ok "call: stage 0 only"
expect "call: the :authority configured" "$c" '"authority":"rls.test"'
body=$(cc -D "$h" -H "X-User: alice" "http://$us/echo/2")
expect "2nd: through" "$body" "^got ok$"
expect "2nd: nothing left" "$(hdr "$h" x-ratelimit-remaining)" "x-ratelimit-remaining: 0$"
body=$(cc -D "$h" -H "X-User: alice" "http://$us/echo/3")
expect "3rd: 429" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 429"
expect "3rd: x-envoy-ratelimited" "$(hdr "$h" x-envoy-ratelimited)" "x-envoy-ratelimited: true$"
expect "3rd: the service's header" "$(hdr "$h" x-rls)" "x-rls: over"
expect "3rd: the service's raw_body" "$body" "^over the limit$"
body=$(cc -D "$h" -H "X-User: bob" "http://$us/echo/4")
expect "another user: its own window" "$body" "^got ok$"
body=$(cc --http2-prior-knowledge -D "$h" -H "X-User: carol" "http://$us/echo/h2")
expect "an HTTP/2 client: through" "$body" "^got ok$"
expect "a failed call (UNAVAILABLE): let on" "$(cc "http://$us/fail/x")" "^got -$"
expect "no rate_limits: no call, through" "$(cc "http://$us/free/x")" "^got -$"
expect "calls the service received" "$(wc -l <"$log")" "^6$"
expect "ok counted" "$(stat cluster.echo.ratelimit.ok)" "^4$"
expect "over_limit counted" "$(stat cluster.echo.ratelimit.over_limit)" "^1$"
expect "error counted" "$(stat cluster.echo.ratelimit.error)" "^1$"
expect "failure_mode_allowed counted" "$(stat cluster.echo.ratelimit.failure_mode_allowed)" "^1$"
expect "the calls went over HTTP/2" "$(stat cluster.rls.upstream_cx_http2_total)" "^[1-9]"
# request_type external (listener :81): whether a request is internal is
# the connection manager's answer, never the client's own header (Envoy
# removes a client's x-envoy-internal before its filters run)
n0=$(wc -l <"$log")
expect "request_type external: an external client's request is limited" \
	"$(cc "http://$us:81/x")" "^got ok$"
expect "request_type external: a client's x-envoy-internal: true changes nothing" \
	"$(cc -H "x-envoy-internal: true" "http://$us:81/y")" "^got ok$"
expect "request_type external: both called the service" "$(($(wc -l <"$log") - n0))" "^2$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
