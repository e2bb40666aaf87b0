#!/usr/bin/env bash
# TLS termination end to end (issue 18): curl over TLS 1.2 and 1.3 through
# Arion to the plain nginx upstream, with certificates made here.
#
#   :443   tls_inspector; two chains chosen by SNI (a.test, b.test), each
#          with its own certificate; another name matches no chain: refused
#   :8443  one chain, require_sni: a client sending no SNI is refused;
#          transport_socket_connect_timeout 1s: a stalled handshake is closed
#   :9443  one chain, require_client_certificate (mTLS): a client with a
#          certificate from the trusted CA is served, one without refused
#   :9444  mTLS + HTTP RBAC ALLOW on the client certificate's names
#          (authenticated principal_name: URI SANs, DNS SANs, subject; and
#          authenticated {}): an allowed SAN is served, another gets 403
#
# and, on :443, clients other than curl: Python's ssl sending its
# ClientHello in 7-byte records, a GREASE-ing ClientHello, OpenSSL with
# max_fragment_length 512, gnutls-cli (TLS 1.3, 1.2, resumption, TLS
# 1.0/1.1 refused).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl nginx openssl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-tl
http_e2e_topo || exit 1
http_e2e_nginx || exit 1

# ---- certificates: a server CA (a.test, b.test) and a client CA --------------------------
d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "arion test server CA" && pki_ca cca "arion test client CA" &&
	pki_leaf a ca a.test "subjectAltName=DNS:a.test" &&
	pki_leaf b ca b.test "subjectAltName=DNS:b.test" &&
	pki_leaf client cca client "extendedKeyUsage=clientAuth" &&
	pki_leaf cok cca cok "subjectAltName=URI:spiffe://arion.test/allowed,DNS:no.test" &&
	pki_leaf cdns cca cdns "subjectAltName=DNS:dns-ok.test" &&
	pki_leaf cbad cca cbad "subjectAltName=URI:spiffe://arion.test/other,DNS:other.test" || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"

hcm() { # hcm PREFIX (a filters: list, indented for a filter chain)
	cat <<YAML
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: $1
                  route_config:
                    virtual_hosts:
                      - { name: all, domains: ["*"], require_tls: ALL, routes: [ { match: { prefix: "/" }, route: { cluster: a } } ] }
                  access_log:
                    - name: envoy.access_loggers.file
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
                        path: $TOPO_DIR/access-$1.log
                        log_format:
                          text_format_source:
                            inline_string: "%REQ(:PATH)% %DOWNSTREAM_TLS_VERSION% %REQUESTED_SERVER_NAME% %DOWNSTREAM_TLS_CIPHER% %DOWNSTREAM_PEER_SUBJECT% %DOWNSTREAM_PEER_ISSUER% %DOWNSTREAM_PEER_SERIAL% %DOWNSTREAM_PEER_FINGERPRINT_256% %DOWNSTREAM_PEER_CERT_V_END(%Y)%\\n"
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
YAML
}
dtc() { # dtc CERT_SECRET [MORE DownstreamTlsContext lines]
	cat <<YAML
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                common_tls_context:
                  tls_certificate_sds_secret_configs: [ { name: $1 } ]
YAML
	shift
	for l in "$@"; do echo "                $l"; done
}
{
	cat <<YAML
  static_resources:
    secrets:
      - name: cert-a
        tls_certificate: { certificate_chain: { filename: $d/a.pem }, private_key: { filename: $d/a.key } }
      - name: cert-b
        tls_certificate: { certificate_chain: { filename: $d/b.pem }, private_key: { filename: $d/b.key } }
      - name: client-ca
        validation_context: { trusted_ca: { filename: $d/cca.pem } }
    listeners:
      - name: sni
        address: { socket_address: { address: 0.0.0.0, port_value: 443 } }
        listener_filters:
          - name: envoy.filters.listener.tls_inspector
            typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector }
        filter_chains:
          - name: a
            filter_chain_match: { server_names: [a.test] }
