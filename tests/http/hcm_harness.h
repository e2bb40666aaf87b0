/*
 * The HTTP connection manager on the real TCP stack, for fuzz_hcm.c and
 * test_hcm_tcp.c: lib/http and lib/tcp over the fake lib/net of
 * tests/tcp/tcp_fake_net.h, with a real configuration (a YAML bootstrap
 * through lib/config's store, as `arion` loads one), and a harness that
 * plays TCP for every peer: up to 4 downstream clients that connect to the
 * listeners, and the upstream endpoints, which answer the SYNs the stack
 * sends them.
 *
 * The peers' TCP is deliberately simple: no options but the MSS, in-order
 * delivery, an ACK for every segment, go-back-N after 300 ms without
 * progress, and the stack's advertised window respected. Each peer logs
 * the first PEER_LOG bytes it received. They abort when the stack sends new
 * data beyond the window they advertised; the fake net aborts on output
 * that breaks lib/net's contract.
 *
 * A run: hh_begin() (a fresh TCP and HTTP worker), the peers' actions
 * (hh_open, hh_send, hh_fin, hh_reset, hh_window, hh_advance, hh_syn) and
 * configuration changes (hh_config), then hh_end(): every peer resets what
 * is still open, the clock runs past the timers that can still fire, what
 * each peer received must parse as HTTP/1.1 (hh_check_http), and nothing
 * may be left behind: no HTTP
 * connection, upstream connection, request buffer, body kept for a retry,
 * circuit breaker count or configuration pin, no TCP connection block
 * (but TIME_WAIT), and every mbuf back in the pool; anything else aborts.
 *
 * Header-only (one user per executable), like tcp_fake_net.h.
 */
#ifndef HCM_HARNESS_H
#define HCM_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/fuzz_flags.h"
#include "arn_bootstrap.h"
#include "arn_config.h"
#include "arn_http.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_stats.h"
#include "h1_harness.h"
#include "http_authz.h"
#include "http_rls.h"
#include "http_oauth2.h"
#include "http_ext_proc.h"
#include "http_int.h"
#include "http_shadow.h"
#include "http_upstream.h"
#include "tcp_fake_net.h"
#include "upb/reflection.h"

#define US FAKE_ADDR(0)		/* 198.18.0.1: the stack */
#define CLIENT_ADDR 0xc6120064u /* 198.18.0.100 */
#define N_CLIENTS 4
#define N_UPSTREAMS 8
#define N_PEERS 24
#define PEER_BUF (256u * 1024)
#define PEER_RTO_MS 300
#define PEER_LOG 4096

/* The configuration: two HCM listeners and the routes issue 12 asks for
 * (prefix and header matches, a direct response, a redirect, a retry
 * policy, timeouts), clusters whose endpoints are the harness's peers. */
/* A target whose upstreams speak HTTP/2 (fuzz_uph2.c) defines
 * HH_UPSTREAMS_H2: clusters web and two ask for it, and what upstreams
 * receive is frames (not parsed by hh_check_http). */
#ifdef HH_UPSTREAMS_H2
#define HH_CLUSTER_PROTO "        http2_protocol_options: { max_concurrent_streams: 4 }\n"
#else
#define HH_CLUSTER_PROTO ""
#endif

/* A user may bring its own (bench/http/bench_hcm.c): HH_CONFIG_YAML. */
#ifdef HH_CONFIG_YAML
#define config_yaml HH_CONFIG_YAML
#else
static const char config_yaml[] =
    "envoy_bootstrap:\n"
    "  static_resources:\n"
    "    listeners:\n"
    "      - name: main\n"
    "        address: { socket_address: { address: 0.0.0.0, port_value: 80 } }\n"
    "        per_connection_buffer_limit_bytes: 16384\n"
    "        filter_chains:\n"
    "          - filters:\n"
    "              - name: envoy.filters.network.http_connection_manager\n"
    "                typed_config:\n"
    "                  \"@type\": type.googleapis.com/envoy.extensions.filters.network."
    "http_connection_manager.v3.HttpConnectionManager\n"
    "                  stat_prefix: main\n"
    "                  upgrade_configs: [{ upgrade_type: websocket }]\n"
    "                  access_log:\n"
    "                    - name: envoy.access_loggers.file\n"
    "                      typed_config:\n"
    "                        \"@type\": type.googleapis.com/envoy.extensions.access_loggers."
    "file.v3.FileAccessLog\n"
    "                        path: /dev/null\n"
    "                        log_format:\n"
    "                          text_format_source:\n"
    "                            inline_string: \"%RESPONSE_CODE% %RESPONSE_FLAGS% "
    "%UPSTREAM_REQUEST_ATTEMPT_COUNT% %REQ(:PATH)% %REQ(X-REQUEST-ID)% "
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
    "%UPSTREAM_HOST% %RESPONSE_CODE_DETAILS%\\n\"\n"
    "                  route_config:\n"
    "                    name: main\n"
    "                    virtual_hosts:\n"
    "                      - name: secure\n"
    "                        domains: [\"secure.example\"]\n"
    "                        require_tls: ALL\n"
    "                        routes:\n"
    "                          - match: { prefix: \"/\" }\n"
    "                            route: { cluster: web }\n"
    "                      - name: all\n"
    "                        domains: [\"*\"]\n"
    "                        request_headers_to_add:\n"
    "                          - header: { key: x-via, value: \"%DOWNSTREAM_REMOTE_ADDRESS%\" }\n"
    "                          - header: { key: x-copy, value: \"%REQ(x-copy-src)%\" }\n"
    "                        routes:\n"
    "                          - match: { prefix: \"/direct\" }\n"
    "                            direct_response: { status: 200, body: { inline_string: "
    "\"hello\\n\" } }\n"
    "                          - match: { prefix: \"/redir\" }\n"
    "                            redirect: { host_redirect: \"example.com\", prefix_rewrite: "
    "\"/new\" }\n"
    "                          - match: { prefix: \"/retry\" }\n"
    "                            route:\n"
    "                              cluster: web\n"
    "                              timeout: 3s\n"
    "                              retry_policy:\n"
    "                                retry_on: \"5xx,reset,connect-failure,"
    "retriable-status-codes\"\n"
    "                                retriable_status_codes: [429]\n"
    "                                num_retries: 2\n"
    "                                per_try_timeout: 0.5s\n"
    "                                retry_back_off: { base_interval: 0.01s, max_interval: "
    "0.05s }\n"
    "                          - match: { prefix: \"/ridle\" }\n"
    "                            route:\n"
    "                              cluster: web\n"
    "                              retry_policy: { retry_on: \"reset\", per_try_idle_timeout: "
    "0.3s }\n"
    "                          - match: { prefix: \"/slow\" }\n"
    "                            route: { cluster: web, timeout: 0.2s, idle_timeout: 0.5s }\n"
    "                          - match: { prefix: \"/rw/\" }\n"
    "                            route: { cluster: web, prefix_rewrite: \"/\", "
    "host_rewrite_literal: up.example }\n"
    "                          - match: { prefix: \"/nohost\" }\n"
    "                            route: { cluster: empty }\n"
    "                          - match: { prefix: \"/missing\" }\n"
    "                            route: { cluster: nope }\n"
    "                          - match:\n"
    "                              prefix: \"/\"\n"
    "                              headers: [{ name: x-cluster, string_match: { exact: two } "
    "}]\n"
    "                            route: { cluster: two }\n"
    "                          - match: { prefix: \"/\" }\n"
    "                            route: { cluster: web, timeout: 5s }\n"
    "                  http_filters:\n"
    "                    - name: envoy.filters.http.router\n"
    "                      typed_config: { \"@type\": type.googleapis.com/envoy.extensions."
    "filters.http.router.v3.Router }\n"
    "      - name: strict\n"
    "        address: { socket_address: { address: 0.0.0.0, port_value: 81 } }\n"
    "        filter_chains:\n"
    "          - filters:\n"
    "              - name: envoy.filters.network.http_connection_manager\n"
    "                typed_config:\n"
    "                  \"@type\": type.googleapis.com/envoy.extensions.filters.network."
    "http_connection_manager.v3.HttpConnectionManager\n"
    "                  stat_prefix: strict\n"
    "                  server_name: arion-fuzz\n"
    "                  request_headers_timeout: 1s\n"
    "                  request_timeout: 2s\n"
    "                  stream_idle_timeout: 0.7s\n"
    "                  normalize_path: true\n"
    "                  merge_slashes: true\n"
    "                  strip_any_host_port: true\n"
    "                  use_remote_address: true\n"
    "                  xff_num_trusted_hops: 1\n"
    "                  common_http_protocol_options: { idle_timeout: 1.5s, "
    "max_requests_per_connection: 3 }\n"
    "                  route_config:\n"
    "                    name: strict\n"
    "                    virtual_hosts:\n"
    "                      - name: all\n"
    "                        domains: [\"*\"]\n"
    "                        retry_policy: { retry_on: \"5xx,connect-failure\", num_retries: 1 "
    "}\n"
    "                        routes:\n"
    "                          - match: { prefix: \"/direct\" }\n"
    "                            direct_response: { status: 503 }\n"
    "                          - match: { prefix: \"/\" }\n"
    "                            route: { cluster: two }\n"
    "                  http_filters:\n"
    "                    - name: envoy.filters.http.health_check\n"
    "                      typed_config:\n"
    "                        \"@type\": type.googleapis.com/envoy.extensions.filters.http."
    "health_check.v3.HealthCheck\n"
    "                        pass_through_mode: false\n"
    "                        cluster_min_healthy_percentages: { two: { value: 50 } }\n"
    "                        headers: [{ name: \":path\", string_match: { exact: /healthz } "
    "}]\n"
    "                    - name: envoy.filters.http.router\n"
    "                      typed_config: { \"@type\": type.googleapis.com/envoy.extensions."
    "filters.http.router.v3.Router }\n"
    "    clusters:\n"
    "      - name: web\n"
    "        type: STATIC\n"
    "        connect_timeout: 0.25s\n"
    "        common_http_protocol_options: { idle_timeout: 2s }\n" HH_CLUSTER_PROTO
    "        load_assignment:\n"
    "          cluster_name: web\n"
    "          endpoints:\n"
    "            - lb_endpoints:\n"
    "                - endpoint: { address: { socket_address: { address: 198.18.0.200, "
    "port_value: 8080 } } }\n"
    "      - name: two\n"
    "        type: STATIC\n"
    "        connect_timeout: 0.5s\n"
    "        lb_policy: LEAST_REQUEST\n" HH_CLUSTER_PROTO "        circuit_breakers:\n"
    "          thresholds: [{ max_connections: 1, max_pending_requests: 1, max_requests: 2, "
    "max_retries: 1 }]\n"
    "        load_assignment:\n"
    "          cluster_name: two\n"
    "          endpoints:\n"
    "            - lb_endpoints:\n"
    "                - endpoint: { address: { socket_address: { address: 198.18.0.201, "
    "port_value: 8080 } } }\n"
    "                - endpoint: { address: { socket_address: { address: 198.18.0.202, "
    "port_value: 8080 } } }\n"
    "      - name: empty\n"
    "        type: STATIC\n"
    "        connect_timeout: 1s\n";
