#!/usr/bin/env bash
# Bulk transfer through Arion's echo listener against Linux's stack, with
# the data verified by SHA-256 both ways (issue 9).
#
#   e2e_transfer.sh SCENARIO BYTES [NFQ_IMPAIR_BINARY]
#
#   clean    nothing in the way
#   loss1    1% of packets dropped each way (iptables statistic in a router
#            namespace between Linux and Arion)
#   loss5    5% dropped each way
#   loss5s2c 5% of Arion's packets dropped (Arion is the sender that
#            recovers; issue 16)
#   loss5c2s 5% of the client's packets dropped (Arion receives, and its
#            ACKs and SACKs drive Linux's recovery)
#   impair   NFQUEUE (nfq_impair): 2-5 ms delay with jitter, 10% reordered,
#            3% duplicated, each way
#   SCENARIO-bbr  the same with Arion's dataplane.tcp.congestion_control:
#            bbr (paced; issue 16)
#   SCENARIO-netem  the same on a path of 10 ms that reorders as tc's netem
#            does: every packet held 5 ms each way (nfq_impair -d 5), except
#            10% of Arion's, sent at once (-e), so they overtake those held
#            (the reordering an outside check with netem makes; docs/tcp.md
#            "Eleventh pass")
#   SCENARIO-netemboth  the same with the client's packets (its ACKs)
#            reordered too, 10% sent at once: a packet and its ACK that
#            both overtake come back in tens of microseconds, which
#            collapses min_RTT (docs/tcp.md, "Twelfth pass"). Arion's
#            D-SACKed share is bounded at 25% there, not 5%: no stack met
#            5% (Linux CUBIC 30%, BBR 37% at 5% loss); before the twelfth
#            pass Arion had 56-62%
#   SCENARIO-vpkt  the same on Arion's own arn_af_packet port, every veth's
#            offloads on: the client's TSO packets reach Arion as super-
#            segments (mbuf chains), and Arion's segments leave as GSO
#            frames; both must be counted (rx_gro, tx_gso)
#   ecn      the client asks for ECN (net.ipv4.tcp_ecn = 1) and nfq_impair
#            marks 1% of the ECN-capable packets CE each way, dropping none:
#            Arion must negotiate, send ECT(0), slow down for the client's
#            ECN-Echoes and echo the marks on the client's data (RFC 3168;
#            issue 16)
#
# Afterwards the counters must show the recovery machinery at work (for the
# impaired scenarios) and nothing left open; under loss, that Arion's
# recovery was not spurious: under 5% of its retransmissions reported back
# as duplicates (DSACK), and, when it receives, that Linux did not resend
# data Arion had received (duplicates under 5% of the segments it lost).
set -u
scen=${1:?scenario}
bytes=${2:?bytes}
cc=
vpkt=
case $scen in
*-vpkt)
	vpkt=1
	scen=${scen%-vpkt}
	export TCP_E2E_PORT=arn_af_packet
	;;
esac
case $scen in
*-bbr)
	cc=bbr
	scen=${scen%-bbr}
	;;
esac
netem=
case $scen in
*-netem)
	netem=1
	scen=${scen%-netem}
	;;
*-netemboth)
	netem=2
	scen=${scen%-netemboth}
	;;
esac
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool iptables /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/tcp/e2e_lib.sh"
topo_init "arn-t${scen:0:1}"
tcp_e2e_up 1 ${cc:+"  tcp: { congestion_control: $cc }"} || exit 1

case $scen in
clean) ;;
loss1 | loss5 | loss5s2c | loss5c2s)
	p=${scen#loss}
	p=0.0${p%%[sc]*}
	# the router's interface towards the client: -o drops what goes to it
	# (Arion's packets), -i what comes from it
	dir=()
	case $scen in
	*s2c) dir=(-o "$(topo_name d)") ;;
	*c2s) dir=(-i "$(topo_name d)") ;;
	esac
	ip netns exec "$rns" iptables -A FORWARD -p tcp "${dir[@]}" -m statistic --mode random \
		--probability "$p" -j DROP || bad "iptables"
	drop_rule=1
	;;
impair)
	impair=${3:-${NFQ_IMPAIR:?give the nfq_impair binary as the third argument}}
	ip netns exec "$rns" iptables -A FORWARD -p tcp -j NFQUEUE --queue-num 7 || bad "iptables"
	topo_bg impair ip netns exec "$rns" "$impair" -q 7 -d 2 -j 3 -r 0.10 -D 0.03 -s $$
	impair_pid=$TOPO_PID
	topo_wait_log "$TOPO_DIR/impair.log" "ready" 10 "$impair_pid" || bad "nfq_impair did not start"
	;;
