/*
 * MCP versions, the HTTP transports' dispatch, SSE framing, the session
 * table and initialize.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arn_mcp.h"

/* ---- versions ----------------------------------------------------------------- */

static const char *const versions[ARN_MCP_V_COUNT] = {
    [ARN_MCP_V_NONE] = "",
    [ARN_MCP_V_2024_11_05] = "2024-11-05",
    [ARN_MCP_V_2025_03_26] = "2025-03-26",
    [ARN_MCP_V_2025_06_18] = "2025-06-18",
    [ARN_MCP_V_2025_11_25] = "2025-11-25",
};

enum arn_mcp_version arn_mcp_version_parse(const char *s, size_t n)
{
	for (int v = 1; v < ARN_MCP_V_COUNT; v++)
		if (n == 10 && memcmp(versions[v], s, 10) == 0)
			return (enum arn_mcp_version)v;
	return ARN_MCP_V_NONE;
}

const char *arn_mcp_version_name(enum arn_mcp_version v)
{
	return (unsigned)v < ARN_MCP_V_COUNT ? versions[v] : "";
}

bool arn_mcp_version_batches(enum arn_mcp_version v)
{
	return v == ARN_MCP_V_2024_11_05 || v == ARN_MCP_V_2025_03_26;
}

enum arn_mcp_version arn_mcp_negotiate(const char *requested, size_t n)
{
	enum arn_mcp_version v = arn_mcp_version_parse(requested, n);
	return v != ARN_MCP_V_NONE ? v : ARN_MCP_V_LATEST;
}

enum arn_mcp_err arn_mcp_version_header(const char *hdr, size_t n, enum arn_mcp_version negotiated)
{
	if (n == 0)
		return ARN_MCP_E_NONE;
	enum arn_mcp_version v = arn_mcp_version_parse(hdr, n);
	if (v == ARN_MCP_V_NONE)
		return ARN_MCP_E_VERSION_HEADER;
	if (negotiated != ARN_MCP_V_NONE && v != negotiated)
		return ARN_MCP_E_VERSION_MISMATCH;
	return ARN_MCP_E_NONE;
}

/* ---- transports ------------------------------------------------------------------ */

static bool token_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

/*
 * Whether the media range list @p s (an Accept header) or a single media
 * type (Content-Type) names @p type; parameters (";q=", ";charset=") are
 * skipped. With @p wild, "* / *" and "<major>/ *" count.
 */
static bool media_has(const char *s, size_t n, const char *type, bool wild)
{
	size_t tl = strlen(type);
	const char *slash = strchr(type, '/');
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		size_t b = i;
		while (i < n && s[i] != ',' && s[i] != ';' && s[i] != ' ' && s[i] != '\t')
			i++;
		size_t e = i;
		if (e - b == tl && strncasecmp(s + b, type, tl) == 0)
			return true;
		if (wild && e - b == 3 && memcmp(s + b, "*/*", 3) == 0)
			return true;
		if (wild && slash && e - b == (size_t)(slash - type) + 2 &&
		    strncasecmp(s + b, type, (size_t)(slash - type) + 1) == 0 && s[e - 1] == '*')
			return true;
		while (i < n && s[i] != ',')
			i++;
	}
	return false;
}

/* The value of query parameter @p key in @p q (n bytes, after '?'), or NULL. */
static const char *query_param(const char *q, size_t n, const char *key, size_t *len)
{
	size_t kl = strlen(key), i = 0;
	while (i < n) {
		size_t b = i;
		while (i < n && q[i] != '&')
			i++;
		if (i - b > kl && memcmp(q + b, key, kl) == 0 && q[b + kl] == '=') {
			*len = i - b - kl - 1;
			return q + b + kl + 1;
		}
		i++;
	}
	return NULL;
}

static void refuse(struct arn_mcp_route *out, uint16_t status, const char *why)
{
	out->action = ARN_MCP_A_REFUSE;
	out->status = status;
	out->why = why;
	if (status == 405)
		out->allow = "GET, POST, DELETE";
}

