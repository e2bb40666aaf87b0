/*
 * Matching: regexes, the HAMT, virtual hosts and routes, filter chains.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_regex.h"
#include "config_int.h"
#include "hamt.h"
#include "tc.h"

static bool full(const char *p, const char *s)
{
	struct arn_regex *r = tc_re(p);
	bool m = arn_regex_full_match(r, s, strlen(s));
	arn_regex_free(r);
	return m;
}

static void refused(const char *p, const char *want)
{
	char err[256];
	struct arn_regex *r = arn_regex_compile(p, strlen(p), err, sizeof(err));
	if (r || !strstr(err, want))
		fail_msg("'%s': wanted refusal '%s', got '%s'", p, want, r ? "(compiled)" : err);
}

static void test_regex_syntax(void **state)
{
	(void)state;
	assert_true(full("/api/v[0-9]+/.*", "/api/v12/users"));
	assert_false(full("/api/v[0-9]+/.*", "/api/vx/users"));
	assert_true(full("a|b|c", "b"));
	assert_false(full("a|b|c", "ab"));
	assert_true(full("(ab)*c", "ababc"));
	assert_true(full("x{2,3}", "xxx"));
	assert_false(full("x{2,3}", "xxxx"));
	assert_true(full("x{2,}", "xxxxxx"));
	assert_true(full("\\d+\\.\\d+", "3.14"));
	assert_true(full("[^/]+", "segment"));
	assert_false(full("[^/]+", "a/b"));
	assert_true(full("(?i)hello", "HeLLo"));
	assert_true(full("(?i:ab)c", "ABc"));
	assert_false(full("(?i:ab)c", "ABC"));
	assert_true(full("[[:alpha:]]+[[:digit:]]", "abc1"));
	assert_true(full("a.b", "a\xc3\xa9"
				"b")); /* . is one UTF-8 code point */
	assert_false(full("a.b", "a\nb"));
	assert_true(full("(?s)a.b", "a\nb"));
	assert_true(full("^abc$", "abc"));
	assert_true(full("\\bword\\b.*", "word up"));
	assert_true(full("(?P<n>a+)b", "aab"));
	assert_true(full("a{,2}", "a{,2}")); /* not a repetition: literal, as RE2 */
	assert_true(full("", ""));
	refused("(?=x)", "look-ahead is not supported");
	refused("(?<=x)", "look-behind is not supported");
	refused("\\1", "back-references");
	refused("\\pL", "Unicode classes");
	refused("(?m)^a", "flag (?m) is not supported");
	refused("a**", "nested repetition");
	refused("[z-a]", "bad character range");
	refused("(a", "missing )");
	refused("a)", "unmatched )");
	refused("[\xc3\xa9]", "non-ASCII characters inside [...]");
	refused("a{1001}", "bad repetition count");
	refused("(a{1000}){1000}", "regex too large");
}

static void test_regex_search_and_replace(void **state)
{
	(void)state;
	struct arn_regex *r = tc_re("^/service/([^/]+)(/.*)$");
	char out[128];
	assert_int_equal(
	    arn_regex_replace(r, "/service/foo/v1/api", 19, "\\2/instance/\\1", out, sizeof(out)),
	    20);
	assert_string_equal(out, "/v1/api/instance/foo");
	arn_regex_free(r);
	r = tc_re("one");
	assert_int_equal(arn_regex_replace(r, "one two one", 11, "1", out, sizeof(out)), 7);
	assert_string_equal(out, "1 two 1");
	assert_int_equal(arn_regex_replace(r, "one two one", 11, "1", out, 4), -1);
	arn_regex_free(r);
	r = tc_re("a(b*)c");
	long caps[4];
	assert_true(arn_regex_search(r, "xxabbbcyy", 9, 0, caps, 2));
	assert_int_equal(caps[0], 2);
	assert_int_equal(caps[1], 7);
	assert_int_equal(caps[2], 3);
	assert_int_equal(caps[3], 6);
	arn_regex_free(r);
	/* leftmost-first and lazy repetition, as RE2 */
	r = tc_re("a+?");
	assert_true(arn_regex_search(r, "aaa", 3, 0, caps, 1));
	assert_int_equal(caps[1], 1);
	arn_regex_free(r);
}

/* ---- HAMT ----------------------------------------------------------------- */

struct tobj {
	struct arn_cfg_obj o;
	char name[16];
	int freed;
};

static int live_objs;

static void tunref(struct arn_cfg_obj *o)
{
	if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		live_objs--;
		free(o);
	}
}

static struct arn_cfg_obj *tnew(int i, bool collide)
{
	struct tobj *t = calloc(1, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "k%d", i);
	t->o.refs = 1;
	t->o.name = t->name;
	t->o.name_len = strlen(t->name);
	/* collide: every name in a handful of full-hash buckets */
	t->o.hash = collide ? (uint64_t)(i % 3) : arn_cfg_hash(t->name, t->o.name_len);
	live_objs++;
	return &t->o;
}

