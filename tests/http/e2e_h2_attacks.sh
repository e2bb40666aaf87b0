#!/usr/bin/env bash
# HTTP/2 attacks through the real binary (issue 19, security): a raw-frame
# client (h2_attack.py) sends each attack that hit Envoy and others on its
# own h2c connection, while h2load keeps a legitimate load on two other
# connections. Each attack must be bounded (the connection or the stream
# is ended) and counted with Envoy's http2.* names, and the load must see
# no failed stream:
#   rapid reset (CVE-2023-44487)      downstream_rq_too_many_premature_resets
#   CONTINUATION flood (CVE-2024-27316), small frames and one endless
#     field, bounded by max_request_headers_kb   http2.header_overflow
#   SETTINGS / PING floods from a client that does not read
#                                      http2.outbound_control_flood
#   empty DATA, PRIORITY, WINDOW_UPDATE floods
#                                      http2.inbound_*_flood
#   HPACK bomb                         http2.header_overflow (stream reset)
#   a zero window held                 stream_idle_timeout ends the stream
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl nginx h2load /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-h2a
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
PY=/usr/bin/python3
ATTACK="$ARION_SRC/tests/http/h2_attack.py"

cat >"$TOPO_DIR/body.yaml" <<YAML
  static_resources:
    listeners:
      - name: plain
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: h2
                  stream_idle_timeout: 2s
                  max_request_headers_kb: 8
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes: [ { match: { prefix: "/" }, route: { cluster: a } } ]
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
      - name: a
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: a
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8080 } } } } ] } ]
YAML
http_e2e_arion "$TOPO_DIR/body.yaml" || { echo "arion did not start"; exit 1; }
head -c $((4 * 1024 * 1024)) /dev/zero >"$TOPO_DIR/www/big.bin"
chmod 644 "$TOPO_DIR/www/big.bin"

expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
attack() { ip netns exec "$cns" timeout 40 $PY "$ATTACK" "$us" 80 "$@" 2>&1 | tail -1; }
ge() { # ge STAT MIN
	local v
	v=$(stat "$1")
	[ "$v" -ge "$2" ] && ok "$1 = $v" || bad "$1 = $v (wanted >= $2)"
}

o=$(cc --http2-prior-knowledge -w ' %{http_version}' "http://$us/" | tr -d '\n')
expect "a legitimate h2c request before the attacks" "$o" "^upstream-a 2$"

# the legitimate load, on its own connections, all along: h2load runs of
# 3 s one after another until the attacks are over (one run of a fixed
# length would have to outlast them on the slowest machine, and then
# be waited out)
(while [ ! -e "$TOPO_DIR/load.stop" ]; do
	ip netns exec "$cns" h2load -D 3 -c 2 -m 4 "http://$us/"
done) >"$TOPO_DIR/h2load.out" 2>&1 &
load=$!
sleep 1

# GOAWAY ENHANCE_YOUR_CALM is 11, PROTOCOL_ERROR 1
o=$(attack rapid_reset)
expect "rapid reset: GOAWAY ENHANCE_YOUR_CALM, closed" "$o" "goaway=11 .*closed=1"
o=$(attack continuation_small)
expect "CONTINUATION flood (empty frames): GOAWAY ENHANCE_YOUR_CALM, closed" "$o" \
	"goaway=11 .*closed=1"
o=$(attack continuation_big)
expect "CONTINUATION flood (one endless field): GOAWAY ENHANCE_YOUR_CALM, closed" "$o" \
	"goaway=11 .*closed=1"
o=$(attack settings_flood)
expect "SETTINGS flood, not reading: closed" "$o" "closed=1"
o=$(attack ping_flood)
expect "PING flood, not reading: closed" "$o" "closed=1"
o=$(attack empty_data)
expect "empty DATA flood: GOAWAY ENHANCE_YOUR_CALM, closed" "$o" "goaway=11 .*closed=1"
o=$(attack priority_flood)
expect "PRIORITY flood: GOAWAY ENHANCE_YOUR_CALM, closed" "$o" "goaway=11 .*closed=1"
o=$(attack window_update_flood)
expect "WINDOW_UPDATE flood: GOAWAY ENHANCE_YOUR_CALM, closed" "$o" "goaway=11 .*closed=1"
o=$(attack hpack_bomb)
expect "HPACK bomb: that stream reset, the next one served on the same connection" "$o" \
	"rst=1 closed=0 .*status=200"
o=$(attack zero_window /www/big.bin 5)
expect "zero window held: the head came, no DATA, the stream reset by stream_idle_timeout" "$o" \
	"rst=1 .*status=200 data=0$"

ge http.h2.downstream_rq_too_many_premature_resets 1
ge http2.header_overflow 3
ge http2.outbound_control_flood 2
ge http2.inbound_empty_frames_flood 1
ge http2.inbound_priority_frames_flood 1
ge http2.inbound_window_update_frames_flood 1

touch "$TOPO_DIR/load.stop"
wait $load
runs=$(grep -c '^requests:' "$TOPO_DIR/h2load.out")
clean=$(grep -cE '^requests:.* [1-9][0-9]* succeeded, 0 failed, 0 errored' "$TOPO_DIR/h2load.out")
expect "h2load meanwhile: no stream failed or errored ($clean of $runs runs clean)" \
	"$runs:$clean" "^([1-9][0-9]*):\1$"
sleep 0.5
v=$(stat http2.streams_active)
[ "$v" = 0 ] && ok "http2.streams_active = 0 once the clients left" || bad "http2.streams_active = $v"
o=$(cc --http2-prior-knowledge -w ' %{http_version}' "http://$us/" | tr -d '\n')
expect "a legitimate h2c request after the attacks" "$o" "^upstream-a 2$"
http_e2e_finish
