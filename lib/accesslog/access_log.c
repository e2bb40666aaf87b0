/*
 * Access-log sinks (one per file, shared by every logger writing there),
 * their per-slot single-producer rings, loggers and filters
 * (arn_access_log.h).
 *
 * Ring protocol: the producer (one worker) owns head, the consumer (the
 * control lcore) owns tail; both are free-running byte counts. The
 * producer checks free space against tail (acquire), copies the line,
 * then publishes head (release); the consumer reads head (acquire), writes
 * the bytes out, then publishes tail (release). Lines are never split
 * across a drop: a line that does not fit is dropped whole.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "arn_access_log.h"
#include "arn_defer.h"
#include "arn_json.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "arn_stats.h"

#define RING_BYTES (256 * 1024) /* per slot per file: ~1000 lines of 256 bytes */
#define LINE_MAX_BYTES (16 * 1024)

enum al_stat {
#define ARN_STAT(kind, name, help) AL_##name,
#include "access_log_stats.def"
#undef ARN_STAT
};
static const struct arn_stat_def al_defs[] = {
#define ARN_STAT(kind, name, help) ARN_STAT_DEF(kind, name, help),
#include "access_log_stats.def"
#undef ARN_STAT
};
static struct arn_stats_schema al_schema = ARN_STATS_SCHEMA("access_logs.file", al_defs);

struct ring {
	_Alignas(64) uint64_t head; /* producer */
	_Alignas(64) uint64_t tail; /* consumer */
	_Alignas(64) char scratch[LINE_MAX_BYTES];
	char buf[RING_BYTES];
};

struct sink {
	char *path;
	int fd;
	bool own_fd; /* not stdout/stderr */
	unsigned refs;
	unsigned n_rings;
	struct ring **rings; /* one per slot */
	struct sink *next;
};

struct afilter {
	enum { F_STATUS = 0, F_DURATION, F_NOT_HC, F_FLAGS, F_AND, F_OR, F_HINT, F_HEADER } kind;
	enum { CMP_GE = 0, CMP_EQ, CMP_LE } op;
	uint64_t value; /* status code, duration in ms; F_HINT: the bool_match */
	bool if_absent; /* F_HINT: match_if_key_not_found */
	uint32_t flags; /* F_FLAGS: any of these (0: any flag at all) */
	struct afilter **sub;
	size_t n_sub;
	/* F_HEADER: a HeaderMatcher on the request's headers */
	struct {
		char *name; /* lower case */
		char *text; /* the value matched against, or NULL (presence) */
		enum { H_PRESENT = 0, H_EXACT, H_PREFIX, H_SUFFIX, H_CONTAINS } how;
		bool present; /* H_PRESENT: present_match's value */
		bool icase, invert, missing_empty;
	} h;
};

struct arn_access_logger {
	unsigned refs;
	struct arn_access_format *fmt;
	struct sink *sink;
	struct afilter *filter; /* NULL: log everything */
};

static struct sink *sinks; /* while there are any, rings follow arn_stats_workers() */
static struct arn_stats_scope *al_scope;

/* ---- rings ------------------------------------------------------------------- */

static struct ring *ring_new(void)
{
	struct ring *r = aligned_alloc(64, sizeof(struct ring));
	if (r) {
		r->head = 0;
		r->tail = 0;
	}
	return r;
}

/* Write what @p r holds. @return bytes written, or -1 on a write error. */
static ssize_t ring_drain(struct sink *s, struct ring *r)
{
	uint64_t h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	uint64_t t = r->tail;
	ssize_t total = 0;
	while (t != h) {
		size_t off = (size_t)(t % RING_BYTES), n = (size_t)(h - t);
		struct iovec iov[2];
		int cnt = 1;
		iov[0].iov_base = r->buf + off;
		iov[0].iov_len = n < RING_BYTES - off ? n : RING_BYTES - off;
		if (iov[0].iov_len < n) {
			iov[1].iov_base = r->buf;
			iov[1].iov_len = n - iov[0].iov_len;
			cnt = 2;
		}
		ssize_t w = writev(s->fd, iov, cnt);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* Drop what we cannot write rather than stall every worker. */
			t = h;
			__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
			return -1;
		}
		t += (uint64_t)w;
		total += w;
		__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	}
	return total;
}

