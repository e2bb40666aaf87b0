/*
 * The router's header logic, kept free of connections and mbufs so that the
 * unit tests can drive it: the upstream request's edits (Envoy's
 * ConnectionManagerUtility::mutateRequestHeaders and the route's
 * finalizeRequestHeaders), the response's edits, redirects, header value
 * substitutions and local replies.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <emmintrin.h>

#include "arn_fmt.h"
#include "arn_h1.h"
#include "arn_ip6.h"
#include "arn_subst.h"
#include "http_int.h"

/* ---- small helpers -------------------------------------------------------- */

/* Per-request header values (timeouts, service time, addresses) are
 * formatted with arn_fmt.h rather than snprintf, which cost ~2k
 * instructions per request (bench/cost). */
static int u64_fmt(uint64_t v, char *out)
{
	return arn_fmt_u64(v, out);
}

/* NUL-terminated, for the substitutions that use it as a string */
static int ip4_fmt(uint32_t a, char *out, size_t cap)
{
	if (cap <= ARN_FMT_IP4_MAX)
		return snprintf(out, cap, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255,
				a & 255);
	int n = arn_fmt_ip4(a, out);
	out[n] = '\0';
	return n;
}

/* Parse a dotted quad (no port); @return 0 or -EINVAL. */
static int ip4_parse(const char *s, size_t n, uint32_t *out)
{
	uint32_t a = 0;
	unsigned parts = 0, v = 0, digits = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!digits || v > 255)
				return -EINVAL;
			a = (a << 8) | v;
			parts++;
			v = 0;
			digits = 0;
			continue;
		}
		if (s[i] < '0' || s[i] > '9' || digits == 3)
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
		digits++;
	}
	if (parts != 4)
		return -EINVAL;
	*out = a;
	return 0;
}

/* RFC 1918 and loopback: Envoy's Network::Utility::isInternalAddress. */
static bool ip4_internal(uint32_t a)
{
	return (a >> 24) == 10 || (a >> 20) == (172u << 4 | 1) || (a >> 16) == (192u << 8 | 168) ||
	       (a >> 24) == 127;
}

bool http_addr_internal(const struct arn_cfg_hcm *h, uint32_t a)
{
	if (!h->internal_cfg)
		return false; /* Envoy 1.36: none unless configured */
	if (!h->n_internal_cidrs)
		return ip4_internal(a);
	/* IPv6 ranges make no IPv4 address internal (CidrRange::isInRange);
	 * ranges of only IPv6 make none internal, not RFC 1918 */
	for (size_t i = 0; i < h->n_internal_cidrs; i++)
		if (arn_cfg_cidr_has4(&h->internal_cidrs[i], a))
			return true;
	return false;
}

/* Copy @p n bytes into the context's text area; NULL when full. */
static char *text_put(char *text, uint32_t cap, uint32_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return NULL;
	char *p = text + *len;
	memcpy(p, s, n);
	p[n] = 0;
	*len += (uint32_t)n + 1;
	return p;
}

/* @p v in decimal into the text, as text_put puts a string: formatted in
 * place, not through a temporary. @return its first byte (*@p k bytes),
 * or NULL when the text is full. Inline: the response's service time
 * is formatted through it once per request (bench_hcm: ~23 instructions
 * of call and spills). */
static inline char *text_put_u64(char *text, uint32_t cap, uint32_t *len, uint64_t v, size_t *k)
{
	if (*len + ARN_FMT_U64_MAX + 1 > cap) {
		char tmp[ARN_FMT_U64_MAX];
		*k = (size_t)arn_fmt_u64(v, tmp);
		return text_put(text, cap, len, tmp, *k);
	}
	char *p = text + *len;
	*k = (size_t)arn_fmt_u64(v, p);
	p[*k] = 0;
	*len += (uint32_t)*k + 1;
	return p;
}

/* A cursor that walks the X-Forwarded-For lines of a message from the
 * right as one value: Envoy's header map joins repeated lines with ","
 * (an empty line adds nothing, not even the comma). */
struct xff_rcur {
	const struct arn_h1_msg *m;
	int line;	   /* the line the cursor is in */
	const char *b, *p; /* its value's start; the cursor (bytes left of it are next) */
};

/* Move to the next non-empty X-Forwarded-For line left of line @p from. */
static bool xff_line_left(struct xff_rcur *c, int from)
{
	for (int i = from - 1; i >= 0; i--) {
		const struct arn_h1_header *h = &c->m->hdrs[i];
		if (h->id == ARN_H1_H_X_FORWARDED_FOR && h->value_len) {
			c->line = i;
			c->b = h->value;
			c->p = h->value + h->value_len;
			return true;
		}
	}
	return false;
}

/* Step left over one byte: a byte of the line, a joining ',' (the cursor
 * is then at the end of the line to the left), or -1 at the start. */
static int xff_prev(struct xff_rcur *c)
{
	if (c->p > c->b)
		return (unsigned char)*--c->p;
	return xff_line_left(c, c->line) ? ',' : -1;
}

/*
 * Envoy's Utility::getLastAddressFromXFF: the address @p skip elements from
 * the right of X-Forwarded-For, the lines joined as Envoy joins them. The
 * whole chain is walked from the right, whatever its length and however
 * many lines carry it, so no chain can push the chosen element out of a
 * bounded left part (issue 12: a fixed array of 32 made a longer chain pick
 * an attacker's element). Empty elements count, as in Envoy ("a,,b" with
 * one skipped names the empty one, which is no address).
 * @return true with the address in *@p out; false when there are fewer
 *   elements or the element is not an IPv4 address. *@p single: the joined
 *   value is that one element (Envoy's "single address", nothing skipped).
 */
static bool xff_from_right(const struct arn_h1_msg *m, unsigned skip, uint32_t *out, bool *single)
{
	struct xff_rcur c = {.m = m};
	*single = false;
	if (!xff_line_left(&c, m->n_hdrs))
		return false;
	for (unsigned k = 0; k < skip;) {
		int ch = xff_prev(&c);
		if (ch < 0)
			return false; /* fewer elements than skipped */
		k += ch == ',';
	}
	/* an element never spans lines: it ends at the cursor and starts after
	 * the nearest comma of the same line, or at the line's start */
	const char *e = c.p, *s = c.p;
	while (s > c.b && s[-1] != ',')
		s--;
	bool more_left = s > c.b || xff_line_left(&(struct xff_rcur){.m = m}, c.line);
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (ip4_parse(s, (size_t)(e - s), out) != 0)
		return false;
	*single = skip == 0 && !more_left;
	return true;
}

static bool in_cidrs(const struct arn_cfg_cidr *c, size_t n, uint32_t a)
{
	for (size_t i = 0; i < n; i++)
		if (arn_cfg_cidr_has4(&c[i], a))
			return true;
	return false;
}

static bool in_cidrs6(const struct arn_cfg_cidr *c, size_t n, const uint8_t a[16])
{
	for (size_t i = 0; i < n; i++)
		if (arn_cfg_cidr_has6(&c[i], a))
			return true;
	return false;
}