void arn_mcp_classify(const struct arn_mcp_http_req *req, const char *mcp_path, size_t mcp_path_len,
		      struct arn_mcp_route *out)
{
	memset(out, 0, sizeof(*out));
	const char *q = memchr(req->path, '?', req->path_len);
	size_t plen = q ? (size_t)(q - req->path) : req->path_len;
	if (plen != mcp_path_len || memcmp(req->path, mcp_path, plen) != 0)
		return; /* ARN_MCP_A_PASS */
	out->session_id = req->session_id;
	out->session_id_len = req->session_id_len;
	const char *m = req->method;
	size_t ml = req->method_len;
	if (token_eq(m, ml, "POST")) {
		if (!req->content_type ||
		    !media_has(req->content_type, req->content_type_len, "application/json", false))
			return refuse(
			    out, 415,
			    "Unsupported Media Type: Content-Type must be application/json");
		size_t sl = 0;
		const char *sid =
		    q ? query_param(q + 1, req->path_len - plen - 1, "sessionId", &sl) : NULL;
		if (sid) {
			out->action = ARN_MCP_A_SSE_POST;
			out->session_id = sid;
			out->session_id_len = sl;
			return;
		}
		if (!req->accept ||
		    !media_has(req->accept, req->accept_len, "application/json", true) ||
		    !media_has(req->accept, req->accept_len, "text/event-stream", true))
			return refuse(
			    out, 406,
			    "Not Acceptable: Client must accept both application/json and "
			    "text/event-stream");
		out->action = ARN_MCP_A_POST;
		return;
	}
	if (token_eq(m, ml, "GET")) {
		if (!req->accept ||
		    !media_has(req->accept, req->accept_len, "text/event-stream", true))
			return refuse(out, 406,
				      "Not Acceptable: Client must accept text/event-stream");
		out->action = req->session_id_len ? ARN_MCP_A_GET_STREAM : ARN_MCP_A_SSE_OPEN;
		return;
	}
	if (token_eq(m, ml, "DELETE")) {
		out->action = ARN_MCP_A_DELETE;
		return;
	}
	refuse(out, 405, "Method Not Allowed");
}

size_t arn_mcp_sse_event(char *out, size_t cap, const char *event, const char *id, const char *data,
			 size_t data_len)
{
	size_t need =
	    (event ? 8 + strlen(event) : 0) + (id ? 5 + strlen(id) : 0) + 6 + data_len + 2;
	if (need > cap)
		return need;
	size_t o = 0;
	if (event)
		o += (size_t)sprintf(out + o, "event: %s\n", event);
	if (id)
		o += (size_t)sprintf(out + o, "id: %s\n", id);
	memcpy(out + o, "data: ", 6);
	o += 6;
	memcpy(out + o, data, data_len);
	o += data_len;
	memcpy(out + o, "\n\n", 2);
	return o + 2;
}

/* ---- sessions ----------------------------------------------------------------------- */

struct arn_mcp_sessions {
	uint32_t worker;
	uint32_t max, max_backends, idle_ms, open;
	uint32_t n_free;
	uint32_t *free;		   /* a stack of free slots */
	struct arn_mcp_session *s; /* max */
	char *bsid;		   /* max * max_backends * (ARN_MCP_BACKEND_SID_MAX + 1) */
	uint8_t *bsid_len;	   /* max * max_backends; 0: none */
	/* told of every session that ends by idling, wherever it is noticed */
	void (*on_expire)(void *arg, struct arn_mcp_session *s);
	void *expire_arg;
};

void arn_mcp_sessions_on_expire(struct arn_mcp_sessions *t,
				void (*on_expire)(void *arg, struct arn_mcp_session *s), void *arg)
{
	t->on_expire = on_expire;
	t->expire_arg = arg;
}