#endif

/* ---- the peers' TCP ---------------------------------------------------------------------- */

struct peer {
	bool used, upstream;
	bool sent_head; /* sent "HEAD" or "CONNECT": its responses are not checked */
	bool est;	/* handshake complete */
	bool dead;	/* reset (either way) or fully closed: answers with RST */
	bool black;	/* a black hole: never answers */
	bool fin_queued, fin_sent, fin_acked, fin_in;
	uint32_t addr; /* the peer's */
	uint16_t port;
	uint16_t sport; /* the stack's port */
	uint32_t iss, snd_una, snd_nxt, rcv_nxt;
	uint32_t swnd;	     /* the stack's window */
	uint32_t right_edge; /* highest rcv_nxt + wnd we advertised */
	uint16_t wnd, mss;
	uint64_t progress_us; /* last time snd_una moved or data was sent fresh */
	uint8_t *buf;	      /* bytes from snd_una on */
	uint32_t len;
	uint32_t rx; /* bytes received from the stack */
	char log[PEER_LOG];
	uint32_t log_len;
	/* every byte received, when a test sets cap (cap_max bytes at most) */
	uint8_t *cap;
	uint32_t cap_len, cap_max;
};

static struct arn_lcore *lc = &fake_lc[0];
static struct peer peers[N_PEERS];
static int clients[N_CLIENTS]; /* peer index, or -1 */
static int ups[N_UPSTREAMS];
static unsigned n_ups, n_opened;
static uint8_t syn_policy;
static uint16_t peer_mss = 1460;
static bool ending, trace;
static uint8_t sbuf_pool[N_PEERS][PEER_BUF];
/* What all peers may send in one run: with 48-byte segments, more would
 * make a run of a few hundred bytes of input last seconds. */
#define HH_SEND_BUDGET (1024u * 1024)
static uint32_t hh_budget;

/* counts over the whole process, for FUZZ_HCM_TRACE's summary */
static uint64_t tot_runs, tot_up_conns, tot_up_bytes, tot_resp, tot_client_bytes;

static inline void peer_out(struct peer *p, uint8_t flags, uint32_t seq, const void *d, uint32_t n)
{
	struct fake_opts o = fake_no_opts;
	if (flags & TH_SYN)
		o.mss = p->mss;
	if (flags & TH_ACK) {
		uint32_t re = p->rcv_nxt + p->wnd;
		if ((int32_t)(re - p->right_edge) > 0)
			p->right_edge = re;
	}
	arn_tcp_input(
	    lc, fake_seg(p->addr, US, p->port, p->sport, flags, seq, p->rcv_nxt, p->wnd, &o, d, n));
}

/* Send what the stack's window allows, in segments of at most @p seg bytes;
 * @p probe: one byte even into a closed window (persist). */
static inline void peer_push(struct peer *p, uint32_t seg, bool probe)
{
	if (!p->est || p->dead || p->black)
		return;
	if (seg == 0 || seg > p->mss)
		seg = p->mss;
	for (;;) {
		uint32_t off = p->snd_nxt - p->snd_una;
		if (p->fin_sent && !p->fin_acked)
			off--; /* the FIN's sequence number is not a byte of buf */
		uint32_t left = p->len > off ? p->len - off : 0;
		uint32_t inflight = p->snd_nxt - p->snd_una;
		uint32_t room = p->swnd > inflight ? p->swnd - inflight : 0;
		if (left == 0) {
			if (p->fin_queued && !p->fin_sent) {
				p->fin_sent = true;
				peer_out(p, TH_FIN | TH_ACK, p->snd_nxt, NULL, 0);
				p->snd_nxt++;
			}
			return;
		}
		if (room == 0) {
			if (!probe)
				return;
			room = 1;
		}
		probe = false;
		uint32_t n = left < seg ? left : seg;
		if (n > room)
			n = room;
		peer_out(p, TH_ACK | TH_PSH, p->snd_nxt, p->buf + off, n);
		if (p->snd_nxt == p->snd_una)
			p->progress_us = fake_now_us;
		p->snd_nxt += n;
	}
}

/* Peer @p p (may be NULL: nothing happens) sends @p n bytes of @p d (NULL:
 * filler 'x'), in segments of at most @p seg bytes as the window allows. */
static inline void hh_send(struct peer *p, const void *d, uint32_t n, uint32_t seg)
{
	if (!p || !p->used || p->dead || p->fin_queued)
		return;
	uint32_t k = RTE_MIN(n, PEER_BUF - p->len);
	if (k > hh_budget)
		k = hh_budget;
	hh_budget -= k;
	if (d && (memmem(d, k, "HEAD", 4) || memmem(d, k, "CONNECT", 7)))
		p->sent_head = true;
	if (d)
		memcpy(p->buf + p->len, d, k);
	else
		memset(p->buf + p->len, 'x', k);
	p->len += k;
	peer_push(p, seg, false);
}

/* At the end: a peer that reset may not have been heard (a RST at the
 * wrong sequence number gets a challenge ACK, which an allocation failure
 * may have eaten), so every peer resets again, at the last sequence number
 * the stack acknowledged and at the next one it sent (a stack that still
 * knows the connection accepts one, or challenges and gets a RST back). */
static inline void peer_kill(struct peer *p)
{
	if (!p->used || p->black)
		return;
	p->dead = true;
	peer_out(p, TH_RST | TH_ACK, p->snd_una, NULL, 0);
	peer_out(p, TH_RST | TH_ACK, p->snd_nxt, NULL, 0);
}

/* Peer @p p resets its connection (RST). */
static inline void hh_reset(struct peer *p)
{
	if (!p || !p->used || p->dead)
		return;
	p->dead = true;
	if (!p->black)
		peer_out(p, TH_RST | TH_ACK, p->snd_nxt, NULL, 0);
}

static inline void peer_log(struct peer *p, const uint8_t *d, uint32_t n)
{
	uint32_t k = RTE_MIN(n, PEER_LOG - p->log_len);
	memcpy(p->log + p->log_len, d, k);
	p->log_len += k;
	if (p->cap) {
		k = RTE_MIN(n, p->cap_max - p->cap_len);
		memcpy(p->cap + p->cap_len, d, k);
		p->cap_len += k;
	}
}

static struct peer *peer_new(uint32_t addr, uint16_t port, uint16_t sport, bool upstream)
{
	for (int i = 0; i < N_PEERS; i++) {
		struct peer *p = &peers[i];
		if (p->used)
			continue;
		memset(p, 0, sizeof(*p));
		p->used = true;
		p->upstream = upstream;
		p->addr = addr;
		p->port = port;
		p->sport = sport;
		p->buf = sbuf_pool[i];
		p->wnd = 65535;
		p->mss = peer_mss;
		p->iss =
		    upstream ? 5000000u + 100000u * (uint32_t)i : 1000u + 100000u * (uint32_t)i;
		p->snd_una = p->snd_nxt = p->iss;
		return p;
	}
	return NULL;
}

/* The peer of a 4-tuple: the live one if the tuple was used before. */
static struct peer *peer_find(uint32_t addr, uint16_t port, uint16_t sport)
{
	struct peer *any = NULL;
	for (int i = 0; i < N_PEERS; i++) {
		struct peer *p = &peers[i];
		if (!p->used || p->addr != addr || p->port != port || p->sport != sport)
			continue;
		if (!p->dead)
			return p;
		any = p;
	}
	return any;
}

