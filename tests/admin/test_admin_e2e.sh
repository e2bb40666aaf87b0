#!/usr/bin/env bash
# The admin endpoint end to end: the real arion binary in control-plane-only
# mode (no dataplane:), admin on 127.0.0.1 port 0 (the bound port is read from
# the log), every endpoint hit with curl, /stats/prometheus through promtool,
# secrets redacted in /config_dump, /ready flipping with /healthcheck/fail,
# /quitquitquit stopping the process, a non-loopback address refused.
set -u
A=${ARION_BIN:?}
t=$(mktemp -d /tmp/arn-admin-e2e-$$-XXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$t"
}
trap cleanup EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/    /' "$2" | head -40; fails=$((fails + 1)); }

# req NAME EXPECTED_STATUS METHOD PATH -> body in $t/body, status in $st
req() {
	local name=$1 want=$2 method=$3 path=$4
	st=$(curl -s -o "$t/body" -w '%{http_code}' -X "$method" "http://127.0.0.1:$port$path")
	if [ "$st" = "$want" ]; then ok "$name ($method $path -> $st)"; else
		bad "$name: $method $path gave $st, wanted $want" "$t/body"; fi
}
has() { # name, fixed string expected in $t/body
	if grep -qF -- "$2" "$t/body"; then ok "$1"; else bad "$1: body lacks: $2" "$t/body"; fi
}
lacks() {
	if grep -qF -- "$2" "$t/body"; then bad "$1: body has: $2" "$t/body"; else ok "$1"; fi
}
json_ok() { # name: body is valid JSON
	if python3 -m json.tool "$t/body" >/dev/null 2>"$t/jerr"; then ok "$1"; else bad "$1" "$t/jerr"; fi
}

# A real key pair: lib/config checks that secrets parse.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=arn-admin-e2e -keyout "$t/key.pem" -out "$t/cert.pem" >/dev/null 2>&1 ||
	{ echo "FAIL openssl could not make a test key"; exit 1; }
keyline=$(sed -n 2p "$t/key.pem")   # a line of the private key's base64
certline=$(sed -n 2p "$t/cert.pem")
{
	cat <<'EOF'
envoy_bootstrap:
  node: {id: admin-e2e, cluster: e2e-cluster}
  static_resources:
    secrets:
      - name: server-cert
        tls_certificate:
          certificate_chain:
            inline_string: |
EOF
	sed 's/^/              /' "$t/cert.pem"
	cat <<'EOF'
          private_key:
            inline_string: |
EOF
	sed 's/^/              /' "$t/key.pem"
	cat <<'EOF'
  admin:
    address:
      socket_address: {address: 127.0.0.1, port_value: 0}
EOF
} >"$t/arion.yaml"

"$A" -c "$t/arion.yaml" --service-node cli-node >"$t/log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*admin listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$t/log" | head -1)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$port" ]; then bad "arion started with an admin endpoint" "$t/log"; exit 1; fi
ok "admin listening on port $port (from the log)"

# /ready: nothing to wait for without a control plane
req "ready" 200 GET /ready
has "ready says LIVE" "LIVE"
st=$(curl -s -I -o "$t/body" -w '%{http_code}' "http://127.0.0.1:$port/ready")
[ "$st" = 200 ] && ok "HEAD /ready" || bad "HEAD /ready gave $st"

# /server_info
req "server_info" 200 GET /server_info
json_ok "server_info is JSON"
has "server_info state" '"state":"LIVE"'
has "server_info node id from --service-node (X7)" '"id":"cli-node"'
has "server_info node cluster" '"cluster":"e2e-cluster"'
has "server_info command line" '"--service-node","cli-node"'
has "server_info uptime" '"uptime_current_epoch":"'

# /stats in three forms
req "stats" 200 GET /stats
has "stats has the admin's own counters" "http.admin.downstream_rq_total: "
has "stats has server.state" "server.state: 0"
has "stats has histograms" "http.admin.downstream_rq_time: "
req "stats filter" 200 GET '/stats?filter=%5Ehttp%5C.admin%5C.downstream_rq_%5B0-9%5Dxx%24'
if [ "$(wc -l <"$t/body")" = 5 ] && grep -q '^http.admin.downstream_rq_2xx: [1-9]' "$t/body"; then
	ok "filter kept exactly the 5 code classes"; else bad "filter result" "$t/body"; fi
