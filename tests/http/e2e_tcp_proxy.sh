#!/usr/bin/env bash
# tcp_proxy end to end (issue 21): the real binary between Python clients
# and raw TCP upstreams (tcp_upstream.py) and two openssl s_server.
#
#   :7000  tcp_proxy -> echo, idle_timeout 2s, access log with TCP fields:
#          a large transfer each way byte-exact, the client's FIN carried
#          over while the echo goes on (half-close), the idle timeout
#   :7001  tcp_proxy -> sink (reads nothing for 3 s): a fast sender to a slow
#          reader; Arion stops reading the client (paused_reading counted)
#          and the mbufs it holds stay bounded, then every byte arrives
#   :7002  tcp_proxy -> source (32 MiB): a client that does not read; the
#          upstream is paused instead, then every byte arrives
#   :7003  network RBAC (DENY our source) before tcp_proxy: closed unrelayed
#   :7004  tcp_proxy -> a port nobody listens on, max_connect_attempts 2: UF
#   :7005  max_downstream_connection_duration 1s
#   :7006  tcp_proxy -> a Redis-like upstream (tcp_upstream.py resp, RESP2):
#          20000 pipelined commands in one burst answered byte-exact and in
#          order, a 16 MiB value SET and read back, the client's FIN after
#          its last command still answered (half-close), QUIT
#   :443   tls_inspector; a.test and b.test passed through unterminated to
#          two openssl s_server with their own certificates (TLS passthrough);
#          a.test logs when connected too (flush_access_log_on_connected)
#   :8443  tls_inspector, network RBAC denying requested_server_name b.test
#          before a passthrough tcp_proxy
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
PY=/usr/bin/python3
topo_require ip ethtool curl openssl $PY || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-tp
http_e2e_topo || exit 1

up() { # up NAME ADDR PORT MODE [ARG]
	topo_bg "$1" ip netns exec "$uns" $PY "$ARION_SRC/tests/http/tcp_upstream.py" "$2" "$3" "$4" ${5:-}
	topo_wait_log "$TOPO_DIR/$1.log" ready 10 || { echo "upstream $1 did not start"; exit 1; }
}
up echo "$ua" 7000 echo
up sink "$ua" 7001 sink 3
up source "$ua" 7002 source 32
up resp "$ua" 6379 resp

# ---- two TLS upstreams with their own certificates ----------------------------------------
d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "tp CA" || exit 1
for n in a b; do
	pki_leaf $n ca $n.test "subjectAltName=DNS:$n.test" || exit 1
done
topo_bg tls_a ip netns exec "$uns" openssl s_server -accept "$ua:9443" -cert "$d/a.pem" -key "$d/a.key" -www -quiet
topo_bg tls_b ip netns exec "$uns" openssl s_server -accept "$ub:9443" -cert "$d/b.pem" -key "$d/b.key" -www -quiet

tp() { # tp PREFIX CLUSTER [MORE TcpProxy lines]: a tcp_proxy filter, indented for a chain
	cat <<YAML
              - name: envoy.filters.network.tcp_proxy
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
                  stat_prefix: $1
                  cluster: $2
                  access_log:
                    - name: envoy.access_loggers.file
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
                        path: $TOPO_DIR/access-$1.log
                        log_format:
                          text_format_source:
                            inline_string: "%UPSTREAM_HOST% %UPSTREAM_CLUSTER% %BYTES_RECEIVED% %BYTES_SENT% %RESPONSE_FLAGS% %REQUESTED_SERVER_NAME%\\n"
YAML
	shift 2
	for l in "$@"; do echo "                  $l"; done
}
lsn() { # lsn NAME PORT
	cat <<YAML
      - name: $1
        address: { socket_address: { address: 0.0.0.0, port_value: $2 } }
        filter_chains:
          - filters:
YAML
}
cluster() { # cluster NAME ADDR PORT
	cat <<YAML
      - name: $1
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: $1
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $2, port_value: $3 } } } } ] } ]
YAML
}
{
	echo "  static_resources:"
	echo "    listeners:"
	lsn echo 7000
	tp echo echo "idle_timeout: 2s"
	lsn sink 7001
	tp sink sink
	lsn source 7002
	tp source source
	lsn deny 7003
	cat <<YAML
              - name: envoy.filters.network.rbac
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
                  stat_prefix: deny
                  rules:
                    action: DENY
                    policies:
                      clients: { permissions: [ { any: true } ], principals: [ { source_ip: { address_prefix: 198.18.2.0, prefix_len: 24 } } ] }
YAML
	tp denied echo
	lsn dead 7004
	tp dead dead "max_connect_attempts: 2"
	lsn dur 7005
	tp dur echo "max_downstream_connection_duration: 1s"
	lsn resp 7006
	tp resp resp "idle_timeout: 5s"
	cat <<YAML
      - name: sni
        address: { socket_address: { address: 0.0.0.0, port_value: 443 } }
        listener_filters:
          - name: envoy.filters.listener.tls_inspector
            typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector }
        filter_chains:
          - filter_chain_match: { server_names: [a.test] }
            filters:
YAML
	tp pass_a tls_a "access_log_options: { flush_access_log_on_connected: true }"
	cat <<YAML
          - filter_chain_match: { server_names: ["*.b.test", b.test] }
            filters:
YAML
	tp pass_b tls_b
	cat <<YAML
      - name: sni_rbac
        address: { socket_address: { address: 0.0.0.0, port_value: 8443 } }
        listener_filters:
          - name: envoy.filters.listener.tls_inspector
            typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector }
        filter_chains:
          - filter_chain_match: { transport_protocol: tls }
            filters:
              - name: envoy.filters.network.rbac
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
                  stat_prefix: sni
                  rules:
                    action: DENY
                    policies:
                      no-b: { permissions: [ { requested_server_name: { exact: b.test } } ], principals: [ { any: true } ] }
YAML
	tp pass_any tls_a
	echo "    clusters:"
	cluster echo "$ua" 7000
	cluster sink "$ua" 7001
	cluster source "$ua" 7002
	cluster dead "$ua" 7999
	cluster resp "$ua" 6379
	cluster tls_a "$ua" 9443
	cluster tls_b "$ub" 9443
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }
mbufs() { curl -s "http://127.0.0.1:$admin_port/stats" | awk '/^dpdk\.mempool\..*\.in_use:/ {s += $2} END {print s + 0}'; }
client() { ip netns exec "$cns" $PY - "$us" "$@"; }
export PYTHONPATH="$ARION_SRC/tests/http${PYTHONPATH:+:$PYTHONPATH}"

# ---- a large transfer through an echo, byte-exact, the client's FIN carried over ----------
MIB=100
out=$(client $MIB <<'PY'
import hashlib, socket, sys, threading, time
from tcp_upstream import pattern
n = int(sys.argv[2]) << 20
s = socket.create_connection((sys.argv[1], 7000), timeout=20)
chunk = pattern(1 << 20)
def send():
    for _ in range(n >> 20):
        s.sendall(chunk)
    s.shutdown(socket.SHUT_WR)  # half-close: the echo must still come back
t0 = time.time()
th = threading.Thread(target=send)
th.start()
h, got = hashlib.sha256(), 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    h.update(b)
    got += len(b)
th.join()
want = hashlib.sha256(chunk * (n >> 20)).hexdigest()
print(got, "equal" if h.hexdigest() == want else "differ", "%.1f" % (time.time() - t0))
PY
)
set -- $out
[ "${1:-}" = $((MIB << 20)) ] && [ "${2:-}" = equal ] &&
	ok "$MIB MiB each way through tcp_proxy, byte-exact, echoed after the client's FIN (${3}s)" ||
	bad "echo of $MIB MiB: $out"
sleep 0.5
v=$(stat tcp.echo.downstream_cx_rx_bytes_total)
w=$(stat tcp.echo.downstream_cx_tx_bytes_total)
[ "$v" = $((MIB << 20)) ] && [ "$w" = $((MIB << 20)) ] &&
	ok "tcp.echo.downstream_cx_rx_bytes_total = tx = $v" || bad "tcp.echo rx $v tx $w"
line=$(head -1 "$TOPO_DIR/access-echo.log" 2>/dev/null)
[ "$line" = "$ua:7000 echo $((MIB << 20)) $((MIB << 20)) - -" ] &&
	ok "access log: $line" || bad "access log line: '$line'"

# ---- a Redis-like upstream: pipelined commands, a large value, half-close -------------------
out=$(client <<'PY'
import hashlib, socket, sys, threading
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
def bulk(v):
    return b"$%d\r\n%s\r\n" % (len(v), v)
N = 5000
req, want = [], []
for i in range(N):
    k, v = b"k%d" % i, b"v%d-" % i + b"x" * (i % 97)
    req += [cmd(b"SET", k, v), cmd(b"GET", k), cmd(b"INCR", b"n"), cmd(b"ECHO", v)]
    want += [b"+OK\r\n", bulk(v), b":%d\r\n" % (i + 1), bulk(v)]
big = bytes(range(256)) * (16 << 12)  # 16 MiB
req += [cmd(b"SET", b"big", big), cmd(b"GET", b"big"), cmd(b"NOPE"), cmd(b"DBSIZE")]
want += [b"+OK\r\n", bulk(big), b"-ERR unknown command 'nope'\r\n", b":%d\r\n" % (N + 2)]
req, want = b"".join(req), b"".join(want)
s = socket.create_connection((sys.argv[1], 7006), timeout=20)
def send():
    s.sendall(req)  # one burst: every command pipelined
    s.shutdown(socket.SHUT_WR)  # half-close: the answers must still come
th = threading.Thread(target=send)
th.start()
got = bytearray()
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    got += b
th.join()
s = socket.create_connection((sys.argv[1], 7006), timeout=20)
s.sendall(cmd(b"GET", b"k7") + cmd(b"QUIT") + cmd(b"PING"))
q = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    q += b
print(len(req), len(got), "equal" if bytes(got) == want else "differ",
      "quit" if q == bulk(b"v7-" + b"x" * 7) + b"+OK\r\n" else repr(q[:60]))
PY
)
set -- $out
[ "${3:-}" = equal ] && [ "${4:-}" = quit ] &&
	ok "Redis-like upstream: 20004 pipelined commands (${1} bytes, a 16 MiB value) answered byte-exact in order (${2} bytes) after the client's FIN; QUIT closes" ||
	bad "Redis-like upstream: $out"
