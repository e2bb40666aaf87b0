#!/usr/bin/env bash
# A certificate rotated over ADS (SDS, issue 18): Secret 'cert' of a TLS
# listener is replaced while a keep-alive TLS connection stays up. That
# connection goes on serving with the certificate it started with (a
# connection keeps its context); a new connection gets the new certificate.
# wrk (keep-alive) and a new connection per request run through the
# rotation without a failure.
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
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key "$cp_dir/ca.key" &&
	openssl req -x509 -new -key "$cp_dir/ca.key" -out "$cp_dir/ca.pem" -subj "/CN=arion test CA" \
		-days 2 2>/dev/null || { echo "openssl failed"; exit 1; }
echo "subjectAltName=DNS:a.test" >"$cp_dir/ext"
for n in 1 2; do
	key "$cp_dir/c$n.key" &&
		openssl req -new -key "$cp_dir/c$n.key" -out "$cp_dir/c$n.csr" -subj "/CN=a.test $n" 2>/dev/null &&
		openssl x509 -req -in "$cp_dir/c$n.csr" -CA "$cp_dir/ca.pem" -CAkey "$cp_dir/ca.key" \
			-CAcreateserial -out "$cp_dir/c$n.pem" -days 2 -extfile "$cp_dir/ext" 2>/dev/null ||
		{ echo "openssl failed"; exit 1; }
done
chmod -R a+rX "$cp_dir"

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
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
