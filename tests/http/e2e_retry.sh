#!/usr/bin/env bash
# Envoy's retry_policy, request_headers_timeout / request_timeout, a route's
# idle_timeout, normalize_path / merge_slashes, end to end: the real binary
# in front of two upstream.py servers that fail, reset or stall on demand
# (tests/http/upstream.py: ?fail=CODE&on=ADDR, ?sleep=MS, /reset-mid), curl
# and a slow client (slow_client.py). Config: e2e_retry.yaml.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl /usr/bin/python3 sha256sum || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hr
http_e2e_topo || exit 1
for n in a b; do
	[ $n = a ] && addr=$ua || addr=$ub
	topo_bg "py-$n" ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/upstream.py" "$addr" 8081
	topo_wait_log "$TOPO_DIR/py-$n.log" ready 10 || { echo "upstream.py $n did not start"; exit 1; }
done
alog="$TOPO_DIR/access.log"
sed "s|ACCESS_LOG|$alog|" "$ARION_SRC/tests/http/e2e_retry.yaml" | grep -v '^#' >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}
# codes URL N [curl args]: the N status codes, sorted, on one line
codes() {
	local url=$1 n=$2 i
	shift 2
	for i in $(seq "$n"); do cc -o /dev/null -w '%{http_code}\n' "$@" "$url" 2>/dev/null; done |
		sort | tr '\n' ' ' | sed 's/ $//'
}
bc() { cc -s -w ' %{http_code}' "$@" | tr -d '\n'; } # body and status on one line
hits() { # hits ADDR PATH: requests upstream.py at ADDR saw for PATH
	ip netns exec "$uns" curl -s "http://$1:8081/hits?p=$2"
}
logged() { # logged REGEX: a line of the access log matches
	# the admin drains the access-log rings on its poll (about a
	# second): look every 0.1 s for up to 3 s, not a fixed 1.2 s each
	if topo_wait_log "$alog" "$1" 3; then
		ok "access log: $1"
	else
		bad "access log lacks /$1/; its last lines:"
		tail -3 "$alog" | sed 's/^/    /'
	fi
}

# ---- retry_on 5xx: host A answers 503, the retry goes to B (round robin)
r0=$(stat cluster.pair.upstream_rq_retry)
expect "5xx: every request answered by B after a retry" "$(codes "http://$us/r5xx/x?fail=503&on=$ua" 4)" "^200 200 200 200$"
r1=$(stat cluster.pair.upstream_rq_retry)
expect "5xx: upstream_rq_retry counted ($r0 -> $r1)" "$((r1 - r0))" "^[34]$"
expect "5xx: upstream_rq_retry_success" "$(stat cluster.pair.upstream_rq_retry_success)" "^$((r1 - r0))$"
h=$(cc -s -D - "http://$us/r5xx/y?fail=503&on=$ua" | tr -d '\r')
expect "x-envoy-attempt-count: 2 reached the host of the retry" "$h" "X-Seen-Attempt: 2"
logged "^80 200 - 2 /r5xx/y\?fail=503&on=$ua via_upstream$"
# gateway-error: 502-504 only; retriable-status-codes: the listed codes only
expect "gateway-error retries a 504" "$(codes "http://$us/rgw/x?fail=504&on=$ua" 2)" "^200 200$"
expect "gateway-error does not retry a 500" "$(codes "http://$us/rgw/x?fail=500&on=$ua" 2)" "^200 500$"
expect "retriable-status-codes retries a 429" "$(codes "http://$us/rcodes/x?fail=429&on=$ua" 2)" "^200 200$"
expect "retriable-status-codes does not retry a 503" "$(codes "http://$us/rcodes/x?fail=503&on=$ua" 2)" "^200 503$"

# ---- connect-failure: one host refuses connections
expect "connect-failure: retried to the live host" "$(codes "http://$us/rconn/x" 4)" "^200 200 200 200$"
logged "^80 200 - 2 /rconn/x via_upstream$"
expect "a policy without connect-failure (retriable-4xx): 503 UF" "$(codes "http://$us/rnoconn/x" 2)" "^200 503$"
logged "^80 503 UF 1 /rnoconn/x upstream_reset_before_response_started"

# ---- retries exhausted: URX and the upstream's own answer
x0=$(stat cluster.pair.upstream_rq_retry_limit_exceeded)
b=$(bc "http://$us/rexh/x?fail=503")
expect "retries exhausted: the last upstream answer" "$b" "^failed by 198.18.3.1[01] 503$"
expect "upstream_rq_retry_limit_exceeded" "$(stat cluster.pair.upstream_rq_retry_limit_exceeded)" "^$((x0 + 1))$"
logged "^80 503 URX 3 /rexh/x\?fail=503 via_upstream$"

# ---- bodies: replayed from the buffer; past the listener's 16 KB limit, not retried
head -c 8000 /dev/urandom >"$TOPO_DIR/small.bin"
head -c 40000 /dev/urandom >"$TOPO_DIR/big.bin"
sum=$(sha256sum <"$TOPO_DIR/small.bin" | cut -d' ' -f1)
for i in 1 2; do
	b=$(cc -s --data-binary @"$TOPO_DIR/small.bin" "http://$us/r5xx/upload?fail=503&on=$ua")
	expect "an 8 KB body replayed on the retry ($i)" "$b" "^$sum 8000$"
done
for i in 1 2; do
	b=$(cc -s -H 'Transfer-Encoding: chunked' --data-binary @"$TOPO_DIR/small.bin" \
		"http://$us/r5xx/upload?fail=503&on=$ua")
	expect "a chunked body replayed, chunked again ($i)" "$b" "^$sum 8000$"
