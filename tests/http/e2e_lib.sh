# Shared by tests/http/e2e_*.sh (source after tests/topo/topo.sh).
#
# Topology (all namespaces and links made by the test, removed on exit):
#
#   [client ns C] 198.18.2.1 --veth-- (root, no address) net_af_packet -- Arion 198.18.2.2
#                                     (net_af_xdp with HTTP_E2E_PORT=af_xdp,
#                                      Arion's own with HTTP_E2E_PORT=arn_af_packet)
#        | 198.18.3.1 (router)
#      veth
#        | 198.18.3.10, 198.18.3.11
#   [upstream ns U]: nginx A on .10:8080, nginx B on .11:8080, test servers
#
# Arion reaches the upstreams through its gateway 198.18.2.1 (C forwards),
# so client and upstream traffic share the one Arion port, as on an
# appliance with one NIC.
#
#   http_e2e_topo            namespaces, links, addresses ($cns $uns)
#   http_e2e_nginx           the two nginx upstreams (stub_status on /nginx_status)
#   http_e2e_arion CFG_BODY  write $TOPO_DIR/arion.yaml (bootstrap body + dataplane,
#                            plus $HTTP_E2E_DATAPLANE_EXTRA lines) and start
#   cc ARGS...               curl in the client namespace
#   stat NAME                a stat from Arion's admin (/stats), 0 if absent
#   pki_ca NAME CN           a test CA in $PKI (NAME.key, NAME.pem; P-256, 2 days)
#   pki_leaf NAME CA CN EXT  a certificate from $PKI/CA with x509v3 line EXT
#
# Inline Python can `import rawhttp` (tests/http/rawhttp.py): raw bytes to
# Arion and every byte back.

export PYTHONPATH="$ARION_SRC/tests/http${PYTHONPATH:+:$PYTHONPATH}"
fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}
us=198.18.2.2
gw=198.18.2.1
ua=198.18.3.10
ub=198.18.3.11
admin_port=$((19100 + $$ % 800))

http_e2e_finish() {
	if [ $fails != 0 ]; then
		echo "$fails failed; arion's log (tail):"
		tail -40 "$TOPO_ARION_LOG" 2>/dev/null | sed 's/^/    /'
		for f in "$TOPO_DIR"/nginx-*/error.log; do
			[ -f "$f" ] && { echo "--- $f"; tail -5 "$f"; }
		done
		exit 1
	fi
	exit 0
}

http_e2e_topo() {
	cns=$(topo_name c) && uns=$(topo_name u) || return 1
	topo_ns "$cns" && topo_ns "$uns" || return 1
	host_if=$(topo_name h) && local c_if=$(topo_name p) || return 1
	topo_veth "$host_if" "$cns" "$c_if" "$gw/24" || return 1
	local cu=$(topo_name r) uc=$(topo_name s)
	ip -n "$cns" link add "$cu" type veth peer name "$uc" netns "$uns" || return 1
	ip -n "$cns" addr add 198.18.3.1/24 dev "$cu"
	ip -n "$uns" addr add "$ua/24" dev "$uc"
	ip -n "$uns" addr add "$ub/24" dev "$uc"
	topo_offloads_off "$cns" "$cu"
	topo_offloads_off "$uns" "$uc"
	ip -n "$cns" link set "$cu" up
	ip -n "$uns" link set "$uc" up
	ip -n "$uns" route add default via 198.18.3.1
	ip netns exec "$cns" sysctl -qw net.ipv4.ip_forward=1
}

# http_e2e_nginx: two nginx instances in U, A on $ua:8080 and B on $ub:8080.
# Each answers "upstream-a" / "upstream-b" on /, echoes request headers as
# response headers under /echo (X-Seen-*), serves files from $TOPO_DIR/www
# (big.bin for downloads), accepts uploads on /upload (body hashed by the
# test server, see below), and counts connections on /nginx_status.
http_e2e_nginx() {
	mkdir -p "$TOPO_DIR/www"
	chmod 755 "$TOPO_DIR" "$TOPO_DIR/www"
	local n addr
	for n in a b; do
		[ $n = a ] && addr=$ua || addr=$ub
		local d="$TOPO_DIR/nginx-$n"
		mkdir -p "$d"
		chmod 777 "$d"
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
  client_max_body_size 0;
  server {
    listen $addr:8080 reuseport;
    location = / { return 200 "upstream-$n\n"; }
    location /nginx_status { stub_status; }
    location /www/ { alias $TOPO_DIR/www/; }
    location /echo {
      add_header X-Seen-Host \$http_host always;
      add_header X-Seen-XFF \$http_x_forwarded_for always;
      add_header X-Seen-Proto \$http_x_forwarded_proto always;
      add_header X-Seen-Rid \$http_x_request_id always;
      add_header X-Seen-Uri \$request_uri always;
      add_header X-Seen-Test \$http_x_test always;
      add_header X-Seen-Route \$http_x_route always;
      add_header X-Seen-Vh \$http_x_vh always;
      add_header X-Seen-Orig \$http_x_envoy_original_path always;
      add_header X-Upstream $n always;
      return 200 "echo-$n \$request_uri\n";
    }
    location / { return 200 "upstream-$n \$request_uri\n"; }
  }
}
NGINX
		topo_bg "nginx-$n" ip netns exec "$uns" nginx -c "$d/nginx.conf" -g 'daemon off;'
	done
	local i
	for i in $(seq 50); do
		ip netns exec "$uns" curl -s -o /dev/null "http://$ua:8080/" &&
			ip netns exec "$uns" curl -s -o /dev/null "http://$ub:8080/" && return 0
		sleep 0.1
	done
	echo "nginx did not start"
	return 1
}

