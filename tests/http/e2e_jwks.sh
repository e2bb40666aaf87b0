#!/usr/bin/env bash
# jwt_authn with remote_jwks end to end: curl with ES256 tokens through
# Arion's envoy.filters.http.jwt_authn whose providers take their keys
# from a node HTTPS server (e2e_jwks.js: its key made at start, the
# tokens signed with it) through a TLS cluster, as Envoy Gateway writes
# them (async_fetch and retry_policy empty, cache_duration 300 s), before
# nginx A. A request without a token fetches nothing (401 Jwt is
# missing); five concurrent requests with a token all wait for one fetch
# (GET /jwks.json, Host keys.test:8443) and all pass; later ones use the
# cached keys; a token signed with another key is 401 Jwt verification
# fails; a provider whose JWKS is 65537 bytes, and one whose server
# answers 500 (retried once: retry_policy's num_retries 1), fail their
# requests 401 "Jwks remote fetch is failed", logged naming the provider
# and cluster; when the client whose connection carries a fetch gives up,
# the fetch moves to another waiter's connection; three HTTP/2 streams of
# one connection share a fetch; the counters say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node openssl || exit 77
curl -V | grep -q HTTP2 || { echo "curl without HTTP/2"; exit 77; }
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-jwks
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "arion jwks CA" && pki_leaf keys ca keys.test "subjectAltName=DNS:keys.test" ||
	{ echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
chmod 755 "$TOPO_DIR"
: >"$TOPO_DIR/fetches.log"
topo_bg jwks ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_jwks.js" "$ub" 8443 \
	"$d/keys.pem" "$d/keys.key" "$TOPO_DIR"
for i in $(seq 100); do [ -s "$TOPO_DIR/ready" ] && break; sleep 0.1; done
[ -s "$TOPO_DIR/ready" ] || { echo "the JWKS server did not start"; exit 1; }

prov() { # prov NAME ISSUER PATH
	cat <<YAML
                          $1:
                            issuer: $2
                            audiences: [a1]
                            forward: true
                            remote_jwks:
                              http_uri: { uri: "https://keys.test:8443$3", cluster: jwks, timeout: 2s }
                              cache_duration: 300s
                              async_fetch: {}
                              retry_policy: {}
YAML
}
{
	cat <<YAML
  static_resources:
    secrets:
      - name: jwks-ca
        validation_context: { trusted_ca: { filename: $d/ca.pem } }
    listeners:
      - name: http
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: jw
                  route_config:
                    name: local
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - match: { prefix: "/" }
                            route: { cluster: web }
                  http_filters:
                    - name: envoy.filters.http.jwt_authn
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
                        providers:
YAML
	prov p1 https://iss.test /jwks.json
	prov p2 https://iss2.test /big.json
	prov p3 https://iss3.test /500
	prov p4 https://iss4.test /slow.json
	prov p5 https://iss5.test '/jwks.json?h2'
	cat <<YAML
                        rules:
                          - { match: { prefix: "/p2" }, requires: { provider_name: p2 } }
                          - { match: { prefix: "/p3" }, requires: { provider_name: p3 } }
                          - { match: { prefix: "/p4" }, requires: { provider_name: p4 } }
                          - { match: { prefix: "/p5" }, requires: { provider_name: p5 } }
                          - { match: { prefix: "/" }, requires: { provider_name: p1 } }
                    - name: envoy.filters.http.router
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
    clusters:
      - name: web
        type: STATIC
        connect_timeout: 1s
        load_assignment:
          cluster_name: web
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $ua, port_value: 8080 } } }
      - name: jwks
        type: STATIC
        connect_timeout: 1s
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: keys.test
            common_tls_context:
              validation_context_sds_secret_config: { name: jwks-ca }
        load_assignment:
          cluster_name: jwks
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $ub, port_value: 8443 } } }
YAML
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
fetches() { grep -cF "GET $1 " "$TOPO_DIR/fetches.log"; }
tok=$(cat "$TOPO_DIR/tok")

body=$(cc -w ' %{http_code}' "http://$us/echo/x")
expect "no token: 401 Jwt is missing" "$body" "^Jwt is missing 401$"
expect "no token: no fetch" "$(wc -l <"$TOPO_DIR/fetches.log")" "^0$"
pids=
for i in 1 2 3 4 5; do
	cc -o "$TOPO_DIR/c$i" -w '%{http_code}' -H "Authorization: Bearer $tok" "http://$us/echo/c$i" \
		>"$TOPO_DIR/code$i" &
	pids="$pids $!"
