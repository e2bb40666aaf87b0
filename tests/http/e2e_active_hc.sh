#!/usr/bin/env bash
# Active health checks end to end (Envoy's HealthCheck: lib/http/http_hc.c):
# the real binary with two workers (worker 0 runs the checks, both balance
# on their verdicts) in front of two hc_upstream.py servers whose health the
# test flips. Host A's /healthz turns 503: it leaves the rotation after one
# check (a wrong status ignores unhealthy_threshold) while clients see no
# error; it comes back after healthy_threshold passes; A stops listening:
# it leaves after unhealthy_threshold network failures. With A answering
# keep-alive, its checks share one connection (reuse_connection, the
# default), a chunked body included; a close between checks, a body over
# the bound and reuse_connection false (cluster hcn) each open new ones;
# over TLS too. The stats and the
# /clusters health_flags follow. Config: e2e_active_hc.yaml, plus two
# clusters with an UpstreamTlsContext added here (certificates made as
# e2e_tls_upstream.sh makes them), checked over TLS: tlsc (hc_upstream.py
# over TLS on A and B, certificate for up.test from the test's CA: A's 503
# takes it out of the rotation) and tlsbad (A's certificate under another
# CA: the handshake fails, A never passes); and tlsm, whose
# transport_socket_matches check A's TLS port over TLS (its endpoint's
# metadata names the match) and B's plain port in plain text.
# Argument: the number of workers (default 2).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl openssl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-ahc
http_e2e_topo || exit 1
for n in a b; do
	[ $n = a ] && addr=$ua || addr=$ub
	topo_bg "hc-$n" ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/hc_upstream.py" "$addr" 8090
	topo_wait_log "$TOPO_DIR/hc-$n.log" ready 10 || { echo "hc_upstream.py $n did not start"; exit 1; }
done
d="$TOPO_DIR/pki"
mkdir -p "$d"
PKI=$d
pki_ca ca "arion upstream CA" && pki_ca other "another CA" &&
	pki_leaf up ca up.test "subjectAltName=DNS:up.test" || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$d"
chmod 755 "$TOPO_DIR"
for n in a b; do
	[ $n = a ] && addr=$ua || addr=$ub
	topo_bg "hcs-$n" ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/hc_upstream.py" \
		"$addr" 8443 "$d/up.pem" "$d/up.key"
	topo_wait_log "$TOPO_DIR/hcs-$n.log" ready 10 || { echo "hc_upstream.py TLS $n did not start"; exit 1; }
done
tls_cluster() { # tls_cluster NAME CA ADDR...
	local n=$1 ca=$2 a
	shift 2
	cat <<YAML
      - name: $n
        type: STATIC
        connect_timeout: 1s
        health_checks:
          - timeout: 0.5s
            interval: 0.2s
            no_traffic_interval: 0.2s
            unhealthy_threshold: 2
            healthy_threshold: 1
            http_health_check: { path: /healthz }
        load_assignment:
          cluster_name: $n
          endpoints:
            - lb_endpoints:
YAML
	for a in "$@"; do
		echo "                - endpoint: { address: { socket_address: { address: $a, port_value: 8443 } } }"
	done
	cat <<YAML
        transport_socket:
          name: envoy.transport_sockets.tls
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
            sni: up.test
            common_tls_context:
              combined_validation_context:
                default_validation_context:
                  match_typed_subject_alt_names: [ { san_type: DNS, matcher: { exact: up.test } } ]
                validation_context_sds_secret_config: { name: $ca }
YAML
}
{
	grep -v '^#' "$ARION_SRC/tests/http/e2e_active_hc.yaml" |
		sed -e 's|^  static_resources:$|&\n    secrets:\n      - name: up-ca\n        validation_context: { trusted_ca: { filename: '"$d"'/ca.pem } }\n      - name: other-ca\n        validation_context: { trusted_ca: { filename: '"$d"'/other.pem } }|' \
			-e 's|^\( *\)- match: { prefix: "/tcp/" }$|\1- match: { prefix: "/tls/" }\n\1  route: { cluster: tlsc }\n&|'
	tls_cluster tlsc up-ca "$ua" "$ub"
	tls_cluster tlsbad other-ca "$ua"
	# transport_socket_matches: A's TLS port named by its metadata (checked
	# over TLS with the match's context), B's plain port (no metadata, no
	# cluster transport_socket: checked in plain text)
	cat <<YAML
      - name: tlsm
        type: STATIC
        connect_timeout: 1s
        health_checks:
          - timeout: 0.5s
            interval: 0.2s
            no_traffic_interval: 0.2s
            unhealthy_threshold: 2
            healthy_threshold: 1
            http_health_check: { path: /healthz }
        load_assignment:
          cluster_name: tlsm
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $ua, port_value: 8443 } } }
                  metadata: { filter_metadata: { envoy.transport_socket_match: { name: tlsm/tls/0 } } }
                - endpoint: { address: { socket_address: { address: $ub, port_value: 8090 } } }
        transport_socket_matches:
          - name: tlsm/tls/0
            match: { name: tlsm/tls/0 }
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext
                sni: up.test
                common_tls_context:
                  validation_context_sds_secret_config: { name: up-ca }