/* A segment the stack sent to (@p f->dst, @p f->dport). */
static inline void peer_input(const struct fake_out *f)
{
	struct peer *p = peer_find(f->dst, f->dport, f->sport);
	if ((f->flags & (TH_SYN | TH_ACK)) == TH_SYN) {
		/* an upstream connection (or a retransmitted SYN) */
		if (p && !p->dead)
			goto known;
		if (ending || syn_policy == 1 || n_ups >= N_UPSTREAMS ||
		    (p = peer_new(f->dst, f->dport, f->sport, true)) == NULL) {
			struct peer tmp = {.addr = f->dst, .port = f->dport, .sport = f->sport};
			tmp.rcv_nxt = f->seq + 1;
			peer_out(&tmp, TH_RST | TH_ACK, 0, NULL, 0);
			return;
		}
		ups[n_ups++] = (int)(p - peers);
		tot_up_conns++;
		p->black = syn_policy == 2;
		p->rcv_nxt = f->seq + 1;
		p->right_edge = p->rcv_nxt;
		p->swnd = f->wnd;
		if (p->black)
			return;
		peer_out(p, TH_SYN | TH_ACK, p->iss, NULL, 0);
		p->snd_nxt = p->iss + 1;
		p->snd_una = p->iss;
		return;
	}
known:
	if (p == NULL || p->black)
		return;
	if (f->flags & TH_RST) {
		p->dead = true;
		return;
	}
	if (p->dead) {
		/* a closed port: RST to anything but a RST */
		if (f->flags & TH_ACK)
			arn_tcp_input(lc, fake_seg(p->addr, US, p->port, p->sport, TH_RST, f->ack,
						   0, 0, NULL, NULL, 0));
		return;
	}
	if (f->flags & TH_SYN) {
		if (p->upstream) {
			/* a retransmitted SYN: the SYN-ACK again */
			if (p->snd_una == p->iss)
				peer_out(p, TH_SYN | TH_ACK, p->iss, NULL, 0);
			return;
		}
		/* the SYN-ACK to a client */
		if (!(f->flags & TH_ACK) || f->ack != p->iss + 1)
			return;
		if (!p->est) {
			p->est = true;
			p->rcv_nxt = f->seq + 1;
			/* the right edge starts at what is received: from 0,
			 * an ISS that puts rcv_nxt + wnd past 2^31 would
			 * never look later (a signed difference) and leave
			 * it at 0 */
			p->right_edge = p->rcv_nxt;
			p->snd_una = p->snd_nxt = p->iss + 1;
			p->swnd = f->wnd;
		}
		peer_out(p, TH_ACK, p->snd_nxt, NULL, 0);
		peer_push(p, 0, false);
		return;
	}
	if (!(f->flags & TH_ACK))
		return;
	/* the ACK of what we sent */
	if (p->upstream && !p->est && f->ack == p->iss + 1) {
		p->est = true;
		p->snd_una = p->iss + 1;
	}
	if (p->est && (int32_t)(f->ack - p->snd_una) > 0 && (int32_t)(f->ack - p->snd_nxt) <= 0) {
		uint32_t acked = f->ack - p->snd_una;
		if (p->fin_sent && f->ack == p->snd_nxt) {
			p->fin_acked = true;
			acked--;
		}
		acked = RTE_MIN(acked, p->len);
		memmove(p->buf, p->buf + acked, p->len - acked);
		p->len -= acked;
		p->snd_una = f->ack;
		p->progress_us = fake_now_us;
	}
	if (p->est)
		p->swnd = f->wnd;
	/* data and FIN, in order */
	uint32_t seq = f->seq, n = f->len;
	bool fin = f->flags & TH_FIN;
	if (n) {
		/* the stack must never send new data beyond the window we
		 * advertised (one byte more is a window probe) */
		uint32_t end = seq + n;
		if ((int32_t)(end - p->rcv_nxt) > 0 && (int32_t)(end - (p->right_edge + 1)) > 0) {
			fprintf(stderr,
				"hcm_harness: the stack sent [%u, %u) beyond the advertised right "
				"edge %u\n",
				seq, end, p->right_edge);
			abort();
		}
	}
	bool ack = n || fin;
	if ((int32_t)(seq - p->rcv_nxt) <= 0 && (int32_t)(seq + n - p->rcv_nxt) >= 0) {
		uint32_t skip = p->rcv_nxt - seq;
		uint32_t take = RTE_MIN(n - skip, p->wnd);
		if (take) {
			peer_log(p, f->data + skip, take);
			p->rx += take;
			if (p->upstream)
				tot_up_bytes += take;
			else
				tot_client_bytes += take;
			p->rcv_nxt += take;
		}
		if (fin && skip + take == n && !p->fin_in) {
			p->fin_in = true;
			p->rcv_nxt++;
		}
	}
	if (ack)
		peer_out(p, TH_ACK, p->snd_nxt, NULL, 0);
	if (p->fin_in && p->fin_acked)
		p->dead = true; /* both sides closed: the port is closed too */
	else
		peer_push(p, 0, false);
}

/* Run the stack and answer what it sent, until it is quiet. */
static inline void hh_settle(void)
{
	for (int round = 0; round < 256; round++) {
		arn_tcp_worker_poll(lc, fake_now_us);
		if (!fake_pending(lc))
			return;
		static struct fake_out f;
		while (fake_next(lc, &f)) {
			if (f.src != US) {
				fprintf(stderr, "hcm_harness: output from %08x\n", f.src);
				abort();
			}
			peer_input(&f);
		}
	}
}

static inline void hh_peers_timer(void)
{
	for (int i = 0; i < N_PEERS; i++) {
		struct peer *p = &peers[i];
		if (!p->used || !p->est || p->dead || p->black)
			continue;
		bool outstanding = p->snd_nxt != p->snd_una || (p->len && p->swnd == 0);
		if (!outstanding || fake_now_us - p->progress_us < PEER_RTO_MS * 1000u)
			continue;
		/* go back to the oldest unacknowledged byte */
		p->snd_nxt = p->snd_una;
		if (p->fin_sent && !p->fin_acked)
			p->fin_sent = false;
		p->progress_us = fake_now_us;
		peer_push(p, 0, true);
	}
}

/* The clock advances @p ms (in at most 32 steps, the stack polled and the
 * peers answering after each). */
static inline void hh_advance(uint64_t ms)
{
	uint64_t step = ms / 32 ? ms / 32 : 1;
	for (uint64_t t = 0; t < ms; t += step) {
		fake_clock_set(fake_now_us + RTE_MIN(step, ms - t) * 1000);
		hh_settle();
		hh_peers_timer();
		hh_settle();
	}
}

/* Client @p c (0..3), or NULL before hh_open. */
static inline struct peer *hh_client(unsigned c)
{
	return clients[c] >= 0 ? &peers[clients[c]] : NULL;
}

/* The @p u-th upstream connection the stack opened, or NULL. */
static inline struct peer *hh_upstream(unsigned u)
{
	return u < n_ups ? &peers[ups[u]] : NULL;
}

/* Client @p c connects to port @p port (80 main, 81 strict, 82 dyn). */
static inline void hh_open(unsigned c, uint16_t port)
{
	if (hh_client(c))
		return;
	struct peer *p = peer_new(CLIENT_ADDR, (uint16_t)(40000 + n_opened++), port, false);
	if (!p)
		return;
	clients[c] = (int)(p - peers);
	peer_out(p, TH_SYN, p->iss, NULL, 0);
	p->snd_nxt = p->iss + 1;
}

/* Peer @p p's receive window becomes @p w * 257 bytes (0: closed). */
static inline void hh_window(struct peer *p, uint8_t w)
{
	if (!p || p->dead)
		return;
	p->wnd = (uint16_t)(w * 257u);
	if (p->est)
		peer_out(p, TH_ACK, p->snd_nxt, NULL, 0);
}

/* Peer @p p sends FIN after its queued data. */
static inline void hh_fin(struct peer *p)
{
	if (!p || p->dead || p->fin_queued)
		return;
	p->fin_queued = true;
	peer_push(p, 0, false);
}

/* ---- what must hold at the end ------------------------------------------------------------ */

struct pinned {
	const struct arn_cfg_obj *o;
	uint32_t refs;
};
static struct pinned pins[16];
static unsigned n_pins;
static const char *const cluster_names[] = {"web", "two", "empty"};

static inline void pin_note(const void *o)
{
	if (o && n_pins < 16) {
		pins[n_pins].o = o;
		pins[n_pins].refs =
		    __atomic_load_n(&((const struct arn_cfg_obj *)o)->refs, __ATOMIC_RELAXED);
		n_pins++;
	}
}

static struct arn_config_store *store;

/* The control lcore's housekeeping until nothing waits: a retired
 * statistics table (which pins listeners) is freed by the poll after the
 * one that retired it. */
static inline void hh_quiesce(void)
{
	for (int i = 0; i < 3; i++) {
		arn_http_poll();
		arn_config_poll(store);
	}
}