struct arn_mcp_sessions *arn_mcp_sessions_create(uint32_t worker, uint32_t max_sessions,
						 uint32_t max_backends, uint32_t idle_ms)
{
	if (max_sessions == 0 || max_backends == 0 || max_sessions > (1u << 24) ||
	    worker >= ARN_MCP_MAX_WORKERS) {
		errno = EINVAL;
		return NULL;
	}
	struct arn_mcp_sessions *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	/* one more row of backend ids than sessions: the scratch row of
	 * arn_mcp_session_backend_remap */
	size_t nb = ((size_t)max_sessions + 1) * max_backends;
	t->s = calloc(max_sessions, sizeof(*t->s));
	t->free = calloc(max_sessions, sizeof(*t->free));
	t->bsid = calloc(nb, ARN_MCP_BACKEND_SID_MAX + 1);
	t->bsid_len = calloc(nb, 1);
	if (!t->s || !t->free || !t->bsid || !t->bsid_len) {
		arn_mcp_sessions_destroy(t);
		errno = ENOMEM;
		return NULL;
	}
	t->worker = worker;
	t->max = max_sessions;
	t->max_backends = max_backends;
	t->idle_ms = idle_ms;
	/* Slots are handed out lowest first. */
	for (uint32_t i = 0; i < max_sessions; i++) {
		t->free[i] = max_sessions - 1 - i;
		t->s[i].slot = i;
	}
	t->n_free = max_sessions;
	return t;
}

void arn_mcp_sessions_destroy(struct arn_mcp_sessions *t)
{
	if (!t)
		return;
	free(t->s);
	free(t->free);
	free(t->bsid);
	free(t->bsid_len);
	free(t);
}

uint32_t arn_mcp_sessions_count(const struct arn_mcp_sessions *t)
{
	return t->open;
}

static void release(struct arn_mcp_sessions *t, struct arn_mcp_session *s)
{
	s->in_use = false;
	s->user = NULL;
	s->gen++; /* the slot's next id differs */
	memset(s->id, 0, sizeof(s->id));
	memset(t->bsid_len + (size_t)s->slot * t->max_backends, 0, t->max_backends);
	t->free[t->n_free++] = s->slot;
	t->open--;
}

static bool idle(const struct arn_mcp_sessions *t, const struct arn_mcp_session *s, uint64_t now)
{
	(void)t; /* each session its own timeout: tables are per worker, filters per listener */
	/* a session whose server-to-client stream is open is in use, however
	 * quiet its client is */
	return !s->user && s->idle_ms && now >= s->last_ms && now - s->last_ms >= s->idle_ms;
}

uint32_t arn_mcp_sessions_expire(struct arn_mcp_sessions *t, uint64_t now_ms,
				 void (*on_expire)(void *arg, struct arn_mcp_session *s), void *arg)
{
	uint32_t n = 0;
	if (!on_expire) {
		on_expire = t->on_expire;
		arg = t->expire_arg;
	}
	for (uint32_t i = 0; i < t->max; i++) {
		struct arn_mcp_session *s = &t->s[i];
		if (s->in_use && idle(t, s, now_ms)) {
			if (on_expire)
				on_expire(arg, s);
			release(t, s);
			n++;
		}
	}
	return n;
}