YAML
} >"$TOPO_DIR/body.yaml"
if [ "${1:-2}" = 2 ]; then
	# two workers on two lcores that share the machine's second core, as
	# e2e_xds_load.sh runs them
	export HTTP_E2E_WORKERS="1, 2" ARION_EXTRA="-- --lcores 0@0,1@1,2@1"
fi
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}
ctl() { # ctl ADDR COMMAND [PORT]: hc_upstream.py's control port (PORT + 1000)
	ip netns exec "$uns" bash -c 'exec 3<>"/dev/tcp/$1/$3" && echo "$2" >&3 && head -1 <&3' \
		ctl "$1" "$2" "$((${3:-8090} + 1000))"
}
flags() { # flags CLUSTER ADDR:PORT: its health_flags in /clusters
	curl -s "http://127.0.0.1:$admin_port/clusters" | grep -F "$1::$2::health_flags::" |
		head -1 | sed 's/.*::health_flags:://'
}
# until SECONDS CMD...: retry CMD every 0.1 s until it succeeds
until_ok() {
	local n=$(($1 * 10)) i
	shift
	for i in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}
flag_is() { [ "$(flags "$1" "$2")" = "$3" ]; }
stat_is() { [ "$(stat "$1")" = "$2" ]; }
# who N [PATH]: which hosts answered N requests, as "A B errors" counts.
# One curl for all of them (a process each costs more than the requests),
# a connection each (connection: close), so that both workers balance.
who() {
	local i urls=()
	for i in $(seq "$1"); do urls+=("http://$us${2:-/x}"); done
	cc -s -H 'connection: close' -w ' %{http_code}\n' "${urls[@]}" 2>/dev/null |
		awk -v a="hc_upstream $ua 200" -v b="hc_upstream $ub 200" -v n="$1" '
			$0 == a { na++ } $0 == b { nb++ }
			END { printf "%d %d %d\n", na, nb, n - na - nb }'
}

# ---- start: every host starts failed, the first passing check admits it
until_ok 5 stat_is cluster.hcc.health_check.healthy 2 || bad "hcc: 2 healthy hosts"
expect "hcc A healthy" "$(flags hcc $ua:8090)" "^healthy$"
expect "hcc B healthy" "$(flags hcc $ub:8090)" "^healthy$"
until_ok 5 flag_is tcpc $ua:8099 /failed_active_hc || bad "tcpc: the dead port is failed"
expect "tcpc: the live port passes a connect-only check" "$(flags tcpc $ua:8090)" "^healthy$"
expect "tcpc: health_check.healthy" "$(stat cluster.tcpc.health_check.healthy)" "^1$"
until_ok 3 stat_is cluster.tcpr.health_check.healthy 2 || bad "tcpr: send/receive checks pass on both"
expect "traffic to both hosts" "$(who 8)" "^([1-9]) ([1-9]) 0$"
expect "tcpc: traffic only to the live port" "$(who 6 /tcp/x)" "^6 0 0$"

