/*
 * lib/l4's engines: every RBAC permission and principal kind, the
 * ALLOW/DENY/LOG decisions and the effective policy Envoy reports, the
 * header lookup over a request; token buckets counted in tokens against a
 * clock the test sets (no timing).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arn_connlimit.h"
#include "arn_http_ratelimit.h"
#include "arn_rbac.h"
#include "arn_rldesc.h"
#include "arn_tbucket.h"
#include "arn_tcp_proxy.h"

/* ---- RBAC ---------------------------------------------------------------------- */

static struct arn_cfg_rbac_rule rule(uint8_t kind)
{
	return (struct arn_cfg_rbac_rule){.kind = kind};
}

static struct arn_cfg_rbac_rule cidr(uint8_t kind, uint32_t addr, uint8_t len)
{
	struct arn_cfg_rbac_rule r = rule(kind);
	r.cidr.addr = addr;
	r.cidr.len = len;
	return r;
}

static struct arn_cfg_rbac_rule str(uint8_t kind, uint8_t sk, const char *s)
{
	struct arn_cfg_rbac_rule r = rule(kind);
	r.str.kind = sk;
	r.str.s = s;
	r.str.len = strlen(s);
	r.has_str = true;
	return r;
}

static bool match(const struct arn_cfg_rbac_rule *r, const struct arn_rbac_input *in)
{
	bool err = false;
	bool m = arn_rbac_rule_match(r, in, &err);
	assert_false(err);
	return m;
}

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

static const struct arn_cfg_header req_headers[] = {
    {"X-Role", 6, "admin", 5},
    {"x-forwarded-for", 15, "192.0.2.1", 9},
    {"x-forwarded-for", 15, "198.18.0.9", 10},
};
static const struct arn_cfg_request req = {.method = "DELETE",
					   .method_len = 6,
					   .authority = "a.test",
					   .authority_len = 6,
					   .path = "/admin/users?id=1#frag",
					   .path_len = 22,
					   .headers = req_headers,
					   .n_headers = 3};

static struct arn_rbac_input input(void)
{
	return (struct arn_rbac_input){.src_addr = IP(198, 18, 0, 5),
				       .remote_addr = IP(192, 0, 2, 1),
				       .dst_addr = IP(10, 1, 2, 3),
				       .dst_port = 6379,
				       .sni = {"db.example.com", 14},
				       .path = req.path,
				       .path_len = req.path_len,
				       .header = arn_rbac_request_header,
				       .header_ctx = (void *)&req};
}

static void test_permissions(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	struct arn_cfg_rbac_rule r = rule(ARN_CFG_RBAC_ANY);
	assert_true(match(&r, &in));
	/* destination_ip: the local address, longest prefix irrelevant */
	r = cidr(ARN_CFG_RBAC_DST_IP, IP(10, 1, 0, 0), 16);
	assert_true(match(&r, &in));
	r = cidr(ARN_CFG_RBAC_DST_IP, IP(10, 2, 0, 0), 16);
	assert_false(match(&r, &in));
	r = cidr(ARN_CFG_RBAC_DST_IP, 0, 0);
	assert_true(match(&r, &in));
	/* destination_port */
	r = rule(ARN_CFG_RBAC_DST_PORT);
	r.port_lo = 6379;
	assert_true(match(&r, &in));
	r.port_lo = 6380;
	assert_false(match(&r, &in));
	/* destination_port_range: [start, end) */
	r = rule(ARN_CFG_RBAC_DST_PORT_RANGE);
	r.port_lo = 6000, r.port_hi = 6379;
	assert_false(match(&r, &in));
	r.port_hi = 6380;
	assert_true(match(&r, &in));
	r.port_lo = 6380, r.port_hi = 7000;
	assert_false(match(&r, &in));
	/* requested_server_name; "" without SNI */
	r = str(ARN_CFG_RBAC_SNI, ARN_CFG_STR_SUFFIX, ".example.com");
	assert_true(match(&r, &in));
	in.sni = (struct arn_rbac_str){NULL, 0};
	assert_false(match(&r, &in));
	r = str(ARN_CFG_RBAC_SNI, ARN_CFG_STR_EXACT, "");
	assert_true(match(&r, &in));
	/* url_path: without query and fragment */
	in = input();
	r = str(ARN_CFG_RBAC_URL_PATH, ARN_CFG_STR_EXACT, "/admin/users");
	assert_true(match(&r, &in));
	r = str(ARN_CFG_RBAC_URL_PATH, ARN_CFG_STR_SUFFIX, "1");
	assert_false(match(&r, &in));
	in.path = NULL; /* the network filter */
	r = str(ARN_CFG_RBAC_URL_PATH, ARN_CFG_STR_PREFIX, "/");
	assert_false(match(&r, &in));
}

