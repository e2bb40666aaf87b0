#!/usr/bin/env bash
# The buffer filter (envoy.filters.http.buffer) end to end, on the wire: a
# raw upstream in the U namespace records every byte of each request it
# gets (framed by content-length, which it requires: a request with
# transfer-encoding or without a length is recorded as such and answered
# 400) and answers once the request is whole. Through Arion: a chunked
# HTTP/1.1 request sent slowly in pieces (chunk extensions, a trailer)
# reaches the upstream only once whole, with content-length the decoded
# length, no transfer-encoding and exactly those bytes; a content-length
# request as it came; an HTTP/2 upload without content-length (curl -T -)
# with content-length the bytes; a body past a route's bound 413 and not
# forwarded; the filter off on /off streams the chunked body as it comes.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool curl python3 || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-bf
http_e2e_topo || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }

rec="$TOPO_DIR/rec"
mkdir -p "$rec"
# the raw upstream: one file per request (N.req), the bytes as received
cat >"$TOPO_DIR/raw.py" <<'PY'
import os, socket, sys, threading
host, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = [0]
lock = threading.Lock()
def serve(c):
    data = b""
    c.settimeout(10)
    try:
        while b"\r\n\r\n" not in data:
            r = c.recv(65536)
            if not r:
                return
            data += r
        head, _, body = data.partition(b"\r\n\r\n")
        lines = [l.lower() for l in head.split(b"\r\n")[1:]]
        cl = [l for l in lines if l.startswith(b"content-length:")]
        te = [l for l in lines if l.startswith(b"transfer-encoding:")]
        if cl and not te:
            want = int(cl[0].split(b":")[1])
            while len(body) < want:
                r = c.recv(65536)
                if not r:
                    break
                body += r
                data += r
            status = b"200 OK"
        else:
            # not framed by a length: read what comes for a moment
            c.settimeout(1)
            try:
                while True:
                    r = c.recv(65536)
                    if not r:
                        break
                    data += r
            except socket.timeout:
                pass
            status = b"400 Bad Request"
        with lock:
            n[0] += 1
            k = n[0]
        with open(os.path.join(out, "%d.req" % k), "wb") as f:
            f.write(data)
        c.sendall(b"HTTP/1.1 " + status + b"\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
    finally:
        c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port))
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
topo_bg raw ip netns exec "$uns" python3 -u "$TOPO_DIR/raw.py" "$ua" 8080 "$rec"
topo_wait_log "$TOPO_DIR/raw.log" listening 10 || { bad "the raw upstream did not start"; http_e2e_finish; }
grep -v '^#' "$ARION_SRC/tests/http/e2e_buffer.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1

# last N.req as text (CR shown as \r)
last() { ls "$rec" | sort -n | tail -1; }
count() { ls "$rec" | wc -l; }

# 1. a chunked request, slowly, in pieces: nothing upstream before its end
out=$(ip netns exec "$cns" python3 - "$us" "$rec" <<'PY'
import os, sys, time, rawhttp
us, rec = sys.argv[1], sys.argv[2]
s = rawhttp.connect(us, timeout=10)
s.sendall(b"POST /up HTTP/1.1\r\nHost: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n")
time.sleep(0.3)
s.sendall(b"5;name=\"v\"\r\nhello\r\n")
time.sleep(0.3)
s.sendall(b"1\r\n \r\n")
time.sleep(0.3)
early = len(os.listdir(rec))
s.sendall(b"5\r\nworld\r\n0\r\nx-trailer: t\r\n\r\n")
d, _ = rawhttp.read_until_close(s)
print("early=%d" % early)
print(d.split(b"\r\n")[0].decode())
PY
)
expect "chunked: nothing upstream before the last chunk" "$out" "early=0"
expect "chunked: the client's 200" "$out" "HTTP/1.1 200"
f="$rec/$(last)"
expect "chunked: content-length the decoded bytes" "$(tr -d '\r' <"$f" | grep -i '^content-length:')" "^content-length: 11$"
expect "chunked: no transfer-encoding" "$(grep -ic 'transfer-encoding' "$f")" "^0$"
expect "chunked: no trailer" "$(grep -ic 'x-trailer' "$f")" "^0$"
expect "chunked: the body exactly, nothing after it" "$(python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); print(repr(d.split(b"\r\n\r\n",1)[1]))' "$f")" "^b'hello world'$"

# 2. a content-length request as it came
n0=$(count)
cc -o /dev/null -w '%{http_code}' --data-binary 'abcdef' "http://$us/up" >"$TOPO_DIR/o" 2>&1
expect "content-length: 200" "$(cat "$TOPO_DIR/o")" "^200$"
f="$rec/$(last)"
expect "content-length: kept" "$(tr -d '\r' <"$f" | grep -i '^content-length:' | tr A-Z a-z)" "^content-length: 6$"
expect "content-length: the body" "$(python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); print(repr(d.split(b"\r\n\r\n",1)[1]))' "$f")" "^b'abcdef'$"

# 3. HTTP/2, no content-length (curl -T - from a pipe): framed by its length
head -c 200000 /dev/urandom >"$TOPO_DIR/up.bin"
want=$(sha256sum <"$TOPO_DIR/up.bin" | cut -d' ' -f1)
code=$(cat "$TOPO_DIR/up.bin" | cc --http2-prior-knowledge -T - -X POST -o /dev/null -w '%{http_code} %{http_version}' "http://$us/up")
expect "HTTP/2 upload: 200 over HTTP/2" "$code" "^200 2$"
f="$rec/$(last)"
expect "HTTP/2 upload: content-length the bytes" "$(tr -d '\r' <"$f" | grep -ai '^content-length:')" "^content-length: 200000$"
expect "HTTP/2 upload: no transfer-encoding" "$(grep -aic 'transfer-encoding' "$f")" "^0$"
expect "HTTP/2 upload: the body's hash" "$(python3 -c 'import sys,hashlib; d=open(sys.argv[1],"rb").read(); print(hashlib.sha256(d.split(b"\r\n\r\n",1)[1]).hexdigest())' "$f")" "^$want$"

# 4. past /small's 16 bytes: 413, nothing upstream
n0=$(count)
o=$(cc -o /dev/null -w '%{http_code}' -H 'Transfer-Encoding: chunked' --data-binary '01234567890123456789' "http://$us/small")
expect "past the route's bound: 413" "$o" "^413$"
o=$(cc -o /dev/null -w '%{http_code}' --data-binary '01234567890123456789' "http://$us/small")
expect "a content-length past the bound: 413" "$o" "^413$"
expect "past the bound: nothing upstream" "$(count)" "^$n0$"
expect "413s counted" "$(stat http.buf.downstream_rq_too_large)" "^2$"

# 5. the filter off: the chunked body streams as it came
cc -o /dev/null -H 'Transfer-Encoding: chunked' --data-binary 'xyz' "http://$us/off" >/dev/null 2>&1
f="$rec/$(last)"
expect "off: transfer-encoding kept" "$(tr -d '\r' <"$f" | grep -i '^transfer-encoding:' | tr A-Z a-z)" "^transfer-encoding: chunked$"
expect "off: no content-length" "$(grep -aic '^content-length' "$f")" "^0$"

topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
