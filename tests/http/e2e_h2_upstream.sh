#!/usr/bin/env bash
# Upstream HTTP/2 end to end (issue 19): curl over HTTP/1.1 and over h2c
# through Arion to an HTTP/2 upstream (node's http2 module, and nginx with
# http2 on a plain listener), and gRPC calls (@grpc/grpc-js client and
# server) of the four kinds through Arion.
#
#   cluster ngxh2    explicit HTTP/2 to nginx (h2c, prior knowledge)
#   cluster h2       explicit http2_protocol_options (typed extension)
#   cluster h2lim    the deprecated http2_protocol_options field with
#                    max_concurrent_streams 2, max_requests_per_connection 2
#   cluster grpc     explicit HTTP/2 to the grpc-js server
#   cluster down     use_downstream_protocol_config: HTTP/2 for h2 clients,
#                    HTTP/1.1 for HTTP/1.1 clients (one node port speaks both)
#   cluster h2tls    explicit HTTP/2 over TLS (ALPN h2, the host's
#                    certificate validated)
#   cluster autoh2   auto_config over TLS, no alpn_protocols (Arion offers
#                    h2 and http/1.1, as Envoy): HTTP/2
#   cluster autoh1   auto_config over TLS offering http/1.1: HTTP/1.1
#
# Connection counts are read from Arion's stats
# (cluster.<name>.upstream_cx_http2_total / upstream_cx_http1_total).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl nginx node openssl || exit 77
curl -V | grep -q 'HTTP2' || { echo "curl without HTTP/2"; exit 77; }
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-h2up
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
JS="$ARION_SRC/tests/http/e2e_h2_upstream.js"
d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "h2 upstream CA" && pki_leaf up ca up.test "subjectAltName=DNS:up.test" ||
	{ echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
chmod 755 "$TOPO_DIR"
topo_bg node ip netns exec "$uns" node "$JS" server "$ua" 8090 8091 8092 8093 "$d/up.pem" "$d/up.key"
# nginx as an HTTP/2 upstream (h2c with prior knowledge on $ub:8081): a
# server other than the test's own node code
mkdir -p "$TOPO_DIR/nginx-h2"
chmod 777 "$TOPO_DIR/nginx-h2"
cat >"$TOPO_DIR/nginx-h2/nginx.conf" <<NGINX
worker_processes 1;
pid $TOPO_DIR/nginx-h2/nginx.pid;
error_log $TOPO_DIR/nginx-h2/error.log warn;
events { worker_connections 1024; }
http {
  access_log $TOPO_DIR/nginx-h2/access.log;
  client_body_temp_path $TOPO_DIR/nginx-h2/body;
  proxy_temp_path $TOPO_DIR/nginx-h2/proxy;
  fastcgi_temp_path $TOPO_DIR/nginx-h2/fcgi;
  uwsgi_temp_path $TOPO_DIR/nginx-h2/uwsgi;
  scgi_temp_path $TOPO_DIR/nginx-h2/scgi;
  server {
    listen $ub:8081 http2;
    location / { return 200 "nginx \$server_protocol \$request_uri\n"; }
  }
}
NGINX
topo_bg nginx-h2 ip netns exec "$uns" nginx -c "$TOPO_DIR/nginx-h2/nginx.conf" -g 'daemon off;'
topo_wait_log "$TOPO_DIR/node.log" ready 20 || {
	echo "the node upstream did not start"
	cat "$TOPO_DIR/node.log"
	exit 1
}

h2opts() { # h2opts EXTRA: the typed extension with explicit HTTP/2
	cat <<YAML
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            explicit_http_config: { http2_protocol_options: {} }
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
      - name: up-ca
        validation_context: { trusted_ca: { filename: $d/ca.pem } }
    listeners:
      - name: plain
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - name: only
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: h2up
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - { match: { prefix: "/test.Echo/" }, route: { cluster: grpc, timeout: 10s } }
                          - { match: { prefix: "/lim/" }, route: { cluster: h2lim, prefix_rewrite: "/" } }
                          - { match: { prefix: "/ngx/" }, route: { cluster: ngxh2 } }
                          - { match: { prefix: "/down/" }, route: { cluster: down, prefix_rewrite: "/" } }
                          - { match: { prefix: "/tls/" }, route: { cluster: h2tls, prefix_rewrite: "/" } }
                          - { match: { prefix: "/auto2/" }, route: { cluster: autoh2, prefix_rewrite: "/" } }
                          - { match: { prefix: "/auto1/" }, route: { cluster: autoh1, prefix_rewrite: "/" } }
                          - match: { prefix: "/retry/" }
                            route:
                              cluster: h2
                              prefix_rewrite: "/"
                              retry_policy: { retry_on: "refused-stream", num_retries: 1 }
                          - { match: { prefix: "/" }, route: { cluster: h2 } }
                  access_log:
                    - name: envoy.access_loggers.file
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
                        path: $TOPO_DIR/access.log
                        log_format:
                          text_format_source:
                            inline_string: "%REQ(:PATH)% %PROTOCOL% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\\n"
                  http_filters:
                    - name: envoy.filters.http.grpc_stats
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig
                        stats_for_all_methods: true
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
YAML
	cluster h2 "$ua" 8090
	h2opts
	cluster h2lim "$ua" 8090
	cat <<YAML
        max_requests_per_connection: 2
        http2_protocol_options: { max_concurrent_streams: 2 }
YAML
	cluster grpc "$ua" 8091
	h2opts
	cluster ngxh2 "$ub" 8081
	h2opts
	cluster down "$ua" 8092
	cat <<YAML
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            use_downstream_protocol_config: { http_protocol_options: {}, http2_protocol_options: {} }
YAML
	utls() { # utls ALPN...: the clusters' UpstreamTlsContext
		cat <<YAML
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: up.test
            common_tls_context:
              alpn_protocols: [ $1 ]
              combined_validation_context:
                default_validation_context:
                  match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: up.test } } ]
                validation_context_sds_secret_config: { name: up-ca }