static void sink_drain(struct sink *s)
{
	for (unsigned i = 0; i < s->n_rings; i++) {
		ssize_t w = ring_drain(s, s->rings[i]);
		if (w > 0)
			arn_stats_inc(al_scope, ARN_STATS_SLOT_CONTROL, AL_write_completed);
		else if (w < 0) {
			arn_stats_inc(al_scope, ARN_STATS_SLOT_CONTROL, AL_write_failed);
			ARN_LOG(ARN_LOG_WARN, ADMIN,
				"access log %s: write failed: %s; lines dropped", s->path,
				strerror(errno));
		}
	}
}

size_t arn_access_log_drain(void)
{
	size_t before = 0;
	int64_t pending = 0;
	for (struct sink *s = sinks; s; s = s->next) {
		for (unsigned i = 0; i < s->n_rings; i++)
			before += (size_t)(__atomic_load_n(&s->rings[i]->head, __ATOMIC_ACQUIRE) -
					   s->rings[i]->tail);
		sink_drain(s);
		for (unsigned i = 0; i < s->n_rings; i++)
			pending += (int64_t)(__atomic_load_n(&s->rings[i]->head, __ATOMIC_ACQUIRE) -
					     s->rings[i]->tail);
	}
	if (al_scope)
		arn_stats_gauge_set(al_scope, ARN_STATS_SLOT_CONTROL, AL_write_total_buffered,
				    pending);
	return before - (size_t)pending;
}

static int resize_sink(struct sink *s, unsigned slots)
{
	if (slots == s->n_rings)
		return 0;
	struct ring **r = calloc(slots, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < slots; i++) {
		r[i] = i < s->n_rings ? s->rings[i] : ring_new();
		if (r[i] == NULL) {
			for (unsigned j = s->n_rings; j < i; j++)
				free(r[j]);
			free(r);
			return -ENOMEM;
		}
	}
	/* Rings that go away are drained first (no worker runs now). */
	for (unsigned i = slots; i < s->n_rings; i++) {
		ring_drain(s, s->rings[i]);
		free(s->rings[i]);
	}
	free(s->rings);
	s->rings = r;
	s->n_rings = slots;
	return 0;
}

/* One ring per stats slot: lib/stats tells us when the workers change. */
static int resize_all(unsigned n, void *arg)
{
	(void)arg;
	for (struct sink *s = sinks; s; s = s->next)
		if (resize_sink(s, 1 + n) != 0)
			return -ENOMEM;
	return 0;
}

/* ---- sinks ------------------------------------------------------------------- */

