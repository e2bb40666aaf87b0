/* See h1_harness.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arn_sb.h"
#include "h1_harness.h"

/* Pieces kept alive for the whole run: head slices point into them. */
struct pieces {
	enum h1t_alloc alloc;
	char *map; /* H1T_GUARD: one mapping, pieces each before a guard page */
	size_t maplen;
	char **bufs; /* H1T_MALLOC */
	size_t nbufs;
};

static size_t pgsz(void)
{
	static size_t p;
	if (!p)
		p = (size_t)sysconf(_SC_PAGESIZE);
	return p;
}

static size_t pages_for(size_t n)
{
	size_t pg = pgsz();
	return n ? (n + pg - 1) / pg : 1;
}

/* Lay out the pieces; ptrs[i] gets where piece i lives. */
static int pieces_make(struct pieces *ps, const char *in, const size_t *bounds, size_t np,
		       const char **ptrs)
{
	size_t pg = pgsz();
	if (ps->alloc == H1T_MALLOC) {
		ps->bufs = calloc(np ? np : 1, sizeof(char *));
		ps->nbufs = np;
		for (size_t i = 0; i < np; i++) {
			size_t len = bounds[i + 1] - bounds[i];
			ps->bufs[i] = malloc(len ? len : 1);
			memcpy(ps->bufs[i], in + bounds[i], len);
			ptrs[i] = ps->bufs[i];
		}
		return 0;
	}
	size_t total = 0;
	for (size_t i = 0; i < np; i++)
		total += pages_for(bounds[i + 1] - bounds[i]) + 1;
	ps->maplen = (total ? total : 1) * pg;
	ps->map =
	    mmap(NULL, ps->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ps->map == MAP_FAILED)
		return -1;
	size_t off = 0;
	for (size_t i = 0; i < np; i++) {
		size_t len = bounds[i + 1] - bounds[i];
		size_t npg = pages_for(len);
		char *guard = ps->map + off + npg * pg;
		char *dst = guard - len;
		memcpy(dst, in + bounds[i], len);
		if (mprotect(guard, pg, PROT_NONE) != 0)
			return -1;
		ptrs[i] = dst;
		off += (npg + 1) * pg;
	}
	return 0;
}

char *h1t_guarded(const char *src, size_t n, void **map, size_t *maplen)
{
	struct pieces ps = {.alloc = H1T_GUARD};
	size_t bounds[2] = {0, n};
	const char *ptr;
	if (pieces_make(&ps, src, bounds, 1, &ptr) != 0) {
		if (ps.map && ps.map != MAP_FAILED)
			munmap(ps.map, ps.maplen);
		return NULL;
	}
	*map = ps.map;
	*maplen = ps.maplen;
	return (char *)ptr;
}

static void pieces_free(struct pieces *ps)
{
	if (ps->map && ps->map != MAP_FAILED)
		munmap(ps->map, ps->maplen);
	for (size_t i = 0; i < ps->nbufs; i++)
		free(ps->bufs[i]);
	free(ps->bufs);
}

static void esc(struct arn_sb *sb, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			arn_sb_putc(sb, (char)c);
		else
			arn_sb_printf(sb, "\\x%02x", c);
	}
}

static const struct {
	uint32_t f;
	const char *name;
} flag_names[] = {
    {ARN_H1_F_CONTENT_LENGTH, "cl"},
    {ARN_H1_F_CHUNKED, "chunked"},
    {ARN_H1_F_UNTIL_CLOSE, "eof"},
    {ARN_H1_F_NO_BODY, "nobody"},
    {ARN_H1_F_KEEP_ALIVE, "ka"},
    {ARN_H1_F_CONN_CLOSE, "c-close"},
    {ARN_H1_F_CONN_KEEP_ALIVE, "c-ka"},
    {ARN_H1_F_CONN_UPGRADE, "c-upgrade"},
    {ARN_H1_F_UPGRADE, "upgrade"},
    {ARN_H1_F_WEBSOCKET, "ws"},
    {ARN_H1_F_H2C, "h2c"},
    {ARN_H1_F_EXPECT_CONTINUE, "100c"},
    {ARN_H1_F_EXPECT_OTHER, "expect"},
    {ARN_H1_F_TE, "te"},
    {ARN_H1_F_CL_IGNORED, "cl-ignored"},
    {ARN_H1_F_TUNNEL, "tunnel"},
    {ARN_H1_F_FRAGMENT, "frag"},
    {ARN_H1_F_TRAILERS, "trailers"},
};

