#!/usr/bin/env bash
# HTTP proxying end to end (issue 6): 100 MB download and upload checked by
# SHA-256 with bounded memory, chunked both ways, Expect: 100-continue,
# keep-alive reuse seen in nginx's connection count, pipelining, HTTP/1.0,
# Connection: close, request smuggling refused, upstreams that reset, close
# or die mid-response, HEAD / 304 / close-delimited framing, absolute-form
# targets, header limits (431), a WebSocket upgrade tunnelled, and an echo listener
# from the same configuration model.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hp
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
PY=/usr/bin/python3
topo_bg py ip netns exec "$uns" $PY "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
topo_bg py2 ip netns exec "$uns" $PY "$ARION_SRC/tests/http/upstream.py" "$ub" 8082
py2_pid=$TOPO_PID
topo_wait_log "$TOPO_DIR/py2.log" ready 10 || { echo "upstream.py 2 did not start"; exit 1; }
grep -v '^#' "$ARION_SRC/tests/http/e2e_proxy.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$TOPO_ARION_PID/status"; }
# raw REQUEST-BYTES (python literal): send, read until the server closes
raw() {
	ip netns exec "$cns" $PY - "$us" "$1" <<'PY'
import ast, sys, rawhttp
d, closed = rawhttp.exchange(sys.argv[1], ast.literal_eval(sys.argv[2]))
print(d.decode("latin-1").replace("\r", "").replace("\0", ""))
print("<closed>" if closed else "<open>")
PY
}

# ---- endpoints resolved before traffic (issue 22) --------------------------------
# nothing has been sent through Arion yet: the configuration's endpoints'
# next hops were resolved when the generation was synced
ra=$(curl -s "http://127.0.0.1:$admin_port/stats" |
	awk -F': ' '/^dpdk\.port\.[^.]*\.arp_resolve_ahead: / {s += $2} END {print s + 0}')
[ "$ra" -ge 1 ] && ok "endpoints' next hops resolved ahead ($ra)" || bad "arp_resolve_ahead=$ra before any request"