static int open_path(const char *path, bool *own)
{
	*own = false;
	if (strcmp(path, "/dev/stdout") == 0)
		return STDOUT_FILENO;
	if (strcmp(path, "/dev/stderr") == 0)
		return STDERR_FILENO;
	*own = true;
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

static struct sink *sink_get(const char *path, struct arn_sb *err)
{
	for (struct sink *s = sinks; s; s = s->next)
		if (strcmp(s->path, path) == 0) {
			s->refs++;
			return s;
		}
	struct sink *s = calloc(1, sizeof(*s));
	if (s == NULL || (s->path = strdup(path)) == NULL) {
		free(s);
		arn_sb_printf(err, "out of memory for access log %s\n", path);
		return NULL;
	}
	s->fd = open_path(path, &s->own_fd);
	if (s->fd < 0) {
		arn_sb_printf(err, "cannot open access log file %s: %s\n", path, strerror(errno));
		free(s->path);
		free(s);
		return NULL;
	}
	int rc = sinks ? 0 : arn_stats_workers_watch(resize_all, NULL);
	if (rc == -EEXIST)
		rc = 0;
	if (rc != 0 || resize_sink(s, 1 + arn_stats_workers()) != 0) {
		if (sinks == NULL && rc == 0)
			arn_stats_workers_unwatch(resize_all, NULL);
		if (s->own_fd)
			close(s->fd);
		free(s->path);
		free(s);
		arn_sb_printf(err, "out of memory for access log %s\n", path);
		return NULL;
	}
	if (al_scope == NULL)
		al_scope = arn_stats_scope_get(&al_schema, NULL, NULL);
	else
		arn_stats_scope_ref(al_scope);
	s->refs = 1;
	s->next = sinks;
	sinks = s;
	return s;
}

static void sink_put(struct sink *s)
{
	if (--s->refs > 0)
		return;
	sink_drain(s);
	for (struct sink **pp = &sinks; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	for (unsigned i = 0; i < s->n_rings; i++)
		free(s->rings[i]);
	free(s->rings);
	if (s->own_fd)
		close(s->fd);
	free(s->path);
	free(s);
	struct arn_stats_scope *sc = al_scope;
	if (sinks == NULL) {
		al_scope = NULL;
		arn_stats_workers_unwatch(resize_all, NULL);
	}
	arn_stats_scope_put(sc);
}

int arn_access_log_reopen(void)
{
	int first = 0;
	for (struct sink *s = sinks; s; s = s->next) {
		if (!s->own_fd)
			continue;
		sink_drain(s);
		int fd = open(s->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			int e = -errno;
			ARN_ERR(ADMIN, "reopening access log %s: %s; still writing to the old file",
				s->path, strerror(errno));
			arn_stats_inc(al_scope, ARN_STATS_SLOT_CONTROL, AL_reopen_failed);
			if (first == 0)
				first = e;
			continue;
		}
		close(s->fd);
		s->fd = fd;
	}
	return first;
}

/* ---- loggers ------------------------------------------------------------------- */

struct arn_access_logger *arn_access_logger_open(const char *path, struct arn_access_format *fmt,
						 struct arn_sb *err)
{
	bool own_fmt = false;
	if (fmt == NULL) {
		fmt = arn_access_format_text(ARN_ACCESS_LOG_DEFAULT_FORMAT, err);
		if (fmt == NULL)
			return NULL;
		own_fmt = true;
	}
	struct arn_access_logger *l = calloc(1, sizeof(*l));
	struct sink *s = l ? sink_get(path, err) : NULL;
	if (s == NULL) {
		free(l);
		if (own_fmt)
			arn_access_format_free(fmt);
		return NULL;
	}
	l->refs = 1;
	l->fmt = fmt;
	l->sink = s;
	return l;
}

void arn_access_logger_ref(struct arn_access_logger *l)
{
	l->refs++;
}

static void afilter_free(struct afilter *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n_sub; i++)
		afilter_free(f->sub[i]);
	free(f->sub);
	free(f->h.name);
	free(f->h.text);
	free(f);
}

static void logger_free(void *arg)
{
	struct arn_access_logger *l = arg;
	sink_put(l->sink);
	arn_access_format_free(l->fmt);
	afilter_free(l->filter);
	free(l);
}

void arn_access_logger_put(struct arn_access_logger *l)
{
	if (l == NULL || --l->refs > 0)
		return;
	arn_defer_free(arn_defer_default(), logger_free, l);
}

static bool cmp(int op, uint64_t a, uint64_t b)
{
	return op == CMP_EQ ? a == b : op == CMP_LE ? a <= b : a >= b;
}

static bool eq_nocase(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
			return false;
	return true;
}

static bool same(const struct afilter *f, const char *a, const char *b, size_t n)
{
	return f->h.icase ? eq_nocase(a, b, n) : memcmp(a, b, n) == 0;
}

/* @p v (@p n bytes) against the matcher's text, as Envoy's StringMatcher. */
static bool header_text_match(const struct afilter *f, const char *v, size_t n)
{
	size_t t = strlen(f->h.text);
	switch (f->h.how) {
	case H_EXACT:
		return n == t && same(f, v, f->h.text, t);
	case H_PREFIX:
		return n >= t && same(f, v, f->h.text, t);
	case H_SUFFIX:
		return n >= t && same(f, v + n - t, f->h.text, t);
	case H_CONTAINS:
		for (size_t i = 0; i + t <= n; i++)
			if (same(f, v + i, f->h.text, t))
				return true;
		return false;
	case H_PRESENT:
		break;
	}
	return false;
}

/* Envoy's HeaderUtility::matchHeaders on the record's request: the
 * header's values joined with ',' (its first 4 KiB), pseudo-headers from
 * the record's fields. */
static bool header_pass(const struct afilter *f, const struct arn_access_record *r)
{
	char joined[4096];
	size_t n = 0;
	bool found = false;
	const struct arn_access_str *pseudo = NULL;
	if (!strcmp(f->h.name, ":path"))
		pseudo = &r->path;
	else if (!strcmp(f->h.name, ":method"))
		pseudo = &r->method;
	else if (!strcmp(f->h.name, ":authority"))
		pseudo = &r->authority;
	else if (!strcmp(f->h.name, ":scheme"))
		pseudo = &r->scheme;
	if (pseudo) {
		found = pseudo->p != NULL;
		n = pseudo->len < sizeof(joined) ? pseudo->len : sizeof(joined);
		if (found)
			memcpy(joined, pseudo->p, n);
	} else {
		size_t nl = strlen(f->h.name);
		for (unsigned i = 0; i < r->n_req_headers; i++) {
			const struct arn_access_header *h = &r->req_headers[i];
			if (h->name.len != nl || !eq_nocase(h->name.p, f->h.name, nl))
				continue;
			if (found && n < sizeof(joined))
				joined[n++] = ',';
			found = true;
			size_t k =
			    h->value.len < sizeof(joined) - n ? h->value.len : sizeof(joined) - n;
			memcpy(joined + n, h->value.p, k);
			n += k;
		}
	}
	if (!found && !f->h.missing_empty)
		return f->h.how == H_PRESENT && f->h.present == f->h.invert;
	bool m = f->h.how == H_PRESENT ? f->h.present : header_text_match(f, joined, n);
	return m != f->h.invert;
}

static bool afilter_pass(const struct afilter *f, const struct arn_access_record *r)
{
	switch (f->kind) {
	case F_STATUS:
		return cmp(f->op, r->response_code, f->value);
	case F_DURATION:
		return r->duration_us != UINT64_MAX && cmp(f->op, r->duration_us / 1000, f->value);
	case F_NOT_HC:
		return !r->health_check;
	case F_FLAGS:
		return f->flags ? (r->response_flags & f->flags) != 0 : r->response_flags != 0;
	case F_HINT:
		if (r->access_log_hint == ARN_ACCESS_HINT_ABSENT)
			return f->if_absent;
		return (r->access_log_hint == ARN_ACCESS_HINT_TRUE) == (f->value != 0);
	case F_HEADER:
		return header_pass(f, r);
	case F_AND:
		for (size_t i = 0; i < f->n_sub; i++)
			if (!afilter_pass(f->sub[i], r))
				return false;
		return true;
	case F_OR:
		for (size_t i = 0; i < f->n_sub; i++)
			if (afilter_pass(f->sub[i], r))
				return true;
		return false;
	}
	return true;
}

void arn_access_log_write(struct arn_access_logger *l, unsigned slot,
			  const struct arn_access_record *r)
{
	if (l->filter && !afilter_pass(l->filter, r))
		return;
	struct sink *s = l->sink;
	if (slot >= s->n_rings)
		slot = ARN_STATS_SLOT_CONTROL; /* misuse; better than a wild write */
	struct ring *rg = s->rings[slot];
	size_t n = arn_access_format_apply(l->fmt, r, rg->scratch, sizeof(rg->scratch));
	uint64_t h = rg->head;
	uint64_t t = __atomic_load_n(&rg->tail, __ATOMIC_ACQUIRE);
	if (RING_BYTES - (h - t) < n) {
		arn_stats_inc(al_scope, slot, AL_dropped);
		return;
	}
	size_t off = (size_t)(h % RING_BYTES), first = RING_BYTES - off;
	if (first >= n) {
		memcpy(rg->buf + off, rg->scratch, n);
	} else {
		memcpy(rg->buf + off, rg->scratch, first);
		memcpy(rg->buf, rg->scratch + first, n - first);
	}
	__atomic_store_n(&rg->head, h + n, __ATOMIC_RELEASE);
	arn_stats_inc(al_scope, slot, AL_write_buffered);
}

/* ---- from configuration -------------------------------------------------------- */

static const struct arn_json *jget(const struct arn_json *o, const char *k)
{
	return arn_json_get(o, k);
}

static const char *jstr(const struct arn_json *o, const char *k)
{
	const struct arn_json *v = jget(o, k);
	return v && v->type == ARN_JSON_STRING ? v->str : NULL;
}

static struct afilter *filter_from_json(const struct arn_json *j, const char *where,
					struct arn_sb *err, int depth)
{
	struct afilter *f = calloc(1, sizeof(*f));
	if (f == NULL || j == NULL || j->type != ARN_JSON_OBJECT || j->n != 1 || depth > 16) {
		arn_sb_printf(err, "%s.filter: expected exactly one filter\n", where);
		free(f);
		return NULL;
	}
	const char *k = j->keys[0];
	const struct arn_json *v = j->v[0];
	if (!strcmp(k, "status_code_filter") || !strcmp(k, "duration_filter")) {
		f->kind = k[0] == 's' ? F_STATUS : F_DURATION;
		const struct arn_json *c = jget(v, "comparison");
		if (c == NULL || c->type != ARN_JSON_OBJECT) {
			/* required in Envoy's proto (validate.rules) */
			arn_sb_printf(err, "%s.filter.%s.comparison: missing\n", where, k);
			free(f);
			return NULL;
		}
		/* EQ is the enum's 0: a JSON of the proto leaves it out */
		const char *op = jstr(c, "op");
		f->op = op == NULL || !strcmp(op, "EQ") ? CMP_EQ
			: !strcmp(op, "GE")		? CMP_GE
							: CMP_LE;
		const struct arn_json *rv = jget(c, "value");
		const struct arn_json *dv = jget(rv, "default_value");
		f->value = dv && dv->lit ? strtoull(dv->lit, NULL, 10) : 0;
		return f;
	}
	if (!strcmp(k, "not_health_check_filter")) {
		/* requests the health_check HTTP filter answered (or marked, in
		 * pass-through mode) are health checks */
		f->kind = F_NOT_HC;
		return f;
	}
	if (!strcmp(k, "response_flag_filter")) {
		f->kind = F_FLAGS;
		const struct arn_json *fl = jget(v, "flags");
		static const char *const names[] = {
#define ARN_RESPONSE_FLAG(id, s, l) s,
#include "arn_response_flags.def"
#undef ARN_RESPONSE_FLAG
		};
		for (size_t i = 0; fl && i < fl->n; i++) {
			const char *n = fl->v[i]->str;
			size_t b = 0;
			while (b < ARN_RF__COUNT && (n == NULL || strcmp(names[b], n) != 0))
				b++;
			if (b == ARN_RF__COUNT) {
				arn_sb_printf(err,
					      "%s.filter.response_flag_filter.flags[%zu]: '%s' is "
					      "not a response flag (UH, UF, NR, ...)\n",
					      where, i, n ? n : "?");
				free(f);
				return NULL;
			}
			f->flags |= 1u << b;
		}
		return f;
	}
	if (!strcmp(k, "metadata_filter")) {
		/* only the key an RBAC filter with action LOG sets: envoy.common
		 * access_log_hint, matched with bool_match */
		f->kind = F_HINT;
		const struct arn_json *m = jget(v, "matcher");
		const struct arn_json *path = jget(m, "path");
		const struct arn_json *val = jget(m, "value");
		const struct arn_json *bm = jget(val, "bool_match");
		const char *ns = jstr(m, "filter");
		const char *key = path && path->type == ARN_JSON_ARRAY && path->n == 1
				      ? jstr(path->v[0], "key")
				      : NULL;
		if (!m || !ns || strcmp(ns, "envoy.common") != 0 || !key ||
		    strcmp(key, "access_log_hint") != 0 || !bm || bm->type != ARN_JSON_BOOL ||
		    (m->n != 3)) {
			arn_sb_printf(err,
				      "%s.filter.metadata_filter: only the matcher "
				      "{filter: envoy.common, path: [{key: access_log_hint}], "
				      "value: {bool_match: ...}} (RBAC's LOG action) is supported "
				      "by Arion\n",
				      where);
			free(f);
			return NULL;
		}
		f->value = strcmp(bm->lit, "true") == 0;
		const struct arn_json *nf = jget(v, "match_if_key_not_found");
		/* Envoy: unset or true logs a request without the key */
		f->if_absent = !nf || nf->type != ARN_JSON_BOOL || strcmp(nf->lit, "true") == 0;
		return f;
	}
	if (!strcmp(k, "header_filter")) {
		f->kind = F_HEADER;
		const struct arn_json *h = jget(v, "header");
		const char *name = jstr(h, "name");
		if (!name || !*name) {
			arn_sb_printf(err, "%s.filter.header_filter.header.name: missing\n", where);
			free(f);
			return NULL;
		}
		f->h.name = strdup(name);
		for (char *c = f->h.name; c && *c; c++)
			*c = (char)tolower((unsigned char)*c);
		const struct arn_json *b = jget(h, "invert_match");
		f->h.invert = b && b->type == ARN_JSON_BOOL && !strcmp(b->lit, "true");
		b = jget(h, "treat_missing_header_as_empty");
		f->h.missing_empty = b && b->type == ARN_JSON_BOOL && !strcmp(b->lit, "true");
		static const struct {
			const char *key;
			int how;
		} kinds[] = {{"exact_match", H_EXACT},
			     {"prefix_match", H_PREFIX},
			     {"suffix_match", H_SUFFIX},
			     {"contains_match", H_CONTAINS}};
		const char *text = NULL;
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !text; i++)
			if ((text = jstr(h, kinds[i].key)))
				f->h.how = kinds[i].how;
		const struct arn_json *sm = jget(h, "string_match");
		if (!text && sm) {
			static const struct {
				const char *key;
				int how;
			} sk[] = {{"exact", H_EXACT},
				  {"prefix", H_PREFIX},
				  {"suffix", H_SUFFIX},
				  {"contains", H_CONTAINS}};
			for (size_t i = 0; i < sizeof(sk) / sizeof(sk[0]) && !text; i++)
				if ((text = jstr(sm, sk[i].key)))
					f->h.how = sk[i].how;
			b = jget(sm, "ignore_case");
			f->h.icase = b && b->type == ARN_JSON_BOOL && !strcmp(b->lit, "true");
		}
		const struct arn_json *pm = jget(h, "present_match");
		const char *bad = jget(h, "safe_regex_match") ? "safe_regex_match"
				  : jget(h, "range_match")    ? "range_match"
				  : sm && !text && jget(sm, "safe_regex")
				      ? "string_match.safe_regex"
				  : sm && !text ? "string_match"
						: NULL;
		if (bad) {
			arn_sb_printf(
			    err,
			    "%s.filter.header_filter.header.%s: not supported by Arion in "
			    "an access log filter (exact, prefix, suffix, contains and "
			    "present matches are)\n",
			    where, bad);
			afilter_free(f);
			return NULL;
		}
		if (text) {
			f->h.text = strdup(text);
		} else {
			/* present_match, or no matcher at all: presence, as Envoy */
			f->h.how = H_PRESENT;
			f->h.present =
			    !pm || (pm->type == ARN_JSON_BOOL && !strcmp(pm->lit, "true"));
		}
		if (!f->h.name || (text && !f->h.text)) {
			arn_sb_printf(err, "%s.filter: out of memory\n", where);
			afilter_free(f);
			return NULL;
		}
		return f;
	}
	if (!strcmp(k, "and_filter") || !strcmp(k, "or_filter")) {
		f->kind = k[0] == 'a' ? F_AND : F_OR;
		const struct arn_json *fs = jget(v, "filters");
		size_t n = fs ? fs->n : 0;
		f->sub = calloc(n ? n : 1, sizeof(*f->sub));
		if (f->sub == NULL) {
			free(f);
			return NULL;
		}
		for (size_t i = 0; i < n; i++) {
			f->sub[i] = filter_from_json(fs->v[i], where, err, depth + 1);
			f->n_sub = i + 1;
			if (f->sub[i] == NULL) {
				afilter_free(f);
				return NULL;
			}
		}
		return f;
	}
	arn_sb_printf(err,
		      "%s.filter.%s: this access log filter is not supported by Arion (use "
		      "status_code_filter, duration_filter, response_flag_filter, "
		      "not_health_check_filter, header_filter, metadata_filter, and_filter, "
		      "or_filter)\n",
		      where, k);
	free(f);
	return NULL;
}

