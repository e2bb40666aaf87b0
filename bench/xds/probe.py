"""bench/xds's probe: GET PATH through Arion in a keep-alive loop until a body
starts with WANT; prints "ready" before the first request and "seen <epoch s>"
at the first such response. Any other answer than 200 A/B is counted."""
import http.client
import sys
import time

path, want = sys.argv[1], sys.argv[2]
deadline = time.time() + 120
conn = None
errors = 0
print("ready", flush=True)
while time.time() < deadline:
    try:
        if conn is None:
            conn = http.client.HTTPConnection("198.18.0.2", 80, timeout=5)
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        t = time.time()
        if r.status != 200:
            errors += 1
        elif body.startswith(want.encode()):
            print(f"seen {t:.6f} errors {errors}", flush=True)
            sys.exit(0)
    except (OSError, http.client.HTTPException):
        errors += 1
        conn = None
        time.sleep(0.001)
print(f"timeout errors {errors}", flush=True)
sys.exit(1)