/*
 * Envoy's Utility::getLastNonTrustedAddressFromXFF: from the right of
 * X-Forwarded-For (its lines joined as xff_from_right joins them), the
 * first element not in @p cidrs, or the leftmost when all are; an element
 * that is no address ends the walk with none, and so do more than 20
 * elements (Envoy's MAX_ALLOWED_XFF_ENTRIES). An IPv6 element is parsed as
 * Envoy parses it: in an IPv6 range of @p cidrs it is a trusted proxy and
 * the walk goes on past it; else it is the client, which Envoy makes the
 * request's address and Arion, whose addresses are IPv4, cannot: the walk
 * ends with none (the next extension, else the peer), as for an element
 * that is no address. *@p single: the value is that one element.
 * @return false when there is none.
 */
static bool xff_untrusted(const struct arn_h1_msg *m, const struct arn_cfg_cidr *cidrs, size_t n,
			  uint32_t *out, bool *single)
{
	struct xff_rcur c = {.m = m};
	if (!xff_line_left(&c, m->n_hdrs))
		return false;
	/* Envoy's MAX_ALLOWED_XFF_ENTRIES: a longer chain gives none */
	unsigned elems = 0;
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *hd = &m->hdrs[i];
		if (hd->id != ARN_H1_H_X_FORWARDED_FOR || !hd->value_len)
			continue;
		elems++;
		for (uint32_t j = 0; j < hd->value_len; j++)
			elems += hd->value[j] == ',';
	}
	if (elems > 20)
		return false;
	for (unsigned k = 0;; k++) {
		/* one element, right to left; an address is at most
		 * ARN_IP6_TEXT_MAX bytes once its whitespace is trimmed, and
		 * the whitespace kept here is bounded too, so a longer one is
		 * none */
		char rev[ARN_IP6_TEXT_MAX + 16];
		size_t len = 0;
		int ch;
		while ((ch = xff_prev(&c)) >= 0 && ch != ',')
			if (len < sizeof(rev))
				rev[len++] = (char)ch;
			else
				len = sizeof(rev) + 1;
		char e[sizeof(rev)];
		size_t b = 0, en = len > sizeof(rev) ? 0 : len;
		for (size_t i = 0; i < en; i++)
			e[i] = rev[en - 1 - i];
		while (b < en && (e[b] == ' ' || e[b] == '\t'))
			b++;
		while (en > b && (e[en - 1] == ' ' || e[en - 1] == '\t'))
			en--;
		if (len > sizeof(rev))
			return false;
		uint32_t a;
		if (ip4_parse(e + b, en - b, &a) == 0) {
			*out = a;
			*single = k == 0 && ch < 0;
			if (!in_cidrs(cidrs, n, a) || ch < 0)
				return true;
			continue;
		}
		/* IPv6: a trusted hop is skipped; the client, or a leftmost
		 * trusted one that Envoy would take, is none */
		uint8_t a6[16];
		if (arn_ip6_parse(e + b, en - b, a6) != 0 || !in_cidrs6(cidrs, n, a6) || ch < 0)
			return false;
	}
}

/* An address alone in a header value (CustomHeaderConfig's, Envoy's
 * parseInternetAddressNoThrow: no port, no whitespace). */
static bool header_addr(const struct arn_h1_msg *m, const char *name, size_t n, uint32_t *out)
{
	int i = arn_h1_find(m, name, n, 0);
	return i >= 0 && ip4_parse(m->hdrs[i].value, m->hdrs[i].value_len, out) == 0;
}

int http_ip_detect(const struct arn_cfg_hcm *h, const struct arn_h1_msg *m, uint32_t raddr,
		   uint32_t *client, bool *internal)
{
	*client = raddr;
	*internal = false;
	for (size_t i = 0; i < h->n_ip_detect; i++) {
		const struct arn_cfg_ipdetect *d = &h->ip_detect[i];
		uint32_t a;
		bool single = false;
		if (d->kind == ARN_CFG_IPD_CUSTOM_HEADER) {
			if (!header_addr(m, d->header, d->header_len, &a)) {
				if (d->reject_status)
					return d->reject_status;
				continue;
			}
			*client = a;
			*internal = d->trusted && http_addr_internal(h, a);
			return 0;
		}
		/* XffConfig: with trusted CIDRs, only from a peer in them */
		if (d->n_cidrs) {
			if (!in_cidrs(d->cidrs, d->n_cidrs, raddr) ||
			    !xff_untrusted(m, d->cidrs, d->n_cidrs, &a, &single))
				continue;
		} else if (!xff_from_right(m, d->hops, &a, &single)) {
			continue;
		}
		*client = a;
		*internal = single && http_addr_internal(h, a);
		return 0;
	}
	return 0;
}

uint32_t http_client_addr(const struct arn_cfg_hcm *h, const struct arn_h1_msg *m, uint32_t raddr,
			  bool *internal)
{
	if (__builtin_expect(h->n_ip_detect != 0, 0)) {
		/* a refused request never gets here: head_policies answered */
		uint32_t a;
		bool in;
		http_ip_detect(h, m, raddr, &a, &in);
		if (internal)
			*internal = in;
		return a;
	}
	unsigned hops = h->xff_num_trusted_hops;
	uint32_t client = raddr, a;
	bool single;
	if (h->use_remote_address) {
		/* the proxy that connected is trusted; with N trusted hops the
		 * client is the Nth address from the right of the received XFF
		 * (Envoy: getLastAddressFromXFF(N - 1), before appending) */
		if (hops > 0 && xff_from_right(m, hops - 1, &a, &single))
			client = a;
		/* Envoy: internal when the request came without XFF (the one
		 * sent upstream is then the peer alone) from an internal peer */
		if (internal)
			*internal = arn_h1_find_id(m, ARN_H1_H_X_FORWARDED_FOR, 0) < 0 &&
				    http_addr_internal(h, raddr);
	} else {
		/* Envoy behind another proxy: the last XFF element (skipping
		 * trusted hops) is the client */
		bool found = xff_from_right(m, hops, &a, &single);
		if (found)
			client = a;
		if (internal)
			*internal = found && single && http_addr_internal(h, a);
	}
	return client;
}

/* ---- substitutions ---------------------------------------------------------- */

static int put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (*o + n > cap)
		return -ENOSPC;
	memcpy(out + *o, s, n);
	*o += n;
	return 0;
}

/* %DOWNSTREAM_REMOTE_ADDRESS%'s address (struct http_subst.caddr) */
static uint32_t subst_client(const struct http_subst *s)
{
	if (s->caddr)
		return s->caddr;
	if (s->hcm && s->req && http_client_from_headers(s->hcm))
		return http_client_addr(s->hcm, s->req, s->raddr, NULL);
	return s->raddr;
}

static const char *subst_protocol(const struct http_subst *s)
{
	if (s->protocol)
		return s->protocol;
	if (!s->req)
		return "HTTP/1.1";
	return s->req->version >= 20   ? "HTTP/2"
	       : s->req->version == 10 ? "HTTP/1.0"
				       : "HTTP/1.1";
}