static void head_line(struct arn_sb *sb, const struct arn_h1_msg *m, enum arn_h1_kind kind)
{
	static const char forms[] = "oac*";
	if (kind == ARN_H1_REQUEST) {
		arn_sb_puts(sb, "REQ ");
		esc(sb, m->method_name.p, m->method_name.len);
		arn_sb_putc(sb, ' ');
		esc(sb, m->target.p, m->target.len);
		arn_sb_printf(sb, " HTTP/1.%d form=%c auth=", m->version - 10,
			      forms[m->target_form]);
		esc(sb, m->authority.p, m->authority.len);
		arn_sb_puts(sb, " path=");
		esc(sb, m->path.p, m->path.len);
	} else {
		arn_sb_printf(sb, "RES %u ", m->status);
		esc(sb, m->reason.p, m->reason.len);
		arn_sb_printf(sb, " HTTP/1.%d", m->version - 10);
	}
	for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (m->flags & flag_names[i].f)
			arn_sb_printf(sb, " %s", flag_names[i].name);
	if (m->flags & ARN_H1_F_CONTENT_LENGTH)
		arn_sb_printf(sb, " len=%llu", (unsigned long long)m->content_length);
	arn_sb_putc(sb, '\n');
	for (unsigned i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		arn_sb_puts(sb, "  ");
		esc(sb, h->name, h->name_len);
		arn_sb_puts(sb, ": ");
		esc(sb, h->value, h->value_len);
		if (h->id != ARN_H1_H_OTHER)
			arn_sb_printf(sb, " #%s", arn_h1_hdr_name((enum arn_h1_hdr_id)h->id));
		arn_sb_putc(sb, '\n');
	}
}

static void end_line(struct arn_sb *sb, const struct arn_h1_msg *m, const char *what)
{
	arn_sb_printf(sb, "%s body=%llu\n", what, (unsigned long long)m->body_len);
	for (unsigned i = 0; i < m->n_trailers; i++) {
		const struct arn_h1_header *h = &m->trailers[i];
		arn_sb_puts(sb, "  T ");
		esc(sb, h->name, h->name_len);
		arn_sb_puts(sb, ": ");
		esc(sb, h->value, h->value_len);
		arn_sb_putc(sb, '\n');
	}
}

/* Consecutive body events are merged, since their sizes depend on the
 * cutting; anything else flushes the pending body. */
static void flush_body(struct arn_sb *sb, struct arn_sb *body, int *pending)
{
	if (!*pending)
		return;
	arn_sb_puts(sb, "BODY ");
	esc(sb, body->buf ? body->buf : "", body->len);
	arn_sb_putc(sb, '\n');
	arn_sb_reset(body);
	*pending = 0;
}

/* A writer into an arn_sb through @p piece-byte buffers (a line cut
 * anywhere). */
struct wsink {
	struct arn_sb out;
	char buf[64];
	uint32_t piece;
};

static int wsink_refill(struct arn_h1_wbuf *w)
{
	struct wsink *s = w->arg;
	arn_sb_append(&s->out, w->p, w->len);
	w->p = s->buf;
	w->len = 0;
	w->cap = s->piece;
	return 0;
}

static char *fields_write(const struct arn_h1_msg *m, const struct arn_h1_edit *e, unsigned n,
			  unsigned flags, uint32_t piece, size_t *len)
{
	struct wsink s = {.out = ARN_SB_INIT, .piece = piece};
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, s.buf, piece, wsink_refill, &s);
	if (arn_h1_write_headers(&w, m, e, n, flags) != 0)
		abort();
	arn_sb_append(&s.out, w.p, w.len);
	*len = s.out.len;
	return arn_sb_steal(&s.out);
}

