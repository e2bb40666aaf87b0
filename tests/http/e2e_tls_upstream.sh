#!/usr/bin/env bash
# Upstream TLS end to end (issue 18, "Upstream TLS"): plain HTTP from curl
# to Arion, TLS from Arion to an nginx in the upstream namespace serving a
# certificate from a CA of the test's own and requiring a client
# certificate (mTLS), all made here with openssl.
#
#   /ok   cluster tls_ok: sni up.test, the server CA trusted, SAN up.test
#         required, Arion's client certificate; one request per connection
#         (max_requests_per_connection 1), so the second connection resumes
#         the first one's session
#   /ok12 cluster tls_ok12: the same at TLS 1.2 at most
#   /keep cluster tls_keep: keep-alive, the connection pooled
#   /san  cluster tls_san: the same, but the SAN required is other.test:
#         503 UF, the reason in %UPSTREAM_TRANSPORT_FAILURE_REASON%
#   /ca   cluster tls_ca: another CA trusted: 503 UF, fail_verify_error
#   /nocert cluster tls_nocert: no client certificate: nginx answers 400
#   /h2   cluster tls_h2: offers h2 to an nginx that picks it: 503 UF
#   /needcert cluster tls_needcert: no client certificate to an openssl
#         s_server that requires one (TLS 1.3): 503, the alert's reason logged
#   /tsm  cluster tls_tsm (Envoy Gateway's BackendTLSPolicy shape):
#         transport_socket_matches, round robin over the TLS nginx (its
#         endpoint's metadata names the match: TLS, SNI up.test, client
#         certificate) and a plain nginx on $ub:8080 (no metadata, no
#         cluster transport_socket: plain text)
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl nginx openssl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-tu
http_e2e_topo || exit 1

d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "arion upstream CA" && pki_ca other "another CA" && pki_ca cca "arion client CA" &&
	pki_leaf up ca up.test "subjectAltName=DNS:up.test" &&
	pki_leaf arion cca arion "extendedKeyUsage=clientAuth" || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
chmod 755 "$TOPO_DIR"

# ---- nginx over TLS on $ua:8443, a client certificate from cca required -----------------
n="$TOPO_DIR/nginx-tls"
mkdir -p "$n"
chmod 777 "$n"
cat >"$n/nginx.conf" <<NGINX
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log info;
events { worker_connections 256; }
http {
  log_format tls '\$request_uri \$ssl_protocol \$ssl_server_name \$ssl_session_reused \$ssl_client_s_dn \$connection';
  access_log $n/access.log tls;
  client_body_temp_path $n/body;
  proxy_temp_path $n/proxy;
  fastcgi_temp_path $n/fcgi;
  uwsgi_temp_path $n/uwsgi;
  scgi_temp_path $n/scgi;
  ssl_session_cache shared:S:1m;
  server {
    listen $ua:8443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $d/up.pem;
    ssl_certificate_key $d/up.key;
    ssl_client_certificate $d/cca.pem;
    ssl_verify_client on;
    location / { return 200 "tls-upstream \$request_uri\n"; }
  }
  server {
    listen $ua:8444 ssl http2;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $d/up.pem;
    ssl_certificate_key $d/up.key;
    location / { return 200 "h2-upstream\n"; }
  }
  server {
    listen $ub:8080;
    location / { return 200 "plain-upstream \$request_uri\n"; }
  }
}
NGINX
topo_bg nginx-tls ip netns exec "$uns" nginx -c "$n/nginx.conf" -g 'daemon off;'
# openssl s_server, TLS 1.3, a client certificate required: it refuses a
# client without one after the client's side of the handshake is done
topo_bg s_server ip netns exec "$uns" openssl s_server -quiet -accept "$ua:8445" -cert "$d/up.pem" \
	-key "$d/up.key" -Verify 1 -CAfile "$d/cca.pem" -tls1_3 -www
for i in $(seq 50); do
	ip netns exec "$uns" curl -s -o /dev/null --cacert "$d/ca.pem" --cert "$d/arion.pem" \
		--key "$d/arion.key" --resolve "up.test:8443:$ua" "https://up.test:8443/" && break
	sleep 0.1
done