/* %REQ(name?alt):N%: the request's header @p name, else @p alt, cut to N
 * bytes (Envoy's RequestHeaderFormatter, HeaderFormatter::format) */
static int subst_req(const struct http_subst *s, const struct arn_subst_tok *t, char *out,
		     size_t cap, size_t *o)
{
	if (!s->req)
		return 0;
	size_t ml, al;
	const char *alt;
	arn_subst_req_names(t->arg, t->arg_len, &ml, &alt, &al);
	int hi = arn_h1_find(s->req, t->arg, ml, 0);
	if (hi < 0 && al)
		hi = arn_h1_find(s->req, alt, al, 0);
	if (hi < 0)
		return 0;
	size_t vl = s->req->hdrs[hi].value_len;
	if (t->has_len && vl > t->max_len)
		vl = t->max_len;
	return put(out, cap, o, s->req->hdrs[hi].value, vl);
}

/* The operators are arn_subst_ops.def's, read with the grammar the
 * conversion checked them with (arn_subst_check): a configured value has
 * no other. */
int http_subst(const struct http_subst *s, const char *v, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	char tmp[64];
	for (size_t i = 0; i < n;) {
		if (v[i] != '%') {
			if (put(out, cap, &o, v + i, 1))
				return -ENOSPC;
			i++;
			continue;
		}
		if (i + 1 < n && v[i + 1] == '%') {
			if (put(out, cap, &o, "%", 1))
				return -ENOSPC;
			i += 2;
			continue;
		}
		struct arn_subst_tok t;
		enum arn_subst_op op = ARN_SUBST_NONE;
		if (arn_subst_token(v + i, n - i, &t) == 0)
			op = arn_subst_lookup(t.cmd, t.cmd_len);
		if (op == ARN_SUBST_NONE) {
			/* not one (a value the conversion did not check): the
			 * % as text */
			if (put(out, cap, &o, "%", 1))
				return -ENOSPC;
			i++;
			continue;
		}
		int k = 0;
		switch (op) {
		case ARN_SUBST_DOWNSTREAM_REMOTE_ADDRESS: {
			uint32_t ca = subst_client(s);
			k = snprintf(tmp, sizeof(tmp), "%u.%u.%u.%u:%u", ca >> 24, (ca >> 16) & 255,
				     (ca >> 8) & 255, ca & 255, ca == s->raddr ? s->rport : 0);
			break;
		}
		case ARN_SUBST_DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT:
			k = ip4_fmt(subst_client(s), tmp, sizeof(tmp));
			break;
		case ARN_SUBST_DOWNSTREAM_REMOTE_PORT: {
			uint32_t ca = subst_client(s);
			k = snprintf(tmp, sizeof(tmp), "%u", ca == s->raddr ? s->rport : 0);
			break;
		}
		case ARN_SUBST_DOWNSTREAM_DIRECT_REMOTE_ADDRESS: {
			uint32_t d = s->draddr ? s->draddr : s->raddr;
			k = snprintf(tmp, sizeof(tmp), "%u.%u.%u.%u:%u", d >> 24, (d >> 16) & 255,
				     (d >> 8) & 255, d & 255, s->draddr ? s->drport : s->rport);
			break;
		}
		case ARN_SUBST_DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT:
			k = ip4_fmt(s->draddr ? s->draddr : s->raddr, tmp, sizeof(tmp));
			break;
		case ARN_SUBST_DOWNSTREAM_DIRECT_REMOTE_PORT:
			k = snprintf(tmp, sizeof(tmp), "%u", s->draddr ? s->drport : s->rport);
			break;
		case ARN_SUBST_DOWNSTREAM_LOCAL_ADDRESS:
			k = snprintf(tmp, sizeof(tmp), "%u.%u.%u.%u:%u", s->laddr >> 24,
				     (s->laddr >> 16) & 255, (s->laddr >> 8) & 255, s->laddr & 255,
				     s->lport);
			break;
		case ARN_SUBST_DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT:
			k = ip4_fmt(s->laddr, tmp, sizeof(tmp));
			break;
		case ARN_SUBST_DOWNSTREAM_LOCAL_PORT:
			k = snprintf(tmp, sizeof(tmp), "%u", s->lport);
			break;
		case ARN_SUBST_UPSTREAM_REMOTE_ADDRESS:
		case ARN_SUBST_UPSTREAM_HOST:
			k = s->upstream_addr
				? snprintf(tmp, sizeof(tmp), "%u.%u.%u.%u:%u",
					   s->upstream_addr >> 24, (s->upstream_addr >> 16) & 255,
					   (s->upstream_addr >> 8) & 255, s->upstream_addr & 255,
					   s->upstream_port)
				: 0;
			break;
		case ARN_SUBST_PROTOCOL:
			k = snprintf(tmp, sizeof(tmp), "%s", subst_protocol(s));
			break;
		case ARN_SUBST_HOSTNAME:
			if (gethostname(tmp, sizeof(tmp)) != 0)
				tmp[0] = 0;
			tmp[sizeof(tmp) - 1] = 0;
			k = (int)strlen(tmp);
			break;
		case ARN_SUBST_REQ:
			if (subst_req(s, &t, out, cap, &o))
				return -ENOSPC;
			break;
		default:
			break;
		}
		if (k > 0 && put(out, cap, &o, tmp, (size_t)k))
			return -ENOSPC;
		i += t.len;
	}
	return (int)o;
}

/* ---- header operations at the three levels ------------------------------------ */

static uint8_t append_op(uint8_t a)
{
	switch (a) {
	case ARN_CFG_ADD_IF_ABSENT:
		return ARN_H1_EDIT_ADD_IF_ABSENT;
	case ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD:
		return ARN_H1_EDIT_SET;
	default:
		return ARN_H1_EDIT_ADD;
	}
}

struct edits {
	struct arn_h1_edit *e;
	unsigned n, cap;
	char *text;
	uint32_t text_cap, *text_len;
	const struct http_subst *sub;
};

static int edit_push(struct edits *ed, uint8_t op, const char *name, size_t nlen, const char *value,
		     size_t vlen)
{
	if (ed->n == ed->cap)
		return -ENOSPC;
	struct arn_h1_edit *e = &ed->e[ed->n++];
	e->op = op;
	e->name = name;
	e->name_len = (uint16_t)nlen;
	e->value = value;
	e->value_len = (uint32_t)vlen;
	e->id1 = 0;
	e->line = 0;
	return 0;
}

/* edit_push for a constant name whose header id is @p id (what
 * arn_h1_hdr_lookup gives for it): the writer does not look it up (~20
 * instructions an edit, four edits a proxied exchange). */
static int edit_push_id(struct edits *ed, uint8_t op, enum arn_h1_hdr_id id, const char *name,
			size_t nlen, const char *value, size_t vlen)
{
	if (edit_push(ed, op, name, nlen, value, vlen))
		return -ENOSPC;
	ed->e[ed->n - 1].id1 = (uint8_t)(id + 1);
	return 0;
}

