#!/usr/bin/env bash
# HTTP proxied through a net_af_xdp port (issue 17 item 3): the same
# namespace topology as the af_packet tests (e2e_lib.sh), with Arion's port
# an XDP socket on the root end of the client's veth. Checks that the PMD's
# XDP program is attached in native mode while Arion runs and gone after,
# that many connections (so many flow hashes), 4 MB bodies both ways and
# sustained bulk (16 MiB downloads and an upload, which cycle through the
# whole mbuf pool: every mbuf must lie inside the PMD's UMEM, or the kernel
# drops its frames and TX stalls) arrive whole, that nothing is dropped,
# and that what net_af_xdp cannot do on this interface (two workers on a veth, a missing interface, a locked
# memory limit too small for the UMEM) stops start-up with a message that
# says what to change.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl capsh /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-hx
PY=/usr/bin/python3
if ! $PY -c 'import socket; socket.socket(44, socket.SOCK_RAW, 0)' 2>/dev/null; then
	echo "this kernel has no XDP sockets (CONFIG_XDP_SOCKETS): skipped"
	exit 77
fi
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
topo_bg py ip netns exec "$uns" $PY "$ARION_SRC/tests/http/upstream.py" "$ua" 8081
topo_wait_log "$TOPO_DIR/py.log" ready 10 || { echo "upstream.py did not start"; exit 1; }
grep -v '^#' "$ARION_SRC/tests/http/e2e_proxy.yaml" >"$TOPO_DIR/body.yaml"
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }

HTTP_E2E_PORT=af_xdp http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
log=$TOPO_ARION_LOG
expect "the port is net_af_xdp, one queue per worker" \
	"$(grep -oE 'port wan \(net_af_xdp0[^)]*\)' "$log")" "iface=$host_if${HTTP_E2E_DEVARGS:-},queue_count=1"
# "xdp" is native mode (veth runs the program in its NAPI poll);
# "xdpgeneric" would be the slower skb mode.
expect "XDP program attached to $host_if in native mode" \
	"$(ip -d link show "$host_if" | grep -oE 'prog/xdp[a-z]* id [0-9]+ name [a-z_]+')" \
	'^prog/xdp id [0-9]+ name xsk_def_prog$'