static void test_headers(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	struct arn_cfg_header_match hm = {
	    .name = "x-role",
	    .name_len = 6,
	    .kind = ARN_CFG_HDR_STRING,
	    .str = {.kind = ARN_CFG_STR_EXACT, .s = "admin", .len = 5}};
	struct arn_cfg_rbac_rule r = rule(ARN_CFG_RBAC_HEADER);
	r.header = &hm;
	assert_true(match(&r, &in));
	/* pseudo-headers from the request line */
	hm = (struct arn_cfg_header_match){
	    .name = ":method",
	    .name_len = 7,
	    .str = {.kind = ARN_CFG_STR_EXACT, .s = "DELETE", .len = 6}};
	assert_true(match(&r, &in));
	/* repeated headers joined with ',' */
	hm = (struct arn_cfg_header_match){
	    .name = "x-forwarded-for",
	    .name_len = 15,
	    .str = {.kind = ARN_CFG_STR_EXACT, .s = "192.0.2.1,198.18.0.9", .len = 20}};
	assert_true(match(&r, &in));
	/* absent: no match, even inverted; present_match false matches */
	hm = (struct arn_cfg_header_match){.name = "x-none",
					   .name_len = 6,
					   .invert = true,
					   .str = {.kind = ARN_CFG_STR_EXACT, .s = "a", .len = 1}};
	assert_false(match(&r, &in));
	hm = (struct arn_cfg_header_match){
	    .name = "x-none", .name_len = 6, .kind = ARN_CFG_HDR_PRESENT, .present = false};
	assert_true(match(&r, &in));
	/* no header callback (the network filter): absent */
	in.header = NULL;
	hm.present = true;
	assert_false(match(&r, &in));

	/* a joined value that does not fit the scratch: an error, and the
	 * decision denies rather than judge a truncated value */
	in = input();
	char small[12];
	in.scratch = small;
	in.scratch_len = sizeof(small);
	hm = (struct arn_cfg_header_match){
	    .name = "x-forwarded-for",
	    .name_len = 15,
	    .str = {.kind = ARN_CFG_STR_SUFFIX, .s = "198.18.0.9", .len = 10}};
	bool err = false;
	assert_false(arn_rbac_rule_match(&r, &in, &err));
	assert_true(err);
	struct arn_cfg_rbac_rule any = rule(ARN_CFG_RBAC_ANY);
	struct arn_cfg_rbac_rule not = rule(ARN_CFG_RBAC_NOT);
	not .kids = &r;
	not .n_kids = 1;
	struct arn_cfg_rbac_policy p = {"p", 1, &not, 1, &any, 1};
	struct arn_cfg_rbac_rules rules = {ARN_CFG_RBAC_ALLOW, &p, 1};
	struct arn_rbac_decision d;
	assert_false(arn_rbac_eval(&rules, &in, &d));
	assert_true(d.error);
	rules.action = ARN_CFG_RBAC_LOG; /* LOG never denies */
	assert_true(arn_rbac_eval(&rules, &in, &d));
	/* with room, the same policy is judged on the whole value */
	in.scratch = NULL;
	rules.action = ARN_CFG_RBAC_ALLOW;
	assert_false(arn_rbac_eval(&rules, &in, &d));
	assert_false(d.error);
}

static void test_principals(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	/* source_ip and direct_remote_ip: the peer; remote_ip: the client the
	 * HCM resolved */
	struct arn_cfg_rbac_rule r = cidr(ARN_CFG_RBAC_SOURCE_IP, IP(198, 18, 0, 0), 15);
	assert_true(match(&r, &in));
	r.kind = ARN_CFG_RBAC_DIRECT_REMOTE_IP;
	assert_true(match(&r, &in));
	r.kind = ARN_CFG_RBAC_REMOTE_IP;
	assert_false(match(&r, &in));
	r = cidr(ARN_CFG_RBAC_REMOTE_IP, IP(192, 0, 2, 1), 32);
	assert_true(match(&r, &in));
	r.kind = ARN_CFG_RBAC_SOURCE_IP;
	assert_false(match(&r, &in));

	/* authenticated: nothing without TLS */
	struct arn_cfg_rbac_rule a = rule(ARN_CFG_RBAC_AUTHENTICATED);
	assert_false(match(&a, &in));
	in.tls = true;
	assert_true(match(&a, &in)); /* no principal_name: any TLS peer (Envoy) */
	/* URI SANs, then DNS SANs, then the subject */
	struct arn_rbac_str uri[] = {{"spiffe://td/ns/a", 16}};
	struct arn_rbac_str dns[] = {{"a.svc", 5}, {"b.svc", 5}};
	in.uri_sans = uri, in.n_uri_sans = 1;
	in.dns_sans = dns, in.n_dns_sans = 2;
	in.subject = (struct arn_rbac_str){"CN=client,O=Test", 16};
	a = str(ARN_CFG_RBAC_AUTHENTICATED, ARN_CFG_STR_EXACT, "spiffe://td/ns/a");
	assert_true(match(&a, &in));
	a = str(ARN_CFG_RBAC_AUTHENTICATED, ARN_CFG_STR_EXACT, "b.svc");
	assert_true(match(&a, &in));
	a = str(ARN_CFG_RBAC_AUTHENTICATED, ARN_CFG_STR_PREFIX, "CN=client");
	assert_true(match(&a, &in));
	a = str(ARN_CFG_RBAC_AUTHENTICATED, ARN_CFG_STR_EXACT, "c.svc");
	assert_false(match(&a, &in));
	/* a peer with more names than the caller passed: a principal_name
	 * rule is an error (denied), never decided on the names that fit */
	in.peer_names_truncated = true;
	bool err = false;
	assert_false(arn_rbac_rule_match(&a, &in, &err));
	assert_true(err);
	a = rule(ARN_CFG_RBAC_AUTHENTICATED); /* authenticated {}: still a TLS peer */
	err = false;
	assert_true(arn_rbac_rule_match(&a, &in, &err));
	assert_false(err);
}

static void test_and_or_not(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	struct arn_cfg_rbac_rule kids[2] = {cidr(ARN_CFG_RBAC_DST_IP, IP(10, 0, 0, 0), 8),
					    rule(ARN_CFG_RBAC_DST_PORT)};
	kids[1].port_lo = 80;
	struct arn_cfg_rbac_rule r = rule(ARN_CFG_RBAC_AND);
	r.kids = kids, r.n_kids = 2;
	assert_false(match(&r, &in));
	r.kind = ARN_CFG_RBAC_OR;
	assert_true(match(&r, &in));
	kids[1].port_lo = 6379;
	r.kind = ARN_CFG_RBAC_AND;
	assert_true(match(&r, &in));
	struct arn_cfg_rbac_rule n = rule(ARN_CFG_RBAC_NOT);
	n.kids = &r, n.n_kids = 1;
	assert_false(match(&n, &in));
	struct arn_cfg_rbac_rule nn = rule(ARN_CFG_RBAC_NOT);
	nn.kids = &n, nn.n_kids = 1;
	assert_true(match(&nn, &in));
}

/* An IPv6 range (len bits of @p a6) for an address principal or permission. */
static struct arn_cfg_rbac_rule cidr6(uint8_t kind, const uint8_t a6[16], uint8_t len)
{
	struct arn_cfg_rbac_rule r = rule(kind);
	r.cidr.v6 = true;
	r.cidr.len = len;
	memcpy(r.cidr.addr6, a6, 16);
	return r;
}