/* edit_push_id of a whole wire line, @p line = "name: value\r\n" (name
 * @p nlen bytes, value @p vlen): the HTTP/1 writer copies it once
 * (struct arn_h1_edit.line); name and value are Arion's own. Inline: a
 * call takes the callers' list's address, which then lives in memory
 * (bench_hcm: 7 instructions a request). */
static inline __attribute__((always_inline)) int edit_push_line(struct edits *ed, uint8_t op,
								enum arn_h1_hdr_id id,
								const char *line, size_t nlen,
								size_t vlen)
{
	if (ed->n == ed->cap)
		return -ENOSPC;
	struct arn_h1_edit *e = &ed->e[ed->n++];
	e->op = op;
	e->name = line;
	e->name_len = (uint16_t)nlen;
	e->value = line + nlen + 2;
	e->value_len = (uint32_t)vlen;
	e->id1 = (uint8_t)(id + 1);
	e->line = 1;
	return 0;
}

/* One level's removals then additions (Envoy's HeaderParser order). */
static int level_ops(struct edits *ed, const struct arn_cfg_ref *rm, size_t n_rm,
		     const struct arn_cfg_header_add *add, size_t n_add)
{
	for (size_t i = 0; i < n_rm; i++)
		if (edit_push(ed, ARN_H1_EDIT_REMOVE, rm[i].name, rm[i].len, NULL, 0))
			return -ENOSPC;
	for (size_t i = 0; i < n_add; i++) {
		const char *v = add[i].value;
		size_t vlen = add[i].value_len;
		if (memchr(v, '%', vlen)) {
			char buf[1024];
			int k = http_subst(ed->sub, v, vlen, buf, sizeof(buf));
			if (k < 0)
				return -ENOSPC;
			v = text_put(ed->text, ed->text_cap, ed->text_len, buf, (size_t)k);
			if (!v)
				return -ENOSPC;
			vlen = (size_t)k;
		}
		if (vlen == 0 && !add[i].keep_empty_value)
			continue;
		if (edit_push(ed, append_op(add[i].append), add[i].key, add[i].key_len, v, vlen))
			return -ENOSPC;
	}
	return 0;
}

static int __attribute__((noinline))
levels_walk(struct edits *ed, bool request, const struct arn_cfg_route_table *rt,
	    const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
	    const struct arn_cfg_weighted_cluster *wc);

/* Has any of the four levels an edit for this direction? Most
 * configurations have none at any level: one test of the four, inline,
 * before the ordered walk (bench_hcm: 86 instructions a direction to
 * about 15), and before the substitutions' context is set up. A converted
 * route says so itself (arn_cfg_route.no_hdr_edits, found with its table):
 * one test, not four levels' loads (bench_hcm: about 20 instructions a
 * direction). The levels are the route's own: its table, its virtual host,
 * a weighted cluster of its. */
static inline bool any_level(bool request, const struct arn_cfg_route_table *rt,
			     const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
			     const struct arn_cfg_weighted_cluster *wc)
{
	if (r && (r->no_hdr_edits & (request ? ARN_CFG_NO_REQ_EDITS : ARN_CFG_NO_RESP_EDITS)))
		return false;
	return (wc ? arn_cfg_header_ops_n(&wc->headers, request) : 0) |
	       (r ? arn_cfg_header_ops_n(&r->headers_ops, request) : 0) |
	       (vh ? arn_cfg_header_ops_n(&vh->headers_ops, request) : 0) |
	       (rt ? arn_cfg_header_ops_n(&rt->headers_ops, request) : 0);
}

static int levels_walk(struct edits *ed, bool request, const struct arn_cfg_route_table *rt,
		       const struct arn_cfg_vhost *vh, const struct arn_cfg_route *r,
		       const struct arn_cfg_weighted_cluster *wc)
{
	const struct arn_cfg_header_ops *lv[4];
	unsigned n = 0;
	/* Envoy: most specific first (the more general level is applied last
	 * and so wins), or the reverse with most_specific_header_mutations_wins */
	if (wc)
		lv[n++] = &wc->headers;
	if (r)
		lv[n++] = &r->headers_ops;
	if (vh)
		lv[n++] = &vh->headers_ops;
	if (rt)
		lv[n++] = &rt->headers_ops;
	bool rev = rt && rt->most_specific_header_mutations_wins;
	for (unsigned k = 0; k < n; k++) {
		const struct arn_cfg_header_ops *o = lv[rev ? n - 1 - k : k];
		/* most levels have no edits: no call for them */
		if (!arn_cfg_header_ops_n(o, request))
			continue;
		int rc = request ? level_ops(ed, o->req_remove, o->n_req_remove, o->req_add,
					     o->n_req_add)
				 : level_ops(ed, o->resp_remove, o->n_resp_remove, o->resp_add,
					     o->n_resp_add);
		if (rc)
			return rc;
	}
	return 0;
}

/* The levels' edits after the @p ed->n already made, with @p sub for
 * their values: the edits' count, or -ENOSPC. A copy goes out of line:
 * the callers' own list has its address taken by inline code only, so it
 * stays in registers (its stores at the start and per edit, about 10
 * instructions a direction, bench_hcm). */
static inline __attribute__((always_inline)) int
levels_edits(const struct edits *ed, const struct http_subst *sub, bool request,
	     const struct arn_cfg_route_table *rt, const struct arn_cfg_vhost *vh,
	     const struct arn_cfg_route *r, const struct arn_cfg_weighted_cluster *wc)
{
	struct edits lv = *ed;
	lv.sub = sub;
	if (levels_walk(&lv, request, rt, vh, r, wc))
		return -ENOSPC;
	return (int)lv.n;
}

/* ---- the upstream request ---------------------------------------------------- */

/* x-envoy-* headers Envoy strips from a request that is not internal (its
 * cleanInternalHeaders, whatever use_remote_address says). An edge
 * request (use_remote_address, not internal) loses the first three too;
 * any other starts at the fourth. x-envoy-internal is Envoy's
 * mutateRequestHeaders' own: a client's is removed always (an internal
 * request's is then set, http_req_edits). */
#define NAME(s)                                                                                    \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}
static const struct {
	const char *s;
	uint8_t len;
} envoy_clean[] = {
    NAME("x-envoy-decorator-operation"),
    NAME("x-envoy-downstream-service-cluster"),
    NAME("x-envoy-downstream-service-node"),
    /* from here: every request that is not internal */
    NAME("x-envoy-internal"),
    NAME("x-envoy-retriable-status-codes"),
    NAME("x-envoy-retriable-header-names"),
    NAME("x-envoy-retry-on"),
    NAME("x-envoy-retry-grpc-on"),
    NAME("x-envoy-max-retries"),
    NAME("x-envoy-upstream-alt-stat-name"),
    NAME("x-envoy-upstream-rq-timeout-ms"),
    NAME("x-envoy-upstream-rq-per-try-timeout-ms"),
    NAME("x-envoy-upstream-rq-timeout-alt-response"),
    NAME("x-envoy-expected-rq-timeout-ms"),
    NAME("x-envoy-force-trace"),
    NAME("x-envoy-ip-tags"),
    NAME("x-envoy-original-url"),
    NAME("x-envoy-hedge-on-per-try-timeout"),
};
#undef NAME
#define ENVOY_CLEAN_EDGE_ONLY 3u

