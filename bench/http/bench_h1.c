/*
 * HTTP/1 codec micro-benchmark: parses a typical browser request (and
 * writes a proxied head) in a loop. Wall time per iteration is printed, but
 * on a shared machine the repeatable figure is instructions, so:
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
 *       build/bench/http/bench_h1 parse 10000
 *   callgrind_annotate /tmp/cg.out | head
 *
 * and divide the total Ir by the iteration count (the setup is a few
 * thousand instructions). Modes: parse (request head), parse-split (the
 * same head cut into 3 segments, so one line goes through scratch),
 * chunked (a chunked body of 16 x 1 KiB chunks), write (request line and
 * headers with proxy edits into 2 KiB buffers), all (default).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arn_h1.h"

static const char req[] =
    "GET /assets/app.js?v=1234 HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "Connection: keep-alive\r\n"
    "sec-ch-ua: \"Chromium\";v=\"118\", \"Not=A?Brand\";v=\"99\"\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/118.0.0.0 Safari/537.36\r\n"
    "Accept: */*\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Sec-Fetch-Mode: no-cors\r\n"
    "Referer: https://www.example.com/\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Accept-Language: en-US,en;q=0.9\r\n"
    "Cookie: session=abcdef0123456789abcdef; theme=dark\r\n"
    "\r\n";

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile size_t sink;

static void must(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "bench_h1: %s\n", what);
		exit(1);
	}
}

static void bench_parse(long iters, int split)
{
	struct arn_h1_header hdrs[100];
	struct arn_h1_msg m;
	struct arn_h1_parser p;
	struct arn_h1_ev ev;
	char scratch[1024];
	size_t len = sizeof(req) - 1;
	size_t cuts[] = {0, 150, 400, len};
	arn_h1_msg_init(&m, hdrs, 100);
	arn_h1_parser_init(&p, ARN_H1_REQUEST, NULL, &m);
	arn_h1_parser_set_scratch(&p, scratch, sizeof(scratch));
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		if (!split) {
			ssize_t n = arn_h1_parse(&p, req, len, &ev);
			must(n == (ssize_t)len && ev.type == ARN_H1_EV_HEAD, "parse failed");
		} else {
			for (int k = 0; k < 3; k++) {
				ssize_t n =
				    arn_h1_parse(&p, req + cuts[k], cuts[k + 1] - cuts[k], &ev);
				must(k < 2 ? n == ARN_AGAIN : ev.type == ARN_H1_EV_HEAD,
				     "split parse failed");
			}
		}
		must(arn_h1_parse(&p, req + len, 0, &ev) == 0 && ev.type == ARN_H1_EV_END,
		     "no END");
		sink += m.n_hdrs;
	}
	double dt = now() - t0;
	printf("%-12s %8.1f ns/request  (%zu bytes, %u headers)\n", split ? "parse-split" : "parse",
	       dt * 1e9 / (double)iters, len, m.n_hdrs);
}

static void bench_chunked(long iters)
{
	static char body[16 * (1024 + 8) + 64];
	size_t n = 0;
	for (int c = 0; c < 16; c++) {
		n += (size_t)sprintf(body + n, "400\r\n");
		memset(body + n, 'x', 1024);
		n += 1024;
		n += (size_t)sprintf(body + n, "\r\n");
	}
	n += (size_t)sprintf(body + n, "0\r\n\r\n");
	static const char head[] =
	    "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct arn_h1_header hdrs[16];
	struct arn_h1_msg m;
	struct arn_h1_parser p;
	struct arn_h1_ev ev;
	arn_h1_msg_init(&m, hdrs, 16);
	arn_h1_parser_init(&p, ARN_H1_REQUEST, NULL, &m);
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		must(arn_h1_parse(&p, head, sizeof(head) - 1, &ev) > 0, "chunked head");
		const char *b = body;
		size_t left = n;
		for (;;) {
			ssize_t r = arn_h1_parse(&p, b, left, &ev);
			must(r >= 0, "chunked body");
			b += r;
			left -= (size_t)r;
			if (ev.type == ARN_H1_EV_END)
				break;
		}
		sink += m.body_len;
	}
	double dt = now() - t0;
	printf("%-12s %8.1f ns/body     (16 KiB in 16 chunks)\n", "chunked",
	       dt * 1e9 / (double)iters);
}

static int refill(struct arn_h1_wbuf *w)
{
	sink += w->len;
	w->len = 0;
	return 0;
}

static void bench_write(long iters)
{
	struct arn_h1_header hdrs[100];
	struct arn_h1_msg m;
	struct arn_h1_parser p;
	struct arn_h1_ev ev;
	char out[2048];
	arn_h1_msg_init(&m, hdrs, 100);
	arn_h1_parser_init(&p, ARN_H1_REQUEST, NULL, &m);
	must(arn_h1_parse(&p, req, sizeof(req) - 1, &ev) > 0, "parse for write");
	static const struct arn_h1_edit edits[] = {
	    {"x-forwarded-for", "198.18.0.10", 11, 15, ARN_H1_EDIT_APPEND_VALUE},
	    {"x-forwarded-proto", "http", 4, 17, ARN_H1_EDIT_SET},
	    {"x-request-id", "3f1c1a52-6a43-4d1e-9a0b-4a1f7d3c2b10", 36, 12,
	     ARN_H1_EDIT_ADD_IF_ABSENT},
	    {"x-envoy-expected-rq-timeout-ms", "15000", 5, 30, ARN_H1_EDIT_SET},
	};
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		struct arn_h1_wbuf w;
		arn_h1_wbuf_init(&w, out, sizeof(out), refill, NULL);
		arn_h1_write_request_line(&w, m.method_name.p, m.method_name.len, m.path.p,
					  m.path.len, 1);
		arn_h1_write_headers(&w, &m, edits, 4, ARN_H1_W_DROP_HOP);
		arn_h1_write_end(&w);
		sink += w.len;
	}
	double dt = now() - t0;
	printf("%-12s %8.1f ns/head     (4 edits, hop-by-hop dropped)\n", "write",
	       dt * 1e9 / (double)iters);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	long iters = argc > 2 ? atol(argv[2]) : 1000000;
	int all = strcmp(mode, "all") == 0;
	if (all)
		printf("sizes: parser %zu B, msg %zu B, header %zu B\n",
		       sizeof(struct arn_h1_parser), sizeof(struct arn_h1_msg),
		       sizeof(struct arn_h1_header));
	if (all || strcmp(mode, "parse") == 0)
		bench_parse(iters, 0);
	if (all || strcmp(mode, "parse-split") == 0)
		bench_parse(iters, 1);
	if (all || strcmp(mode, "chunked") == 0)
		bench_chunked(iters / 10 ? iters / 10 : 1);
	if (all || strcmp(mode, "write") == 0)
		bench_write(iters);
	return 0;
}