/*
 * IPv6 ranges against Arion's IPv4 addresses, as Envoy's IPMatcher
 * (CidrRange::isInRange) decides for an IPv4 peer: no IPv6 range holds an
 * IPv4 address, not ::/0 and not the IPv4-mapped ::ffff:0:0/96 (Envoy's
 * IPv4 peer is an Ipv4Instance, never mapped into IPv6); so a not_id of an IPv6 range
 * matches every IPv4 address, and an IPv6 range beside IPv4 ones in an
 * or_ids changes nothing.
 */
static void test_ipv6_ranges(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	static const uint8_t any6[16] = {0};
	static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t mapped_src[16] = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 5};
	const uint8_t kinds[] = {ARN_CFG_RBAC_SOURCE_IP, ARN_CFG_RBAC_DIRECT_REMOTE_IP,
				 ARN_CFG_RBAC_REMOTE_IP, ARN_CFG_RBAC_DST_IP};
	for (size_t k = 0; k < sizeof(kinds); k++) {
		struct arn_cfg_rbac_rule r = cidr6(kinds[k], any6, 0);
		assert_false(match(&r, &in));
		r = cidr6(kinds[k], mapped, 96);
		assert_false(match(&r, &in));
		r = cidr6(kinds[k], mapped_src, 128);
		assert_false(match(&r, &in));
		/* negation: every IPv4 address is outside an IPv6 range */
		struct arn_cfg_rbac_rule n = rule(ARN_CFG_RBAC_NOT);
		n.kids = &r, n.n_kids = 1;
		assert_true(match(&n, &in));
	}
	/* a mixed list (Envoy Gateway's clientCIDRs as or_ids): the IPv4
	 * range decides */
	struct arn_cfg_rbac_rule kids[2] = {cidr6(ARN_CFG_RBAC_REMOTE_IP, any6, 0),
					    cidr(ARN_CFG_RBAC_REMOTE_IP, IP(192, 0, 2, 0), 24)};
	struct arn_cfg_rbac_rule or = rule(ARN_CFG_RBAC_OR);
	or.kids = kids, or.n_kids = 2;
	assert_true(match(& or, &in));
	in.remote_addr = IP(203, 0, 113, 1);
	assert_false(match(& or, &in));
}

static void test_actions_and_effective_policy(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	struct arn_cfg_rbac_rule any = rule(ARN_CFG_RBAC_ANY);
	struct arn_cfg_rbac_rule port80 = rule(ARN_CFG_RBAC_DST_PORT);
	port80.port_lo = 80;
	struct arn_cfg_rbac_rule net = cidr(ARN_CFG_RBAC_SOURCE_IP, IP(198, 18, 0, 0), 15);
	struct arn_cfg_rbac_rule other = cidr(ARN_CFG_RBAC_SOURCE_IP, IP(203, 0, 113, 0), 24);
	/* in name order (the model's): "a" fails on its permission, "b" and
	 * "c" match; Envoy reports "b" */
	struct arn_cfg_rbac_policy pol[] = {
	    {"a", 1, &port80, 1, &any, 1},
	    {"b", 1, &any, 1, &net, 1},
	    {"c", 1, &any, 1, &any, 1},
	};
	struct arn_cfg_rbac_rules rules = {ARN_CFG_RBAC_ALLOW, pol, 3};
	struct arn_rbac_decision d;
	char det[128];
	assert_true(arn_rbac_eval(&rules, &in, &d));
	assert_ptr_equal(d.policy, &pol[1]);
	assert_false(d.log);
	rules.action = ARN_CFG_RBAC_DENY;
	assert_false(arn_rbac_eval(&rules, &in, &d));
	assert_ptr_equal(d.policy, &pol[1]);
	arn_rbac_details(&d, det, sizeof(det));
	assert_string_equal(det, "rbac_access_denied_matched_policy[b]");
	rules.action = ARN_CFG_RBAC_LOG;
	assert_true(arn_rbac_eval(&rules, &in, &d));
	assert_true(d.log);
	/* nothing matches: ALLOW denies (policy "none"), DENY and LOG allow */
	pol[1].principals = &other;
	pol[2].principals = &other;
	rules.action = ARN_CFG_RBAC_ALLOW;
	assert_false(arn_rbac_eval(&rules, &in, &d));
	assert_null(d.policy);
	assert_int_equal(arn_rbac_details(&d, det, sizeof(det)),
			 strlen("rbac_access_denied_matched_policy[none]"));
	assert_string_equal(det, "rbac_access_denied_matched_policy[none]");
	rules.action = ARN_CFG_RBAC_DENY;
	assert_true(arn_rbac_eval(&rules, &in, &d));
	rules.action = ARN_CFG_RBAC_LOG;
	assert_true(arn_rbac_eval(&rules, &in, &d));
	assert_false(d.log);
	/* ALLOW with no policy at all denies; no rules at all allows */
	rules.action = ARN_CFG_RBAC_ALLOW;
	rules.n_policies = 0;
	assert_false(arn_rbac_eval(&rules, &in, &d));
	assert_true(arn_rbac_eval(NULL, &in, &d));
	assert_null(d.policy);
	/* details are cut at the buffer, and say how long they would be */
	d.policy = &pol[0];
	assert_int_equal(arn_rbac_details(&d, det, 8),
			 strlen("rbac_access_denied_matched_policy[a]"));
	assert_string_equal(det, "rbac_ac");
}

/* ---- token buckets ------------------------------------------------------------- */

#define HZ 1000000ull /* a 1 MHz clock: 1 tick per microsecond */