static inline void hh_pins_record(void)
{
	hh_quiesce();
	const struct arn_cfg_gen *g = arn_config_gen(store);
	const char *const lsn[] = {"main", "strict"};
	for (int i = 0; i < 2; i++) {
		const struct arn_cfg_listener *l =
		    arn_cfg_find(g, ARN_CFG_LISTENER, lsn[i], strlen(lsn[i]),
				 arn_cfg_hash(lsn[i], strlen(lsn[i])));
		if (!l) {
			fprintf(stderr, "hcm_harness: listener %s missing\n", lsn[i]);
			exit(1);
		}
		pin_note(l);
		pin_note(arn_cfg_hcm_routes(g, l->chains[0].hcm));
	}
	for (int i = 0; i < 3; i++) {
		struct arn_cfg_ref r = {cluster_names[i], strlen(cluster_names[i]),
					arn_cfg_hash(cluster_names[i], strlen(cluster_names[i]))};
		struct arn_cfg_cluster_view v;
		if (arn_cfg_cluster_resolve(g, &r, &v) != 0) {
			fprintf(stderr, "hcm_harness: cluster %s missing\n", cluster_names[i]);
			exit(1);
		}
		pin_note(v.cluster);
		pin_note(v.endpoints);
	}
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "hcm_harness: left behind: " __VA_ARGS__);                 \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static inline void hh_check_nothing_left(void)
{
	struct arn_tcp_worker *wk = tcp_wk(lc);
	struct http_worker *w = NULL;
	for (int i = 0; i < TCP_LISTENERS_MAX && !w; i++)
		if (wk->lsn[i].used && wk->lsn[i].port == 80)
			w = wk->lsn[i].user;
	CHECK(w, "no HTTP worker behind the listener");
	uint32_t n = 0;
	for (struct http_conn *c = w->conn_free; c; c = c->next)
		n++;
	CHECK(n == w->n_conns, "%u of %u HTTP connections in use", w->n_conns - n, w->n_conns);
	n = 0;
	for (struct http_upconn *u = w->up_free; u; u = u->next)
		n++;
	CHECK(n == w->n_ups, "%u of %u upstream connections in use", w->n_ups - n, w->n_ups);
	n = 0;
	for (struct http_tcpp *t = w->tcpp_free; t; t = *(struct http_tcpp **)(void *)t)
		n++; /* the free list runs through each block's first member */
	CHECK(n == w->n_tcpps, "%u of %u tcp_proxy sessions in use", w->n_tcpps - n, w->n_tcpps);
	n = 0;
	for (struct http_res *r = w->res_free; r; r = r->next)
		n++;
	CHECK(n == w->n_res, "%u of %u request buffers in use", w->n_res - n, w->n_res);
	CHECK(!w->res_wait_head, "a connection waits for a request buffer");
	CHECK(w->rb_segs == 0, "%u mbufs of request bodies kept for retries", w->rb_segs);
	n = http_shadow_free_count(w);
	CHECK(n == HTTP_SHADOW_MAX, "%u of %u shadow slots in use", HTTP_SHADOW_MAX - n,
	      HTTP_SHADOW_MAX);
	n = 0;
	for (char **b = w->big_free; b; b = (char **)*b)
		n++;
	CHECK(n == w->n_big, "%u of %u large scratch buffers in use", w->n_big - n, w->n_big);
	CHECK(http_authz_in_use(w) == 0, "%u ext_authz checks in use", http_authz_in_use(w));
	CHECK(http_rls_in_use(w) == 0, "%u ratelimit calls in use", http_rls_in_use(w));
	CHECK(http_oauth2_in_use(w) == 0, "%u oauth2 exchanges in use", http_oauth2_in_use(w));
	CHECK(http_ext_proc_in_use(w) == 0, "%u ext_proc streams in use", http_ext_proc_in_use(w));
	for (uint32_t i = 0; i < w->pools_cap; i++) {
		struct http_pool *p = &w->pools[i];
		if (!p->used)
			continue;
		CHECK(!p->n_conns && !p->n_active && !p->n_idle && !p->pend_head && !p->n_counted,
		      "pool %.*s: %u connections, %u active, %u idle, %u counted",
		      (int)p->cluster_len, p->cluster, p->n_conns, p->n_active, p->n_idle,
		      p->n_counted);
	}
	for (int i = 0; i < 3; i++) {
		const char *nm = cluster_names[i];
		struct http_cluster_rt *crt =
		    http_rt_cluster(nm, strlen(nm), arn_cfg_hash(nm, strlen(nm)));
		if (!crt)
			continue;
		int64_t rq_active = arn_stats_gauge_value(crt->stats, ARN_CL_upstream_rq_active);
		CHECK(!crt->cx_active && !rq_active && !crt->rq_pending && !crt->retries_active,
		      "cluster %s: cx_active %d upstream_rq_active %lld rq_pending %d "
		      "retries_active %d",
		      nm, crt->cx_active, (long long)rq_active, crt->rq_pending,
		      crt->retries_active);
	}
	for (unsigned i = 0; i < n_pins; i++) {
		/* the worker's own: the listener versions it listens for and
		 * those whose drain has not ended (http_worker.h) */
		uint32_t own = 0;
		for (int j = 0; j < HTTP_LISTENERS_MAX; j++)
			own += w->lsn[j].l == (const void *)pins[i].o;
		for (int j = 0; j < HTTP_DRAINS_MAX; j++)
			own += w->drains[j].l == (const void *)pins[i].o;
		CHECK(pins[i].o->refs == pins[i].refs + own,
		      "configuration object %.*s: %u pins, was %u (+%u the worker's)",
		      (int)pins[i].o->name_len, pins[i].o->name ? pins[i].o->name : "",
		      pins[i].o->refs, pins[i].refs, own);
	}
	/* TIME_WAIT outlives RSTs (RFC 1337): those blocks may stay */
	uint32_t tw = 0;
	for (uint32_t i = 0; i < wk->max_conns; i++)
		tw += !(wk->conns[i].flags & TF_FREE) && wk->conns[i].state == TCPS_TIME_WAIT;
	CHECK(wk->n_free + tw == wk->max_conns, "%u TCP connection blocks in use",
	      wk->max_conns - wk->n_free - tw);
}

/* What a peer received must be HTTP/1.1 as Arion's own parser reads it:
 * requests upstream, responses downstream, each maybe cut short (a reset,
 * or the end of the log), never malformed or out of step with its framing
 * (a body longer or shorter than announced shows as the next message's
 * garbage). Not checked: responses to HEAD or CONNECT (the parser would
 * need each request's method) and what follows a 101. */
/* set by a target whose clients speak HTTP/2 (fuzz_h2.c): what they
 * receive is frames, not HTTP/1.1 text, and is not parsed here */
static bool hh_clients_h2;

static inline void hh_check_http(const struct peer *p)
{
	if (!p->used || !p->log_len || p->sent_head)
		return;
	if (!p->upstream && hh_clients_h2)
		return;
#ifdef HH_UPSTREAMS_H2
	if (p->upstream)
		return;
#endif
	if (!p->upstream && memmem(p->log, p->log_len, "HTTP/1.1 101", 12))
		return;
	struct h1t_opts o = {.kind = p->upstream ? ARN_H1_REQUEST : ARN_H1_RESPONSE,
			     .alloc = H1T_MALLOC};
	/* an upstream_proxy_protocol cluster's PROXY header comes first */
	size_t skip = 0;
	struct arn_pp pp;
	arn_pp_init(&pp);
	ssize_t ph = p->upstream ? arn_pp_parse(&pp, p->log, p->log_len) : -1;
	if (ph > 0)
		skip = (size_t)ph;
	char *t = h1t_run(p->log + skip, p->log_len - skip, NULL, 0, &o);
	/* the end of the input ends a message cut short: that one is fine */
	size_t tl = t ? strlen(t) : 0;
	if (tl >= 14 && strcmp(t + tl - 14, "ERR TRUNCATED\n") == 0)
		t[tl -= 14] = 0;
	/* the harness's own lines start a line (body bytes are escaped) */
	if (t && (!strncmp(t, "ERR ", 4) || strstr(t, "\nERR ") || !strncmp(t, "HARNESS:", 8) ||
		  strstr(t, "\nHARNESS:"))) {
		fprintf(stderr,
			"hcm_harness: %s %u.%u.%u.%u:%u received malformed HTTP:\n...%s\n--- "
			"bytes:\n%.*s\n",
			p->upstream ? "upstream" : "client", p->addr >> 24, (p->addr >> 16) & 255,
			(p->addr >> 8) & 255, p->addr & 255, p->port, t + (tl > 600 ? tl - 600 : 0),
			(int)p->log_len, p->log);
		abort();
	}
	free(t);
}

static inline void hh_trace_run(void)
{
	for (int i = 0; i < N_PEERS; i++) {
		struct peer *p = &peers[i];
		if (!p->used)
			continue;
		fprintf(stderr, "--- %s %u.%u.%u.%u:%u (stack port %u): %u bytes received\n",
			p->upstream ? "upstream" : "client", p->addr >> 24, (p->addr >> 16) & 255,
			(p->addr >> 8) & 255, p->addr & 255, p->port, p->sport, p->rx);
		fwrite(p->log, 1, p->log_len, stderr);
		fputc('\n', stderr);
	}
}

/* ---- configuration changes under traffic ------------------------------------------------ */

/*
 * A listener "dyn" on port 82 and a cluster "dyn" come over the xDS side of
 * the store (arn_config_apply, as the xDS client applies them), so that a
 * run can change them while requests are in flight: new generations reach
 * the worker at its next poll (listeners opened and closed, pools of
 * removed endpoints draining, updated listeners draining their
 * connections). It generates no x-request-id, so that a keep-alive
 * connection's request edits can be kept (http_router.c's edits_kept)
 * and the fuzzers reach that path; ports 80 and 81 generate them.
 */
/* The "dyn" listener's jwt_authn key (an HS256 secret: test data; the
 * token fuzz_hcm's canned request carries is HH_JWT_TOKEN) */