utc() { # utc CLUSTER SAN CA [CLIENT_CERT]: the cluster's transport_socket
	local maxv=TLSv1_3 alpn='"http/1.1"'
	[ "$1" = tls_ok12 ] && maxv=TLSv1_2
	[ "$1" = tls_h2 ] && alpn='"h2"' 
	cat <<YAML
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: up.test
            common_tls_context:
              alpn_protocols: [ $alpn ]
              tls_params: { tls_minimum_protocol_version: TLSv1_2, tls_maximum_protocol_version: $maxv }
              combined_validation_context:
                default_validation_context:
                  match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: $2 } } ]
                validation_context_sds_secret_config: { name: $3 }
YAML
	[ -n "${4:-}" ] && echo "              tls_certificate_sds_secret_configs: [ { name: $4 } ]"
}
cluster() { # cluster NAME SAN CA [CLIENT_CERT]
	local mr=1 port=8443
	[ "$1" = tls_keep ] && mr=100
	[ "$1" = tls_h2 ] && port=8444
	[ "$1" = tls_needcert ] && port=8445
	cat <<YAML
      - name: $1
        type: STATIC
        connect_timeout: 2s
        max_requests_per_connection: $mr
        load_assignment:
          cluster_name: $1
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: $port } } } } ] } ]
YAML
	utc "$@"
}
{
	cat <<YAML
  static_resources:
    secrets:
      - name: arion-client
        tls_certificate: { certificate_chain: { filename: $d/arion.pem }, private_key: { filename: $d/arion.key } }
      - name: up-ca
        validation_context: { trusted_ca: { filename: $d/ca.pem } }
      - name: other-ca
        validation_context: { trusted_ca: { filename: $d/other.pem } }
    listeners:
      - name: plain
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: tu
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - { match: { prefix: "/ok12" }, route: { cluster: tls_ok12 } }
                          - { match: { prefix: "/ok" }, route: { cluster: tls_ok } }
                          - { match: { prefix: "/keep" }, route: { cluster: tls_keep } }
                          - { match: { prefix: "/san" }, route: { cluster: tls_san } }
                          - { match: { prefix: "/ca" }, route: { cluster: tls_ca } }
                          - { match: { prefix: "/nocert" }, route: { cluster: tls_nocert } }
                          - { match: { prefix: "/h2" }, route: { cluster: tls_h2 } }
                          - { match: { prefix: "/needcert" }, route: { cluster: tls_needcert } }
                          - { match: { prefix: "/tsm" }, route: { cluster: tls_tsm } }
                  access_log:
                    - name: envoy.access_loggers.file
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
                        path: $TOPO_DIR/access.log
                        log_format:
                          text_format_source:
                            inline_string: "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %UPSTREAM_TRANSPORT_FAILURE_REASON%\\n"
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
YAML
	cluster tls_ok up.test up-ca arion-client
	cluster tls_ok12 up.test up-ca arion-client
	cluster tls_keep up.test up-ca arion-client
	cluster tls_san other.test up-ca arion-client
	cluster tls_ca up.test other-ca arion-client
	cluster tls_nocert up.test up-ca
	cluster tls_h2 up.test up-ca
	cluster tls_needcert up.test up-ca
	# transport_socket_matches: the TLS endpoint's socket is the match's
	cat <<YAML
      - name: tls_tsm
        type: STATIC
        connect_timeout: 2s
        lb_policy: ROUND_ROBIN
        load_assignment:
          cluster_name: tls_tsm
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $ua, port_value: 8443 } } }
                  metadata: { filter_metadata: { envoy.transport_socket_match: { name: tls_tsm/tls/0 } } }
                - endpoint: { address: { socket_address: { address: $ub, port_value: 8080 } } }
        transport_socket_matches:
          - name: tls_tsm/tls/0
            match: { name: tls_tsm/tls/0 }
YAML
	utc tls_tsm up.test up-ca arion-client | sed 's/^/    /' # under the match
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

get() { cc -s -o "$TOPO_DIR/body.out" -w '%{http_code}' "http://$us/$1" 2>/dev/null || echo ERR; }
logline() { # logline PATH: Arion's access log line for PATH
	local i
	for i in $(seq 30); do grep -q "^/$1 " "$TOPO_DIR/access.log" 2>/dev/null && break; sleep 0.1; done
	grep "^/$1 " "$TOPO_DIR/access.log" 2>/dev/null | tail -1
}

