#!/usr/bin/env bash
# tests/topo/topo.sh itself: what a test creates is gone after it exits,
# whether it passes, fails, or is killed with SIGTERM / SIGINT.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool || exit 77
fails=0
ok() { echo "ok   $*"; }
bad() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

# child PREFIX MODE: a test script that builds a namespace, a veth pair and a
# background process, then ends by MODE (pass, fail, wait for a signal).
# Run it in a subshell or in the background: it execs bash, so its pid is
# the test script's own.
child() {
	exec bash -c '
		. "$ARION_SRC/tests/topo/topo.sh"
		topo_init "$1"
		ns=$(topo_name c); h=$(topo_name h); p=$(topo_name p)
		topo_ns "$ns" && topo_veth "$h" "$ns" "$p" 198.18.9.1/24 || exit 9
		topo_bg sleeper sleep 300
		echo "$TOPO_ID $TOPO_DIR $TOPO_PID" > "$3"
		ip -n "$ns" addr show "$p" | grep -q 198.18.9.1/24 || exit 8
		case $2 in
		pass) exit 0 ;;
		fail) false; exit 1 ;;
		wait) topo_bg waiter sleep 300; wait ;;
		esac' child "$@"
}

# gone ID DIR PID: nothing of that test is left.
gone() {
	local id=$1 dir=$2 pid=$3 what=$4
	if ip netns list | grep -q "^$id"; then bad "$what: namespace left"; return; fi
	if ip link show | grep -q "$id"; then bad "$what: interface left"; return; fi
	if [ -e "$dir" ]; then bad "$what: $dir left"; return; fi
	if kill -0 "$pid" 2>/dev/null; then bad "$what: background process $pid left"; return; fi
	ok "$what: everything removed"
}

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for mode in pass fail; do
	(child arn-nz "$mode" "$t/$mode")
	rc=$?
	read -r id dir pid <"$t/$mode"
	case $mode in
	pass) [ $rc = 0 ] && ok "pass: exit 0 kept" || bad "pass: exit $rc" ;;
	fail) [ $rc = 1 ] && ok "fail: exit 1 kept" || bad "fail: exit $rc" ;;
	esac
	gone "$id" "$dir" "$pid" "$mode"
done
for sig in TERM INT; do
	# Job control on: without it a background job starts with SIGINT
	# ignored, and a shell cannot trap a signal ignored at entry.
	set -m
	child arn-nz wait "$t/$sig" &
	cpid=$!
	set +m
	for i in $(seq 50); do [ -s "$t/$sig" ] && break; sleep 0.1; done
	sleep 0.2
	kill -"$sig" "$cpid"
	wait "$cpid"
	rc=$?
	read -r id dir pid <"$t/$sig"
	[ $rc != 0 ] && ok "SIG$sig: exit $rc" || bad "SIG$sig: exit 0"
	gone "$id" "$dir" "$pid" "SIG$sig"
done

TOPO_ID=arn-nzzzzzzzzzzz
if topo_name abc >/dev/null 2>&1; then bad "a 19-character name was accepted"; else ok "names over 15 characters refused"; fi
[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