static void hamt_random(bool collide)
{
	enum { N = 600 };
	struct arn_cfg_obj *ref[N] = {0};
	struct arn_hamt *root = NULL;
	unsigned seed = 7;
	for (int step = 0; step < 6000; step++) {
		int i = (int)(rand_r(&seed) % N);
		struct arn_hamt *snapshot = root;
		arn_hamt_ref(snapshot); /* a "published generation" */
		struct arn_cfg_obj *before = ref[i];
		if (rand_r(&seed) % 3) {
			struct arn_cfg_obj *o = tnew(i, collide);
			assert_int_equal(arn_hamt_set(&root, o, tunref), 0);
			tunref(o);
			ref[i] = o;
		} else {
			int rc = arn_hamt_del(&root, ref[i] ? ref[i]->name : "none",
					      ref[i] ? ref[i]->name_len : 4,
					      ref[i] ? ref[i]->hash : 1, tunref);
			assert_int_equal(rc, ref[i] ? 0 : -ENOENT);
			ref[i] = NULL;
		}
		/* the snapshot still says what it said */
		if (before)
			assert_ptr_equal(
			    arn_hamt_get(snapshot, before->name, before->name_len, before->hash),
			    before);
		arn_hamt_unref(snapshot, tunref);
		if (step % 500 == 0) {
			for (int k = 0; k < N; k++) {
				char nm[16];
				snprintf(nm, sizeof(nm), "k%d", k);
				uint64_t h =
				    collide ? (uint64_t)(k % 3) : arn_cfg_hash(nm, strlen(nm));
				assert_ptr_equal(arn_hamt_get(root, nm, strlen(nm), h), ref[k]);
			}
		}
	}
	arn_hamt_unref(root, tunref);
	assert_int_equal(live_objs, 0);
}

static void test_hamt_persistent_random(void **state)
{
	(void)state;
	hamt_random(false);
	hamt_random(true); /* full 64-bit hash collisions */
}

/* What arn_hamt_diff reported, by object index (k<i>). */
struct dseen {
	struct arn_cfg_obj *was[600], *now[600];
	int times[600];
};

static void dnote(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now)
{
	struct dseen *d = ctx;
	const struct arn_cfg_obj *o = was ? was : now;
	int i = atoi(o->name + 1);
	d->was[i] = was;
	d->now[i] = now;
	d->times[i]++;
}

/* The diff of two versions of a trie is exactly the names whose objects
 * differ, once each, whatever the edits between them (sets, replacements,
 * deletions, full-hash collisions). */
static void hamt_diff_random(bool collide)
{
	enum { N = 600 };
	struct arn_cfg_obj *ref[N] = {0}, *old[N];
	struct arn_hamt *root = NULL;
	unsigned seed = 11;
	for (int round = 0; round < 300; round++) {
		struct arn_hamt *snapshot = root;
		arn_hamt_ref(snapshot);
		memcpy(old, ref, sizeof(old));
		int edits = round < 10 ? 200 : (int)(rand_r(&seed) % 12);
		for (int e = 0; e < edits; e++) {
			int i = (int)(rand_r(&seed) % N);
			if (rand_r(&seed) % 4) {
				struct arn_cfg_obj *o = tnew(i, collide);
				assert_int_equal(arn_hamt_set(&root, o, tunref), 0);
				tunref(o);
				ref[i] = o;
			} else if (ref[i]) {
				assert_int_equal(arn_hamt_del(&root, ref[i]->name, ref[i]->name_len,
							      ref[i]->hash, tunref),
						 0);
				ref[i] = NULL;
			}
		}
		struct dseen *d = calloc(1, sizeof(*d));
		assert_non_null(d);
		arn_hamt_diff(snapshot, root, dnote, d);
		for (int k = 0; k < N; k++) {
			if (old[k] == ref[k]) {
				assert_int_equal(d->times[k], 0);
				continue;
			}
			assert_int_equal(d->times[k], 1);
			assert_ptr_equal(d->was[k], old[k]);
			assert_ptr_equal(d->now[k], ref[k]);
		}
		free(d);
		arn_hamt_unref(snapshot, tunref);
	}
	arn_hamt_unref(root, tunref);
	assert_int_equal(live_objs, 0);
}

static void count_diff(void *ctx, struct arn_cfg_obj *was, struct arn_cfg_obj *now)
{
	(void)was;
	(void)now;
	(*(size_t *)ctx)++;
}

/* Issue 17: one changed name among 10,000 reads a few nodes (the paths to
 * it), not the 10,000 objects: the other subtries are the same pointers. */
static void test_hamt_diff(void **state)
{
	(void)state;
	hamt_diff_random(false);
	hamt_diff_random(true); /* full 64-bit hash collisions */
	enum { N = 10000 };
	struct arn_hamt *root = NULL;
	for (int i = 0; i < N; i++) {
		struct arn_cfg_obj *o = tnew(i, false);
		assert_int_equal(arn_hamt_set(&root, o, tunref), 0);
		tunref(o);
	}
	size_t n = 0;
	assert_int_equal(arn_hamt_diff(root, root, count_diff, &n), 0);
	assert_int_equal(n, 0);
	struct arn_hamt *prev = root;
	arn_hamt_ref(prev);
	struct arn_cfg_obj *o = tnew(5000, false);
	assert_int_equal(arn_hamt_set(&root, o, tunref), 0);
	tunref(o);
	size_t visited = arn_hamt_diff(prev, root, count_diff, &n);
	assert_int_equal(n, 1);
	assert_in_range(visited, 1, 8); /* two paths of 3 or 4 nodes for 10,000 */
	/* and against the empty trie: everything */
	n = 0;
	arn_hamt_diff(NULL, root, count_diff, &n);
	assert_int_equal(n, N);
	arn_hamt_unref(prev, tunref);
	arn_hamt_unref(root, tunref);
	assert_int_equal(live_objs, 0);
}

/* ---- routes ------------------------------------------------------------------ */

static struct arn_cfg_request rq(const char *host, const char *path)
{
	struct arn_cfg_request r = {.method = "GET",
				    .method_len = 3,
				    .authority = host,
				    .authority_len = strlen(host),
				    .path = path,
				    .path_len = strlen(path),
				    .listener_port = 80};
	return r;
}

static const char *vhost_of(const char *table, const char *host)
{
	struct arn_cfg_request r = rq(host, "/");
	struct arn_cfg_route_match m;
	int rc = arn_cfg_route_match(route_table(table), &r, &m);
	return rc == -ENOENT ? "(none)" : m.vhost->name;
}

