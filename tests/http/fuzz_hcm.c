/*
 * libFuzzer target: the HTTP connection manager and router (lib/http:
 * http_hcm.c, http_upstream.c, http_worker.c) on Arion's real TCP stack
 * (lib/tcp), over the fake lib/net of tests/tcp/tcp_fake_net.h, with a real
 * configuration: a YAML bootstrap loaded through lib/config's store
 * (arn_bootstrap_load_buf, arn_config_apply_static), as `arion` loads one.
 *
 * The harness (hcm_harness.h) plays TCP for every peer: up to 4 downstream
 * clients that connect to the listeners, and the upstream endpoints, which
 * answer the SYNs the stack sends to them. What the fuzzer controls is
 * which bytes each peer sends and in which segments, FIN and RST at any
 * point, each peer's receive window (0 closes it), time, how upstream SYNs
 * are answered, mbuf allocation failures, /healthcheck/fail, and changes
 * of a listener and a cluster through the configuration store.
 *
 * Input format (bytes; reading past the end yields zeros):
 *   byte 0   set-up: bits 0-1 the stack's TCP buffers (rcvbuf/sndbuf:
 *            8K/8K, 64K/64K, 8K/64K, 64K/8K); bits 2-3 the MSS every peer
 *            announces (1460, 536, 100, 48)
 *   then operations, one opcode byte each: op = byte & 15, a = byte >> 4;
 *   c = a & 3 names client c, u = a & 7 the u-th upstream connection in
 *   the order the stack opened them (a missing one: the op does nothing)
 *     0 OPEN c      client c connects to port 80, 81, 82 or 80 (a >> 2)
 *     1 CSEND c N   the next byte N, then N bytes: client c sends them, in
 *                   segments of at most N bytes (as its window allows)
 *     2 CFILL c K   client c sends K * 256 filler bytes ('x')
 *     3 CFIN c      client c sends FIN (after its queued data)
 *     4 CRST c      client c resets
 *     5 CWIN c W    client c's receive window: W * 257 (0: closed)
 *     6 USEND u N   as CSEND, from upstream connection u
 *     7 UFILL u K   as CFILL
 *     8 UFIN u      upstream connection u sends FIN
 *     9 URST u      upstream connection u resets
 *    10 UWIN u W    as CWIN
 *    11 TIME T      the clock advances T ms (T < 128) or (T - 127) * 64 ms
 *    12 SYN         a < 4: how later upstream SYNs are answered (a % 3):
 *                   SYN-ACK, RST (connection refused), nothing (a black
 *                   hole); a >= 4: configuration change a - 4 (hh_config:
 *                   the "dyn" listener and cluster updated or removed)
 *    13 FAIL K      the next K & 15 mbuf allocations of the stack fail;
 *                   K & 16 toggles /healthcheck/fail
 *    14 CREQ c K    client c sends canned request K % N_REQS (segmented as
 *                   CSEND with N = 255)
 *    15 URESP u K   upstream connection u sends canned response K % N_RESPS
 *
 * At the end every peer resets what is still open, the clock runs past the
 * timers that can still fire, what each peer received must parse as
 * HTTP/1.1 (maybe cut short), and the run must leave nothing behind (see
 * hcm_harness.h: connections, request buffers, circuit breaker counts,
 * configuration pins, TCP blocks, mbufs); anything else aborts. The fake
 * net also aborts on output that breaks lib/net's contract, and the peers
 * abort when the stack sends new data beyond the window they advertised.
 *
 * libFuzzer's entropic schedule costs five times the run itself here (a run
 * touches tens of thousands of features): -entropic=0 is added unless the
 * command line sets -entropic.
 *
 * FUZZ_HCM_TRACE=1 in the environment prints what each peer received and a
 * summary (upstream connections opened, responses relayed); FUZZ_HCM_LOG
 * sets the log spec (e.g. "warning,http:debug"); tests/http/gen_hcm_seeds.py
 * --decode lists an input's operations.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hcm_harness.h"

static const char *const reqs[] = {
    "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n",
    "POST /retry HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
    "hello",
    "GET /redir/x HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a\r\nx-cluster: two\r\n\r\n",
    "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    "HEAD / HTTP/1.0\r\n\r\n",
    "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /nohost HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /x HTTP/1.1\r\nHost: secure.example\r\n\r\n",
    "POST /retry HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n",
    "GET /rw/a//b/../c HTTP/1.1\r\nHost: a:81\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n",
    "GET /missing HTTP/1.1\r\nHost: a\r\n\r\n",
    /* the "dyn" listener's CORS and gzip filters (port 82) */
    "GET / HTTP/1.1\r\nHost: a\r\nOrigin: https://o.example\r\nAccept-Encoding: gzip;q=0.5, "
    "br\r\n\r\n",
    "OPTIONS / HTTP/1.1\r\nHost: a\r\nOrigin: https://o.example\r\nAccess-Control-Request-Method: "
    "PUT\r\nAccess-Control-Request-Headers: x-a\r\n\r\n",
    /* the "dyn" listener's jwt_authn on /jwt (a valid token; none, its
     * 401 through local_reply_config's JSON mapper) */
    "GET /jwt HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer " HH_JWT_TOKEN
    "\r\nx-sub: forged\r\n\r\n",
    "GET /jwt/x HTTP/1.1\r\nHost: a\r\nAccept: application/json\r\nx-lr: 1\r\n\r\n",
    /* the "dyn" listener's fault filter: a delay, then an abort */
    "GET /f HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 40\r\n"
    "x-envoy-fault-abort-request: 503\r\n\r\n",
    /* basic_auth (hh_config(8)): alice, with a jwt_authn token on /jwt */
    "GET /jwt HTTP/1.1\r\nHost: a\r\nx-basic: Basic YWxpY2U6c2VjcmV0\r\nx-user: forged\r\n"
    "Authorization: Bearer " HH_JWT_TOKEN "\r\n\r\n",
    /* the "dyn" listener's stateful session: a cookie naming 198.18.0.203:8080 */
    "GET /ss/a HTTP/1.1\r\nHost: a\r\nCookie: arn-ss=\"ChExOTguMTguMC4yMDM6ODA4MBAF\"\r\n\r\n",
    /* the "dyn" listener's grpc_web filter: a text call (its base64 body
     * decoded on the way up, the answer encoded), and one with invalid
     * base64 */
    "POST /gw HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc-web-text\r\n"
    "Accept: application/grpc-web-text\r\nContent-Length: 16\r\n\r\nAAAAAAVoZWxsbw==",
    "POST /gw HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc-web-text\r\n"
    "Transfer-Encoding: chunked\r\n\r\n3\r\nAAA\r\n5\r\nAAV=*\r\n0\r\n\r\n",
    /* the "dyn" listener's csrf filter (shadow mode): an Origin with
     * userinfo and port, an IPv6 one, Referers repeated (joined) */
    "POST /c HTTP/1.1\r\nHost: a:80\r\nOrigin: http://u@a:80/p\r\nContent-Length: 0\r\n\r\n",
    "DELETE /c HTTP/1.1\r\nHost: [::1]:8\r\nOrigin: https://[::1]:8\r\n\r\n",
    "PUT /c HTTP/1.1\r\nHost: a\r\nReferer: http://a/x\r\nReferer: http://b.example/\r\n"
    "Content-Length: 0\r\n\r\n",
    /* the "dyn" listener's api_key_auth on /ak: a key in a header, in the
     * query (percent-encoded, hidden from the path), in a cookie; bob's
     * (not allowed there) */
    "GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: Bearer k1\r\nx-client-id: forged\r\n\r\n",
    "GET /ak/q?a=1&api%5fkey=%6b1&b HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /ak HTTP/1.1\r\nHost: a\r\nCookie: x=1; ak=\"k1\"; y\r\nCookie: z=2\r\n\r\n",
    "GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: k2\r\n\r\n",
    /* the "dyn" listener's buffer filter on /buf (64 bytes): a chunked
     * body with extensions and a trailer (re-framed by its length), one
     * too large by its content-length, an empty chunked one */
    "POST /buf HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n"
    "2\r\nde\r\n0\r\nx-t: 1\r\n\r\n",
    "POST /buf HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n",
    "PUT /buf HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
};
#define N_REQS (sizeof(reqs) / sizeof(reqs[0]))

static const char *const resps[] = {
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 200 OK\r\n\r\nuntil-close",
    "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    /* compressible: text, long enough (the body comes with UFILL) */
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4096\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
    "40\r\n0123456789012345678901234567890123456789012345678901234567890123\r\n0\r\n"
    "grpc-status: 0\r\n\r\n",
};
#define N_RESPS (sizeof(resps) / sizeof(resps[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	hh_fuzz_init(argc, argv);
	return 0;
}

/* ops 14 (CREQ) and 15 (URESP); hh_fuzz_run does the others */
static void own_op(struct hh_rd *r, uint8_t b)
{
	unsigned a = b >> 4, c = a & 3, u = a & 7;
	switch (b & 15) {
	case 14: {
		const char *s = reqs[hh_rd8(r) % N_REQS];
		hh_send(hh_client(c), s, (uint32_t)strlen(s), 255);
		break;
	}
	case 15: {
		const char *s = resps[hh_rd8(r) % N_RESPS];
		hh_send(hh_upstream(u), s, (uint32_t)strlen(s), 255);
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hh_fuzz_run(data, size, own_op);
	return 0;
}
