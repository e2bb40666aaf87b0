#!/usr/bin/env bash
# The per-worker HTTP sizes (dataplane.http) end to end: with
# max_requests_in_flight: 4, forty concurrent slow requests all succeed.
# Those beyond the fourth wait, their heads held in the connection's input,
# until a request buffer is free (the connections are never reset), and
# they are served in turns of at most four, oldest first: the whole takes
# at least ten turns, and every one counts in downstream_rq_buffer_wait.
# Issue 21 item 4, Envoy's downstream connection limits at accept: on :81
# ("capped", runtime key envoy.resource_limits.listener.capped.connection_limit
# 2) and :82 (the overload manager's global_downstream_max_connections 3,
# which :80 and :81 ignore with ignore_global_conn_limit), five clients
# each: those over the limit are reset, the others served, and
# downstream_cx_overflow / downstream_global_cx_overflow count them.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hm
http_e2e_topo || exit 1
topo_bg py ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
cat >"$TOPO_DIR/body.yaml" <<YAML
  static_resources:
    listeners:
      - name: http
        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }
        ignore_global_conn_limit: true
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: lim
                  route_config:
                    virtual_hosts:
                      - { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, route: { cluster: py } } ] }
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router }
      - name: capped
        address: { socket_address: { address: 0.0.0.0, port_value: 81 } }
        ignore_global_conn_limit: true
        filter_chains: [ { filters: [ { name: hcm, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: capped, route_config: { virtual_hosts: [ { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, direct_response: { status: 200 } } ] } ] }, http_filters: [ { name: envoy.filters.http.router, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router } } ] } } ] } ]
      - name: glob
        address: { socket_address: { address: 0.0.0.0, port_value: 82 } }
        filter_chains: [ { filters: [ { name: hcm, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: glob, route_config: { virtual_hosts: [ { name: all, domains: ["*"], routes: [ { match: { prefix: "/" }, direct_response: { status: 200 } } ] } ] }, http_filters: [ { name: envoy.filters.http.router, typed_config: { "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router } } ] } } ] } ]
    clusters:
      - name: py
        type: STATIC
        connect_timeout: 2s
        load_assignment:
          cluster_name: py
          endpoints: [ { lb_endpoints: [ { endpoint: { address: { socket_address: { address: $ua, port_value: 8081 } } } } ] } ]
  layered_runtime:
    layers:
      - name: static
        static_layer:
          envoy.resource_limits.listener.capped.connection_limit: 2
  overload_manager:
    resource_monitors:
      - name: envoy.resource_monitors.global_downstream_max_connections
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig
          max_active_downstream_connections: 3
YAML
HTTP_E2E_DATAPLANE_EXTRA="  http: { max_requests_in_flight: 4, kept_body_mbufs: 64 }" http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
grep -q "4 requests in flight, 64 mbufs of kept request bodies per worker" "$TOPO_ARION_LOG" &&
	ok "dataplane.http.max_requests_in_flight: 4 and kept_body_mbufs: 64 applied" ||
	bad "the startup summary does not show 4 requests in flight and 64 kept-body mbufs"

out=$(ip netns exec "$cns" /usr/bin/python3 - "$us" <<'PY'
import sys, threading, time, rawhttp
us = sys.argv[1]
res = []
lock = threading.Lock()
def one(i):
    try:
        d, closed = rawhttp.exchange(us, b"GET /slow?ms=250&i=%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i,
                                    timeout=30)
        with lock:
            res.append(closed and d.startswith(b"HTTP/1.1 200") and b"slow" in d)
    except Exception as e:
        with lock:
            res.append(False)
t0 = time.time()
ts = [threading.Thread(target=one, args=(i,)) for i in range(40)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(sum(res), "%.1f" % (time.time() - t0))
PY
)
set -- $out
[ "${1:-0}" = 40 ] && ok "40 concurrent requests with 4 request buffers: all answered 200" ||
	bad "answered: ${1:-0} of 40"
# ten turns of 250 ms; anything below means more than four ran at once
awk -v t="${2:-0}" 'BEGIN { exit !(t >= 2.4) }' && ok "served four at a time (${2:-?} s for ten turns of 0.25 s)" ||
	bad "took ${2:-?} s: more than four requests in flight at once"
v=$(stat http.lim.downstream_rq_buffer_wait)
[ "$v" -ge 36 ] && ok "http.lim.downstream_rq_buffer_wait = $v" || bad "http.lim.downstream_rq_buffer_wait = $v"
v=$(stat http.lim.downstream_rq_2xx)
[ "$v" -ge 40 ] && ok "http.lim.downstream_rq_2xx = $v" || bad "http.lim.downstream_rq_2xx = $v"
v=$(curl -s "http://127.0.0.1:$admin_port/stats" | grep -E '^http\.lim\.downstream_rq_tx_reset: ')
[ "$v" = "http.lim.downstream_rq_tx_reset: 0" ] && ok "no request reset by Arion" || bad "got '$v'"

# five clients held open on a limited listener: how many are served
capped() {
	ip netns exec "$cns" /usr/bin/python3 - "$us" "$1" <<'PY'
import socket, sys, time
us, port = sys.argv[1], int(sys.argv[2])
socks = []
for i in range(5):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((us, port))
    except OSError:
        pass
    socks.append(s)
    time.sleep(0.1)
served = 0
for s in socks:
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        served += s.recv(100).startswith(b"HTTP/1.1 200")
    except OSError:
        pass
print(served)
PY
}
v=$(capped 81)
[ "$v" = 2 ] && ok "listener connection_limit 2: 2 of 5 clients served" || bad "served $v of 5 on :81"
v=$(stat listener.0.0.0.0_81.downstream_cx_overflow)
[ "$v" = 3 ] && ok "listener.0.0.0.0_81.downstream_cx_overflow = 3" || bad "downstream_cx_overflow = $v"
v=$(capped 82)
[ "$v" = 3 ] && ok "global_downstream_max_connections 3: 3 of 5 clients served" || bad "served $v of 5 on :82"
v=$(stat listener.0.0.0.0_82.downstream_global_cx_overflow)
[ "$v" = 2 ] && ok "listener.0.0.0.0_82.downstream_global_cx_overflow = 2" || bad "downstream_global_cx_overflow = $v"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