/* Envoy's domain order: exact, longest *.suffix, longest prefix.*, then *. */
static void test_vhost_domain_order(void **state)
{
	(void)state;
	tc_ok(R, "{\"name\":\"d\",\"virtual_hosts\":["
		 "{\"name\":\"exact\",\"domains\":[\"api.example.com\",\"api.example.com:8080\"]},"
		 "{\"name\":\"suf\",\"domains\":[\"*.example.com\"]},"
		 "{\"name\":\"longsuf\",\"domains\":[\"*.api.example.com\"]},"
		 "{\"name\":\"pre\",\"domains\":[\"api.*\"]},"
		 "{\"name\":\"longpre\",\"domains\":[\"api.example.*\"]},"
		 "{\"name\":\"any\",\"domains\":[\"*\"]}]}");
	assert_string_equal(vhost_of("d", "api.example.com"), "exact");
	assert_string_equal(vhost_of("d", "API.Example.COM"), "exact");
	assert_string_equal(vhost_of("d", "www.example.com"), "suf");
	assert_string_equal(vhost_of("d", "v1.api.example.com"), "longsuf");
	assert_string_equal(vhost_of("d", "api.example.org"), "longpre");
	assert_string_equal(vhost_of("d", "api.other.org"), "pre");
	assert_string_equal(vhost_of("d", "example.com"), "any"); /* *.x needs one character */
	/* ports: matched as written unless ignore_port_in_host_matching */
	assert_string_equal(vhost_of("d", "api.example.com:8080"), "exact");
	assert_string_equal(vhost_of("d", "www.example.com:80"), "any");
	tc_ok(R, "{\"name\":\"p\",\"ignore_port_in_host_matching\":true,\"virtual_hosts\":["
		 "{\"name\":\"exact\",\"domains\":[\"a.com\"]}]}");
	assert_string_equal(vhost_of("p", "a.com:8443"), "exact");
	assert_string_equal(vhost_of("p", "b.com"), "(none)");
	uint32_t port;
	assert_int_equal(arn_cfg_host_without_port("[::1]:80", 8, &port), 5);
	assert_int_equal(port, 80);
	assert_int_equal(arn_cfg_host_without_port("::1", 3, &port), 3);
	assert_int_equal(arn_cfg_host_without_port("a.com", 5, &port), 5);
	/* no exact domain: the table has no exact slots (a request's Host is
	 * not hashed), and the wildcards still decide */
	tc_ok(R, "{\"name\":\"w\",\"virtual_hosts\":["
		 "{\"name\":\"suf\",\"domains\":[\"*.example.com\"]},"
		 "{\"name\":\"pre\",\"domains\":[\"api.*\"]},"
		 "{\"name\":\"any\",\"domains\":[\"*\"]}]}");
	assert_int_equal(route_table("w")->n_exact_slots, 0);
	assert_string_equal(vhost_of("w", "www.example.com"), "suf");
	assert_string_equal(vhost_of("w", "api.other.org"), "pre");
	assert_string_equal(vhost_of("w", "198.18.0.2"), "any");
	assert_true(route_table("d")->n_exact_slots > 0);
}

/* The path ends at its first '?' or '#' (found 8 bytes, or two 4-byte
 * words, at a time): exact routes for every prefix of one path, and that
 * path with '?' or '#' at every position of every length to 30 picks the
 * route of the bytes before it (exact-size heap copies for ASan). */
static void test_route_path_end(void **state)
{
	(void)state;
	static const char path[] = "/abcdefghijklmnopqrstuvwxyz0123";
	struct arn_sb sb = ARN_SB_INIT;
	arn_sb_puts(&sb, "{\"name\":\"pe\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],"
			 "\"routes\":[");
	for (size_t k = 1; k <= 30; k++)
		arn_sb_printf(&sb,
			      "%s{\"name\":\"r%zu\",\"match\":{\"path\":\"%.*s\"},"
			      "\"route\":{\"cluster\":\"c\"}}",
			      k > 1 ? "," : "", k, (int)k, path);
	arn_sb_puts(&sb, "]}]}");
	tc_ok(R, sb.buf);
	arn_sb_free(&sb);
	const struct arn_cfg_route_table *rt = route_table("pe");
	for (size_t n = 1; n <= 30; n++)
		for (size_t k = 1; k <= n; k++)
			for (int c = 0; c < 3; c++) {
				if (k == n && c > 0)
					continue;
				char *p = malloc(n);
				assert_non_null(p);
				memcpy(p, path, n);
				if (k < n)
					p[k] = "?#?"[c];
				if (c == 2 && k + 1 < n)
					p[k + 1] = '#'; /* a fragment right after */
				struct arn_cfg_request r = rq("h", "");
				r.path = p;
				r.path_len = n;
				struct arn_cfg_route_match m;
				assert_int_equal(arn_cfg_route_match(rt, &r, &m), 0);
				char want[8];
				snprintf(want, sizeof(want), "r%zu", k);
				assert_string_equal(m.route->name, want);
				free(p);
			}
}

static const char *route_of(struct arn_cfg_request *r)
{
	struct arn_cfg_route_match m;
	int rc = arn_cfg_route_match(route_table("m"), r, &m);
	if (rc)
		return "(none)";
	return m.route->name;
}

struct lazy_hdrs {
	const struct arn_cfg_header *h;
	size_t n;
	int calls;
};

static const struct arn_cfg_header *lazy_hdrs_get(void *ctx, size_t *n)
{
	struct lazy_hdrs *l = ctx;
	l->calls++;
	*n = l->n;
	return l->h;
}

