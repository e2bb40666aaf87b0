#!/usr/bin/env bash
# Configuration churn (issue 22), against the control plane of
# e2e_churn.js:
#
#  1. a change to one filter chain of a listener (Envoy's in-place filter
#     chain update) drains that chain's connections only: with
#     --drain-strategy immediate a keep-alive connection on the changed
#     (default) chain gets "connection: close" on its next response, one on
#     the unchanged chain "a" (source port 40001) does not and stays open;
#  2. under wrk -c50, the cluster switches to two endpoints on Arion's link
#     that it never contacted (every first SYN waits for ARP), with
#     connect_timeout 1s: not one request fails.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl wrk node python3 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-ch
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }

# the endpoints Arion has never contacted: on its own link, in the client
# namespace (Arion resolves them with ARP, not through its gateway)
c_if=$(ip -n "$cns" -o link show | awk -F': ' '$2 ~ /^arn/ {sub(/@.*/, "", $2); print $2; exit}')
ip -n "$cns" addr add 198.18.2.50/24 dev "$c_if"
ip -n "$cns" addr add 198.18.2.51/24 dev "$c_if"
d="$TOPO_DIR/nginx-new"
mkdir -p "$d" && chmod 777 "$d"
cat >"$d/nginx.conf" <<NGINX
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 1024; }
http {
  access_log $d/access.log;
  client_body_temp_path $d/body;
  proxy_temp_path $d/proxy;
  fastcgi_temp_path $d/fcgi;
  uwsgi_temp_path $d/uwsgi;
  scgi_temp_path $d/scgi;
  keepalive_requests 10000;
  server {
    listen 198.18.2.50:8080;
    listen 198.18.2.51:8080;
    location / { return 200 "upstream-new\n"; }
  }
}
NGINX
topo_bg nginx-new ip netns exec "$cns" nginx -c "$d/nginx.conf" -g 'daemon off;'

cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
# the control plane by name, as most bootstraps write it: a STRICT_DNS xDS
# cluster naming "localhost" (X7; gRPC resolves it for each attempt)
export HTTP_E2E_XDS_BY_NAME=1
http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_churn.js" "$cp_dir" || exit 1
export ARION_EXTRA="--drain-strategy immediate --drain-time-s 30"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 200); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "first configuration not ACKed"; http_e2e_finish; }
for i in $(seq 50); do
	[ "$(cc -s http://$us/ 2>/dev/null)" = upstream-a ] && break
	sleep 0.1
done
expect "first generation: route -> web = [A]" "$(cc -s http://$us/)" "^upstream-a$"

# 1. one keep-alive connection per chain, a request each before and after
# the change of the default chain
out=$(ip netns exec "$cns" python3 - "$us" "$cp_dir" <<'PY'
import os, socket, sys, time
us, cp = sys.argv[1], sys.argv[2]
def conn(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.2.1", port))
    s.settimeout(5)
    s.connect((us, 80))
    return s
def get(s):
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    d = b""
    while b"upstream-" not in d or not d.endswith(b"\n"):
        r = s.recv(4096)
        if not r:
            break
        d += r
    return d.decode(errors="replace").lower()
a, dflt = conn(40001), conn(40002)
r = [get(a), get(dflt)]
open(os.path.join(cp, "go1"), "w").close()
for _ in range(200):
    if os.path.exists(os.path.join(cp, "step1")):
        break
    time.sleep(0.05)
time.sleep(0.3)  # the worker takes the generation in
r += [get(a), get(dflt)]
# chain a's connection is still usable after the change
r.append(get(a))
print("before a:%s d:%s" % ("close" in r[0], "close" in r[1]))
print("after a:%s d:%s" % ("connection: close" in r[2], "connection: close" in r[3]))
print("a again:%s" % ("200 ok" in r[4]))
PY
)
echo "$out" | sed 's/^/    /'
expect "chain change: the unchanged chain's connection is not drained" "$out" "after a:False"
expect "... the changed (default) chain's connection is" "$out" "after a:False d:True"
expect "... and the unchanged chain's connection goes on serving" "$out" "a again:True"
expect "listener_manager.listener_in_place_updated" "$(stat listener_manager.listener_in_place_updated)" "^1$"
expect "listener_manager.total_filter_chains_draining: the one chain" "$(stat listener_manager.total_filter_chains_draining)" "^1$"
expect "listener.<address>.downstream_cx_drained" "$(stat listener.198.18.2.2_80.downstream_cx_drained)" "^1$"

# 2. switch to never-contacted endpoints under load
(sleep 2; touch "$cp_dir/go2") &
ip netns exec "$cns" wrk -t1 -c50 -d6s --timeout 5s http://$us/ >"$TOPO_DIR/wrk.txt" 2>&1
cat "$TOPO_DIR/wrk.txt"
[ -e "$cp_dir/step2" ] && ok "EDS switched to 198.18.2.50-51 during the run" || bad "EDS switch: $(cat "$cp_dir/failed" "$TOPO_DIR/cp.log" 2>/dev/null)"
total=$(awk '/requests in/ {print $1}' "$TOPO_DIR/wrk.txt")
[ "${total:-0}" -gt 500 ] && ok "wrk: $total requests" || bad "wrk: only ${total:-0} requests"
grep -q "Socket errors" "$TOPO_DIR/wrk.txt" && bad "wrk: socket errors" || ok "wrk: no socket errors"
grep -q "Non-2xx" "$TOPO_DIR/wrk.txt" && bad "wrk: non-2xx responses" || ok "wrk: every response 2xx (connect_timeout 1s, first SYNs waiting on ARP)"
expect "cluster web: no connect timeout" "$(stat cluster.web.upstream_cx_connect_timeout)" "^0$"
expect "cluster web: no 5xx" "$(stat cluster.web.upstream_rq_5xx)" "^0$"
n=$(wc -l <"$d/access.log" 2>/dev/null || echo 0)
[ "$n" -gt 100 ] && ok "the new endpoints served $n requests" || bad "the new endpoints served $n requests"
expect "the last generation routes to them" "$(cc -s http://$us/)" "^upstream-new$"
# A's upstream connections, idle or finishing an exchange when A left,
# ended with a RST (timestamps negotiated, nothing in flight), not in
# TIME_WAIT (docs/tcp.md)
q=$(stat tcp.0.resets_sent_quiet_close) tw=$(stat tcp.0.connections_time_wait)
[ "$q" -gt 0 ] && [ "$tw" -lt 10 ] && ok "upstream connections of the removed endpoint reset: $q, in TIME_WAIT: $tw" ||
	bad "removed endpoint's connections: $q reset, $tw in TIME_WAIT (wanted > 0, < 10)"
echo "    ARP: $(curl -s "http://127.0.0.1:$admin_port/stats" | grep -E 'arp_(drop|resolve_ahead|resolved)|dpdk\.arp\.' | tr '\n' ' ')"
# the xDS cluster is a DNS cluster (its own resolution counted per cluster)
v=$(stat cluster.xds_cluster.update_success)
[ "${v:-0}" -ge 1 ] && ok "xDS cluster by name: cluster.xds_cluster.update_success = $v" ||
	bad "xDS cluster by name: cluster.xds_cluster.update_success = ${v:-none}"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