/* A json_format object ({"key": "format", ...}) compiled, with
 * omit_empty_values @p omit_empty. Errors start with @p where (the
 * json_format field's path): "<where>.<key>: reason" for a member,
 * "<where>: reason" for the format. */
static struct arn_access_format *format_json_obj(const struct arn_json *js, bool omit_empty,
						 const char *where, struct arn_sb *err)
{
	if (js->type != ARN_JSON_OBJECT) {
		arn_sb_printf(err, "%s: not a JSON object\n", where);
		return NULL;
	}
	const char **keys = calloc(js->n ? js->n : 1, sizeof(*keys));
	const char **vals = calloc(js->n ? js->n : 1, sizeof(*vals));
	struct arn_access_format *f = NULL;
	bool ok = keys && vals;
	for (size_t i = 0; ok && i < js->n; i++) {
		keys[i] = js->keys[i];
		if (js->v[i]->type != ARN_JSON_STRING) {
			/* Envoy writes nested objects and literal numbers;
			 * Arion writes none, and refuses them rather than
			 * leaving the member out of every line */
			arn_sb_printf(err,
				      "%s.%s: Arion takes string values (command operators) "
				      "here\n",
				      where, js->keys[i]);
			ok = false;
		}
		vals[i] = js->v[i]->str;
	}
	if (ok) {
		struct arn_sb e = ARN_SB_INIT;
		f = arn_access_format_json(keys, vals, js->n, &e);
		if (f == NULL)
			arn_sb_printf(err, "%s: %s", where, arn_sb_cstr(&e));
		arn_sb_free(&e);
	}
	free(keys);
	free(vals);
	arn_access_format_omit_empty(f, omit_empty);
	return f;
}