static void test_bucket_starts_full_and_fills_discretely(void **state)
{
	(void)state;
	struct arn_cfg_token_bucket cfg = {
	    .max_tokens = 5, .tokens_per_fill = 2, .fill_interval_ms = 100};
	struct arn_tbucket b;
	assert_int_equal(arn_tbucket_init(&b, &cfg, HZ), 0);
	assert_int_equal(b.interval, 100000);
	struct arn_cfg_bucket_state st = {0};
	uint64_t t0 = 123456789;
	assert_int_equal(arn_tbucket_remaining(&b, &st, t0), 5);
	int taken = 0;
	for (int i = 0; i < 10; i++)
		taken += arn_tbucket_take(&b, &st, t0, 1);
	assert_int_equal(taken, 5);
	/* just before the first fill: nothing */
	assert_false(arn_tbucket_take(&b, &st, t0 + 99999, 1));
	assert_int_equal(arn_tbucket_next_fill(&b, &st, t0 + 99999), 1);
	/* one fill: tokens_per_fill */
	assert_int_equal(arn_tbucket_remaining(&b, &st, t0 + 100000), 2);
	taken = 0;
	for (int i = 0; i < 10; i++)
		taken += arn_tbucket_take(&b, &st, t0 + 100000, 1);
	assert_int_equal(taken, 2);
	/* many fills: capped at max_tokens */
	assert_int_equal(arn_tbucket_remaining(&b, &st, t0 + 10 * 100000), 5);
	assert_false(arn_tbucket_take(&b, &st, t0 + 10 * 100000, 6));
	assert_true(arn_tbucket_take(&b, &st, t0 + 10 * 100000, 5));
	assert_false(arn_tbucket_take(&b, &st, t0 + 10 * 100000 + 50000, 1));
	/* N requests at a steady rate of one per 25 ms over 2 s: the bucket
	 * passes its 5 plus 2 per 100 ms */
	struct arn_cfg_bucket_state s2 = {0};
	taken = 0;
	for (int i = 0; i < 80; i++)
		taken += arn_tbucket_take(&b, &s2, t0 + (uint64_t)i * 25000, 1);
	/* four requests per interval drain every fill: the 5 it starts with
	 * and 2 for each of the 19 fills in (0, 1975 ms] */
	assert_int_equal(taken, 5 + 19 * 2);
}

static void test_bucket_init_refusals(void **state)
{
	(void)state;
	struct arn_tbucket b;
	struct arn_cfg_token_bucket cfg = {
	    .max_tokens = 0, .tokens_per_fill = 1, .fill_interval_ms = 50};
	assert_int_equal(arn_tbucket_init(&b, &cfg, HZ), -EINVAL);
	cfg.max_tokens = 1;
	cfg.tokens_per_fill = 0;
	assert_int_equal(arn_tbucket_init(&b, &cfg, HZ), -EINVAL);
	cfg.tokens_per_fill = 1;
	assert_int_equal(arn_tbucket_init(&b, &cfg, 999), 0);
	assert_int_equal(b.interval, 49); /* 50 ms at 999 Hz, rounded down */
	cfg.fill_interval_ms = UINT32_MAX;
	assert_int_equal(arn_tbucket_init(&b, &cfg, 3000000000ull), 0);
	assert_int_equal(b.interval, (uint64_t)UINT32_MAX * 3000000ull);
}

/* A worker whose TSC is behind another's must not count fills backwards
 * (which, modulo 2^32, would refill the bucket to the brim). */
static void test_bucket_worker_behind(void **state)
{
	(void)state;
	struct arn_cfg_token_bucket cfg = {
	    .max_tokens = 3, .tokens_per_fill = 1, .fill_interval_ms = 100};
	struct arn_tbucket b;
	arn_tbucket_init(&b, &cfg, HZ);
	struct arn_cfg_bucket_state st = {0};
	uint64_t t0 = 1000000;
	assert_true(arn_tbucket_take(&b, &st, t0, 3));
	/* worker A at fill 5 takes what the fills brought */
	assert_true(arn_tbucket_take(&b, &st, t0 + 500000, 3));
	/* worker B still at fill 4 finds nothing */
	assert_false(arn_tbucket_take(&b, &st, t0 + 400000, 1));
	assert_int_equal(arn_tbucket_remaining(&b, &st, t0 + 400000), 0);
	/* and a tick before the epoch counts as the epoch */
	struct arn_cfg_bucket_state s2 = {0};
	assert_true(arn_tbucket_take(&b, &s2, t0, 3));
	assert_false(arn_tbucket_take(&b, &s2, t0 - 1000, 1));
}

struct taker {
	const struct arn_tbucket *b;
	struct arn_cfg_bucket_state *st;
	int taken;
};

static void *take_many(void *arg)
{
	struct taker *t = arg;
	for (int i = 0; i < 200000; i++)
		t->taken += arn_tbucket_take(t->b, t->st, 42 + (uint64_t)(i / 1000), 1);
	return NULL;
}

/* Workers sharing a bucket take exactly what it holds, no more. */
static void test_bucket_shared(void **state)
{
	(void)state;
	/* 1000 tokens, and 7 per fill of 1 ms over the 200 ticks = 200 fills */
	struct arn_cfg_token_bucket cfg = {
	    .max_tokens = 1000, .tokens_per_fill = 7, .fill_interval_ms = 1};
	struct arn_tbucket b;
	arn_tbucket_init(&b, &cfg, 1000);
	assert_int_equal(b.interval, 1);
	struct arn_cfg_bucket_state st = {0};
	/* every thread starts its clock at the same tick 42 */
	assert_true(arn_tbucket_take(&b, &st, 42, 0));
	struct taker t[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		t[i] = (struct taker){&b, &st, 0};
		pthread_create(&th[i], NULL, take_many, &t[i]);
	}
	int total = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += t[i].taken;
	}
	/* all fills up to tick 42 + 199 were applied by someone: 1000 + 199 * 7 */
	assert_int_equal(total, 1000 + 199 * 7);
}

/* ---- rate limit descriptors ------------------------------------------------------ */

static struct arn_cfg_rl_action act(uint8_t kind, const char *key, const char *value)
{
	return (struct arn_cfg_rl_action){.kind = kind,
					  .key = key,
					  .key_len = strlen(key),
					  .value = value,
					  .value_len = value ? strlen(value) : 0,
					  .expect_match = true,
					  .mask_len = 32};
}

