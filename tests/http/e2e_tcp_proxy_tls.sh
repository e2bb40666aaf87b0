#!/usr/bin/env bash
# tcp_proxy with TLS (issue 21, items 1 and 5): the real binary between a
# Python TLS client (tcp_upstream.py's tls_transfer) and raw TCP upstreams.
#
#   :7443  DownstreamTlsContext + tcp_proxy -> plain echo: TLS terminated,
#          100 MiB each way byte-exact; the client's close_notify becomes
#          the upstream's FIN, the upstream's FIN comes back as close_notify
#   :7444  the same -> sink (reads nothing for 2 s): Arion stops decrypting
#          the client (paused_reading counted), mbufs stay bounded;
#          transport_socket_connect_timeout 1s: a stalled handshake closed
#   :7445  the same -> source (32 MiB) to a client that reads nothing for
#          2 s: the upstream is paused, mbufs stay bounded
#   :7446  tcp_proxy (no TLS) -> a TLS echo upstream: passthrough, 100 MiB
#          each way byte-exact, close_notify and FIN both ways
#   :7447  the same -> echo with idle_timeout 1s: closed with close_notify
#   :7448  network RBAC DENY authenticated {} before a TLS-terminating
#          tcp_proxy: a TLS client is closed, nothing relayed
#   :7450  mTLS + network RBAC ALLOW authenticated principal_name (a URI
#          SAN) before a TLS-terminating tcp_proxy -> echo: the allowed
#          client certificate is relayed, another SAN is closed, counted
#   :7449  tcp_proxy -> a cluster with an UpstreamTlsContext (TLS
#          origination, issue 18/21): a plain client's 32 MiB each way
#          byte-exact through the TLS echo, validated against the test's CA
#          and SAN; the client's FIN goes on as close_notify + FIN and the
#          echo's close_notify comes back as FIN (half-close both ways);
#          cluster.tlsorig.ssl.handshake counted
#   :7451  the same cluster validated against another CA: fails closed (the
#          client is closed, nothing echoed), counted in
#          tcp.up_badca.upstream_tls_handshake_failed and
#          cluster.tlsbadca.ssl.fail_verify_error
#   :7453  tcp_proxy -> cluster tlstsm: transport_socket_matches, round
#          robin over the TLS echo (its endpoint's metadata names the match:
#          TLS originated) and the plain echo (no metadata, no cluster
#          transport_socket: plain): two connections, both byte-exact, one
#          handshake
#   :7452  TLS terminated, then originated again (re-encrypt): 16 MiB each
#          way byte-exact, close_notify back
#   a plaintext client on :7443: the handshake fails, nothing is relayed
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
PY=/usr/bin/python3
topo_require ip ethtool curl openssl $PY || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-tpt
http_e2e_topo || exit 1

d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "tpt CA" && pki_ca ca2 "other CA" || exit 1
# keys as NAME.pem.key: tcp_upstream.py loads a certificate's key from beside it
for n in t u; do
	pki_leaf $n ca $n.test "subjectAltName=DNS:$n.test" && mv "$d/$n.key" "$d/$n.pem.key" || exit 1
done
for n in cok cbad; do
	pki_leaf $n ca $n "subjectAltName=URI:spiffe://arion.test/$n" && mv "$d/$n.key" "$d/$n.pem.key" || exit 1
done

up() { # up NAME ADDR PORT MODE [ARG]
	topo_bg "$1" ip netns exec "$uns" $PY "$ARION_SRC/tests/http/tcp_upstream.py" "$2" "$3" "$4" ${5:-}
	topo_wait_log "$TOPO_DIR/$1.log" ready 10 || { echo "upstream $1 did not start"; exit 1; }
}
up echo "$ua" 7000 echo
up sink "$ua" 7001 sink 2
up source "$ua" 7002 source 32
up tlsecho "$ua" 9443 tlsecho "$d/u.pem"