# ---- A's /healthz answers 503: out at its next check, no client error
f0=$(stat cluster.hcc.health_check.failure)
# requests in batches over about 1.5 s, while A leaves
for i in $(seq 6); do who 3; sleep 0.1; done >"$TOPO_DIR/during.txt" &
bg=$!
ctl "$ua" "health 503" >/dev/null
until_ok 3 flag_is hcc $ua:8090 /failed_active_hc || bad "A failed_active_hc after a 503"
wait $bg
expect "no client error while A was leaving" "$(awk '{e += $3} END {print NR, e}' "$TOPO_DIR/during.txt")" "^6 0$"
expect "A failed: all traffic to B" "$(who 8)" "^0 8 0$"
expect "health_check.healthy 1" "$(stat cluster.hcc.health_check.healthy)" "^1$"
until_ok 3 flag_is tcpr $ua:8090 /failed_active_hc || bad "tcpr: A's answer lacks the receive bytes"
expect "tcpr: B still passes" "$(flags tcpr $ub:8090)" "^healthy$"
expect "health_check.failure counted" "$(($(stat cluster.hcc.health_check.failure) - f0))" "^[1-9]"

# ---- A recovers after healthy_threshold (2) passing checks
s0=$(stat cluster.hcc.health_check.success)
ctl "$ua" "health 200" >/dev/null
until_ok 3 flag_is hcc $ua:8090 healthy || bad "A healthy again"
expect "A back after at least 2 passes" "$(($(stat cluster.hcc.health_check.success) - s0))" "^([2-9]|[1-9][0-9]+)$"
expect "traffic to both again" "$(who 8)" "^([1-9]) ([1-9]) 0$"

# ---- A stops listening: out after unhealthy_threshold (2) network failures
n0=$(stat cluster.hcc.health_check.network_failure)
ctl "$ua" "listen 0" >/dev/null
until_ok 3 flag_is hcc $ua:8090 /failed_active_hc || bad "A failed_active_hc when refused"
expect "network_failure counted (threshold 2)" "$(($(stat cluster.hcc.health_check.network_failure) - n0))" "^([2-9]|[1-9][0-9]+)$"
expect "A refused: all traffic to B" "$(who 8)" "^0 8 0$"
ctl "$ua" "listen 1" >/dev/null
until_ok 3 flag_is hcc $ua:8090 healthy || bad "A healthy once it listens again"
expect "attempt counts every check" "$(stat cluster.hcc.health_check.attempt)" "^([2-9][0-9]|[1-9][0-9][0-9]+)$"

# ---- over TLS (the cluster's UpstreamTlsContext): both pass, A's 503 takes
# it out, a certificate that does not validate never passes
until_ok 5 stat_is cluster.tlsc.health_check.healthy 2 || bad "tlsc: 2 healthy hosts over TLS"
expect "tlsc: traffic to both" "$(who 8 /tls/x)" "^([1-9]) ([1-9]) 0$"
expect "tlsc: checks made TLS handshakes" "$(stat cluster.tlsc.ssl.handshake)" "^[1-9]"
expect "tlsc: the checks reached A over TLS" "$(ctl "$ua" checks 8443)" "^[1-9]"
expect "tlsbad: A failed (certificate from another CA)" "$(flags tlsbad $ua:8443)" "/failed_active_hc"
expect "tlsbad: network failures counted" "$(stat cluster.tlsbad.health_check.network_failure)" "^[1-9]"
expect "tlsbad: no success" "$(stat cluster.tlsbad.health_check.success)" "^0$"
expect "tlsbad: the handshake refused the certificate" "$(stat cluster.tlsbad.ssl.fail_verify_error)" "^[1-9]"
ctl "$ua" "health 503" 8443 >/dev/null
until_ok 3 flag_is tlsc $ua:8443 /failed_active_hc || bad "tlsc: A failed_active_hc after a 503 over TLS"
expect "tlsc: A failed: all traffic to B" "$(who 8 /tls/x)" "^0 8 0$"
ctl "$ua" "health 200" 8443 >/dev/null
until_ok 3 flag_is tlsc $ua:8443 healthy || bad "tlsc: A healthy again over TLS"

