#!/usr/bin/env bash
# Downstream HTTP/2 end to end (issue 19): curl and h2load through Arion to
# the HTTP/1.1 nginx and upstream.py upstreams.
#
#   :80    plain, codec_type AUTO: h2c with prior knowledge
#          (curl --http2-prior-knowledge, h2load) and HTTP/1.1 side by side
#   :443   TLS with ALPN h2 and http/1.1: curl --http2 negotiates h2,
#          curl --http1.1 stays on HTTP/1.1
# Streams are multiplexed (curl --parallel, h2load -m), bodies go both ways
# (a 5 MB download, a 2 MB upload with and without content-length), a
# gRPC request answered locally gets a gRPC status, and the access log
# says HTTP/2. A gRPC-like call goes through to upstream.py (te: trailers
# on, chunked trailers back as HTTP/2 trailers, grpc_stats counting it).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl nginx openssl /usr/bin/python3 || exit 77
curl -V | grep -q 'HTTP2' || { echo "curl without HTTP/2"; exit 77; }
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-h2
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
PY=/usr/bin/python3
topo_bg py ip netns exec "$uns" $PY "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }

d="$TOPO_DIR/pki"
mkdir -p "$d"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/a.key" \
	-out "$d/a.pem" -subj "/CN=a.test" -addext "subjectAltName=DNS:a.test" -days 2 \
	2>/dev/null || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"