req "stats bad regex" 400 GET '/stats?filter=(('
has "bad regex says why" "Invalid regex"
req "stats json" 200 GET '/stats?format=json'
json_ok "stats json is JSON"
has "stats json has a stat" '"name":"server.live"'
has "stats json has histograms" '"supported_quantiles"'

# /stats/prometheus through a real Prometheus text parser
req "prometheus" 200 GET /stats/prometheus
cp "$t/body" "$t/prom"
has "prometheus TYPE lines" "# TYPE envoy_http_downstream_rq_total counter"
has "prometheus code class tag" 'envoy_http_downstream_rq_xx{envoy_response_code_class="2",envoy_http_conn_manager_prefix="admin"}'
has "prometheus histogram buckets" 'envoy_http_downstream_rq_time_bucket{envoy_http_conn_manager_prefix="admin",le="0.5"}'
has "prometheus gauges" "# TYPE envoy_server_live gauge"
promtool check metrics <"$t/prom" >"$t/promtool" 2>&1
prc=$?
# Exit 1 is a parse error. Exit 3 means lint findings only; the ones allowed
# are about Envoy's own names, which dashboards rely on: counters without the
# "_total" suffix (upstream_rq_xx, cx_connect_fail) and "_ms" histograms
# (downstream_cx_length_ms).
if [ $prc = 0 ] || { [ $prc = 3 ] && ! grep -v -e 'should have "_total" suffix' \
	-e '_ms metric names should not contain abbreviated units' "$t/promtool" | grep -q .; }; then
	ok "promtool check metrics parses it (exit $prc)"
else
	bad "promtool check metrics exit $prc" "$t/promtool"
