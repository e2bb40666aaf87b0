#!/usr/bin/env bash
# External authorization end to end: curl through Arion's
# envoy.filters.http.ext_authz, whose HTTP authorization service is an
# nginx with `return 200` (and a header for the upstream) and `return 401`
# locations, before nginx A (/echo shows what it received): an allowed
# request reaches it with the service's header, a denied one gets the
# service's 401, its WWW-Authenticate and body, and never reaches it; a
# route with the check disabled goes straight on; the counters say so.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-az
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
d="$TOPO_DIR/nginx-authz"
mkdir -p "$d"
chmod 777 "$d"
cat >"$d/nginx.conf" <<NGINX
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 256; }
http {
  access_log $d/access.log;
  client_body_temp_path $d/body;
  proxy_temp_path $d/proxy;
  fastcgi_temp_path $d/fcgi;
  uwsgi_temp_path $d/uwsgi;
  scgi_temp_path $d/scgi;
  server {
    listen $ub:8081;
    location /auth/echo/allow { add_header X-Test "from-authz" always; return 200; }
    location /auth/echo/deny {
      add_header WWW-Authenticate 'Bearer realm="arion"' always;
      return 401 "denied by the service\n";
    }
    location / { return 503; }
  }
}
NGINX
topo_bg nginx-authz ip netns exec "$uns" nginx -c "$d/nginx.conf" -g 'daemon off;'
for i in $(seq 50); do
	ip netns exec "$uns" curl -s -o /dev/null "http://$ub:8081/" && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_authz.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }

h="$TOPO_DIR/h"
body=$(cc -D "$h" http://$us/echo/allow)
expect "allowed: the upstream answers" "$body" "^echo-a /echo/allow"
expect "allowed: the service's header went up" "$(tr -d '\r' <"$h" | grep -i '^x-seen-test:')" "from-authz"
body=$(cc -D "$h" -H "X-Test: client" http://$us/echo/deny)
expect "denied: the body is the service's" "$body" "^denied by the service"
expect "denied: 401" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 401"
expect "denied: WWW-Authenticate" "$(tr -d '\r' <"$h" | grep -i '^www-authenticate:')" 'Bearer realm="arion"'
expect "denied: not the upstream's" "$(tr -d '\r' <"$h" | grep -ci '^x-upstream:')" "^0$"
expect "an error (the service's 503): 403" "$(cc -o /dev/null -w '%{http_code}' http://$us/echo/other)" "^403$"
body=$(cc -D "$h" http://$us/echo/open)
expect "disabled on the route: straight on" "$body" "^echo-a /echo/open"
expect "the upstream never saw the denied request" \
	"$(grep -c '/echo/deny' "$TOPO_DIR/nginx-a/access.log")" "^0$"
expect "ok counted" "$(stat http.az.ext_authz.ok)" "^1$"
expect "denied counted" "$(stat http.az.ext_authz.denied)" "^1$"
expect "error counted" "$(stat http.az.ext_authz.error)" "^1$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