#define HH_JWT_K "YXJpb24tZnV6ei1oY20tc2VjcmV0LTAxMjM0NTY3ODk"
#define HH_JWT_TOKEN                                                                               \
	"eyJhbGciOiJIUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiSldUIn0.eyJpc3MiOiJhcmlvbiIsInN1YiI6ImZ1enoi"   \
	"fQ.1c127hNNJy6zB5EncmjwYK6nIZfH1vm2-Jkl3eUwbpE"
/* envoy.filters.http.stateful_session "ss": a cookie arn-ss under /ss */
/* clang-format off */
#define HH_SS_AT(t)                                                                                \
	"\"@type\":\"type.googleapis.com/envoy.extensions." t "\""
#define HH_SS_COOKIE                                                                               \
	"\"session_state\":{\"name\":\"c\",\"typed_config\":{"                                    \
	HH_SS_AT("http.stateful_session.cookie.v3.CookieBasedSessionState")                         \
	",\"cookie\":{\"name\":\"arn-ss\",\"ttl\":\"60s\",\"path\":\"/ss\"}}}"
#define HH_FILTER_SS                                                                               \
	"{\"name\":\"ss\",\"typed_config\":{"                                                       \
	HH_SS_AT("filters.http.stateful_session.v3.StatefulSession") "," HH_SS_COOKIE "}},"
/* envoy.filters.http.api_key_auth "ak" as Envoy Gateway writes it:
 * disabled, on for the route /ak (HH_ROUTE_AUTHZ) by its
 * ApiKeyAuthPerRoute (alice only); keys k1 (alice), k2 (bob) from the
 * header x-api-key, the query's api_key or the cookie ak; the client in
 * x-client-id, the key hidden. */
#define HH_FILTER_AK                                                                               \
	"{\"name\":\"ak\",\"disabled\":true,\"typed_config\":{\"@type\":\"type.googleapis.com/"     \
	"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth\",\"credentials\":[{\"key\":"    \
	"\"k1\",\"client\":\"alice\"},{\"key\":\"k2\",\"client\":\"bob\"}],\"key_sources\":[{"   \
	"\"header\":\"x-api-key\"},{\"query\":\"api_key\"},{\"cookie\":\"ak\"}],\"forwarding\":{"  \
	"\"header\":\"x-client-id\",\"hide_credentials\":true}}},"
/* envoy.filters.http.custom_response "cr": an upstream 5xx with x-cr: 1
 * becomes a 503 whose body_format says the replaced status (the seed
 * dyn_custom_response); no other response is touched */
#define HH_FILTER_CR                                                                               \
	"{\"name\":\"cr\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."      \
	"filters.http.custom_response.v3.CustomResponse\",\"custom_response_matcher\":{"            \
	"\"matcher_list\":{\"matchers\":[{\"predicate\":{\"and_matcher\":{\"predicate\":["        \
	"{\"single_predicate\":{\"input\":{\"name\":\"c\",\"typed_config\":{\"@type\":"          \
	"\"type.googleapis.com/envoy.type.matcher.v3.HttpResponseStatusCodeClassMatchInput\"}},"   \
	"\"value_match\":{\"exact\":\"5xx\"}}},{\"single_predicate\":{\"input\":{\"name\":\"h\","  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.type.matcher.v3."                  \
	"HttpResponseHeaderMatchInput\",\"header_name\":\"x-cr\"}},\"value_match\":{\"exact\":"    \
	"\"1\"}}}]}},\"on_match\":{\"action\":{\"name\":\"a\",\"typed_config\":{\"@type\":"       \
	"\"type.googleapis.com/envoy.extensions.http.custom_response.local_response_policy.v3."    \
	"LocalResponsePolicy\",\"status_code\":503,\"body\":{\"inline_string\":\"cr\"},"           \
	"\"body_format\":{\"text_format\":\"%%LOCAL_REPLY_BODY%% %%RESPONSE_CODE%%\"},"            \
	"\"response_headers_to_add\":[{\"header\":{\"key\":\"x-cr-replaced\",\"value\":\"1\"}}]}}}}]}}}},"
/* envoy.filters.http.buffer "buf" as Envoy Gateway writes it: disabled,
 * on for the route /buf (HH_ROUTE_AUTHZ) by its BufferPerRoute (64
 * bytes; the route retried and mirrored: one kept body for all) */
#define HH_FILTER_BUF                                                                              \
	"{\"name\":\"buf\",\"disabled\":true,\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.buffer.v3.Buffer\",\"max_request_bytes\":1048576}},"
/* envoy.filters.http.ext_proc "ep" (Envoy Gateway's pattern): disabled,
 * on for the route /ep (HH_ROUTE_AUTHZ) by its ExtProcPerRoute (one more
 * metadata header); the request's headers to a processor on cluster
 * "two", 0.3 s for its answer. */
#define HH_FILTER_EP                                                                               \
	"{\"name\":\"ep\",\"disabled\":true,\"typed_config\":{\"@type\":\"type.googleapis.com/"     \
	"envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor\",\"grpc_service\":{"         \
	"\"envoy_grpc\":{\"cluster_name\":\"two\"}},\"message_timeout\":\"0.3s\","              \
	"\"processing_mode\":{\"response_header_mode\":\"SKIP\"}}},"
/* envoy.filters.http.lua "lua" (Envoy Gateway's pattern): disabled, on
 * for the route /lua (HH_ROUTE_AUTHZ) by its LuaPerRoute naming "l"; the
 * script reads every header (pairs, get, getNumValues, getAtIndex), copies
 * x-lua-in (a client's value: CR, LF or NUL is a script error), removes
 * x-lua-drop, answers with x-lua-respond's status (respond()), loops on
 * x-lua-loop (the instruction bound); on the response it reads :status,
 * removes x-lua-secret and writes x-lua-big 100 times (the stream's text
 * bound) */
#define HH_FILTER_LUA                                                                              \
	"{\"name\":\"lua\",\"disabled\":true,\"typed_config\":{\"@type\":\"type.googleapis.com/"    \
	"envoy.extensions.filters.http.lua.v3.Lua\",\"source_codes\":{\"l\":{\"inline_string\":"     \
	"\"function envoy_on_request(h) local hd = h:headers() local n = 0 "                         \
	"for k, v in pairs(hd) do n = n + #k + #v end local a = hd:get('x-lua-in') "                \
	"if a then hd:add('x-lua-out', a) hd:replace('x-lua-len', tostring(#a)) end "               \
	"hd:remove('x-lua-drop') hd:add('x-lua-n', n .. ' ' .. hd:getNumValues('x-lua-in') .. "     \
	"' ' .. tostring(hd:getAtIndex('x-lua-in', 1))) local r = hd:get('x-lua-respond') "          \
	"if r then h:respond({[':status'] = r, ['x-lua'] = a or ''}, hd:get(':path')) end "          \
	"if hd:get('x-lua-loop') then while true do end end end "                                   \
	"function envoy_on_response(h) local hd = h:headers() "                                     \
	"hd:add('x-lua-status', hd:get(':status')) hd:remove('x-lua-secret') "                      \
	"local b = hd:get('x-lua-big') if b then hd:add('x-lua-big2', string.rep(b, 100)) end end"  \
	"\"}}}},"
/* HCM tracing (http_otel.c), random_sampling 100 %: the request's
 * x-request-id (none generated here) decides, its traceparent continues;
 * spans exported to "two" (over HTTP/1.1 here: a failed export) */
#define HH_TRACING                                                                                 \
	"\"tracing\":{\"custom_tags\":[{\"tag\":\"u\",\"request_header\":{\"name\":\"x-user\"}}],"  \
	"\"provider\":{\"name\":\"envoy.tracers.opentelemetry\",\"typed_config\":{\"@type\":"        \
	"\"type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig\",\"grpc_service\":{"     \
	"\"envoy_grpc\":{\"cluster_name\":\"two\"},\"timeout\":\"0.3s\"}}}},"