o=$(get ok1)
[ "$o" = 200 ] && [ "$(cat "$TOPO_DIR/body.out")" = "tls-upstream /ok1" ] &&
	ok "TLS to the upstream: verified (CA, SAN up.test), client certificate accepted" ||
	bad "/ok1: $o '$(cat "$TOPO_DIR/body.out" 2>/dev/null)'"
o=$(get ok2)
[ "$o" = 200 ] && ok "a second connection (max_requests_per_connection 1)" || bad "/ok2: $o"
for i in $(seq 20); do grep -q '^/ok2 ' "$n/access.log" 2>/dev/null && break; sleep 0.1; done
l1=$(grep '^/ok1 ' "$n/access.log" | head -1)
l2=$(grep '^/ok2 ' "$n/access.log" | head -1)
case "$l1" in "/ok1 TLSv1.3 up.test . CN=arion "*) ok "nginx saw: $l1 (SNI up.test, our client certificate)" ;;
*) bad "nginx's first connection: '$l1'" ;; esac
case "$l2" in "/ok2 TLSv1.3 up.test r "*) ok "the second connection resumed the first's session: $l2" ;;
*) bad "nginx's second connection was not resumed: '$l2'" ;; esac

# TLS 1.2: resumption by the session the server gave (nginx: ticket)
o=$(get ok12a)$(get ok12b)
[ "$o" = 200200 ] && ok "TLS 1.2 to the upstream" || bad "/ok12a, /ok12b: $o"
for i in $(seq 20); do grep -q '^/ok12b ' "$n/access.log" 2>/dev/null && break; sleep 0.1; done
l=$(grep '^/ok12b ' "$n/access.log" | head -1)
case "$l" in "/ok12b TLSv1.2 up.test r "*) ok "TLS 1.2 session resumed: $l" ;;
*) bad "TLS 1.2 second connection: '$l'" ;; esac

# pooled: three requests in turn over one upstream TLS connection
o=$(get keep1)$(get keep2)$(get keep3)
for i in $(seq 20); do grep -q '^/keep3 ' "$n/access.log" 2>/dev/null && break; sleep 0.1; done
c=$(grep '^/keep' "$n/access.log" | awk '{print $NF}' | sort -u | wc -l)
[ "$o" = 200200200 ] && [ "$c" = 1 ] && ok "three requests reuse one upstream TLS connection" ||
	bad "keep-alive upstream TLS: codes $o, $c connections"

o=$(get san)
[ "$o" = 503 ] && ok "SAN mismatch: 503" || bad "/san: $o"
l=$(logline san)
case "$l" in "/san 503 UF TLS_error:|"*"certificate verify failed"*) ok "access log: $l" ;;
*) bad "/san's access log: '$l'" ;; esac
grep -q "transport failure reason: TLS_error:" "$TOPO_DIR/body.out" &&
	ok "the 503's body gives the transport failure reason" ||
	bad "/san's body: '$(cat "$TOPO_DIR/body.out")'"
o=$(get ca)
[ "$o" = 503 ] && ok "an upstream certificate from an untrusted CA: 503" || bad "/ca: $o"
l=$(logline ca)
case "$l" in "/ca 503 UF TLS_error:"*) ok "access log: $l" ;; *) bad "/ca's access log: '$l'" ;; esac
# nginx answers a client without a certificate with its own 400
o=$(get nocert)
[ "$o" = 400 ] && grep -q "No required SSL certificate" "$TOPO_DIR/body.out" &&
	ok "a cluster without a client certificate sends none (nginx: 400)" || bad "/nocert: $o"

