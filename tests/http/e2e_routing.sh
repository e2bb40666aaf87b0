#!/usr/bin/env bash
# HTTP routing end to end (issue 6): each route match kind and action, header
# mutations at the three levels, XFF / x-forwarded-proto / x-request-id, and
# each local reply with its response flag, status, body, access log line and
# statistic. Real binary, nginx and a test upstream in namespaces, curl.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hr
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
topo_bg py ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
alog="$TOPO_DIR/access.log"
sed "s|ACCESS_LOG|$alog|" "$ARION_SRC/tests/http/e2e_routing.yaml" | grep -v '^#' >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

H() { echo "-H Host:$1"; }
body() { cc "$@" 2>&1; }
code() { cc -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
hdrs() { cc -s -D - -o /dev/null "$@" 2>&1 | tr -d '\r' | tr 'A-Z' 'a-z'; }
expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}

# ---- virtual hosts and the default route (ROUND_ROBIN over A and B)
a=$(body -H 'Host: api.test' http://$us/)
b=$(body -H 'Host: api.test' http://$us/)
expect "vhost by exact domain, round robin (1)" "$a$b" "upstream-aupstream-b|upstream-bupstream-a"
expect "vhost by exact domain with port" "$(body -H 'Host: api.test:80' http://$us/)" "^upstream-"
expect "vhost by second exact domain" "$(body -H 'Host: www.test' http://$us/)" "^upstream-b"
expect "vhost by wildcard suffix" "$(body -H 'Host: x.y.wild.test' http://$us/)" "^upstream-b"
expect "no vhost: 404" "$(code -H 'Host: nope.test' http://$us/)" "^404$"

# ---- match kinds
expect "prefix + header match" "$(body -H 'Host: api.test' -H 'x-pick: b' http://$us/hdr)" "^upstream-b /hdr"
expect "prefix, header absent: next route" "$(body -H 'Host: api.test' http://$us/hdr)" "^upstream-a /hdr"
expect "query parameter match" "$(body -H 'Host: api.test' "http://$us/q?v=b")" "^upstream-b"
expect "query parameter mismatch" "$(body -H 'Host: api.test' "http://$us/q?v=a")" "^upstream-a"
expect "exact path (direct_response)" "$(body -H 'Host: api.test' http://$us/direct)" "^teapot$"
expect "exact path does not match longer" "$(body -H 'Host: api.test' http://$us/directx)" "^upstream-"
h=$(hdrs -H 'Host: api.test' http://$us/re/42)
expect "safe_regex + regex_rewrite" "$h" "x-seen-uri: /echo/n42"
expect "regex_rewrite sets x-envoy-original-path" "$h" "x-seen-orig: /re/42"
expect "safe_regex is a full match" "$(code -H 'Host: api.test' http://$us/re/42x)" "^200$"
h=$(hdrs -H 'Host: api.test' "http://$us/rw/abc?k=1")
expect "prefix_rewrite keeps the query" "$h" "x-seen-uri: /echo/abc\?k=1"
expect "host_rewrite_literal" "$h" "x-seen-host: rewritten.test"

# ---- weighted clusters (3:1)
na=0 nb=0
for i in $(seq 40); do
	case $(body -H 'Host: api.test' http://$us/w) in
	upstream-a*) na=$((na + 1)) ;;
	upstream-b*) nb=$((nb + 1)) ;;
	esac
done
[ $na -gt $nb ] && [ $nb -gt 0 ] && ok "weighted_clusters 3:1 ($na:$nb)" || bad "weighted_clusters: a=$na b=$nb"

# ---- redirects and direct responses
h=$(hdrs -H 'Host: api.test' "http://$us/old/x?y=1")
expect "path_redirect 302" "$h" "^http/1.1 302"
expect "path_redirect Location keeps the query" "$h" "location: http://api.test/new\?y=1"
h=$(hdrs -H 'Host: api.test' "http://$us/secure/p")
expect "https_redirect 301" "$h" "^http/1.1 301"
expect "https_redirect Location" "$h" "location: https://api.test/secure/p"
h=$(hdrs -H 'Host: api.test' http://$us/direct)
expect "direct_response status" "$h" "^http/1.1 418"
expect "direct_response gets route config response headers" "$h" "x-resp-rc: 1"

# ---- header mutations at three levels, XFF, x-forwarded-proto, x-request-id
h=$(hdrs -H 'Host: api.test' -H 'x-forwarded-for: 203.0.113.7' -H 'x-forwarded-proto: https' \
	-H 'x-request-id: client-id' http://$us/echo)
expect "route level request header" "$h" "x-seen-route: r1"
expect "route OVERWRITE beats the incoming, route config appends after" "$h" "x-seen-test: route"
expect "vhost level request header with %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%" "$h" "x-seen-vh: vh $gw"
expect "XFF: the edge appends the peer" "$h" "x-seen-xff: 203.0.113.7, ?$gw"
expect "x-forwarded-proto from an untrusted hop is replaced" "$h" "x-seen-proto: http"
expect "x-request-id of an external request is regenerated" "$h" "x-seen-rid: [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
expect "route level response header" "$h" "x-resp-route: 1"
expect "route config level response header" "$h" "x-resp-rc: 1"
[[ "$h" == *x-upstream:* ]] && bad "vhost response_headers_to_remove: x-upstream still there" || ok "vhost level response header removal"
expect "server header" "$h" "server: envoy"
expect "x-envoy-upstream-service-time" "$h" "x-envoy-upstream-service-time: [0-9]+"

# ---- local replies and response flags
h=$(hdrs -H 'Host: api.test' http://$us/nc)
expect "503 NC: route to a cluster that does not exist (G5)" "$h" "^http/1.1 503"
expect "503 UH body" "$(body -H 'Host: api.test' http://$us/uh)" "^no healthy upstream$"
expect "503 UF refused" "$(body -H 'Host: api.test' http://$us/uf-refused)" "^upstream connect error or disconnect/reset before headers. reset reason: remote connection failure"
expect "503 UF connect timeout" "$(body -H 'Host: api.test' http://$us/uf-timeout)" "reset reason: connection timeout$"
t0=$(date +%s%N)
expect "504 UT" "$(body -H 'Host: api.test' "http://$us/slow?ms=3000")" "^upstream request timeout$"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
[ $ms -ge 900 ] && [ $ms -lt 2900 ] && ok "route timeout 1s took ${ms} ms" || bad "route timeout took ${ms} ms"
cc -o /dev/null -H 'Host: api.test' "http://$us/uo?sleep=1500" &
bgp=$!
sleep 0.4
expect "503 UO: circuit breaker max_requests" "$(body -H 'Host: api.test' http://$us/uo)" "reset reason: overflow$"
wait $bgp
out=$(ip netns exec "$cns" /usr/bin/python3 - "$us" <<'PY'
import sys, rawhttp
def ask(req):
    return rawhttp.exchange(sys.argv[1], req)[0].decode("latin-1")
print(ask(b"GET / HTTP/1.1\r\nHost: api.test\r\nBad Name: x\r\n\r\n").splitlines()[0])
print(ask(b"GET / HTTP/1.1\r\nHost: api.test\r\nx-big: " + b"a" * 5000 + b"\r\n\r\n").splitlines()[0])
PY
)
expect "400 for an invalid header name, connection closed" "$out" "HTTP/1.1 400 Bad Request"
expect "431 over max_request_headers_kb" "$out" "HTTP/1.1 431"

# ---- a cookie hash policy with a ttl (RING_HASH over A and B): a client
# without the cookie gets one, Envoy's form, and is routed as that cookie
# routes; sent back, the cookie keeps it on that host (six requests, each on
# a connection of its own: one in 32 by chance). Without a ttl: no cookie.
r=$(cc -s -D - -H 'Host: api.test' http://$us/sticky | tr -d '\r')
expect "cookie hash policy: one set-cookie" "$(grep -ci '^set-cookie: sid=' <<<"$r")" "^1$"
expect "cookie hash policy: Envoy's set-cookie" "$r" \
	$'\n[Ss]et-[Cc]ookie: sid="[0-9a-f]{16}"; Max-Age=3600; Path=/sticky; HttpOnly\n'
sid=$(sed -n 's/^[Ss]et-[Cc]ookie: sid="\([0-9a-f]*\)".*/\1/p' <<<"$r")
first=$(grep -o '^upstream-[ab]' <<<"$r")
hosts=""
for i in 1 2 3 4 5 6; do
	hosts+=$(body -H 'Host: api.test' -H "Cookie: a=1; sid=\"$sid\"" http://$us/sticky | cut -c1-10)
done
expect "cookie hash policy: the cookie sent back stays on its host" "$hosts" "^($first){6}$"
expect "cookie hash policy: no set-cookie when the cookie came" \
	"$(hdrs -H 'Host: api.test' -H "Cookie: sid=\"$sid\"" http://$us/sticky | grep -c '^set-cookie')" "^0$"
expect "cookie hash policy without ttl: no set-cookie" \
	"$(hdrs -H 'Host: api.test' http://$us/nosticky | grep -c '^set-cookie')" "^0$"

sleep 1.2 # the admin drains access-log rings on its poll
for pat in "^404 NR / -" "^503 NC /nc -" "^503 UH /uh -" "^503 UF /uf-refused 198.18.3.10:9" \
	"^503 UF /uf-timeout 198.18.3.99:8080" "^504 UT /slow" "^503 UO /uo " "^400 DPE" \
	"^431 DPE" "^200 - /echo 198.18.3.10:8080" "^302 - /old" "^418 - /direct -"; do
	grep -qE "$pat" "$alog" && ok "access log: $pat" || bad "access log lacks /$pat/"
done
for s in "http.ingress.no_route 1" "http.ingress.no_cluster 1" "http.ingress.rq_redirect 2" \
	"http.ingress.rq_direct_response 1" "http.ingress.downstream_rq_5xx 6" \
	"http.ingress.downstream_rq_4xx 3" "cluster.empty.upstream_cx_none_healthy 1" \
	"cluster.refused.upstream_cx_connect_fail 1" "cluster.blackhole.upstream_cx_connect_timeout 1" \
	"cluster.py.upstream_rq_timeout 1" "cluster.tiny.upstream_rq_pending_overflow 1" \
	"cluster.web_a.upstream_rq_2xx 5"; do
	set -- $s
	v=$(stat "$1")
	[ "$v" -ge "$2" ] && ok "stat $1 = $v" || bad "stat $1 = $v, wanted >= $2"
done
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