# ---- big bodies, both ways, checked by hash ------------------------------------
head -c $((100 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/www/big.bin"
chmod 644 "$TOPO_DIR/www/big.bin"
want=$(sha256sum <"$TOPO_DIR/www/big.bin" | cut -d' ' -f1)
r0=$(rss)
got=$(cc --max-time 120 http://$us/www/big.bin | sha256sum | cut -d' ' -f1)
expect "100 MB download, SHA-256 equal" "$got" "^$want$"
got=$(cc --max-time 120 --data-binary @"$TOPO_DIR/www/big.bin" -H 'Content-Type: application/octet-stream' http://$us/upload)
expect "100 MB upload (Content-Length), SHA-256 equal" "$got" "^$want 104857600$"
r1=$(rss)
grow=$(((r1 - r0) / 1024))
[ $grow -lt 64 ] && ok "memory bounded: RSS grew ${grow} MB over 200 MB proxied" || bad "RSS grew ${grow} MB"
# A client that stops reading a 100 MB download: the body waits in the TCP
# windows (the upstream is slowed), not in Arion's memory: the mbufs held,
# from the admin's dpdk.mempool gauge, stay near the two connections'
# buffers (256 KiB each by default), and every byte arrives once it reads.
# Receive-buffer autotuning (dataplane.tcp.rcvbuf_max) may grow the
# upstream connection's buffer while the client still drains (its kernel
# takes megabytes first); what it grants is the gauge
# tcp.*.receive_buffer_grown_mbufs, bounded per worker by a quarter of the
# pool (tests/tcp/test_tcp_rcvbuf.c). Send-buffer autotuning
# (dataplane.tcp.sndbuf_max) may likewise grow the client connection's
# send buffer while the client drains: tcp.*.send_buffer_grown_mbufs, the
# grown bytes counted at two mbufs per half segment (the send queue's worst
# case), bounded per worker by a quarter of the pool of its own
# (tests/tcp/test_tcp_sndbuf.c). So: the mbufs held beyond the two grants
# stay within the two buffers, and each grant within the worker's bound.
mbufs() { curl -s "http://127.0.0.1:$admin_port/stats" | awk '/^dpdk\.mempool\..*\.in_use:/ {s += $2} END {print s + 0}'; }
grown() { curl -s "http://127.0.0.1:$admin_port/stats" | awk '/^tcp\.[0-9]+\.receive_buffer_grown_mbufs:/ {s += $2} END {print s + 0}'; }
sgrown() { curl -s "http://127.0.0.1:$admin_port/stats" | awk '/^tcp\.[0-9]+\.send_buffer_grown_mbufs:/ {s += $2} END {print s + 0}'; }
idle_mbufs=$(mbufs)
ip netns exec "$cns" $PY - "$us" >"$TOPO_DIR/stall.out" 2>&1 <<'PY' &
import hashlib, socket, sys, time, rawhttp
s = rawhttp.connect(sys.argv[1], timeout=30)
s.sendall(b"GET /www/big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
time.sleep(3)
d = b""
while b"\r\n\r\n" not in d:
    d += s.recv(65536)
h = hashlib.sha256(d.partition(b"\r\n\r\n")[2])
while True:
    r = s.recv(1 << 20)
    if not r:
        break
    h.update(r)
print(h.hexdigest())
PY
stall_pid=$!
sleep 2
held=$(mbufs)
granted=$(grown)
sgranted=$(sgrown)
wait $stall_pid
[ "$idle_mbufs" -lt 64 ] && [ "$held" -gt 64 ] && [ $((held - granted - sgranted)) -lt 1024 ] &&
	ok "a client that stops reading: Arion holds $held mbufs (idle: $idle_mbufs; autotuning granted $granted receiving, $sgranted sending), not the download" ||
	bad "a client that stops reading: $held mbufs held (idle: $idle_mbufs; autotuning granted $granted receiving, $sgranted sending), wanted 64..1023 beyond the grants"
[ "$granted" -le 2047 ] && ok "... autotuning's receive grant within a quarter of the pool: $granted mbufs" ||
	bad "... autotuning granted $granted mbufs to receive buffers, over a quarter of the 8,191-mbuf pool"
[ "$sgranted" -le 2047 ] && ok "... and its send grant within another quarter: $sgranted mbufs" ||
	bad "... autotuning granted $sgranted mbufs to send buffers, over a quarter of the 8,191-mbuf pool"
expect "... and the download resumes whole, SHA-256 equal" "$(cat "$TOPO_DIR/stall.out")" "^$want$"
for _ in 1 2 3 4 5 6 7 8 9 10; do [ "$(mbufs)" -lt 64 ] && break; sleep 0.2; done
expect "... and the mbufs go back to the pool" "$(mbufs)" "^([0-9]|[1-5][0-9]|6[0-3])$"
head -c $((20 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/up20.bin"
want20=$(sha256sum <"$TOPO_DIR/up20.bin" | cut -d' ' -f1)
got=$(cc --max-time 60 -H 'Transfer-Encoding: chunked' --data-binary @"$TOPO_DIR/up20.bin" http://$us/upload)
expect "20 MB chunked upload, SHA-256 equal" "$got" "^$want20 20971520$"
want_ch=$($PY -c "import hashlib,sys; n=3000000; print(hashlib.sha256(bytes(i % 251 for i in range(n))).hexdigest())")
got=$(cc -D "$TOPO_DIR/ch.h" "http://$us/chunked?n=3000000" | sha256sum | cut -d' ' -f1)
expect "chunked download, SHA-256 equal" "$got" "^$want_ch$"
expect "chunked download stays chunked" "$(tr -d '\r' <"$TOPO_DIR/ch.h" | tr A-Z a-z)" "transfer-encoding: chunked"
# Expect: 100-continue is answered by Arion at once (curl would wait 1 s)
t0=$(date +%s%N)
out=$(head -c 2000 /dev/zero | cc -v -H 'Expect: 100-continue' --data-binary @- http://$us/upload 2>&1)
t1=$(date +%s%N)
expect "Expect: 100-continue answered" "$out" "HTTP/1.1 100 Continue"
ms=$(((t1 - t0) / 1000000))
[ $ms -lt 900 ] && ok "100 Continue without curl's 1 s wait (${ms} ms)" || bad "100-continue took ${ms} ms"

# ---- connections ---------------------------------------------------------------------
a0=$(nginx_conns a)
b0=$(nginx_conns b)
urls=()
for i in $(seq 40); do urls+=("http://$us/k$i"); done
n=$(cc "${urls[@]}" | grep -c upstream-)
a1=$(nginx_conns a)
b1=$(nginx_conns b)
expect "40 keep-alive requests answered" "$n" "^40$"
# each nginx_conns call itself is one connection to that nginx
da=$((a1 - a0 - 1))
db=$((b1 - b0 - 1))
[ $da -le 1 ] && [ $db -le 1 ] && ok "keep-alive reuse: 40 requests opened $da + $db upstream connections" ||
	bad "keep-alive reuse: $da + $db upstream connections for 40 requests"
out=$(raw "b'GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\nGET /p3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "pipelining: three responses in order, then close" "$(echo "$out" | grep -oE '/p[0-9]|<closed>' | tr -d '\n')" "^/p1/p2/p3<closed>$"
# 500 pipelined requests in one write: their heads cross TCP segment
# boundaries, and the connection must go on after each of those
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import re, sys, rawhttp
d, _ = rawhttp.exchange(sys.argv[1], b"".join(b"GET /q%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(500)) +
                        b"GET /last HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=10)
order = [int(x) for x in re.findall(rb"upstream-[ab] /q(\d+)", d)]
print(len(order), order == list(range(500)), b"/last" in d)
PY
)
expect "pipelining: 500 requests across segments answered in order" "$out" "^500 True True$"
# a head split between two segments (a client writing it in two parts)
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import socket, sys, time, rawhttp
s = rawhttp.connect(sys.argv[1])
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"GET /s1 HT")
time.sleep(0.1)
s.sendall(b"TP/1.1\r\nHost: x\r\n\r\nGET /s2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
d, _ = rawhttp.read_until_close(s)
print(b"/s1" in d, b"/s2" in d)
PY
)
expect "a split head, then the next request on the same connection" "$out" "^True True$"
out=$(raw "b'GET /h10 HTTP/1.0\r\n\r\n'")
expect "HTTP/1.0 without Host is served" "$out" "upstream-. /h10"
expect "HTTP/1.0 without keep-alive: closed" "$out" "<closed>$"
out=$(raw "b'GET /h10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'")
expect "HTTP/1.0 keep-alive: kept open" "$out" "<open>$"
expect "HTTP/1.0 keep-alive answered with connection: keep-alive" "$(echo "$out" | tr A-Z a-z)" "connection: keep-alive"
out=$(raw "b'GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "Connection: close: answered with close and closed" "$(echo "$out" | tr A-Z a-z)" "connection: close.*<closed>$"
# Arion closes first after Connection: close, so its side holds TIME_WAIT;
# the same client port at once again is a new SYN for a tuple in TIME_WAIT,
# accepted because its timestamps are newer (RFC 6191). The client's own
# socket sits in LAST_ACK until Arion's ACK of its FIN arrives; until then
# Linux refuses the same 4-tuple (EADDRNOTAVAIL), so connect is retried for
# that reason only, for at most 5 s (the ACK is late under ASan, not lost).
out=$(ip netns exec "$cns" $PY - "$us" "$gw" <<'PY'
import errno, socket, sys, time, rawhttp
for i in range(3):
    deadline = time.time() + 5
    while True:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((sys.argv[2], 40001))
        s.settimeout(5)
        try:
            s.connect((sys.argv[1], 80))
            break
        except OSError as e:
            s.close()
            if e.errno != errno.EADDRNOTAVAIL or time.time() > deadline:
                raise
            time.sleep(0.05)
    s.sendall(b"GET /tw%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
    d, _ = rawhttp.read_until_close(s)
    s.close()
    print(d.split(b"\r\n")[0].decode(), end="|")
PY
)
expect "one client port three times in a row: all served" "$out" "^(HTTP/1.1 200 OK\|){3}$"
expect "... through Arion's TIME_WAIT (reused for newer SYNs)" "$(stat tcp.0.time_wait_reused)" "^[2-9]"

# ---- request smuggling: 400 and the connection closed ------------------------------------
for c in "CL+TE:b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'" \
	"two differing CL:b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd'" \
	"bad chunk size:b'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n'" \
	"obs-fold:b'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n'" \
	"bare CR:b'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n'" \
	"invalid name char:b'GET / HTTP/1.1\r\nHost: x\r\nX(A): a\r\n\r\n'" \
	"TE not chunked last:b'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n'" \
	"space before colon:b'GET / HTTP/1.1\r\nHost: x\r\nX-A : a\r\n\r\n'" \
	"two Hosts:b'GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'"; do
	name=${c%%:b*}
	out=$(raw "${c#*:}")
	expect "smuggling ($name): 400 and closed" "$(echo "$out" | head -1)$(echo "$out" | tail -1)" "^HTTP/1.1 (400|501)[^<]*<closed>$"
done

# ---- message framing a proxy must get right (RFC 9112 section 6.3) -----------------------------
# Each response is followed on the same connection by a second request: a
# proxy that waited for a body that never comes, or took bytes of the next
# response as one, fails the second.
printf 'small file\n' >"$TOPO_DIR/www/s.txt"
chmod 644 "$TOPO_DIR/www/s.txt"
flat() { echo "$1" | tr A-Z a-z | tr '\n' '|'; }
out=$(raw "b'HEAD /www/s.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /after-head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "HEAD: the GET's content-length, no body, the connection goes on" "$(flat "$out")" \
	'^http/1.1 200[^|]*\|([^|]+\|)*content-length: 11\|([^|]+\|)*\|http/1.1 200 .*\|upstream-[ab] /after-head\|+<closed>\|$'
etag=$(cc -sI "http://$us/www/s.txt" | tr -d '\r' | awk 'tolower($1) == "etag:" {print $2}')
out=$(raw "b'GET /www/s.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: $etag\r\n\r\nGET /after-304 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "304 Not Modified: no body, the connection goes on" "$(flat "$out")" \
	'^http/1.1 304[^|]*\|([^|]+\|)*\|http/1.1 200 .*\|upstream-[ab] /after-304\|+<closed>\|$'
want_eof=$($PY -c "import hashlib; print(hashlib.sha256(bytes(i % 251 for i in range(300000))).hexdigest())")
got=$(cc -D "$TOPO_DIR/eof.h" "http://$us/eof-body?n=300000" | sha256sum | cut -d' ' -f1)
expect "body delimited by the upstream's close: every byte, SHA-256 equal" "$got" "^$want_eof$"
expect "... and sent to an HTTP/1.1 client chunked" "$(tr -d '\r' <"$TOPO_DIR/eof.h" | tr A-Z a-z)" "transfer-encoding: chunked"
out=$(raw "b'GET /eof-body?n=1000 HTTP/1.0\r\n\r\n'")
expect "... and to an HTTP/1.0 client until close" "$(flat "$out")" '^http/1.1 200[^|]*\|([^|]+\|)*connection: close\|'
got=$(cc --http1.0 -D "$TOPO_DIR/eof10.h" "http://$us/eof-body?n=300000" | sha256sum | cut -d' ' -f1)
expect "... every byte of it, not chunked" "$got $(grep -ci '^transfer-encoding' "$TOPO_DIR/eof10.h")" "^$want_eof 0$"
expect "an interim 103 from the upstream is dropped, the final 200 forwarded" \
	"$(cc -s -D - "http://$us/hints" | tr -d '\r' | grep -E '^HTTP/|^after' | tr '\n' '|')" '^HTTP/1.1 200 OK\|after hints\|$'
head -c 5000000 /dev/zero >"$TOPO_DIR/zero5m"
expect "an upstream that answers 413 before reading a 5 MB body: the 413 reaches the client" \
	"$(cc -s -o /dev/null -w '%{http_code}' --data-binary @"$TOPO_DIR/zero5m" "http://$us/early-413")" "^413$"
# Envoy's rule: a response that starts before its request was read whole
# ends the connection, and its head says so
out=$(raw "b'POST /early-413 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n'")
expect "... and says connection: close when the request was not read whole" "$(flat "$out")" \
	'^http/1.1 100 continue\|\|http/1.1 413 [^|]*\|([^|]+\|)*connection: close\|([^|]*\|)*<closed>\|$'
expect "an upstream that closes after a keep-alive response: the next requests still work" \
	"$(cc -s -w '%{http_code} ' "http://$us/close-after" "http://$us/close-after" "http://$us/close-after" | tr -d '\n')" \
	"^closing after200 closing after200 closing after200 $"
# 204-cl and 204-te: a 204 that claims a body (Envoy's codec: protocol error)
for k in cl-te status huge-head 204-cl 204-te; do
	expect "a broken upstream response ($k): 502, protocol error" \
		"$(cc -s -w ' %{http_code}' "http://$us/bad?kind=$k")" "reset reason: protocol error 502$"
done
out=$(raw "b'GET /no-content HTTP/1.1\r\nHost: x\r\n\r\nGET /after-204 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "a 204 with Content-Length: 0 is forwarded without it, and the connection goes on" "$(flat "$out")" \
	'^http/1.1 204 [^|]*\|(server|x-envoy-upstream-service-time)[^|]*\|(server|x-envoy-upstream-service-time)[^|]*\|\|http/1.1 200 .*upstream.py /after-204\|'
out=$(raw "b'GET http://abs.example/echo?q=1 HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n'")
expect "absolute-form target: its authority wins over Host" "$(flat "$out")" 'x-seen-host: abs\.example\|'
expect "absolute-form target: the upstream gets origin-form" "$(flat "$out")" 'x-seen-uri: /echo\?q=1\|'
out=$(raw "b'GET /echo#frag HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "a fragment in the target: 400, as Envoy (RFC 9112 3.2)" "$(echo "$out" | head -1)" "^HTTP/1.1 400 "
out=$(raw "b'GET /echo HTTP/1.2\r\nHost: x\r\nConnection: close\r\n\r\n'")
expect "HTTP/1.2 is served as HTTP/1.1 (RFC 9110 6.2)" "$(flat "$out")" '^http/1.1 200 .*echo-[ab] /echo\|'
# A 30 KB header line crosses many segments; under max_request_headers_kb
# (60 KiB by default) it is served, as Envoy serves it, both ways.
big30=$($PY -c "print('c' * 30000)")
expect "a 30 KB request header across segments: served, and reaches the upstream whole" \
	"$(cc -s -D - -o /dev/null -H "X-Test: $big30" "http://$us/big-head?n=10" | tr -d '\r' | grep -iE '^(HTTP/|x-seen-test-len:)' | tr '\n' ' ')" \
	"^HTTP/1.1 200 OK X-Seen-Test-Len: 30000 $"
expect "a 30 KB response header across segments: forwarded whole" \
	"$(cc -s -D - -o /dev/null "http://$us/big-head?n=30000" | tr -d '\r' | grep -i '^x-big:' | wc -c)" "^30008$"
big=$($PY -c "print('a' * 61 * 1024)")
out=$(raw "b'GET / HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n'")
expect "headers over max_request_headers_kb (60 KiB default): 431 and closed" "$(echo "$out" | head -1)$(echo "$out" | tail -1)" "^HTTP/1.1 431 .*<closed>$"
many=$($PY -c "print(''.join('X-H%d: v\\\\r\\\\n' % i for i in range(101)))")
out=$(raw "b'GET / HTTP/1.1\r\nHost: x\r\n${many}\r\n'")
expect "more than max_headers_count (100 default) headers: 431 and closed" "$(echo "$out" | head -1)$(echo "$out" | tail -1)" "^HTTP/1.1 431 .*<closed>$"

# ---- upstream failures: a clean error, never a hang ------------------------------------------
t0=$(date +%s)
out=$(cc -o /dev/null -w '%{http_code} %{size_download}' http://$us/reset-mid 2>&1)
expect "upstream reset mid-response: client sees the cut" "$out" "curl: \((18|56)\)"
out=$(cc -o /dev/null -w '%{http_code} %{size_download}' http://$us/close-mid 2>&1)
expect "upstream close mid-response: client sees the cut" "$out" "curl: \((18|56)\)"
out=$(cc -i http://$us/close-early 2>&1)
expect "upstream close before headers: 503 UC" "$out" "reset reason: connection termination"
cc -o "$TOPO_DIR/kill.out" -w '%{http_code}\n' "http://$us/killme?sleep=8000" >"$TOPO_DIR/kill.code" 2>&1 &
kp=$!
sleep 1
kill -KILL "$py2_pid" 2>/dev/null
wait $kp
expect "upstream process killed while the request waits: 503" "$(cat "$TOPO_DIR/kill.code")" "^503"
t1=$(date +%s)
[ $((t1 - t0)) -lt 8 ] && ok "failures answered within $((t1 - t0)) s" || bad "failures took $((t1 - t0)) s"
expect "UC counted" "$(stat cluster.py.upstream_rq_rx_reset)" "^[3-9]"

# ---- WebSocket upgrade: tunnelled after 101 -------------------------------------------------
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=5)
s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
d = b""
while b"\r\n\r\n" not in d:
    r = s.recv(4096)
    if not r:
        sys.exit("closed before the 101")
    d += r
head, _, rest = d.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode())
for msg in (b"hello", b"x" * 100000):
    s.sendall(msg)
    got = rest
    rest = b""
    while len(got) < len(msg):
        r = s.recv(65536)
        if not r:
            sys.exit("closed in the tunnel")
        got += r
    print("echo ok" if got == msg else "echo differs")
PY
)
expect "WebSocket: 101 forwarded" "$out" "HTTP/1.1 101"
expect "WebSocket: bytes tunnelled both ways" "$(echo "$out" | grep -c 'echo ok')" "^2$"

# ---- upgrades as upgrade_configs allow them (issue 15) ---------------------------------------
# the HCM allows websocket; route /ws-off disables it; "foo" is named nowhere
upg() {
	ip netns exec "$cns" $PY - "$us" "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 80), timeout=5)
s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: "
          + sys.argv[3].encode() + b"\r\n\r\n")
d = b""
while b"\r\n\r\n" not in d:
    r = s.recv(4096)
    if not r:
        break
    d += r
print(d.split(b"\r\n")[0].decode())
PY
}
expect "upgrade disabled on the route: 403" "$(upg /ws-off websocket)" "HTTP/1.1 403"
expect "upgrade type named nowhere: 403" "$(upg /ws foo)" "HTTP/1.1 403"
expect "refused upgrades counted" "$(stat http.proxy.downstream_rq_ws_on_non_ws_route)" "^2$"

# ---- an echo listener from the same configuration model ---------------------------------------
out=$(ip netns exec "$cns" $PY -c "
import socket
s = socket.create_connection(('$us', 7), timeout=5)
s.sendall(b'ping-echo')
print(s.recv(100).decode())")
expect "echo listener (envoy.filters.network.echo)" "$out" "^ping-echo$"

expect "downstream 2xx counted" "$(stat http.proxy.downstream_rq_2xx)" "^[1-9]"
expect "no request left active" "$(stat http.proxy.downstream_rq_active)" "^0$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