lsn() { # lsn NAME PORT CLUSTER TLS(0/1) [MORE TcpProxy lines]
	cat <<YAML
      - name: $1
        address: { socket_address: { address: 0.0.0.0, port_value: $2 } }
        filter_chains:
          - filters:
YAML
	[ "$1" = tls_deny ] && cat <<YAML
              - name: envoy.filters.network.rbac
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
                  stat_prefix: tls_deny
                  rules:
                    action: DENY
                    policies:
                      tls-clients: { permissions: [ { any: true } ], principals: [ { authenticated: {} } ] }
YAML
	cat <<YAML
              - name: envoy.filters.network.tcp_proxy
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
                  stat_prefix: $1
                  cluster: $3
YAML
	[ -n "${5:-}" ] && echo "                  $5"
	[ "$4" = 1 ] && cat <<YAML
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                common_tls_context:
                  tls_certificate_sds_secret_configs: [ { name: cert-t } ]
YAML
	[ "$1" = tls_echo ] && echo "            transport_socket_connect_timeout: 1s"
	return 0
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
	cat <<YAML
  static_resources:
    secrets:
      - name: cert-t
        tls_certificate: { certificate_chain: { filename: $d/t.pem }, private_key: { filename: $d/t.pem.key } }
      - name: client-ca
        validation_context: { trusted_ca: { filename: $d/ca.pem } }
      - name: other-ca
        validation_context: { trusted_ca: { filename: $d/ca2.pem } }
    listeners:
YAML
	lsn tls_echo 7443 echo 1
	lsn tls_sink 7444 sink 1
	lsn tls_source 7445 source 1
	lsn pass 7446 tlsecho 0
	lsn tls_idle 7447 echo 1 "idle_timeout: 1s"
	lsn tls_deny 7448 echo 1
	lsn up_tls 7449 tlsorig 0
	lsn up_badca 7451 tlsbadca 0 "max_connect_attempts: 2"
	lsn reenc 7452 tlsorig 1
	lsn up_tsm 7453 tlstsm 0
	cat <<YAML
      - name: mtls_rbac
        address: { socket_address: { address: 0.0.0.0, port_value: 7450 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.rbac
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
                  stat_prefix: mtls_rbac
                  rules:
                    action: ALLOW
                    policies:
                      ok: { permissions: [ { any: true } ], principals: [ { authenticated: { principal_name: { exact: "spiffe://arion.test/cok" } } } ] }
              - name: envoy.filters.network.tcp_proxy
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
                  stat_prefix: mtls_rbac
                  cluster: echo
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                require_client_certificate: true
                common_tls_context:
                  tls_certificate_sds_secret_configs: [ { name: cert-t } ]
                  validation_context_sds_secret_config: { name: client-ca }
YAML
	echo "    clusters:"
	cluster echo "$ua" 7000
	cluster sink "$ua" 7001
	cluster source "$ua" 7002
	cluster tlsecho "$ua" 9443
	for c in "tlsorig client-ca" "tlsbadca other-ca"; do
		set -- $c
		cluster $1 "$ua" 9443
		cat <<YAML
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: u.test
            common_tls_context:
              combined_validation_context:
                default_validation_context:
                  match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: u.test } } ]
                validation_context_sds_secret_config: { name: $2 }
YAML
	done
	cat <<YAML
      - name: tlstsm
        type: STATIC
        connect_timeout: 2s
        lb_policy: ROUND_ROBIN
        load_assignment:
          cluster_name: tlstsm
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $ua, port_value: 9443 } } }
                  metadata: { filter_metadata: { envoy.transport_socket_match: { name: tlstsm/tls/0 } } }
                - endpoint: { address: { socket_address: { address: $ua, port_value: 7000 } } }
        transport_socket_matches:
          - name: tlstsm/tls/0
            match: { name: tlstsm/tls/0 }
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
                sni: u.test
                common_tls_context:
                  combined_validation_context:
                    default_validation_context:
                      match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: u.test } } ]
                    validation_context_sds_secret_config: { name: client-ca }
YAML
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }
mbufs() { curl -s "http://127.0.0.1:$admin_port/stats" | awk '/^dpdk\.mempool\..*\.in_use:/ {s += $2} END {print s + 0}'; }
export PYTHONPATH="$ARION_SRC/tests/http${PYTHONPATH:+:$PYTHONPATH}"
# tls PORT SNI MIB [WAIT]: "<bytes read> <sha256 equal to MIB MiB of the pattern|differ> <notify|eof> <head>"
tls() {
	ip netns exec "$cns" $PY - "$us" "$@" "$d/ca.pem" <<'PY'
import hashlib, sys
from tcp_upstream import pattern, tls_transfer
a, port, sni, mib = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
wait = float(sys.argv[5]) if len(sys.argv) > 6 else 0.0
got, sha, notify, head = tls_transfer(a, port, sni, sys.argv[-1], mib, wait)
want = hashlib.sha256(pattern(1 << 20) * mib).hexdigest()
print(got, "equal" if sha == want else "differ", "notify" if notify else "eof",
      head.decode(errors="replace").split("\n")[0] if got < 200 else "-")
PY
}
MIB=100
want32=$($PY -c "import hashlib,sys; sys.path.insert(0,'$ARION_SRC/tests/http'); from tcp_upstream import pattern; print(hashlib.sha256(pattern(1<<20)*32).hexdigest())")