YAML
	dtc cert-a
	hcm tls_a
	cat <<YAML
          - name: b
            filter_chain_match: { server_names: [b.test] }
YAML
	dtc cert-b
	hcm tls_b
	cat <<YAML
      - name: need_sni
        address: { socket_address: { address: 0.0.0.0, port_value: 8443 } }
        filter_chains:
          - name: only
            transport_socket_connect_timeout: 1s
YAML
	dtc cert-a "require_sni: true"
	hcm tls_sni
	cat <<YAML
      - name: mtls
        address: { socket_address: { address: 0.0.0.0, port_value: 9443 } }
        filter_chains:
          - name: only
YAML
	dtc cert-b
	echo "                  validation_context_sds_secret_config: { name: client-ca }"
	echo "                require_client_certificate: true"
	hcm tls_m
	cat <<YAML
      - name: mtls_rbac
        address: { socket_address: { address: 0.0.0.0, port_value: 9444 } }
        filter_chains:
          - name: only
YAML
	dtc cert-b
	echo "                  validation_context_sds_secret_config: { name: client-ca }"
	echo "                require_client_certificate: true"
	cat <<YAML
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: tls_r
                  route_config:
                    virtual_hosts:
                      - { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, route: { cluster: a } } ] }
                  http_filters:
                    - name: envoy.filters.http.rbac
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC
                        rules:
                          action: ALLOW
                          policies:
                            spiffe:
                              permissions: [ { any: true } ]
                              principals: [ { authenticated: { principal_name: { exact: "spiffe://arion.test/allowed" } } } ]
                            dns:
                              permissions: [ { any: true } ]
                              principals:
                                - and_ids: { ids: [ { authenticated: {} }, { authenticated: { principal_name: { exact: dns-ok.test } } } ] }
                            subject:
                              permissions: [ { any: true } ]
                              principals: [ { authenticated: { principal_name: { exact: "CN=client" } } } ]
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
      - name: a
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: a
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8080 } } } } ] } ]
YAML
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

res() { echo "--resolve $1:$2:$us"; }
# get NAME PORT [CURL ARGS]: the body, or "ERR<curl exit code>"
get() {
	local n=$1 p=$2
	shift 2
	local out
	out=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" $(res "$n" "$p") \
		"$@" "https://$n:$p/" 2>"$TOPO_DIR/curl.err") || out="ERR$?"
	echo "$out"
}

for v in 1.2 1.3; do
	o=$(get a.test 443 --tlsv$v --tls-max $v)
	[ "$o" = upstream-a ] && ok "TLS $v, SNI a.test: served through Arion ($o)" ||
		bad "TLS $v, SNI a.test: '$o' $(cat "$TOPO_DIR/curl.err")"
done
# the connection's TLS as the request sees it: no require_tls redirect
# (every virtual host here has require_tls: ALL), x-forwarded-proto https,
# and the access log's %DOWNSTREAM_TLS_VERSION% etc.
o=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" $(res a.test 443) --tlsv1.3 \
	-D - -o /dev/null "https://a.test:443/echo" 2>&1 | tr -d '\r' | grep -i -E '^(HTTP/|x-seen-proto)' | tr 'A-Z\n' 'a-z ')
[ "$o" = "http/1.1 200 ok x-seen-proto: https " ] &&
	ok "require_tls satisfied over TLS; the upstream saw x-forwarded-proto https" ||
	bad "over TLS: '$o'"
for i in $(seq 20); do grep -q '^/echo ' "$TOPO_DIR/access-tls_a.log" 2>/dev/null && break; sleep 0.1; done
o=$(grep '^/echo ' "$TOPO_DIR/access-tls_a.log" 2>/dev/null | head -1)
case "$o" in "/echo TLSv1.3 a.test TLS_AES_"*) ok "access log: $o" ;;
*) bad "access log TLS fields: '$o'" ;; esac
o=$(get b.test 443)
[ "$o" = upstream-a ] && ok "SNI b.test: the other chain's certificate verified for b.test" ||
	bad "SNI b.test: '$o' $(cat "$TOPO_DIR/curl.err")"
