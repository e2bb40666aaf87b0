#!/usr/bin/env bash
# Instructions per segment and per connection in lib/tcp, counted by
# callgrind on bench_tcp_unit (two stacks over the fake lib/net of
# tests/tcp). lib/tcp's share is what arn_tcp_input, arn_tcp_worker_poll
# and arn_tcp_connect execute, minus the fake lib/net's output (IPv4
# header and checksums, which lib/net does, in hardware where it can).
#
#   bench_tcp_unit.sh BENCH_BINARY [BULK_BYTES] [CONNECTIONS]
#
# Prints both, with the receive checksum verified in software and with a
# NIC that verified it (hwcsum). Needs valgrind. Speed is never asserted.
set -u
bin=$(realpath "${1:?path of bench_tcp_unit}")
bytes=${2:-8388608}
conns=${3:-1000}
command -v valgrind >/dev/null || {
	echo "needs valgrind"
	exit 77
}
dir=$(mktemp -d /tmp/arn-t2-cg.XXXXXX)
trap 'rm -rf "$dir"' EXIT

incl() { # FILE FUNCTION: inclusive Ir of FUNCTION in a callgrind profile
	callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
		awk -v f="$2" '$0 ~ ":"f" " || $0 ~ ":"f"$" { gsub(",", "", $1); print $1; exit }'
}

tcp_ir() {
	local f=$1 a b c d
	a=$(incl "$f" arn_tcp_input) b=$(incl "$f" arn_tcp_worker_poll)
	c=$(incl "$f" arn_tcp_connect) d=$(incl "$f" arn_net_ip4_output)
	echo $((${a:-0} + ${b:-0} + ${c:-0} - ${d:-0}))
}

for mode in swcsum hwcsum; do
	out=$(cd "$dir" && valgrind --tool=callgrind --collect-atstart=yes \
		--callgrind-out-file="$dir/cg.$mode.%p" "$bin" "$bytes" "$conns" "$mode" 2>/dev/null) || {
		echo "bench_tcp_unit failed"
		exit 1
	}
	segs_bulk=$(echo "$out" | sed -n 's/^bulk: .*, \([0-9]*\) segments.*/\1/p')
	segs_conn=$(echo "$out" | sed -n 's/^conns: .*, \([0-9]*\) segments.*/\1/p')
	fb=$(grep -l "^desc: Trigger: Client Request: bulk" "$dir"/cg.$mode.* | head -1)
	fc=$(grep -l "^desc: Trigger: Client Request: conns" "$dir"/cg.$mode.* | head -1)
	ib=$(tcp_ir "$fb")
	ic=$(tcp_ir "$fc")
	echo "== $mode: $out" | tr '\n' ' '
	echo
	awk -v i="$ib" -v s="$segs_bulk" -v b="$bytes" 'BEGIN {
		printf "  bulk:  %.0f instructions per segment received (%d segments, %.2f per payload byte each way)\n", i / s, s, i / b / 2 }'
	awk -v i="$ic" -v s="$segs_conn" -v n="$conns" 'BEGIN {
		printf "  conns: %.0f instructions per connection (open, 64 bytes each way, close; both ends), %.0f per segment\n", i / n, i / s }'
done