# ---- TLS terminated, then relayed to a plain upstream ----------------------------------------
t0=$(date +%s.%N)
out=$(tls 7443 t.test $MIB 2>&1)
t1=$(date +%s.%N)
[ "$out" = "$((MIB << 20)) equal notify -" ] &&
	ok "$MIB MiB each way, TLS terminated in front of tcp_proxy, byte-exact; the upstream's FIN came back as close_notify ($(awk "BEGIN {printf \"%.1f\", $t1 - $t0}")s)" ||
	bad "TLS-terminated echo of $MIB MiB: $out"
sleep 0.3
v=$(stat tcp.tls_echo.downstream_cx_rx_bytes_total)
w=$(stat tcp.tls_echo.downstream_cx_tx_bytes_total)
[ "$v" = $((MIB << 20)) ] && [ "$w" = $((MIB << 20)) ] &&
	ok "tcp.tls_echo rx = tx = $v plaintext bytes" || bad "tcp.tls_echo rx $v tx $w"

# ---- a slow upstream reader behind TLS termination -------------------------------------------
base=$(mbufs)
tls 7444 t.test 32 >"$TOPO_DIR/slow.out" 2>&1 &
cpid=$!
sleep 1.2 # the sink holds its reads for 2 s
held=$(mbufs)
wait $cpid
out=$(cat "$TOPO_DIR/slow.out")
case "$out" in
*" notify $((32 << 20)) $want32") ok "32 MiB over TLS to a slow reader arrived byte-exact" ;;
*) bad "slow reader behind TLS: $out" ;;
esac
grow=$((held - base))
[ $grow -lt 2048 ] && ok "mbufs held while the reader stalled: +$grow (32 MiB offered over TLS)" ||
	bad "mbufs grew by $grow while the reader stalled"
v=$(stat tcp.tls_sink.downstream_flow_control_paused_reading_total)
[ "$v" -ge 1 ] && ok "tcp.tls_sink paused_reading_total $v" || bad "tcp.tls_sink paused $v"

# ---- a TLS client that does not read: the upstream is paused ---------------------------------
base=$(mbufs)
tls 7445 t.test 0 2 >"$TOPO_DIR/src.out" 2>&1 &
cpid=$!
sleep 1.2
held=$(mbufs)
wait $cpid
out=$(cat "$TOPO_DIR/src.out")
got=$(echo "$out" | awk '{print $1}')
[ "$got" = $((32 << 20)) ] && case "$out" in *" notify "*) true ;; *) false ;; esac &&
	ok "32 MiB over TLS to a client that waited 2 s, then close_notify" || bad "source behind TLS: $out"
grow=$((held - base))
[ $grow -lt 2048 ] && ok "mbufs held while the TLS client did not read: +$grow" || bad "mbufs grew by $grow"
v=$(stat cluster.source.upstream_flow_control_paused_reading_total)
[ "$v" -ge 1 ] && ok "cluster.source.upstream_flow_control_paused_reading_total = $v" || bad "upstream paused = $v"

# ---- passthrough to a TLS upstream ------------------------------------------------------------
out=$(tls 7446 u.test $MIB 2>&1)
[ "$out" = "$((MIB << 20)) equal notify -" ] &&
	ok "$MIB MiB each way through tcp_proxy to a TLS upstream (its certificate), byte-exact, close_notify back" ||
	bad "TLS upstream: $out"

# ---- idle_timeout behind TLS termination: close_notify, then FIN ----------------------------
out=$(ip netns exec "$cns" $PY - "$us" "$d/ca.pem" <<'PY'
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.options &= ~getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)  # a bare FIN is no close_notify
s = ctx.wrap_socket(socket.create_connection((sys.argv[1], 7447), timeout=10),
                    server_hostname="t.test", suppress_ragged_eofs=False)