# the certificate each name got: its subject
for n in a b; do
	subj=$(ip netns exec "$cns" openssl s_client -connect "$us:443" -servername "$n.test" \
		</dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null)
	case "$subj" in *"$n.test"*) ok "SNI $n.test chose the chain with certificate CN=$n.test" ;;
	*) bad "SNI $n.test: certificate '$subj'" ;; esac
done
# resumption (one worker here): by ticket, and by session id from the
# worker's session cache for a TLS 1.2 client that sends no ticket
resumed() { # resumed OPTS...: "Reused" or "New" on a second connection
	local f="$TOPO_DIR/sess.pem"
	rm -f "$f"
	ip netns exec "$cns" openssl s_client -connect "$us:443" -servername a.test "$@" \
		-sess_out "$f" </dev/null >/dev/null 2>&1
	ip netns exec "$cns" openssl s_client -connect "$us:443" -servername a.test "$@" \
		-sess_in "$f" </dev/null 2>/dev/null | grep -o -m1 -E '^(Reused|New),'
}
o=$(resumed -tls1_2)
[ "$o" = "Reused," ] && ok "TLS 1.2: resumed by ticket" || bad "TLS 1.2 ticket resumption: '$o'"
o=$(resumed -tls1_2 -no_ticket)
[ "$o" = "Reused," ] && ok "TLS 1.2 without tickets: resumed from the session cache" ||
	bad "TLS 1.2 session-cache resumption: '$o'"
o=$(get c.test 443 -k)
case "$o" in ERR*) ok "SNI c.test matches no chain: refused ($o)" ;;
*) bad "SNI c.test was served: '$o'" ;; esac
v=$(stat listener.0.0.0.0_443.no_filter_chain_match)
[ "$v" -ge 1 ] && ok "listener.0.0.0.0_443.no_filter_chain_match = $v" ||
	bad "listener.0.0.0.0_443.no_filter_chain_match = $v"