ecn)
	impair=${3:-${NFQ_IMPAIR:?give the nfq_impair binary as the third argument}}
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_ecn=1 || bad "sysctl tcp_ecn"
	ip netns exec "$ns" nstat -n >/dev/null 2>&1
	ip netns exec "$rns" iptables -A FORWARD -p tcp -j NFQUEUE --queue-num 7 || bad "iptables"
	topo_bg impair ip netns exec "$rns" "$impair" -q 7 -c 0.01 -s $$
	impair_pid=$TOPO_PID
	topo_wait_log "$TOPO_DIR/impair.log" "ready" 10 "$impair_pid" || bad "nfq_impair did not start"
	;;
*)
	echo "unknown scenario $scen"
	exit 2
	;;
esac
if [ -n "$netem" ]; then
	# after the DROP rule: what it drops is never held
	impair=${3:-${NFQ_IMPAIR:?give the nfq_impair binary as the third argument}}
	ip netns exec "$rns" iptables -A FORWARD -p tcp -o "$(topo_name d)" -j NFQUEUE --queue-num 7 &&
		ip netns exec "$rns" iptables -A FORWARD -p tcp ! -o "$(topo_name d)" -j NFQUEUE --queue-num 8 ||
		bad "iptables"
	topo_bg impair ip netns exec "$rns" "$impair" -q 7 -d 5 -r 0.10 -e -s $$
	impair_pid=$TOPO_PID
	both=()
	[ "$netem" = 2 ] && both=(-r 0.10 -e)
	topo_bg impair2 ip netns exec "$rns" "$impair" -q 8 -d 5 "${both[@]}" -s $$
	impair2_pid=$TOPO_PID
	topo_wait_log "$TOPO_DIR/impair.log" "ready" 10 "$impair_pid" &&
		topo_wait_log "$TOPO_DIR/impair2.log" "ready" 10 "$impair2_pid" || bad "nfq_impair did not start"
fi

# With BBR the client runs on Arion's worker CPU (1). Unpinned, on this
# shared machine, one run in five to ten had the client's ACKs stop for
# 1-2 ms while Arion went on sending (the client descheduled: its
# segments wait in its socket's backlog), then resume with ACKs whose
# three SACK blocks (RFC 2018, beside timestamps) could not list every
# block that batch made. RACK calls what was never reported lost, rightly
# from what it was told, and the DSACKs for it made 5-7% of those runs'
# retransmissions (docs/tcp.md, "The BBR test's spurious share"). BBR,
# paced at the measured rate, keeps sending through the stall, so its
# batches are the largest. Pinned to CPU 1, 10 runs of 10 stayed under
# 0.1%: the client runs only when Arion's worker does not.
#
# loss5c2s is pinned for a reason of the same kind. Unpinned, the
# client's segments reach Arion's interface out of the order they left
# the router in (captured on both, in every run: a few segments tens of
# microseconds ahead of a flight). They leave from two CPUs, the
# client's thread and the softirq that Arion's af_packet transmits run
# on the worker's CPU, and each CPU's veth backlog is its own queue.
# Linux's RACK, in recovery with no reordering seen yet, resends the
# flight such a segment's SACK passed; Arion, about 1 ms behind its
# input here, SACKs the originals more than min_rtt after the resends,
# RACK takes the resends as delivered and resends everything sent before
# them that Arion has not reported yet, flight after flight. One run in
# three resent 220-1,250 segments Arion had (over 10% of ~1,950 drops),
# the others 0-155; pinned, 0-1 in 17 runs of 17 (docs/tcp.md, "The
# client's resends in loss5c2s").
#
# loss1, where the client sends under loss too, is pinned for the same
# reason. Unpinned, it failed the resend bound once in 12-16 runs (CI,
# 2026-12-05: 383 segments for 1,512 drops; here 212-324), the others
# 0-67; pinned, 0 in 16 runs of 16. In the capture of one (docs/tcp.md,
# "The client's resends in loss1"), Arion's per-segment ACKs advanced
# the cumulative ACK and a SACK block above it one segment each in turn:
# two runs of the client's segments reached Arion interleaved, although
# the router had sent them in order, and the client resent the run its
# RACK had marked lost from the first of those SACKs, just ACKed. loss5
# is not pinned: its resends (72-257 for ~9,000 drops) are those of the
# dropped ACKs, and pinned they were no fewer (49-286) and the transfer
# a third slower.
pin=()
case $cc/$scen in
bbr/* | */loss1 | */loss5c2s) pin=(taskset -c 1) ;;
esac
out=$(ip netns exec "$ns" "${pin[@]}" $PY "$here/tcp_client.py" bulk "$us" 7 "$bytes" 240 2>&1)
echo "$out" | grep -q "^bulk ok" && ok "$out" || bad "$out"
if [ -n "${drop_rule:-}" ]; then
	ip netns exec "$rns" iptables -L FORWARD -v -n -x | grep -E "DROP" | head -1
	drops=$(ip netns exec "$rns" iptables -L FORWARD -v -n -x | awk '$3 == "DROP" { n += $1 } END { print n + 0 }')
	drop_bytes=$(ip netns exec "$rns" iptables -L FORWARD -v -n -x | awk '$3 == "DROP" { n += $2 } END { print n + 0 }')