s.sendall(b"x")
first = s.recv(1)
t0 = time.time()
try:
    rest = s.recv(1)
    how = "notify" if rest == b"" else "data"
except ssl.SSLZeroReturnError:
    how = "notify"
except (ssl.SSLEOFError, OSError):
    how = "eof"
print(first.decode() or "-", how, int(time.time() - t0 + 0.5))
PY
)
case "$out" in
"x notify "[1-3]) ok "idle_timeout behind TLS: echoed, then close_notify after ${out##* } s" ;;
*) bad "idle_timeout behind TLS: '$out'" ;;
esac
v=$(stat tcp.tls_idle.idle_timeout)
[ "$v" = 1 ] && ok "tcp.tls_idle.idle_timeout = 1" || bad "tcp.tls_idle.idle_timeout = $v"

# ---- transport_socket_connect_timeout (1s on :7443's chain) ------------------------------------
# nine bytes of a ClientHello, then nothing: closed at the deadline, not at
# the idle timeout (1 h), and counted on the listener
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import socket, sys, time
s = socket.create_connection((sys.argv[1], 7443), timeout=6)
s.sendall(bytes.fromhex("16030100400100003c"))
t0 = time.monotonic()
try:
    how = "closed" if not s.recv(100) else "answered"
except socket.timeout:
    how = "open"
except OSError:
    how = "closed"
w = time.monotonic() - t0
print(how, "in-time" if 0.8 <= w <= 4 else "after-%.1fs" % w)
PY
)
[ "$out" = "closed in-time" ] && ok "transport_socket_connect_timeout: a stalled handshake closed at 1 s" ||
	bad "transport_socket_connect_timeout: '$out'"
v=$(stat listener.0.0.0.0_7443.downstream_cx_transport_socket_connect_timeout)
[ "$v" = 1 ] && ok "listener.0.0.0.0_7443.downstream_cx_transport_socket_connect_timeout = 1" ||
	bad "listener.0.0.0.0_7443.downstream_cx_transport_socket_connect_timeout = $v"

# ---- network RBAC: authenticated {} matches a TLS-terminated session --------------------------
out=$(ip netns exec "$cns" $PY - "$us" "$d/ca.pem" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection((sys.argv[1], 7448), timeout=10), server_hostname="t.test")
s.sendall(b"secret")
try:
    d = s.recv(100)
except OSError:
    d = b""
print("closed" if not d else d.decode())
PY
)
[ "$out" = closed ] && ok "RBAC DENY authenticated {} behind TLS termination: closed, nothing echoed" ||
	bad "RBAC authenticated: '$out'"
v=$(stat tls_deny.rbac.denied)
[ "$v" = 1 ] && ok "tls_deny.rbac.denied = 1" || bad "tls_deny.rbac.denied = $v"

# ---- network RBAC principal_name on the client certificate's URI SAN -----------------------
mt() { # mt CERT: "echoed" or "closed"
	ip netns exec "$cns" $PY - "$us" "$d/ca.pem" "$d/$1.pem" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.load_cert_chain(sys.argv[3], sys.argv[3] + ".key")
try:
    s = ctx.wrap_socket(socket.create_connection((sys.argv[1], 7450), timeout=10), server_hostname="t.test")
    s.sendall(b"hello")
    d = s.recv(100)
except OSError:
    d = b""
print("echoed" if d == b"hello" else "closed")
PY
}
o="$(mt cok) $(mt cbad)"
[ "$o" = "echoed closed" ] && ok "network RBAC principal_name: the allowed URI SAN relayed, another closed" ||
	bad "network RBAC principal_name cok cbad: '$o', want 'echoed closed'"
v=$(stat mtls_rbac.rbac.allowed)
w=$(stat mtls_rbac.rbac.denied)
[ "$v" = 1 ] && [ "$w" = 1 ] && ok "mtls_rbac.rbac.allowed = 1, denied = 1" || bad "mtls_rbac allowed $v denied $w"