static void assert_entry(const struct arn_rl_desc *d, size_t i, const char *k, const char *v)
{
	assert_true(i < d->n_entries);
	assert_int_equal(d->entries[i].key_len, strlen(k));
	assert_memory_equal(d->entries[i].key, k, strlen(k));
	assert_int_equal(d->entries[i].value_len, strlen(v));
	assert_memory_equal(d->entries[i].value, v, strlen(v));
}

static void test_rl_descriptors(void **state)
{
	(void)state;
	struct arn_rl_input in = {.remote_addr = IP(198, 18, 7, 9),
				  .route_cluster = {"backend", 7},
				  .header = arn_rbac_request_header,
				  .header_ctx = (void *)&req};
	struct arn_cfg_header_match get = {
	    .name = ":method",
	    .name_len = 7,
	    .str = {.kind = ARN_CFG_STR_EXACT, .s = "GET", .len = 3}};
	struct arn_cfg_rl_action a[7] = {
	    act(ARN_CFG_RL_SOURCE_CLUSTER, "source_cluster", "ingress"), /* lib/config's node cluster */
	    act(ARN_CFG_RL_DESTINATION_CLUSTER, "destination_cluster", NULL),
	    act(ARN_CFG_RL_REQUEST_HEADERS, "role", NULL),
	    act(ARN_CFG_RL_REMOTE_ADDRESS, "remote_address", NULL),
	    act(ARN_CFG_RL_GENERIC_KEY, "generic_key", "foo"),
	    act(ARN_CFG_RL_HEADER_VALUE_MATCH, "header_match", "not-get"),
	    act(ARN_CFG_RL_MASKED_REMOTE_ADDRESS, "masked_remote_address", NULL),
	};
	a[2].header = "x-role", a[2].header_len = 6;
	a[5].headers = &get, a[5].n_headers = 1, a[5].expect_match = false;
	a[6].mask_len = 16;
	struct arn_cfg_rate_limit rl = {0, a, 7};
	struct arn_rl_desc d;
	char buf[256];
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_int_equal(d.n_entries, 7);
	assert_entry(&d, 0, "source_cluster", "ingress");
	assert_entry(&d, 1, "destination_cluster", "backend");
	assert_entry(&d, 2, "role", "admin");
	assert_entry(&d, 3, "remote_address", "198.18.7.9");
	assert_entry(&d, 4, "generic_key", "foo");
	assert_entry(&d, 5, "header_match", "not-get"); /* DELETE is not GET */
	assert_entry(&d, 6, "masked_remote_address", "198.18.0.0/16");
	/* a repeated header gives its first value, as Envoy's
	 * RequestHeadersAction: joined ("192.0.2.1,198.18.0.9"), no
	 * descriptor would name it and a client could add a second header to
	 * move from its descriptor's bucket to the default one */
	a[2].header = "x-forwarded-for", a[2].header_len = 15;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_entry(&d, 2, "role", "192.0.2.1");
	a[2].header = "x-role", a[2].header_len = 6;
	/* header_value_match that does not come out as expected: no descriptor */
	a[5].expect_match = true;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 0);
	a[5].expect_match = false;
	/* a missing header: no descriptor, or the entry left out */
	a[2].header = "x-none", a[2].header_len = 6;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 0);
	a[2].skip_if_absent = true;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_int_equal(d.n_entries, 6);
	assert_entry(&d, 2, "remote_address", "198.18.7.9");
	/* nothing left: no descriptor at all */
	rl.actions = &a[2], rl.n_actions = 1;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 0);
	/* too small a buffer is said, not cut */
	rl.actions = a, rl.n_actions = 7;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, 20), -ENOSPC);

	/* the filter's descriptor with the same entries, in order */
	struct arn_cfg_rl_entry e1[] = {{"generic_key", 11, "foo", 3}};
	struct arn_cfg_rl_entry e2[] = {{"remote_address", 14, "198.18.7.9", 10},
					{"generic_key", 11, "foo", 3}};
	struct arn_cfg_rl_descriptor fd[] = {{e1, 1, {0}, NULL}, {e2, 2, {0}, NULL}};
	struct arn_cfg_http_ratelimit f = {.descriptors = fd, .n_descriptors = 2};
	struct arn_cfg_rl_action two[] = {act(ARN_CFG_RL_REMOTE_ADDRESS, "remote_address", NULL),
					  act(ARN_CFG_RL_GENERIC_KEY, "generic_key", "foo")};
	rl = (struct arn_cfg_rate_limit){0, two, 2};
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_ptr_equal(arn_rl_match(&f, &d), &fd[1]);
	rl.actions = &two[1], rl.n_actions = 1;
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_ptr_equal(arn_rl_match(&f, &d), &fd[0]);
	two[1].value = "bar";
	assert_int_equal(arn_rl_descriptor(&rl, &in, &d, buf, sizeof(buf)), 1);
	assert_null(arn_rl_match(&f, &d));
}

/* ---- connection_limit --------------------------------------------------------------- */

struct conn_taker {
	const struct arn_cfg_connection_limit *cl;
	int got;
};

static void *open_many(void *arg)
{
	struct conn_taker *t = arg;
	for (int i = 0; i < 100000; i++)
		t->got += arn_connlimit_acquire(t->cl);
	return NULL;
}

static void test_connection_limit(void **state)
{
	(void)state;
	uint64_t count = 0;
	struct arn_cfg_connection_limit cl = {
	    .enabled = true, .max_connections = 2, .count = &count};
	assert_true(arn_connlimit_acquire(&cl));
	assert_true(arn_connlimit_acquire(&cl));
	assert_false(arn_connlimit_acquire(&cl));
	assert_int_equal(arn_connlimit_active(&cl), 2);
	arn_connlimit_release(&cl);
	assert_true(arn_connlimit_acquire(&cl));
	/* disabled (runtime_enabled false): no limit, nothing counted */
	cl.enabled = false;
	assert_true(arn_connlimit_acquire(&cl));
	assert_int_equal(arn_connlimit_active(&cl), 2);
	/* workers racing for the last places take exactly them */
	cl.enabled = true;
	cl.max_connections = 1000;
	count = 0;
	struct conn_taker t[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		t[i] = (struct conn_taker){&cl, 0};
		pthread_create(&th[i], NULL, open_many, &t[i]);
	}
	int total = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		total += t[i].got;
	}
	assert_int_equal(total, 1000);
	assert_int_equal(count, 1000);
}

