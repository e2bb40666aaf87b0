#!/usr/bin/env bash
# Issue 12 (slow-request exhaustion) end to end, on one worker with its
# 1,024 request buffers: 2,000 connections trickle their request heads a
# byte a second (slowloris) while ordinary requests come one after another.
# The slow ones hold no request buffer, so every ordinary request is
# answered, each within 2 s (usually milliseconds); they never wait for a
# buffer. The default head deadline (10 s: request_headers_timeout is left
# unset) then answers each slow one 408 and closes it.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hs
http_e2e_topo || exit 1
topo_bg py ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
cat >"$TOPO_DIR/body.yaml" <<YAML
  static_resources:
    listeners:
      - name: http
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: slow
                  route_config:
                    virtual_hosts:
                      - { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, route: { cluster: py } } ] }
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
    clusters:
      - name: py
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: py
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8081 } } } } ] } ]
YAML
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

out=$(ip netns exec "$cns" /usr/bin/python3 "$ARION_SRC/tests/http/slowloris.py" "$us" 80 2000 20 15)
echo "slowloris.py: $out"
val() { echo "$out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
[ "$(val started)" = 2000 ] && ok "2000 slow connections sent their first bytes" ||
	bad "only $(val started) slow connections started"
[ "$(val normal)" = 20 ] && ok "20 of 20 ordinary requests answered 200 within 2 s (slowest $(val worst) s)" ||
	bad "ordinary requests answered within 2 s: $(val normal) of 20 (slowest $(val worst) s)"
[ "$(val slow_408)" = 2000 ] && ok "every slow connection answered 408 and closed" ||
	bad "slow connections answered 408: $(val slow_408), otherwise: $(val slow_other)"
awk -v t="$(val first_408)" 'BEGIN { exit !(t + 0 >= 9) }' &&
	ok "the first 408 came with the 10 s head deadline ($(val first_408) s)" ||
	bad "the first 408 came after $(val first_408) s, not at the head deadline"
v=$(stat http.slow.downstream_rq_header_timeout)
[ "$v" = 2000 ] && ok "http.slow.downstream_rq_header_timeout = 2000" ||
	bad "http.slow.downstream_rq_header_timeout = $v"
v=$(stat http.slow.downstream_rq_buffer_wait)
[ "$v" = 0 ] && ok "no request waited for a request buffer" ||
	bad "http.slow.downstream_rq_buffer_wait = $v"
v=$(stat http.slow.downstream_rq_2xx)
[ "$v" -ge 20 ] && ok "http.slow.downstream_rq_2xx = $v" || bad "http.slow.downstream_rq_2xx = $v"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