fi

if [ -n "$netem" ]; then
	topo_stop "$impair_pid" TERM 10
	topo_stop "$impair2_pid" TERM 10
	cat "$TOPO_DIR/impair.log" "$TOPO_DIR/impair2.log"
	grep -qE "[1-9][0-9]* reordered" "$TOPO_DIR/impair.log" &&
		ok "the link reordered" || bad "nfq_impair did not reorder"
fi
if [ "$scen" = impair ]; then
	topo_stop "$impair_pid" TERM 10
	cat "$TOPO_DIR/impair.log"
	grep -qE "[1-9][0-9]* reordered, [1-9][0-9]* duplicated" "$TOPO_DIR/impair.log" &&
		ok "the link reordered and duplicated" || bad "nfq_impair did not impair"
fi
if [ "$scen" = ecn ]; then
	topo_stop "$impair_pid" TERM 10
	cat "$TOPO_DIR/impair.log"
	grep -qE "[1-9][0-9]* marked CE" "$TOPO_DIR/impair.log" &&
		ok "the link marked CE" || bad "nfq_impair marked nothing: no ECN-capable packets"
	# Linux's sender counts what was delivered with an ECN-Echo: Arion echoed
	ce_acked=$(ip netns exec "$ns" nstat -az TcpExtTCPDeliveredCE 2>/dev/null | awk '$1 == "TcpExtTCPDeliveredCE" { print $2 }')
	[ "${ce_acked:-0}" -gt 0 ] && ok "the client saw ECN-Echo on $ce_acked delivered segments" ||
		bad "the client saw no ECN-Echo from Arion (TcpExtTCPDeliveredCE=${ce_acked:-none})"
fi

topo_arion_stop TERM || bad "arion exit code $?"
grep "stats tcp worker0" "$log"
if [ -n "$vpkt" ]; then
	grep "stats port" "$log"
	port_stat() { grep -E "stats port " "$log" | tail -1 | grep -oE "[ ]$1=[0-9]+" | cut -d= -f2; }
	gro=$(port_stat rx_gro) gso=$(port_stat tx_gso) segs=$(port_stat tx_gso_segments)
	[ "${gro:-0}" -gt 0 ] && ok "super-segments received: rx_gro=$gro" ||
		bad "no super-segment received (rx_gro=${gro:-0}): the client's TSO did not reach Arion whole"
	[ "${gso:-0}" -gt 0 ] && [ "${segs:-0}" -gt $((2 * ${gso:-0})) ] &&
		ok "GSO frames sent: tx_gso=$gso carrying $segs segments" ||
		bad "tx_gso=${gso:-0} tx_gso_segments=${segs:-0}: Arion's segments were not merged"
	[ "$(tcp_stat malformed)" = 0 ] && ok "malformed=0" || bad "malformed=$(tcp_stat malformed)"
fi
[ "$(tcp_stat bytes_received)" -ge "$bytes" ] && ok "bytes_received" || bad "bytes_received=$(tcp_stat bytes_received)"
[ "$(tcp_stat connections_active)" = 0 ] && ok "no connection left" || bad "connections_active=$(tcp_stat connections_active)"
# share A B: does A stay under 5% of B?
under5() { [ $((100 * $1)) -lt $((5 * $2)) ]; }
rtx=$(tcp_stat retransmits) dsack=$(tcp_stat dsack_received) dup=$(tcp_stat duplicate_data)
case $scen in
loss*)
	echo "drops=$drops retransmits=$rtx dsack_received=$dsack duplicate_data=$dup rto_expirations=$(tcp_stat rto_expirations) tail_loss_probes=$(tcp_stat tail_loss_probes) spurious_recoveries_undone=$(tcp_stat spurious_recoveries_undone)"
	;;