sleep 0.3
v=$(stat tcp.resp.downstream_cx_total)
w=$(stat tcp.resp.downstream_cx_rx_bytes_total)
[ "$v" = 2 ] && [ "$w" = $(( ${1:-0} + 49 )) ] && ok "tcp.resp.downstream_cx_total = 2, rx_bytes = $w" ||
	bad "tcp.resp cx_total $v rx_bytes $w"

# ---- half-close the other way: the upstream's FIN first, the client still sends -------------
out=$(client <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 7001), timeout=20)
s.sendall(b"abc")
s.shutdown(socket.SHUT_WR)
d = b""
while True:
    b = s.recv(100)
    if not b:
        break
    d += b
print(d.decode().split()[0])
PY
)
[ "$out" = 3 ] && ok "sink answered after the client's FIN (its 3 bytes counted)" || bad "sink: '$out'"

# ---- a slow upstream reader: Arion stops reading the client; mbufs bounded -----------------
base=$(mbufs)
client 64 >"$TOPO_DIR/slow.out" 2>&1 <<'PY' &
import hashlib, socket, sys
from tcp_upstream import pattern
n = int(sys.argv[2])
s = socket.create_connection((sys.argv[1], 7001), timeout=30)
chunk = pattern(1 << 20)
for _ in range(n):
    s.sendall(chunk)
s.shutdown(socket.SHUT_WR)
d = b""
while True:
    b = s.recv(100)
    if not b:
        break
    d += b
cnt, sha = d.decode().split()
print(cnt, "equal" if sha == hashlib.sha256(chunk * n).hexdigest() else "differ")
PY
cpid=$!
sleep 1.8 # the sink holds its reads for 3 s
held=$(mbufs)
wait $cpid
out=$(cat "$TOPO_DIR/slow.out")
[ "$out" = "$((64 << 20)) equal" ] && ok "64 MiB to a slow reader arrived byte-exact" || bad "slow reader: $out"
grow=$((held - base))
# the bound: the client connection's receive queue plus the upstream's
# send queue (lib/tcp's buffers, 256 KiB each by default), in mbufs of
# ~1.5-2 KiB, with room for the rest of the traffic; 64 MiB held would
# be > 32768
[ $grow -lt 2048 ] && ok "mbufs held while the reader stalled: +$grow (64 MiB offered)" ||
	bad "mbufs grew by $grow while the reader stalled"
v=$(stat tcp.sink.downstream_flow_control_paused_reading_total)
w=$(stat tcp.sink.downstream_flow_control_resumed_reading_total)
[ "$v" -ge 1 ] && [ "$w" -ge 1 ] && ok "tcp.sink paused_reading_total $v, resumed $w" ||
	bad "tcp.sink paused $v resumed $w"

# ---- a client that does not read: the upstream is paused ------------------------------------
base=$(mbufs)
client >"$TOPO_DIR/src.out" 2>&1 <<'PY' &
import hashlib, socket, sys, time
from tcp_upstream import pattern
s = socket.create_connection((sys.argv[1], 7002), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
time.sleep(2.5)
h, n = hashlib.sha256(), 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, "equal" if h.hexdigest() == hashlib.sha256(pattern(1 << 20) * 32).hexdigest() else "differ")
PY
cpid=$!
sleep 1.5
held=$(mbufs)
wait $cpid
out=$(cat "$TOPO_DIR/src.out")
[ "$out" = "$((32 << 20)) equal" ] && ok "32 MiB to a client that waited 2.5 s arrived byte-exact" ||
	bad "source: $out"
grow=$((held - base))
[ $grow -lt 2048 ] && ok "mbufs held while the client did not read: +$grow" || bad "mbufs grew by $grow"
v=$(stat cluster.source.upstream_flow_control_paused_reading_total)
[ "$v" -ge 1 ] && ok "cluster.source.upstream_flow_control_paused_reading_total = $v" || bad "upstream paused = $v"

