#!/usr/bin/env bash
# OAuth2 / OIDC login end to end: curl through Arion's
# envoy.filters.http.oauth2 (Envoy Gateway's shape, tests/http/e2e_oauth2.yaml)
# before the application, the identity provider's token endpoint and the
# application one node http server (e2e_oauth2_idp.js). curl follows the
# flow by hand, as a browser would: the 302 to the authorization endpoint
# and its nonce cookie; the callback (the IdP's redirect, made here with
# the state from that Location) whose token request the node server
# checks (BASIC_AUTH, the form body) and answers; the cookies it sets
# carried back (-b: they are Secure, which curl keeps only over https) to
# reach nginx with the Bearer; a forged cookie sent to log in again;
# garbage from the token endpoint: 401; signout; the counters.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-oa
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
log="$TOPO_DIR/idp-requests.log"
: >"$log"
chmod 666 "$log"
topo_bg idp ip netns exec "$uns" node "$ARION_SRC/tests/http/e2e_oauth2_idp.js" "$ub" 8082 "$log"
for i in $(seq 50); do
	ip netns exec "$uns" bash -c "exec 3<>/dev/tcp/$ub/8082" 2>/dev/null && break
	sleep 0.1
done
grep -v '^#' "$ARION_SRC/tests/http/e2e_oauth2.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }
h="$TOPO_DIR/h"
hdr() { tr -d '\r' <"$h" | grep -i "^$1:" | head -1 | sed 's/^[^:]*: //'; }
# the Set-Cookie values of $h as one Cookie header (name=value; ...)
jar() { tr -d '\r' <"$h" | grep -i '^set-cookie:' | sed 's/^[^:]*: //; s/;.*//' | paste -sd';' | sed 's/;/; /g'; }
XFP=(-H "x-forwarded-proto: http")

# 1. no cookies: to the authorization endpoint
cc "${XFP[@]}" -D "$h" -o /dev/null "http://$us/echo/page?x=1"
expect "no cookies: 302" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 302"
loc=$(hdr location)
expect "Location: the authorization endpoint, Envoy's parameters" "$loc" \
	'^https://idp\.example/oauth/authorize\?client_id=arion-client&redirect_uri=http%3A%2F%2F198\.18\.2\.2%2Foauth2%2Fcallback&response_type=code&scope=openid%20email&state=url%3Dhttp%253A%252F%252F198\.18\.2\.2%252Fecho%252Fpage%253Fx%253D1%26nonce%3D[0-9a-f]{16}$'
nonce_cookie=$(jar)
expect "the nonce cookie" "$nonce_cookie" '^OauthNonce=[0-9a-f]{16}$'
state=${loc##*state=}
# 2. the IdP sends the browser back with a code: the exchange
cc "${XFP[@]}" -D "$h" -o /dev/null -b "$nonce_cookie" "http://$us/oauth2/callback?code=good&state=$state"
expect "callback: 302" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 302"
expect "callback: back to the page" "$(hdr location)" '^http://198\.18\.2\.2/echo/page\?x=1$'
expect "the token request: BASIC_AUTH" "$(tail -1 "$log")" '"auth":"Basic YXJpb24tY2xpZW50OmNsaWVudC1zM2NyZXQ="'
expect "the token request: the form" "$(tail -1 "$log")" \
	'"body":"grant_type=authorization_code&code=good&redirect_uri=http%3A%2F%2F198.18.2.2%2Foauth2%2Fcallback"'
expect "the token request: Host and path" "$(tail -1 "$log")" '"url":"/oauth/token","host":"idp.example:8082"'
cookies=$(jar)
expect "the cookies" "$cookies" '^OauthHMAC=[A-Za-z0-9+/]{43}=; OauthExpires=[0-9]+; BearerToken=at-[0-9]+; IdToken=e30\.'
expect "the cookies' attributes" "$(tr -d '\r' <"$h" | grep -ci '^set-cookie: .*;path=/;Max-Age=300;secure;HttpOnly$')" '^4$'
token=$(sed 's/.*BearerToken=\([^;]*\).*/\1/' <<<"$cookies")
# 3. logged in: the upstream gets the Bearer
body=$(cc -D "$h" -b "$cookies" -H "Authorization: Basic forged" "http://$us/echo/page?x=1")
expect "logged in: the application answers, with the Bearer" "$body" "^app /echo/page\\?x=1 auth=Bearer $token\$"
# 4. one byte of the HMAC changed: the login again
forged=$(sed 's/OauthHMAC=./OauthHMAC=A/' <<<"$cookies")
[ "$forged" = "$cookies" ] && forged=$(sed 's/OauthHMAC=./OauthHMAC=B/' <<<"$cookies")
cc -D "$h" -o /dev/null -b "$forged" "http://$us/echo/page"
expect "forged HMAC: 302 to the IdP" "$(hdr location)" '^https://idp\.example/'
# 5. the token endpoint answers garbage: 401
cc "${XFP[@]}" -D "$h" -o "$TOPO_DIR/b" -b "$nonce_cookie" "http://$us/oauth2/callback?code=garbage&state=$state"
expect "garbage answer: 401" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 401"
expect "garbage answer: Envoy's body" "$(cat "$TOPO_DIR/b")" '^OAuth flow failed\.$'
# 6. a CSRF: another nonce cookie than the state's
cc "${XFP[@]}" -D "$h" -o /dev/null -b "OauthNonce=0000000000000000" "http://$us/oauth2/callback?code=good&state=$state"
expect "nonce mismatch: 401" "$(head -1 "$h" | tr -d '\r')" "^HTTP/1.1 401"
# 7. the unprotected route, and signout
expect "/open without cookies" "$(cc -o /dev/null -w '%{http_code}' "http://$us/open")" '^(200|404)$'
cc -D "$h" -o /dev/null -b "$cookies" "http://$us/signout"
expect "signout: 302 to /" "$(hdr location)" '^http://198\.18\.2\.2/$'
expect "signout: the cookies deleted" "$(tr -d '\r' <"$h" | grep -c '^set-cookie: .*=deleted; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT$')" '^4$'
expect "oauth_success counted" "$(stat http.oa.oauth2.oauth_success)" "^2$"
expect "oauth_failure counted" "$(stat http.oa.oauth2.oauth_failure)" "^2$"
expect "oauth_unauthorized_rq counted" "$(stat http.oa.oauth2.oauth_unauthorized_rq)" "^2$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
