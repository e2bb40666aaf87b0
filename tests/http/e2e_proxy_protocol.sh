#!/usr/bin/env bash
# The PROXY protocol listener filter (envoy.filters.listener.proxy_protocol)
# end to end: curl's --haproxy-protocol (v1, curl's own addresses), a v1
# and a v2 header written by Python with a client address that is not the
# TCP peer's; nginx's /echo returns the X-Forwarded-For it got
# (use_remote_address: the header's source) and the access log proves the
# three addresses (remote: the header's, direct remote: the TCP peer,
# local: the header's destination). No header: closed and counted; the
# optional listener (allow_requests_without_proxy_protocol, then
# tls_inspector) serves a plain request and a v1 header alike; on a TLS
# listener the ClientHello after the header chooses the chain by SNI and
# the handshake reads it (curl --haproxy-protocol over https, and Python's
# ssl after a header naming another client).
# The header sent upstream (upstream_proxy_protocol) to pp_upstream.py,
# which requires one and answers what it said: v2 with curl's address over
# HTTP, one connection for one client's two requests and another for
# another client; v2 before the ClientHello of a TLS upstream; v1 from
# tcp_proxy; a listener header's addresses carried on; health checks with
# v2 LOCAL.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl python3 openssl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-pp
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
log="$TOPO_DIR/access.log"
PKI="$TOPO_DIR/pki"
mkdir -p "$PKI"
pki_ca ca "arion test server CA" && pki_leaf a ca a.test "subjectAltName=DNS:a.test" ||
	{ echo "openssl failed"; exit 1; }
chmod -R a+rX "$PKI"
grep -v '^#' "$ARION_SRC/tests/http/e2e_proxy_protocol.yaml" | sed "s|ACCESS_LOG|$log|; s|PKI_DIR|$PKI|g" >"$TOPO_DIR/body.yaml"
topo_bg upp ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/pp_upstream.py" \
	"$ub" 9000 9443 "$PKI/a.pem" "$PKI/a.key"
topo_wait_log "$TOPO_DIR/upp.log" ready 10 || { echo "pp_upstream.py did not start"; exit 1; }
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

