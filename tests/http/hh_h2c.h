/*
 * A minimal HTTP/2 client (nghttp2) over the hcm harness's client peer,
 * for tests that run a filter over HTTP/2: the response heads it decodes
 * are kept as "name: value" lines. Include after hcm_harness.h.
 */
#ifndef ARN_HH_H2C_H
#define ARN_HH_H2C_H

#include <nghttp2/nghttp2.h>

struct h2c {
	struct peer *p;
	uint32_t fed; /* bytes of p->cap given to the session */
	char head[2048];
	size_t hl;
	bool closed;
	uint8_t cap[1 << 16]; /* what the peer received */
};

static ssize_t h2c_send(nghttp2_session *s, const uint8_t *d, size_t n, int flags, void *u)
{
	(void)s, (void)flags;
	hh_send(((struct h2c *)u)->p, d, (uint32_t)n, 0);
	return (ssize_t)n;
}

static int h2c_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
		      const uint8_t *value, size_t vl, uint8_t flags, void *u)
{
	(void)s, (void)f, (void)flags;
	struct h2c *c = u;
	int k = snprintf(c->head + c->hl, sizeof(c->head) - c->hl, "%.*s: %.*s\n", (int)nl,
			 (const char *)name, (int)vl, (const char *)value);
	if (k > 0 && (size_t)k < sizeof(c->head) - c->hl)
		c->hl += (size_t)k;
	return 0;
}

static int h2c_close(nghttp2_session *s, int32_t id, uint32_t code, void *u)
{
	(void)s, (void)id, (void)code;
	((struct h2c *)u)->closed = true;
	return 0;
}

/* A client session on client peer 0 (connected), its SETTINGS queued;
 * @p c (static: it holds the capture) is its state. */
static nghttp2_session *h2c_open(struct h2c *c)
{
	*c = (struct h2c){.p = hh_client(0)};
	c->p->cap = c->cap;
	c->p->cap_len = 0;
	c->p->cap_max = sizeof(c->cap);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, h2c_send);
	nghttp2_session_callbacks_set_on_header_callback(cb, h2c_header);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2c_close);
	nghttp2_session *s;
	assert_int_equal(nghttp2_session_client_new(&s, cb, c), 0);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
	return s;
}

/* Exchange until the stream closed (or 50 rounds). */
static void h2c_pump(nghttp2_session *s, struct h2c *c)
{
	for (int i = 0; i < 50; i++) {
		hh_settle();
		if (c->p->cap_len > c->fed) {
			ssize_t k =
			    nghttp2_session_mem_recv(s, c->p->cap + c->fed, c->p->cap_len - c->fed);
			assert_true(k >= 0);
			c->fed += (uint32_t)k;
		}
		assert_int_equal(nghttp2_session_send(s), 0);
		hh_advance(2);
		if (c->closed)
			return;
	}
}

#endif
