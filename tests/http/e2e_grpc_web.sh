#!/usr/bin/env bash
# gRPC-Web end to end (envoy.filters.http.grpc_web): curl over HTTP/1.1
# sends gRPC-Web calls (binary and base64 text, as protoc-gen-grpc-web's
# grpcweb and grpcwebtext modes frame them) through Arion to a
# @grpc/grpc-js server over HTTP/2 (tests/http/e2e_h2_upstream.js's
# test.Echo, raw-bytes messages: Unary answers "u:" + the message, "fail"
# answers NOT_FOUND "nope", trailers-only). Each answer is checked byte for
# byte: the message frame, then the trailers frame Envoy makes of
# grpc-js's trailers (flag 0x80, length, "name:value\r\n"), base64 per
# frame in text mode, in a chunked body with no trailer section of its
# own; the failing call's grpc-status and grpc-message in its head.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node xxd base64 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-gweb
http_e2e_topo || exit 1
JS="$ARION_SRC/tests/http/e2e_h2_upstream.js"
chmod 755 "$TOPO_DIR"
topo_bg node ip netns exec "$uns" node "$JS" server "$ua" 8090 8091 8092
topo_wait_log "$TOPO_DIR/node.log" ready 20 || {
	echo "the node upstream did not start"
	cat "$TOPO_DIR/node.log"
	exit 1
}
cat >"$TOPO_DIR/body.yaml" <<YAML
  static_resources:
    listeners:
      - name: plain
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - name: only
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: gweb
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - { match: { prefix: "/test.Echo/" }, route: { cluster: grpc, timeout: 10s } }
                          - { match: { prefix: "/echo" }, route: { cluster: h2 } }
                  http_filters:
                    - name: envoy.filters.http.grpc_web
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb }
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
      - name: grpc
        type: STATIC
        connect_timeout: 2s
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            explicit_http_config: { http2_protocol_options: {} }
        load_assignment:
          cluster_name: grpc
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8091 } } } } ] } ]
      - name: h2
        type: STATIC
        connect_timeout: 2s
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            explicit_http_config: { http2_protocol_options: {} }
        load_assignment:
          cluster_name: h2
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8090 } } } } ] } ]
YAML
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