static void test_route_matching(void **state)
{
	(void)state;
	tc_ok(R,
	      "{\"name\":\"m\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	      "{\"name\":\"exact\",\"match\":{\"path\":\"/exact\"},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"ci\",\"match\":{\"prefix\":\"/CI/"
	      "\",\"case_sensitive\":false},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"sep\",\"match\":{\"path_separated_prefix\":\"/"
	      "sep\"},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"re\",\"match\":{\"safe_regex\":{\"regex\":\"/re/"
	      "[0-9]+\"}},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"hdr\",\"match\":{\"prefix\":\"/h\",\"headers\":["
	      "{\"name\":\"x-exact\",\"string_match\":{\"exact\":\"yes\"}},"
	      "{\"name\":\"x-pre\",\"prefix_match\":\"ab\"},"
	      "{\"name\":\"x-suf\",\"string_match\":{\"suffix\":\"yz\"}},"
	      "{\"name\":\"x-con\",\"string_match\":{\"contains\":\"mid\",\"ignore_case\":true}},"
	      "{\"name\":\"x-re\",\"safe_regex_match\":{\"regex\":\"[a-z]+\"}},"
	      "{\"name\":\"x-present\",\"present_match\":true},"
	      "{\"name\":\"x-absent\",\"present_match\":false},"
	      "{\"name\":\"x-range\",\"range_match\":{\"start\":10,\"end\":20}},"
	      "{\"name\":\"x-not\",\"string_match\":{\"exact\":\"bad\"},\"invert_match\":true},"
	      "{\"name\":\":method\",\"string_match\":{\"exact\":\"GET\"}}"
	      "]},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"empty\",\"match\":{\"prefix\":\"/empty\",\"headers\":[{\"name\":\"x-e\","
	      "\"string_match\":{\"exact\":\"\"},\"treat_missing_header_as_empty\":true}]},"
	      "\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"q\",\"match\":{\"prefix\":\"/q\",\"query_parameters\":["
	      "{\"name\":\"a\",\"string_match\":{\"exact\":\"1\"}},{\"name\":\"b\",\"present_"
	      "match\":true}]},"
	      "\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"grpc\",\"match\":{\"prefix\":\"/"
	      "g\",\"grpc\":{}},\"route\":{\"cluster\":\"c\"}},"
	      "{\"name\":\"last\",\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"c\"}}]}]}");
	struct arn_cfg_request r = rq("h", "/exact");
	assert_string_equal(route_of(&r), "exact");
	r = rq("h", "/exact?x=1");
	assert_string_equal(route_of(&r), "exact");
	r = rq("h", "/exact/more");
	assert_string_equal(route_of(&r), "last");
	r = rq("h", "/ci/x");
	assert_string_equal(route_of(&r), "ci");
	r = rq("h", "/sep");
	assert_string_equal(route_of(&r), "sep");
	r = rq("h", "/sep/x");
	assert_string_equal(route_of(&r), "sep");
	r = rq("h", "/separate");
	assert_string_equal(route_of(&r), "last");
	r = rq("h", "/re/123");
	assert_string_equal(route_of(&r), "re");
	r = rq("h", "/re/12a");
	assert_string_equal(route_of(&r), "last");
	struct arn_cfg_header hs[] = {
	    {"X-Exact", 7, "yes", 3}, {"x-pre", 5, "abc", 3},  {"x-suf", 5, "xyz", 3},
	    {"x-con", 5, "aMIDb", 5}, {"x-re", 4, "abc", 3},   {"x-present", 9, "", 0},
	    {"x-range", 7, "15", 2},  {"x-not", 5, "good", 4},
	};
	r = rq("h", "/h");
	r.headers = hs;
	r.n_headers = 8;
	assert_string_equal(route_of(&r), "hdr");
	struct lazy_hdrs lz = {.h = hs, .n = 8};
	r.headers = NULL;
	r.n_headers = 0;
	r.headers_fn = lazy_hdrs_get;
	r.headers_ctx = &lz;
	assert_string_equal(route_of(&r), "hdr");
	assert_true(lz.calls > 0);
	r.headers_fn = NULL;
	r.headers = hs;
	r.n_headers = 8;
	hs[6].value = "20";
	assert_string_equal(route_of(&r), "last"); /* range end is exclusive */
	hs[6].value = "15";
	hs[7].value = "bad";
	hs[7].value_len = 3;
	assert_string_equal(route_of(&r), "last"); /* inverted */
	hs[7].value = "good";
	hs[7].value_len = 4;
	r.n_headers = 7; /* x-not missing: a missing header never matches, inverted or not */
	assert_string_equal(route_of(&r), "last");
	r.n_headers = 8;
	r.method = "POST";
	r.method_len = 4;
	assert_string_equal(route_of(&r), "last");
	r = rq("h", "/empty");
	assert_string_equal(route_of(&r), "empty");
	struct arn_cfg_header xe = {"x-e", 3, "v", 1};
	r.headers = &xe;
	r.n_headers = 1;
	assert_string_equal(route_of(&r), "last");
	r = rq("h", "/q?b&a=1");
	assert_string_equal(route_of(&r), "q");
	r = rq("h", "/q?a=2&b=1");
	assert_string_equal(route_of(&r), "last");
	r = rq("h", "/g");
	assert_string_equal(route_of(&r), "last");
	struct arn_cfg_header ct = {"content-type", 12, "application/grpc+proto", 22};
	r.headers = &ct;
	r.n_headers = 1;
	assert_string_equal(route_of(&r), "grpc");
	tc_ok(R, "{\"name\":\"nohost\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"a\"],"
		 "\"routes\":["
		 "{\"match\":{\"prefix\":\"/x\"},\"route\":{\"cluster\":\"c\"}}]}]}");
	struct arn_cfg_route_match m;
	r = rq("a", "/y");
	assert_int_equal(arn_cfg_route_match(route_table("nohost"), &r, &m), -ESRCH);
	r = rq("b", "/x");
	assert_int_equal(arn_cfg_route_match(route_table("nohost"), &r, &m), -ENOENT);
}

static void test_route_actions(void **state)
{
	(void)state;
	struct arn_cfg_route_match m;
	tc_ok(R,
	      "{\"name\":\"a\",\"virtual_hosts\":[{\"name\":\"v\",\"domains\":[\"*\"],\"routes\":["
	      "{\"match\":{\"prefix\":\"/w\"},\"route\":{\"weighted_clusters\":{\"clusters\":["
	      "{\"name\":\"blue\",\"weight\":90},{\"name\":\"green\",\"weight\":10}]}}},"
	      "{\"match\":{\"prefix\":\"/h\"},\"route\":{\"cluster_header\":\"X-Cluster\"}},"
	      "{\"match\":{\"prefix\":\"/old/"
	      "\"},\"route\":{\"cluster\":\"c\",\"prefix_rewrite\":\"/new/\"}},"
	      "{\"match\":{\"prefix\":\"/svc\"},\"route\":{\"cluster\":\"c\",\"regex_rewrite\":{"
	      "\"pattern\":{\"regex\":\"^/svc/([^/]+)/(.*)$\"},\"substitution\":\"/\\\\2/"
	      "\\\\1\"}}}]}]}");
	const struct arn_cfg_vhost *v = &route_table("a")->vhosts[0];
	struct arn_cfg_request r = rq("h", "/w");
	struct arn_cfg_ref out;
	int blue = 0;
	for (uint64_t i = 0; i < 100; i++) {
		r.random = i * 7919;
		assert_int_equal(arn_cfg_route_cluster(&v->routes[0].route, &r, &out), 0);
		blue += out.len == 4 && memcmp(out.name, "blue", 4) == 0;
	}
	assert_int_equal(blue, 90);
	r = rq("h", "/h");
	assert_int_equal(arn_cfg_route_cluster(&v->routes[1].route, &r, &out), -ENOENT);
	struct arn_cfg_header h = {"x-cluster", 9, "picked", 6};
	r.headers = &h;
	r.n_headers = 1;
	assert_int_equal(arn_cfg_route_cluster(&v->routes[1].route, &r, &out), 0);
	assert_int_equal(out.hash, arn_cfg_hash("picked", 6));
	/* headers asked for only when needed (the HTTP layer's lazy copy) */
	struct lazy_hdrs lz = {.h = &h, .n = 1};
	r = rq("h", "/h");
	r.headers_fn = lazy_hdrs_get;
	r.headers_ctx = &lz;
	assert_int_equal(arn_cfg_route_match(route_table("a"), &r, &m), 0);
	assert_int_equal(lz.calls, 0); /* a prefix alone needs no header */
	assert_int_equal(arn_cfg_route_cluster(&v->routes[1].route, &r, &out), 0);
	assert_int_equal(out.hash, arn_cfg_hash("picked", 6));
	assert_int_equal(lz.calls, 1);
	char buf[128];
	assert_int_equal(
	    arn_cfg_route_rewrite_path(&v->routes[2], "/old/x?q=1", 10, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "/new/x?q=1");
	assert_int_equal(
	    arn_cfg_route_rewrite_path(&v->routes[3], "/svc/foo/bar/baz?z", 18, buf, sizeof(buf)),
	    14);
	assert_string_equal(buf, "/bar/baz/foo?z");
	assert_int_equal(arn_cfg_route_rewrite_path(&v->routes[0], "/w", 2, buf, sizeof(buf)), 0);
	assert_int_equal(arn_cfg_route_rewrite_path(&v->routes[2], "/old/x", 6, buf, 4), -ENOSPC);
}

/* Envoy's filter chain selection order, most specific first. */
static void test_filter_chain_selection(void **state)
{
	(void)state;
	tc_ok(L,
	      "{\"name\":\"fc\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_"
	      "value\":443}},"
	      "\"listener_filters\":[{\"name\":\"envoy.filters.listener.tls_inspector\"}],"
	      "\"filter_chains\":["
	      "{\"name\":\"exact\",\"filter_chain_match\":{\"server_names\":[\"api.example.com\"]},"
	      "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]},"
	      "{\"name\":\"wild\",\"filter_chain_match\":{\"server_names\":[\"*.example.com\"]},"
	      "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]},"
	      "{\"name\":\"tls\",\"filter_chain_match\":{\"transport_protocol\":\"tls\"},"
	      "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]},"
	      "{\"name\":\"port\",\"filter_chain_match\":{\"destination_port\":8443},"
	      "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]},"
	      "{\"name\":\"src\",\"filter_chain_match\":{\"source_prefix_ranges\":[{\"address_"
	      "prefix\":\"10.0.0.0\","
	      "\"prefix_len\":8}],\"transport_protocol\":\"raw_buffer\"},"
	      "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}],"
	      "\"default_filter_chain\":{\"name\":\"default\",\"filters\":[{\"name\":\"envoy."
	      "filters.network.echo\"}]}}");
	const struct arn_cfg_listener *l = listener("fc");
	struct arn_cfg_fc_input in = {.dst_port = 443,
				      .server_name = "api.example.com",
				      .server_name_len = 15,
				      .transport_protocol = "tls"};
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "exact");
	in.server_name = "www.example.com";
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "wild");
	in.server_name = "other.org";
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "tls");
	in.server_name = NULL;
	in.server_name_len = 0;
	in.transport_protocol = NULL;
	in.src_addr = 0x0a010203;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "src");
	in.src_addr = 0xc0a80001;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "default");
	in.dst_port = 8443;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "port");
	/* SNI matching without the tls_inspector is refused */
	tc_refused(L,
		   "{\"name\":\"x\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		   "\"port_value\":443}},"
		   "\"filter_chains\":[{\"filter_chain_match\":{\"server_names\":[\"a\"]},"
		   "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}]}",
		   "needs envoy.filters.listener.tls_inspector");
}