# Clients unlike curl (issue 18's scanner check, docs/tls.md "Tests").
# A ClientHello in 7-byte records sent in 3-byte TCP segments, by Python's
# ssl over a MemoryBIO (the inspector and OpenSSL take any number of records)
o=$(ip netns exec "$cns" python3 - "$us" "$d/ca.pem" 2>&1 <<'PY'
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
o = ctx.wrap_bio(inc, out, server_hostname="a.test")
s = socket.create_connection((sys.argv[1], 443), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
first = True
def send():
    global first
    data = out.read()
    if first and data:
        first = False
        n = int.from_bytes(data[3:5], "big")
        body, data = data[5:5 + n], data[5 + n:]
        recs = b"".join(b"\x16" + data_v + len(body[i:i + 7]).to_bytes(2, "big") + body[i:i + 7]
                        for data_v in [b"\x03\x01"] for i in range(0, len(body), 7))
        for i in range(0, len(recs), 3):
            s.sendall(recs[i:i + 3])
            time.sleep(0.0005)
    s.sendall(data)
def pump():
    b = s.recv(65536)
    if not b:
        raise EOFError
    inc.write(b)
while True:
    try:
        o.do_handshake(); send(); break
    except ssl.SSLWantReadError:
        send(); pump()
o.write(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"); send()
resp = b""
while b"upstream-a" not in resp:
    try:
        resp += o.read(65536)
    except ssl.SSLWantReadError:
        pump()
print(o.version(), resp.split(b"\r\n")[0].decode())
PY
)
[ "$o" = "TLSv1.3 HTTP/1.1 200 OK" ] && ok "ClientHello in 7-byte records, 3-byte segments: served ($o)" ||
	bad "ClientHello in small records: '$o'"
# a GREASE-ing ClientHello (RFC 8701, as Chrome sends): reserved values in
# the cipher suites, extensions, groups, key shares and versions; the
# answer must be a ServerHello for TLS 1.3 (0x1301), not an alert
o=$(ip netns exec "$cns" python3 - "$us" 2>&1 <<'PY'
import os, socket, struct, sys
g = lambda i: bytes([0x0a + 0x10 * i]) * 2
v16 = lambda b: struct.pack(">H", len(b)) + b
ext = lambda t, b: (t if isinstance(t, bytes) else struct.pack(">H", t)) + v16(b)
x = ext(g(2), b"") + ext(0, v16(b"\x00" + v16(b"a.test"))) + ext(23, b"") + ext(0xff01, b"\x00")
x += ext(10, v16(g(3) + b"\x00\x1d\x00\x17")) + ext(11, b"\x01\x00") + ext(35, b"")
x += ext(16, v16(b"\x02h2\x08http/1.1")) + ext(13, v16(bytes.fromhex("040308040401050308050501")))
x += ext(51, v16(g(3) + b"\x00\x01\x00" + b"\x00\x1d" + v16(os.urandom(32))))
x += ext(45, b"\x01\x01") + ext(43, bytes([6]) + g(4) + b"\x03\x04\x03\x03") + ext(g(5), b"\x00")
body = b"\x03\x03" + os.urandom(32) + b"\x20" + os.urandom(32)
body += v16(g(1) + bytes.fromhex("130113021303c02bc02f")) + b"\x01\x00" + v16(x)
hs = b"\x01" + len(body).to_bytes(3, "big") + body
s = socket.create_connection((sys.argv[1], 443), timeout=5)
s.sendall(b"\x16\x03\x01" + v16(hs))
r = b""
while len(r) < 80:
    b = s.recv(4096)
    if not b:
        break
    r += b
if len(r) > 76 and r[0] == 22 and r[5] == 2:
    print("ServerHello", r[76:78].hex())
else:
    print("no ServerHello:", r[:8].hex())
PY
)
[ "$o" = "ServerHello 1301" ] && ok "GREASE ClientHello: $o" || bad "GREASE ClientHello: '$o'"
# a client that negotiates max_fragment_length 512 (OpenSSL honours it):
# a 300 KB response in records of at most 512 bytes arrives whole
head -c 300000 /dev/urandom >"$TOPO_DIR/www/big.bin"
chmod 644 "$TOPO_DIR/www/big.bin"
o=$(printf 'GET /www/big.bin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n' |
	ip netns exec "$cns" timeout 10 openssl s_client -connect "$us:443" -servername a.test \
		-maxfraglen 512 -quiet -ign_eof 2>/dev/null | tail -c 300000 | cmp - "$TOPO_DIR/www/big.bin" 2>&1) &&
	ok "max_fragment_length 512: a 300 KB response arrived intact" ||
	bad "max_fragment_length 512: $o"
# GnuTLS, another TLS stack: TLS 1.3 and 1.2 with resumption (ticket; and
# session id without tickets); TLS 1.0/1.1 refused
if command -v gnutls-cli >/dev/null; then
	gt() { echo | ip netns exec "$cns" timeout 10 gnutls-cli --x509cafile="$d/ca.pem" \
		--sni-hostname=a.test --verify-hostname=a.test -p 443 "$@" "$us" 2>&1; }
	for pr in NORMAL NORMAL:-VERS-TLS1.3 NORMAL:-VERS-TLS1.3:%NO_TICKETS; do
		o=$(gt -r --priority "$pr" | grep -E '^(- Description|\*\*\*)' | tr '\n' ' ')
		case "$o" in *"*** This is a resumed session "*) ok "gnutls-cli $pr: resumed: $o" ;;
		*) bad "gnutls-cli $pr: '$o'" ;; esac
	done
	o=$(gt --priority NORMAL:-VERS-ALL:+VERS-TLS1.1:+VERS-TLS1.0 | grep -o 'Received alert \[70\]')
	[ -n "$o" ] && ok "gnutls-cli TLS 1.0/1.1: $o (protocol_version)" || bad "gnutls-cli TLS 1.0/1.1 not refused"
