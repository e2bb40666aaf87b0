/*
 * What the client's stream (xds_client.c), response handling
 * (xds_response.c) and TTLs (xds_ttl.c) share, below all three: the
 * client's clocks, the per-resource error list of a NACK (X16), the types'
 * lookup and their queues of responses waiting for the sink (G1).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xds_int.h"

uint64_t xds_now(const struct arn_xds_client *c)
{
	return c->now_ms(c->clock_ctx);
}

uint64_t xds_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t xds_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void arn_xds_errors_add(struct arn_xds_errors *e, const char *name, const char *fmt, ...)
{
	if (e->n == e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 8;
		void *nv = realloc(e->v, nc * sizeof(*e->v));
		if (nv == NULL)
			return;
		e->v = nv;
		e->cap = nc;
	}
	va_list ap;
	va_start(ap, fmt);
	char *r = NULL;
	if (vasprintf(&r, fmt, ap) < 0)
		r = NULL;
	va_end(ap);
	e->v[e->n].name = strdup(name ? name : "");
	e->v[e->n].reason = r ? r : strdup("(no reason: out of memory)");
	e->n++;
}

size_t arn_xds_errors_count(const struct arn_xds_errors *e)
{
	return e->n;
}

void xds_errors_free(struct arn_xds_errors *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].name);
		free(e->v[i].reason);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* Does @p reason already say "'name'" (lib/config's "Listener 'x': ...")? */
static bool names_itself(const char *reason, const char *name)
{
	size_t n = strlen(name);
	for (const char *q = reason ? strchr(reason, '\'') : NULL; q; q = strchr(q + 1, '\''))
		if (strncmp(q + 1, name, n) == 0 && q[1 + n] == '\'')
			return true;
	return false;
}

void xds_errors_format(const struct arn_xds_errors *e, struct arn_sb *out)
{
	for (size_t i = 0; i < e->n; i++) {
		if (i)
			arn_sb_puts(out, "; ");
		if (e->v[i].name && e->v[i].name[0] && !names_itself(e->v[i].reason, e->v[i].name))
			arn_sb_printf(out, "'%s': ", e->v[i].name);
		arn_sb_puts(out, e->v[i].reason ? e->v[i].reason : "");
	}
}

void arn_xds_truncate_error(const char *msg, size_t max, struct arn_sb *out)
{
	static const char tail[] = "...(truncated)";
	size_t n = strlen(msg);
	if (n <= max) {
		arn_sb_append(out, msg, n);
		return;
	}
	size_t keep = max > sizeof(tail) - 1 ? max - (sizeof(tail) - 1) : 0;
	/* Cut on a UTF-8 boundary: protobuf strings must be valid UTF-8. */
	while (keep > 0 && ((unsigned char)msg[keep] & 0xC0) == 0x80)
		keep--;
	arn_sb_append(out, msg, keep);
	arn_sb_puts(out, tail);
}

struct xds_type *xds_type_find(const struct arn_xds_client *c, const char *type_url, size_t len)
{
	for (size_t i = 0; i < c->n_types; i++) {
		const char *u = c->types[i]->type_url;
		if (strlen(u) == len && memcmp(u, type_url, len) == 0)
			return c->types[i];
	}
	return NULL;
}

void xds_pending_free(struct xds_pending *p)
{
	if (p == NULL)
		return;
	free(p->nonce);
	free(p->system_version);
	free(p->error);
	free(p);
}

void xds_enqueue(struct xds_type *t, struct xds_pending *p)
{
	if (t->q_tail)
		t->q_tail->next = p;
	else
		t->q_head = p;
	t->q_tail = p;
	t->q_len++;
}