# send PORT HEADER-BYTES (python literal): the header then a GET /echo/NAME;
# prints the response's X-Seen-XFF, or <closed> when Arion closed it
send() {
	ip netns exec "$cns" python3 - "$us" "$1" "$2" "$3" <<'PY'
import ast, socket, sys
host, port, hdr, name = sys.argv[1], int(sys.argv[2]), ast.literal_eval(sys.argv[3]), sys.argv[4]
s = socket.create_connection((host, port), timeout=10)
s.sendall(hdr + b"GET /echo/" + name.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
d = b""
while True:
    try:
        r = s.recv(65536)
    except ConnectionResetError:
        break
    if not r:
        break
    d += r
xff = [l.split(b":", 1)[1].strip() for l in d.split(b"\r\n") if l.lower().startswith(b"x-seen-xff:")]
print(xff[0].decode() if xff else "<closed>" if not d else d.split(b"\r\n")[0].decode())
PY
}

# 1. curl's own v1 header: the addresses are its socket's, so XFF is the client's
o=$(cc --haproxy-protocol -D - -o /dev/null "http://$us/echo/curl" | tr -d '\r' | sed -n 's/^X-Seen-XFF: //p')
expect "curl --haproxy-protocol: XFF the header's source" "$o" "^$gw$"

# 2. v1 from Python: a client address that is not the peer's
o=$(send 80 "b'PROXY TCP4 203.0.113.7 198.51.100.1 5555 443\r\n'" v1)
expect "v1: XFF the header's source" "$o" "^203\.0\.113\.7$"

# 3. v2 with a TLV (AWS NLB's 0xEA VPC endpoint id), another client:
# 203.0.113.9:6000 to 198.51.100.2:8443
v2="b'\\r\\n\\r\\n\\x00\\r\\nQUIT\\n\\x21\\x11\\x00\\x15\\xcb\\x00\\x71\\x09\\xc6\\x33\\x64\\x02\\x17\\x70\\x20\\xfb\\xea\\x00\\x06vpce-1'"
o=$(send 80 "$v2" v2)
expect "v2: XFF the header's source" "$o" "^203\.0\.113\.9$"

# 4. no header: closed, counted
o=$(send 80 "b''" none)
expect "no header: closed" "$o" "^<closed>$"
# 5. a bad v1 port: closed, counted
o=$(send 80 "b'PROXY TCP4 203.0.113.7 198.51.100.1 05555 443\r\n'" badport)
expect "bad v1 port: closed" "$o" "^<closed>$"
# 6. v2 LOCAL (a balancer's health check): the peer's address
o=$(send 80 "b'\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00'" local)
expect "v2 LOCAL: XFF the TCP peer" "$o" "^$gw$"
# 7. v1 TCP6: closed (Arion is IPv4 only)
o=$(send 80 "b'PROXY TCP6 2001:db8::1 2001:db8::2 5555 443\r\n'" v6)
expect "v1 TCP6: closed" "$o" "^<closed>$"
# 8. the optional listener: a plain request, then a header
o=$(send 81 "b''" plain)
expect "optional: no header served, XFF the peer" "$o" "^$gw$"
o=$(send 81 "b'PROXY TCP4 203.0.113.8 198.51.100.1 5555 81\r\n'" opt)
expect "optional: a header still read" "$o" "^203\.0\.113\.8$"

# 9. TLS after the header: curl's own header over https, then Python's
# ssl after a header naming 203.0.113.10
o=$(cc --haproxy-protocol --cacert "$PKI/ca.pem" --resolve "a.test:443:$us" -D - -o /dev/null \
	https://a.test/echo/tls | tr -d '\r' | sed -n 's/^X-Seen-XFF: //p')
expect "TLS: curl --haproxy-protocol over https, XFF the header's source" "$o" "^$gw$"
o=$(ip netns exec "$cns" python3 - "$us" "$PKI/ca.pem" <<'PY'
import socket, ssl, sys
s = socket.create_connection((sys.argv[1], 443), timeout=10)
s.sendall(b"PROXY TCP4 203.0.113.10 198.51.100.3 7000 443\r\n")
ctx = ssl.create_default_context(cafile=sys.argv[2])
t = ctx.wrap_socket(s, server_hostname="a.test")
t.sendall(b"GET /echo/tlspy HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
d = b""
while True:
    r = t.recv(65536)
    if not r:
        break
    d += r
xff = [l.split(b":", 1)[1].strip() for l in d.split(b"\r\n") if l.lower().startswith(b"x-seen-xff:")]
print(xff[0].decode() if xff else d[:80])
PY
)
expect "TLS: Python ssl after a v1 header, XFF the header's source" "$o" "^203\.0\.113\.10$"
expect "proxy_proto.tls.versions.v1.found" "$(stat proxy_proto.tls.versions.v1.found)" "^2$"

# 10. the header sent upstream: curl's address and port to Arion's :82,
# two requests of one connection on one upstream connection
o=$(cc -s "http://$us:82/u1" "http://$us:82/u2")
expect "upstream v2: curl's addresses" "$o" "^v2 src=$gw:[0-9]+ dst=$us:82 conn=[0-9]+ tls=0 path=/u1"
c1=$(echo "$o" | sed -n '1s/.* conn=\([0-9]*\).*/\1/p')
expect "upstream v2: one client's second request on its connection" \
	"$(echo "$o" | sed -n 2p)" "^v2 src=$gw:[0-9]+ dst=$us:82 conn=$c1 tls=0 path=/u2$"
o=$(cc -s "http://$us:82/u3")
expect "upstream v2: another client, another connection" "$o" "^v2 src=$gw:[0-9]+ dst=$us:82 conn=[0-9]+ tls=0 path=/u3$"
[ "$(echo "$o" | sed -n 's/.* conn=\([0-9]*\).*/\1/p')" != "$c1" ] && ok "upstream v2: not the first client's connection" ||
	bad "upstream v2: the second client reused conn $c1"
expect "cluster.ppv2.upstream_cx_pp_key_miss" "$(stat cluster.ppv2.upstream_cx_pp_key_miss)" "^[1-9]"
# 11. v2, then the TLS handshake (the header before the ClientHello)
o=$(cc -s "http://$us:82/tls")
expect "upstream v2 around TLS" "$o" "^v2 src=$gw:[0-9]+ dst=$us:82 conn=[0-9]+ tls=1 path=/tls$"
# 12. tcp_proxy: v1 with the client's addresses, then its bytes
o=$(ip netns exec "$cns" python3 - "$us" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 83), timeout=10)
s.sendall(b"RAW\n")
d = b""
while True:
    r = s.recv(65536)
    if not r:
        break
    d += r
print(d.decode().strip())
PY
)
expect "tcp_proxy: v1 with the client's addresses" "$o" "^v1 src=$gw:[0-9]+ dst=$us:83 conn=[0-9]+ tls=0 path=-$"
# 13. a listener PROXY header's addresses go on upstream (v1)
o=$(ip netns exec "$cns" python3 - "$us" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 84), timeout=10)
s.sendall(b"PROXY TCP4 203.0.113.21 198.51.100.5 4444 8084\r\nGET /in HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
d = b""
while True:
    r = s.recv(65536)
    if not r:
        break
    d += r
print(d.split(b"\r\n\r\n", 1)[-1].decode().strip())
PY
)
expect "the listener header's addresses sent on" "$o" "^v1 src=203\.0\.113\.21:4444 dst=198\.51\.100\.5:8084 conn=[0-9]+ tls=0 path=/in$"
# 14. health checks: v2 LOCAL (no downstream)
expect "health check: v2 LOCAL" "$(grep -m1 'path=/healthz$' "$TOPO_DIR/upp.log")" "^v2-local src=- dst=- conn=[0-9]+ tls=0 path=/healthz$"
expect "health check: v1 with the check's own addresses" "$(grep -m1 'path=/healthz1' "$TOPO_DIR/upp.log")" \
	"^v1 src=$us:[0-9]+ dst=$ub:9000 conn=[0-9]+ tls=0 path=/healthz1$"