/* ---- the HTTP local_ratelimit decision ------------------------------------------- */

#define FULL                                                                                       \
	{                                                                                          \
		100, 100                                                                           \
	}
#define TB(max, per, ms)                                                                           \
	{                                                                                          \
		(max), (per), (ms)                                                                 \
	}

static struct arn_hlrl_decision decide(struct arn_hlrl_input *in)
{
	struct arn_hlrl_decision d;
	assert_int_equal(arn_hlrl_decide(in, &d), 0);
	return d;
}

static void test_hlrl_default_bucket(void **state)
{
	(void)state;
	struct arn_cfg_bucket_state st = {0};
	struct arn_cfg_http_ratelimit f = {.has_bucket = true,
					   .bucket = TB(2, 1, 1000),
					   .state = &st,
					   .enabled = FULL,
					   .enforced = FULL,
					   .status = 429,
					   .always_consume_default = true};
	struct arn_hlrl_input in = {
	    .filter = &f, .filter_name = "rl", .filter_name_len = 2, .now = 5000, .hz = HZ};
	struct arn_hlrl_decision d = decide(&in);
	assert_true(d.enabled);
	assert_false(d.limited);
	assert_int_equal(d.limit, 2);
	assert_int_equal(d.remaining, 1);
	d = decide(&in);
	assert_false(d.limited);
	d = decide(&in);
	assert_true(d.limited);
	assert_true(d.enforced);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.reset_ticks, HZ); /* a whole second to the next fill */
	in.now += HZ / 4;
	assert_int_equal(decide(&in).reset_ticks, HZ * 3 / 4);
	/* filter_enforced's fraction: limited but let through */
	f.enforced = (struct arn_cfg_fraction){50, 100};
	in.random_enforced = 50;
	d = decide(&in);
	assert_true(d.limited);
	assert_false(d.enforced);
	in.random_enforced = 49;
	assert_true(decide(&in).enforced);
	/* filter_enabled's fraction (0 % unless set): not looked at */
	f.enabled = (struct arn_cfg_fraction){0, 100};
	d = decide(&in);
	assert_false(d.enabled);
	assert_false(d.limited);
	/* after a fill, one more */
	f.enabled = (struct arn_cfg_fraction)FULL;
	in.now = 5000 + HZ;
	assert_false(decide(&in).limited);
	assert_true(decide(&in).limited);
}

static void test_hlrl_per_route_and_descriptors(void **state)
{
	(void)state;
	struct arn_cfg_bucket_state sf = {0}, sr = {0}, sa = {0}, sb = {0};
	/* the filter's configuration is generous; the route's is tight */
	struct arn_cfg_http_ratelimit f = {.has_bucket = true,
					   .bucket = TB(100, 1, 1000),
					   .state = &sf,
					   .enabled = FULL,
					   .enforced = FULL,
					   .always_consume_default = true};
	struct arn_cfg_rl_entry ea[] = {{"generic_key", 11, "fast", 4}};
	struct arn_cfg_rl_entry eb[] = {{"generic_key", 11, "slow", 4}};
	struct arn_cfg_rl_descriptor ds[] = {{ea, 1, TB(5, 10, 1000), &sa},
					     {eb, 1, TB(1, 1, 1000), &sb}};
	struct arn_cfg_http_ratelimit r = f;
	r.bucket = (struct arn_cfg_token_bucket)TB(50, 1, 1000);
	r.state = &sr;
	r.descriptors = ds;
	r.n_descriptors = 2;
	r.stage = 1;
	struct arn_cfg_per_filter pf = {"rl", 2, ARN_CFG_PF_LOCAL_RATELIMIT, &r};
	struct arn_cfg_rl_action fast = act(ARN_CFG_RL_GENERIC_KEY, "generic_key", "fast");
	struct arn_cfg_rl_action slow = act(ARN_CFG_RL_GENERIC_KEY, "generic_key", "slow");
	struct arn_cfg_rate_limit rls[] = {{1, &fast, 1}, {1, &slow, 1}, {0, &slow, 1}};
	struct arn_cfg_route route = {
	    .action = ARN_CFG_ACTION_ROUTE, .per_filter = &pf, .n_per_filter = 1};
	route.route.rate_limits = rls;
	route.route.n_rate_limits = 1;						/* "fast" only */
	struct arn_cfg_vhost vh = {.rate_limits = &rls[1], .n_rate_limits = 1}; /* "slow" */
	struct arn_hlrl_input in = {.filter = &f,
				    .filter_name = "rl",
				    .filter_name_len = 2,
				    .vhost = &vh,
				    .route = &route,
				    .now = 7,
				    .hz = HZ};
	struct arn_tbucket tbf, tba, tbb, tbr;
	arn_tbucket_init(&tbf, &f.bucket, HZ);
	arn_tbucket_init(&tba, &ds[0].bucket, HZ);
	arn_tbucket_init(&tbb, &ds[1].bucket, HZ);
	arn_tbucket_init(&tbr, &r.bucket, HZ);

	/* OVERRIDE (default): the route has rate_limits, the vhost's are not
	 * used; "fast" matched, and the route's default bucket is consumed
	 * too (always_consume_default), never the filter's */
	struct arn_hlrl_decision d = decide(&in);
	assert_ptr_equal(d.config, &r);
	assert_false(d.limited);
	assert_int_equal(arn_tbucket_remaining(&tba, &sa, 7), 4);
	assert_int_equal(arn_tbucket_remaining(&tbb, &sb, 7), 1);
	assert_int_equal(arn_tbucket_remaining(&tbr, &sr, 7), 49);
	assert_int_equal(arn_tbucket_remaining(&tbf, &sf, 7), 100);
	assert_int_equal(d.limit, 5); /* the first matched descriptor's */
	/* without always_consume_default, a matched descriptor spares the
	 * default bucket */
	r.always_consume_default = false;
	decide(&in);
	assert_int_equal(arn_tbucket_remaining(&tba, &sa, 7), 3);
	assert_int_equal(arn_tbucket_remaining(&tbr, &sr, 7), 49);
	/* INCLUDE: "fast" and "slow"; the slower fill rate takes first, and
	 * when it has none the faster is not touched */
	r.vh_rate_limits = ARN_CFG_VH_RL_INCLUDE;
	assert_false(decide(&in).limited); /* slow 1 -> 0, fast 3 -> 2 */
	d = decide(&in);
	assert_true(d.limited);
	assert_int_equal(d.limit, 1);
	assert_int_equal(arn_tbucket_remaining(&tba, &sa, 7), 2);
	/* include_vh_rate_limits on the route says INCLUDE whatever the option */
	r.vh_rate_limits = ARN_CFG_VH_RL_IGNORE;
	route.route.include_vh_rate_limits = true;
	assert_true(decide(&in).limited);
	route.route.include_vh_rate_limits = false;
	assert_false(decide(&in).limited); /* IGNORE: "fast" only, 2 -> 1 */
	/* OVERRIDE with no route rate_limits: the virtual host's */
	r.vh_rate_limits = ARN_CFG_VH_RL_OVERRIDE;
	route.route.n_rate_limits = 0;
	assert_true(decide(&in).limited);
	/* another stage: no descriptor, the route's default bucket decides */
	route.route.rate_limits = &rls[2];
	route.route.n_rate_limits = 1;
	vh.n_rate_limits = 0;
	assert_false(decide(&in).limited);
	assert_int_equal(arn_tbucket_remaining(&tbr, &sr, 7), 48);
	/* no per-route configuration: the filter's */
	route.n_per_filter = 0;
	assert_ptr_equal(decide(&in).config, &f);
	assert_int_equal(arn_tbucket_remaining(&tbf, &sf, 7), 99);
}

