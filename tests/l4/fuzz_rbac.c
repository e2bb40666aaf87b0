/*
 * libFuzzer: the RBAC evaluator over fuzzed policies and fuzzed
 * connections/requests. The bytes build a policy set (rule trees of every
 * kind, bounded as lib/config bounds them), a request with headers and a
 * scratch of fuzzed size; then Envoy's invariants are checked:
 *   - the decision follows the action (ALLOW: a policy matched; DENY: none
 *     did; LOG: always allowed), unless a header overflowed (denied);
 *   - the effective policy is the first match in order;
 *   - NOT inverts; evaluation is deterministic;
 *   - the response code details fit what they say.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_rbac.h"

#define MAX_RULES 512
#define MAX_DEPTH 8

struct src {
	const uint8_t *p;
	size_t n;
};

static uint8_t byte(struct src *s)
{
	if (!s->n)
		return 0;
	s->n--;
	return *s->p++;
}

static uint32_t u32(struct src *s)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v = v << 8 | byte(s);
	return v;
}

/* a short string taken from the input (not NUL-terminated) */
static const char *bytes(struct src *s, size_t *len)
{
	size_t l = byte(s) % 24;
	if (l > s->n)
		l = s->n;
	const char *r = (const char *)s->p;
	s->p += l;
	s->n -= l;
	*len = l;
	return r;
}

static struct arn_cfg_rbac_rule pool[MAX_RULES];
static struct arn_cfg_header_match hpool[MAX_RULES];
static size_t used, hused;

static const char *const hnames[] = {"x-a", "x-b", ":path", ":method", ":authority", "x-none"};

static void strm(struct src *s, struct arn_cfg_str_match *m)
{
	m->kind = byte(s) % 4; /* exact, prefix, suffix, contains */
	m->ignore_case = byte(s) & 1;
	m->s = bytes(s, &m->len);
}

static void build(struct src *s, struct arn_cfg_rbac_rule *r, int depth)
{
	memset(r, 0, sizeof(*r));
	uint8_t k = byte(s) % (ARN_CFG_RBAC_AUTHENTICATED + 1);
	if (depth >= MAX_DEPTH && k >= ARN_CFG_RBAC_AND && k <= ARN_CFG_RBAC_NOT)
		k = ARN_CFG_RBAC_ANY;
	r->kind = k;
	switch (k) {
	case ARN_CFG_RBAC_AND:
	case ARN_CFG_RBAC_OR:
	case ARN_CFG_RBAC_NOT: {
		size_t n = k == ARN_CFG_RBAC_NOT ? 1 : 1 + byte(s) % 3;
		if (used + n > MAX_RULES) {
			r->kind = ARN_CFG_RBAC_ANY;
			break;
		}
		r->kids = &pool[used];
		r->n_kids = n;
		used += n;
		for (size_t i = 0; i < n; i++)
			build(s, &r->kids[i], depth + 1);
		break;
	}
	case ARN_CFG_RBAC_DST_IP:
	case ARN_CFG_RBAC_SOURCE_IP:
	case ARN_CFG_RBAC_DIRECT_REMOTE_IP:
	case ARN_CFG_RBAC_REMOTE_IP:
		r->cidr.len = byte(s) % 33;
		r->cidr.addr = u32(s) & (r->cidr.len ? ~0u << (32 - r->cidr.len) : 0);
		break;
	case ARN_CFG_RBAC_DST_PORT:
	case ARN_CFG_RBAC_DST_PORT_RANGE:
		r->port_lo = byte(s) % 8;
		r->port_hi = r->port_lo + byte(s) % 8;
		break;
	case ARN_CFG_RBAC_SNI:
	case ARN_CFG_RBAC_URL_PATH:
		strm(s, &r->str);
		break;
	case ARN_CFG_RBAC_AUTHENTICATED:
		r->has_str = byte(s) & 1;
		if (r->has_str)
			strm(s, &r->str);
		break;
	case ARN_CFG_RBAC_HEADER: {
		if (hused == MAX_RULES) {
			r->kind = ARN_CFG_RBAC_ANY;
			break;
		}
		struct arn_cfg_header_match *h = &hpool[hused++];
		memset(h, 0, sizeof(*h));
		const char *n = hnames[byte(s) % 6];
		h->name = n;
		h->name_len = strlen(n);
		h->kind = byte(s) % 3;
		h->present = byte(s) & 1;
		h->invert = byte(s) & 1;
		h->missing_as_empty = byte(s) & 1;
		strm(s, &h->str);
		h->start = (int8_t)byte(s);
		h->end = h->start + byte(s);
		r->header = h;
		break;
	}
	default:
		break;
	}
}