enum arn_mcp_err arn_mcp_session_open(struct arn_mcp_sessions *t, enum arn_mcp_version v,
				      enum arn_mcp_transport tr, uint64_t now_ms,
				      const uint8_t rnd[16], struct arn_mcp_session **out,
				      void (*on_expire)(void *arg, struct arn_mcp_session *s),
				      void *arg)
{
	*out = NULL;
	if (t->n_free == 0)
		arn_mcp_sessions_expire(t, now_ms, on_expire, arg);
	if (t->n_free == 0)
		return ARN_MCP_E_SESSIONS_FULL;
	struct arn_mcp_session *s = &t->s[t->free[--t->n_free]];
	s->in_use = true;
	s->initialized = false;
	s->version = (uint8_t)v;
	s->transport = (uint8_t)tr;
	s->last_ms = now_ms;
	s->idle_ms = t->idle_ms;
	s->user = NULL;
	s->n_pending = 0;
	s->relay = false;
	int o = snprintf(s->id, sizeof(s->id), "%02x%06x%08x", t->worker, s->slot, s->gen);
	for (int i = 0; i < 16; i++)
		o += snprintf(s->id + o, sizeof(s->id) - (size_t)o, "%02x", rnd[i]);
	t->open++;
	*out = s;
	return ARN_MCP_E_NONE;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The first 8 hex digits of an id: worker << 24 | slot. */
static int read_head(const char *id, size_t n, uint32_t *head)
{
	if (n != ARN_MCP_SID_LEN)
		return -EINVAL;
	uint32_t v = 0;
	for (int i = 0; i < 8; i++) {
		int h = hexval(id[i]);
		if (h < 0)
			return -EINVAL;
		v = v << 4 | (uint32_t)h;
	}
	*head = v;
	return 0;
}

int arn_mcp_session_owner(const char *id, size_t n)
{
	uint32_t head;
	if (read_head(id, n, &head) < 0)
		return -EINVAL;
	return (int)(head >> 24);
}

enum arn_mcp_err arn_mcp_session_find(struct arn_mcp_sessions *t, const char *id, size_t n,
				      uint64_t now_ms, struct arn_mcp_session **out)
{
	*out = NULL;
	if (n == 0)
		return ARN_MCP_E_SESSION_MISSING;
	uint32_t head;
	if (read_head(id, n, &head) < 0)
		return ARN_MCP_E_SESSION_UNKNOWN;
	if (head >> 24 != t->worker)
		return ARN_MCP_E_SESSION_ELSEWHERE;
	uint32_t slot = head & 0xffffff;
	if (slot >= t->max)
		return ARN_MCP_E_SESSION_UNKNOWN;
	struct arn_mcp_session *s = &t->s[slot];
	if (!s->in_use)
		return ARN_MCP_E_SESSION_UNKNOWN;
	/* Compared whole, without an early exit: the time taken says nothing
	 * about how much of a guessed id was right. */
	unsigned char diff = 0;
	for (size_t i = 0; i < ARN_MCP_SID_LEN; i++)
		diff |= (unsigned char)(s->id[i] ^ id[i]);
	if (diff)
		return ARN_MCP_E_SESSION_UNKNOWN;
	if (idle(t, s, now_ms)) {
		if (t->on_expire)
			t->on_expire(t->expire_arg, s);
		release(t, s);
		return ARN_MCP_E_SESSION_UNKNOWN;
	}
	s->last_ms = now_ms;
	*out = s;
	return ARN_MCP_E_NONE;
}

void arn_mcp_session_close(struct arn_mcp_sessions *t, struct arn_mcp_session *s)
{
	if (s && s->in_use)
		release(t, s);
}

int arn_mcp_session_backend_set(struct arn_mcp_sessions *t, struct arn_mcp_session *s, uint32_t b,
				const char *sid, size_t n)
{
	if (b >= t->max_backends)
		return -ERANGE;
	if (n > ARN_MCP_BACKEND_SID_MAX)
		return -E2BIG;
	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)sid[i] < 0x21 || (unsigned char)sid[i] > 0x7e)
			return -EINVAL;
	size_t k = (size_t)s->slot * t->max_backends + b;
	char *dst = t->bsid + k * (ARN_MCP_BACKEND_SID_MAX + 1);
	memcpy(dst, sid, n);
	dst[n] = '\0';
	t->bsid_len[k] = (uint8_t)n;
	return 0;
}

const char *arn_mcp_session_backend(const struct arn_mcp_sessions *t,
				    const struct arn_mcp_session *s, uint32_t b, size_t *n)
{
	if (b >= t->max_backends)
		return NULL;
	size_t k = (size_t)s->slot * t->max_backends + b;
	if (!t->bsid_len[k])
		return NULL;
	if (n)
		*n = t->bsid_len[k];
	return t->bsid + k * (ARN_MCP_BACKEND_SID_MAX + 1);
}

void arn_mcp_session_backend_forget(struct arn_mcp_sessions *t, struct arn_mcp_session *s,
				    uint32_t b)
{
	uint8_t *lens = t->bsid_len + (size_t)s->slot * t->max_backends;
	if (b == UINT32_MAX)
		memset(lens, 0, t->max_backends);
	else if (b < t->max_backends)
		lens[b] = 0;
}

void arn_mcp_session_backend_remap(struct arn_mcp_sessions *t, struct arn_mcp_session *s,
				   const uint32_t *map, uint32_t n)
{
	const size_t w = ARN_MCP_BACKEND_SID_MAX + 1, nbk = t->max_backends;
	size_t row = (size_t)s->slot * nbk, spare = (size_t)t->max * nbk;
	memcpy(t->bsid + spare * w, t->bsid + row * w, nbk * w);
	memcpy(t->bsid_len + spare, t->bsid_len + row, nbk);
	memset(t->bsid_len + row, 0, nbk);
	for (uint32_t b = 0; b < n && b < nbk; b++) {
		uint32_t to = map[b];
		if (!t->bsid_len[spare + b] || to >= nbk)
			continue;
		memcpy(t->bsid + (row + to) * w, t->bsid + (spare + b) * w, w);
		t->bsid_len[row + to] = t->bsid_len[spare + b];
	}
	for (int i = 0; i < s->n_pending;) {
		uint32_t b = s->pending[i].backend;
		if (b < n && map[b] < nbk) {
			s->pending[i++].backend = map[b];
		} else {
			s->pending[i] = s->pending[--s->n_pending];
		}
	}
}