# ---- TLS origination: a plain client, tcp_proxy, a TLS upstream -------------------------------
# plain PORT MIB: "<bytes read> <equal|differ>": MIB MiB of the pattern sent,
# then FIN while reading on, to the end
plain() {
	ip netns exec "$cns" $PY - "$us" "$@" <<'PY'
import hashlib, socket, sys, threading
from tcp_upstream import pattern
n = int(sys.argv[3])
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
chunk = pattern(1 << 20)
def send():
    try:
        for _ in range(n):
            s.sendall(chunk)
        s.shutdown(socket.SHUT_WR)  # half-close: the echo must still come back
    except OSError:
        pass
th = threading.Thread(target=send)
th.start()
h, got = hashlib.sha256(), 0
try:
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        h.update(b)
        got += len(b)
except OSError:
    pass
th.join()
print(got, "equal" if h.hexdigest() == hashlib.sha256(chunk * n).hexdigest() else "differ")
PY
}
OMIB=32
out=$(plain 7449 $OMIB 2>&1)
[ "$out" = "$((OMIB << 20)) equal" ] &&
	ok "$OMIB MiB each way, plain client -> tcp_proxy -> TLS upstream (originated, CA and SAN verified), byte-exact; FIN -> close_notify -> FIN" ||
	bad "TLS origination: $out"
sleep 0.3
v=$(stat tcp.up_tls.downstream_cx_rx_bytes_total)
w=$(stat tcp.up_tls.downstream_cx_tx_bytes_total)
[ "$v" = $((OMIB << 20)) ] && [ "$w" = $((OMIB << 20)) ] &&
	ok "tcp.up_tls rx = tx = $v plaintext bytes" || bad "tcp.up_tls rx $v tx $w"
v=$(stat cluster.tlsorig.ssl.handshake)
w=$(stat tcp.up_tls.upstream_tls_handshake_failed)
[ "$v" = 1 ] && [ "$w" = 0 ] && ok "cluster.tlsorig.ssl.handshake = 1, no handshake failed" ||
	bad "cluster.tlsorig.ssl.handshake $v, handshake_failed $w"

out=$(plain 7451 1 2>&1)
[ "$out" = "0 differ" ] && ok "TLS origination against another CA: closed, nothing relayed (fail closed)" ||
	bad "TLS origination, wrong CA: $out"
sleep 0.3
v=$(stat tcp.up_badca.upstream_tls_handshake_failed)
w=$(stat cluster.tlsbadca.ssl.fail_verify_error)
x=$(stat cluster.tlsbadca.upstream_cx_connect_fail)
[ "$v" = 2 ] && [ "$w" = 2 ] && [ "$x" = 2 ] &&
	ok "tcp.up_badca.upstream_tls_handshake_failed = 2 (max_connect_attempts 2), ssl.fail_verify_error = 2, upstream_cx_connect_fail = 2" ||
	bad "bad CA: handshake_failed $v, fail_verify_error $w, connect_fail $x"

out=$(plain 7453 1 2>&1)$(plain 7453 1 2>&1)
[ "$out" = "$((1 << 20)) equal$((1 << 20)) equal" ] &&
	ok "transport_socket_matches: the matched endpoint over TLS, the other plain, both byte-exact" ||
	bad "transport_socket_matches through tcp_proxy: $out"
sleep 0.3
v=$(stat cluster.tlstsm.ssl.handshake)
w=$(stat tcp.up_tsm.upstream_tls_handshake_failed)
[ "$v" = 1 ] && [ "$w" = 0 ] && ok "cluster.tlstsm.ssl.handshake = 1 (the matched endpoint's), none failed" ||
	bad "cluster.tlstsm.ssl.handshake $v, handshake_failed $w"

out=$(tls 7452 t.test 16 2>&1)
[ "$out" = "$((16 << 20)) equal notify -" ] &&
	ok "16 MiB each way, TLS terminated then originated again (re-encrypt), byte-exact, close_notify back" ||
	bad "re-encrypt: $out"

# ---- not TLS: the handshake fails, the upstream hears nothing ----------------------------------
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 7443), timeout=10)
s.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 300)
d = b""
try:
    while True:
        b = s.recv(100)
        if not b:
            break
        d += b
except OSError:
    pass
print("closed" if b"GET" not in d else "echoed")
PY
)
[ "$out" = closed ] && ok "plaintext on the TLS chain: closed, nothing relayed" || bad "plaintext on TLS: $out"
sleep 0.3
v=$(stat tcp.tls_echo.downstream_cx_rx_bytes_total)
[ "$v" = $((MIB << 20)) ] && ok "tcp.tls_echo rx unchanged ($v)" || bad "tcp.tls_echo rx now $v"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