/* Is @p f one of the fields http_req_sanitize takes out? */
struct sanitize_arg {
	const struct arn_cfg_hcm *h;
	bool internal, edge, mtls;
};

static bool sanitized(const struct arn_h1_header *f, void *arg)
{
	const struct sanitize_arg *a = arg;
	const struct arn_cfg_hcm *h = a->h;
	if (f->id == ARN_H1_H_X_FORWARDED_CLIENT_CERT)
		return h->fcc == ARN_CFG_FCC_SANITIZE ||
		       (h->fcc != ARN_CFG_FCC_ALWAYS_FORWARD_ONLY && !a->mtls);
	if (!arn_h1_proxy_field(f->name, f->name_len, f->id))
		return false;
	if (a->internal)
		return f->name_len == 16 && arn_h1_eq_nocase(f->name, 16, "x-envoy-internal", 16);
	for (size_t i = a->edge ? 0 : ENVOY_CLEAN_EDGE_ONLY;
	     i < sizeof(envoy_clean) / sizeof(envoy_clean[0]); i++)
		if (envoy_clean[i].len == f->name_len &&
		    arn_h1_eq_nocase(f->name, f->name_len, envoy_clean[i].s, f->name_len))
			return true;
	return false;
}

unsigned http_req_sanitize(const struct arn_cfg_hcm *h, struct arn_h1_msg *m, uint32_t raddr,
			   bool mtls)
{
	struct sanitize_arg a = {.h = h, .mtls = mtls};
	http_client_addr(h, m, raddr, &a.internal);
	a.edge = h->use_remote_address && !a.internal;
	unsigned gone = arn_h1_drop_fields(m, sanitized, &a);
	m->flags &= ~ARN_H1_F_PROXY_FIELDS;
	return gone;
}

/* x-envoy-expected-rq-timeout-ms's whole line, "name: <ms>\r\n" and a
 * NUL, into @p d (TMO_LINE_MAX bytes: 10 digits at most): the number's
 * length. */
static const char tmo_name[] = "x-envoy-expected-rq-timeout-ms: ";
#define TMO_N (sizeof(tmo_name) - 1)
#define TMO_LINE_MAX (TMO_N + 10 + 3)
static size_t timeout_line(char *d, uint32_t ms)
{
	memcpy(d, tmo_name, TMO_N);
	size_t k = (size_t)arn_fmt_u64(ms, d + TMO_N);
	memcpy(d + TMO_N + k, "\r\n", 3);
	return k;
}

/* The 16 lowercase hex digits of @p v's 8 bytes, lowest address first
 * (each byte's high nibble first), in one vector: the digits of all 16
 * nibbles at once, not a table load and a branch per byte. */
static inline __m128i hex16(uint64_t v)
{
	__m128i x = _mm_cvtsi64_si128((long long)v);
	const __m128i f = _mm_set1_epi8(0x0f);
	__m128i n = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), f), _mm_and_si128(x, f));
	/* '0' + n, and 'a' - '0' - 10 more where n > 9 */
	__m128i over = _mm_and_si128(_mm_cmpgt_epi8(n, _mm_set1_epi8(9)), _mm_set1_epi8(39));
	return _mm_add_epi8(_mm_add_epi8(n, _mm_set1_epi8('0')), over);
}

/* A generated x-request-id is a UUID 4 of the two random words, their
 * bytes lowest first; formatted with vectors (a byte loop with a table
 * and the dashes' tests cost about 370 instructions a request, bench_hcm
 * with generate_request_id). */
void http_request_id_fmt(uint64_t hi, uint64_t lo, char out[HTTP_REQUEST_ID_LEN])
{
	hi = (hi & ~(0xf0ull << 48)) | (0x40ull << 48); /* version 4 (byte 6) */
	lo = (lo & ~0xc0ull) | 0x80;			/* RFC 4122 variant (byte 8) */
	char a[16], b[16];
	_mm_storeu_si128((__m128i *)(void *)a, hex16(hi));
	_mm_storeu_si128((__m128i *)(void *)b, hex16(lo));
	/* 8-4-4-4-12 */
	memcpy(out, a, 8);
	out[8] = '-';
	memcpy(out + 9, a + 8, 4);
	out[13] = '-';
	memcpy(out + 14, a + 12, 4);
	out[18] = '-';
	memcpy(out + 19, b, 4);
	out[23] = '-';
	memcpy(out + 24, b + 4, 12);
}

/* Is @p v (@p n bytes) the last comma-separated element of @p list,
 * optional whitespace around it ignored? */
static bool last_element_is(const char *list, uint32_t len, const char *v, uint32_t n)
{
	uint32_t end = len;
	while (end && (list[end - 1] == ' ' || list[end - 1] == '\t'))
		end--;
	uint32_t start = end;
	while (start && list[start - 1] != ',')
		start--;
	while (start < end && (list[start] == ' ' || list[start] == '\t'))
		start++;
	return end - start == n && memcmp(list + start, v, n) == 0;
}

/* RouteAction.append_x_forwarded_host, as Envoy's Utility::updateAuthority:
 * the Host the request came with (if not empty) goes to x-forwarded-host:
 * appended with "," to the values there (the writer joins every line of
 * the name), unless it is the last of them already; a request without one
 * gets it set. Out of line: only routes that rewrite Host and ask for it
 * come here. */
static int __attribute__((noinline)) xfh_edit(struct edits *ed, const struct arn_h1_msg *m)
{
	static const char xfh[] = "x-forwarded-host";
	const char *host = m->authority.p;
	uint32_t hlen = m->authority.len;
	if (hlen == 0)
		return 0;
	const struct arn_h1_header *last = NULL;
	for (int i = 0; i < m->n_hdrs; i++) {
		const struct arn_h1_header *h = &m->hdrs[i];
		if (h->id == ARN_H1_H_OTHER && h->name_len == sizeof(xfh) - 1 &&
		    strncasecmp(h->name, xfh, sizeof(xfh) - 1) == 0)
			last = h;
	}
	if (last && last_element_is(last->value, last->value_len, host, hlen))
		return 0;
	return edit_push_id(ed, ARN_H1_EDIT_APPEND_VALUE, ARN_H1_H_OTHER, xfh, sizeof(xfh) - 1,
			    host, hlen);
}

/* forward_client_cert_details (Envoy's mutateXfccRequestHeader), for a
 * request that brought its own x-forwarded-client-cert (@p has) or whose
 * client's element was made (x->xfcc): every mode but ALWAYS_FORWARD_ONLY
 * removes a client's header from a connection whose client presented no
 * certificate, SANITIZE from every connection; on mTLS APPEND_FORWARD
 * appends the element (after a ',') and SANITIZE_SET sets it. Out of
 * line: few requests carry one. */