# admin /certs, Envoy's shape: one entry per context, its CAs and its certificate
curl -s "http://127.0.0.1:$admin_port/certs" >"$TOPO_DIR/certs.json"
serial=$(openssl x509 -in "$d/arion.pem" -noout -serial | cut -d= -f2 | tr 'A-F' 'a-f' | sed 's/^0*//')
o=$(python3 - "$TOPO_DIR/certs.json" "$d" "$serial" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["certificates"]
d, serial = sys.argv[2], sys.argv[3]
ok = [e for e in c if e["cert_chain"] and e["cert_chain"][0]["path"] == d + "/arion.pem"
      and e["ca_cert"] and e["ca_cert"][0]["path"] == d + "/ca.pem"]
e = ok[0]["cert_chain"][0] if ok else {}
print(len(c), len(ok), e.get("serial_number", "").lstrip("0") == serial.lstrip("0"), e.get("days_until_expiration"),
      e.get("expiration_time", "")[-1:], ok[0]["ca_cert"][0].get("subject_alt_names") if ok else None)
PY
)
# days_until_expiration is whole days left of a 2-day certificate: 2 when
# /certs is read within the second it was made, 1 after that
case "$o" in "9 5 True 1 Z []" | "9 5 True 2 Z []") true ;; *) false ;; esac && ok "/certs: 9 contexts (tls_tsm's match's one), the client certificate's path, serial, days" ||
	bad "/certs: '$o' $(head -c 600 "$TOPO_DIR/certs.json")"

# an upstream that picks h2 from the offered ALPN: not spoken to (HTTP/1.1 only)
o=$(get h2)
l=$(logline h2)
[ "$o" = 503 ] && case "$l" in "/h2 503 UF ALPN: "*) true ;; *) false ;; esac &&
	ok "ALPN h2 chosen by the upstream: 503 UF ($l)" || bad "/h2: $o, log '$l'"

# refused after the handshake (TLS 1.3 certificate_required): the reason too
o=$(get needcert)
l=$(logline needcert)
[ "$o" = 503 ] && case "$l" in "/needcert 503 "*"TLS_error:"*"certificate required"*) true ;; *) false ;; esac &&
	ok "a client certificate refused after the handshake: 503 ($l)" || bad "/needcert: $o, log '$l'"

# transport_socket_matches: four requests, round robin: two over TLS to
# the matched endpoint (SNI, client certificate), two in plain text
b=""
for i in 1 2 3 4; do
	o=$(get tsm$i)
	b="$b$o $(cat "$TOPO_DIR/body.out" 2>/dev/null | cut -d' ' -f1);"
done
case "$b" in *"200 tls-upstream;"*"200 plain-upstream;"* | *"200 plain-upstream;"*"200 tls-upstream;"*)
	[ "$(echo "$b" | grep -o tls-upstream | wc -l)" = 2 ] && [ "$(echo "$b" | grep -o plain-upstream | wc -l)" = 2 ] ;;
*) false ;; esac && ok "transport_socket_matches: the matched endpoint over TLS, the other in plain text ($b)" ||
	bad "transport_socket_matches: $b"
for i in $(seq 20); do grep -q '^/tsm' "$n/access.log" 2>/dev/null && break; sleep 0.1; done
l=$(grep '^/tsm' "$n/access.log" | head -1)
case "$l" in "/tsm"*" TLSv1.3 up.test "*" CN=arion "*) ok "nginx saw the match's TLS: $l" ;;
*) bad "nginx's /tsm line: '$l'" ;; esac
v=$(stat "cluster.tls_tsm.tls_tsm/tls/0.total_match_count")$(stat cluster.tls_tsm.default.total_match_count)
[ "$v" = 11 ] && ok "cluster.tls_tsm.<match>.total_match_count 1, default 1" || bad "total_match_count: $v"

sv() { # sv NAME MIN
	local v
	v=$(stat "$1")
	[ "$v" -ge "$2" ] && ok "$1 = $v" || bad "$1 = $v (want at least $2)"
}
sv cluster.tls_ok.ssl.handshake 2
sv cluster.tls_ok.ssl.session_reused 1
sv cluster.tls_ok.ssl.versions.TLSv1.3 2
sv cluster.tls_ok12.ssl.versions.TLSv1.2 2
sv cluster.tls_ok12.ssl.session_reused 1
sv cluster.tls_san.ssl.fail_verify_san 1
sv cluster.tls_ca.ssl.fail_verify_error 1
sv cluster.tls_san.upstream_cx_connect_fail 1
http_e2e_finish