/* clang-format on */
#define HH_LDYN                                                                                    \
	"{\"name\":\"dyn\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","              \
	"\"port_value\":82}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.network."      \
	"http_connection_manager.v3.HttpConnectionManager\",\"stat_prefix\":\"dyn\","              \
	"\"generate_request_id\":false,"                                                           \
	HH_TRACING                                                                                 \
	"\"local_reply_config\":{\"mappers\":[{\"filter\":{\"header_filter\":{\"header\":{"         \
	"\"name\":\"accept\",\"string_match\":{\"contains\":\"json\"}}}},"                         \
	"\"body_format_override\":{\"json_format\":{\"code\":\"%%RESPONSE_CODE%%\","                 \
	"\"body\":\"%%LOCAL_REPLY_BODY%%\",\"path\":\"%%REQ(:PATH)%%\"}}},{\"filter\":{"             \
	"\"and_filter\":{\"filters\":[{\"header_filter\":{\"header\":{\"name\":\"x-lr\"}}},"       \
	"{\"status_code_filter\":{\"comparison\":{\"op\":\"GE\",\"value\":{\"default_value\":"    \
	"400,\"runtime_key\":\"k\"}}}}]}},\"status_code\":410,\"body\":{\"inline_string\":"      \
	"\"gone\"},\"headers_to_add\":[{\"header\":{\"key\":\"x-lr-mapped\",\"value\":\"1\"}}]}]},"\
	"\"route_config\":{\"name\":\"dyn\",\"virtual_hosts\":[{\"name\":\"all\",\"domains\":"     \
	"[\"*\"],\"typed_per_filter_config\":{\"cors\":{\"@type\":\"type.googleapis.com/"          \
	"envoy.extensions.filters.http.cors.v3.CorsPolicy\",\"allow_origin_string_match\":"        \
	"[{\"suffix\":\".example\"}],\"allow_methods\":\"*\",\"allow_headers\":\"*\","            \
	"\"expose_headers\":\"x-e\",\"allow_credentials\":true},\"xa\":{\"@type\":"                 \
	"\"type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute\","    \
	"\"disabled\":true}},"                                                                      \
	"\"routes\":[%s]}]},\"http_filters\":["                                                  \
	"{\"name\":\"csrf\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."    \
	"filters.http.csrf.v3.CsrfPolicy\",\"filter_enabled\":{\"default_value\":{}},"            \
	"\"shadow_enabled\":{\"default_value\":{\"numerator\":100}},\"additional_origins\":"     \
	"[{\"suffix\":\".example\"}]}},"                                                             \
	"{\"name\":\"fault\",\"typed_config\":{\"@type\":"                                        \
	"\"type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault\",\"delay\":{"      \
	"\"header_delay\":{},\"percentage\":{\"numerator\":100}},\"abort\":{\"header_abort\":{},"\
	"\"percentage\":{\"numerator\":100}},\"max_active_faults\":2}},"                          \
	"{\"name\":\"jwt\",\"typed_config\":{\"@type\":"                                            \
	"\"type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication\","    \
	"\"providers\":{\"p\":{\"issuer\":\"arion\",\"local_jwks\":{\"inline_string\":"            \
	"\"{\\\"keys\\\":[{\\\"kty\\\":\\\"oct\\\",\\\"kid\\\":\\\"k1\\\",\\\"alg\\\":\\\"HS256\\\","      \
	"\\\"k\\\":\\\"" HH_JWT_K "\\\"}]}\"},\"forward_payload_header\":\"x-jwt\","            \
	"\"claim_to_headers\":[{\"header_name\":\"x-sub\",\"claim_name\":\"sub\"}]}},"          \
	"\"rules\":[{\"match\":{\"prefix\":\"/jwt\"},\"requires\":{\"provider_name\":\"p\"}}]}},"  \
	"{\"name\":\"cors\",\"typed_config\":{\"@type\":"                                           \
	"\"type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors\"}},{\"name\":"           \
	"\"envoy.filters.http.health_check\",\"typed_config\":{\"@type\":\"type.googleapis.com/"   \
	"envoy.extensions.filters.http.health_check.v3.HealthCheck\",\"pass_through_mode\":true,"  \
	"\"cache_time\":\"1s\",\"headers\":[{\"name\":\":path\",\"string_match\":{\"exact\":"      \
	"\"/healthz\"}}]}},{\"name\":\"xa\",\"typed_config\":{\"@type\":\"type.googleapis.com/"     \
	"envoy.extensions.filters.http.ext_authz.v3.ExtAuthz\",\"http_service\":{\"server_uri\":{" \
	"\"uri\":\"http://authz\",\"cluster\":\"two\",\"timeout\":\"0.3s\"},\"path_prefix\":"      \
	"\"/check\",\"authorization_response\":{\"allowed_upstream_headers\":{\"patterns\":[{"    \
	"\"exact\":\"x-user\"}]},\"allowed_client_headers_on_success\":{\"patterns\":[{"          \
	"\"prefix\":\"x-a\"}]}}}}},{\"name\":\"gz\",\"typed_config\":{\"@type\":\"type.googleapis.com/"      \
	"envoy.extensions.filters.http.compressor.v3.Compressor\",\"compressor_library\":{"        \
	"\"name\":\"gz\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."      \
	"compression.gzip.compressor.v3.Gzip\",\"chunk_size\":4096}}}},"                           \
	HH_FILTER_SS                                                                               \
	"{\"name\":\"gw\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."      \
	"filters.http.grpc_web.v3.GrpcWeb\"}},"                                                    \
	HH_FILTER_AK                                                                               \
	HH_FILTER_CR                                                                               \
	HH_FILTER_BUF                                                                              \
	HH_FILTER_EP                                                                               \
	HH_FILTER_LUA                                                                              \
	"{\"name\":\"envoy.filters.http.router\","                                                  \
	"\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.filters.http."         \
	"router.v3.Router\"}}]}}]}]}"
#define HH_ROUTE_DYN                                                                               \
	"{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"dyn\",\"retry_policy\":"           \
	"{\"retry_on\":\"5xx,reset,connect-failure\",\"num_retries\":1},\"hash_policy\":"          \
	"[{\"header\":{\"header_name\":\"x-user\"}},"                                              \
	"{\"connection_properties\":{\"source_ip\":true}}]}}"
#define HH_ROUTE_DIRECT "{\"match\":{\"prefix\":\"/direct\"},\"direct_response\":{\"status\":202}}"
/* request mirroring (http_shadow.c): a shadow to "two" and one to the
 * cluster x-mirror names */
#define HH_ROUTE_MIRROR                                                                            \
	"{\"match\":{\"prefix\":\"/mirror\"},\"route\":{\"cluster\":\"dyn\",\"timeout\":\"0.5s\"," \
	"\"request_mirror_policies\":[{\"cluster\":\"two\"},{\"cluster_header\":\"x-mirror\"}]}}"
#define HH_ROUTE_TWO "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"two\"}}"
#define HH_CDYN                                                                                    \
	"{\"name\":\"dyn\",\"type\":\"STATIC\",\"connect_timeout\":\"0.3s\",%s"                    \
	"\"load_assignment\":{\"cluster_name\":\"dyn\",\"endpoints\":[{\"lb_endpoints\":[%s]}]}}"
/* the hash policies' tables (http_lb.c) under changes: the route hashes
 * on x-user, else the client's address */
#define HH_LB_MAGLEV "\"lb_policy\":\"MAGLEV\",\"maglev_lb_config\":{\"table_size\":251},"
#define HH_LB_RING "\"lb_policy\":\"RING_HASH\","
#define HH_EP(last)                                                                                \
	"{\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"198.18.0." #last "\","      \
	"\"port_value\":8080}}}}"
/* the ext_authz filter "xa" (disabled on the virtual host) checks /authz
 * with cluster "two" */
#define HH_ROUTE_AUTHZ                                                                             \
	"{\"match\":{\"prefix\":\"/authz\"},\"route\":{\"cluster\":\"dyn\"},"                      \
	"\"typed_per_filter_config\":{\"xa\":{\"@type\":\"type.googleapis.com/envoy.extensions."    \
	"filters.http.ext_authz.v3.ExtAuthzPerRoute\",\"check_settings\":{}}}},"                 \
	"{\"match\":{\"prefix\":\"/ak\"},\"route\":{\"cluster\":\"dyn\"},"                         \
	"\"typed_per_filter_config\":{\"ak\":{\"@type\":\"type.googleapis.com/envoy.extensions."    \
	"filters.http.api_key_auth.v3.ApiKeyAuthPerRoute\",\"allowed_clients\":[\"alice\"]}}},"   \
	"{\"match\":{\"prefix\":\"/buf\"},\"route\":{\"cluster\":\"dyn\",\"retry_policy\":"          \
	"{\"retry_on\":\"5xx\",\"num_retries\":1},\"request_mirror_policies\":[{\"cluster\":"    \
	"\"two\"}]},\"typed_per_filter_config\":{\"buf\":{\"@type\":\"type.googleapis.com/"        \
	"envoy.extensions.filters.http.buffer.v3.BufferPerRoute\",\"buffer\":{"                    \
	"\"max_request_bytes\":64}}}},"                                                            \
	"{\"match\":{\"prefix\":\"/ep\"},\"route\":{\"cluster\":\"dyn\"},"                         \
	"\"typed_per_filter_config\":{\"ep\":{\"@type\":\"type.googleapis.com/envoy.extensions."    \
	"filters.http.ext_proc.v3.ExtProcPerRoute\",\"overrides\":{\"grpc_initial_metadata\":"  \
	"[{\"key\":\"x-ep\",\"value\":\"1\"}]}}}},"                                                 \
	"{\"match\":{\"prefix\":\"/lua\"},\"route\":{\"cluster\":\"dyn\"},"                        \
	"\"typed_per_filter_config\":{\"lua\":{\"@type\":\"type.googleapis.com/envoy.extensions."   \
	"filters.http.lua.v3.LuaPerRoute\",\"name\":\"l\"}}}"

static bool hh_cfg_changed;

/* Apply resource "dyn" of @p type (JSON), or remove it (@p json NULL). */
static inline void hh_apply(const char *type, const char *json)
{
	struct arn_config_result res;
	struct arn_config_resource_in in = {"dyn", "v", NULL, 0};
	const char *rm[1] = {"dyn"};
	upb_Arena *a = upb_Arena_New();
	if (json) {
		const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *m = arn_proto_from_json(json, strlen(json), md, a, &err);
		if (!m) {
			fprintf(stderr, "hcm_harness: bad JSON: %s\n%s\n", arn_sb_cstr(&err), json);
			abort();
		}
		arn_sb_free(&err);
		in.bytes = arn_proto_encode(m, md, a, &in.len);
	}
	if (arn_config_apply(store, type, json ? &in : NULL, json ? 1 : 0, json ? NULL : rm,
			     json ? 0 : 1, 0, &res) != 0 ||
	    !res.accepted || res.n_errors) {
		fprintf(stderr, "hcm_harness: refused: %s\n",
			res.n_errors ? res.errors[0].message : "?");
		abort();
	}
	arn_config_result_free(&res);
	upb_Arena_Free(a);
	/* the control lcore's housekeeping: runtime objects, old generations */
	arn_http_poll();
	arn_config_poll(store);
}

