#!/usr/bin/env bash
# A certificate rotated over ADS (SDS, issue 18): Secret 'cert' of a TLS
# listener is replaced while a keep-alive TLS connection stays up. That
# connection goes on serving with the certificate it started with (a
# connection keeps its context); a new connection gets the new certificate.
# wrk (keep-alive) and a new connection per request run through the
# rotation without a failure.
#
# Then a brand-new TLS listener (:8443) routing to a brand-new cluster with
# an UpstreamTlsContext (a TLS nginx) arrive over ADS while clients
# connect to :8443 continuously: refused while the listener does not
# exist, and from then on every request served; not one handshake or
# request fails while the new contexts are made (issue 18: they exist
# before the generation that names them is visible).
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl node openssl /usr/bin/python3 || exit 77
[ -d "$ARION_SRC/tests/xds/peer/node_modules/@grpc/grpc-js" ] || {
	echo "tests/xds/peer/node_modules missing (scripts/setup-deps --test)"
	exit 77
}
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-ts
http_e2e_topo || exit 1
http_e2e_nginx || exit 1

cp_dir="$TOPO_DIR/cp"
mkdir -p "$cp_dir"
PKI=$cp_dir
pki_ca ca "arion test CA" && pki_leaf c1 ca "a.test 1" "subjectAltName=DNS:a.test" &&
	pki_leaf c2 ca "a.test 2" "subjectAltName=DNS:a.test" || { echo "openssl failed"; exit 1; }
chmod -R a+rX "$cp_dir"

# nginx over TLS on $ua:8443 (certificate c1, a.test), for cluster 'tlsup'
n="$TOPO_DIR/nginx-tls"
mkdir -p "$n"
chmod 777 "$n"
cat >"$n/nginx.conf" <<NGINX
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $n/body;
  proxy_temp_path $n/proxy;
  fastcgi_temp_path $n/fcgi;
  uwsgi_temp_path $n/uwsgi;
  scgi_temp_path $n/scgi;
  server {
    listen $ua:8443 ssl;
    ssl_certificate $cp_dir/c1.pem;
    ssl_certificate_key $cp_dir/c1.key;
    location / { return 200 "tls-upstream\n"; }
  }
}
NGINX
topo_bg nginx-tls ip netns exec "$uns" nginx -c "$n/nginx.conf" -g 'daemon off;'