/* A format string (or Envoy's default, @p text NULL) compiled, as
 * format_json_obj. */
static struct arn_access_format *format_text(const char *text, bool omit_empty, const char *where,
					     struct arn_sb *err)
{
	struct arn_sb e = ARN_SB_INIT;
	struct arn_access_format *f =
	    arn_access_format_text(text ? text : ARN_ACCESS_LOG_DEFAULT_FORMAT, &e);
	if (f == NULL)
		arn_sb_printf(err, "%s: %s", where, arn_sb_cstr(&e));
	arn_sb_free(&e);
	arn_access_format_omit_empty(f, omit_empty);
	return f;
}

struct arn_access_format *arn_access_format_of(const char *json_format, const char *text,
					       bool omit_empty, const char *where,
					       struct arn_sb *err)
{
	if (!json_format)
		return format_text(text, omit_empty, where, err);
	struct arn_json *j = arn_json_parse(json_format, strlen(json_format));
	if (!j) {
		arn_sb_printf(err, "%s: not valid JSON\n", where);
		return NULL;
	}
	struct arn_access_format *f = format_json_obj(j, omit_empty, where, err);
	arn_json_free(j);
	return f;
}

/* A SubstitutionFormatString (log_format) as JSON. */
static struct arn_access_format *format_from_json(const struct arn_json *lf, const char *where,
						  struct arn_sb *err)
{
	if (jget(lf, "formatters")) {
		arn_sb_printf(err, "%s.log_format.formatters: not supported by Arion\n", where);
		return NULL;
	}
	/* from the proto's JSON: a bool, present only when true */
	const struct arn_json *omit = jget(lf, "omit_empty_values");
	bool omit_empty = omit && omit->type == ARN_JSON_BOOL && !strcmp(omit->lit, "true");
	const char *text = jstr(lf, "text_format");
	const struct arn_json *src = jget(lf, "text_format_source");
	const struct arn_json *js = jget(lf, "json_format");
	if (src) {
		text = jstr(src, "inline_string");
		if (text == NULL) {
			arn_sb_printf(err,
				      "%s.log_format.text_format_source: only inline_string is "
				      "supported\n",
				      where);
			return NULL;
		}
	}
	struct arn_sb at = ARN_SB_INIT;
	arn_sb_printf(&at, "%s.log_format.%s", where, js ? "json_format" : "text_format");
	struct arn_access_format *f = js ? format_json_obj(js, omit_empty, arn_sb_cstr(&at), err)
					 : format_text(text, omit_empty, arn_sb_cstr(&at), err);
	arn_sb_free(&at);
	return f;
}

