#!/usr/bin/env bash
# Outlier detection end to end (Envoy's consecutive_5xx: lib/http/http_od.c):
# the real binary with two workers, which share each host's consecutive
# count, in front of two hc_upstream.py servers. Host A starts answering
# 503 on /healthz: after 5 in a row (whichever worker saw them) it is
# ejected, /clusters shows /failed_outlier_check, the outlier_detection
# stats count it and all traffic goes to B; after base_ejection_time (3 s)
# it is back, with no request: the interval (1 s) ends the ejection.
# Config: e2e_outlier.yaml. Argument: workers (default 2).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl /usr/bin/python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-od
http_e2e_topo || exit 1
for n in a b; do
	[ $n = a ] && addr=$ua || addr=$ub
	topo_bg "od-$n" ip netns exec "$uns" /usr/bin/python3 "$ARION_SRC/tests/http/hc_upstream.py" "$addr" 8090
	topo_wait_log "$TOPO_DIR/od-$n.log" ready 10 || { echo "hc_upstream.py $n did not start"; exit 1; }
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_outlier.yaml" >"$TOPO_DIR/body.yaml"
if [ "${1:-2}" = 2 ]; then
	export HTTP_E2E_WORKERS="1, 2" ARION_EXTRA="-- --lcores 0@0,1@1,2@1"
fi
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

expect() { # NAME GOT WANT(regex)
	if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi
}
ctl() { # ctl ADDR COMMAND: hc_upstream.py's control port
	ip netns exec "$uns" bash -c 'exec 3<>"/dev/tcp/$1/9090" && echo "$2" >&3 && head -1 <&3' \
		ctl "$1" "$2"
}
flags() { # flags CLUSTER ADDR:PORT: its health_flags in /clusters
	curl -s "http://127.0.0.1:$admin_port/clusters" | grep -F "$1::$2::health_flags::" |
		head -1 | sed 's/.*::health_flags:://'
}
# who N [PATH]: which hosts answered N requests, as "A B others" counts
# (a connection each, so that both workers balance)
who() {
	local i urls=()
	for i in $(seq "$1"); do urls+=("http://$us${2:-/x}"); done
	cc -s -H 'connection: close' -w ' %{http_code}\n' "${urls[@]}" 2>/dev/null |
		awk -v a="hc_upstream $ua 200" -v b="hc_upstream $ub 200" -v n="$1" '
			$0 == a { na++ } $0 == b { nb++ }
			END { printf "%d %d %d\n", na, nb, n - na - nb }'
}
# codes N: the statuses of N requests to /healthz, as "200s 503s"
codes() {
	local i urls=()
	for i in $(seq "$1"); do urls+=("http://$us/healthz"); done
	cc -s -H 'connection: close' -w ' %{http_code}\n' "${urls[@]}" 2>/dev/null |
		awk '$NF == 200 { a++ } $NF == 503 { b++ } END { printf "%d %d\n", a, b }'
}
od() { stat "cluster.odc.outlier_detection.$1"; }

expect "traffic to both hosts" "$(who 8)" "^([1-9]) ([1-9]) 0$"
expect "A healthy" "$(flags odc $ua:8090)" "^healthy$"

# ---- A answers 503: the fifth in a row ejects it, B takes the rest
ctl "$ua" "health 503" >/dev/null
t0=$(date +%s%N)
expect "exactly 5 503s of 20 requests" "$(codes 20)" "^15 5$"
# the ejection's stats, one snapshot read at once: read one by one after
# the checks below, on a loaded machine the last (ejections_active) came
# after base_ejection_time, when the ejection had ended
snap=$(curl -s "http://127.0.0.1:$admin_port/stats")
expect "A ejected: all traffic to B" "$(who 8)" "^0 8 0$"
expect "A /failed_outlier_check" "$(flags odc $ua:8090)" "^/failed_outlier_check$"
expect "B healthy" "$(flags odc $ub:8090)" "^healthy$"
echo "ejected checks done $((($(date +%s%N) - t0) / 1000000)) ms after the first 503"
od() { v=$(grep -E "^cluster\.odc\.outlier_detection\.$1: " <<<"$snap" | awk '{print $2}'); echo "${v:-0}"; }
expect "ejections_enforced_total" "$(od ejections_enforced_total)" "^1$"
expect "ejections_enforced_consecutive_5xx" "$(od ejections_enforced_consecutive_5xx)" "^1$"
expect "ejections_detected_consecutive_5xx" "$(od ejections_detected_consecutive_5xx)" "^1$"
# 503 is a gateway failure: detected, not enforced (Envoy's default 0 %)
expect "ejections_detected_consecutive_gateway_failure" "$(od ejections_detected_consecutive_gateway_failure)" "^1$"
expect "ejections_enforced_consecutive_gateway_failure" "$(od ejections_enforced_consecutive_gateway_failure)" "^0$"
expect "ejections_active 1" "$(od ejections_active)" "^1$"
expect "ejections_overflow 0" "$(od ejections_overflow)" "^0$"

# ---- after base_ejection_time (3 s) A is back with no request: worker 0's
# interval (1 s) ends the ejection, /clusters and the gauge follow
ctl "$ua" "health 200" >/dev/null
ms() { echo $((($(date +%s%N) - t0) / 1000000)); }
od() { stat "cluster.odc.outlier_detection.$1"; }
while [ "$(flags odc $ua:8090)" != healthy ] && [ "$(ms)" -lt 6000 ]; do sleep 0.1; done
back=$(ms)
expect "A healthy again, no request" "$(flags odc $ua:8090)" "^healthy$"
if [ "$back" -ge 3000 ]; then ok "not before base_ejection_time"; else bad "back after $back ms"; fi
echo "A back $back ms after the first 503"
expect "ejections_active 0, no request" "$(od ejections_active)" "^0$"
expect "A back: traffic to both" "$(who 8)" "^([1-9]) ([1-9]) 0$"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
