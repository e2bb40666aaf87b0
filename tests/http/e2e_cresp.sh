#!/usr/bin/env bash
# envoy.filters.http.custom_response end to end: curl (HTTP/1.1 and HTTP/2
# prior knowledge) through Arion to a node http server (e2e_cresp.js):
# its 404 (gzip, chunked, HTML) arrives as the policy's JSON with its own
# content-length and none of the upstream's headers; its 503 as a 502
# whose body names the 503; a 404 with an 8 MB body it sends slowly is
# answered at once (the body never waited for); a 200 passes as it came;
# the router's local 503 (a cluster without hosts) becomes "maintenance";
# the counter says six.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-cr
http_e2e_topo || exit 1
log="$TOPO_DIR/upstream.log"
: >"$log"
chmod 666 "$log"
topo_bg upstream ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_cresp.js" "$ua" 8080 "$log"
for i in $(seq 50); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ua/8080" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_cresp.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
h="$TOPO_DIR/h"
hdr() { tr -d '\r' <"$h" | grep -i "^$1:" | head -1 | sed 's/^[^:]*: //'; }

for v in --http1.1 --http2-prior-knowledge; do
	body=$(cc $v -D "$h" "http://$us/missing")
	expect "$v 404: status kept" "$(head -1 "$h" | tr -d '\r')" "^HTTP/(1.1|2) 404"
	expect "$v 404: the policy's body" "$body" '^\{"error":"not found"\}$'
	expect "$v 404: its content-length" "$(hdr content-length)" "^21$"
	expect "$v 404: its content-type" "$(hdr content-type)" "^application/json$"
	expect "$v 404: no content-encoding" "$(hdr content-encoding)" "^$"
	expect "$v 404: no upstream header" "$(hdr x-upstream)" "^$"
	body=$(cc $v -D "$h" "http://$us/busy")
	expect "$v 503: 502" "$(head -1 "$h" | tr -d '\r')" "^HTTP/(1.1|2) 502"
	expect "$v 503: body_format" "$body" "^upstream said 503$"
	body=$(cc $v -D "$h" "http://$us/fine")
	expect "$v 200 passes" "$body" "^ok /fine$"
done
t0=$(date +%s%N)
body=$(cc --http1.1 -D "$h" "http://$us/big")
t1=$(date +%s%N)
expect "slow 8 MB 404: replaced" "$body" '^\{"error":"not found"\}$'
[ $(((t1 - t0) / 1000000)) -lt 3000 ] && ok "slow 8 MB 404: answered at its head" ||
	bad "slow 8 MB 404: took $(((t1 - t0) / 1000000)) ms (the body takes 6 s)"
body=$(cc -D "$h" "http://$us/none/x")
expect "local 503: status kept" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 503"
expect "local 503: replaced" "$body" "^maintenance$"
expect "replaced counted" "$(stat http.cr.custom_response_replaced)" "^6$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