hcm() { # hcm PREFIX
	cat <<YAML
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: $1
                  http2_protocol_options: { max_concurrent_streams: 100 }
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - { match: { prefix: "/upload" }, route: { cluster: py } }
                          - { match: { prefix: "/grpc.Echo/" }, route: { cluster: py } }
                          - { match: { prefix: "/grpc.Nope/" }, direct_response: { status: 503 } }
                          - { match: { prefix: "/" }, route: { cluster: a } }
                  access_log:
                    - name: envoy.access_loggers.file
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
                        path: $TOPO_DIR/access-$1.log
                        log_format:
                          text_format_source:
                            inline_string: "%REQ(:PATH)% %PROTOCOL% %RESPONSE_CODE%\\n"
                  http_filters:
                    - name: envoy.filters.http.grpc_stats
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig
                        stats_for_all_methods: true
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
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
	cat <<YAML
  static_resources:
    secrets:
      - name: cert-a
        tls_certificate: { certificate_chain: { filename: $d/a.pem }, private_key: { filename: $d/a.key } }
    listeners:
      - name: plain
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - name: only
YAML
	hcm h2c
	cat <<YAML
      - name: tls
        address: { socket_address: { address: 0.0.0.0, port_value: 443 } }
        filter_chains:
          - name: only
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                common_tls_context:
                  tls_certificate_sds_secret_configs: [ { name: cert-a } ]
                  alpn_protocols: [ h2, http/1.1 ]
YAML
	hcm h2tls
	echo "    clusters:"
	cluster a "$ua" 8080
	cluster py "$ua" 8081
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
tls() { cc --cacert "$d/a.pem" --resolve "a.test:443:$us" "$@"; }

# ---- h2c with prior knowledge, HTTP/1.1 beside it ------------------------------------------
o=$(cc --http2-prior-knowledge -w ' %{http_version}' "http://$us/" | tr -d '\n')
expect "h2c prior knowledge: served over HTTP/2" "$o" "^upstream-a 2$"
o=$(cc -w ' %{http_version}' "http://$us/" | tr -d '\n')
expect "HTTP/1.1 on the same AUTO listener" "$o" "^upstream-a 1.1$"

# many streams on one connection: nghttp multiplexes -m requests (curl
# 7.88's --parallel fails on reusing a prior-knowledge connection, a curl
# bug: curl/curl#10634, fixed in 7.89)
if command -v nghttp >/dev/null; then
	n=$(ip netns exec "$cns" nghttp -nv -m 40 "http://$us/echo?1" 2>&1 | grep -c ':status: 200$')
	expect "40 concurrent streams on one h2c connection, each answered" "$n" "^40$"
fi
v=$(stat http.h2c.downstream_cx_http2_total)
[ "$v" -le 2 ] && ok "the streams shared a connection (downstream_cx_http2_total = $v)" ||
	bad "downstream_cx_http2_total = $v"

# bodies both ways
head -c $((5 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/www/big.bin"
chmod 644 "$TOPO_DIR/www/big.bin"
want=$(sha256sum <"$TOPO_DIR/www/big.bin" | cut -d' ' -f1)
got=$(cc --http2-prior-knowledge "http://$us/www/big.bin" | sha256sum | cut -d' ' -f1)
expect "5 MB download over HTTP/2, SHA-256 equal" "$got" "^$want$"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/up.bin"
want=$(sha256sum <"$TOPO_DIR/up.bin" | cut -d' ' -f1)
got=$(cc --http2-prior-knowledge --data-binary @"$TOPO_DIR/up.bin" "http://$us/upload")
expect "2 MB upload over HTTP/2 (content-length), SHA-256 equal" "$got" "^$want 2097152$"
got=$(cat "$TOPO_DIR/up.bin" | cc --http2-prior-knowledge -T - -X POST "http://$us/upload")
expect "2 MB upload over HTTP/2 (no length: re-chunked), SHA-256 equal" "$got" "^$want 2097152$"

# a gRPC request answered locally: a gRPC status, not an HTTP one
o=$(cc --http2-prior-knowledge -s -o /dev/null -D - -X POST -H 'content-type: application/grpc' \
	-H 'te: trailers' --data-binary '' "http://$us/grpc.Nope/M" | tr -d '\r')
expect "gRPC local reply over HTTP/2: 200 with grpc-status 14 (503 as gRPC)" \
	"$(echo "$o" | grep -E '^(HTTP/2|grpc-status)' | tr '\n' ' ')" "^HTTP/2 200 +grpc-status: 14 $"

# a gRPC-like call through to an HTTP/1.1 upstream (upstream.py): te:
# trailers reaches it, the message comes back, and the chunked trailers
# arrive as HTTP/2 trailers (a HEADERS frame after the DATA); the
# grpc_stats filter counts the call by method and status
if command -v nghttp >/dev/null; then
	printf '\x00\x00\x00\x00\x05hello' >"$TOPO_DIR/grpc.msg"
	o=$(ip netns exec "$cns" nghttp -v -H 'content-type: application/grpc' -H 'te: trailers' \
		-d "$TOPO_DIR/grpc.msg" "http://$us/grpc.Echo/Say" 2>&1)
	expect "gRPC over h2c: the HTTP/1.1 upstream saw te: trailers" \
		"$(echo "$o" | grep -o 'x-seen-te: .*' | head -1)" "^x-seen-te: trailers$"
	expect "gRPC over h2c: grpc-status 0 and grpc-message come as trailers, after the DATA" \
		"$(echo "$o" | grep -E 'recv (DATA|HEADERS) frame|grpc-status|grpc-message' |
			sed -E 's/^\[[ 0-9.]+\] //' | tr '\n' '|')" \
		"recv DATA frame <length=[0-9]+,.*recv \(stream_id=[0-9]+\) grpc-status: 0\|recv \(stream_id=[0-9]+\) grpc-message: echoed\|recv HEADERS frame <length=[0-9]+, flags=0x05"
	v=$(stat cluster.py.grpc.grpc.Echo.Say.success)
	[ "$v" = 1 ] && ok "cluster.py.grpc.grpc.Echo.Say.success = 1" ||
		bad "cluster.py.grpc.grpc.Echo.Say.success = $v"
	v=$(stat cluster.py.grpc.grpc.Echo.Say.0)
	[ "$v" = 1 ] && ok "cluster.py.grpc.grpc.Echo.Say.0 = 1" || bad "cluster.py.grpc.grpc.Echo.Say.0 = $v"
fi

# ---- TLS: ALPN h2 ------------------------------------------------------------------------
o=$(tls --http2 -w ' %{http_version}' "https://a.test/" | tr -d '\n')
expect "TLS, ALPN h2: served over HTTP/2" "$o" "^upstream-a 2$"
o=$(tls --http1.1 -w ' %{http_version}' "https://a.test/" | tr -d '\n')
expect "TLS, ALPN http/1.1: served over HTTP/1.1" "$o" "^upstream-a 1.1$"
urls=()
for i in $(seq 1 20); do urls+=("https://a.test/echo?$i"); done
n=$(tls --http2 --parallel --parallel-max 20 "${urls[@]}" | grep -c '^echo-a /echo?')
expect "20 parallel streams over TLS, each answered" "$n" "^20$"

# ---- h2load: many streams per connection -------------------------------------------------
if command -v h2load >/dev/null; then
	out=$(ip netns exec "$cns" h2load -n 2000 -c 4 -m 32 "http://$us/" 2>&1)
	expect "h2load 2000 requests, 4 connections x 32 streams: all succeeded" \
		"$(echo "$out" | grep '^requests:')" "2000 succeeded, 0 failed, 0 errored"
	expect "h2load: every status 2xx" "$(echo "$out" | grep '^status codes:')" "^status codes: 2000 2xx"
else
	echo "skip h2load (nghttp2-client not installed)"
fi

v=$(stat http.h2c.downstream_rq_http2_total)
[ "$v" -ge 2045 ] && ok "http.h2c.downstream_rq_http2_total = $v" ||
	bad "http.h2c.downstream_rq_http2_total = $v"
v=$(stat http.h2tls.downstream_cx_http2_total)
[ "$v" -ge 2 ] && ok "http.h2tls.downstream_cx_http2_total = $v" ||
	bad "http.h2tls.downstream_cx_http2_total = $v"
sleep 0.5
v=$(stat http2.streams_active)
[ "$v" = 0 ] && ok "http2.streams_active = 0 once the clients left" || bad "http2.streams_active = $v"
grep -q '^/ HTTP/2 200$' "$TOPO_DIR/access-h2c.log" && ok "access log: %PROTOCOL% HTTP/2" ||
	bad "access log: $(head -3 "$TOPO_DIR/access-h2c.log")"
grep -q '^/ HTTP/1.1 200$' "$TOPO_DIR/access-h2tls.log" && ok "access log: %PROTOCOL% HTTP/1.1 (TLS)" ||
	bad "access log (TLS): $(head -3 "$TOPO_DIR/access-h2tls.log")"
http_e2e_finish
