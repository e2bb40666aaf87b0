# Test topology helpers for Arion's end-to-end tests (bash; source it).
#
# DPDK runs here on virtual devices (DESIGN.md "Test topology without
# NICs"): a net_af_packet port bound to the root-namespace end of a veth pair
# whose other end sits in a namespace the test made, or a net_tap port whose
# kernel side the test moves into such a namespace. Clients and upstreams
# run in the namespaces. Everything a test creates is registered and
# removed by topo_cleanup, which topo_init installs as an EXIT trap (INT,
# TERM and HUP exit through it too), so a failing or interrupted test leaves
# nothing behind.
#
#   . "$ARION_SRC/tests/topo/topo.sh"
#   topo_require ip ping || exit 77          # skip (77) unless root + tools
#   topo_init arn-n                          # names: arn-n<pid in hex>...
#   ns=$(topo_name c)                        # "arn-n1f2e3c"
#   topo_ns "$ns"
#   topo_veth "$(topo_name h)" "$ns" "$(topo_name p)" 198.18.0.1/24
#   topo_dataplane "net_af_packet0,iface=$(topo_name h)" 198.18.0.2/24 > dp.yaml
#   topo_arion_start "$cfg" -- --lcores 0@0,1@1   # waits until serving
#   ip netns exec "$ns" ping -c 3 198.18.0.2
#   topo_arion_stop                          # SIGTERM; returns arion's exit code
#   topo_counter "$TOPO_ARION_LOG" "port wan" rx_packets
#
# Addresses: only 198.18.0.0/15 inside namespaces you made (and loopback).
# Interface names are at most 15 characters: keep the prefix short (the pid
# in hex takes up to 6); topo_name refuses longer names.

TOPO_ID=
TOPO_DIR=
TOPO_NS=()
TOPO_LINKS=()
TOPO_PIDS=()
TOPO_ARION_PID=
TOPO_ARION_LOG=

topo_log() { echo "topo: $*" >&2; }

# topo_require CMD...: root and the commands exist; else explain and return 1
# (tests then exit 77, meson's "skipped").
topo_require() {
	if [ "$(id -u)" != 0 ]; then
		topo_log "needs root (namespaces, veth, TAP)"
		return 1
	fi
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			topo_log "needs $c (scripts/setup-deps --test)"
			return 1
		fi
	done
	return 0
}

# topo_init PREFIX: a unique id PREFIX<pid hex>, a temp dir $TOPO_DIR, and
# the cleanup trap. Call once per test script, before creating anything.
topo_init() {
	TOPO_ID="$1$(printf '%x' $$)"
	TOPO_DIR=$(mktemp -d "/tmp/${TOPO_ID}.XXXXXX") || return 1
	trap topo_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP
}