# http_e2e_xds_cp SCRIPT DIR: start the Node control plane SCRIPT (it
# writes DIR/port once listening) and write $TOPO_DIR/body.yaml, a
# bootstrap whose delta ADS is that control plane, for http_e2e_arion.
# TOPO_PID is the control plane's pid. HTTP_E2E_XDS_BY_NAME=1: the xDS
# cluster is STRICT_DNS and names the control plane "localhost", as most
# hand-written bootstraps name theirs (a name is not known loopback:
# plaintext needs xds.allow_plaintext, which http_e2e_arion then adds).
http_e2e_xds_cp() {
	local script=$1 dir=$2 pid port i
	topo_bg cp node "$script" "$dir"
	pid=$TOPO_PID
	for i in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
	[ -s "$dir/port" ] || { cat "$TOPO_DIR/cp.log"; echo "control plane did not start"; return 1; }
	port=$(cat "$dir/port")
	local xtype=STATIC xhost=127.0.0.1
	[ "${HTTP_E2E_XDS_BY_NAME:-}" = 1 ] && xtype=STRICT_DNS xhost=localhost
	cat >"$TOPO_DIR/body.yaml" <<YAML
  dynamic_resources:
    ads_config:
      api_type: DELTA_GRPC
      transport_api_version: V3
      grpc_services:
        - envoy_grpc: { cluster_name: xds_cluster }
    cds_config: { ads: {} }
    lds_config: { ads: {} }
  static_resources:
    clusters:
      - name: xds_cluster
        type: $xtype
        connect_timeout: 1s
        typed_extension_protocol_options:
          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
            explicit_http_config: { http2_protocol_options: {} }
        load_assignment:
          cluster_name: xds_cluster
          endpoints:
            - lb_endpoints:
                - endpoint: { address: { socket_address: { address: $xhost, port_value: $port } } }
YAML
	TOPO_PID=$pid
}

# http_e2e_arion FILE: FILE holds the envoy_bootstrap: body (static
# resources etc., indented by 2); the admin and dataplane are added.
http_e2e_arion() {
	local body=$1 cfg="$TOPO_DIR/arion.yaml"
	{
		echo "envoy_bootstrap:"
		echo "  node: { id: $TOPO_ID, cluster: test }"
		echo "  admin: { address: { socket_address: { address: 127.0.0.1, port_value: $admin_port } } }"
		cat "$body"
		local dev="net_${HTTP_E2E_PORT:-af_packet}0"
		[ "${HTTP_E2E_PORT:-}" = arn_af_packet ] && dev=arn_af_packet
		topo_dataplane "$dev,iface=$host_if${HTTP_E2E_DEVARGS:-}" "$us/24" "$gw" \
			"${HTTP_E2E_WORKERS:-1}"
		[ -n "${HTTP_E2E_DATAPLANE_EXTRA:-}" ] && echo "$HTTP_E2E_DATAPLANE_EXTRA"
		[ "${HTTP_E2E_XDS_BY_NAME:-}" = 1 ] && echo "xds: { allow_plaintext: true }"
	} >"$cfg"
	topo_arion_start "$cfg" ${ARION_EXTRA:-} || return 1
	# wait until Arion answers ARP/ICMP from the client namespace
	local i
	for i in $(seq 50); do
		ip netns exec "$cns" ping -c1 -W1 "$us" >/dev/null 2>&1 && return 0
	done
	return 1
}

cc() { ip netns exec "$cns" curl -sS --max-time 20 "$@"; }

stat() {
	local v
	v=$(curl -s "http://127.0.0.1:$admin_port/stats" | grep -E "^$1: " | head -1 | awk '{print $2}')
	echo "${v:-0}"
}

# Test certificates, in the directory $PKI (the caller makes it). Each
# returns openssl's status, so a chain of them ends in one `|| exit`.
pki_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
pki_ca() { # pki_ca NAME CN
	pki_key "$PKI/$1.key" &&
		openssl req -x509 -new -key "$PKI/$1.key" -out "$PKI/$1.pem" -subj "/CN=$2" -days 2 2>/dev/null
}
pki_leaf() { # pki_leaf NAME CA CN EXT
	pki_key "$PKI/$1.key" &&
		openssl req -new -key "$PKI/$1.key" -out "$PKI/$1.csr" -subj "/CN=$3" 2>/dev/null &&
		printf '%s\n' "$4" >"$PKI/$1.ext" &&
		openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/$2.pem" -CAkey "$PKI/$2.key" -CAcreateserial \
			-out "$PKI/$1.pem" -days 2 -extfile "$PKI/$1.ext" 2>/dev/null
}

# nginx_conns N: accepted connections of nginx N (a|b) from stub_status.
nginx_conns() {
	local addr
	[ "$1" = a ] && addr=$ua || addr=$ub
	ip netns exec "$uns" curl -s "http://$addr:8080/nginx_status" | awk 'NR==3 {print $1}'
}