void h1t_fields_whole_check(const struct arn_h1_msg *m)
{
	if (!(m->flags & ARN_H1_F_FIELDS_WHOLE))
		return;
	unsigned n = m->n_hdrs;
	/* the promise itself */
	for (unsigned i = 0; i < n; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (h->value != h->name + h->name_len + 2 ||
		    memcmp(h->name + h->name_len, ": ", 2) ||
		    memcmp(h->value + h->value_len, "\r\n", 2) ||
		    (i + 1 < n && m->hdrs[i + 1].name != h->value + h->value_len + 2)) {
			fprintf(stderr, "FIELDS_WHOLE on a head whose line %u is not as it says\n",
				i);
			abort();
		}
	}
	/* and what the writer makes of it: the bytes it writes without the
	 * flag, with every kind of edit on the message's own names (first,
	 * middle, last line) and others, hop-by-hop fields dropped or not */
	struct arn_h1_msg plain = *m;
	plain.flags &= ~ARN_H1_F_FIELDS_WHOLE;
	const struct arn_h1_header *a = n ? &m->hdrs[0] : NULL, *b = n ? &m->hdrs[n / 2] : NULL,
				   *z = n ? &m->hdrs[n - 1] : NULL;
#define NAME(h) .name = (h) ? (h)->name : "x-none", .name_len = (h) ? (h)->name_len : 6
	const struct arn_h1_edit sets[][4] = {
	    {{0}},
	    {{NAME(a), .op = ARN_H1_EDIT_REMOVE}},
	    {{NAME(z), .value = "v", .value_len = 1, .op = ARN_H1_EDIT_SET}},
	    {{NAME(b), .op = ARN_H1_EDIT_REMOVE},
	     {.name = "x-added",
	      .name_len = 7,
	      .value = "1",
	      .value_len = 1,
	      .op = ARN_H1_EDIT_ADD},
	     {.name = "x-forwarded-for",
	      .name_len = 15,
	      .value = "9.9.9.9",
	      .value_len = 7,
	      .op = ARN_H1_EDIT_APPEND_VALUE}},
	    {{NAME(b), .value = "w", .value_len = 1, .op = ARN_H1_EDIT_SET_IF_PRESENT},
	     {NAME(z), .value = "u", .value_len = 1, .op = ARN_H1_EDIT_ADD_IF_ABSENT},
	     {.name = "host",
	      .name_len = 4,
	      .value = "h",
	      .value_len = 1,
	      .op = ARN_H1_EDIT_ADD_IF_ABSENT}},
	    {{.name = "connection", .name_len = 10, .op = ARN_H1_EDIT_REMOVE},
	     {.name = "server", .name_len = 6, .value = "s", .value_len = 1, .op = ARN_H1_EDIT_SET},
	     {NAME(a), .value = "t", .value_len = 1, .op = ARN_H1_EDIT_ADD}},
	};
#undef NAME
	static const unsigned counts[] = {0, 1, 1, 3, 3, 3};
	static const unsigned wflags[] = {
	    0, ARN_H1_W_DROP_HOP, ARN_H1_W_DROP_HOP | ARN_H1_W_UPGRADE | ARN_H1_W_TE_TRAILERS};
	for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
		for (unsigned f = 0; f < 3; f++)
			for (uint32_t piece = 7; piece <= 64; piece += 57) {
				size_t la, lb;
				char *x =
				    fields_write(m, sets[k], counts[k], wflags[f], piece, &la);
				char *y =
				    fields_write(&plain, sets[k], counts[k], wflags[f], piece, &lb);
				if (la != lb || memcmp(x, y, la) != 0) {
					fprintf(stderr,
						"FIELDS_WHOLE: edits %u, flags %u: the flag wrote\n"
						"%.*s--- without it:\n%.*s",
						k, wflags[f], (int)la, x, (int)lb, y);
					abort();
				}
				free(x);
				free(y);
			}
}

