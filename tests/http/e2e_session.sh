#!/usr/bin/env bash
# Stateful sessions end to end (envoy.filters.http.stateful_session): curl
# with a cookie jar through Arion to two nginx balanced round robin. The
# first answer sets the session cookie naming the nginx that answered;
# every request with the jar then goes to that nginx, where requests
# without it go to both. The header form (x-ss) on /h likewise.
# Config: e2e_session.yaml.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-ss
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
grep -v '^#' "$ARION_SRC/tests/http/e2e_session.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
jar="$TOPO_DIR/jar"

# without a session: both nginx (round robin), a cookie each time
seen=$(for i in 1 2 3 4; do cc -s http://$us/; done | sort -u | tr '\n' ' ')
expect "without a session: both upstreams" "$seen" "^upstream-a upstream-b $"
first=$(cc -s -c "$jar" -D "$TOPO_DIR/h1" http://$us/)
expect "the first answer" "$first" "^upstream-[ab]$"
expect "Set-Cookie" "$(tr -d '\r' <"$TOPO_DIR/h1" | grep -i '^set-cookie:')" \
	'^set-cookie: arn-session="[A-Za-z0-9+/=]+"; Max-Age=120; Path=/; HttpOnly$'
# with it: the same nginx every time, no new cookie
seen=$(for i in 1 2 3 4 5 6; do cc -s -b "$jar" http://$us/; done | sort -u | tr '\n' ' ')
expect "with the cookie: one upstream" "$seen" "^$first $"
cc -s -b "$jar" -D "$TOPO_DIR/h2" -o /dev/null http://$us/
expect "no Set-Cookie once it is the host" "$(grep -ic '^set-cookie:' "$TOPO_DIR/h2")" "^0$"
# garbage: balanced, and a new cookie
cc -s -H 'Cookie: arn-session=%%%' -D "$TOPO_DIR/h3" -o /dev/null http://$us/
expect "garbage: a new cookie" "$(grep -ic '^set-cookie: arn-session=' "$TOPO_DIR/h3")" "^1$"

# the header form on /h
cc -s -D "$TOPO_DIR/h4" -o "$TOPO_DIR/b4" http://$us/h
hv=$(tr -d '\r' <"$TOPO_DIR/h4" | sed -n 's/^x-ss: //Ip')
expect "x-ss names the host" "$(echo "$hv" | base64 -d 2>/dev/null)" "^198\.18\.3\.1[01]:8080$"
want=$(cut -d' ' -f1 <"$TOPO_DIR/b4")
seen=$(for i in 1 2 3 4; do cc -s -H "x-ss: $hv" http://$us/h | cut -d' ' -f1; done | sort -u | tr '\n' ' ')
expect "with x-ss: one upstream" "$seen" "^$want $"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