/* The route index is only a prefilter: with it and without it, the same
 * route wins for every request (first match in configuration order). */
static void test_route_index_same_as_linear_scan(void **state)
{
	(void)state;
	static const char *kinds[] = {
	    "{\"match\":{\"prefix\":\"/a\"},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"prefix\":\"/A/"
	    "b\",\"case_sensitive\":false},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"path\":\"/ab\"},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"safe_regex\":{\"regex\":\"/a[b-c]+\"}},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"safe_regex\":{\"regex\":\".*c\"}},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"path_separated_prefix\":\"/b\"},\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"prefix\":\"/b/"
	    "c\",\"headers\":[{\"name\":\"x\",\"present_match\":true}]},"
	    "\"route\":{\"cluster\":\"c\"}}",
	    "{\"match\":{\"prefix\":\"\"},\"route\":{\"cluster\":\"c\"}}",
	};
	char *j = malloc(65536);
	unsigned seed = 3;
	size_t o = (size_t)snprintf(j, 65536,
				    "{\"name\":\"ix\",\"virtual_hosts\":[{\"name\":\"v\","
				    "\"domains\":[\"*\"],\"routes\":[");
	for (int i = 0; i < 60; i++)
		o += (size_t)snprintf(j + o, 65536 - o, "%s%s", i ? "," : "",
				      kinds[rand_r(&seed) % (i < 59 ? 7 : 8)]);
	snprintf(j + o, 65536 - o, "]}]}");
	tc_ok(R, j);
	free(j);
	struct arn_cfg_vhost *v = (struct arn_cfg_vhost *)&route_table("ix")->vhosts[0];
	assert_non_null(v->index);
	const struct arn_cfg_route_index *ix = v->index;
	static const char *paths[] = {"/a", "/ab", "/abc", "/a/b",    "/A/B/c",
				      "/b", "/b/", "/b/c", "/bc",     "/ac",
				      "/",  "",	   "/x",   "/abcc?q", "/B/c"};
	struct arn_cfg_header h = {"x", 1, "1", 1};
	for (size_t k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
		for (int hdr = 0; hdr < 2; hdr++) {
			struct arn_cfg_request r = rq("h", paths[k]);
			r.headers = hdr ? &h : NULL;
			r.n_headers = (size_t)hdr;
			struct arn_cfg_route_match m1, m2;
			v->index = ix;
			int rc1 = arn_cfg_route_match(route_table("ix"), &r, &m1);
			v->index = NULL;
			int rc2 = arn_cfg_route_match(route_table("ix"), &r, &m2);
			v->index = ix;
			assert_int_equal(rc1, rc2);
			if (rc1 == 0)
				assert_ptr_equal(m1.route, m2.route);
		}
	}
}