# topo_name SUFFIX: print $TOPO_ID$SUFFIX; fails if it is not a valid
# interface name (over 15 characters).
topo_name() {
	local n="$TOPO_ID$1"
	if [ ${#n} -gt 15 ]; then
		topo_log "name '$n' is longer than 15 characters; use a shorter prefix or suffix"
		return 1
	fi
	echo "$n"
}

# topo_ns NS: create network namespace NS with loopback up.
topo_ns() {
	ip netns add "$1" || return 1
	TOPO_NS+=("$1")
	ip -n "$1" link set lo up
}

# Offloads off: a DPDK af_packet port otherwise receives 64 KB GSO frames and
# packets with unfinished checksums (DESIGN.md).
topo_offloads_off() { # [ns] ifname
	if [ $# = 2 ]; then
		ip netns exec "$1" ethtool -K "$2" tx off tso off gso off gro off >/dev/null 2>&1
	else
		ethtool -K "$1" tx off tso off gso off gro off >/dev/null 2>&1
	fi
	return 0
}

# topo_veth HOST_IF NS NS_IF NS_CIDR: a veth pair. HOST_IF stays in the root
# namespace without an address (IPv6 off, so the kernel stays quiet on it)
# for a net_af_packet port; NS_IF goes into NS with address NS_CIDR.
topo_veth() {
	local h=$1 ns=$2 p=$3 cidr=$4
	ip link add "$h" type veth peer name "$p" || return 1
	TOPO_LINKS+=("$h")
	sysctl -qw "net.ipv6.conf.$h.disable_ipv6=1" >/dev/null 2>&1
	ip link set "$p" netns "$ns" || return 1
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$p.disable_ipv6=1" >/dev/null 2>&1
	ip -n "$ns" addr add "$cidr" dev "$p" || return 1
	topo_offloads_off "$h"
	topo_offloads_off "$ns" "$p"
	ip link set "$h" up || return 1
	ip -n "$ns" link set "$p" up || return 1
}

# topo_tap_adopt TAP_IF NS CIDR [TIMEOUT_S]: wait for the TAP interface a
# net_tap port created (DPDK makes it when the port is probed), move it
# into NS, give it CIDR, bring it up. The TAP disappears with the process
# that holds it.
topo_tap_adopt() {
	local t=$1 ns=$2 cidr=$3 to=${4:-10} i
	for ((i = 0; i < to * 10; i++)); do
		ip link show "$t" >/dev/null 2>&1 && break
		sleep 0.1
	done
	if ! ip link show "$t" >/dev/null 2>&1; then
		topo_log "TAP $t did not appear within ${to}s"
		return 1
	fi
	ip link set "$t" netns "$ns" || return 1
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$t.disable_ipv6=1" >/dev/null 2>&1
	ip -n "$ns" addr add "$cidr" dev "$t" || return 1
	topo_offloads_off "$ns" "$t"
	ip -n "$ns" link set "$t" up
}

# topo_bg NAME CMD...: run CMD in the background, output to
# $TOPO_DIR/NAME.log; its pid is in $TOPO_PID and is killed at cleanup.
topo_bg() {
	local name=$1
	shift
	"$@" >"$TOPO_DIR/$name.log" 2>&1 &
	TOPO_PID=$!
	TOPO_PIDS+=("$TOPO_PID")
}

# topo_wait_log FILE PATTERN [TIMEOUT_S] [PID]: wait until FILE contains
# PATTERN (grep -E). Fails early if PID exits first.
topo_wait_log() {
	local f=$1 pat=$2 to=${3:-20} pid=${4:-} i
	for ((i = 0; i < to * 10; i++)); do
		grep -qE -- "$pat" "$f" 2>/dev/null && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			grep -qE -- "$pat" "$f" 2>/dev/null && return 0
			return 1
		fi
		sleep 0.1
	done
	return 1
}

# topo_stop PID [SIGNAL] [TIMEOUT_S]: signal PID and wait for it; returns
# its exit code (124 and SIGKILL if it did not stop in time). PID must be a
# child of this shell (topo_bg).
topo_stop() {
	local pid=$1 sig=${2:-TERM} to=${3:-15} i
	kill -"$sig" "$pid" 2>/dev/null
	for ((i = 0; i < to * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		topo_log "pid $pid did not stop within ${to}s after SIG$sig; killing it"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid"
}

# topo_eal_args: EAL arguments for a test instance: no hugepages, no PCI, no
# shared files, and a prefix of its own so instances of several tests can
# run at once.
topo_eal_args() {
	echo "--no-huge --no-pci --in-memory -m 256"
}

# topo_dataplane DEVICE CIDR [GATEWAY] [WORKER_LCORES] [PORT_NAME]: print an
# Arion dataplane: section (YAML) with one port, for a test's config file.
# WORKER_LCORES like "1" or "1, 2"; empty: every EAL lcore but the main one.
# The mbuf pool is 8,191 mbufs (half the product's default, enough for every
# test), or $TOPO_MBUFS (bench/tcp/loss_matrix's --mbufs).
topo_dataplane() {
	local dev=$1 cidr=$2 gw=${3:-} workers=${4:-} name=${5:-wan} a
	echo "dataplane:"
	printf '  eal_args: ['
	local first=1
	for a in $(topo_eal_args); do
		[ $first = 1 ] || printf ', '
		printf '"%s"' "$a"
		first=0
	done
	echo ']'
	[ -n "$workers" ] && echo "  worker_lcores: [$workers]"
	echo "  ports:"
	echo "    - name: $name"
	echo "      device: \"$dev\""
	echo "      ipv4: $cidr"
	[ -n "$gw" ] && echo "      gateway: $gw"
	echo "  mbuf_pool:"
	echo "    mbufs_per_socket: ${TOPO_MBUFS:-8191}"
}

# topo_bootstrap [NODE_ID]: print a minimal envoy_bootstrap: section (no
# listeners, no control plane) for data-plane-only tests.
topo_bootstrap() {
	echo "envoy_bootstrap:"
	echo "  node: { id: ${1:-$TOPO_ID}, cluster: test }"
}

# topo_arion_start CONFIG [ARION ARGS...]: start $ARION_BIN -c CONFIG in the
# background (log: $TOPO_ARION_LOG, pid: $TOPO_ARION_PID) and wait until it
# serves. Fails (printing the log) if it exits or does not get there in 30 s.
topo_arion_start() {
	local cfg=$1
	shift
	TOPO_ARION_LOG="$TOPO_DIR/arion.$((${#TOPO_PIDS[@]})).log"
	"${ARION_BIN:?}" -c "$cfg" "$@" >"$TOPO_ARION_LOG" 2>&1 &
	TOPO_ARION_PID=$!
	TOPO_PIDS+=("$TOPO_ARION_PID")
	if ! topo_wait_log "$TOPO_ARION_LOG" "serving; SIGINT" 30 "$TOPO_ARION_PID"; then
		topo_log "arion did not start; its log:"
		sed 's/^/    /' "$TOPO_ARION_LOG" >&2
		return 1
	fi
}

# topo_arion_stop [SIGNAL]: stop the arion started last; returns its exit code.
topo_arion_stop() {
	[ -n "$TOPO_ARION_PID" ] || return 0
	local rc=0
	topo_stop "$TOPO_ARION_PID" "${1:-TERM}" 20 || rc=$?
	TOPO_ARION_PID=
	return $rc
}

# topo_counter LOG "port NAME"|"workerN" COUNTER: a counter from the lines
# lib/net logs at shutdown ("stats port wan: rx_packets=12 ..."); 0 if absent.
topo_counter() {
	local log=$1 who=$2 c=$3 v
	v=$(grep -E "stats $who[ :(]" "$log" | tail -1 | grep -oE "[ ]$c=[0-9]+" | cut -d= -f2)
	echo "${v:-0}"
}

# topo_cleanup: kill what topo_bg / topo_arion_start started, delete the
# namespaces and links, remove $TOPO_DIR (unless TOPO_KEEP=1). Idempotent;
# keeps the exit status it was called with.
topo_cleanup() {
	local rc=$? p n
	for p in "${TOPO_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${TOPO_PIDS[@]}"; do
		for ((n = 0; n < 50; n++)); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	TOPO_PIDS=()
	for n in "${TOPO_NS[@]}"; do
		# Processes still inside (a client the test started with ip netns
		# exec and forgot) would keep its interfaces alive.
		for p in $(ip netns pids "$n" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		ip netns del "$n" 2>/dev/null
	done
	TOPO_NS=()
	for n in "${TOPO_LINKS[@]}"; do
		ip link del "$n" 2>/dev/null
	done
	TOPO_LINKS=()
	if [ -n "$TOPO_DIR" ] && [ "${TOPO_KEEP:-0}" != 1 ]; then
		rm -rf "$TOPO_DIR"
	fi
	return $rc
}
