"""bench/xds's probe: GET PATH through Arion in a keep-alive loop until a body
starts with WANT; prints "ready" before the first request (with a third
argument "warm": after the first answer, so that what follows is timed on
an open connection, not Python's connecting) and "seen <epoch s>" at the
first such response. Any other answer than 200 A/B is counted."""
import http.client
import sys
import time

path, want = sys.argv[1], sys.argv[2]
warm = len(sys.argv) > 3 and sys.argv[3] == "warm"
deadline = time.time() + 120
conn = None
errors = 0
if not warm:
    print("ready", flush=True)
while time.time() < deadline:
    try:
        if conn is None:
            conn = http.client.HTTPConnection("198.18.0.2", 80, timeout=5)
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        t = time.time()
        if warm:
            warm = False
            print("ready", flush=True)
            continue  # the answer before the change, whatever it is
        if r.status != 200:
            errors += 1
        elif body.startswith(want.encode()):
            # the monotonic clock is the control plane's (both CLOCK_MONOTONIC):
            # a step of the wall clock during a run does not shift the times
            print(f"seen {t:.6f} mono {time.monotonic():.6f} errors {errors}", flush=True)
            sys.exit(0)
    except (OSError, http.client.HTTPException):
        errors += 1
        conn = None
        time.sleep(0.001)
print(f"timeout errors {errors}", flush=True)
sys.exit(1)