esac
case $scen in
loss*c2s) ;;
loss*)
	[ "$rtx" -gt 0 ] && ok "retransmits=$rtx" || bad "no retransmits under loss"
	[ "$(tcp_stat sack_recoveries)" -gt 0 ] && ok "sack_recoveries=$(tcp_stat sack_recoveries)" || bad "no SACK recovery under loss"
	[ "$(tcp_stat rack_marked_lost)" -gt 0 ] && ok "rack_marked_lost=$(tcp_stat rack_marked_lost)" || bad "RACK (RFC 8985) marked nothing lost"
	# With netem's reordering too (-netem): before RACK's grown
	# reordering window was kept while the path reorders, and grown to
	# the lateness a DSACK measured at once, 18-20% of a 20 MiB
	# transfer's retransmissions were D-SACKed here (Linux: 10%).
	# Both ways (-netemboth) the bound is 25% (the header says why).
	spur_max=5
	[ "$netem" = 2 ] && spur_max=25
	[ $((100 * dsack)) -lt $((spur_max * rtx)) ] && ok "spurious: $dsack of $rtx retransmissions D-SACKed" ||
		bad "spurious retransmissions: $dsack of $rtx D-SACKed ($spur_max% or more)"
	# Recovery repairs without the retransmission timer: a retransmission
	# lost again is found by what was sent after it (RACK), which needs
	# something sent after it. On arn_af_packet a repair merged into one
	# GSO frame with its neighbours was lost with them, with nothing after
	# it: 15 to 17 RTOs for 122 to 146 dropped frames at 5% s2c, where
	# Linux had 2 or 3 (bench/tcp/loss_matrix --port arn_af_packet); sent
	# alone (arn_l4.h's ARN_L4_DYNFLAG_REXMIT), 0 to 2.
	rtos=$(tcp_stat rto_expirations)
	under5 "$rtos" "$drops" && ok "timeouts: $rtos RTOs for $drops drops" ||
		bad "recovery fell back on the timer: $rtos RTOs for $drops drops (5% or more)"
	;;
esac
# The client's own sending, reordered (-netemboth), is Linux's RACK at
# work: its resends of what Arion had measure Linux, not Arion's SACKs.
case $scen/$netem in
loss*s2c/* | loss*/2) ;;
loss*)
	[ "$(tcp_stat out_of_order)" -gt 0 ] && ok "out_of_order=$(tcp_stat out_of_order)" || bad "no out-of-order segments under loss"
	# Not every such resend is Arion's fault: a Linux sender's tail loss
	# probe resends its last segment whether or not it was lost (RFC 8985
	# 7.3), and where ACKs are dropped too the SACKs Arion sent never
	# arrive. A receiver whose SACKs lose information makes it resend a
	# large share of what was dropped; 10% of the drops is the bound (a
	# full run once saw 73 for 1457 drops at 1% loss both ways).
	# On arn_af_packet a drop takes a whole GSO frame (about 26 segments
	# on average) and duplicate_data counts received packets, so the same
	# bound is taken in bytes, which neither cut changes.
	if [ -n "$vpkt" ]; then
		dupb=$(tcp_stat duplicate_bytes)
		[ $((100 * dupb)) -lt $((10 * drop_bytes)) ] &&
			ok "the client resent $dupb bytes Arion had ($drop_bytes dropped)" ||
			bad "the client resent $dupb bytes Arion had received ($drop_bytes dropped): its SACKs lost information"
	else
		[ $((100 * dup)) -lt $((10 * drops)) ] && ok "the client resent $dup segments Arion had ($drops dropped)" ||
			bad "the client resent $dup segments Arion had received ($drops dropped): its SACKs lost information"
	fi
	;;
impair)
	[ "$(tcp_stat out_of_order)" -gt 0 ] && ok "out_of_order=$(tcp_stat out_of_order)" || bad "no out-of-order segments"
	[ "$(tcp_stat duplicate_data)" -gt 0 ] && ok "duplicate_data=$(tcp_stat duplicate_data)" || bad "no duplicates seen"
	# every duplicate is reported back (RFC 2883), which is what lets
	# Linux's RACK widen its reordering window and undo
	[ "$(tcp_stat dsack_sent)" -gt 0 ] && ok "dsack_sent=$(tcp_stat dsack_sent)" || bad "no DSACK sent for duplicates"
	echo "paws_dropped=$(tcp_stat paws_dropped) paws_old_acks_accepted=$(tcp_stat paws_old_acks_accepted) spurious_recoveries_undone=$(tcp_stat spurious_recoveries_undone)"
	;;
ecn)
	[ "$(tcp_stat ecn_negotiated)" = 1 ] && ok "ECN negotiated" || bad "ecn_negotiated=$(tcp_stat ecn_negotiated)"
	[ "$(tcp_stat ecn_ce_received)" -gt 0 ] && ok "ecn_ce_received=$(tcp_stat ecn_ce_received)" || bad "no CE reached Arion"
	[ "$(tcp_stat ecn_cwnd_reductions)" -gt 0 ] && ok "ecn_cwnd_reductions=$(tcp_stat ecn_cwnd_reductions)" ||
		bad "Arion never slowed down for an ECN-Echo"
	# marks replace drops: nothing was lost, so nothing may time out
	[ "$(tcp_stat rto_expirations)" = 0 ] && ok "no RTO" || bad "rto_expirations=$(tcp_stat rto_expirations)"
	echo "retransmits=$rtx"
	;;
esac
tcp_e2e_finish