/*
 * A request whose descriptor does not fit in ARN_RL_DESC_BYTES (an 1100-byte
 * x-user on a request_headers action) produces one no configured descriptor
 * equals (lib/config refuses those): it matches nothing, and the default
 * bucket still counts the request, as in Envoy. Never an error that lets
 * the request past every bucket.
 */
static void test_hlrl_descriptor_too_long_takes_the_default_bucket(void **state)
{
	(void)state;
	static char user[1100];
	memset(user, 'u', sizeof(user));
	const struct arn_cfg_header h[] = {{"x-user", 6, user, sizeof(user)}};
	const struct arn_cfg_request r = {.method = "GET",
					  .method_len = 3,
					  .path = "/",
					  .path_len = 1,
					  .headers = h,
					  .n_headers = 1};
	struct arn_cfg_bucket_state sd = {0}, su = {0};
	struct arn_cfg_rl_entry eu[] = {{"user", 4, "alice", 5}};
	struct arn_cfg_rl_descriptor ds[] = {{eu, 1, TB(100, 100, 1000), &su}};
	struct arn_cfg_http_ratelimit f = {.has_bucket = true,
					   .bucket = TB(1, 1, 1000),
					   .state = &sd,
					   .enabled = FULL,
					   .enforced = FULL,
					   .descriptors = ds,
					   .n_descriptors = 1,
					   .always_consume_default = true};
	struct arn_cfg_rl_action a = act(ARN_CFG_RL_REQUEST_HEADERS, "user", NULL);
	a.header = "x-user", a.header_len = 6;
	struct arn_cfg_rate_limit rls[] = {{0, &a, 1}};
	struct arn_cfg_route route = {.action = ARN_CFG_ACTION_ROUTE};
	route.route.rate_limits = rls;
	route.route.n_rate_limits = 1;
	struct arn_hlrl_input in = {
	    .filter = &f,
	    .filter_name = "rl",
	    .filter_name_len = 2,
	    .route = &route,
	    .rl = {.header = arn_rbac_request_header, .header_ctx = (void *)&r},
	    .now = 3,
	    .hz = HZ};
	struct arn_hlrl_decision d = decide(&in);
	assert_true(d.enabled);
	assert_false(d.limited);
	assert_int_equal(d.limit, 1); /* the default bucket decided */
	d = decide(&in);
	assert_true(d.limited);
	assert_true(d.enforced);
	assert_int_equal(su.word, 0); /* the descriptor's bucket never touched */
}

/*
 * header_value_match over a header repeated five times (1000 bytes each,
 * joined past 4 KiB): with the caller's scratch (as large as a request
 * head) the whole joined value is matched, so the descriptor's bucket
 * decides; without room for it, the RateLimit yields no descriptor and
 * the default bucket decides. Either way the request is counted.
 */