static uint64_t id_hash(struct json_object *id)
{
	size_t n = 0;
	const char *t = arn_mcp_text(id, &n);
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; t && i < n; i++)
		h = (h ^ (unsigned char)t[i]) * 0x100000001b3ull;
	return h;
}

static int pending_find(const struct arn_mcp_session *s, uint32_t backend, uint64_t h)
{
	for (int i = 0; i < s->n_pending; i++)
		if (s->pending[i].backend == backend && s->pending[i].id_hash == h)
			return i;
	return -1;
}

int arn_mcp_session_pending_add(struct arn_mcp_session *s, uint32_t backend, struct json_object *id,
				uint32_t owner)
{
	uint64_t h = id_hash(id);
	if (pending_find(s, backend, h) >= 0)
		return -EEXIST;
	if (s->n_pending >= ARN_MCP_MAX_PENDING)
		return -ENOSPC;
	s->pending[s->n_pending++] =
	    (struct arn_mcp_pending){.backend = backend, .owner = owner, .id_hash = h};
	return 0;
}

uint32_t arn_mcp_session_pending_drop(struct arn_mcp_session *s, uint32_t owner)
{
	uint32_t n = 0;
	for (int i = 0; i < s->n_pending;) {
		if (s->pending[i].owner == owner) {
			s->pending[i] = s->pending[--s->n_pending];
			n++;
		} else {
			i++;
		}
	}
	return n;
}

int arn_mcp_session_pending_take(struct arn_mcp_session *s, uint32_t backend,
				 struct json_object *id)
{
	int i = pending_find(s, backend, id_hash(id));
	if (i < 0)
		return -ENOENT;
	s->pending[i] = s->pending[--s->n_pending];
	return 0;
}

/* ---- initialize ------------------------------------------------------------------------ */

enum arn_mcp_err arn_mcp_initialize_params(struct json_object *params, enum arn_mcp_version *v)
{
	struct json_object *pv;
	*v = ARN_MCP_V_NONE;
	if (!params || !json_object_object_get_ex(params, "protocolVersion", &pv) ||
	    !json_object_is_type(pv, json_type_string))
		return ARN_MCP_E_INVALID_PARAMS;
	*v = arn_mcp_negotiate(json_object_get_string(pv), (size_t)json_object_get_string_len(pv));
	return ARN_MCP_E_NONE;
}

/* Whether capability @p key of @p caps is offered, and with listChanged. */
static bool cap_get(struct json_object *caps, const char *key, bool *list_changed)
{
	struct json_object *c, *lc;
	if (!caps || !json_object_object_get_ex(caps, key, &c))
		return false;
	if (list_changed && json_object_is_type(c, json_type_object) &&
	    json_object_object_get_ex(c, "listChanged", &lc) &&
	    json_object_is_type(lc, json_type_boolean) && json_object_get_boolean(lc))
		*list_changed = true;
	return true;
}

/* {} or {"listChanged":true} */
static struct json_object *cap_new(bool list_changed)
{
	struct json_object *o = json_object_new_object();
	if (o && list_changed)
		json_object_object_add(o, "listChanged", json_object_new_boolean(1));
	return o;
}