# frame FLAG PAYLOAD: a gRPC(-Web) frame's bytes, as hex
frame() {
	local n=${#2}
	printf '%02x%08x' "$1" "$n"
	printf '%s' "$2" | xxd -p | tr -d '\n'
}
# call CT ACCEPT BODYFILE: POST /test.Echo/Unary over HTTP/1.1; the head
# in $TOPO_DIR/h.hdr, the body (curl undoes the chunking) in $TOPO_DIR/out
call() {
	cc --http1.1 -D "$TOPO_DIR/h.hdr" -o "$TOPO_DIR/out" -H "content-type: $1" ${2:+-H "accept: $2"} \
		--data-binary @"$3" "http://$us/test.Echo/Unary"
}
hdr() { tr -d '\r' <"$TOPO_DIR/h.hdr" | grep -i "^$1:" | head -1; }
check_head() { # check_head CT
	local v
	v=$(hdr content-type)
	[ "$v" = "content-type: $1" ] && ok "content-type $1" || bad "content-type: '$v', wanted $1"
	v=$(hdr transfer-encoding)
	[ "$v" = "transfer-encoding: chunked" ] && ok "chunked, no content-length" ||
		bad "transfer-encoding: '$v' ($(hdr content-length))"
	[ -z "$(hdr grpc-status)" ] && ok "no grpc-status in the head (it is in the body)" ||
		bad "grpc-status in the head: $(hdr grpc-status)"
}
# grpc-js's trailers for OK, as the upstream sends them (grpc-status then
# grpc-message)
ok_trl=$(frame 128 $'grpc-status:0\r\ngrpc-message:OK\r\n')

# ---- binary (application/grpc-web+proto) ---------------------------------------------------
frame 0 hello | xxd -r -p >"$TOPO_DIR/req.bin"
call application/grpc-web+proto "" "$TOPO_DIR/req.bin"
check_head application/grpc-web+proto
got=$(xxd -p <"$TOPO_DIR/out" | tr -d '\n')
want="$(frame 0 u:hello)$ok_trl"
[ "$got" = "$want" ] && ok "binary call: the message frame, then the trailers frame, byte for byte" ||
	bad "binary call: got $got, wanted $want"

# the failing call: grpc-js answers it trailers-only (grpc-status in the
# head, no body), which passes as its head, as Envoy passes it
frame 0 fail | xxd -r -p >"$TOPO_DIR/req.bin"
call application/grpc-web "" "$TOPO_DIR/req.bin"
v="$(hdr grpc-status)/$(hdr grpc-message)/$(hdr content-type)/$(hdr content-length)/$(wc -c <"$TOPO_DIR/out")"
[ "$v" = "grpc-status: 5/grpc-message: nope/content-type: application/grpc-web+proto/content-length: 0/0" ] &&
	ok "failing call (trailers-only): grpc-status 5, grpc-message nope in the head, no body" ||
	bad "failing call: $v"

# ---- text (application/grpc-web-text, base64 both ways) ------------------------------------
frame 0 hello | xxd -r -p | base64 -w0 >"$TOPO_DIR/req.txt"
call application/grpc-web-text application/grpc-web-text "$TOPO_DIR/req.txt"
check_head application/grpc-web-text+proto
got=$(cat "$TOPO_DIR/out")
want="$(frame 0 u:hello | xxd -r -p | base64 -w0)$(echo "$ok_trl" | xxd -r -p | base64 -w0)"
[ "$got" = "$want" ] && ok "text call: each frame base64 on its own, byte for byte" ||
	bad "text call: got $got, wanted $want"

frame 0 fail | xxd -r -p | base64 -w0 >"$TOPO_DIR/req.txt"
call application/grpc-web-text+proto application/grpc-web-text+proto "$TOPO_DIR/req.txt"
v="$(hdr grpc-status)/$(hdr grpc-message)/$(hdr content-type)/$(wc -c <"$TOPO_DIR/out")"
[ "$v" = "grpc-status: 5/grpc-message: nope/content-type: application/grpc-web-text+proto/0" ] &&
	ok "failing text call (trailers-only): grpc-status 5, grpc-message nope" ||
	bad "failing text call: $v"

# the same text call from an HTTP/2 client (h2c): its DATA decoded in
# place, the answer in DATA with no trailers HEADERS of its own
frame 0 hello | xxd -r -p | base64 -w0 >"$TOPO_DIR/req.txt"
cc --http2-prior-knowledge -D "$TOPO_DIR/h.hdr" -o "$TOPO_DIR/out" \
	-H "content-type: application/grpc-web-text" -H "accept: application/grpc-web-text" \
	--data-binary @"$TOPO_DIR/req.txt" "http://$us/test.Echo/Unary"
got=$(cat "$TOPO_DIR/out")
want="$(frame 0 u:hello | xxd -r -p | base64 -w0)$(echo "$ok_trl" | xxd -r -p | base64 -w0)"
[ "$got" = "$want" ] && ok "h2c text call: byte for byte" || bad "h2c text call: got $got, wanted $want"
v=$(hdr content-type)/$(hdr grpc-status)
[ "$v" = "content-type: application/grpc-web-text+proto/" ] &&
	ok "h2c: the gRPC-Web content-type, no grpc-status outside the body" || bad "h2c head: $v"

# a text request that asks for a binary answer
frame 0 hi | xxd -r -p | base64 -w0 >"$TOPO_DIR/req.txt"
call application/grpc-web-text "" "$TOPO_DIR/req.txt"
got=$(xxd -p <"$TOPO_DIR/out" | tr -d '\n')
want="$(frame 0 u:hi)$ok_trl"
[ "$got" = "$want" ] && ok "text request, binary answer" || bad "text request, binary answer: got $got"

# invalid base64: Envoy's local reply, gRPC's (200, grpc-status 13)
printf 'AAAA****' >"$TOPO_DIR/req.txt"
call application/grpc-web-text application/grpc-web-text "$TOPO_DIR/req.txt"
v=$(hdr grpc-status)/$(hdr grpc-message)/$(hdr content-type)
[ "$v" = "grpc-status: 13/grpc-message: Bad gRPC-web request, invalid base64 data./content-type: application/grpc-web-text+proto" ] &&
	ok "invalid base64: grpc-status 13, Envoy's message" || bad "invalid base64: $v"

# a non-gRPC answer (node's http2 /echo: 200, a text body describing the
# request it got): held, then its head alone with grpc-status 2 (UNKNOWN,
# Envoy's mapping of a 200) and the body as grpc-message, percent-encoded;
# the body says the upstream got te: trailers, no content-length, the
# frame's 10 bytes
frame 0 hello | xxd -r -p >"$TOPO_DIR/req.bin"
sum=$(sha256sum <"$TOPO_DIR/req.bin" | cut -d' ' -f1)
cc --http1.1 -D "$TOPO_DIR/h.hdr" -o "$TOPO_DIR/out" -H "content-type: application/grpc-web" \
	--data-binary @"$TOPO_DIR/req.bin" "http://$us/echo"
v="$(hdr grpc-status)|$(hdr grpc-message)|$(hdr content-length)|$(wc -c <"$TOPO_DIR/out")"
[ "$v" = "grpc-status: 2|grpc-message: POST /echo trailers - 10 $sum%0A|content-length: 0|0" ] &&
	ok "a non-gRPC answer becomes grpc-status 2 and its body's grpc-message, no body" ||
	bad "non-gRPC answer: $v"
cc --http2-prior-knowledge -D "$TOPO_DIR/h.hdr" -o "$TOPO_DIR/out" -H "content-type: application/grpc-web" \
	--data-binary @"$TOPO_DIR/req.bin" "http://$us/echo"
v="$(hdr grpc-status)|$(hdr grpc-message)|$(wc -c <"$TOPO_DIR/out")"
[ "$v" = "grpc-status: 2|grpc-message: POST /echo trailers - 10 $sum%0A|0" ] &&
	ok "the same to an h2c client" || bad "non-gRPC answer, h2c: $v"

v=$(stat cluster.grpc.upstream_cx_http2_total)
[ "$v" = 1 ] && ok "the calls went over one HTTP/2 connection" ||
	bad "cluster.grpc.upstream_cx_http2_total = $v"
http_e2e_finish