#define ECHO_F "\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]"

/*
 * Destination IP (prefix_ranges) after destination port: the longest
 * prefix wins, a chain without prefix_ranges is as specific as one with
 * 0.0.0.0/0 (Envoy stores both as the /0 entry of its trie), and source
 * ports come last. A chain for the connection's port wins before any
 * prefix is looked at.
 */
static void test_filter_chain_destination_ip_and_source_port(void **state)
{
	(void)state;
	tc_ok(L,
	      "{\"name\":\"fd\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	      "\"port_value\":7000}},\"filter_chains\":["
	      "{\"name\":\"d8\",\"filter_chain_match\":{\"prefix_ranges\":[{\"address_prefix\":"
	      "\"10.0.0.0\",\"prefix_len\":8}]}," ECHO_F "},"
	      "{\"name\":\"d24\",\"filter_chain_match\":{\"prefix_ranges\":[{\"address_prefix\":"
	      "\"10.9.9.0\",\"prefix_len\":24},{\"address_prefix\":\"10.1.2.0\",\"prefix_len\":"
	      "24}]}," ECHO_F "},"
	      "{\"name\":\"any0\",\"filter_chain_match\":{\"prefix_ranges\":[{\"address_prefix\":"
	      "\"0.0.0.0\",\"prefix_len\":0}],\"source_ports\":[5000]}," ECHO_F "},"
	      "{\"name\":\"none\"," ECHO_F "},"
	      "{\"name\":\"p8000\",\"filter_chain_match\":{\"destination_port\":8000}," ECHO_F
	      "}]}");
	const struct arn_cfg_listener *l = listener("fd");
	struct arn_cfg_fc_input in = {.dst_addr = 0x0a010203, .dst_port = 7000, .src_port = 6000};
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "d24");
	in.dst_addr = 0x0a090909;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "d24");
	in.dst_addr = 0x0a070707;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "d8");
	in.dst_addr = 0xc6120002;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "none");
	in.src_port = 5000;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "any0");
	/* the port first: p8000 has no prefix, d24 would match the address */
	in.dst_port = 8000;
	in.dst_addr = 0x0a010203;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "p8000");
}
/*
 * The rest of Envoy's order: application protocols in the client's order,
 * direct source IP, then source type (SAME_IP_OR_LOOPBACK / EXTERNAL before
 * ANY), then source IP; and a step never falls back to chains an earlier
 * step dropped.
 */