done
a0=$(stat cluster.pair.retry_or_shadow_abandoned)
expect "a 40 KB body is not kept: no retry" \
	"$(codes "http://$us/r5xx/upload?fail=503&on=$ua" 2 --data-binary @"$TOPO_DIR/big.bin")" "^200 503$"
expect "retry_or_shadow_abandoned" "$(stat cluster.pair.retry_or_shadow_abandoned)" "^[1-9]"
[ "$(stat cluster.pair.retry_or_shadow_abandoned)" -gt "$a0" ] || bad "retry_or_shadow_abandoned did not grow"

# ---- per_try_timeout (0.3 s): a stalled host is given up, the retry succeeds
p0=$(stat cluster.pair.upstream_rq_per_try_timeout)
expect "per_try_timeout: retried away from the stalled host" "$(codes "http://$us/rtry/x?sleep=1500&on=$ua" 2)" "^200 200$"
# round robin: the next request hits A again after a retry went to B
expect "upstream_rq_per_try_timeout" "$(stat cluster.pair.upstream_rq_per_try_timeout)" "^($((p0 + 1))|$((p0 + 2)))$"
t=$(cc -s -o /dev/null -w '%{http_code} %{time_total}' "http://$us/rtry/z?sleep=1500")
expect "per_try_timeout on every attempt: 504 in about 0.6 s" "$t" "^504 0\.[5-9]"
logged "^80 504 UT,URX 2 /rtry/z\?sleep=1500 upstream_per_try_timeout$"

# ---- per_try_idle_timeout (0.3 s): a silent host is retried; a stall mid-body resets
i0=$(stat cluster.pair.upstream_rq_per_try_idle_timeout)
expect "per_try_idle_timeout: retried away from the silent host" "$(codes "http://$us/ridle/x?sleep=1500&on=$ua" 2)" "^200 200$"
cc -s -o /dev/null "http://$us/ridle/stall-mid?ms=1500" 2>/dev/null
expect "per_try_idle_timeout mid-body: the client sees the cut" "$?" "^(18|52|56)$"
expect "upstream_rq_per_try_idle_timeout" "$(stat cluster.pair.upstream_rq_per_try_idle_timeout)" "^($((i0 + 2))|$((i0 + 3)))$"
logged "^80 200 UT 1 /ridle/stall-mid\?ms=1500 upstream_per_try_idle_timeout$"

# ---- a reset once the response started is never retried
rr0=$(stat cluster.pair.upstream_rq_retry)
cc -s -o /dev/null "http://$us/reset-mid" 2>/dev/null
expect "reset mid-response: the client sees a failure" "$?" "^(18|52|56)$"
n=$(($(hits $ua /reset-mid) + $(hits $ub /reset-mid)))
expect "reset mid-response: one attempt only" "$n:$(stat cluster.pair.upstream_rq_retry)" "^1:$rr0$"

# ---- idle timeouts: the route's replaces the HCM's (0.8 s); 0 turns it off
t=$(cc -s -w ' %{http_code} %{time_total}' "http://$us/idle/slow?ms=1500" | tr -d '\n')
expect "route idle_timeout 0.4 s: 408 stream timeout" "$t" "^stream timeout 408 0\.[3-7]"
expect "route idle_timeout 0: the HCM's does not apply" "$(bc "http://$us/noidle/slow?ms=1200")" "^slow 200$"
expect "no route idle_timeout: the HCM's 0.8 s" "$(cc -s -o /dev/null -w '%{http_code}' "http://$us/slow?ms=1200")" "^408$"
logged "^80 408 SI 1 /idle/slow\?ms=1500 stream_idle_timeout$"

# ---- request_headers_timeout (1 s) and request_timeout (2 s), listener 81
slow() { ip netns exec "$cns" /usr/bin/python3 "$ARION_SRC/tests/http/slow_client.py" "$us" 81 "$1"; }
expect "a head sent byte by byte: 408 after 1 s, closed" "$(slow head)" \
	"^HTTP/1.1 408 Request Timeout \| request header timeout \| 1\.[0-4] \| closed$"
expect "a body sent byte by byte: 408 after 2 s, closed" "$(slow body)" \
	"^HTTP/1.1 408 Request Timeout \| request timeout \| 2\.[0-4] \| closed$"
expect "a complete request may wait longer for its response" \
	"$(bc "http://$us:81/slow?ms=2500")" "^slow 200$"
expect "downstream_rq_header_timeout" "$(stat http.timeouts.downstream_rq_header_timeout)" "^1$"
expect "downstream_rq_timeout" "$(stat http.timeouts.downstream_rq_timeout)" "^1$"
logged "^81 408 - - - request_header_timeout$"
logged "^81 408 - 1 /slow-body request_overall_timeout$"

# ---- normalize_path + merge_slashes (82) decide the route; 83 has neither
for p in "/public/../admin/x" "//admin" "/%61dmin/x" "/x/%2e%2e/admin" "/x\\..\\admin"; do
	expect "82 $p: normalized to /admin..., blocked" "$(bc --path-as-is "http://$us:82$p")" "^blocked 403$"
	expect "83 $p: as is, not /admin" "$(cc --path-as-is -s -o /dev/null -w '%{http_code}' "http://$us:83$p")" "^200$"
done
expect "the upstream gets the normalized path" \
	"$(cc --path-as-is -s "http://$us:82/a//b/./c/%7e/d%2Fe?q=/../x")" "^upstream.py /a/b/c/~/d%2Fe$"
logged "^82 200 - 1 /a/b/c/~/d%2Fe\?q=/\.\./x via_upstream$"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