else
	echo "skip gnutls-cli probes (gnutls-bin not installed; scripts/setup-deps --test)"
fi

# transport_socket_connect_timeout (1s on :8443's chain, Envoy's): a
# client that sends nine bytes of a ClientHello and stalls is closed at
# the deadline (OpenSSL holds tens of KB for it: without the timeout it
# would stay until the idle timeout, 1 h); a client whose handshake is
# done stays open past it and is served
o=$(ip netns exec "$cns" python3 - "$us" "$d/ca.pem" 2>&1 <<'PY'
import socket, ssl, sys, time
s = socket.create_connection((sys.argv[1], 8443), timeout=6)
s.sendall(bytes.fromhex("16030100400100003c"))
t0 = time.monotonic()
try:
    b = s.recv(100)
    stalled = "closed" if not b else "answered"
except socket.timeout:
    stalled = "open"
except OSError:
    stalled = "closed"
waited = time.monotonic() - t0
ctx = ssl.create_default_context(cafile=sys.argv[2])
t = ctx.wrap_socket(socket.create_connection((sys.argv[1], 8443), timeout=6), server_hostname="a.test")
time.sleep(1.6)
t.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
r = b""
while True:
    b = t.recv(65536)
    if not b:
        break
    r += b
print(stalled, "in-time" if 0.8 <= waited <= 4 else "after-%.1fs" % waited, r.split(b"\r\n")[0].decode())
PY
)
[ "$o" = "closed in-time HTTP/1.1 200 OK" ] &&
	ok "transport_socket_connect_timeout: a stalled handshake closed at 1 s, a done one served after it ($o)" ||
	bad "transport_socket_connect_timeout: '$o'"
v=$(stat listener.0.0.0.0_8443.downstream_cx_transport_socket_connect_timeout)
[ "$v" = 1 ] && ok "listener.0.0.0.0_8443.downstream_cx_transport_socket_connect_timeout = 1" ||
	bad "listener.0.0.0.0_8443.downstream_cx_transport_socket_connect_timeout = $v"
# keep-alive: several requests on one TLS connection
o=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" $(res a.test 443) \
	"https://a.test:443/" "https://a.test:443/x" "https://a.test:443/y" -w '%{num_connects}\n' 2>&1 | tr '\n' ' ')
[ "$o" = "upstream-a 0 upstream-a /x 0 upstream-a /y 0 " ] || [ "$o" = "upstream-a 1 upstream-a /x 0 upstream-a /y 0 " ] &&
	ok "three requests on one TLS connection" || bad "keep-alive over TLS: '$o'"

o=$(get a.test 8443)
[ "$o" = upstream-a ] && ok "require_sni: a client with SNI is served" ||
	bad "require_sni with SNI: '$o' $(cat "$TOPO_DIR/curl.err")"
o=$(ip netns exec "$cns" curl -sS --max-time 10 -k "https://$us:8443/" 2>/dev/null) || o="ERR$?"
case "$o" in ERR*) ok "require_sni: a client without SNI is refused ($o)" ;;
*) bad "require_sni: served without SNI: '$o'" ;; esac

o=$(get b.test 9443 --cert "$d/client.pem" --key "$d/client.key")
[ "$o" = upstream-a ] && ok "mTLS: a client certificate from the trusted CA is accepted" ||
	bad "mTLS with a certificate: '$o' $(cat "$TOPO_DIR/curl.err")"
# %DOWNSTREAM_PEER_*%: the client certificate's fields in the access log
# openssl prints the serial as Arion (and Envoy, BN_bn2hex) do: whole bytes, leading 0 kept
for i in $(seq 20); do [ -s "$TOPO_DIR/access-tls_m.log" ] && break; sleep 0.1; done
want="CN=client CN=arion test client CA $(openssl x509 -in "$d/client.pem" -noout -serial |
	cut -d= -f2 | tr 'A-F' 'a-f') $(openssl x509 -in "$d/client.pem" -noout \
	-fingerprint -sha256 | cut -d= -f2 | tr -d ':' | tr 'A-F' 'a-f') $(date -u -d "+2 days" +%Y)"