http_e2e_xds_cp "$ARION_SRC/tests/http/e2e_tls_sds.js" "$cp_dir" || exit 1
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
for i in $(seq 200); do [ -e "$cp_dir/ready" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/ready" ] || { cat "$TOPO_DIR/cp.log"; bad "first configuration not ACKed"; http_e2e_finish; }

# under load through the rotation (issue 18): wrk's keep-alive TLS
# connections, and a new TLS connection per request from curl, none failing
ip netns exec "$cns" wrk -t1 -c4 -d5s "https://$us/" >"$TOPO_DIR/wrk.out" 2>&1 &
wrk_pid=$!
(
	end=$((SECONDS + 5))
	while [ $SECONDS -lt $end ]; do
		c=$(ip netns exec "$cns" curl -sk -o /dev/null -w '%{http_code}' --max-time 5 "https://$us/")
		echo "$c"
	done
) >"$TOPO_DIR/curl-loop.out" 2>&1 &
loop_pid=$!

# one keep-alive connection across the rotation, then a new one
out=$(ip netns exec "$cns" /usr/bin/python3 - "$us" "$cp_dir" <<'PY' 2>&1
import hashlib, os, socket, ssl, sys, time
us, d = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
fp = lambda der: hashlib.sha256(der).hexdigest()[:16]
want = {fp(ssl.PEM_cert_to_DER_cert(open(os.path.join(d, f"c{n}.pem")).read())): f"c{n}" for n in (1, 2)}
def conn():
    for _ in range(50):
        try:
            return ctx.wrap_socket(socket.create_connection((us, 443), timeout=5), server_hostname="a.test")
        except (OSError, ssl.SSLError):
            time.sleep(0.1)
    raise SystemExit("no TLS connection")
def get(s):
    s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, body = buf.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        body += s.recv(4096)
    return head.split(b" ")[1].decode() + ":" + body.decode().strip()
s = conn()
first = want.get(fp(s.getpeercert(True)), "?")
r1 = get(s)
open(os.path.join(d, "go"), "w").close()
for _ in range(200):
    if os.path.exists(os.path.join(d, "rotated")):
        break
    time.sleep(0.05)
time.sleep(0.5)  # the new generation reaches the worker
r2 = get(s)
s2 = conn()
second = want.get(fp(s2.getpeercert(True)), "?")
r3 = get(s2)
print(f"first={first} r1={r1} r2={r2} second={second} r3={r3}")
PY
)
echo "client: $out"
val() { echo "$out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
[ -e "$cp_dir/rotated" ] && ok "Secret 'cert' replaced over ADS and ACKed" ||
	bad "rotation not ACKed: $(cat "$cp_dir/failed" "$TOPO_DIR/cp.log" 2>/dev/null)"
[ "$(val first)" = c1 ] && [ "$(val r1)" = 200:upstream-a ] &&
	ok "before: certificate c1, request served" || bad "before the rotation: $out"
[ "$(val r2)" = 200:upstream-a ] &&
	ok "the keep-alive connection opened before the rotation still serves" ||
	bad "keep-alive connection after the rotation: $out"
[ "$(val second)" = c2 ] && [ "$(val r3)" = 200:upstream-a ] &&
	ok "a new connection gets the new certificate c2" || bad "after the rotation: $out"
wait "$wrk_pid" "$loop_pid"
n=$(awk '/requests in/ {print $1}' "$TOPO_DIR/wrk.out")
if [ "${n:-0}" -gt 0 ] && ! grep -qE "Non-2xx|Socket errors" "$TOPO_DIR/wrk.out"; then
	ok "wrk over TLS through the rotation: $n requests, none failed"
else
	bad "wrk through the rotation: $(cat "$TOPO_DIR/wrk.out")"
fi
total=$(wc -l <"$TOPO_DIR/curl-loop.out")
good=$(grep -c '^200$' "$TOPO_DIR/curl-loop.out")
[ "$total" -gt 5 ] && [ "$good" = "$total" ] &&
	ok "a new TLS connection per request through the rotation: $good of $total served" ||
	bad "new connections through the rotation: $good of $total served"

# ---- a new TLS listener and a new TLS cluster under continuous connections ------------------
ip netns exec "$cns" /usr/bin/python3 - "$us" "$cp_dir" >"$TOPO_DIR/new.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, threading, time
us, d = sys.argv[1], sys.argv[2]
ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
count = {"refused": 0, "ok": 0}
fails = []
lock = threading.Lock()
def one():
    try:
        s = ctx.wrap_socket(socket.create_connection((us, 8443), timeout=5), server_hostname="a.test")
    except ConnectionRefusedError:
        return "refused"
    except (OSError, ssl.SSLError) as e:
        return "handshake: %r" % e
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        buf = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            buf += b
    except (OSError, ssl.SSLError) as e:
        return "request: %r" % e
    finally:
        s.close()
    return "ok" if buf.startswith(b"HTTP/1.1 200") and buf.endswith(b"tls-upstream\n") else "answer: %r" % buf[:80]
def run():
    seen_ok = False
    end = None
    while end is None or time.time() < end:
        r = one()
        with lock:
            if r == "refused" and not seen_ok:
                count["refused"] += 1
            elif r == "ok":
                seen_ok = True
                count["ok"] += 1
            else:
                fails.append(r)
        if end is None and os.path.exists(os.path.join(d, "added")):
            end = time.time() + 2
        if r == "refused":
            time.sleep(0.0005)
th = [threading.Thread(target=run) for _ in range(3)]
open(os.path.join(d, "go2"), "w").close()
for t in th:
    t.start()
for t in th:
    t.join()
print("refused=%d ok=%d failed=%d" % (count["refused"], count["ok"], len(fails)), *fails[:3])
PY
new_pid=$!
for i in $(seq 200); do [ -e "$cp_dir/added" ] || [ -e "$cp_dir/failed" ] && break; sleep 0.1; done
[ -e "$cp_dir/added" ] && ok "new TLS cluster 'tlsup' and listener 'tls2' ACKed" ||
	bad "new TLS cluster and listener not ACKed: $(cat "$cp_dir/failed" 2>/dev/null)"
wait "$new_pid"
out=$(cat "$TOPO_DIR/new.out")
nok=$(echo "$out" | sed -n 's/.*ok=\([0-9]*\).*/\1/p')
case "$out" in
"refused="*" ok="*" failed=0") [ "${nok:-0}" -gt 20 ] &&
	ok "continuous TLS connections while the new listener and cluster arrived: $out" ||
	bad "too few served through the new listener: $out" ;;
*) bad "new TLS listener and cluster under continuous connections: $out" ;;
esac
# the workers' TLS counters reach /stats a moment after the traffic: wait
# up to 3 s for them rather than read once (a 0 that stays is a failure)
for i in $(seq 30); do
	v=$(stat cluster.tlsup.ssl.handshake)
	[ "${v:-0}" -ge 1 ] && break
	sleep 0.1
done
[ "${v:-0}" -ge 1 ] && ok "cluster.tlsup.ssl.handshake = $v" || bad "cluster.tlsup.ssl.handshake = $v"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
