/*
 * lib/tls benchmark: what a server-side handshake and a keep-alive
 * request cost one core, in memory (no network, no kernel), with lib/tls
 * on both sides. Only the server's calls are timed, with the thread's CPU
 * clock, so the client's work does not count. Reports, never gates:
 *   bench_tls [handshakes]
 * The numbers in docs/tls.md come from this program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/ssl.h>

#include "arn_tls.h"
#include "tls_harness.h"

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

struct srv_clock {
	double us;
};

/* Run one handshake, timing the server's calls; @return 0 when open. */
static int handshake(struct tt_side *s, struct tt_side *c, struct srv_clock *clk)
{
	int rs = -EAGAIN, rc = -EAGAIN;
	for (int i = 0; i < 32 && (rs || rc); i++) {
		if (rc)
			rc = arn_tls_handshake(&c->c);
		if (rs) {
			double t0 = now_us();
			rs = arn_tls_handshake(&s->c);
			clk->us += now_us() - t0;
		}
		if ((rs && rs != -EAGAIN) || (rc && rc != -EAGAIN))
			return -1;
	}
	char b[256];
	while (arn_tls_read(&c->c, b, sizeof(b)) > 0) /* tickets */
		;
	return rs || rc;
}

static void run(const char *name, struct arn_tls_ctx *sx, uint16_t maxv, int n, bool resume)
{
	struct arn_tls_worker w;
	arn_tls_worker_init(&w, 0, 1u << 30);
	struct arn_tls_ctx_conf cf = {.name = "bench client", .max_version = maxv};
	struct arn_tls_ctx *cx = arn_tls_ctx_new(&cf, NULL, 0);
	struct arn_tls_session_slot slot = {0};
	struct arn_tls_conn_opts o = {.session = resume ? &slot : NULL};
	struct srv_clock clk = {0};
	int reused = 0;
	for (int i = -1; i < n; i++) {
		struct tt_side s, c;
		tt_link(&s, &c, 0);
		struct srv_clock one = {0};
		double t0 = now_us();
		tt_start(&s, &w, sx, NULL);
		one.us += now_us() - t0;
		tt_start(&c, &w, cx, &o);
		if (handshake(&s, &c, &one)) {
			fprintf(stderr, "%s: handshake failed\n", name);
			exit(1);
		}
		reused += arn_tls_session_reused(&s.c);
		t0 = now_us();
		arn_tls_conn_free(&s.c);
		one.us += now_us() - t0;
		tt_side_free(&s);
		tt_side_free(&c);
		if (i >= 0) /* the first one primes the session */
			clk.us += one.us;
	}
	double per = clk.us / n;
	printf("%-34s %8.1f us/handshake  %8.0f handshakes/s per core  (%d/%d resumed)\n", name,
	       per, 1e6 / per, reused - (resume ? 1 : 0), n);
	arn_tls_session_slot_clear(&slot);
	arn_tls_ctx_unref(cx);
}

/* A keep-alive request: 300 bytes in, 1 KB (or 64 KB) out, server side. */
static void requests(const char *name, struct arn_tls_ctx *sx, size_t resp, int n)
{
	struct arn_tls_worker w;
	arn_tls_worker_init(&w, 0, 0);
	struct arn_tls_ctx_conf cf = {.name = "bench client"};
	struct arn_tls_ctx *cx = arn_tls_ctx_new(&cf, NULL, 0);
	struct tt_side s, c;
	tt_link(&s, &c, 4u << 20);
	tt_start(&s, &w, sx, NULL);
	tt_start(&c, &w, cx, NULL);
	struct srv_clock hs = {0};
	if (handshake(&s, &c, &hs))
		exit(1);
	static uint8_t req[300], body[65536], buf[65536];
	memset(req, 'q', sizeof(req));
	memset(body, 'b', sizeof(body));
	double us = 0;
	for (int i = 0; i < n; i++) {
		arn_tls_write(&c.c, req, sizeof(req));
		double t0 = now_us();
		size_t got = 0;
		ssize_t r;
		while (got < sizeof(req) && (r = arn_tls_read(&s.c, buf, sizeof(buf))) > 0)
			got += (size_t)r;
		size_t sent = 0;
		while (sent < resp) {
			ssize_t k = arn_tls_write(&s.c, body + sent, resp - sent);
			if (k <= 0)
				exit(1);
			sent += (size_t)k;
		}
		us += now_us() - t0;
		got = 0;
		while (got < resp && (r = arn_tls_read(&c.c, buf, sizeof(buf))) > 0)
			got += (size_t)r;
	}
	printf("%-34s %8.2f us/request (server: read 300 B, write %zu B)\n", name, us / n, resp);
	tt_side_free(&s);
	tt_side_free(&c);
	arn_tls_ctx_unref(cx);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	struct tt_pki *k = tt_pki();
	struct arn_tls_cert ec = tt_tc(k->srv_ec, k->srv_ec_key, "ec");
	struct arn_tls_cert rsa = tt_tc(k->srv_rsa, k->srv_rsa_key, "rsa");
	struct arn_tls_ctx *xec = tt_server_ctx(&ec, 1, NULL, NULL);
	struct arn_tls_ctx *xrsa = tt_server_ctx(&rsa, 1, NULL, NULL);
	printf("lib/tls on %s, one core, server side only (X25519)\n",
	       OpenSSL_version(OPENSSL_VERSION));
	run("full, TLS 1.3, ECDSA P-256", xec, TLS1_3_VERSION, n, false);
	run("full, TLS 1.2, ECDSA P-256", xec, TLS1_2_VERSION, n, false);
	run("full, TLS 1.3, RSA 2048", xrsa, TLS1_3_VERSION, n / 4, false);
	run("full, TLS 1.2, RSA 2048", xrsa, TLS1_2_VERSION, n / 4, false);
	run("resumed (ticket), TLS 1.3", xec, TLS1_3_VERSION, n, true);
	run("resumed (ticket), TLS 1.2", xec, TLS1_2_VERSION, n, true);
	requests("keep-alive request, 1 KiB", xec, 1024, n * 10);
	requests("keep-alive request, 64 KiB", xec, 65536, n);
	arn_tls_ctx_unref(xec);
	arn_tls_ctx_unref(xrsa);
	arn_tls_reclaim();
	tt_pki_free();
	return 0;
}