static int __attribute__((noinline))
xfcc_edits(struct edits *ed, const struct arn_cfg_hcm *h, const struct http_req_ctx *x, bool has)
{
	static const char name[] = "x-forwarded-client-cert";
	const enum arn_h1_hdr_id id = ARN_H1_H_X_FORWARDED_CLIENT_CERT;
	if (h->fcc == ARN_CFG_FCC_ALWAYS_FORWARD_ONLY)
		return 0;
	if (h->fcc == ARN_CFG_FCC_SANITIZE || !x->mtls)
		return has ? edit_push_id(ed, ARN_H1_EDIT_REMOVE, id, name, 23, "", 0) : 0;
	if (!x->xfcc) /* FORWARD_ONLY */
		return 0;
	return edit_push_id(
	    ed, h->fcc == ARN_CFG_FCC_APPEND_FORWARD ? ARN_H1_EDIT_APPEND_VALUE : ARN_H1_EDIT_SET,
	    id, name, 23, x->xfcc, x->xfcc_len);
}

int http_req_edits(struct http_req_ctx *x, const struct arn_h1_msg *m, struct arn_h1_edit *e,
		   unsigned cap)
{
	const struct arn_cfg_hcm *h = x->hcm;
	struct edits ed = {
	    .e = e, .cap = cap, .text = x->text, .text_cap = x->text_cap, .text_len = &x->text_len};
	char tmp[64];
	/* X-Forwarded-For and x-request-id in one walk of the head, inline
	 * (most requests have neither: http_client_addr's walk from the
	 * right and two arn_h1_find_id calls cost ~90 instructions) */
	int xi = -1, ri = -1;
	bool xfcc = false;
	for (int i = 0; i < m->n_hdrs; i++) {
		uint8_t id = m->hdrs[i].id;
		if (id == ARN_H1_H_X_FORWARDED_FOR) {
			if (xi < 0)
				xi = i;
		} else if (id == ARN_H1_H_X_REQUEST_ID && ri < 0) {
			ri = i;
		} else if (id == ARN_H1_H_X_FORWARDED_CLIENT_CERT) {
			xfcc = true;
		}
	}
	bool internal = false;
	if (xi >= 0 || h->n_ip_detect) {
		x->client_addr = http_client_addr(h, m, x->raddr, &internal);
	} else {
		/* what http_client_addr finds without X-Forwarded-For: the
		 * peer, internal when it is and it is trusted */
		x->client_addr = x->raddr;
		internal = h->use_remote_address && http_addr_internal(h, x->raddr);
	}
	x->internal = internal;
	bool edge = h->use_remote_address && !internal;

	/* X-Forwarded-For: the edge appends the address that connected,
	 * unless skip_xff_append (Envoy's transparent mode: as received) */
	x->xff = NULL;
	x->xff_len = 0;
	if (h->use_remote_address && !h->skip_xff_append) {
		int k = ip4_fmt(x->raddr, tmp, sizeof(tmp));
		const char *v = text_put(x->text, x->text_cap, &x->text_len, tmp, (size_t)k);
		if (!v || edit_push_id(&ed, ARN_H1_EDIT_APPEND_VALUE, ARN_H1_H_X_FORWARDED_FOR,
				       "x-forwarded-for", 15, v, (size_t)k))
			return -ENOSPC;
		x->xff = v;
		x->xff_len = (uint32_t)k;
	} else if (xi >= 0) {
		x->xff = m->hdrs[xi].value;
		x->xff_len = m->hdrs[xi].value_len;
	}
	/* X-Forwarded-Proto: an untrusted previous hop's value is replaced;
	 * its two lines are constants, written whole */
	static const char xfp_http[] = "x-forwarded-proto: http\r\n";
	static const char xfp_https[] = "x-forwarded-proto: https\r\n";
	if (edit_push_line(
		&ed, h->xff_num_trusted_hops == 0 ? ARN_H1_EDIT_SET : ARN_H1_EDIT_ADD_IF_ABSENT,
		ARN_H1_H_X_FORWARDED_PROTO, x->tls ? xfp_https : xfp_http, 17, x->tls ? 5 : 4))
		return -ENOSPC;
	/* x-envoy-internal: an internal request's is set (a client's, and
	 * the x-envoy-* a request that is not internal may not bring, were
	 * taken out of the head before anything read it: http_req_sanitize) */
	if (internal &&
	    edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_OTHER, "x-envoy-internal", 16, "true", 4))
		return -ENOSPC;
	/* the edge's first trusted address */
	if (edge) {
		int k = ip4_fmt(x->client_addr, tmp, sizeof(tmp));
		const char *v = text_put(x->text, x->text_cap, &x->text_len, tmp, (size_t)k);
		if (!v || edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_OTHER,
				       "x-envoy-external-address", 24, v, (size_t)k))
			return -ENOSPC;
	}
	/* x-request-id */
	x->request_id = NULL;
	x->request_id_len = 0;
	if (h->generate_request_id) {
		/* the head's id was given before the filters ran (Envoy's
		 * mutateRequestHeaders, http_request_id_head): it is the one */
		bool force = edge && !h->preserve_external_request_id && !x->rid_head;
		if (ri >= 0 && !force) {
			x->request_id = m->hdrs[ri].value;
			x->request_id_len = m->hdrs[ri].value_len;
		} else {
			/* formatted in place, as text_put would put it */
			if (x->text_len + HTTP_REQUEST_ID_LEN + 1 > x->text_cap)
				return -ENOSPC;
			char *v = x->text + x->text_len;
			http_request_id_fmt(x->rand_hi, x->rand_lo, v);
			v[HTTP_REQUEST_ID_LEN] = 0;
			x->text_len += HTTP_REQUEST_ID_LEN + 1;
			if (edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_X_REQUEST_ID,
					 "x-request-id", 12, v, HTTP_REQUEST_ID_LEN))
				return -ENOSPC;
			x->request_id = v;
			x->request_id_len = HTTP_REQUEST_ID_LEN;
		}
	} else if (ri >= 0) {
		x->request_id = m->hdrs[ri].value;
		x->request_id_len = m->hdrs[ri].value_len;
	}
	/* x-forwarded-client-cert, last as in Envoy's mutateRequestHeaders:
	 * a request without one, on a listener that adds none (SANITIZE,
	 * Envoy's default, and the forwarding modes), has nothing to do */
	if ((xfcc || x->xfcc) && xfcc_edits(&ed, h, x, xfcc))
		return -ENOSPC;
	/* a compressor filter's remove_accept_encoding_header: the upstream
	 * then sends what the filter may compress (Envoy's compressor filter
	 * removes it in decodeHeaders; a function of the manager and the
	 * route, so a kept list of edits, kept for its route, stays right) */
	if (h->n_compressors && arn_cfg_cmp_strip_accept_encoding(h, x->rt, x->vhost, x->route) &&
	    edit_push(&ed, ARN_H1_EDIT_REMOVE, "accept-encoding", 15, "", 0))
		return -ENOSPC;
	/* the route's timeout, announced to the upstream as Envoy's router does
	 * (unless the router's suppress_envoy_headers) */
	if (x->timeout_ms > 0 && !(x->hcm && x->hcm->suppress_envoy_headers)) {
		/* the whole line, formatted once into the connection's keep
		 * (or the text): the writer copies it in one piece */
		struct http_num_text *t = x->timeout_text;
		char *l;
		size_t k;
		if (t) {
			/* a connection's requests usually take one route, or
			 * routes of one timeout: formatted when it changes */
			if (t->v != x->timeout_ms) {
				_Static_assert(sizeof(t->txt) >= TMO_LINE_MAX,
					       "the timeout's line fits");
				t->len = (uint8_t)timeout_line(t->txt, x->timeout_ms);
				t->v = x->timeout_ms;
			}
			l = t->txt;
			k = t->len;
		} else {
			char b[TMO_LINE_MAX];
			k = timeout_line(b, x->timeout_ms);
			l = text_put(x->text, x->text_cap, &x->text_len, b, TMO_N + k + 2);
		}
		if (!l || edit_push_line(&ed, ARN_H1_EDIT_SET, ARN_H1_H_OTHER, l, TMO_N - 2, k))
			return -ENOSPC;
	}
	/* the attempt number, when the virtual host asks for it (it replaces a
	 * value from downstream, as Envoy's does) */
	if (x->attempt && x->vhost && x->vhost->include_request_attempt_count) {
		int k = u64_fmt(x->attempt, tmp);
		const char *v = text_put(x->text, x->text_cap, &x->text_len, tmp, (size_t)k);
		if (!v || edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_OTHER,
				       "x-envoy-attempt-count", 21, v, (size_t)k))
			return -ENOSPC;
	}
	if (x->path_rewritten && edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_X_ENVOY_ORIGINAL_PATH,
					      "x-envoy-original-path", 21, m->path.p, m->path.len))
		return -ENOSPC;
	if (x->host &&
	    edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_HOST, "host", 4, x->host, x->host_len))
		return -ENOSPC;
	if (x->host_rewritten && x->route->route.append_x_forwarded_host && xfh_edit(&ed, m))
		return -ENOSPC;
	/* Expect: 100-continue was answered here (Envoy without proxy_100_continue) */
	if ((m->flags & ARN_H1_F_EXPECT_CONTINUE) &&
	    edit_push_id(&ed, ARN_H1_EDIT_REMOVE, ARN_H1_H_EXPECT, "expect", 6, NULL, 0))
		return -ENOSPC;
	if (any_level(true, x->rt, x->vhost, x->route, x->wc)) {
		struct http_subst sub = {
		    .raddr = x->raddr,
		    .rport = x->rport,
		    .laddr = x->laddr,
		    .lport = x->lport,
		    .caddr = x->client_addr,
		    .draddr = x->draddr,
		    .drport = x->drport,
		    .req = m,
		    .protocol = m->version == 10 ? "HTTP/1.0" : "HTTP/1.1",
		};
		return levels_edits(&ed, &sub, true, x->rt, x->vhost, x->route, x->wc);
	}
	return (int)ed.n;
}