static void test_filter_chain_selection_order(void **state)
{
	(void)state;
	tc_ok(L,
	      "{\"name\":\"fc\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
	      "\"port_value\":443}},"
	      "\"listener_filters\":[{\"name\":\"envoy.filters.listener.tls_inspector\"}],"
	      "\"filter_chains\":["
	      "{\"name\":\"h2\",\"filter_chain_match\":{\"transport_protocol\":\"tls\","
	      "\"application_protocols\":[\"h2\"]}," ECHO_F "},"
	      "{\"name\":\"h1\",\"filter_chain_match\":{\"transport_protocol\":\"tls\","
	      "\"application_protocols\":[\"http/1.1\"]}," ECHO_F "},"
	      "{\"name\":\"direct\",\"filter_chain_match\":{\"direct_source_prefix_ranges\":["
	      "{\"address_prefix\":\"198.18.0.0\",\"prefix_len\":15}]}," ECHO_F "},"
	      "{\"name\":\"local\",\"filter_chain_match\":{\"source_type\":"
	      "\"SAME_IP_OR_LOOPBACK\"}," ECHO_F "},"
	      "{\"name\":\"external\",\"filter_chain_match\":{\"source_type\":\"EXTERNAL\"}," ECHO_F
	      "},"
	      "{\"name\":\"ext24\",\"filter_chain_match\":{\"source_type\":\"EXTERNAL\","
	      "\"source_prefix_ranges\":[{\"address_prefix\":\"203.0.113.0\",\"prefix_len\":"
	      "24}]}," ECHO_F "},"
	      "{\"name\":\"p9443\",\"filter_chain_match\":{\"destination_port\":9443,"
	      "\"transport_protocol\":\"tls\"}," ECHO_F "}],"
	      "\"default_filter_chain\":{\"name\":\"default\"," ECHO_F "}}");
	const struct arn_cfg_listener *l = listener("fc");
	/* the client's first ALPN name that some chain lists wins */
	const char *alpn[] = {"http/1.1", "h2"};
	struct arn_cfg_fc_input in = {.dst_addr = 0x0a000001,
				      .dst_port = 443,
				      .src_addr = 0xcb007109,
				      .transport_protocol = "tls",
				      .alpn = alpn,
				      .n_alpn = 2};
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "h1");
	alpn[0] = "h2", alpn[1] = "http/1.1";
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "h2");
	alpn[0] = "h3", alpn[1] = "http/1.1";
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "h1");
	/* raw TCP: direct source IP before source type */
	in.transport_protocol = NULL;
	in.n_alpn = 0;
	in.src_addr = 0xc6120005; /* 198.18.0.5 */
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "direct");
	/* source type: loopback, or the local address itself */
	in.src_addr = 0x7f000001;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "local");
	in.src_addr = in.dst_addr;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "local");
	/* external, then the longest source prefix among the external ones */
	in.src_addr = 0xc0000201; /* 192.0.2.1 */
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "external");
	in.src_addr = 0xcb007109; /* 203.0.113.9 */
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "ext24");
	/* port 9443 keeps only p9443, which wants TLS: the default chain,
	 * not a port-less chain that would have matched */
	in.dst_port = 9443;
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "default");
	in.transport_protocol = "tls";
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "p9443");
}

/*
 * IPv6 prefix ranges (an operator's dual-stack listener): Envoy's
 * FilterChainManagerImpl looks an IPv4 address up in an IPv4 LcTrie, so an
 * IPv6 range never matches an IPv4 connection, the IPv4-mapped
 * ::ffff:0:0/96 ones included (CidrRange::isInRange compares versions
 * first). A chain whose ranges are all IPv6 matches no IPv4 connection:
 * it does not become a chain without ranges (Envoy files only the empty
 * list as the catch-all), in prefix_ranges, direct_source_prefix_ranges
 * and source_prefix_ranges alike; a mixed list matches by its IPv4 part.
 */
static void test_filter_chain_ipv6_ranges(void **state)
{
	(void)state;
	tc_ok(L, "{\"name\":\"f6\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":7000}},\"filter_chains\":["
		 "{\"name\":\"mapped_dst\",\"filter_chain_match\":{\"prefix_ranges\":[{"
		 "\"address_prefix\":\"::ffff:10.0.0.0\",\"prefix_len\":104}]}," ECHO_F "},"
		 "{\"name\":\"v6_direct\",\"filter_chain_match\":{\"direct_source_prefix_ranges\":"
		 "[{\"address_prefix\":\"::\",\"prefix_len\":0}]}," ECHO_F "},"
		 "{\"name\":\"v6_src\",\"filter_chain_match\":{\"source_prefix_ranges\":["
		 "{\"address_prefix\":\"2001:db8::\",\"prefix_len\":32},{\"address_prefix\":"
		 "\"::ffff:0:0\",\"prefix_len\":96}]}," ECHO_F "},"
		 "{\"name\":\"mixed\",\"filter_chain_match\":{\"source_prefix_ranges\":["
		 "{\"address_prefix\":\"::\",\"prefix_len\":0},{\"address_prefix\":"
		 "\"203.0.113.0\",\"prefix_len\":24}]}," ECHO_F "},"
		 "{\"name\":\"none\"," ECHO_F "}]}");
	const struct arn_cfg_listener *l = listener("f6");
	struct arn_cfg_fc_input in = {.dst_addr = 0x0a000001, .dst_port = 7000, .src_port = 6000};
	in.src_addr = 0xc0000201; /* 192.0.2.1: no IPv4 range names it */
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "none");
	in.src_addr = 0xcb007109; /* 203.0.113.9: the IPv4 half of the mixed list */
	assert_string_equal(arn_cfg_filter_chain_select(l, &in)->name, "mixed");
	/* with only the IPv6 chains left, an IPv4 client has no chain */
	tc_ok(L, "{\"name\":\"f6\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":7000}},\"filter_chains\":["
		 "{\"name\":\"v6_src\",\"filter_chain_match\":{\"source_prefix_ranges\":["
		 "{\"address_prefix\":\"::\",\"prefix_len\":0}]}," ECHO_F "}]}");
	l = listener("f6");
	assert_null(arn_cfg_filter_chain_select(l, &in));
}

