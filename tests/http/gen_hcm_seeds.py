#!/usr/bin/env python3
"""Write the seed corpus of fuzz_hcm (tests/http/corpus/hcm/): well-formed
exchanges in the input format that tests/http/fuzz_hcm.c describes.

    tests/http/gen_hcm_seeds.py [DIR]
    tests/http/gen_hcm_seeds.py --decode FILE    # list an input's operations

Check what a seed does with FUZZ_HCM_TRACE=1 build-fuzz/tests/http/fuzz_hcm SEED.
"""
import os
import sys

OPEN, CSEND, CFILL, CFIN, CRST, CWIN, USEND, UFILL, UFIN, URST, UWIN, TIME, SYN, FAIL, CREQ, URESP = range(16)


class Seed:
    def __init__(self, setup=1):
        self.b = bytearray([setup])

    def op(self, code, a=0, *args):
        self.b.append(code | (a << 4))
        self.b.extend(args)
        return self

    def open(self, c=0, port=80):
        return self.op(OPEN, c | {80: 0, 81: 4, 82: 8}[port])

    def config(self, v):
        return self.op(SYN, 4 + v)

    def _send(self, code, who, data, seg):
        data = data.encode() if isinstance(data, str) else data
        for i in range(0, len(data), seg):
            part = data[i:i + seg]
            self.op(code, who, len(part))
            self.b.extend(part)
        return self

    def csend(self, c, data, seg=255):
        return self._send(CSEND, c, data, seg)

    def usend(self, u, data, seg=255):
        return self._send(USEND, u, data, seg)

    def time(self, ms):
        return self.op(TIME, 0, ms if ms < 128 else 127 + ms // 64)


GET = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
OK5 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

seeds = {}

# GET, 200 with content-length; request and response each in two segments
seeds["get_200_cl"] = (Seed().open(0).csend(0, GET, 10).time(5)
                       .usend(0, OK5, 20).time(5).op(CFIN, 0).time(10))

# a chunked POST to the retry route, chunked response
seeds["post_chunked"] = (Seed().open(0)
                         .csend(0, "POST /retry HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
                         .csend(0, "5\r\nhel").csend(0, "lo\r\n3\r\nabc\r\n").csend(0, "0\r\n\r\n")
                         .time(5)
                         .usend(0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwxyz\r\n0\r\n\r\n", 17)
                         .time(5).op(CFIN, 0).time(10))

# keep-alive: two requests on one client connection, one upstream connection
seeds["keepalive_two"] = (Seed().open(0).csend(0, GET).time(2).usend(0, OK5).time(2)
                          .csend(0, "GET /b HTTP/1.1\r\nHost: a\r\n\r\n").time(2).usend(0, OK5)
                          .time(2).op(CFIN, 0).time(10))

# two pipelined requests in one segment
seeds["pipelined"] = (Seed().open(0).csend(0, GET + "GET /c HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                      .usend(0, OK5).time(2).usend(0, OK5).time(5))

# Expect: 100-continue; the body after the interim response
seeds["expect_100"] = (Seed().open(0)
                       .csend(0, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                       .time(5).csend(0, "hello").time(2).usend(0, OK5).time(5))

# the upstream resets in the middle of a response body
seeds["upstream_reset_mid"] = (Seed().open(0).csend(0, GET).time(2)
                               .usend(0, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
                               .time(2).op(URST, 0).time(5))

# the upstream closes before any response: 503 (or a retry)
seeds["upstream_close_early"] = (Seed().open(0).csend(0, GET).time(2).op(UFIN, 0).time(5))

# a direct response, then a redirect on the same connection
seeds["direct_redirect"] = (Seed().open(0).csend(0, "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                            .csend(0, "GET /redir/x?q HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                            .csend(0, "GET /x HTTP/1.1\r\nHost: secure.example\r\n\r\n").time(2)
                            .csend(0, "GET /nohost HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                            .csend(0, "GET /missing HTTP/1.1\r\nHost: a\r\n\r\n").time(5))

# retries: 503 then 429 then 200 on new upstream connections
seeds["retry_5xx"] = (Seed().open(0).csend(0, "GET /retry HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                      .usend(0, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n").time(60)
                      .usend(1, "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n").time(80)
                      .usend(2, OK5).time(5))

# a retried POST whose body is replayed, the first upstream reset
seeds["retry_body_replay"] = (Seed().open(0)
                              .csend(0, "POST /retry HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789")
                              .time(2).op(URST, 0).time(60).usend(1, OK5).time(5))

# per-try timeout and a refused connection
seeds["retry_timeouts"] = (Seed().op(SYN, 1).open(0)
                           .csend(0, "GET /retry HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                           .op(SYN, 0).time(100).time(200).time(250).usend(1, OK5).time(5))

# the route timeout (0.2 s) with a connection: close request
seeds["route_timeout"] = (Seed().open(0).csend(0, "GET /slow HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                          .time(2).time(250).time(10))

# an upstream that never answers the SYN (connect_timeout)
seeds["connect_timeout"] = (Seed().op(SYN, 2).open(0).csend(0, GET).time(127).time(127).time(127))

# a close-delimited response, a 204 and a 304
seeds["resp_kinds"] = (Seed().open(0).csend(0, GET).time(2).usend(0, "HTTP/1.1 204 No Content\r\n\r\n").time(2)
                       .csend(0, GET).time(2).usend(0, "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n")
                       .time(2).csend(0, GET).time(2).usend(0, "HTTP/1.1 200 OK\r\n\r\nuntil-close")
                       .op(UFIN, 0).time(5))

# a websocket upgrade: tunnelled both ways
seeds["upgrade"] = (Seed().open(0)
                    .csend(0, "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                    .time(2).usend(0, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
                    .time(2).csend(0, "ping").time(2).usend(0, "pong").time(2).op(CFIN, 0).time(5))

# a large response to a client whose window closes, then opens
seeds["flow_control"] = (Seed(0).open(0).csend(0, GET).time(2)
                         .usend(0, "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n")
                         .op(CWIN, 0, 4).op(UFILL, 0, 128).op(UFILL, 0, 128).time(50).op(CWIN, 0, 0).time(127)
                         .op(CWIN, 0, 255).time(127).time(127))

# a large upload through a small window toward the upstream
seeds["upload"] = (Seed(0).open(0).csend(0, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 32768\r\n\r\n")
                   .op(UWIN, 0, 8).op(CFILL, 0, 128).time(50).op(UWIN, 0, 255).time(127)
                   .usend(0, OK5).time(5))

# the strict listener: health check, path normalization, XFF, timeouts
seeds["strict"] = (Seed().open(0, 81).csend(0, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                   .csend(0, "GET /a//b/../c HTTP/1.1\r\nHost: a:81\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n")
                   .time(2).usend(0, OK5).time(2).csend(0, "GET /x HTTP/1.1\r\nHo").time(1152))

# a refused connection retried on the strict listener (normalized path)
seeds["strict_retry_refused"] = (Seed().op(SYN, 1).open(0, 81)
                                 .csend(0, "GET /a//b/../c HTTP/1.1\r\nHost: a\r\n\r\n").op(SYN, 0)
                                 .time(60).usend(0, OK5).time(5))

# the circuit breaker of cluster "two" (one connection, one pending)
seeds["breaker"] = (Seed().open(0).open(1).open(2)
                    .csend(0, "GET / HTTP/1.1\r\nHost: a\r\nx-cluster: two\r\n\r\n")
                    .csend(1, "GET / HTTP/1.1\r\nHost: a\r\nx-cluster: two\r\n\r\n")
                    .csend(2, "GET / HTTP/1.1\r\nHost: a\r\nx-cluster: two\r\n\r\n").time(2)
                    .usend(0, OK5).time(2).usend(0, OK5).time(5))

# more requests than request buffers (2): the third waits
seeds["res_wait"] = (Seed().open(0).open(1).open(2).csend(0, GET).csend(1, GET).csend(2, GET).time(2)
                     .usend(0, OK5).time(2).usend(1, OK5).time(2).usend(0, OK5).time(5))

# a client that goes away mid-request and one that sends garbage
seeds["client_abort"] = (Seed().open(0).csend(0, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc")
                         .time(2).op(CRST, 0).open(1).csend(1, "GET / HTTP/1.1\r\nHost a\r\n\r\n").time(5))

# out of mbufs while a response head is written, /healthcheck/fail
seeds["alloc_fail"] = (Seed().op(FAIL, 0, 16).open(0).csend(0, GET).time(2).op(FAIL, 0, 1)
                       .usend(0, OK5).time(2).csend(0, GET).time(2).usend(0, OK5).time(5))

# the "dyn" listener: its endpoint replaced while a request waits, then the
# listener updated (the connection drains) and removed
seeds["config_changes"] = (Seed().open(0, 82).csend(0, GET).time(2).config(1).time(2)
                           .usend(0, OK5).time(2).csend(0, GET).time(2).usend(1, OK5).time(2)
                           .config(4).csend(0, "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                           .open(1, 82).csend(1, "GET /direct HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                           .config(5).open(2, 82).time(5).config(6).config(0).open(3, 82)
                           .csend(3, GET).time(5).config(3).time(2).config(2).usend(2, OK5).time(5))

# request mirroring on the "dyn" listener's /mirror (config 4): a POST whose
# shadows go to "two" and to the cluster X-Mirror names, the main answer
# first, one shadow answering, the other reset; then a client gone mid-body
# (time(0) first: a NUL byte, so that git carries the seed as binary and
# a patch keeps its CRs)
seeds["dyn_mirror"] = (Seed().time(0).config(4).open(0, 82)
                       .csend(0, "POST /mirror HTTP/1.1\r\nHost: a:80\r\nX-Mirror: web\r\n"
                                 "Content-Length: 5\r\n\r\nhello").time(2)
                       .usend(0, OK5).time(2).usend(1, OK5).time(2).op(URST, 2).time(2)
                       .csend(0, "POST /mirror HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\nabc")
                       .time(2).op(CRST, 0).time(10))

# the "dyn" listener's jwt_authn and local_reply_config: a valid token
# (claims to headers, the payload forwarded), a forged one, none with a
# JSON Accept (the 401 through the JSON mapper), then a 404 turned 410
JWT = ("eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiSldUIn0.eyJpc3MiOiJhcmlvbiIsInN1YiI6ImZ1enoi"
       "fQ.1c127hNNJy6zB5EncmjwYK6nIZfH1vm2-Jkl3eUwbpE")
seeds["dyn_jwt_local_reply"] = (Seed().time(0).open(0, 82)
                                .csend(0, "GET /jwt HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
                                          + JWT + "\r\n\r\n").time(2).usend(0, OK5).time(2)
                                .csend(0, "GET /jwt HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer "
                                          + JWT[:-4] + "AAAA\r\n\r\n").time(2)
                                .csend(0, "GET /jwt HTTP/1.1\r\nHost: a\r\nAccept: application/json"
                                          "\r\n\r\n").time(2)
                                .config(4).time(2).open(1, 82)
                                .csend(1, "GET /nothing HTTP/1.1\r\nHost: a\r\nx-lr: 1\r\n\r\n")
                                .time(5))

# the "dyn" listener's fault filter: a delay the client leaves during,
# a delay then an abort, a delay that ends and goes upstream
seeds["dyn_fault"] = (Seed().time(0).open(0, 82).open(1, 82)
                      .csend(0, "GET /f HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 50\r\n\r\n")
                      .time(10).op(CRST, 0)
                      .csend(1, "GET /f HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 20\r\n"
                                "x-envoy-fault-abort-request: 429\r\n\r\n").time(30)
                      .csend(1, "GET /g HTTP/1.1\r\nHost: a\r\nx-envoy-fault-delay-request: 5\r\n\r\n")
                      .time(10).usend(0, OK5).time(5))

# the "dyn" listener with basic_auth first (config 8): alice with a
# jwt_authn token on /jwt (both filters' edits upstream, a forged x-user
# replaced), the route /ba's own user, a wrong user, none
seeds["dyn_basic_auth"] = (Seed().time(0).config(8).open(0, 82)
                           .csend(0, "GET /jwt HTTP/1.1\r\nHost: a\r\nx-basic: Basic YWxpY2U6c2VjcmV0"
                                     "\r\nx-user: forged\r\nAuthorization: Bearer " + JWT + "\r\n\r\n")
                           .time(2).usend(0, OK5).time(2)
                           .csend(0, "GET /ba HTTP/1.1\r\nHost: a\r\nx-basic: Basic Y2Fyb2w6Y2Fyb2wtcHc=\r\n\r\n")
                           .time(2).usend(0, OK5).time(2)
                           .csend(0, "GET /x HTTP/1.1\r\nHost: a\r\nx-basic: Basic Ym9iOmh1bnRlcjI=\r\n\r\n")
                           .time(2).csend(0, "GET / HTTP/1.1\r\nHost: a\r\n\r\n").time(5))
# the "dyn" listener's stateful session (cookie arn-ss under /ss): a
# cookie naming 198.18.0.203:8080 with an expiry, the older form naming
# 198.18.0.204:8080, a host no cluster has, base64 garbage and a value
# past the bound; each answered, most with a new cookie
SS = "GET /ss/a HTTP/1.1\r\nHost: a\r\nCookie: arn-ss=%s\r\n\r\n"
seeds["dyn_session"] = (Seed().time(0).open(0, 82)
                        .csend(0, SS % '"ChExOTguMTguMC4yMDM6ODA4MBAF"').time(2).usend(0, OK5).time(2)
                        .csend(0, SS % "MTk4LjE4LjAuMjA0OjgwODA=").time(2).usend(0, OK5).time(2)
                        .csend(0, SS % "Cg8xMC45OS4wLjE6NjU1MzU=").time(2).usend(0, OK5).time(2)
                        .csend(0, SS % "%%%=").time(2).usend(0, OK5).time(127)
                        .csend(0, SS % ("Q" * 300)).time(2).usend(0, OK5).time(5))
# the "dyn" listener's grpc_web filter: a text call whose base64 comes
# in segments of 3 (quanta straddle them) answered with a frame and
# trailers in segments of 7; a binary call; invalid base64 mid-body; a
# client gone with a quantum unfinished
GW_TEXT = ("POST /gw HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc-web-text\r\n"
           "Accept: application/grpc-web-text\r\nContent-Length: 16\r\n\r\n")
GW_RESP = (b"HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\n"
           b"transfer-encoding: chunked\r\n\r\na\r\n\x00\x00\x00\x00\x05world\r\n"
           b"0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n")
seeds["dyn_grpc_web"] = (Seed().time(0).open(0, 82).open(1, 82)
                         .csend(0, GW_TEXT).time(5).csend(0, "AAAAAAVoZWxsbw==", 3).time(5)
                         .usend(0, GW_RESP, 7).time(5)
                         .csend(1, "POST /gw HTTP/1.1\r\nHost: a\r\n"
                                   "Content-Type: application/grpc-web+proto\r\n"
                                   "Content-Length: 10\r\n\r\n\x00\x00\x00\x00\x05hello").time(5)
                         .usend(1, GW_RESP).time(5)
                         .csend(0, GW_TEXT).time(5).csend(0, "AAAA*AAA").time(5)
                         .csend(1, GW_TEXT).time(5).csend(1, "AAAAAA").time(5).op(CRST, 1)
                         .time(5))

# the "dyn" listener's api_key_auth (on for /ak only, Envoy Gateway's
# shape): a key in a header (Bearer, a forged x-client-id), in the query
# (percent-encoded; the parameter hidden from the path), in a cookie
# (the others kept in one line), bob's (403 there), none (401), and a
# request elsewhere the filter leaves alone
seeds["dyn_api_key"] = (Seed().time(0).open(0, 82)
                        .csend(0, "GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: Bearer k1\r\n"
                                  "x-client-id: forged\r\n\r\n").time(2).usend(0, OK5).time(2)
                        .csend(0, "GET /ak/q?a=1&api%5fkey=%6b1&b HTTP/1.1\r\nHost: a\r\n\r\n")
                        .time(2).usend(0, OK5).time(2)
                        .csend(0, "GET /ak HTTP/1.1\r\nHost: a\r\nCookie: x=1; ak=\"k1\"; y\r\n"
                                  "Cookie: z=2\r\n\r\n").time(2).usend(0, OK5).time(2)
                        .csend(0, "GET /ak HTTP/1.1\r\nHost: a\r\nx-api-key: k2\r\n\r\n").time(2)
                        .csend(0, "GET /ak HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                        .csend(0, "GET /x HTTP/1.1\r\nHost: a\r\nx-api-key: nope\r\n\r\n").time(2)
                        .usend(0, OK5).time(5))

# the "dyn" listener's custom_response (HH_FILTER_CR) behind the route's
# retry on 5xx (one retry, to the next upstream connection): a 502 with
# x-cr: 1 retried, its retry's 502 with a 1 MB body replaced at its head
# ("cr 502"); a chunked 503 with x-cr: 1 cut mid-chunk likewise; a 500
# without it, passed after its retry
CR_GET = "GET /cr HTTP/1.1\r\nHost: a\r\n\r\n"
CR_502 = "HTTP/1.1 502 Bad Gateway\r\nx-cr: 1\r\nContent-Length: 1048576\r\n\r\nxxxx"
CR_503 = ("HTTP/1.1 503 Service Unavailable\r\nx-cr: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
          "10\r\nabc")
CR_500 = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nbad"
seeds["dyn_custom_response"] = (Seed().time(0).open(0, 82)
                                .csend(0, CR_GET).time(2).usend(0, CR_502).time(60)
                                .usend(1, CR_502).time(5)
                                .csend(0, CR_GET).time(2).usend(2, CR_503).time(60)
                                .usend(3, CR_503).time(5)
                                .csend(0, CR_GET).time(2).usend(4, CR_500).time(60)
                                .usend(5, CR_500).time(5))
# the "dyn" listener's buffer filter (on for /buf only, 64 bytes; the
# route retried on a 5xx and mirrored to "two"): a chunked body in pieces
# with an extension and a trailer (upstream: content-length 5), a 503
# that retries it, a body past 64 bytes (413), a content-length past it
# (413 at once; each refused client leaves: the harness's worker has two
# request buffers), and a client that stops mid-body and resets
seeds["dyn_buffer"] = (Seed().time(0).open(0, 82).open(1, 82)
                       .csend(0, "POST /buf HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
                       .time(2).csend(0, "3;e=1\r\nabc\r\n").time(2)
                       .csend(0, "2\r\nde\r\n0\r\nx-t: 1\r\n\r\n").time(2)
                       .usend(0, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                       .time(40).usend(1, OK5).usend(2, OK5).usend(3, OK5).time(5)
                       .csend(1, "POST /buf HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "40\r\n" + "x" * 64 + "\r\n1\r\ny\r\n").time(5)
                       .op(CFIN, 0).op(CFIN, 1).time(5)
                       .open(2, 82).csend(2, "POST /buf HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n")
                       .time(5).op(CFIN, 2).time(5).open(3, 82)
                       .csend(3, "POST /buf HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
                       .time(5).op(CRST, 3).time(5))
# the "dyn" listener's ext_proc (on for /ep only, Envoy Gateway's shape;
# its processor on cluster "two", here over HTTP/1.1): a ProcessingResponse
# whose request_headers set x-user and remove x-drop, split across two
# chunks, then the request upstream; an immediate_response (403 with a
# body; a new processor connection: an HTTP/1.1 stream left before its
# request ended closes its connection); a processor that never answers
# (the 0.3 s message_timeout)
# the "dyn" listener of config 9 (to cluster "web") with the client
# identity fields: a client's x-forwarded-client-cert (FORWARD_ONLY on
# plain text: removed; on a kept list and a fresh one, over two lines),
# x-real-ip trusted (internal 198.18.x: x-envoy-internal) and not an
# address, X-Forwarded-For walked past trusted proxies (an IPv6 one among
# them), all trusted, an element that is none, an IPv6 client (none), 21
# elements over two lines
XR = "GET /ci HTTP/1.1\r\nHost: a\r\n"
seeds["dyn_client_identity"] = (Seed().time(0).config(9).time(2).open(0, 82)
                                .csend(0, XR + "\r\n").time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-client-cert: By=a;URI=b\r\n"
                                       "X-Forwarded-Client-Cert: Hash=00\r\n\r\n").time(2)
                                .usend(0, OK5).time(2)
                                .csend(0, XR + "x-real-ip: 198.18.9.9\r\nx-envoy-retry-on: 5xx\r\n\r\n")
                                .time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-real-ip: 1.2.3.4:80\r\n"
                                       "x-forwarded-for: 203.0.113.5, 198.18.1.1\r\n\r\n")
                                .time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-for: 198.18.1.2,198.18.1.1\r\n"
                                       "x-envoy-internal: true\r\n\r\n").time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-for: 1.1.1.1,,198.18.1.1\r\n\r\n")
                                .time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-for: 2001:db8::9, 203.0.113.7,"
                                       " 2001:db8:0:1::1%2,198.18.1.1\r\n\r\n")
                                .time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-for: 1.1.1.1, fd00::1, 198.18.1.1\r\n\r\n")
                                .time(2).usend(0, OK5).time(2)
                                .csend(0, XR + "x-forwarded-for: " + ",".join("10.0.0.%d" % i for i in range(11))
                                       + "\r\nx-forwarded-for: " + ",".join("10.0.1.%d" % i for i in range(10))
                                       + "\r\n\r\n").time(2).usend(0, OK5).time(5))
def _pb(num, b):
    return bytes([num << 3 | 2, len(b)]) + b
def _grpc(m):
    return b"\0" + len(m).to_bytes(4, "big") + m
EP_MUT = _pb(1, _pb(1, _pb(1, b"x-user") + _pb(3, b"alice")) + b"\x18\x02") + _pb(2, b"x-drop")
EP_CONT = _grpc(_pb(1, _pb(1, _pb(2, EP_MUT))))
EP_IMM = _grpc(_pb(7, _pb(1, b"\x08\x93\x03") + _pb(3, b"no") + _pb(5, b"a b")))
EP_HEAD = "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ntransfer-encoding: chunked\r\n\r\n"
def _chunk(b):
    return ("%x\r\n" % len(b)).encode("latin-1") + b + b"\r\n"
seeds["dyn_ext_proc"] = (Seed().time(0).open(0, 82)
                         .csend(0, "GET /ep/1 HTTP/1.1\r\nHost: a\r\nx-drop: d\r\n\r\n").time(2)
                         .usend(0, EP_HEAD.encode("latin-1") + _chunk(EP_CONT[:7]))
                         .time(1).usend(0, _chunk(EP_CONT[7:])).time(2).usend(1, OK5).time(2)
                         .csend(0, "GET /ep/2 HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                         .usend(2, EP_HEAD.encode("latin-1") + _chunk(EP_IMM)).time(2)
                         .csend(0, "GET /ep/3 HTTP/1.1\r\nHost: a\r\n\r\n").time(127)
                         .time(127).time(127).time(5))

# the "dyn" listener's Lua filter (on for /lua only, Envoy Gateway's
# shape): a request whose headers it copies and removes, a response it
# edits (a header to remove, one to write 100 times: past the stream's
# text), respond() with a status and a bad one (with a bare CR in a value:
# the parser refuses it first), and the instruction bound (x-lua-loop)
seeds["dyn_lua"] = (Seed().time(0).open(0, 82)
                    .csend(0, "GET /lua/1 HTTP/1.1\r\nHost: a\r\nx-lua-in: v1\r\nx-lua-in: v2\r\n"
                              "x-lua-drop: d\r\n\r\n").time(2)
                    .usend(0, "HTTP/1.1 200 OK\r\nx-lua-secret: s\r\nx-lua-big: " + "b" * 60 +
                              "\r\nContent-Length: 5\r\n\r\nhello").time(2)
                    .csend(0, "GET /lua/2 HTTP/1.1\r\nHost: a\r\nx-lua-respond: 418\r\n\r\n").time(2)
                    .csend(0, "GET /lua/3 HTTP/1.1\r\nHost: a\r\nx-lua-loop: 1\r\n\r\n").time(2)
                    .usend(0, OK5).usend(1, OK5).time(2)
                    .open(1, 82).csend(1, "GET /lua/4 HTTP/1.1\r\nHost: a\r\nx-lua-respond: 99\r\n"
                                          "x-lua-in: a\rb\r\n\r\n").time(5))
# the "dyn" listener's HCM tracing (HH_TRACING: random sampling 100 %,
# spans exported to "two"): a request id and a sampled traceparent with
# tracestate, a malformed traceparent (no span), x-client-trace-id and
# x-envoy-force-trace, a decorator operation from the client, one without
# an id; the fifth span starts an export (upstream 5, a trailers-only OK),
# the next ones wait for the 5 s flush, whose export is never answered
# (the 0.3 s timeout)
RID = "x-request-id: 0000270f-0000-4000-8000-000000000000\r\n"
TP = "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n"
def _ot(path, extra):
    return "GET %s HTTP/1.1\r\nHost: a\r\n%s\r\n" % (path, extra)
OT_OK = "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\ngrpc-status: 0\r\ncontent-length: 0\r\n\r\n"
seeds["dyn_tracing"] = (Seed().time(0).open(0, 82)
                        .csend(0, _ot("/t/1", RID + TP + "tracestate: a=1,b=2\r\n")).time(2)
                        .usend(0, OK5).time(2)
                        .csend(0, _ot("/t/2", RID + "traceparent: 00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01\r\n"))
                        .time(2).usend(0, OK5).time(2)
                        .csend(0, _ot("/t/3", RID + "x-client-trace-id: c1\r\nx-envoy-force-trace: 1\r\n"))
                        .time(2).usend(0, OK5).time(2)
                        .csend(0, _ot("/t/4", RID + TP + "x-envoy-decorator-operation: op\r\nx-user: u\r\n"))
                        .time(2).usend(0, OK5).time(2)
                        .csend(0, _ot("/t/5", "")).time(2).usend(0, OK5).time(2)
                        .csend(0, _ot("/t/6", RID + TP)).time(2).usend(0, OK5).time(5)
                        .usend(1, OT_OK).time(5)
                        .csend(0, _ot("/t/7", RID + TP)).time(2).usend(0, OK5).time(127)
                        .time(127).time(127).time(127).time(127).time(127).time(127).time(127)
                        .time(127).time(127).time(127).time(127).time(127).time(127).time(127)
                        .time(127))

# a request header copied by request_headers_to_add that outgrows the
# stream's text (4 KB): refused with 500, never sent without the edit
seeds["edit_overflow"] = (Seed().open(0).csend(0, "GET / HTTP/1.1\r\nHost: a\r\nx-copy-src: ")
                          .op(CFILL, 0, 17).csend(0, "\r\n\r\n").time(5))

# per_try_idle_timeout: the upstream goes quiet after part of a head; the
# retry's upstream answers
seeds["per_try_idle"] = (Seed().open(0).csend(0, "GET /ridle HTTP/1.1\r\nHost: a\r\n\r\n").time(2)
                         .usend(0, "HTTP/1.1 200 OK\r\nCont").time(127).time(127).time(127)
                         .usend(1, OK5).time(5))

# a pass-through health check whose answer is cached (the "dyn" listener)
seeds["healthz_cached"] = (Seed().open(0, 82).csend(0, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
                           .time(2).usend(0, OK5).time(2)
                           .csend(0, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n").time(5))

# canned requests and responses
seeds["canned"] = (Seed().open(0).op(CREQ, 0, 0).time(2).op(URESP, 0, 1).time(2).op(CREQ, 0, 2)
                   .time(2).op(URESP, 0, 0).time(5))


NAMES = ["OPEN", "CSEND", "CFILL", "CFIN", "CRST", "CWIN", "USEND", "UFILL", "UFIN", "URST",
         "UWIN", "TIME", "SYN", "FAIL", "CREQ", "URESP"]


def decode(data):
    """The operations of a fuzz_hcm input, one per line."""
    if not data:
        return []
    out = ["setup buffers=%d mss=%d" % (data[0] & 3, (data[0] >> 2) & 3)]
    i = 1

    def rd():
        nonlocal i
        v = data[i] if i < len(data) else 0
        i += 1
        return v

    while i < len(data):
        b = rd()
        op, a = b & 15, b >> 4
        who = "u%d" % (a & 7) if op in (USEND, UFILL, UFIN, URST, UWIN, URESP) else "c%d" % (a & 3)
        if op == OPEN:
            out.append("OPEN %s port %d" % (who, [80, 81, 82, 80][a >> 2]))
        elif op in (CSEND, USEND):
            n = rd()
            out.append("%s %s %r" % (NAMES[op], who, bytes(data[i:i + n])))
            i += n
        elif op in (CFILL, UFILL):
            out.append("%s %s %d bytes" % (NAMES[op], who, rd() * 256))
        elif op in (CWIN, UWIN):
            out.append("%s %s %d" % (NAMES[op], who, rd() * 257))
        elif op == TIME:
            t = rd()
            out.append("TIME %d ms" % (t if t < 128 else (t - 127) * 64))
        elif op == SYN and a < 4:
            out.append("SYN %s" % ["accept", "refuse", "black hole"][a % 3])
        elif op == SYN:
            out.append("CONFIG %d" % ((a - 4) % 8))
        elif op == FAIL:
            k = rd()
            out.append("FAIL %d allocations%s" % (k & 15, ", toggle healthcheck" if k & 16 else ""))
        elif op == CREQ:
            out.append("CREQ %s #%d" % (who, rd()))
        elif op == URESP:
            out.append("URESP %s #%d" % (who, rd()))
        else:
            out.append("%s %s" % (NAMES[op], who))
    return out


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--decode":
        with open(sys.argv[2], "rb") as f:
            print("\n".join(decode(f.read())))
        return
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "hcm")
    os.makedirs(out, exist_ok=True)
    for name, s in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(s.b))


if __name__ == "__main__":
    main()