# ---- transport_socket_matches: each host checked with its own socket (A's
# match: TLS; B: plain text); a wrong one would fail the check
until_ok 5 stat_is cluster.tlsm.health_check.healthy 2 || bad "tlsm: 2 healthy hosts, A over TLS, B plain"
expect "tlsm: A's checks made TLS handshakes" "$(stat cluster.tlsm.ssl.handshake)" "^[1-9]"
expect "tlsm: no network failure" "$(stat cluster.tlsm.health_check.network_failure)" "^0$"

# ---- reuse_connection (Envoy's default): A answers keep-alive from now on
# (hc_upstream.py counts the connections each check path arrived on)
keep_window() { # keep_window PATH [PORT]: "checks connections" over 2 s
	local c0 r0 c1 r1
	c0=$(ctl "$ua" "conns $1" "${2:-8090}") r0=$(ctl "$ua" "reqs $1" "${2:-8090}")
	sleep 2
	c1=$(ctl "$ua" "conns $1" "${2:-8090}") r1=$(ctl "$ua" "reqs $1" "${2:-8090}")
	echo "$((r1 - r0)) $((c1 - c0))"
}
ctl "$ua" "keepalive 1" >/dev/null
sleep 0.5
f0=$(stat cluster.hcc.health_check.failure)
w=$(keep_window /healthz)
expect "reuse: A's checks on one connection" "$w" "^([5-9]|[1-9][0-9]) [01]$"
w=$(keep_window /healthz/n)
expect "reuse_connection false: a connection per check" "$w" "^([5-9]|[1-9][0-9]) ([5-9]|[1-9][0-9])$"
# (the window's ends read the two counts one after the other: a check that
# connects between the reads counts on one side only, so one apart is the
# same; reuse gives at most one connection in all, above)
d=$((${w% *} - ${w#* }))
[ "$d" -ge -1 ] && [ "$d" -le 1 ] || bad "reuse_connection false: $w: not one connection per check"
ctl "$ua" "body chunked" >/dev/null
sleep 0.3
w=$(keep_window /healthz)
expect "reuse: a chunked body consumed, the connection kept" "$w" "^([5-9]|[1-9][0-9]) [01]$"
ctl "$ua" "maxreq 2" >/dev/null
ctl "$ua" "body cl" >/dev/null
sleep 0.3
w=$(keep_window /healthz)
expect "reuse: the upstream closes after 2 checks, the next opens a new one" "$w" \
	"^([5-9]|[1-9][0-9]) ([2-9]|[1-9][0-9])$"
ctl "$ua" "maxreq 0" >/dev/null
ctl "$ua" "body big" >/dev/null
sleep 0.3
w=$(keep_window /healthz)
expect "reuse: a body over the bound closes, a connection per check" "$w" "^([5-9]|[1-9][0-9]) ([4-9]|[1-9][0-9])$"
expect "reuse: body_over_limit counted" "$(stat cluster.hcc.health_check.body_over_limit)" "^[1-9]"
ctl "$ua" "body cl" >/dev/null
expect "reuse: no check failed on the way" "$(($(stat cluster.hcc.health_check.failure) - f0))" "^0$"
expect "reuse: A healthy throughout" "$(flags hcc $ua:8090)" "^healthy$"
expect "reuse: traffic to both" "$(who 8)" "^([1-9]) ([1-9]) 0$"
# over TLS: the session stays with the connection
ctl "$ua" "keepalive 1" 8443 >/dev/null
sleep 0.5
w=$(keep_window /healthz 8443)
expect "reuse over TLS: A's checks on one connection" "$w" "^([5-9]|[1-9][0-9]) [01]$"
expect "reuse over TLS: A healthy" "$(flags tlsc $ua:8443)" "^healthy$"
ctl "$ua" "keepalive 0" 8443 >/dev/null
ctl "$ua" "keepalive 0" >/dev/null

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