static int __attribute__((noinline))
resp_edits_any(struct http_resp_ctx *x, const struct arn_h1_msg *m, struct arn_h1_edit *e,
	       unsigned cap);

int http_resp_edits(struct http_resp_ctx *x, const struct arn_h1_msg *m, struct arn_h1_edit *e,
		    unsigned cap)
{
	const struct arn_cfg_hcm *h = x->hcm;
	/* The usual response's two edits, written here: the conversion's
	 * Server line and the service time the caller formatted, and a
	 * converted route that says no level has a response edit (the four
	 * levels' loads are any_level's, in the general list). A leaf without
	 * a frame; the general list (an edit list in memory, its pushes'
	 * tests) cost about 75 instructions a response (bench_hcm). */
	if (h && h->server_header_transformation <= 1 && h->server_line && h->server_name_len &&
	    x->service_ms >= 0 && x->service_txt && !h->suppress_envoy_headers && cap >= 2 &&
	    x->route && (x->route->no_hdr_edits & ARN_CFG_NO_RESP_EDITS)) {
		e[0].op = h->server_header_transformation == 0 ? ARN_H1_EDIT_SET
							       : ARN_H1_EDIT_ADD_IF_ABSENT;
		e[0].name = h->server_line;
		e[0].name_len = 6;
		e[0].value = h->server_line + 8;
		e[0].value_len = h->server_name_len;
		e[0].id1 = ARN_H1_H_SERVER + 1;
		e[0].line = 1;
		e[1].op = ARN_H1_EDIT_SET;
		e[1].name = "x-envoy-upstream-service-time";
		e[1].name_len = 29;
		e[1].value = x->service_txt;
		e[1].value_len = x->service_len;
		e[1].id1 = ARN_H1_H_OTHER + 1;
		e[1].line = 0;
		return 2;
	}
	return resp_edits_any(x, m, e, cap);
}

/* http_resp_edits' every case. */
static int resp_edits_any(struct http_resp_ctx *x, const struct arn_h1_msg *m,
			  struct arn_h1_edit *e, unsigned cap)
{
	struct edits ed = {
	    .e = e, .cap = cap, .text = x->text, .text_cap = x->text_cap, .text_len = &x->text_len};
	(void)m;
	const struct arn_cfg_hcm *h = x->hcm;
	if (h && !x->no_server && h->server_header_transformation <= 1) {
		/* the length stored by the conversion, no strlen per response;
		 * a hand-built configuration (tests) may leave it 0 */
		uint8_t op = h->server_header_transformation == 0 ? ARN_H1_EDIT_SET
								  : ARN_H1_EDIT_ADD_IF_ABSENT;
		if (h->server_line && h->server_name_len) {
			/* the conversion's whole line */
			if (edit_push_line(&ed, op, ARN_H1_H_SERVER, h->server_line, 6,
					   h->server_name_len))
				return -ENOSPC;
		} else if (!h->server_name) {
			/* the default's line is a constant: written whole */
			static const char envoy[] = "server: envoy\r\n";
			if (edit_push_line(&ed, op, ARN_H1_H_SERVER, envoy, 6, 5))
				return -ENOSPC;
		} else {
			size_t sn =
			    h->server_name_len ? h->server_name_len : strlen(h->server_name);
			if (edit_push_id(&ed, op, ARN_H1_H_SERVER, "server", 6, h->server_name, sn))
				return -ENOSPC;
		}
	}
	if (x->service_ms >= 0 && !(h && h->suppress_envoy_headers)) {
		size_t k = x->service_len;
		const char *v = x->service_txt;
		if (!v)
			v = text_put_u64(x->text, x->text_cap, &x->text_len,
					 (uint64_t)x->service_ms, &k);
		if (!v || edit_push_id(&ed, ARN_H1_EDIT_SET, ARN_H1_H_OTHER,
				       "x-envoy-upstream-service-time", 29, v, k))
			return -ENOSPC;
	}
	if (any_level(false, x->rt, x->vhost, x->route, x->wc)) {
		struct http_subst sub = {
		    .raddr = x->raddr,
		    .rport = x->rport,
		    .upstream_addr = x->upstream_addr,
		    .upstream_port = x->upstream_port,
		};
		if (x->subst_fill)
			x->subst_fill(x->subst_arg, &sub);
		return levels_edits(&ed, &sub, false, x->rt, x->vhost, x->route, x->wc);
	}
	return (int)ed.n;
}

