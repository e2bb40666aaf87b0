#!/usr/bin/env bash
# The arion command line, end to end: --mode validate on the examples and on
# broken files, exit codes, overrides, --help/--version (issue: Foundation).
set -u
A=${ARION_BIN:?}
S=${ARION_SRC:?}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
check() { # name, expected rc, command...; stdout+stderr in $t/out
	local name=$1 want=$2; shift 2
	"$@" >"$t/out" 2>&1
	local rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL $name: exit $rc, wanted $want"; sed 's/^/    /' "$t/out"; fails=$((fails+1))
	else
		echo "ok   $name"
	fi
}
has() { # name, pattern (fixed string) in $t/out
	if grep -qF -- "$2" "$t/out"; then echo "ok   $1"; else
		echo "FAIL $1: output lacks: $2"; sed 's/^/    /' "$t/out"; fails=$((fails+1)); fi
}

check "validate xds example" 0 "$A" --mode validate -c "$S/config/xds.yaml"
has "summary names node" "node: id=arion-1 cluster=edge"
has "summary names xDS target" "cluster xds_cluster [127.0.0.1:50051]"
has "summary ends OK" "configuration OK"
check "validate static example" 0 "$A" --mode validate -c "$S/config/static.yaml"
has "summary lists static listener" "http on 198.18.0.2:80"
has "summary lists static clusters" "web (STATIC, 2 endpoints)"
if grep -q "warning" "$t/out"; then echo "FAIL static example warns"; sed 's/^/    /' "$t/out"; fails=$((fails+1)); else echo "ok   static example: no warning"; fi
sed 's/route: { cluster: web_b }/route: { cluster: nope }/' "$S/config/static.yaml" > "$t/nope.yaml"
check "g5 a static route to an undefined cluster is still valid" 0 "$A" --mode validate -c "$t/nope.yaml"
has "g5 ... and the operator is warned, by name" "warning: static_resources: cluster 'nope' is named by a route but not defined"
l=$(grep -n "cluster: nope" "$t/nope.yaml" | head -1 | cut -d: -f1)
has "g5 ... at the route's line in the file (issue 15)" "nope.yaml:$l:"

# Start-up up to the data plane (its interface missing, so arion stops
# there): the only error is the data plane's, naming the interface. The
# HTTP module's first snapshot, taken before the worker count is known,
# logged "out of memory building the statistics table" at every start.
sed 's/iface=arn-dp0/iface=arn-cli-none0/' "$S/config/static.yaml" > "$t/noif.yaml"
check "a missing interface stops start-up" 3 "$A" -c "$t/noif.yaml"
has "... naming the interface" "interface 'arn-cli-none0' does not exist"
if grep "\]\[error\]" "$t/out" | grep -vq "\]\[net\]\|\]\[main\]"; then
	echo "FAIL start-up logs an error outside the data plane's"; sed 's/^/    /' "$t/out"; fails=$((fails+1))
else echo "ok   start-up: no error but the data plane's"; fi

check "x7 --service-node wins" 0 "$A" --mode validate -c "$S/config/xds.yaml" --service-node cli-node --service-cluster cli-cl
has "x7 summary shows override" "node: id=cli-node cluster=cli-cl"

sed 's/- envoy_grpc:/- google_grpc:/; s/^            cluster_name: xds_cluster$/            target_uri: "cp:1"\n            stat_prefix: x/' \
	"$S/config/xds.yaml" > "$t/google.yaml"
check "x8 google_grpc exits 1" 1 "$A" --mode validate -c "$t/google.yaml"
has "x8 names the field" "google.yaml:15:11: envoy_bootstrap.dynamic_resources.ads_config.grpc_services[0].google_grpc: google_grpc is refused"

echo_chain='filter_chains: [{ filters: [{ name: envoy.filters.network.echo, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.echo.v3.Echo } }] }]'
cat > "$t/dup.yaml" <<EOF
envoy_bootstrap:
  static_resources:
    listeners:
      - name: e
        address: { socket_address: { address: 0.0.0.0, port_value: 7 } }
        $echo_chain
      - name: e
        address: { socket_address: { address: 0.0.0.0, port_value: 8 } }
        $echo_chain
EOF
check "a listener name used twice exits 1" 1 "$A" --mode validate -c "$t/dup.yaml"
has "... naming the place" "dup.yaml:7:15: envoy_bootstrap.static_resources.listeners[1].name: Listener 'e' is defined twice (also listeners[0])"

cat > "$t/eds.yaml" <<EOF
envoy_bootstrap:
  static_resources:
    clusters:
      - name: api
        type: EDS
        eds_cluster_config:
          service_name: other
