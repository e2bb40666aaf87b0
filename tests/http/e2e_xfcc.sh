#!/usr/bin/env bash
# x-forwarded-client-cert end to end: curl with a client certificate (its
# chain: leaf and intermediate) over mTLS through Arion to a node upstream
# that answers with the header it got. Certificates made here.
#
#   :9443  mTLS, SANITIZE_SET with cert, chain, subject, uri, dns: the
#          element exactly as Envoy writes it, the client's own replaced
#   :9444  mTLS, APPEND_FORWARD with uri, dns: appended after the client's
#   :9445  mTLS, default (SANITIZE): the client's header removed
#   :8080  plain text, FORWARD_ONLY: removed (no certificate presented)
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl node openssl python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-xc
http_e2e_topo || exit 1

# the upstream: the x-forwarded-client-cert lines it got, joined by "|"
# ("-" when none), on :8080 of $ua
cat >"$TOPO_DIR/echo.js" <<'JS'
require("http").createServer((q, s) => {
  const v = [];
  for (let i = 0; i < q.rawHeaders.length; i += 2)
    if (q.rawHeaders[i].toLowerCase() === "x-forwarded-client-cert") v.push(q.rawHeaders[i + 1]);
  s.end(v.length ? v.join("|") : "-");
}).listen(8080, process.argv[2], () => console.log("listening"));
JS
topo_bg echo ip netns exec "$uns" node "$TOPO_DIR/echo.js" "$ua"
topo_wait_log "$TOPO_DIR/echo.log" listening 10 || { echo "upstream did not start"; exit 1; }

d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "arion test server CA" && pki_ca cca "arion test client CA" &&
	pki_leaf srv ca srv.test "subjectAltName=DNS:srv.test,URI:spiffe://arion.test/gw" &&
	pki_leaf mid cca "client intermediate" "basicConstraints=critical,CA:TRUE" &&
	pki_leaf cl mid client "subjectAltName=URI:spiffe://arion.test/c1,URI:spiffe://arion.test/c2,DNS:client.test
extendedKeyUsage=clientAuth" || { echo "openssl failed"; exit 1; }
cat "$d/cl.pem" "$d/mid.pem" >"$d/cl-chain.pem"
chmod -R a+rX "$d"

lsn() { # lsn NAME PORT TLS(0|1) HCM_EXTRA_LINES...
	local name=$1 port=$2 tls=$3
	shift 3
	cat <<YAML
      - name: $name
        address: { socket_address: { address: 0.0.0.0, port_value: $port } }
        filter_chains:
          - name: only
YAML
	if [ "$tls" = 1 ]; then
		cat <<YAML
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                common_tls_context:
                  tls_certificate_sds_secret_configs: [ { name: srv } ]
                  alpn_protocols: [ h2, http/1.1 ]
                  validation_context_sds_secret_config: { name: client-ca }
                require_client_certificate: true
YAML
	fi
	cat <<YAML
            filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: $name
YAML
	for l in "$@"; do echo "                  $l"; done
	cat <<YAML
                  route_config:
                    virtual_hosts:
                      - { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, route: { cluster: echo } } ] }
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
YAML
}
{
	cat <<YAML
  static_resources:
    secrets:
      - name: srv
        tls_certificate: { certificate_chain: { filename: $d/srv.pem }, private_key: { filename: $d/srv.key } }
      - name: client-ca
        validation_context: { trusted_ca: { filename: $d/cca.pem } }
    listeners:
YAML
	lsn set 9443 1 "forward_client_cert_details: SANITIZE_SET" \
		"set_current_client_cert_details: { subject: true, cert: true, chain: true, uri: true, dns: true }"
	lsn append 9444 1 "forward_client_cert_details: APPEND_FORWARD" \
		"set_current_client_cert_details: { uri: true, dns: true }"
	lsn sanitize 9445 1
	lsn plain 8080 0 "forward_client_cert_details: FORWARD_ONLY"
	cat <<YAML
    clusters:
      - name: echo
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: echo
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8080 } } } } ] } ]
YAML
} >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }

# the element Envoy writes for this client, from the certificates alone
expect() { # expect DETAILS(cert,chain,subject,uri,dns)
	python3 - "$d" "$1" <<'PY'
import hashlib, subprocess, sys
d, det = sys.argv[1], sys.argv[2].split(",")
def pem(f):
    return subprocess.run(["openssl", "x509", "-in", f], capture_output=True, text=True).stdout
def enc(s):
    for a, b in (("\n", "%0A"), (" ", "%20"), ("+", "%2B"), ("/", "%2F"), ("=", "%3D")):
        s = s.replace(a, b)
    return s
der = subprocess.run(["openssl", "x509", "-in", d + "/cl.pem", "-outform", "DER"], capture_output=True).stdout
subj = subprocess.run(["openssl", "x509", "-in", d + "/cl.pem", "-noout", "-subject", "-nameopt", "RFC2253"],
                      capture_output=True, text=True).stdout.strip().split("=", 1)[1]
e = ["By=spiffe://arion.test/gw", "Hash=" + hashlib.sha256(der).hexdigest()]
if "cert" in det: e.append('Cert="%s"' % enc(pem(d + "/cl.pem")))
if "chain" in det: e.append('Chain="%s"' % enc(pem(d + "/cl.pem") + pem(d + "/mid.pem")))
if "subject" in det: e.append('Subject="%s"' % subj)
if "uri" in det: e += ["URI=spiffe://arion.test/c1", "URI=spiffe://arion.test/c2"]
if "dns" in det: e.append("DNS=client.test")
print(";".join(e))
PY
}
SPOOF="By=spiffe://x/y;URI=spiffe://arion.test/admin"
get() { # get PORT [CURL ARGS]: the upstream's answer, or "ERR<curl exit code>"
	local p=$1
	shift
	local out
	out=$(ip netns exec "$cns" curl -sS --max-time 10 --cacert "$d/ca.pem" \
		--resolve "srv.test:$p:$us" --cert "$d/cl-chain.pem" --key "$d/cl.key" \
		"$@" "https://srv.test:$p/" 2>"$TOPO_DIR/curl.err") || out="ERR$?"
	echo "$out"
}

want=$(expect cert,chain,subject,uri,dns)
o=$(get 9443 -H "x-forwarded-client-cert: $SPOOF")
[ "$o" = "$want" ] && ok "SANITIZE_SET: the element as Envoy writes it (${#o} bytes), the client's replaced" ||
	bad "SANITIZE_SET: got '$o' want '$want' $(cat "$TOPO_DIR/curl.err")"
o=$(get 9443 --http2 -o /dev/null -w '%{http_version}')
[ "$o" = 2 ] && ok "HTTP/2 by ALPN" || bad "curl --http2 spoke HTTP/$o"
o=$(get 9443 --http2 -H "x-forwarded-client-cert: $SPOOF")
[ "$o" = "$want" ] && ok "SANITIZE_SET over HTTP/2: the same" || bad "SANITIZE_SET over HTTP/2: got '$o'"

want=$(expect uri,dns)
o=$(get 9444 -H "x-forwarded-client-cert: $SPOOF")
[ "$o" = "$SPOOF,$want" ] && ok "APPEND_FORWARD: appended after the client's ($o)" ||
	bad "APPEND_FORWARD: got '$o' want '$SPOOF,$want'"
o=$(get 9444)
[ "$o" = "$want" ] && ok "APPEND_FORWARD without a header: the element alone" ||
	bad "APPEND_FORWARD without a header: got '$o'"

o=$(get 9445 -H "x-forwarded-client-cert: $SPOOF")
[ "$o" = "-" ] && ok "SANITIZE (default) on mTLS: the client's header removed" ||
	bad "SANITIZE: the upstream got '$o'"
o=$(get 9445 --http2 -H "x-forwarded-client-cert: $SPOOF" -H "X-Forwarded-Client-Cert: Hash=00")
[ "$o" = "-" ] && ok "SANITIZE over HTTP/2: both of the client's fields removed" ||
	bad "SANITIZE over HTTP/2: the upstream got '$o'"

o=$(ip netns exec "$cns" curl -sS --max-time 10 -H "x-forwarded-client-cert: $SPOOF" \
	"http://$us:8080/" 2>"$TOPO_DIR/curl.err") || o="ERR$?"
[ "$o" = "-" ] && ok "FORWARD_ONLY on plain text: removed" || bad "FORWARD_ONLY plain: the upstream got '$o'"
http_e2e_finish