/* envoy.filters.http.basic_auth, first of the "dyn" listener's filters in
 * hh_config(8) (every request then needs a user: not in HH_LDYN itself,
 * whose routes the other runs use without one): alice:secret, read from
 * x-basic (so that /jwt's Authorization: Bearer meets it too), the name
 * upstream in x-user; the route /ba has its own user carol:carol-pw. */
#define HH_BASIC_AUTH_FILTER                                                                       \
	"{\"name\":\"ba\",\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions."     \
	"filters.http.basic_auth.v3.BasicAuth\",\"users\":{\"inline_string\":\"alice:{SHA}"        \
	"5en6G6MezRroT3XKqkdPOmY/BfQ=\"},\"forward_username_header\":\"x-user\","                  \
	"\"authentication_header\":\"x-basic\"}},"
#define HH_ROUTE_BASIC_AUTH                                                                        \
	"{\"match\":{\"prefix\":\"/ba\"},\"route\":{\"cluster\":\"dyn\"},"                         \
	"\"typed_per_filter_config\":{\"ba\":{\"@type\":\"type.googleapis.com/envoy.extensions."   \
	"filters.http.basic_auth.v3.BasicAuthPerRoute\",\"users\":{\"inline_string\":"             \
	"\"carol:{SHA}hsAaMBat8aKiQgxhKhAqvbXOPbw=\"}}}}"

/* Configuration change @p v % 8: 0 the initial "dyn" cluster (endpoint
 * .203) and listener (routes to it), 1 the endpoint replaced (.204;
 * MAGLEV), 2 both endpoints (RING_HASH), 3 none, 4 the listener updated
 * (a direct response route first, then /mirror, mirrored), 5 the
 * listener removed, 6 the cluster
 * removed, 7 the listener routing to the cluster "two"; 9 the listener
 * with the client identity fields (forward_client_cert_details,
 * internal_address_config, original_ip_detection_extensions) routing to
 * "web"; and 8 (not 0
 * again) the listener of 0 with basic_auth first (HH_BASIC_AUTH_FILTER)
 * and the route /ba. */
static inline void hh_config(unsigned v)
{
	char b[16384];
	hh_cfg_changed = true;
	if (v == 9) {
		/* the client identity fields (test_xfcc.c's subjects):
		 * FORWARD_ONLY, internal 198.18.0.0/16, the address from a
		 * trusted x-real-ip, else X-Forwarded-For past trusted proxies
		 * in 198.18.0.0/16 and 2001:db8::/32; routed to "web" (one endpoint) */
		static const char ci[] =
		    "\"forward_client_cert_details\":\"FORWARD_ONLY\",\"internal_address_config\":"
		    "{\"cidr_ranges\":[{\"address_prefix\":\"198.18.0.0\",\"prefix_len\":16}]},"
		    "\"original_ip_detection_extensions\":[{\"name\":\"h\",\"typed_config\":{"
		    "\"@type\":\"type.googleapis.com/envoy.extensions.http.original_ip_detection."
		    "custom_header.v3.CustomHeaderConfig\",\"header_name\":\"x-real-ip\","
		    "\"allow_extension_to_set_address_as_trusted\":true}},{\"name\":\"x\","
		    "\"typed_config\":{\"@type\":\"type.googleapis.com/envoy.extensions.http."
		    "original_ip_detection.xff.v3.XffConfig\",\"xff_trusted_cidrs\":{\"cidrs\":[{"
		    "\"address_prefix\":\"198.18.0.0\",\"prefix_len\":16},{\"address_prefix\":"
		    "\"2001:db8::\",\"prefix_len\":32}]}}}],";
		snprintf(b, sizeof(b), HH_LDYN,
			 "{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"web\"}}");
		char *at = strstr(b, "\"generate_request_id\":false,");
		size_t rest = strlen(b) + 1;
		if (!at || rest + sizeof(ci) - 1 > sizeof(b))
			abort();
		memmove(at + sizeof(ci) - 1, at, rest - (size_t)(at - b));
		memcpy(at, ci, sizeof(ci) - 1);
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		return;
	}
	if (v == 8) {
		static const char ba[] = HH_BASIC_AUTH_FILTER;
		snprintf(b, sizeof(b), HH_LDYN,
			 HH_ROUTE_BASIC_AUTH "," HH_ROUTE_AUTHZ "," HH_ROUTE_DYN);
		char *at = strstr(b, "\"http_filters\":[");
		size_t rest = strlen(b) + 1;
		if (!at || rest + sizeof(ba) - 1 > sizeof(b))
			abort();
		at += 16;
		memmove(at + sizeof(ba) - 1, at, rest - (size_t)(at - b));
		memcpy(at, ba, sizeof(ba) - 1);
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		return;
	}
	switch (v % 8) {
	case 0:
		snprintf(b, sizeof(b), HH_CDYN, "", HH_EP(203));
		hh_apply(ARN_TYPE_URL_CLUSTER, b);
		snprintf(b, sizeof(b), HH_LDYN, HH_ROUTE_AUTHZ "," HH_ROUTE_DYN);
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		break;
	case 1:
		snprintf(b, sizeof(b), HH_CDYN, HH_LB_MAGLEV, HH_EP(204));
		hh_apply(ARN_TYPE_URL_CLUSTER, b);
		break;
	case 2:
		snprintf(b, sizeof(b), HH_CDYN, HH_LB_RING, HH_EP(203) "," HH_EP(204));
		hh_apply(ARN_TYPE_URL_CLUSTER, b);
		break;
	case 3:
		snprintf(b, sizeof(b), HH_CDYN, "", "");
		hh_apply(ARN_TYPE_URL_CLUSTER, b);
		break;
	case 4:
		snprintf(b, sizeof(b), HH_LDYN,
			 HH_ROUTE_DIRECT "," HH_ROUTE_MIRROR "," HH_ROUTE_DYN);
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		break;
	case 5:
		hh_apply(ARN_TYPE_URL_LISTENER, NULL);
		break;
	case 6:
		hh_apply(ARN_TYPE_URL_CLUSTER, NULL);
		break;
	default:
		snprintf(b, sizeof(b), HH_LDYN, HH_ROUTE_TWO);
		hh_apply(ARN_TYPE_URL_LISTENER, b);
		break;
	}
}

/* ---- set-up and one run ----------------------------------------------------------------- */

static struct arn_bootstrap *boot;

static inline void hh_cleanup(void)
{
	arn_http_stop();
	arn_config_destroy(store);
	arn_bootstrap_free(boot);
	if (trace)
		fprintf(stderr,
			"=== runs %llu: upstream connections %llu, bytes to upstreams %llu, "
			"responses to clients %llu, bytes to clients %llu\n",
			(unsigned long long)tot_runs, (unsigned long long)tot_up_conns,
			(unsigned long long)tot_up_bytes, (unsigned long long)tot_resp,
			(unsigned long long)tot_client_bytes);
}

/* Once per process: EAL, the configuration, lib/http's registration with
 * lib/tcp. @p verbose: log warnings and trace each run (hh_trace_run). */
static inline void hh_init(bool verbose)
{
	trace = verbose;
	/* the data plane's filters, as arion's main enables them (the
	 * "dyn" listener has CORS, ext_authz and compressor filters) */
	arn_config_set_features(ARN_CONFIG_FEATURE_L4 | ARN_CONFIG_FEATURE_HTTP_L4);
	fake_eal_init();
	atexit(fake_eal_fini);
	arn_log_set_spec(trace ? "warning" : "off", NULL);
	if (arn_stats_set_workers(1) != 0)
		exit(1);
	struct arn_sb err = ARN_SB_INIT;
	if (arn_bootstrap_load_buf("hcm_harness.yaml", config_yaml, sizeof(config_yaml) - 1, NULL,
				   &boot, &err) != 0) {
		fprintf(stderr, "hcm_harness: bad configuration:\n%s\n", arn_sb_cstr(&err));
		exit(1);
	}
	store = arn_config_create(boot); /* boot stays for the store's life */
	arn_sb_reset(&err);
	if (!store || arn_config_apply_static(store, boot, &err) != 0) {
		fprintf(stderr, "hcm_harness: configuration refused:\n%s\n", arn_sb_cstr(&err));
		exit(1);
	}
	arn_sb_free(&err);
	/* small pools and tables, so that their limits are reachable, and a
	 * worker (one a run) starts fast: with the defaults' tables (about
	 * 7 MB, zeroed at every start) a run of fuzz_hcm took about 50 ms,
	 * most of it page faults; with these about 10 ms */
	struct arn_http_options o = {.max_connections = 6,
				     .max_upstream_connections = 4,
				     .max_streams = 2,
				     .large_buffers = 4,
				     .upstream_pools = 16,
				     .mcp_sessions = 8,
				     .mcp_legs = 8,
				     .mcp_detached = 4,
				     .trailer_arrays = 1};
	if (arn_http_start(store, &o) != 0)
		exit(1);
	hh_config(0);
	hh_cfg_changed = false;
	hh_pins_record();
	atexit(hh_cleanup); /* before fake_eal_fini, which atexit runs later */
}