EOF
x12_line="eds.yaml:7:25: envoy_bootstrap.static_resources.clusters[0].eds_cluster_config.service_name: Cluster 'api': refused: the ClusterLoadAssignment's name must equal the cluster's name; remove service_name or make it the cluster's name (X12)"
check "x12 a static cluster breaking the contract exits 1" 1 "$A" --mode validate -c "$t/eds.yaml"
has "x12 ... naming the place and the cluster" "$x12_line"
n=$(grep -cF -- "$x12_line" "$t/out")
if [ "$n" = 1 ]; then echo "ok   x12 ... once"; else echo "FAIL x12 reported $n times"; fails=$((fails+1)); fi
check "x12 ... serve refuses it the same way, before starting anything" 1 timeout 20 "$A" -c "$t/eds.yaml"
has "x12 ... serve names it too" "$x12_line"

# issue 21: the data plane runs the HTTP RBAC and local_ratelimit filters,
# tcp_proxy and the network filters, so the application lets the store
# accept them
cat > "$t/hl4.yaml" <<EOF
envoy_bootstrap:
  static_resources:
    listeners:
      - name: h
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: h
                  route_config: { virtual_hosts: [{ name: a, domains: ["*"], routes: [{ match: { prefix: "/" }, direct_response: { status: 200 } }] }] }
                  http_filters:
                    - name: authz
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC
                        rules: { action: DENY, policies: { p: { permissions: [{ any: true }], principals: [{ any: true }] } } }
                    - name: limit
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
                        stat_prefix: l
                        token_bucket: { max_tokens: 1, fill_interval: 1s }
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
EOF
check "issue 21: HTTP rbac and local_ratelimit filters are accepted" 0 "$A" --mode validate -c "$t/hl4.yaml"
cat > "$t/tcp.yaml" <<EOF
envoy_bootstrap:
  static_resources:
    listeners:
      - name: t
        address: { socket_address: { address: 0.0.0.0, port_value: 5432 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.rbac
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
                  stat_prefix: db
                  rules: { action: ALLOW, policies: { p: { permissions: [{ any: true }], principals: [{ any: true }] } } }
              - name: envoy.filters.network.tcp_proxy
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy
                  stat_prefix: db
                  cluster: db
    clusters:
      - name: db
        type: STATIC
        load_assignment: { cluster_name: db, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 198.18.0.9, port_value: 5432 } } } }] }] }
EOF
check "issue 21: tcp_proxy and the network filters are accepted" 0 "$A" --mode validate -c "$t/tcp.yaml"

printf 'envoy_bootstrap:\n  node:\n    id: x\n   cluster: y\n' > "$t/bad.yaml"
check "yaml error exits 1" 1 "$A" --mode validate -c "$t/bad.yaml"
has "yaml error line and column" "bad.yaml:4:4: YAML error"

check "missing file exits 3" 3 "$A" --mode validate -c "$t/none.yaml"
has "missing file says so" "none.yaml: cannot open"
check "no -c exits 2" 2 "$A" --mode validate
check "bad mode exits 2" 2 "$A" --mode bogus -c "$S/config/xds.yaml"
check "bad log level exits 2" 2 "$A" --log-level loud -c "$S/config/xds.yaml"
check "unknown option exits 2" 2 "$A" --frobnicate -c "$S/config/xds.yaml"
check "--help exits 0" 0 "$A" --help
has "--help lists --mode" "--mode serve|validate"
check "--version exits 0" 0 "$A" --version
has "--version prints version" "arion "

# issue 22: Envoy's drain options
check "--drain-time-s and --drain-strategy are accepted" 0 "$A" --mode validate -c "$S/config/static.yaml" --drain-time-s 30 --drain-strategy immediate
check "--drain-strategy gradual is accepted" 0 "$A" --mode validate -c "$S/config/static.yaml" --drain-strategy gradual
check "--drain-time-s not a number exits 2" 2 "$A" --mode validate -c "$S/config/static.yaml" --drain-time-s 1x
has "... saying what it expects" "--drain-time-s 1x: expected whole seconds from 0 to 86400"
check "--drain-time-s negative exits 2" 2 "$A" --mode validate -c "$S/config/static.yaml" --drain-time-s -5
check "--drain-strategy other exits 2" 2 "$A" --mode validate -c "$S/config/static.yaml" --drain-strategy slow
has "... naming the choices" "--drain-strategy slow: expected gradual or immediate"
check "--help lists --drain-time-s" 0 "$A" --help
has "... and --drain-strategy" "--drain-strategy"

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