char *h1t_run(const char *in, size_t n, const size_t *cuts, size_t ncuts, const struct h1t_opts *o)
{
	struct arn_sb sb = ARN_SB_INIT, body = ARN_SB_INIT;
	struct pieces ps = {.alloc = o->alloc};
	size_t np = ncuts + 1;
	size_t *bounds = malloc((np + 1) * sizeof(size_t));
	const char **ptrs = calloc(np, sizeof(char *));
	uint16_t cap = o->hdr_cap ? o->hdr_cap : 128;
	struct arn_h1_header *hdrs = calloc(cap, sizeof(*hdrs));
	/* trailers beyond the slots the head left (NEED_TRAILERS) */
	uint16_t trl_cap =
	    o->cfg && o->cfg->max_headers ? o->cfg->max_headers : ARN_H1_DEFAULT_MAX_HEADERS;
	struct arn_h1_header *trl = NULL;
	struct arn_h1_msg msg;
	struct arn_h1_parser p;
	struct arn_h1_ev ev;
	uint32_t max_head =
	    o->cfg && o->cfg->max_head_bytes ? o->cfg->max_head_bytes : ARN_H1_DEFAULT_MAX_HEAD;
	uint32_t scap = o->scratch_cap ? o->scratch_cap : max_head + 1024;
	char *smap = NULL, *scratch;
	size_t smaplen = (pages_for(scap) + 1) * pgsz();
	int pending = 0, stop = 0;

	bounds[0] = 0;
	for (size_t i = 0; i < ncuts; i++)
		bounds[i + 1] = cuts[i];
	bounds[np] = n;
	if (pieces_make(&ps, in, bounds, np, ptrs) != 0) {
		arn_sb_puts(&sb, "HARNESS: mmap failed\n");
		goto out;
	}
	/* scratch too ends at a guard page: a write or read past cap faults */
	smap = mmap(NULL, smaplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(smap + smaplen - pgsz(), pgsz(), PROT_NONE);
	scratch = smap + smaplen - pgsz() - scap;

	arn_h1_msg_init(&msg, hdrs, cap);
	arn_h1_parser_init(&p, o->kind, o->cfg, &msg);
	if (o->kind == ARN_H1_RESPONSE)
		arn_h1_parser_expect(&p, o->expect ? o->expect : ARN_H1_M_GET);
	char small[24];
	if (o->grow)
		arn_h1_parser_allow_grow(&p, true);
	if (o->eager_scratch)
		arn_h1_parser_set_scratch(&p, o->grow ? small : scratch,
					  o->grow ? (uint32_t)sizeof(small) : scap);

	for (size_t i = 0; i < np && !stop; i++) {
		const char *b = ptrs[i];
		size_t len = bounds[i + 1] - bounds[i];
		int guard = 0;
		for (;;) {
			if (++guard > 1000000) {
				arn_sb_puts(&sb, "HARNESS: no progress\n");
				stop = 1;
				break;
			}
			ssize_t r = arn_h1_parse(&p, b, len, &ev);
			if (r == ARN_AGAIN)
				break;
			if (r == -EBUSY) {
				flush_body(&sb, &body, &pending);
				arn_sb_puts(&sb, "WAIT\n");
				arn_h1_parser_tunnel(&p);
				continue;
			}
			if (r == -EPIPE) {
				flush_body(&sb, &body, &pending);
				arn_sb_puts(&sb, "CLOSED\n");
				stop = 1;
				break;
			}
			if (r < 0) {
				flush_body(&sb, &body, &pending);
				arn_sb_printf(&sb, "ERR %s\n",
					      arn_h1_err_name(arn_h1_parser_error(&p)));
				stop = 1;
				break;
			}
			if ((size_t)r > len) {
				arn_sb_puts(&sb, "HARNESS: consumed more than given\n");
				stop = 1;
				break;
			}
			switch (ev.type) {
			case ARN_H1_EV_HEAD:
				flush_body(&sb, &body, &pending);
				head_line(&sb, &msg, o->kind);
				h1t_fields_whole_check(&msg);
				break;
			case ARN_H1_EV_BODY:
				if (ev.data < b || ev.data + ev.len > b + len)
					arn_sb_puts(&sb, "HARNESS: body outside the input\n");
				arn_sb_append(&body, ev.data, ev.len);
				pending = 1;
				break;
			case ARN_H1_EV_END:
				flush_body(&sb, &body, &pending);
				end_line(&sb, &msg, "END");
				/* trailers after the head's lines change none */
				h1t_fields_whole_check(&msg);
				break;
			case ARN_H1_EV_NEED_TRAILERS:
				/* an array of the trailers' budget of its own, at
				 * most once a message (the parser asks once) */
				if (o->no_trailers) {
					arn_h1_parser_no_trailers(&p);
				} else {
					if (!trl)
						trl = calloc(trl_cap, sizeof(*trl));
					if (msg.trailers == trl)
						arn_sb_puts(&sb, "HARNESS: asked twice\n");
					arn_h1_msg_set_trailers(&msg, trl, trl_cap);
				}
				break;
			case ARN_H1_EV_NEED_SCRATCH:
				if (arn_h1_parser_scratch_short(&p)) {
					/* from the small one to the large; no third */
					if (arn_h1_parser_grow_scratch(
						&p, p.scratch == scratch ? NULL : scratch, scap) !=
					    0) {
						arn_sb_puts(&sb, "HARNESS: grow refused\n");
						stop = 1;
					}
				} else if (arn_h1_parser_set_scratch(
					       &p, o->grow ? small : scratch,
					       o->grow ? (uint32_t)sizeof(small) : scap) != 0) {
					arn_sb_puts(&sb, "HARNESS: set_scratch refused\n");
					stop = 1;
				}
				break;
			default:
				arn_sb_puts(&sb, "HARNESS: no event\n");
				stop = 1;
				break;
			}
			if (stop)
				break;
			b += r;
			len -= (size_t)r;
		}
	}
	if (!stop) {
		flush_body(&sb, &body, &pending);
		if (arn_h1_parse_eof(&p, &ev) != 0)
			arn_sb_printf(&sb, "ERR %s\n", arn_h1_err_name(arn_h1_parser_error(&p)));
		else if (ev.type == ARN_H1_EV_END)
			end_line(&sb, &msg, "EOF END");
	}
out:
	if (smap)
		munmap(smap, smaplen);
	pieces_free(&ps);
	arn_sb_free(&body);
	free(bounds);
	free(ptrs);
	free(hdrs);
	free(trl);
	return arn_sb_steal(&sb);
}

char *h1t_all_splits(const char *in, size_t n, const struct h1t_opts *o, unsigned nrandom,
		     unsigned seed, char **whole)
{
	char *ref = h1t_run(in, n, NULL, 0, o);
	size_t *cuts = malloc((n ? n : 1) * sizeof(size_t));
	struct arn_sb diff = ARN_SB_INIT;
	struct h1t_opts bo = *o;
	size_t nc = 0;

	/* one byte at a time: guard pages per byte while that stays cheap */
	if (n > 8192 && bo.alloc == H1T_GUARD)
		bo.alloc = H1T_MALLOC;
	for (size_t i = 1; i < n; i++)
		cuts[nc++] = i;
	for (unsigned k = 0; k <= nrandom && !diff.len; k++) {
		const struct h1t_opts *po = k == 0 ? &bo : o;
		char *t;
		if (k > 0) {
			/* random pieces of 1..64 bytes, or larger for big inputs */
			size_t maxp = n > 4096 ? 1500 : 64;
			nc = 0;
			srand(seed * 7919u + k);
			for (size_t at = 0;;) {
				at += 1 + (size_t)rand() % maxp;
				if (at >= n)
					break;
				cuts[nc++] = at;
			}
		}
		t = h1t_run(in, n, cuts, nc, po);
		if (strcmp(t, ref) != 0)
			arn_sb_printf(
			    &diff, "%s split (%zu pieces) differs.\n--- whole:\n%s--- split:\n%s",
			    k == 0 ? "byte-by-byte" : "random", nc + 1, ref, t);
		free(t);
	}
	free(cuts);
	if (diff.len) {
		free(ref);
		if (whole)
			*whole = NULL;
		return arn_sb_steal(&diff);
	}
	if (whole)
		*whole = ref;
	else
		free(ref);
	return NULL;
}

struct sink {
	struct arn_sb out;
	char buf[29];
};

static int sink_refill(struct arn_h1_wbuf *w)
{
	struct sink *s = w->arg;
	arn_sb_append(&s->out, w->p, w->len);
	w->len = 0;
	return 0;
}

/* A request line flagged ARN_H1_F_LINE_CRLF is, byte for byte, what
 * arn_h1_write_request_line makes of its method and target (the writer
 * copies it whole on that word): else the harness stops the run. */
static void line_check(const struct arn_h1_msg *m)
{
	uint32_t n = m->method_name.len + m->target.len + 12;
	char *line = malloc(n);
	struct arn_h1_wbuf w;
	arn_h1_wbuf_init(&w, line, n, NULL, NULL);
	arn_h1_write_request_line(&w, m->method_name.p, m->method_name.len, m->target.p,
				  m->target.len, 1);
	if (w.err || w.len != n || memcmp(m->method_name.p, line, n) != 0)
		abort();
	free(line);
}

char *h1t_reserialize(const char *in, size_t n, const struct h1t_opts *o, unsigned seed,
		      size_t *outlen)
{
	uint16_t cap = o->hdr_cap ? o->hdr_cap : 128;
	struct arn_h1_header *hdrs = calloc(cap, sizeof(*hdrs));
	uint16_t trl_cap =
	    o->cfg && o->cfg->max_headers ? o->cfg->max_headers : ARN_H1_DEFAULT_MAX_HEADERS;
	struct arn_h1_header *trl = calloc(trl_cap, sizeof(*trl));
	uint32_t max_head =
	    o->cfg && o->cfg->max_head_bytes ? o->cfg->max_head_bytes : ARN_H1_DEFAULT_MAX_HEAD;
	char *scratch = malloc(max_head + 1024);
	struct arn_h1_msg m;
	struct arn_h1_parser p;
	struct arn_h1_ev ev;
	struct arn_h1_chunker ck = {0};
	struct sink s = {.out = ARN_SB_INIT};
	struct arn_h1_wbuf w;
	uint32_t x = seed * 2654435761u + 1;
	/* a request's upgrade or CONNECT turned the connection into a tunnel:
	 * its bytes go out as they came, whatever the last message's framing
	 * was (ARN_H1_F_TUNNEL only marks a response that did it; a chunked
	 * upgrade request's tunnel bytes were re-chunked) */
	bool tunnel = false;

	arn_h1_wbuf_init(&w, s.buf, sizeof(s.buf), sink_refill, &s);
	arn_h1_msg_init(&m, hdrs, cap);
	arn_h1_parser_init(&p, o->kind, o->cfg, &m);
	arn_h1_parser_set_scratch(&p, scratch, max_head + 1024);
	if (o->kind == ARN_H1_RESPONSE)
		arn_h1_parser_expect(&p, o->expect ? o->expect : ARN_H1_M_GET);
	for (;;) {
		ssize_t r = arn_h1_parse(&p, in, n, &ev);
		if (r == -EBUSY) {
			arn_h1_parser_tunnel(&p);
			tunnel = true;
			continue;
		}
		if (r < 0)
			break;
		in += r;
		n -= (size_t)r;
		if (ev.type == ARN_H1_EV_NEED_TRAILERS) {
			arn_h1_msg_set_trailers(&m, trl, trl_cap);
			continue;
		}
		if (ev.type == ARN_H1_EV_HEAD) {
			if (o->kind == ARN_H1_REQUEST && m.version == 11) {
				/* the line as it came where the parser saw it
				 * as HTTP/1.1 writes it (ARN_H1_F_LINE_CRLF),
				 * else from its fields: the round trip holds
				 * either way, and the line as it came is the
				 * one the fields make */
				if (m.flags & ARN_H1_F_LINE_CRLF)
					line_check(&m);
				arn_h1_write_request_line_of(&w, &m, m.target.p, m.target.len);
			} else if (o->kind == ARN_H1_REQUEST)
				arn_h1_write_request_line(&w, m.method_name.p, m.method_name.len,
							  m.target.p, m.target.len, m.version - 10);
			else
				arn_h1_write_status_line(&w, m.status, m.reason.p, m.reason.len,
							 m.version - 10);
			h1t_fields_whole_check(&m);
			arn_h1_write_headers(&w, &m, NULL, 0, 0);
			arn_h1_write_end(&w);
			ck.open = false;
		} else if (ev.type == ARN_H1_EV_BODY) {
			if ((m.flags & ARN_H1_F_CHUNKED) && !(m.flags & ARN_H1_F_TUNNEL) &&
			    !tunnel && arn_h1_parser_idle(&p) == false &&
			    !(m.flags & ARN_H1_F_NO_BODY)) {
				/* new chunk boundaries: the transcript must not care */
				for (size_t at = 0; at < ev.len;) {
					x ^= x << 13;
					x ^= x >> 17;
					x ^= x << 5;
					size_t k = 1 + x % 7;
					if (k > ev.len - at)
						k = ev.len - at;
					arn_h1_write_chunk_prefix(&w, &ck, k);
					arn_h1_put(&w, ev.data + at, k);
					at += k;
				}
			} else {
				arn_h1_put(&w, ev.data, ev.len);
			}
		} else if (ev.type == ARN_H1_EV_END) {
			if ((m.flags & ARN_H1_F_CHUNKED) && !(m.flags & ARN_H1_F_NO_BODY))
				arn_h1_write_chunk_end(&w, &ck, m.trailers, m.n_trailers);
		}
	}
	arn_sb_append(&s.out, w.p, w.len);
	free(hdrs);
	free(trl);
	free(scratch);
	*outlen = s.out.len;
	return arn_sb_steal(&s.out);
}