struct json_object *arn_mcp_initialize_result(enum arn_mcp_version v,
					      const struct arn_mcp_backend_init *b, size_t n,
					      const char *server_version)
{
	bool answered = false, any_tools = false;
	bool any_prompts = false, any_resources = false, any_logging = false;
	bool prompts_lc = false, resources_lc = false;
	struct json_object *instr = NULL;
	for (size_t i = 0; i < n; i++) {
		struct json_object *caps = NULL, *x;
		if (!b[i].result)
			continue;
		answered = true;
		if (!json_object_object_get_ex(b[i].result, "capabilities", &caps) ||
		    !json_object_is_type(caps, json_type_object))
			caps = NULL;
		any_tools |= cap_get(caps, "tools", NULL);
		any_prompts |= cap_get(caps, "prompts", &prompts_lc);
		any_resources |= cap_get(caps, "resources", &resources_lc);
		any_logging |= cap_get(caps, "logging", NULL);
		if (json_object_object_get_ex(b[i].result, "instructions", &x) &&
		    json_object_is_type(x, json_type_string) && json_object_get_string_len(x) > 0) {
			/* "[name] text", blank-line separated, so the model can tell
			 * whose advice it is. */
			const char *prev = instr ? json_object_get_string(instr) : "";
			size_t need = strlen(prev) + strlen(b[i].name) +
				      (size_t)json_object_get_string_len(x) + 8;
			char *s = malloc(need);
			if (!s)
				continue;
			snprintf(s, need, "%s%s[%s] %s", prev, *prev ? "\n\n" : "", b[i].name,
				 json_object_get_string(x));
			json_object_put(instr);
			instr = json_object_new_string(s);
			free(s);
		}
	}
	/* before any backend has answered, everything the gateway serves is
	 * offered: a client that sees a capability missing never asks */
	bool tools = !answered || any_tools;
	bool prompts = !answered || any_prompts, resources = !answered || any_resources;

	struct json_object *r = json_object_new_object();
	struct json_object *caps = json_object_new_object();
	struct json_object *info = json_object_new_object();
	if (!r || !caps || !info) {
		json_object_put(r);
		json_object_put(caps);
		json_object_put(info);
		json_object_put(instr);
		return NULL;
	}
	json_object_object_add(r, "protocolVersion",
			       json_object_new_string(arn_mcp_version_name(v)));
	if (tools)
		json_object_object_add(caps, "tools", cap_new(true));
	if (prompts)
		json_object_object_add(caps, "prompts", cap_new(prompts_lc));
	if (resources)
		json_object_object_add(caps, "resources", cap_new(resources_lc));
	if (any_logging)
		json_object_object_add(caps, "logging", json_object_new_object());
	json_object_object_add(r, "capabilities", caps);
	json_object_object_add(info, "name", json_object_new_string("arion-mcp-gateway"));
	json_object_object_add(info, "version",
			       json_object_new_string(server_version ? server_version : ""));
	json_object_object_add(r, "serverInfo", info);
	if (instr)
		json_object_object_add(r, "instructions", instr);
	return r;
}

struct json_object *arn_mcp_backend_init_keep(struct json_object *res)
{
	struct json_object *caps = NULL, *x;
	if (!res || !json_object_is_type(res, json_type_object))
		return NULL;
	struct json_object *k = json_object_new_object();
	struct json_object *kc = json_object_new_object();
	if (!k || !kc) {
		json_object_put(k);
		json_object_put(kc);
		return NULL;
	}
	if (!json_object_object_get_ex(res, "capabilities", &caps) ||
	    !json_object_is_type(caps, json_type_object))
		caps = NULL;
	static const char *const listed[] = {"tools", "prompts", "resources"};
	for (size_t i = 0; i < sizeof(listed) / sizeof(listed[0]); i++) {
		bool lc = false;
		if (cap_get(caps, listed[i], &lc))
			json_object_object_add(kc, listed[i], cap_new(lc));
	}
	if (cap_get(caps, "logging", NULL))
		json_object_object_add(kc, "logging", json_object_new_object());
	json_object_object_add(k, "capabilities", kc);
	if (json_object_object_get_ex(res, "instructions", &x) &&
	    json_object_is_type(x, json_type_string) && json_object_get_string_len(x) > 0) {
		const char *t = json_object_get_string(x);
		size_t len = (size_t)json_object_get_string_len(x);
		if (len > ARN_MCP_INSTRUCTIONS_MAX) {
			/* back to the start of a UTF-8 sequence: json-c holds
			 * valid UTF-8, and a cut one must stay valid */
			len = ARN_MCP_INSTRUCTIONS_MAX;
			while (len > 0 && ((unsigned char)t[len] & 0xC0) == 0x80)
				len--;
		}
		json_object_object_add(k, "instructions", json_object_new_string_len(t, (int)len));
	}
	return k;
}