static unsigned hh_full; /* free mbufs before the run */
static bool hh_running;

/* A fresh TCP and HTTP worker. @p setup: bits 0-1 the stack's TCP buffers
 * (rcvbuf/sndbuf: 8K/8K, 64K/64K, 8K/64K, 64K/8K); bits 2-3 the MSS every
 * peer announces (1460, 536, 100, 48). */
static inline void hh_begin(uint8_t setup)
{
	static const uint32_t bufs[4][2] = {
	    {8192, 8192}, {65536, 65536}, {8192, 65536}, {65536, 8192}};
	static const uint16_t msss[4] = {1460, 536, 100, 48};
	hh_full = rte_mempool_avail_count(fake_pool);
	struct arn_dataplane conf = {.tcp_max_connections = 24,
				     .tcp_rcvbuf = bufs[setup & 3][0],
				     .tcp_sndbuf = bufs[setup & 3][1]};
	memset(peers, 0, sizeof(peers));
	for (int i = 0; i < N_CLIENTS; i++)
		clients[i] = -1;
	n_ups = n_opened = 0;
	syn_policy = 0;
	hh_budget = HH_SEND_BUDGET;
	ending = false;
	peer_mss = msss[(setup >> 2) & 3];
	fake_alloc_fail = 0;
	fake_mtu = 1500;
	arn_http_set_healthcheck_failed(false);
	if (hh_cfg_changed) {
		hh_config(6); /* a fresh "dyn": no object of the last run's */
		hh_config(5);
		hh_config(0);
		hh_cfg_changed = false;
	}
	if (arn_tcp_worker_init(lc, &conf) != 0)
		abort();
	/* the same run for the same input: fixed secrets and seeds */
	struct arn_tcp_worker *wk = tcp_wk(lc);
	wk->key[0] = wk->key[1] = 0x1234;
	wk->cookie_key[0] = wk->cookie_key[1] = 0x5678;
	wk->rng = 0x9abcdef1;
	wk->port_hint = 0;
	for (int i = 0; i < TCP_LISTENERS_MAX; i++)
		if (wk->lsn[i].used && wk->lsn[i].user) {
			struct http_worker *w = wk->lsn[i].user;
			w->rng[0] = 0x243f6a8885a308d3ull;
			w->rng[1] = 0x13198a2e03707344ull;
			http_otel_seed(w, 0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull);
		}
	tot_runs++;
	hh_running = true;
	hh_settle();
}

/* How later upstream SYNs are answered: 0 SYN-ACK, 1 RST, 2 nothing. */
static inline void hh_syn(unsigned policy)
{
	syn_policy = (uint8_t)(policy % 3);
}

/* Everyone goes; with @p check, nothing may be left (aborts otherwise). */
static inline void hh_finish(bool check)
{
	hh_running = false;
	/* a moment for what is in flight */
	fake_alloc_fail = 0;
	hh_advance(50);
	ending = true;
	for (int i = 0; i < N_PEERS; i++)
		peer_kill(&peers[i]);
	hh_settle();
	/* past the timers that can still run: the linger after a response
	 * (3 s), connect timeouts toward black holes (0.5 s at most) */
	for (int i = 0; i < 50; i++) {
		fake_clock_set(fake_now_us + 100000);
		hh_settle();
		for (int k = 0; k < N_PEERS; k++)
			peer_kill(&peers[k]);
	}
	hh_settle();
	for (int i = 0; i < N_PEERS; i++)
		if (peers[i].used && !peers[i].upstream)
			for (uint32_t k = 0; k + 9 <= peers[i].log_len; k++)
				tot_resp += memcmp(peers[i].log + k, "HTTP/1.1 ", 9) == 0;
	if (trace)
		hh_trace_run();
	if (check) {
		hh_quiesce();
		for (int i = 0; i < N_PEERS; i++)
			hh_check_http(&peers[i]);
		hh_check_nothing_left();
		CHECK(rte_mempool_avail_count(fake_pool) + fake_pending(lc) == hh_full,
		      "%u mbufs in use",
		      hh_full - rte_mempool_avail_count(fake_pool) - fake_pending(lc));
	}
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	arn_access_log_drain();
	if (check && rte_mempool_avail_count(fake_pool) != hh_full) {
		fprintf(stderr, "hcm_harness: mbuf leak: %u of %u free\n",
			rte_mempool_avail_count(fake_pool), hh_full);
		abort();
	}
}

static inline void hh_end(void)
{
	hh_finish(true);
}

/* After a test failed mid-run: the same, without the checks. */
static inline void hh_abandon(void)
{
	if (hh_running)
		hh_finish(false);
}

/* ---- what the fuzz targets over this harness share (fuzz_hcm, fuzz_h2, fuzz_hcm_mcp,
 * fuzz_uph2) ---- */

/* An HTTP/2 frame header (RFC 9113 4.1) into @p b: what fuzz_h2.c's
 * clients and fuzz_uph2.c's upstreams put before each payload.
 * @return its size, 9. */
static inline size_t hh_h2_frame_hdr(uint8_t *b, uint32_t len, uint8_t type, uint8_t flags,
				     uint32_t sid)
{
	b[0] = (uint8_t)(len >> 16);
	b[1] = (uint8_t)(len >> 8);
	b[2] = (uint8_t)len;
	b[3] = type;
	b[4] = flags;
	b[5] = (uint8_t)(sid >> 24);
	b[6] = (uint8_t)(sid >> 16);
	b[7] = (uint8_t)(sid >> 8);
	b[8] = (uint8_t)sid;
	return 9;
}

/* The fuzzer's input, read a byte at a time (0 past its end). */
struct hh_rd {
	const uint8_t *p;
	size_t n, i;
};

static inline uint8_t hh_rd8(struct hh_rd *r)
{
	return r->i < r->n ? r->p[r->i++] : 0;
}

static inline bool hh_rd_more(const struct hh_rd *r)
{
	return r->i < r->n;
}

/* LLVMFuzzerInitialize's common part. libFuzzer's entropic schedule costs
 * five times the run itself here (a run touches tens of thousands of
 * features): -entropic=0 is added unless the command line sets -entropic
 * (tests/fuzz/fuzz_flags.h). Then the harness, with a trace when
 * FUZZ_HCM_TRACE is set and the log levels of FUZZ_HCM_LOG (e.g.
 * "warning,http:debug"). */
static inline void hh_fuzz_init(int *argc, char ***argv)
{
	static char entropic[] = "-entropic=0";
	fuzz_default_flag(argc, argv, entropic);
	hh_init(getenv("FUZZ_HCM_TRACE") != NULL);
	if (getenv("FUZZ_HCM_LOG"))
		arn_log_set_spec(getenv("FUZZ_HCM_LOG"), NULL);
}

/*
 * A run of fuzz_hcm.c's input format, which fuzz_h2.c and fuzz_uph2.c
 * share but for ops 14 and 15 (fuzz_hcm_mcp.c numbers its ops otherwise):
 * byte 0 for hh_begin, then one op a byte, each followed by hh_settle, then
 * hh_end. Ops 0 to 13 are done here; @p own is called with the op byte
 * after op 0 opened its client (one that speaks first greets there) and for
 * ops 14 and 15, the target's own, reading their operands from @p r.
 */
static inline void hh_fuzz_run(const uint8_t *data, size_t size,
			       void (*own)(struct hh_rd *r, uint8_t op))
{
	if (size < 1)
		return;
	struct hh_rd r = {data, size, 0};
	hh_begin(hh_rd8(&r));
	static uint8_t tmp[256];
	while (hh_rd_more(&r)) {
		uint8_t b = hh_rd8(&r);
		unsigned a = b >> 4, c = a & 3, u = a & 7;
		switch (b & 15) {
		case 0: {
			static const uint16_t ports[4] = {80, 81, 82, 80};
			hh_open(c, ports[a >> 2]);
			own(&r, b);
			break;
		}
		case 1:
		case 6: {
			uint8_t n = hh_rd8(&r);
			uint32_t k = 0;
			while (k < n && hh_rd_more(&r))
				tmp[k++] = hh_rd8(&r);
			hh_send((b & 15) == 1 ? hh_client(c) : hh_upstream(u), tmp, k, n ? n : 1);
			break;
		}
		case 2:
		case 7:
			hh_send((b & 15) == 2 ? hh_client(c) : hh_upstream(u), NULL,
				hh_rd8(&r) * 256u, 0);
			break;
		case 3:
			hh_fin(hh_client(c));
			break;
		case 4:
			hh_reset(hh_client(c));
			break;
		case 5:
			hh_window(hh_client(c), hh_rd8(&r));
			break;
		case 8:
			hh_fin(hh_upstream(u));
			break;
		case 9:
			hh_reset(hh_upstream(u));
			break;
		case 10:
			hh_window(hh_upstream(u), hh_rd8(&r));
			break;
		case 11: {
			uint8_t t = hh_rd8(&r);
			hh_advance(t < 128 ? t : (t - 127u) * 64u);
			break;
		}
		case 12:
			if (a < 4)
				hh_syn(a);
			else
				hh_config(a - 4);
			break;
		case 13: {
			uint8_t k = hh_rd8(&r);
			fake_alloc_fail = k & 15;
			if (k & 16)
				arn_http_set_healthcheck_failed(!http_healthcheck_failed());
			break;
		}
		default:
			own(&r, b);
			break;
		}
		hh_settle();
	}
	hh_end();
}

#endif