done
wait $pids
codes=$(cat "$TOPO_DIR"/code? | tr -d '\n')
expect "five concurrent requests with a token: all 200" "$codes" "^(200){5}$"
expect "the upstream answered them" "$(cat "$TOPO_DIR/c3")" "^echo-a /echo/c3"
expect "one fetch for the five" "$(fetches /jwks.json)" "^1$"
expect "the fetch's Host is the uri's authority" "$(head -1 "$TOPO_DIR/fetches.log")" \
	"^GET /jwks.json keys.test:8443$"
for i in 1 2 3; do
	expect "cached keys: 200 ($i)" \
		"$(cc -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "http://$us/echo/k")" "^200$"
done
expect "cached: no more fetches" "$(fetches /jwks.json)" "^1$"
body=$(cc -w ' %{http_code}' -H "Authorization: Bearer $(cat "$TOPO_DIR/tok_other")" "http://$us/echo/o")
expect "another key's token: 401 Jwt verification fails" "$body" "^Jwt verification fails 401$"
body=$(cc -w ' %{http_code}' -H "Authorization: Bearer $(cat "$TOPO_DIR/tok2")" "http://$us/p2")
expect "a JWKS of 65537 bytes: 401 Jwks remote fetch is failed" "$body" \
	"^Jwks remote fetch is failed 401$"
body=$(cc -w ' %{http_code}' -H "Authorization: Bearer $(cat "$TOPO_DIR/tok3")" "http://$us/p3")
expect "a 500: 401 Jwks remote fetch is failed" "$body" "^Jwks remote fetch is failed 401$"
expect "the 500 retried once (retry_policy {})" "$(fetches /500)" "^2$"
expect "the big body not retried" "$(fetches /big.json)" "^1$"
# the client whose connection carries a fetch gives up: the fetch starts
# again on the other waiter's connection, whose request then passes
t4=$(cat "$TOPO_DIR/tok4")
# (a reset: a client's FIN alone is a half-close, its request goes on)
ip netns exec "$cns" python3 -c '
import socket, struct, sys, time
s = socket.create_connection((sys.argv[1], 80))
s.sendall(("GET /p4/a HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n\r\n" % sys.argv[2]).encode())
open(sys.argv[3], "w").close()
time.sleep(0.5)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
print("000")' "$us" "$t4" "$TOPO_DIR/a_sent" >"$TOPO_DIR/code_a" &
pa=$!
for i in $(seq 50); do [ -e "$TOPO_DIR/a_sent" ] && break; sleep 0.02; done
sleep 0.1
cc -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t4" "http://$us/p4/b" >"$TOPO_DIR/code_b" &
pb=$!
wait $pa $pb
expect "the owner gave up (reset)" "$(cat "$TOPO_DIR/code_a")" "^000$"
expect "the other waiter passes" "$(cat "$TOPO_DIR/code_b")" "^200$"
expect "its fetch started again on its connection" "$(fetches /slow.json)" "^2$"
# three HTTP/2 streams of one connection wait for one fetch
t5=$(cat "$TOPO_DIR/tok5")
codes=$(cc --http2-prior-knowledge -Z --parallel-immediate -o /dev/null -o /dev/null -o /dev/null \
	-w '%{http_code}' -H "Authorization: Bearer $t5" \
	"http://$us/p5/1" "http://$us/p5/2" "http://$us/p5/3")
expect "h2: three streams pass" "$codes" "^(200){3}$"
expect "h2: one fetch for them" "$(fetches '/jwks.json?h2')" "^1$"
expect "jwks_fetch_success" "$(stat http.jw.jwt_authn.jwks_fetch_success)" "^3$"
expect "jwks_fetch_failed" "$(stat http.jw.jwt_authn.jwks_fetch_failed)" "^2$"
expect "allowed" "$(stat http.jw.jwt_authn.allowed)" "^12$"
expect "denied" "$(stat http.jw.jwt_authn.denied)" "^4$"
expect "the fetches went over TLS" "$(stat cluster.jwks.ssl.handshake)" "^[1-9]"
expect "the failure is logged naming provider and cluster" \
	"$(grep -c "provider 'p2': fetching its JWKS from cluster 'jwks'.*body over 65536 bytes" "$TOPO_ARION_LOG")" "^1$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