/* Issue 22: a listener update that touches only filter chains keeps the
 * connections of the chains whose FilterChain bytes are unchanged (Envoy's
 * in-place filter chain update); any other change replaces the listener. */
#define FC_LSN(limit, b_extra)                                                                     \
	"{\"name\":\"ip\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\",\"port_"        \
	"value\":80}}," limit "\"filter_chains\":["                                                \
	"{\"name\":\"a\",\"filter_chain_match\":{\"destination_port\":80},"                        \
	"\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]},"                                \
	"{\"name\":\"b\",\"filter_chain_match\":{\"destination_port\":81}," b_extra                \
	"\"filters\":[{\"name\":\"envoy.filters.network.echo\"}]}],"                               \
	"\"default_filter_chain\":{\"name\":\"d\",\"filters\":[{\"name\":\"envoy."                 \
	"filters.network.echo\"}]}}"

static void test_filter_chain_kept(void **state)
{
	(void)state;
	tc_ok(L, FC_LSN("", ""));
	const struct arn_cfg_listener *l1 = listener("ip");
	arn_cfg_pin(l1);
	assert_int_not_equal(l1->chains[0].hash, l1->chains[1].hash);
	/* the same listener again: every chain is kept */
	tc_ok(L, FC_LSN("", ""));
	const struct arn_cfg_listener *l2 = listener("ip");
	arn_cfg_pin(l2);
	assert_ptr_equal(arn_cfg_filter_chain_kept(l1, &l1->chains[0], l2), &l2->chains[0]);
	assert_ptr_equal(arn_cfg_filter_chain_kept(l1, &l1->chains[1], l2), &l2->chains[1]);
	assert_ptr_equal(arn_cfg_filter_chain_kept(l1, l1->default_chain, l2), l2->default_chain);
	/* chain b changed: only its connections drain */
	tc_ok(L, FC_LSN("", "\"transport_socket_connect_timeout\":\"2s\","));
	const struct arn_cfg_listener *l3 = listener("ip");
	arn_cfg_pin(l3);
	assert_ptr_equal(arn_cfg_filter_chain_kept(l2, &l2->chains[0], l3), &l3->chains[0]);
	assert_null(arn_cfg_filter_chain_kept(l2, &l2->chains[1], l3));
	assert_ptr_equal(arn_cfg_filter_chain_kept(l2, l2->default_chain, l3), l3->default_chain);
	/* a field of the listener itself: a full replacement, every chain drains */
	tc_ok(L, FC_LSN("\"per_connection_buffer_limit_bytes\":65536,",
			"\"transport_socket_connect_timeout\":\"2s\","));
	const struct arn_cfg_listener *l4 = listener("ip");
	assert_null(arn_cfg_filter_chain_kept(l3, &l3->chains[0], l4));
	assert_null(arn_cfg_filter_chain_kept(l3, l3->default_chain, l4));
	arn_cfg_unpin(l1);
	arn_cfg_unpin(l2);
	arn_cfg_unpin(l3);
}

/*
 * range_match reads the client's header value as an int64. Values past
 * int64's range are not numbers and never match; they must not overflow
 * (fuzz_rbac found 19 digits overflowing the accumulator under UBSan).
 * Both ends of the type are reachable.
 */
static void test_range_match_value_bounds(void **state)
{
	(void)state;
	struct arn_cfg_header_match m = {.name = "x", .name_len = 1, .kind = ARN_CFG_HDR_RANGE};
	m.start = INT64_MIN;
	m.end = INT64_MAX;
#define V(s) arn_cfg_header_match_value(&m, true, s, sizeof(s) - 1)
	assert_true(V("0"));
	assert_true(V("-0"));
	assert_true(V("+12"));
	assert_true(V("9223372036854775806"));
	assert_false(V("9223372036854775807")); /* end is exclusive */
	assert_true(V("-9223372036854775808")); /* INT64_MIN itself */
	assert_true(V("000000000000000000000000042"));
	assert_false(V("9223372036854775808"));
	assert_false(V("9999999999999999999"));
	assert_false(V("-9223372036854775809"));
	assert_false(V("99999999999999999999999999"));
	assert_false(V(""));
	assert_false(V("-"));
	assert_false(V("+"));
	assert_false(V("1 "));
	assert_false(V("0x10"));
	m.start = -5;
	m.end = 5;
	assert_true(V("-5"));
	assert_false(V("5"));
	assert_false(V("-6"));
	m.invert = true; /* an unparsable value is a non-match, so inverted it matches */
	assert_true(V("18446744073709551616"));
#undef V
}

const struct CMUnitTest match_tests[] = {
    TC(test_route_index_same_as_linear_scan),
    cmocka_unit_test(test_regex_syntax),
    cmocka_unit_test(test_regex_search_and_replace),
    cmocka_unit_test(test_hamt_persistent_random),
    cmocka_unit_test(test_hamt_diff),
    cmocka_unit_test(test_range_match_value_bounds),
    TC(test_vhost_domain_order),
    TC(test_route_path_end),
    TC(test_route_matching),
    TC(test_route_actions),
    TC(test_filter_chain_selection),
    TC(test_filter_chain_selection_order),
    TC(test_filter_chain_destination_ip_and_source_port),
    TC(test_filter_chain_ipv6_ranges),
    TC(test_filter_chain_kept),
};
const size_t n_match_tests = sizeof(match_tests) / sizeof(match_tests[0]);