static void test_hlrl_header_value_match_on_long_joined_header(void **state)
{
	(void)state;
	static char v[5][1000];
	struct arn_cfg_header h[5];
	for (int i = 0; i < 5; i++) {
		memset(v[i], 'a', sizeof(v[i]));
		h[i] = (struct arn_cfg_header){"x-a", 3, v[i], sizeof(v[i])};
	}
	memcpy(v[4] + sizeof(v[4]) - 3, "zzz", 3); /* only in the last one */
	const struct arn_cfg_request r = {.method = "GET",
					  .method_len = 3,
					  .path = "/",
					  .path_len = 1,
					  .headers = h,
					  .n_headers = 5};
	struct arn_cfg_header_match zzz = {
	    .name = "x-a",
	    .name_len = 3,
	    .kind = ARN_CFG_HDR_STRING,
	    .str = {.kind = ARN_CFG_STR_CONTAINS, .s = "zzz", .len = 3}};
	struct arn_cfg_bucket_state sd = {0}, sm = {0};
	struct arn_cfg_rl_entry em[] = {{"header_match", 12, "has-zzz", 7}};
	struct arn_cfg_rl_descriptor ds[] = {{em, 1, TB(1, 1, 1000), &sm}};
	struct arn_cfg_http_ratelimit f = {.has_bucket = true,
					   .bucket = TB(3, 1, 1000),
					   .state = &sd,
					   .enabled = FULL,
					   .enforced = FULL,
					   .descriptors = ds,
					   .n_descriptors = 1,
					   .always_consume_default = false};
	struct arn_cfg_rl_action a = act(ARN_CFG_RL_HEADER_VALUE_MATCH, "header_match", "has-zzz");
	a.headers = &zzz, a.n_headers = 1;
	struct arn_cfg_rate_limit rls[] = {{0, &a, 1}};
	struct arn_cfg_route route = {.action = ARN_CFG_ACTION_ROUTE};
	route.route.rate_limits = rls;
	route.route.n_rate_limits = 1;
	static char scratch[64 * 1024];
	struct arn_hlrl_input in = {.filter = &f,
				    .filter_name = "rl",
				    .filter_name_len = 2,
				    .route = &route,
				    .rl = {.header = arn_rbac_request_header,
					   .header_ctx = (void *)&r,
					   .scratch = scratch,
					   .scratch_len = sizeof(scratch)},
				    .now = 3,
				    .hz = HZ};
	struct arn_hlrl_decision d = decide(&in);
	assert_false(d.limited);
	assert_int_equal(d.limit, 1); /* the descriptor's bucket */
	d = decide(&in);
	assert_true(d.limited);
	assert_int_equal(d.limit, 1);
	assert_int_equal(sd.word, 0);
	/* no scratch: 4 KiB on the stack, too small for the joined value */
	in.rl.scratch = NULL, in.rl.scratch_len = 0;
	d = decide(&in);
	assert_false(d.limited);
	assert_int_equal(d.limit, 3); /* the default bucket */
	decide(&in);
	decide(&in);
	assert_true(decide(&in).limited);
}

static void test_hlrl_per_connection(void **state)
{
	(void)state;
	struct arn_cfg_bucket_state shared = {0};
	struct arn_cfg_http_ratelimit f = {.has_bucket = true,
					   .bucket = TB(1, 1, 1000),
					   .state = &shared,
					   .enabled = FULL,
					   .enforced = FULL,
					   .per_connection = true,
					   .always_consume_default = true};
	struct arn_cfg_bucket_state c1[1] = {{0}}, c2[1] = {{0}};
	struct arn_hlrl_input in = {.filter = &f,
				    .filter_name = "rl",
				    .filter_name_len = 2,
				    .now = 1,
				    .hz = HZ,
				    .conn_states = c1,
				    .n_conn_states = 1};
	assert_false(decide(&in).limited);
	assert_true(decide(&in).limited);
	in.conn_states = c2; /* another connection has its own bucket */
	assert_false(decide(&in).limited);
	assert_int_equal(shared.word, 0);
	struct arn_hlrl_decision d;
	in.n_conn_states = 0;
	assert_int_equal(arn_hlrl_decide(&in, &d), -ENOSPC);
}

static void test_tcp_proxy_cluster(void **state)
{
	(void)state;
	struct arn_cfg_tcp_proxy_cluster w[] = {{{"a", 1, 0}, 1}, {{"b", 1, 0}, 3}};
	struct arn_cfg_tcp_proxy tp = {.cluster = {"one", 3, 0}};
	assert_ptr_equal(arn_tcp_proxy_cluster(&tp, 12345), &tp.cluster);
	tp.weighted = w, tp.n_weighted = 2, tp.total_weight = 4;
	int n[2] = {0, 0};
	for (uint64_t r = 0; r < 400; r++)
		n[arn_tcp_proxy_cluster(&tp, r)->name[0] - 'a']++;
	assert_int_equal(n[0], 100);
	assert_int_equal(n[1], 300);
}

static void test_rbac_filter(void **state)
{
	(void)state;
	struct arn_rbac_input in = input();
	struct arn_cfg_rbac_rule any = rule(ARN_CFG_RBAC_ANY);
	struct arn_cfg_rbac_policy p = {"all", 3, &any, 1, &any, 1};
	struct arn_cfg_rbac_rules deny = {ARN_CFG_RBAC_DENY, &p, 1};
	struct arn_cfg_rbac_rules allow = {ARN_CFG_RBAC_ALLOW, &p, 1};
	struct arn_cfg_rbac_filter f = {.rules = NULL, .shadow = &deny};
	struct arn_rbac_result r;
	/* shadow rules only count */
	assert_true(arn_rbac_filter_eval(&f, NULL, &in, &r));
	assert_false(r.ran);
	assert_true(r.shadow_ran);
	assert_false(r.shadow.allowed);
	f.rules = &deny;
	assert_false(arn_rbac_filter_eval(&f, NULL, &in, &r));
	assert_true(r.ran);
	/* a route's RBACPerRoute replaces both; one without rules turns it off */
	struct arn_cfg_rbac_filter pr = {.rules = &allow};
	assert_true(arn_rbac_filter_eval(&f, &pr, &in, &r));
	assert_false(r.shadow_ran);
	struct arn_cfg_rbac_filter off = {0};
	assert_true(arn_rbac_filter_eval(&f, &off, &in, &r));
	assert_false(r.ran);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_permissions),
	    cmocka_unit_test(test_headers),
	    cmocka_unit_test(test_principals),
	    cmocka_unit_test(test_and_or_not),
	    cmocka_unit_test(test_ipv6_ranges),
	    cmocka_unit_test(test_actions_and_effective_policy),
	    cmocka_unit_test(test_bucket_starts_full_and_fills_discretely),
	    cmocka_unit_test(test_bucket_init_refusals),
	    cmocka_unit_test(test_bucket_worker_behind),
	    cmocka_unit_test(test_bucket_shared),
	    cmocka_unit_test(test_rl_descriptors),
	    cmocka_unit_test(test_connection_limit),
	    cmocka_unit_test(test_hlrl_default_bucket),
	    cmocka_unit_test(test_hlrl_per_route_and_descriptors),
	    cmocka_unit_test(test_hlrl_per_connection),
	    cmocka_unit_test(test_hlrl_descriptor_too_long_takes_the_default_bucket),
	    cmocka_unit_test(test_hlrl_header_value_match_on_long_joined_header),
	    cmocka_unit_test(test_tcp_proxy_cluster),
	    cmocka_unit_test(test_rbac_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