expect "no connection without a header" "$(grep -c noheader "$TOPO_DIR/upp.log")" "^0$"

expect "proxy_proto.e2e.versions.v1.found" "$(stat proxy_proto.e2e.versions.v1.found)" "^3$"
expect "proxy_proto.e2e.versions.v2.found" "$(stat proxy_proto.e2e.versions.v2.found)" "^2$"
expect "proxy_proto.e2e.not_found_disallowed" "$(stat proxy_proto.e2e.not_found_disallowed)" "^1$"
expect "proxy_proto.e2e.versions.v1.error" "$(stat proxy_proto.e2e.versions.v1.error)" "^1$"
expect "proxy_proto.e2e.error.v1_bad_port" "$(stat proxy_proto.e2e.error.v1_bad_port)" "^1$"
expect "proxy_proto.e2e.ipv6_refused" "$(stat proxy_proto.e2e.ipv6_refused)" "^1$"
expect "proxy_proto.opt.not_found_allowed" "$(stat proxy_proto.opt.not_found_allowed)" "^1$"

topo_arion_stop || bad "arion exit code $?"
# the access log, flushed at exit: remote (the header's), direct (the TCP peer), local
expect "log: v1 addresses" "$(grep ' /echo/v1$' "$log")" "^203\.0\.113\.7:5555 $gw:[0-9]+ 198\.51\.100\.1:443 /echo/v1$"
expect "log: v2 addresses" "$(grep ' /echo/v2$' "$log")" "^203\.0\.113\.9:6000 $gw:[0-9]+ 198\.51\.100\.2:8443 /echo/v2$"
expect "log: LOCAL keeps TCP's" "$(grep ' /echo/local$' "$log")" "^$gw:[0-9]+ $gw:[0-9]+ $us:80 /echo/local$"
http_e2e_finish