# ---- idle_timeout and max_downstream_connection_duration -----------------------------------
for c in "7000 echo idle_timeout" "7005 dur max_downstream_connection_duration"; do
	set -- $c
	out=$(client "$1" <<'PY'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"x")
first = s.recv(1)
t0 = time.time()
try:
    rest = s.recv(1)
except OSError:
    rest = b""
print(first.decode() or "-", "closed" if not rest else "data", int(time.time() - t0 + 0.5))
PY
)
	set -- $c
	case "$out" in
	"x closed "[1-5]) ok "$3: echoed, then closed by Arion (after ${out##* } s)" ;;
	*) bad "$3: '$out'" ;;
	esac
	v=$(stat "tcp.$2.$3")
	[ "$v" -ge 1 ] && ok "tcp.$2.$3 = $v" || bad "tcp.$2.$3 = $v"
done

# ---- network RBAC denies before tcp_proxy ------------------------------------------------------
out=$(client <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 7003), timeout=10)
s.sendall(b"secret")
try:
    d = s.recv(100)
except OSError:
    d = b""
print("closed" if not d else d.decode())
PY
)
[ "$out" = closed ] && ok "RBAC DENY: closed, nothing echoed" || bad "RBAC DENY: '$out'"
v=$(stat deny.rbac.denied)
[ "$v" = 1 ] && ok "deny.rbac.denied = 1" || bad "deny.rbac.denied = $v"

# ---- no upstream: max_connect_attempts, UF ---------------------------------------------------------
out=$(client <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 7004), timeout=10)
try:
    d = s.recv(100)
except OSError:
    d = b""
print("closed" if not d else "data")
PY
)
[ "$out" = closed ] && ok "no upstream: the client is closed" || bad "dead upstream: '$out'"
sleep 0.5
v=$(stat cluster.dead.upstream_cx_connect_fail)
w=$(stat cluster.dead.upstream_cx_connect_attempts_exceeded)
[ "$v" = 2 ] && [ "$w" = 1 ] && ok "2 connect attempts failed, attempts_exceeded 1" ||
	bad "connect_fail $v attempts_exceeded $w"
line=$(head -1 "$TOPO_DIR/access-dead.log" 2>/dev/null)
[ "$line" = "$ua:7999 dead 0 0 UF -" ] && ok "access log: $line" || bad "dead access log: '$line'"

# ---- TLS passthrough by SNI -----------------------------------------------------------------------
for n in a b; do
	out=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" \
		--resolve "$n.test:443:$us" "https://$n.test/" 2>&1 | grep -c "s_server")
	[ "${out:-0}" -ge 1 ] && ok "$n.test: passed through to its own s_server (its certificate verified)" ||
		bad "$n.test passthrough: $out"
done
out=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" \
	--resolve "c.test:443:$us" "https://c.test/" 2>&1)
[ $? != 0 ] && ok "c.test: no chain, refused" || bad "c.test was served"
line=$(head -1 "$TOPO_DIR/access-pass_b.log" 2>/dev/null)
case "$line" in "$ub:9443 tls_b "*" - b.test") ok "access log: $line" ;; *) bad "pass_b log: '$line'" ;; esac
# network RBAC reads the passed-through ClientHello's SNI (requested_server_name)
out=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" \
	--resolve "a.test:8443:$us" "https://a.test:8443/" 2>&1 | grep -c "s_server")
[ "${out:-0}" -ge 1 ] && ok "RBAC by SNI: a.test passed through" || bad "RBAC by SNI, a.test: $out"
ip netns exec "$cns" curl -sS --max-time 10 -k --resolve "b.test:8443:$us" \
	"https://b.test:8443/" >/dev/null 2>&1 && bad "RBAC by SNI: b.test was served" ||
	ok "RBAC by SNI: b.test denied (requested_server_name)"
v=$(stat sni.rbac.denied)
w=$(stat sni.rbac.allowed)
[ "$v" = 1 ] && [ "$w" = 1 ] && ok "sni.rbac.denied 1, allowed 1" || bad "sni.rbac denied $v allowed $w"
n=$(wc -l <"$TOPO_DIR/access-pass_a.log" 2>/dev/null)
[ "${n:-0}" = 2 ] && ok "flush_access_log_on_connected: a line at connect and one at the end" ||
	bad "pass_a log has ${n:-0} lines: $(cat "$TOPO_DIR/access-pass_a.log" 2>/dev/null)"
v=$(stat tcp.pass_a.downstream_cx_total)
[ "$v" = 1 ] && ok "tcp.pass_a.downstream_cx_total = 1" || bad "tcp.pass_a.downstream_cx_total = $v"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