/* ---- generated cookies (a cookie hash policy's ttl) --------------------------- */

int http_set_cookie_edits(const struct arn_cfg_route_action *a, uint32_t gen,
			  const struct http_lb_peer *p, char *text, uint32_t text_cap,
			  uint32_t *text_len, struct arn_h1_edit *e, unsigned cap)
{
	struct edits ed = {.e = e, .cap = cap};
	char val[16];
	http_lb_cookie_value(p, val);
	for (size_t i = 0; i < a->n_hash_policies && i < ARN_CFG_COOKIE_GEN_MAX; i++) {
		if (!(gen & (1u << i)))
			continue;
		const struct arn_cfg_hash_policy *hp = &a->hash_policies[i];
		/* name="value"; Max-Age=N; Path=p; HttpOnly (Envoy's
		 * makeSetCookieValue; its name and path were checked at
		 * conversion, ARN_CFG_COOKIE_*_MAX bound them) */
		char line[ARN_CFG_COOKIE_NAME_MAX + ARN_CFG_COOKIE_PATH_MAX + 64];
		size_t n = 0;
		memcpy(line, hp->name, hp->name_len);
		n += hp->name_len;
		memcpy(line + n, "=\"", 2);
		n += 2;
		memcpy(line + n, val, sizeof(val));
		n += sizeof(val);
		line[n++] = '"';
		if (hp->cookie_ttl_s) {
			memcpy(line + n, "; Max-Age=", 10);
			n += 10;
			n += (size_t)arn_fmt_u64(hp->cookie_ttl_s, line + n);
		}
		if (hp->cookie_path_len) {
			memcpy(line + n, "; Path=", 7);
			n += 7;
			memcpy(line + n, hp->cookie_path, hp->cookie_path_len);
			n += hp->cookie_path_len;
		}
		memcpy(line + n, "; HttpOnly", 10);
		n += 10;
		const char *v = text_put(text, text_cap, text_len, line, n);
		if (!v ||
		    edit_push_id(&ed, ARN_H1_EDIT_ADD, ARN_H1_H_OTHER, "set-cookie", 10, v, n))
			return -ENOSPC;
	}
	return (int)ed.n;
}

/* ---- redirects ---------------------------------------------------------------- */

int http_redirect_location(const struct arn_cfg_redirect *r, bool tls, const char *authority,
			   size_t alen, const char *path, size_t plen, const char *match_prefix,
			   size_t mplen, char *buf, size_t cap)
{
	size_t o = 0;
	const char *scheme = r->scheme ? r->scheme : (tls ? "https" : "http");
	bool scheme_changed = r->scheme && strcmp(r->scheme, tls ? "https" : "http") != 0;
	uint32_t oport = 0;
	size_t hlen = arn_cfg_host_without_port(authority, alen, &oport);
	const char *host = authority;
	if (r->host) {
		host = r->host;
		hlen = strlen(r->host);
	}
	uint32_t port = r->port;
	if (!port && !scheme_changed)
		port = oport; /* keep what the client used, unless the scheme changed */
	if ((port == 80 && strcmp(scheme, "http") == 0) ||
	    (port == 443 && strcmp(scheme, "https") == 0))
		port = 0;
	const char *q = memchr(path, '?', plen);
	size_t path_only = q ? (size_t)(q - path) : plen;
	if (put(buf, cap, &o, scheme, strlen(scheme)) || put(buf, cap, &o, "://", 3) ||
	    put(buf, cap, &o, host, hlen))
		return -ENOSPC;
	if (port) {
		char pb[8];
		int k = snprintf(pb, sizeof(pb), ":%u", port);
		if (put(buf, cap, &o, pb, (size_t)k))
			return -ENOSPC;
	}
	if (r->path) {
		if (put(buf, cap, &o, r->path, strlen(r->path)))
			return -ENOSPC;
		if (!strchr(r->path, '?') && q && !r->strip_query &&
		    put(buf, cap, &o, q, plen - path_only))
			return -ENOSPC;
		return (int)o;
	}
	if (r->prefix_rewrite && match_prefix && path_only >= mplen) {
		if (put(buf, cap, &o, r->prefix_rewrite, strlen(r->prefix_rewrite)) ||
		    put(buf, cap, &o, path + mplen, path_only - mplen))
			return -ENOSPC;
	} else if (put(buf, cap, &o, path, path_only)) {
		return -ENOSPC;
	}
	if (q && !r->strip_query && put(buf, cap, &o, q, plen - path_only))
		return -ENOSPC;
	return (int)o;
}

/* ---- local replies ------------------------------------------------------------- */

int http_local_reply_write(struct arn_h1_wbuf *w, unsigned status, const char *body, size_t blen,
			   const char *server, const char *date, size_t dlen,
			   const struct arn_h1_edit *extra, unsigned n_extra, bool close, bool head)
{
	char cl[24];
	int k = u64_fmt(blen, cl);
	arn_h1_write_status_line(w, status, NULL, 0, 1);
	/* the extra edits act on an empty message: SET / ADD add, REMOVE is moot */
	bool have_ct = false;
	for (unsigned i = 0; i < n_extra; i++)
		if (extra[i].op != ARN_H1_EDIT_REMOVE && extra[i].name_len == 12 &&
		    arn_h1_eq_nocase(extra[i].name, 12, "content-type", 12))
			have_ct = true;
	if (blen && !have_ct)
		arn_h1_write_header(w, "content-type", 12, "text/plain", 10);
	arn_h1_write_header(w, "content-length", 14, cl, (size_t)k);
	if (date && dlen)
		arn_h1_write_header(w, "date", 4, date, dlen);
	if (server)
		arn_h1_write_header(w, "server", 6, server, strlen(server));
	for (unsigned i = 0; i < n_extra; i++) {
		if (extra[i].op == ARN_H1_EDIT_REMOVE)
			continue;
		/* ADD_IF_ABSENT of something we already wrote is skipped */
		if (extra[i].op == ARN_H1_EDIT_ADD_IF_ABSENT || extra[i].op == ARN_H1_EDIT_SET) {
			if ((extra[i].name_len == 6 &&
			     arn_h1_eq_nocase(extra[i].name, 6, "server", 6)) ||
			    (extra[i].name_len == 4 &&
			     arn_h1_eq_nocase(extra[i].name, 4, "date", 4)))
				continue;
		}
		arn_h1_write_header(w, extra[i].name, extra[i].name_len, extra[i].value,
				    extra[i].value_len);
	}
	if (close)
		arn_h1_write_header(w, "connection", 10, "close", 5);
	arn_h1_write_end(w);
	if (blen && !head)
		arn_h1_put(w, body, blen);
	return w->err;
}
