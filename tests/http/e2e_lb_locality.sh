#!/usr/bin/env bash
# Locality-weighted load balancing end to end: Envoy Gateway's split of a
# rule's traffic among its backendRefs (each in a locality of its own,
# common_lb_config.locality_weighted_lb_config) follows the localities'
# weights, counted by Arion's own per-host counters on /clusters and by the
# nginx that answered; without the option the same endpoints share by host;
# MAGLEV's table follows Envoy's normalized weights.
# Real binary, two nginx in a namespace, curl (e2e_lib.sh).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-lw
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
grep -v '^#' "$ARION_SRC/tests/http/e2e_lb_locality.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

admin="http://127.0.0.1:$admin_port"
# host CLUSTER ADDR:PORT STAT: a per-host value from /clusters
host() { curl -s "$admin/clusters" | grep -F "$1::$2::$3::" | head -1 | awk -F:: '{print $NF}'; }
# split PORT N: "a b", the answers of nginx A and B to N requests (one
# connection per 20 requests: the picks are per request)
split() {
	local port=$1 n=$2 out i urls
	urls=$(for i in $(seq 20); do printf 'http://%s:%s/ ' "$us" "$port"; done)
	out=$(for i in $(seq $((n / 20))); do cc $urls; done)
	echo "$(grep -c upstream-a <<<"$out") $(grep -c upstream-b <<<"$out")"
}
# within GOT WANT TOL
within() { [ "$1" -ge $(($2 - $3)) ] && [ "$1" -le $(($2 + $3)) ]; }

# ---- ROUND_ROBIN, localities 3:1 (one host each): 300 and 100 of 400
set -- $(split 80 400)
within "$1" 300 20 && within "$2" 100 20 && ok "round robin 3:1 by locality ($1:$2)" ||
	bad "round robin 3:1 by locality: a=$1 b=$2"
ra=$(host split_rr "$ua:8080" rq_total) rb=$(host split_rr "$ub:8080" rq_total)
within "${ra:-0}" 300 20 && within "${rb:-0}" 100 20 &&
	ok "/clusters rq_total split_rr 3:1 ($ra:$rb)" || bad "/clusters split_rr: a=$ra b=$rb"

# ---- LEAST_REQUEST, Envoy Gateway's cluster fields, localities 1:3
set -- $(split 81 400)
within "$1" 100 20 && within "$2" 300 20 && ok "least request 1:3 by locality ($1:$2)" ||
	bad "least request 1:3 by locality: a=$1 b=$2"
ra=$(host split_lr "$ua:8080" rq_total) rb=$(host split_lr "$ub:8080" rq_total)
within "${ra:-0}" 100 20 && within "${rb:-0}" 300 20 &&
	ok "/clusters rq_total split_lr 1:3 ($ra:$rb)" || bad "/clusters split_lr: a=$ra b=$rb"

# ---- without the option: the locality weights are not used, 1:1 by host
set -- $(split 82 400)
within "$1" 200 20 && within "$2" 200 20 && ok "no locality weighting: 1:1 by host ($1:$2)" ||
	bad "no locality weighting: a=$1 b=$2"

# ---- MAGLEV, localities 1:3, 400 keys: the table's shares are Envoy's
# normalized weights (1/4, 3/4), each key on one host
urls=$(for i in $(seq 400); do printf 'http://%s:83/?k=key%s ' "$us" "$i"; done)
out=$(cc $urls)
a=$(grep -c upstream-a <<<"$out") b=$(grep -c upstream-b <<<"$out")
within "$a" 100 40 && within "$b" 300 40 && ok "maglev 1:3 by locality ($a:$b)" ||
	bad "maglev 1:3 by locality: a=$a b=$b"
again=$(cc "http://$us:83/?k=key7" "http://$us:83/?k=key7" "http://$us:83/?k=key7" | sort -u | wc -l)
expect_one() { [ "$1" = 1 ] && ok "$2" || bad "$2: $1 different answers"; }
expect_one "$again" "maglev: a key stays on its host"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
