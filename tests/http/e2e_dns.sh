#!/usr/bin/env bash
# STRICT_DNS and LOGICAL_DNS clusters end to end: Arion runs in a mount
# namespace of its own (unshare -m) whose /etc/hosts is a file this test
# writes, and whose /etc/resolv.conf names 127.0.0.1, where no server
# listens; c-ares reads both for every resolution, so the name's address
# is the test's to change and no query leaves loopback. curl reaches
# nginx A through the name, the name moves to nginx B and traffic
# follows; the name gone (the resolution fails: nothing answers on
# 127.0.0.1:53), both clusters keep their last host, as Envoy's; the name
# back, traffic follows again.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl unshare mount || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-dns
http_e2e_topo || exit 1
http_e2e_nginx || exit 1

hosts="$TOPO_DIR/hosts" resolv="$TOPO_DIR/resolv.conf"
# written in place (never renamed): the bind mount holds this inode
sethosts() {
	{
		echo "127.0.0.1 localhost"
		[ -z "$1" ] || echo "$1 backend.arion.test"
	} >"$hosts"
}
sethosts "$ua"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"$resolv"
real=${ARION_BIN:?}
wrap="$TOPO_DIR/arion-in-mntns"
cat >"$wrap" <<WRAP
#!/bin/sh
exec unshare -m --propagation private sh -c 'mount --bind "\$0" /etc/hosts && mount --bind "\$1" /etc/resolv.conf && shift && exec "\$@"' "$hosts" "$resolv" "$real" "\$@"
WRAP
chmod 755 "$wrap"
ARION_BIN=$wrap

cat >"$TOPO_DIR/body.yaml" <<YAML
  static_resources:
    listeners:
      - name: web
        address: { socket_address: { address: $us, port_value: 80 } }
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: web
                  route_config:
                    virtual_hosts:
                      - name: all
                        domains: ["*"]
                        routes:
                          - match: { prefix: "/", headers: [{ name: x-cluster, string_match: { exact: logical } }] }
                            route: { cluster: logical }
                          - match: { prefix: "/" }
                            route: { cluster: strict }
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config:
                        "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
    clusters:
      - name: strict
        type: STRICT_DNS
        connect_timeout: 1s
        dns_refresh_rate: 0.2s
        dns_lookup_family: V4_PREFERRED
        load_assignment:
          cluster_name: strict
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: backend.arion.test, port_value: 8080 } } }
      - name: logical
        type: LOGICAL_DNS
        connect_timeout: 1s
        dns_refresh_rate: 0.2s
        load_assignment:
          cluster_name: logical
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: backend.arion.test, port_value: 8080 } } }
YAML
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}
# until CMD's output matches WANT (each try a request; 100 at most)
until_match() { # WANT CMD...
	local want=$1 got= i
	shift
	for i in $(seq 100); do
		got=$("$@" 2>/dev/null)
		[[ "$got" =~ $want ]] && break
		sleep 0.1
	done
	echo "$got"
}
body() { cc "http://$us/" "$@"; }
code() { cc -o /dev/null -w '%{http_code}' "http://$us/" "$@"; }

expect "STRICT_DNS: the name's address (nginx A) serves" "$(body)" "^upstream-a"
expect "LOGICAL_DNS: the same" "$(body -H 'x-cluster: logical')" "^upstream-a"
expect "resolutions counted (config.dns_update_success)" "$(stat config.dns_update_success)" "^[1-9]"
expect "no resolution failed while the name is there" "$(stat config.dns_update_failure)" "^0$"

sethosts "$ub"
expect "STRICT_DNS: the name moved to nginx B, traffic follows" "$(until_match '^upstream-b' body)" "^upstream-b"
expect "LOGICAL_DNS: follows too" "$(until_match '^upstream-b' body -H 'x-cluster: logical')" "^upstream-b"
expect "STRICT_DNS: nginx A no longer gets requests" "$(body):$(body):$(body)" "^upstream-b.*:upstream-b.*:upstream-b"

sethosts ""
f0=$(stat config.dns_update_failure)
for i in $(seq 100); do
	[ "$(stat config.dns_update_failure)" -ge $((f0 + 2)) ] && break
	sleep 0.1
done
expect "the name gone: resolutions fail (config.dns_update_failure)" "$(stat config.dns_update_failure)" "^[1-9]"
expect "STRICT_DNS: a failure keeps the last host" "$(body)" "^upstream-b"
expect "LOGICAL_DNS: a failure keeps its host" "$(body -H 'x-cluster: logical')" "^upstream-b"

sethosts "$ua"
expect "STRICT_DNS: the name back, hosts back" "$(until_match '^upstream-a' body)" "^upstream-a"
expect "the host's /etc/hosts is untouched" "$(grep -c backend.arion.test /etc/hosts)" "^0$"

# A silent DNS server (bound on 127.0.0.1:53, never answering) and a
# 30 s c-ares timeout: the resolutions hang on the resolver threads, the
# traffic does not notice, and stopping Arion does not wait for them.
topo_bg silentdns /usr/bin/python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
print("ready", flush=True)
while True:
    s.recvfrom(2048)
'
topo_wait_log "$TOPO_DIR/silentdns.log" ready 10 || bad "the silent DNS server did not start"
printf 'nameserver 127.0.0.1\noptions timeout:30 attempts:1\n' >"$resolv"
# resolutions started and not answered
inflight() { echo $(($(stat config.dns_update_attempt) - $(stat config.dns_update_success) - $(stat config.dns_update_failure))); }
sethosts ""
for i in $(seq 100); do
	[ "$(inflight)" -ge 2 ] && break
	sleep 0.1
done
sleep 1
expect "a silent server: both names resolving, none answered" "$(inflight)" "^2$"
expect "a silent server: traffic still served (STRICT_DNS keeps its host)" "$(body)" "^upstream-a"
t0=$(date +%s)
topo_arion_stop || bad "arion exit code $?"
expect "stopping does not wait for the hung resolutions" "$(($(date +%s) - t0))" "^[0-9]$"
http_e2e_finish