YAML
	}
	autoc() { # autoc NAME ALPN: auto_config over TLS
		cluster "$1" "$ua" 8093
		cat <<YAML
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            auto_config: { http_protocol_options: {}, http2_protocol_options: {} }
YAML
		utls "$2"
	}
	autoc autoh2 ""
	autoc autoh1 "http/1.1"
	cluster h2tls "$ua" 8093
	h2opts
	cat <<YAML
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: up.test
            common_tls_context:
              alpn_protocols: [ h2 ]
              combined_validation_context:
                default_validation_context:
                  match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: up.test } } ]
                validation_context_sds_secret_config: { name: up-ca }
YAML
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
logged() { # logged REGEX: the access log has the line (written a moment after the response)
	local i
	for i in $(seq 30); do
		grep -q "$1" "$TOPO_DIR/access.log" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
sha() { sha256sum | cut -d' ' -f1; }
empty=$(printf '' | sha)

# ---- HTTP/1.1 and h2c clients to an HTTP/2 upstream ---------------------------------------
o=$(cc --http1.1 -D "$TOPO_DIR/h1.hdr" -w '%{http_version}' "http://$us/echo?a=1")
expect "HTTP/1.1 client -> HTTP/2 upstream: GET answered" "$o" "^GET /echo\?a=1 - - 0 $empty
1.1$"
grep -qi '^x-upstream-proto: h2' "$TOPO_DIR/h1.hdr" && ok "the upstream answered over HTTP/2" ||
	bad "no x-upstream-proto: $(cat "$TOPO_DIR/h1.hdr")"
o=$(cc --http2-prior-knowledge -w '%{http_version}' "http://$us/echo?b=2")
expect "h2c client -> HTTP/2 upstream: GET answered" "$o" "^GET /echo\?b=2 - - 0 $empty
2$"

o=$(cc --http1.1 "http://$us/ngx/a")
expect "HTTP/1.1 client -> nginx as an HTTP/2 upstream" "$o" "^nginx HTTP/2.0 /ngx/a$"
o=$(cc --http2-prior-knowledge "http://$us/ngx/b")
expect "h2c client -> nginx as an HTTP/2 upstream" "$o" "^nginx HTTP/2.0 /ngx/b$"

head -c $((3 * 1024 * 1024 + 7)) /dev/urandom >"$TOPO_DIR/up.bin"
want=$(sha <"$TOPO_DIR/up.bin")
o=$(cc --http1.1 --data-binary @"$TOPO_DIR/up.bin" "http://$us/echo")
expect "HTTP/1.1 upload (content-length) -> HTTP/2 upstream: 3 MB, SHA-256 equal" "$o" \
	"^POST /echo - 3145735 3145735 $want$"
o=$(cat "$TOPO_DIR/up.bin" | cc --http1.1 -T - -X POST "http://$us/echo")
expect "HTTP/1.1 chunked upload -> HTTP/2 upstream: SHA-256 equal, no length" "$o" \
	"^POST /echo - - 3145735 $want$"
o=$(cc --http2-prior-knowledge --data-binary @"$TOPO_DIR/up.bin" "http://$us/echo")
expect "h2c upload -> HTTP/2 upstream: SHA-256 equal" "$o" "^POST /echo - 3145735 3145735 $want$"

n=$((8 * 1024 * 1024))
want=$(ip netns exec "$uns" curl -s --http2-prior-knowledge "http://$ua:8090/big?n=$n" | sha)
got=$(cc --http1.1 "http://$us/big?n=$n" | sha)
expect "8 MB download HTTP/2 upstream -> HTTP/1.1 client, SHA-256 equal" "$got" "^$want$"
got=$(cc --http2-prior-knowledge "http://$us/big?n=$n" | sha)
expect "8 MB download HTTP/2 upstream -> h2c client, SHA-256 equal" "$got" "^$want$"
# a slow reader: the client reads at 2 MB/s; Arion holds the rest back
# through the upstream's windows (its memory does not grow with the body)
got=$(cc --http1.1 --limit-rate 2M "http://$us/big?n=$n" | sha)
expect "8 MB to a rate-limited client, SHA-256 equal" "$got" "^$want$"

o=$(cc --http2-prior-knowledge -s -D - "http://$us/trailers" | tr -d '\r')
expect "h2c client: the upstream's trailers arrive" "$(echo "$o" | grep -i '^x-trailer')" \
	"^x-trailer: yes$"
o=$(cc --http1.1 "http://$us/trailers")
expect "HTTP/1.1 client: the body of a response with trailers" "$o" "^with trailers$"

# request trailers (gRPC's both ways): an h2c client's reach the HTTP/2
# upstream, which sends them back as its response's trailers
o=$(ip netns exec "$cns" node "$JS" trailers "$us:80" 2>&1)
[ "$o" = "200 hello x-sum=5;x-trace=t1" ] &&
	ok "h2c request trailers -> HTTP/2 upstream, echoed back as response trailers" ||
	bad "request trailers: got '$o', wanted '200 hello x-sum=5;x-trace=t1'"
v=$(stat http2.trailers)
[ "$v" = 1 ] && ok "http2.trailers = 1 (the request with trailers)" || bad "http2.trailers = $v"

# te: trailers reaches the upstream; other te values do not
o=$(cc --http1.1 -H 'te: trailers' "http://$us/echo")
expect "te: trailers goes to the HTTP/2 upstream" "$o" "^GET /echo trailers "

# ---- RST_STREAM from the upstream -----------------------------------------------------------
o=$(cc --http1.1 -w ' %{http_code}' "http://$us/reset")
expect "RST_STREAM before the response: 503" "$o" " 503$"
logged '^/reset HTTP/1.1 503 UR upstream_reset_before_response_started{remote_reset}$' &&
	ok "access log: UR remote_reset" ||
	bad "access log: $(grep '^/reset' "$TOPO_DIR/access.log")"
o=$(cc --http1.1 -w ' %{http_code}' "http://$us/retry/refuse")
expect "REFUSED_STREAM, retried once (refused-stream): 503 in the end" "$o" " 503$"
v=$(stat cluster.h2.upstream_rq_retry)
[ "$v" = 1 ] && ok "cluster.h2.upstream_rq_retry = 1 (the refused stream)" ||
	bad "cluster.h2.upstream_rq_retry = $v"
logged '^/retry/refuse HTTP/1.1 503 UR[A-Z,]* upstream_reset_before_response_started{remote_refused_stream_reset}$' &&
	ok "access log: remote_refused_stream_reset" ||
	bad "access log: $(grep '^/retry' "$TOPO_DIR/access.log")"
o=$(cc --http1.1 "http://$us/echo?after-reset")
expect "the connection serves on after the resets" "$o" "^GET /echo\?after-reset "
v=$(stat cluster.h2.http2.rx_reset)
[ "$v" = 3 ] && ok "cluster.h2.http2.rx_reset = 3 (/reset, /retry/refuse and its retry)" ||
	bad "cluster.h2.http2.rx_reset = $v"

v=$(stat cluster.h2.upstream_cx_http2_total)
[ "$v" = 1 ] && ok "every stream above went over one HTTP/2 connection (upstream_cx_http2_total = 1)" ||
	bad "cluster.h2.upstream_cx_http2_total = $v"
v=$(stat cluster.h2.upstream_cx_http1_total)
[ "$v" = 0 ] && ok "no HTTP/1.1 connection to cluster h2" || bad "cluster.h2.upstream_cx_http1_total = $v"

# ---- max_requests_per_connection and max_concurrent_streams ---------------------------------
for i in 1 2 3 4 5 6; do cc --http1.1 -o /dev/null "http://$us/lim/echo?$i"; done
v=$(stat cluster.h2lim.upstream_cx_http2_total)
[ "$v" = 3 ] && ok "6 requests, max_requests_per_connection 2: 3 connections" ||
	bad "cluster.h2lim.upstream_cx_http2_total = $v (wanted 3)"
if command -v nghttp >/dev/null; then
	# 6 streams at once, each answered after 500 ms: max_concurrent_streams
	# 2 puts them on 3 connections (2 each, max_requests_per_connection 2)
	n=$(ip netns exec "$cns" nghttp -n -m 6 -s "http://$us/lim/delay?ms=500" 2>&1 | grep -c '/lim/delay')
	v=$(stat cluster.h2lim.upstream_cx_http2_total)
	[ "$v" = 6 ] && ok "6 concurrent streams, max_concurrent_streams 2: 3 more connections" ||
		bad "cluster.h2lim.upstream_cx_http2_total = $v (wanted 6; nghttp saw $n)"
fi

# ---- use_downstream_protocol_config ---------------------------------------------------------
o=$(cc --http1.1 "http://$us/down/x")
expect "use_downstream_protocol_config, HTTP/1.1 client: HTTP/1.1 upstream" "$o" "^1.1 /x$"
v=$(stat cluster.down.upstream_cx_http1_total)
[ "$v" = 1 ] && ok "cluster.down.upstream_cx_http1_total = 1" || bad "cluster.down.upstream_cx_http1_total = $v"
o=$(cc --http2-prior-knowledge "http://$us/down/y")
expect "use_downstream_protocol_config, h2c client: HTTP/2 upstream" "$o" "^2.0 /y$"
v=$(stat cluster.down.upstream_cx_http2_total)
[ "$v" = 1 ] && ok "cluster.down.upstream_cx_http2_total = 1 (HTTP/2 for the h2c client)" ||
	bad "cluster.down.upstream_cx_http2_total = $v"

# ---- HTTP/2 over TLS (ALPN h2) ---------------------------------------------------------------
o=$(cc --http1.1 "http://$us/tls/x")
expect "HTTP/1.1 client -> HTTP/2 over TLS (ALPN h2)" "$o" "^2.0 h2 /x$"
o=$(cc --http2-prior-knowledge "http://$us/tls/y")
expect "h2c client -> HTTP/2 over TLS, the same connection" "$o" "^2.0 h2 /y$"
v=$(stat cluster.h2tls.upstream_cx_http2_total)
[ "$v" = 1 ] && ok "cluster.h2tls.upstream_cx_http2_total = 1" || bad "cluster.h2tls.upstream_cx_http2_total = $v"

# auto_config: ALPN picks the protocol
for i in 1 2 3; do
	o=$(cc --http1.1 "http://$us/auto2/a$i")
	expect "auto_config, ALPN h2 offered by default: HTTP/2 chosen ($i)" "$o" "^2.0 h2 /a$i$"
done
v=$(stat cluster.autoh2.upstream_cx_http2_total)/$(stat cluster.autoh2.upstream_cx_http1_total)
[ "$v" = 1/0 ] && ok "cluster.autoh2: one HTTP/2 connection, reused, no HTTP/1.1 one" ||
	bad "cluster.autoh2 upstream_cx_http2_total/http1_total = $v"
o=$(cc --http2-prior-knowledge "http://$us/auto1/b")
expect "auto_config, only http/1.1 offered: HTTP/1.1" "$o" "^1.1 http/1.1 /b$"
v=$(stat cluster.autoh1.upstream_cx_http2_total)/$(stat cluster.autoh1.upstream_cx_http1_total)
[ "$v" = 0/1 ] && ok "cluster.autoh1: one HTTP/1.1 connection" ||
	bad "cluster.autoh1 upstream_cx_http2_total/http1_total = $v"

# ---- gRPC through Arion (grpc-js client and server) -----------------------------------------
o=$(ip netns exec "$cns" node "$JS" client "$us:80" 2>&1)
expect "gRPC unary" "$(echo "$o" | sed -n 1p)" "^unary 0 u:hello$"
expect "gRPC unary error: grpc-status 5 and grpc-message from the trailers" \
	"$(echo "$o" | sed -n 2p)" "^unary 5 nope -$"
expect "gRPC server streaming: 5 messages, status 0" "$(echo "$o" | sed -n 3p)" \
	"^server-stream 0 s0:x,s1:x,s2:x,s3:x,s4:x$"
expect "gRPC client streaming: 4 messages joined" "$(echo "$o" | sed -n 4p)" "^client-stream 0 c:a,b,c,d$"
expect "gRPC bidirectional: each message answered before the next" "$(echo "$o" | sed -n 5p)" \
	"^bidi 0 b:m0,b:m1,b:m2$"
v=$(stat cluster.grpc.grpc.test.Echo.Unary.success)
[ "$v" = 1 ] && ok "cluster.grpc.grpc.test.Echo.Unary.success = 1" ||
	bad "cluster.grpc.grpc.test.Echo.Unary.success = $v"
v=$(stat cluster.grpc.grpc.test.Echo.Unary.5)
[ "$v" = 1 ] && ok "cluster.grpc.grpc.test.Echo.Unary.5 = 1" || bad "cluster.grpc.grpc.test.Echo.Unary.5 = $v"
v=$(stat cluster.grpc.upstream_cx_http2_total)
[ "$v" = 1 ] && ok "the gRPC calls shared one upstream connection" ||
	bad "cluster.grpc.upstream_cx_http2_total = $v"

sleep 0.3
v=$(stat cluster.h2.upstream_rq_active)
[ "$v" = 0 ] && ok "cluster.h2.upstream_rq_active = 0 at the end" || bad "cluster.h2.upstream_rq_active = $v"
http_e2e_finish