struct arn_access_filter *arn_access_filter_json(const char *json, size_t len, const char *where,
						 struct arn_sb *err)
{
	struct arn_json *j = arn_json_parse(json, len);
	if (j == NULL) {
		arn_sb_printf(err, "%s.filter: not valid JSON\n", where);
		return NULL;
	}
	struct afilter *f = filter_from_json(j, where, err, 0);
	arn_json_free(j);
	return (struct arn_access_filter *)f;
}

bool arn_access_filter_match(const struct arn_access_filter *f, const struct arn_access_record *r)
{
	return afilter_pass((const struct afilter *)f, r);
}

void arn_access_filter_free(struct arn_access_filter *f)
{
	afilter_free((struct afilter *)f);
}

void arn_access_logger_set_filter(struct arn_access_logger *l, struct arn_access_filter *f)
{
	afilter_free(l->filter);
	l->filter = (struct afilter *)f;
}

struct arn_access_logger *arn_access_logger_create(const void *access_log_pb, const char *where,
						   struct arn_sb *err)
{
	struct arn_sb js = ARN_SB_INIT;
	const upb_MessageDef *md = arn_proto_msgdef("envoy.config.accesslog.v3.AccessLog");
	if (md == NULL || arn_proto_to_json(access_log_pb, md, &js) != 0) {
		arn_sb_printf(err, "%s: cannot read the access log configuration\n", where);
		arn_sb_free(&js);
		return NULL;
	}
	struct arn_json *j = arn_json_parse(js.buf ? js.buf : "{}", js.len ? js.len : 2);
	arn_sb_free(&js);
	struct arn_access_logger *l = NULL;
	struct afilter *filter = NULL;
	struct arn_access_format *fmt = NULL;
	const struct arn_json *tc = jget(j, "typed_config");
	const char *type = jstr(tc, "@type");
	const char *tn = type ? strrchr(type, '/') : NULL;
	tn = tn ? tn + 1 : type;
	if (j == NULL || tn == NULL) {
		arn_sb_printf(err,
			      "%s.typed_config: missing (an access logger needs one, such "
			      "as " ARN_TYPE_FILE_ACCESS_LOG ")\n",
			      where);
		goto out;
	}
	if (jget(j, "filter") &&
	    (filter = filter_from_json(jget(j, "filter"), where, err, 0)) == NULL)
		goto out;
	const char *path;
	if (!strcmp(tn, ARN_TYPE_FILE_ACCESS_LOG)) {
		path = jstr(tc, "path");
		if (path == NULL || !*path) {
			arn_sb_printf(err, "%s.typed_config.path: missing (the file to write)\n",
				      where);
			goto out;
		}
		const struct arn_json *lf = jget(tc, "log_format");
		const char *old_fmt = jstr(tc, "format");
		const struct arn_json *old_json = jget(tc, "json_format");
		if (jget(tc, "typed_json_format")) {
			arn_sb_printf(err,
				      "%s.typed_config.typed_json_format: not supported by "
				      "Arion; use log_format.json_format\n",
				      where);
			goto out;
		}
		if (lf) {
			fmt = format_from_json(lf, where, err);
		} else if (old_json) {
			struct arn_json wrap = {
			    .type = ARN_JSON_OBJECT,
			    .n = 1,
			    .keys = (char *[]){"json_format"},
			    .v = (struct arn_json *[]){(struct arn_json *)old_json}};
			fmt = format_from_json(&wrap, where, err);
		} else {
			struct arn_sb e = ARN_SB_INIT;
			fmt = arn_access_format_text(
			    old_fmt ? old_fmt : ARN_ACCESS_LOG_DEFAULT_FORMAT, &e);
			if (fmt == NULL)
				arn_sb_printf(err, "%s.typed_config.format: %s", where,
					      arn_sb_cstr(&e));
			arn_sb_free(&e);
		}
	} else if (!strcmp(tn, ARN_TYPE_STDOUT_ACCESS_LOG) ||
		   !strcmp(tn, ARN_TYPE_STDERR_ACCESS_LOG)) {
		path = strstr(tn, "Stdout") ? "/dev/stdout" : "/dev/stderr";
		const struct arn_json *lf = jget(tc, "log_format");
		struct arn_json empty = {.type = ARN_JSON_OBJECT};
		fmt = format_from_json(lf ? lf : &empty, where, err);
	} else {
		arn_sb_printf(
		    err,
		    "%s.typed_config: %s is not an access logger Arion has (FileAccessLog, "
		    "StdoutAccessLog, StderrAccessLog)\n",
		    where, tn);
		goto out;
	}
	if (fmt == NULL)
		goto out;
	l = arn_access_logger_open(path, fmt, err);
	if (l == NULL) {
		arn_access_format_free(fmt);
		goto out;
	}
	l->filter = filter;
	filter = NULL;
out:
	afilter_free(filter);
	arn_json_free(j);
	return l;
}
