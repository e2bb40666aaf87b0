#!/usr/bin/env bash
# Crafted segments (scapy) against Arion's echo listener: option
# negotiation, out-of-window data and RSTs, blind RST/SYN (RFC 5961), and a
# SYN flood answered with SYN cookies while a kernel connection keeps
# working (issue 9). The test itself is e2e_scapy.py.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool iptables /usr/bin/python3 || exit 77
/usr/bin/python3 -c "import scapy" 2>/dev/null || {
	echo "needs python3-scapy"
	exit 77
}
. "$ARION_SRC/tests/tcp/e2e_lib.sh"
topo_init arn-ts
tcp_e2e_up 1 || exit 1
# scapy owns source ports 50000-59999: the kernel must neither pick them nor
# reset the connections it does not know about
ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="32768 49999"
# (scapy's own packets leave with TTL 99, the kernel's with 64)
ip netns exec "$ns" iptables -A OUTPUT -p tcp --sport 50000:59999 --tcp-flags RST RST \
	-m ttl --ttl-eq 64 -j DROP || bad "iptables ttl match"
ip netns exec "$ns" $PY "$here/e2e_scapy.py" "$us" 7 "$peer_if" 2>&1 | tee "$TOPO_DIR/scapy.log"
# the script's own status, not tee's: its checks must be able to fail this test
[ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails + 1))
grep -c "^ok" "$TOPO_DIR/scapy.log" | sed 's/^/scapy checks passed: /'
topo_arion_stop TERM || bad "arion exit code $?"
grep "stats tcp worker0" "$log"
[ "$(tcp_stat syn_cookies_sent)" -gt 0 ] && ok "syn_cookies_sent=$(tcp_stat syn_cookies_sent)" || bad "no SYN cookies under the flood"
[ "$(tcp_stat syn_cookies_validated)" -gt 0 ] && ok "syn_cookies_validated=$(tcp_stat syn_cookies_validated)" || bad "no cookie validated"
[ "$(tcp_stat challenge_acks)" -ge 2 ] && ok "challenge_acks=$(tcp_stat challenge_acks)" || bad "challenge_acks=$(tcp_stat challenge_acks)"
tcp_e2e_finish