static bool first_matching(const struct arn_cfg_rbac_rules *rules, const struct arn_rbac_input *in,
			   size_t *idx, bool *err)
{
	for (size_t i = 0; i < rules->n_policies; i++) {
		const struct arn_cfg_rbac_policy *p = &rules->policies[i];
		bool perm = false, princ = false;
		for (size_t j = 0; j < p->n_permissions && !perm; j++)
			perm = arn_rbac_rule_match(&p->permissions[j], in, err);
		for (size_t j = 0; perm && j < p->n_principals && !princ; j++)
			princ = arn_rbac_rule_match(&p->principals[j], in, err);
		if (perm && princ) {
			*idx = i;
			return true;
		}
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct src s = {data, size};
	used = hused = 0;
	static char names[8][2];
	struct arn_cfg_rbac_policy pol[8];
	struct arn_cfg_rbac_rules rules = {.action = byte(&s) % 3, .policies = pol};
	rules.n_policies = byte(&s) % 9;
	for (size_t i = 0; i < rules.n_policies; i++) {
		names[i][0] = (char)('a' + i);
		pol[i].name = names[i];
		pol[i].name_len = 1;
		size_t np = 1 + byte(&s) % 3, nq = 1 + byte(&s) % 3;
		if (used + np + nq > MAX_RULES) {
			rules.n_policies = i;
			break;
		}
		pol[i].permissions = &pool[used];
		pol[i].n_permissions = np;
		used += np;
		pol[i].principals = &pool[used];
		pol[i].n_principals = nq;
		used += nq;
		for (size_t j = 0; j < np; j++)
			build(&s, &pol[i].permissions[j], 0);
		for (size_t j = 0; j < nq; j++)
			build(&s, &pol[i].principals[j], 0);
	}

	/* the connection and the request */
	struct arn_cfg_header hs[4];
	size_t nh = byte(&s) % 5;
	for (size_t i = 0; i < nh; i++) {
		const char *n = hnames[byte(&s) % 3];
		hs[i].name = n;
		hs[i].name_len = strlen(n);
		hs[i].value = bytes(&s, &hs[i].value_len);
	}
	struct arn_cfg_request req = {.headers = hs, .n_headers = nh};
	req.method = bytes(&s, &req.method_len);
	req.authority = bytes(&s, &req.authority_len);
	req.path = bytes(&s, &req.path_len);
	char scratch[64];
	struct arn_rbac_str sans[2];
	struct arn_rbac_input in = {.src_addr = u32(&s),
				    .remote_addr = u32(&s),
				    .dst_addr = u32(&s),
				    .dst_port = byte(&s) % 8,
				    .header = arn_rbac_request_header,
				    .header_ctx = &req,
				    .tls = byte(&s) & 1,
				    .uri_sans = sans,
				    .n_uri_sans = byte(&s) % 2,
				    .dns_sans = sans + 1,
				    .n_dns_sans = byte(&s) % 2};
	in.sni.s = bytes(&s, &in.sni.len);
	in.path = byte(&s) & 1 ? req.path : NULL;
	in.path_len = req.path_len;
	sans[0].s = bytes(&s, &sans[0].len);
	sans[1].s = bytes(&s, &sans[1].len);
	in.subject.s = bytes(&s, &in.subject.len);
	if (byte(&s) & 1) {
		in.scratch = scratch;
		in.scratch_len = byte(&s) % sizeof(scratch);
	}

	struct arn_rbac_decision d, d2;
	bool allowed = arn_rbac_eval(&rules, &in, &d);
	if (allowed != d.allowed)
		abort();
	arn_rbac_eval(&rules, &in, &d2);
	if (memcmp(&d, &d2, sizeof(d)) != 0)
		abort();
	bool err = false;
	size_t idx = 0;
	bool m = first_matching(&rules, &in, &idx, &err);
	if (m != (d.policy != NULL) || (m && d.policy != &pol[idx]))
		abort();
	if (d.error && rules.action != ARN_CFG_RBAC_LOG && d.allowed)
		abort();
	if (!d.error) {
		bool want = rules.action == ARN_CFG_RBAC_ALLOW	? m
			    : rules.action == ARN_CFG_RBAC_DENY ? !m
								: true;
		if (d.allowed != want || d.log != (rules.action == ARN_CFG_RBAC_LOG && m))
			abort();
	}
	/* NOT inverts every rule that evaluates without error */
	for (size_t i = 0; i < used; i++) {
		struct arn_cfg_rbac_rule not = {
		    .kind = ARN_CFG_RBAC_NOT, .kids = &pool[i], .n_kids = 1};
		bool e1 = false, e2 = false;
		bool a = arn_rbac_rule_match(&pool[i], &in, &e1);
		bool b = arn_rbac_rule_match(&not, &in, &e2);
		if (!e1 && !e2 && a == b)
			abort();
	}
	char det[48];
	size_t dl = arn_rbac_details(&d, det, sizeof(det));
	if (strlen(det) != (dl < sizeof(det) ? dl : sizeof(det) - 1))
		abort();
	return 0;
}