o=$(head -1 "$TOPO_DIR/access-tls_m.log" 2>/dev/null | cut -d' ' -f5-)
[ "$o" = "$want" ] && ok "access log %DOWNSTREAM_PEER_*%: $o" ||
	bad "access log peer fields: '$o', want '$want'"
o=$(get b.test 9443)
case "$o" in ERR*) ok "mTLS: a client without a certificate is refused ($o)" ;;
*) bad "mTLS: served without a client certificate: '$o'" ;; esac
o=$(get b.test 9443 --cert "$d/b.pem" --key "$d/b.key")
case "$o" in ERR*) ok "mTLS: a certificate from another CA is refused ($o)" ;;
*) bad "mTLS: served with an untrusted certificate: '$o'" ;; esac

# RBAC authenticated over the verified client certificate (Envoy's
# AuthenticatedMatcher): URI SANs, then DNS SANs, then the subject
code() { # code CERT: the status of GET https://b.test:9444/ with that client certificate
	ip netns exec "$cns" curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$d/ca.pem" \
		$(res b.test 9444) --cert "$d/$1.pem" --key "$d/$1.key" https://b.test:9444/ 2>/dev/null
}
o="$(code cok) $(code cdns) $(code client) $(code cbad)"
[ "$o" = "200 200 200 403" ] &&
	ok "RBAC principal_name: URI SAN, DNS SAN (with authenticated {}), subject allowed; another SAN 403" ||
	bad "RBAC principal_name cok cdns client cbad: '$o', want '200 200 200 403'"
v=$(stat http.tls_r.rbac.denied)
w=$(stat http.tls_r.rbac.allowed)
[ "$v" = 1 ] && [ "$w" = 3 ] && ok "http.tls_r.rbac.allowed = 3, denied = 1" ||
	bad "http.tls_r.rbac allowed $w denied $v"

v=$(stat http.tls_a.downstream_cx_ssl_total)
[ "$v" -ge 4 ] && ok "http.tls_a.downstream_cx_ssl_total = $v" ||
	bad "http.tls_a.downstream_cx_ssl_total = $v"
v=$(stat http.tls_a.downstream_cx_ssl_active)
[ "$v" = 0 ] && ok "http.tls_a.downstream_cx_ssl_active = 0 once the clients left" ||
	bad "http.tls_a.downstream_cx_ssl_active = $v"
# listener.<address>.ssl.*: lib/tls's counters, summed over the workers
sv() { # sv NAME MIN
	local v
	v=$(stat "$1")
	[ "$v" -ge "$2" ] && ok "$1 = $v" || bad "$1 = $v (want at least $2)"
}
sv listener.0.0.0.0_443.ssl.handshake 4
sv listener.0.0.0.0_443.ssl.versions.TLSv1.2 1
sv listener.0.0.0.0_443.ssl.versions.TLSv1.3 3
sv listener.0.0.0.0_9443.ssl.handshake 1
sv listener.0.0.0.0_9443.ssl.fail_verify_no_cert 1
sv listener.0.0.0.0_9443.ssl.fail_verify_error 1
sv listener.0.0.0.0_8443.ssl.connection_error 1
sv listener.0.0.0.0_443.ssl.curves.X25519 1
sv listener.0.0.0.0_443.ssl.ciphers.TLS_AES_128_GCM_SHA256 1
# the worker's own: tls.<worker>.* (lib/tls's per-worker counters)
sv tls.0.handshake_steps 8
v=$(stat tls.0.connections_active)
[ "$v" = 0 ] && ok "tls.0.connections_active = 0 once the clients left" ||
	bad "tls.0.connections_active = $v"
http_e2e_finish