fi
python3 - "$t/prom" >"$t/pyprom" 2>&1 <<'PY'
import re, sys
seen, cur, series = set(), None, set()
hist = {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ")
        assert name not in seen, "family twice: " + name
        seen.add(name); cur = (name, kind); continue
    if line.startswith("#") or not line:
        continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$', line)
    assert m, "bad sample: " + line
    name, labels, value = m.group(1), m.group(2) or "", m.group(3)
    float(value)
    assert name.startswith(cur[0]), "sample outside its family: " + line
    assert (name, labels) not in series, "duplicate series: " + line
    series.add((name, labels))
    if cur[1] == "histogram" and name.endswith("_bucket"):
        key = (cur[0], re.sub(r',?le="[^"]*"', "", labels))
        v = float(value)
        prev = hist.get(key, 0)
        assert v >= prev, "buckets not cumulative: " + line
        hist[key] = v
    if cur[1] == "histogram" and name.endswith("_count"):
        key = (cur[0], labels)
        assert hist.get(key) == float(value), "+Inf bucket != count: " + line
print("families", len(seen), "series", len(series))
PY
[ $? = 0 ] && ok "prometheus: one TYPE per family, no duplicate series, cumulative buckets" ||
	bad "prometheus structure" "$t/pyprom"

# /config_dump: Envoy's shape, secrets redacted
req "config_dump" 200 GET /config_dump
json_ok "config_dump is JSON"
has "config_dump bootstrap section" '"@type": "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"'
has "config_dump keeps the certificate" "$certline"
lacks "config_dump redacts the private key" "$keyline"
has "config_dump says redacted" '"[redacted]"'
req "config_dump mask" 200 GET '/config_dump?mask=bootstrap.node'
json_ok "masked config_dump is JSON"
has "mask keeps node" '"id": "admin-e2e"'
lacks "mask drops the rest" "static_resources"
req "config_dump unknown resource" 404 GET '/config_dump?resource=no_such_thing'
req "config_dump include_eds" 200 GET '/config_dump?include_eds'
lacks "include_eds still redacts" "$keyline"

# /clusters and /listeners (filled by lib/config when it is wired)
req "clusters" 200 GET /clusters
req "clusters json" 200 GET '/clusters?format=json'
json_ok "clusters json is JSON"
has "clusters json shape" '"cluster_statuses"'
req "listeners" 200 GET /listeners
req "listeners json" 200 GET '/listeners?format=json'
json_ok "listeners json is JSON"
has "listeners json shape" '"listener_statuses"'
req "memory" 200 GET /memory
json_ok "memory is JSON"

# mutations only by POST
req "GET healthcheck/fail refused" 405 GET /healthcheck/fail
has "405 says POST" "POST required"
req "GET quitquitquit refused" 405 GET /quitquitquit
req "POST to a GET endpoint refused" 405 POST /stats

# health checks drive /ready
req "healthcheck fail" 200 POST /healthcheck/fail
req "ready after fail" 503 GET /ready
has "ready says DRAINING" "DRAINING"
req "server_info while draining" 200 GET /server_info
has "server_info DRAINING" '"state":"DRAINING"'
req "healthcheck ok" 200 POST /healthcheck/ok
req "ready after ok" 200 GET /ready

# logging
req "logging per module" 200 POST '/logging?xds=debug'
has "xds at debug" "  xds: debug"
req "logging all" 200 POST '/logging?level=warning'
has "all at warning" "  admin: warning"
req "logging bad level" 400 POST '/logging?level=loud'
req "logging restore" 200 POST '/logging?level=info'

# unknown paths list the endpoints
req "unknown path" 404 GET /nope
has "404 lists /stats" "/stats/prometheus"
has "404 lists POST endpoints" "/quitquitquit (POST)"
req "help" 200 GET /

# keep-alive: two requests on one connection
curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' "http://127.0.0.1:$port/ready" \
	"http://127.0.0.1:$port/ready" >"$t/conns"
[ "$(paste -sd+ "$t/conns" | bc)" = 1 ] && ok "keep-alive reuses the connection" ||
	bad "keep-alive" "$t/conns"

# the admin's own stats counted those requests
req "stats after" 200 GET '/stats?filter=http.admin.downstream_rq_4xx'
grep -q '^http.admin.downstream_rq_4xx: [1-9]' "$t/body" && ok "4xx counted" || bad "4xx counted" "$t/body"

# a slow client does not hold up the server
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /ready HTTP/1.1\r\nHost: x\r\n' >&3 # never finished
req "served while another client stalls" 200 GET /ready
exec 3>&-

# /quitquitquit stops the process cleanly
req "quitquitquit" 200 POST /quitquitquit
has "quit says OK" "OK"
for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then bad "arion still runs 5 s after /quitquitquit" "$t/log"; else
	wait "$pid"
	rc=$?
	pid=
	[ $rc = 0 ] && ok "arion exited 0 after /quitquitquit" || bad "arion exit code $rc" "$t/log"
fi

# a non-loopback admin address is refused, and the message says why and how
sed 's/address: 127.0.0.1, port_value: 0/address: 0.0.0.0, port_value: 0/' "$t/arion.yaml" >"$t/remote.yaml"
# (issue 15: refused when the file is read, by --mode validate as by serve,
# before any port is touched, with the line of the file)
timeout 10 "$A" -c "$t/remote.yaml" >"$t/rlog" 2>&1
rc=$?
[ $rc = 1 ] && ok "non-loopback admin address: configuration invalid (exit 1)" || bad "non-loopback exit $rc" "$t/rlog"
grep -q "is not a loopback address" "$t/rlog" && grep -q "ARION_ADMIN_ALLOW_REMOTE=1" "$t/rlog" &&
	grep -q "quitquitquit" "$t/rlog" && grep -qE "remote.yaml:[0-9]+:[0-9]+" "$t/rlog" &&
	ok "refusal says why, how to allow it, and where" || bad "refusal message" "$t/rlog"
grep -q "EAL\|port wan" "$t/rlog" && bad "a port was touched before the refusal" "$t/rlog" ||
	ok "nothing was started before the refusal"
timeout 10 "$A" --mode validate -c "$t/remote.yaml" >"$t/vlog" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "is not a loopback address" "$t/vlog" &&
	ok "--mode validate refuses it too" || bad "--mode validate exit $rc" "$t/vlog"
ARION_ADMIN_ALLOW_REMOTE=1 timeout 10 "$A" --mode validate -c "$t/remote.yaml" >"$t/vlog" 2>&1
rc=$?
[ $rc = 0 ] && ok "ARION_ADMIN_ALLOW_REMOTE=1: validate accepts it" || bad "allowed: validate exit $rc" "$t/vlog"

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