# ---- correctness --------------------------------------------------------------
# 300 connections, one request each: each is a new flow, and each response
# must be the right one (an upstream's name and the path asked for).
out=$(ip netns exec "$cns" $PY - "$us" <<'PY'
import sys, rawhttp
good = 0
for i in range(300):
    d, _ = rawhttp.exchange(sys.argv[1], b"GET /n%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
    if d.startswith(b"HTTP/1.1 200") and (b"upstream-a /n%d\n" % i in d or b"upstream-b /n%d\n" % i in d):
        good += 1
print(good)
PY
)
expect "300 connections, one request each: 300 right answers" "$out" "^300$"
urls=()
for i in $(seq 200); do urls+=("http://$us/k$i"); done
n=$(cc "${urls[@]}" | grep -cE '^upstream-[ab] /k[0-9]+$')
expect "200 keep-alive requests on one connection" "$n" "^200$"
# 16 connections at once, 50 requests each (a burst of frames per poll)
par=()
for c in $(seq 16); do
	cc "${urls[@]:0:50}" >"$TOPO_DIR/par.$c" 2>&1 &
	par+=($!)
done
wait "${par[@]}"
n=$(cat "$TOPO_DIR"/par.* | grep -cE '^upstream-[ab] /k[0-9]+$')
expect "16 concurrent connections x 50 requests" "$n" "^800$"

head -c $((4 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/www/big.bin"
chmod 644 "$TOPO_DIR/www/big.bin"
want=$(sha256sum <"$TOPO_DIR/www/big.bin" | cut -d' ' -f1)
got=$(cc --max-time 60 http://$us/www/big.bin | sha256sum | cut -d' ' -f1)
expect "4 MB download, SHA-256 equal" "$got" "^$want$"
got=$(cc --max-time 60 --data-binary @"$TOPO_DIR/www/big.bin" -H 'Content-Type: application/octet-stream' http://$us/upload)
expect "4 MB upload, SHA-256 equal" "$got" "^$want 4194304$"
[[ "$got" == "$want 4194304" ]] || curl -s "http://127.0.0.1:$admin_port/stats" |
	grep -E '^(dpdk\.port|tcp\.0|cluster\.py\.upstream_(cx|rq))\.' | grep -v ': 0$' | sed 's/^/    /'

# Bulk: 16 MiB bodies. Until the mbuf pool was made packed for net_af_xdp
# (lib/net/net.c net_pool_create), the second or third of these stalled:
# mbufs past the UMEM the PMD registers never reached the wire.
head -c $((16 * 1024 * 1024)) /dev/urandom >"$TOPO_DIR/www/bulk.bin"
chmod 644 "$TOPO_DIR/www/bulk.bin"
want=$(sha256sum <"$TOPO_DIR/www/bulk.bin" | cut -d' ' -f1)
inuse0=$(stat dpdk.mempool.arn_mbuf_s0.in_use) # the fill ring's 2048, mostly
for r in 1 2 3 4; do
	got=$(cc --max-time 30 http://$us/www/bulk.bin | sha256sum | cut -d' ' -f1)
	expect "16 MiB download $r of 4, SHA-256 equal" "$got" "^$want$"
done
got=$(cc --max-time 30 --data-binary @"$TOPO_DIR/www/bulk.bin" -H 'Content-Type: application/octet-stream' http://$us/upload)
expect "16 MiB upload, SHA-256 equal" "$got" "^$want 16777216$"
# Every connection is closed: an mbuf whose frame the kernel refused would
# stay in use for good (the PMD frees a sent mbuf only on its completion).
inuse=$(stat dpdk.mempool.arn_mbuf_s0.in_use)
[ "$inuse" -le $((inuse0 + 64)) ] && ok "mbufs in use after the bulk transfers: $inuse (before: $inuse0)" ||
	bad "mbufs in use after the bulk transfers: $inuse, before: $inuse0 (leaked?)"

missed=$(stat dpdk.port.wan.nic_rx_missed)
expect "no frame lost by the XDP socket (nic_rx_missed)" "$missed" "^0$"
rx=$(stat dpdk.port.wan.rx_packets)
[ "$rx" -gt 5000 ] && ok "the port received $rx frames" || bad "rx_packets=$rx"

topo_arion_stop TERM
rc=$?
expect "SIGTERM: exit 0" "$rc" "^0$"
expect "the XDP program is removed with the port" \
	"$(ip -d link show "$host_if" | grep -cE 'prog/xdp')" "^0$"
drop=$(topo_counter "$log" "port wan" tx_drop_full)
expect "no frame dropped for a full TX ring" "$drop" "^0$"

# ---- what net_af_xdp cannot do, said before DPDK tries --------------------------
cfg() { # DEVICE WORKER_LCORES
	topo_bootstrap
	topo_dataplane "$1" "$us/24" "" "$2"
}
# expect_fail NAME PATTERN [WRAPPER...] -- ARION ARGS: exit 3, PATTERN in the output
expect_fail() {
	local name=$1 pat=$2 rc
	shift 2
	local out="$TOPO_DIR/fail.out"
	timeout 60 "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" != 3 ]; then
		bad "$name: exit $rc, wanted 3"
		sed 's/^/    /' "$out" | tail -15
	elif ! grep -qF -- "$pat" "$out"; then
		bad "$name: output lacks: $pat"
		sed 's/^/    /' "$out" | tail -15
	else
		ok "$name: exit 3, says: $pat"
	fi
}
cfg "net_af_xdp0,iface=$host_if" "1, 2" >"$TOPO_DIR/w2.yaml"
expect_fail "two workers on a veth" "counts only combined channels, and '$host_if' has none" \
	"$ARION_BIN" -c "$TOPO_DIR/w2.yaml" -- --lcores 0@0,1@1,2@1
cfg "net_af_xdp0,iface=${TOPO_ID}x" 1 >"$TOPO_DIR/noif.yaml"
expect_fail "missing interface" "net_af_xdp's interface '${TOPO_ID}x' does not exist" \
	"$ARION_BIN" -c "$TOPO_DIR/noif.yaml"
# Without CAP_IPC_LOCK the UMEM (the mbuf pool: 8191 mbufs of about 2.4 KB)
# is charged to RLIMIT_MEMLOCK; 64 KiB is far too little.
cfg "net_af_xdp0,iface=$host_if" 1 >"$TOPO_DIR/ml.yaml"
expect_fail "locked-memory limit below the UMEM" "the locked-memory limit is 64 KiB" \
	capsh --drop=cap_ipc_lock -- -c 'ulimit -l 64 && exec "$0" "$@"' "$ARION_BIN" -c "$TOPO_DIR/ml.yaml"
expect "... and no XDP program left behind" "$(ip -d link show "$host_if" | grep -cE 'prog/xdp')" "^0$"

http_e2e_finish
