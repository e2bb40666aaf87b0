# The three proxies under test, as bench/proxy/run and bench/cost/run start
# them (sourced by both, so that they measure the same configurations).
# Needs: NS_PX, IF_PX (the proxy's namespace and veth end), work (a scratch
# directory), P (a unique prefix), LOAD_CPU, PROXY_CPU, ARION_BIN. Each
# start_<proxy> starts it in the background and sets px_pid; start_arion
# takes an optional command to run arion under (valgrind ...). Arion's port
# is ARION_PORT: af_packet, af_xdp, or auto (arion_port_auto: net_af_xdp
# where the kernel has XDP sockets and Arion runs one worker, since it is
# the cheaper exchange there, docs/benchmarks/proxy.md; else net_af_packet,
# saying why). start_arion_xdp and start_arion_afp are Arion on net_af_xdp
# and on net_af_packet whatever ARION_PORT says, so that one run can
# measure both ports alternating (--proxies "arion_afp arion_xdp");
# start_arion_b is Arion from another build, $ARION_BIN_B, so that one run
# can compare two builds alternating (--proxies "arion arion_b").
# Each is configured as its maintainers advise for a fast reverse proxy:
# one worker/thread, keep-alive to the upstream (a connection pool), no
# access log, no extra work that the others do not do.
# PX_H2=1 (bench/h2/run): each takes HTTP/2 with prior knowledge (h2c) on
# port 80 instead of HTTP/1.1, with at least 100 concurrent streams per
# connection; the upstream side stays HTTP/1.1 with keep-alive.
px_pid=
start_nginx() {
	ip -n $NS_PX addr add 198.18.0.2/24 dev $IF_PX
	mkdir -p "$work/ngx"
	cat > "$work/ngx/nginx.conf" <<EOF
worker_processes 1;
pid $work/ngx/nginx.pid;
error_log $work/ngx/error.log warn;
events { worker_connections 8192; }
http {
	access_log off;
	keepalive_requests 1000000;
	upstream up { server 198.18.0.20:8080; keepalive 256; keepalive_requests 1000000; }
	server {
		listen 198.18.0.2:80 reuseport backlog=4096$([ "${PX_H2:-0}" = 1 ] && echo ' http2');
		http2_max_concurrent_streams 128;
		location / {
			proxy_pass http://up;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering on;
		}
	}
}
EOF
	ip netns exec $NS_PX setpriv --pdeathsig KILL taskset -c $PROXY_CPU nginx -c "$work/ngx/nginx.conf" -g 'daemon off;' &
	px_pid=$!
}
start_haproxy() {
	ip -n $NS_PX addr add 198.18.0.2/24 dev $IF_PX
	mkdir -p "$work/hap"
	# No "log" line anywhere: HAProxy logs nothing.
	cat > "$work/hap/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn 8000
	tune.h2.max-concurrent-streams 128
defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s
	option http-keep-alive
	http-reuse always
frontend fe
	bind 198.18.0.2:80$([ "${PX_H2:-0}" = 1 ] && echo ' proto h2')
	default_backend be
backend be
	server up1 198.18.0.20:8080
EOF
	ip netns exec $NS_PX setpriv --pdeathsig KILL taskset -c $PROXY_CPU haproxy -f "$work/hap/haproxy.cfg" -db &
	px_pid=$!
}
# arion_port_auto: resolve ARION_PORT=auto (or unset) for this start, and
# say what was chosen. net_af_xdp on a veth has one queue (DPDK 22.11
# counts only combined channels), so it takes one worker. Resolved again
# at each start (ARION_PORT_AUTO remembers that it was not given): one
# run may start Arion with 1 worker, then 2 (bench/cost/run's default
# "1 2"), and the second start must not inherit the first's net_af_xdp.
arion_port_auto() {
	if [ "${ARION_PORT:-auto}" = auto ]; then
		ARION_PORT_AUTO=1
	fi
	[ -n "${ARION_PORT_AUTO:-}" ] || return 0
	if [ "${ARION_WORKERS:-1}" != 1 ]; then
		ARION_PORT=af_packet
		echo "[bench] Arion's port: net_af_packet (${ARION_WORKERS} workers; net_af_xdp on a veth takes one)" >&2
	elif python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW, 0)' 2>/dev/null; then
		ARION_PORT=af_xdp
		echo "[bench] Arion's port: net_af_xdp (this kernel has XDP sockets)" >&2
	else
		ARION_PORT=af_packet
		echo "[bench] Arion's port: net_af_packet, falling back: this kernel has no XDP sockets (CONFIG_XDP_SOCKETS)" >&2
	fi
	export ARION_PORT
}
start_arion_xdp() { ARION_PORT=af_xdp start_arion "$@"; }
start_arion_afp() { ARION_PORT=af_packet start_arion "$@"; }
start_arion_b() {
	[ -n "${ARION_BIN_B:-}" ] || { echo "arion_b: set ARION_BIN_B to the other build's arion" >&2; return 1; }
	ARION_BIN=$ARION_BIN_B start_arion "$@"
}
start_arion() { # [wrapper command...]; ARION_WORKERS: worker lcores (default 1)
	[ -x "$ARION_BIN" ] || { echo "arion: $ARION_BIN missing (build first)" >&2; return 1; }
	# worker lcores 1..N, all on the proxy's CPU (bench/cost/run counts
	# instructions, which do not depend on where a thread runs)
	local nw=${ARION_WORKERS:-1} lcores="0@$LOAD_CPU" wl="" i
	for i in $(seq 1 "$nw"); do
		lcores="$lcores,$i@$PROXY_CPU"
		wl="$wl${wl:+, }$i"
	done
	# Arion owns 198.18.0.2 itself: the kernel side of the port has no
	# address. No access_log (Envoy logs nothing without one); request ids
	# off (nginx and HAProxy generate none); the af_packet ring larger than
	# the rx_descriptors default (1024 frames) so that a burst does not overflow it.
	# net_af_xdp: its XSK rings are rx_descriptors long; 4096 likewise. It
	# offers one queue on a veth (DPDK 22.11 counts only combined
	# channels), so it takes one worker (lib/net refuses more).
	arion_port_auto
	local dev="net_af_packet0,iface=$IF_PX,framecnt=4096" ring=""
	local pool=""
	if [ "$ARION_PORT" = arn_af_packet ]; then
		dev="arn_af_packet,iface=$IF_PX"
		# 8 KiB mbufs: a 64 KiB super-segment in 8 links rather than 33
		# (each link is a segment to lib/tcp and a reference to lib/http;
		# docs/dataplane.md), unless $ARION_DP_EXTRA sizes the pool
		[[ "${ARION_DP_EXTRA:-}" == *mbuf_pool* ]] ||
			pool="  mbuf_pool: {data_room_size: 8320}"
	elif [ "$ARION_PORT" = af_xdp ]; then
		dev="net_af_xdp0,iface=$IF_PX"
		ring="      rx_descriptors: 4096
      tx_descriptors: 4096"
	fi
	cat > "$work/arion.yaml" <<EOF
envoy_bootstrap:
  node: {id: bench, cluster: bench}
  static_resources:
    listeners:
      - name: http
        address: {socket_address: {address: 198.18.0.2, port_value: 80}}
        filter_chains:
          - filters:
              - name: envoy.filters.network.http_connection_manager
                typed_config:
                  "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                  stat_prefix: bench
                  generate_request_id: false
                  http2_protocol_options: {max_concurrent_streams: 128}
                  route_config:
                    virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: up}}]}]
                  http_filters:
                    - name: envoy.filters.http.router
                      typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
    clusters:
      - name: up
        type: STATIC
        connect_timeout: 1s
        load_assignment:
          cluster_name: up
          endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 198.18.0.20, port_value: 8080}}}}]}]
  admin:
    address: {socket_address: {address: 127.0.0.1, port_value: 9901}}
dataplane:
  eal_args: ["--no-huge", "--no-pci", "--in-memory", "--file-prefix", "$P", "-m", "512", "--lcores", "$lcores"]
  control_lcore: 0
  worker_lcores: [$wl]
${ARION_DP_EXTRA:-}
${pool}
  ports:
    - device: $dev
      ipv4: 198.18.0.2/24
${ring}
EOF
	ip netns exec $NS_PX setpriv --pdeathsig KILL "$@" "$ARION_BIN" -c "$work/arion.yaml" > "$work/arion.log" 2>&1 &
	px_pid=$!
}
