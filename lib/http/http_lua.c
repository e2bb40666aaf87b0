/*
 * envoy.filters.http.lua (http_lua.h), as Envoy's lua_filter.cc and
 * wrappers.cc: the stream handle, its header map, stream info and
 * connection objects over a head of Arion's, a script's header changes
 * kept as edits (removed names, added lines) the head is written with.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "arn_config.h"
#include "arn_fmt.h"
#include "arn_log.h"
#include "arn_lua.h"
#include "arn_tls.h"
#include "http_int.h"
#include "http_local.h"
#include "http_lua.h"
#include "http_lua_int.h"
#include "http_filter.h"
#include "http_rb.h"
#include "http_req_kept.h"
#include "http_stream.h"
#include "http_subreq.h"
#include "http_worker.h"


/* A line a script added. */
struct lua_add {
	const char *n, *v; /* in the stream's text */
	uint16_t nl;
	uint32_t vl;
	bool live;
};

/* One call into a script: what it sees and what it changed. */
struct lua_call {
	struct http_stream *st;
	struct http_lua_vm *vm;
	const struct arn_h1_msg *m; /* the head */
	bool resp;
	uint64_t serial;
	/* the head's lines removed (by name: every line of it), and the
	 * names to remove as edits */
	bool gone[HTTP_MAX_HDRS];
	const char *rm[HTTP_LUA_MAX_EDITS];
	uint16_t rm_len[HTTP_LUA_MAX_EDITS];
	unsigned n_rm;
	struct lua_add adds[HTTP_LUA_MAX_EDITS];
	unsigned n_adds;
	bool overflow;
	/* body(): the call waits for the request's (or response's) body */
	bool want_body;
	/* this run of it yielded in body() (cleared at each resumption) */
	bool yield_body;
	bool body_set;	/* setBytes() replaced the request's kept body */
	bool body_lost; /* setBytes() found no room: the body is not whole */
	int co_ref;	/* its coroutine, in the state's registry (LUA_NOREF: none) */
	/* httpCall(): the sub-request the coroutine waits for (NULL: none),
	 * and the one whose answer it is resumed with */
	struct lua_hcall *call, *answer;
	/* bodyChunks()'s iterator or trailers() waits (LW_*) for the body's
	 * next slice or its end, the head gone on with the edits made so far
	 * (then read-only, as Envoy's once headers_continued_); rk: how
	 * resume_k resumes it (RK_*); the slice it is resumed with (valid
	 * for that resumption only: Arion keeps no chunk) */
	uint8_t wait, rk;
	bool head_gone;
	bool streamed;	  /* the iterator waited for a chunk: body() is refused */
	bool whole_given; /* the iterator gave the body read whole before */
	bool ended;	  /* resumed at the body's end (trailers() answers at once) */
	unsigned n_trl;	  /* trailers it added (HTTP_LUA_MAX_EDITS at most) */
	const char *chunk;
	size_t chunk_len;
	uint64_t chunk_no;
	size_t fi;			   /* the filter's index */
	const struct arn_cfg_route *route; /* the stream's (metadata()), or NULL */
	/* respond() */
	bool responded;
	unsigned status;
	const char *body;
	size_t blen;
	struct arn_h1_edit reply[HTTP_LUA_MAX_EDITS];
	unsigned n_reply;
};

/* Every object the script gets: the call it belongs to. */
struct lua_obj {
	uint64_t serial;
};

/* A body chunk (bodyChunks()): its call and which of its chunks. */
struct lua_cobj {
	uint64_t serial, no;
};

enum { LW_NONE = 0, LW_CHUNK, LW_TRAILERS };
/* resume_k's: the body read whole (a buffer), httpCall()'s answer, a
 * chunk, nothing (nil: the body's end), the trailers (or nil) */
enum { RK_BODY = 0, RK_ANSWER, RK_CHUNK, RK_NIL, RK_TRAILERS };

#define MT_HANDLE "arion.lua.stream_handle"
#define MT_HEADERS "arion.lua.header_map"
#define MT_INFO "arion.lua.stream_info"
#define MT_CONN "arion.lua.connection"
#define MT_SSL "arion.lua.ssl_connection"
#define MT_BUFFER "arion.lua.buffer"
#define MT_DYNMD "arion.lua.dynamic_metadata"
#define MT_META "arion.lua.metadata"
#define MT_CHUNK "arion.lua.body_chunk"
#define MT_TRAILERS "arion.lua.trailer_map"

/* A response whose body a script waits for (envoy_on_response's body()):
 * the filter took the body (HTTP_S_ENC_BODY), kept here whole; or whose
 * head a script's httpCall() holds (http_filter.h's -EINPROGRESS). The
 * edits of the calls that ran; the call waiting. Freed at the stream's
 * end. */
struct lua_resp {
	struct arn_h1_edit e[HTTP_LUA_RESP_EDITS];
	unsigned n;
	struct lua_call *w; /* the call waiting, or NULL */
	size_t fi;	    /* its filter's index */
	/* httpCall(): w waits for its answer, the head held; from: the
	 * answer came, w ended, the filters from this index (+ 1) run when
	 * the head is asked for again; text: the strings of e and w's edits
	 * (resp_pack), as the connection manager gives back the stream text
	 * of a pass whose head a filter holds */
	bool calling;
	size_t from;
	char *text;
	/* bodyChunks(), trailers(): the call streaming the body (its slices
	 * pass through the filter to the client, lua_enc_body), or NULL */
	struct lua_call *sw;
	bool streaming;
	struct rte_mbuf *head, *tail;
	uint32_t bytes, segs;
	bool whole;   /* the body is in: body() answers at once */
	bool done;    /* every script ran: e[0..n) are the edits */
	bool written; /* the head and body went to the client */
	bool len_set; /* setBytes(): content-length the new length */
	bool lost;    /* setBytes() found no room */
	/* w (body()) or sw (bodyChunks(), trailers()) waits since its
	 * httpCall(): the filter takes the body when the head is asked
	 * again (http_lua_resp_edits) */
	bool take;
};

/* httpCall()'s sub-request: its request (copies, in req[]) and its
 * answer. On the stream's list (st->res->lua_calls) from its start to the
 * stream's end, or to the next httpCall() after it is over: not freed
 * inside its own callbacks, but for a stream that ended there (then freed
 * as the callback returns: on_end and on_failed are the sub-request's
 * last act). */
struct lua_hcall {
	struct http_subreq sr;
	struct http_stream *st;
	struct lua_hcall *next;
	bool sync;	 /* a call waits for it (st->res->lua_wait) */
	bool over;	 /* on_end or on_failed came (or it never started) */
	bool overflow;	 /* its body passed HTTP_LUA_CALL_BODY_MAX: reset, over_t armed */
	bool timed_out;	 /* failed on its timeout: 504 */
	bool in_cb;	 /* its callback runs the script (not freed under it) */
	bool failed;	 /* failed otherwise: 503 */
	unsigned status; /* the answer's */
	size_t fi;	 /* the filter's index */
	/* the answer past the bound: the script's 503 from the worker's
	 * timers (hc_overflow), not from inside the sub-request's decode */
	struct http_timer over_t;
	struct arn_cfg_ref cluster;
	struct http_subreq_header h[HTTP_SUBREQ_MAX_HDRS];
	unsigned n;
	/* the answer's head lines: [u16 name length][u32 value length][name][value] */
	char *hd;
	size_t hd_len;
	char *body;
	size_t blen, bcap;
	char *req; /* the request's strings */
};

static const struct http_filter_ops lua_enc_ops;

uint32_t http_lua_call_body_max = HTTP_LUA_CALL_BODY_MAX;
unsigned http_lua_calls_max = HTTP_LUA_CALLS_MAX;

/* ---- control lcore ------------------------------------------------------------------------- */

/* ---- objects ------------------------------------------------------------------------------- */

static struct http_lua_vm *vm_of(lua_State *L)
{
	void *ud;
	lua_getallocf(L, &ud);
	return (struct http_lua_vm *)(void *)((char *)ud - offsetof(struct http_lua_vm, mem));
}

/* The call object @p idx (of metatable @p mt) belongs to, or a script
 * error: Envoy's objects die with the call that made them. */
static struct lua_call *live(lua_State *L, int idx, const char *mt)
{
	struct lua_obj *o = luaL_checkudata(L, idx, mt);
	struct http_lua_vm *vm = vm_of(L);
	if (!vm->cur || vm->cur->serial != o->serial)
		luaL_error(L, "object used outside of proper scope");
	return vm->cur;
}

static void new_obj(lua_State *L, struct lua_call *c, const char *mt)
{
	struct lua_obj *o = lua_newuserdatauv(L, sizeof(*o), 0);
	o->serial = c->serial;
	luaL_setmetatable(L, mt);
}

static int not_built(lua_State *L)
{
	return luaL_error(L, "%s() is not supported by Arion",
			  lua_tostring(L, lua_upvalueindex(1)));
}

/* ---- the header map ------------------------------------------------------------------------ */

static bool eq(const char *a, size_t al, const char *b, size_t bl)
{
	return arn_h1_eq_nocase(a, al, b, bl);
}

/* A pseudo-header's value (":path", ...), or NULL. */
static const char *pseudo(struct lua_call *c, const char *n, size_t nl, size_t *vl, char *buf)
{
	const struct arn_h1_msg *m = c->m;
	if (c->resp) {
		if (nl == 7 && memcmp(n, ":status", 7) == 0) {
			*vl = (size_t)snprintf(buf, 8, "%u", m->status);
			return buf;
		}
		return NULL;
	}
	if (nl == 5 && memcmp(n, ":path", 5) == 0) {
		*vl = m->path.len;
		return m->path.p;
	}
	if (nl == 7 && memcmp(n, ":method", 7) == 0) {
		*vl = m->method_name.len;
		return m->method_name.p;
	}
	if (nl == 10 && memcmp(n, ":authority", 10) == 0) {
		*vl = m->authority.len;
		return m->authority.p;
	}
	if (nl == 7 && memcmp(n, ":scheme", 7) == 0) {
		const char *s = c->st->hc->tls ? "https" : "http";
		*vl = strlen(s);
		return s;
	}
	return NULL;
}

/* Is head line @p j one the script sees? (Host is :authority.) */
static bool shown(const struct lua_call *c, unsigned j)
{
	if (c->gone[j])
		return false;
	return c->resp || (int)j != c->m->host_idx;
}

/* The @p k-th value of @p n (head lines first, then added ones), or NULL. */
static const char *value_at(struct lua_call *c, const char *n, size_t nl, size_t k, size_t *vl)
{
	for (unsigned j = 0; j < c->m->n_hdrs; j++) {
		const struct arn_h1_header *h = &c->m->hdrs[j];
		if (shown(c, j) && eq(h->name, h->name_len, n, nl) && k-- == 0) {
			*vl = h->value_len;
			return h->value;
		}
	}
	for (unsigned j = 0; j < c->n_adds; j++) {
		const struct lua_add *a = &c->adds[j];
		if (a->live && eq(a->n, a->nl, n, nl) && k-- == 0) {
			*vl = a->vl;
			return a->v;
		}
	}
	return NULL;
}

/* RFC 9110's token characters */
static bool tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A header name the script may change: a token, not a pseudo-header nor
 * one that frames or routes the message (as header_mutation's). */
static const char *check_name(lua_State *L, int idx, size_t *nl)
{
	const char *n = luaL_checklstring(L, idx, nl);
	if (*nl && n[0] == ':')
		luaL_error(L, "Arion does not let a script change '%s'", n);
	if (*nl == 0 || *nl > 255)
		luaL_error(L, "invalid header name");
	for (size_t i = 0; i < *nl; i++)
		if (!tchar((unsigned char)n[i]))
			luaL_error(L, "invalid header name");
	static const char *const no[] = {"host", "content-length", "transfer-encoding",
					 "connection", "upgrade"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (eq(no[i], strlen(no[i]), n, *nl))
			luaL_error(L, "Arion does not let a script change '%s'", no[i]);
	return n;
}

/* @p n (@p nl bytes) into the stream's text (lower case: Envoy's names are). */
static const char *keep(lua_State *L, struct lua_call *c, const char *s, size_t len, bool lower)
{
	char *t = http_st_text(c->st, len ? len : 1);
	if (!t) {
		c->overflow = true;
		luaL_error(L, "header edits do not fit the stream's room (%d bytes)", HTTP_TEXT);
	}
	for (size_t i = 0; i < len; i++)
		t[i] = lower && s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
	return t;
}

static const char *check_value(lua_State *L, int idx, size_t *vl)
{
	const char *v = luaL_checklstring(L, idx, vl);
	for (size_t i = 0; i < *vl; i++)
		if (v[i] == '\r' || v[i] == '\n' || v[i] == '\0')
			luaL_error(L, "invalid header value");
	return v;
}

/* Envoy's HeaderMapWrapper::checkModifiable: once the head went on
 * (bodyChunks(), trailers()), its headers are read only. */
static struct lua_call *modifiable(lua_State *L, struct lua_call *c)
{
	if (c->head_gone)
		luaL_error(L, "header map can no longer be modified");
	return c;
}

static void edit_room(lua_State *L, struct lua_call *c)
{
	if (c->n_rm + c->n_adds >= HTTP_LUA_MAX_EDITS) {
		c->overflow = true;
		luaL_error(L, "more than %d header edits", HTTP_LUA_MAX_EDITS);
	}
}

static void remove_name(lua_State *L, struct lua_call *c, const char *n, size_t nl)
{
	bool in_head = false;
	for (unsigned j = 0; j < c->m->n_hdrs; j++) {
		const struct arn_h1_header *h = &c->m->hdrs[j];
		if (!c->gone[j] && eq(h->name, h->name_len, n, nl)) {
			c->gone[j] = true;
			in_head = true;
		}
	}
	for (unsigned j = 0; j < c->n_adds; j++)
		if (eq(c->adds[j].n, c->adds[j].nl, n, nl))
			c->adds[j].live = false;
	if (!in_head)
		return;
	edit_room(L, c);
	c->rm[c->n_rm] = keep(L, c, n, nl, true);
	c->rm_len[c->n_rm++] = (uint16_t)nl;
}

static void add_line(lua_State *L, struct lua_call *c, const char *n, size_t nl, const char *v,
		     size_t vl)
{
	edit_room(L, c);
	const char *kn = keep(L, c, n, nl, true);
	const char *kv = keep(L, c, v, vl, false);
	c->adds[c->n_adds++] = (struct lua_add){
	    .n = kn, .nl = (uint16_t)nl, .v = kv, .vl = (uint32_t)vl, .live = true};
}

/* The @p k-th value of @p n in a map (*@p vl its length), or NULL. */
typedef const char *(*nth_fn)(void *map, const char *n, size_t nl, size_t k, size_t *vl);

/* get(name) of a header or trailer map: every value of @p n joined with
 * "," (Envoy's HeaderMapWrapper::luaGet, getAllOfHeaderAsString), or nil.
 * One copy for both maps: @p at walks the map's values. */
static int push_joined(lua_State *L, nth_fn at, void *map, const char *n, size_t nl)
{
	luaL_Buffer b;
	size_t vl;
	const char *v = at(map, n, nl, 0, &vl);
	if (!v) {
		lua_pushnil(L);
		return 1;
	}
	luaL_buffinit(L, &b);
	luaL_addlstring(&b, v, vl);
	for (size_t k = 1; (v = at(map, n, nl, k, &vl)); k++) {
		luaL_addchar(&b, ',');
		luaL_addlstring(&b, v, vl);
	}
	luaL_pushresult(&b);
	return 1;
}

static const char *head_nth(void *map, const char *n, size_t nl, size_t k, size_t *vl)
{
	return value_at(map, n, nl, k, vl);
}

/* get(name): every value joined with "," (Envoy's HeaderMapWrapper), or nil */
static int h_get(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HEADERS);
	size_t nl, vl;
	const char *n = luaL_checklstring(L, 2, &nl);
	char buf[8];
	const char *v = pseudo(c, n, nl, &vl, buf);
	if (v) {
		lua_pushlstring(L, v, vl);
		return 1;
	}
	if (!c->resp && eq(n, nl, "host", 4)) {
		lua_pushnil(L); /* Host is :authority */
		return 1;
	}
	return push_joined(L, head_nth, c, n, nl);
}

/* getAtIndex(name, i): the i-th value (0 first), or nil */
static int h_get_at(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HEADERS);
	size_t nl, vl;
	const char *n = luaL_checklstring(L, 2, &nl);
	lua_Integer k = luaL_checkinteger(L, 3);
	const char *v = k < 0 ? NULL : value_at(c, n, nl, (size_t)k, &vl);
	char buf[8];
	if (!v && k == 0)
		v = pseudo(c, n, nl, &vl, buf);
	if (v)
		lua_pushlstring(L, v, vl);
	else
		lua_pushnil(L);
	return 1;
}

static int h_num(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HEADERS);
	size_t nl, vl;
	const char *n = luaL_checklstring(L, 2, &nl);
	char buf[8];
	lua_Integer k = 0;
	if (pseudo(c, n, nl, &vl, buf))
		k = 1;
	else
		while (value_at(c, n, nl, (size_t)k, &vl))
			k++;
	lua_pushinteger(L, k);
	return 1;
}

static int h_add(lua_State *L)
{
	struct lua_call *c = modifiable(L, live(L, 1, MT_HEADERS));
	size_t nl, vl;
	const char *n = check_name(L, 2, &nl);
	const char *v = check_value(L, 3, &vl);
	add_line(L, c, n, nl, v, vl);
	return 0;
}

/* replace(name, value): every line of name gone, one with value */
static int h_replace(lua_State *L)
{
	struct lua_call *c = modifiable(L, live(L, 1, MT_HEADERS));
	size_t nl, vl;
	const char *n = check_name(L, 2, &nl);
	const char *v = check_value(L, 3, &vl);
	remove_name(L, c, n, nl);
	add_line(L, c, n, nl, v, vl);
	return 0;
}

static int h_remove(lua_State *L)
{
	struct lua_call *c = modifiable(L, live(L, 1, MT_HEADERS));
	size_t nl;
	const char *n = check_name(L, 2, &nl);
	remove_name(L, c, n, nl);
	return 0;
}

/* pairs(): the pseudo-headers, the head's lines, the added ones (each
 * step a position in upvalue 2) */
static int h_next(lua_State *L)
{
	struct lua_call *c = live(L, lua_upvalueindex(1), MT_HEADERS);
	lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
	static const char *const req_ps[] = {":authority", ":path", ":method", ":scheme"};
	static const char *const resp_ps[] = {":status"};
	const char *const *ps = c->resp ? resp_ps : req_ps;
	lua_Integer np = c->resp ? 1 : 4;
	for (;; pos++) {
		const char *n = NULL, *v = NULL;
		size_t nl = 0, vl = 0;
		char buf[8];
		if (pos < np) {
			n = ps[pos];
			nl = strlen(n);
			v = pseudo(c, n, nl, &vl, buf);
		} else if (pos < np + c->m->n_hdrs) {
			unsigned j = (unsigned)(pos - np);
			if (!shown(c, j))
				continue;
			n = c->m->hdrs[j].name;
			nl = c->m->hdrs[j].name_len;
			v = c->m->hdrs[j].value;
			vl = c->m->hdrs[j].value_len;
		} else if (pos < np + c->m->n_hdrs + c->n_adds) {
			const struct lua_add *a = &c->adds[pos - np - c->m->n_hdrs];
			if (!a->live)
				continue;
			n = a->n;
			nl = a->nl;
			v = a->v;
			vl = a->vl;
		} else {
			return 0;
		}
		lua_pushinteger(L, pos + 1);
		lua_replace(L, lua_upvalueindex(2));
		/* names as Envoy's: lower case */
		luaL_Buffer b;
		char *p = luaL_buffinitsize(L, &b, nl);
		for (size_t i = 0; i < nl; i++)
			p[i] = n[i] >= 'A' && n[i] <= 'Z' ? (char)(n[i] + 32) : n[i];
		luaL_pushresultsize(&b, nl);
		lua_pushlstring(L, v, vl);
		return 2;
	}
}

static int h_pairs(lua_State *L)
{
	live(L, 1, MT_HEADERS);
	lua_pushvalue(L, 1);
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, h_next, 2);
	return 1;
}

/* ---- the stream handle --------------------------------------------------------------------- */

static int s_headers(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	new_obj(L, c, MT_HEADERS);
	return 1;
}

/* respond({[":status"] = "403", ...}, body): a local reply (requests),
 * the script ends there (Envoy yields and never resumes it) */
static int s_respond(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	if (c->resp)
		return luaL_error(L, "respond() is only for requests");
	if (c->head_gone)
		return luaL_error(L, "respond() cannot be called if headers have been continued");
	luaL_checktype(L, 2, LUA_TTABLE);
	size_t blen = 0;
	const char *body = luaL_optlstring(L, 3, NULL, &blen);
	unsigned status = 0;
	c->n_reply = 0;
	lua_pushnil(L);
	while (lua_next(L, 2)) {
		if (lua_type(L, -2) != LUA_TSTRING)
			return luaL_error(L, "respond(): a header name must be a string");
		size_t nl, vl;
		const char *n = lua_tolstring(L, -2, &nl);
		if (nl == 7 && memcmp(n, ":status", 7) == 0) {
			lua_Integer s = 0;
			if (lua_type(L, -1) == LUA_TNUMBER)
				s = lua_tointeger(L, -1);
			else if (lua_type(L, -1) == LUA_TSTRING) {
				const char *sv = lua_tostring(L, -1);
				char *e;
				s = strtol(sv, &e, 10);
				if (*e)
					s = 0;
			}
			if (s < 200 || s > 599)
				return luaL_error(L, "respond(): invalid :status");
			status = (unsigned)s;
			lua_pop(L, 1);
			continue;
		}
		lua_pushvalue(L, -2); /* check_name reads it at the top */
		n = check_name(L, -1, &nl);
		lua_pop(L, 1);
		if (!lua_isstring(L, -1))
			return luaL_error(L, "respond(): a header value must be a string");
		const char *v = check_value(L, -1, &vl);
		if (c->n_reply == HTTP_LUA_MAX_EDITS) {
			c->overflow = true;
			return luaL_error(L, "more than %d header edits", HTTP_LUA_MAX_EDITS);
		}
		const char *kn = keep(L, c, n, nl, true);
		const char *kv = keep(L, c, v, vl, false);
		c->reply[c->n_reply++] = (struct arn_h1_edit){.name = kn,
							      .name_len = (uint16_t)nl,
							      .value = kv,
							      .value_len = (uint32_t)vl,
							      .op = ARN_H1_EDIT_ADD};
		lua_pop(L, 1);
	}
	if (!status)
		return luaL_error(L, "respond(): :status must be set");
	c->responded = true;
	c->status = status;
	c->body = body; /* on the coroutine's stack until the reply is made */
	c->blen = blen;
	return lua_yield(L, 0);
}

static int s_log(lua_State *L)
{
	live(L, 1, MT_HANDLE);
	int level = (int)lua_tointeger(L, lua_upvalueindex(1));
	size_t len;
	const char *msg = luaL_checklstring(L, 2, &len);
	if (level >= arn_log_levels[ARN_LOGM_HTTP])
		arn_log_write((enum arn_log_level)level, ARN_LOGM_HTTP, "script log: %.*s%s",
			      (int)(len > HTTP_LUA_LOG_MAX ? HTTP_LUA_LOG_MAX : len), msg,
			      len > HTTP_LUA_LOG_MAX ? " [cut]" : "");
	return 0;
}

static int s_stream_info(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	new_obj(L, c, MT_INFO);
	return 1;
}

static int s_connection(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	new_obj(L, c, MT_CONN);
	return 1;
}

static int s_base64(lua_State *L)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	live(L, 1, MT_HANDLE);
	size_t n;
	const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 2, &n);
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		luaL_addchar(&b, tab[v >> 18 & 63]);
		luaL_addchar(&b, tab[v >> 12 & 63]);
		luaL_addchar(&b, i + 1 < n ? tab[v >> 6 & 63] : '=');
		luaL_addchar(&b, i + 2 < n ? tab[v & 63] : '=');
	}
	luaL_pushresult(&b);
	return 1;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* timestamp(): milliseconds since the epoch (Envoy's default resolution) */
static int s_timestamp(lua_State *L)
{
	live(L, 1, MT_HANDLE);
	lua_Integer res = luaL_optinteger(L, 2, 0);
	if (res != 0)
		return luaL_error(L, "timestamp format must be MILLISECOND.");
	lua_pushinteger(L, (lua_Integer)(now_us() / 1000u));
	return 1;
}

/* timestampString(resolution): EnvoyTimestampResolution.MILLISECOND (0,
 * the default) or MICROSECOND (1), as a decimal string */
static int s_timestamp_string(lua_State *L)
{
	live(L, 1, MT_HANDLE);
	lua_Integer res = luaL_optinteger(L, 2, 0);
	if (res != 0 && res != 1)
		return luaL_error(L, "timestamp format must be MILLISECOND or MICROSECOND.");
	uint64_t us = now_us();
	lua_pushfstring(L, "%I", (lua_Integer)(res ? us : us / 1000u));
	return 1;
}

/* Has the response a body (Envoy's end_stream false on its headers)? */
static bool resp_has_body(const struct http_stream *st)
{
	const struct arn_h1_msg *m = &st->resp.m;
	return !((m->flags & ARN_H1_F_NO_BODY) || st->method == ARN_H1_M_HEAD || m->status == 204 ||
		 m->status == 304 || ((m->flags & ARN_H1_F_CONTENT_LENGTH) && !m->content_length));
}

/* body() in envoy_on_response: nil without a body; the buffer once it is
 * whole (a later script's call); else the call waits for it
 * (http_lua_resp_edits takes the body). */
static int resp_body(lua_State *L, struct lua_call *c)
{
	struct http_stream *st = c->st;
	struct lua_resp *lr = st->res->lua_resp;
	if (lr && lr->whole) {
		new_obj(L, c, MT_BUFFER);
		return 1;
	}
	if (!resp_has_body(st)) {
		lua_pushnil(L);
		return 1;
	}
	if (c->want_body)
		return luaL_error(L, "body() called twice");
	if (st->state & HTTP_S_ENC_BODY)
		/* ext_proc (BUFFERED), grpc_web or the compressor has it */
		return luaL_error(L, "body() on a response another filter took is not supported "
				     "by Arion");
	c->want_body = c->yield_body = true;
	return lua_yield(L, 0);
}

static uint8_t xf_index(void);

/* body(): the request's body whole, as a buffer object. Without one
 * (a head-only request), nil; read already by a filter before, at once;
 * else the script waits (the coroutine yields) until it is whole. */
static int s_body(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	struct http_stream *st = c->st;
	if (c->streamed || c->head_gone)
		/* Envoy's luaBody once saw_body_ without buffered_body_ */
		return luaL_error(L, c->ended
					 ? "cannot call body() after body has been streamed"
					 : "cannot call body() after body streaming has started");
	if (c->resp)
		return resp_body(L, c);
	if (!http_msg_has_body(&st->req.m)) {
		lua_pushnil(L);
		return 1;
	}
	if (st->state & HTTP_S_REQ_DONE) {
		new_obj(L, c, MT_BUFFER);
		return 1;
	}
	if (c->want_body)
		return luaL_error(L, "body() called twice");
	if (st->req_xf && st->req_xf != xf_index())
		/* a filter before rewrites the body (gRPC-Web text); a Lua
		 * filter's bodyChunks() before this one is fed each slice first
		 * (http_l4.c's l4_body), as Envoy's chain */
		return luaL_error(L,
				  "body() after a body-rewriting filter is not supported by Arion");
	/* after an httpCall() too: Envoy's luaBody yields (WaitForBody) when
	 * no body came yet, and Arion reads none while the call holds the
	 * head (run_resumed has it read then) */
	c->want_body = c->yield_body = true;
	return lua_yield(L, 0);
}

/* The buffer's bytes: the request's kept body, or the response's. */
static size_t buf_len(const struct lua_call *c)
{
	if (c->resp)
		return ((const struct lua_resp *)c->st->res->lua_resp)->bytes;
	return X(c->st)->rb_bytes;
}

static size_t buf_copy(const struct lua_call *c, char *out, size_t cap)
{
	if (!c->resp)
		return http_rb_copy(c->st, out, cap);
	const struct lua_resp *lr = c->st->res->lua_resp;
	size_t k = 0;
	for (const struct rte_mbuf *m = lr->head; m && k < cap; m = m->next) {
		size_t n = m->data_len < cap - k ? m->data_len : cap - k;
		memcpy(out + k, rte_pktmbuf_mtod(m, const char *), n);
		k += n;
	}
	return k;
}

static int b_length(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_BUFFER);
	lua_pushinteger(L, (lua_Integer)buf_len(c));
	return 1;
}

static bool resp_keep(struct http_stream *st, struct lua_resp *lr, const char *p, size_t n);
static void resp_free_body(struct http_stream *st, struct lua_resp *lr);

/* setBytes(s): the body is s (Envoy's BufferWrapper: content-length the
 * new length, which it returns); its bytes charged to the call's
 * instructions at one per 16 */
static int b_set(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_BUFFER);
	size_t n;
	const char *p = luaL_checklstring(L, 2, &n);
	struct http_stream *st = c->st;
	if (n > HTTP_LUA_BODY_MAX)
		return luaL_error(L, "setBytes(): %d bytes, past the body bound (%d)", (int)n,
				  (int)HTTP_LUA_BODY_MAX);
	arn_lua_charge(L, &c->vm->mem, n / 16);
	if (c->resp) {
		struct lua_resp *lr = st->res->lua_resp;
		resp_free_body(st, lr);
		lr->len_set = true;
		if (!resp_keep(st, lr, p, n)) {
			lr->lost = true;
			return luaL_error(L, "setBytes(): no room for the body on this worker");
		}
	} else {
		if (!c->want_body)
			/* read by a filter before (its framing is its own) */
			return luaL_error(L, "setBytes() on a body the script did not wait for is "
					     "not supported by Arion");
		http_rb_free(st);
		c->body_set = true;
		if (n && !http_rb_keep(st, p, n, HTTP_LUA_BODY_MAX)) {
			c->body_lost = true;
			return luaL_error(L, "setBytes(): no room for the body on this worker");
		}
	}
	lua_pushinteger(L, (lua_Integer)n);
	return 1;
}

/* getBytes(index, length): the body's bytes [index, index + length)
 * (Envoy's BufferWrapper); copied from the kept mbufs, their bytes
 * charged to the call's instructions */
static int b_get(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_BUFFER);
	lua_Integer at = luaL_checkinteger(L, 2), len = luaL_checkinteger(L, 3);
	size_t n = buf_len(c);
	if (at < 0 || len < 0 || (uint64_t)at > n || (uint64_t)len > n - (uint64_t)at)
		return luaL_error(L, "index/length must be >= 0 and within the body (%d bytes)",
				  (int)n);
	struct arn_lua_mem *m = &c->vm->mem;
	uint32_t steps = (uint32_t)(n / ARN_LUA_HOOK_STEP);
	if (steps > m->budget) /* the call's end, as the hook's (no pcall catches it) */
		arn_lua_charge(L, m, ((uint64_t)m->budget + 1) * ARN_LUA_HOOK_STEP);
	m->budget -= steps;
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, n ? n : 1);
	size_t k = buf_copy(c, p, n);
	luaL_pushresultsize(&b, k);
	lua_pushlstring(L, lua_tostring(L, -1) + at, (size_t)len);
	return 1;
}

/* ---- bodyChunks(), trailers() -------------------------------------------------------------- */

/* 1 + the index of the filter (http_l4.c's, the Lua filter's home) whose
 * decode_xform the connection manager calls with a request's slices,
 * or 0 */
static uint8_t xf_index(void)
{
	for (unsigned k = 0; k < http_n_filters; k++)
		if (http_filters[k] == &http_l4_filter_ops)
			return (uint8_t)(k + 1);
	return 0;
}

/* Is the body's end known to call @p c (its trailers, if any, in the
 * message)? A request's: read (HTTP_S_REQ_DONE); a response's: kept
 * whole by a body(), or resumed at its end. */
static bool end_known(const struct lua_call *c)
{
	const struct http_stream *st = c->st;
	if (c->ended)
		return true;
	if (!c->resp)
		return (st->state & HTTP_S_REQ_DONE) != 0;
	const struct lua_resp *lr = st->res->lua_resp;
	return lr && lr->whole;
}

static bool has_body(const struct lua_call *c)
{
	return c->resp ? resp_has_body(c->st) : http_msg_has_body(&c->st->req.m);
}

/* Can call @p c's script wait for the body's slices here? The request's
 * pass the connection manager's decode_xform (http_lua_xform), one
 * filter's; the response's the filter's encode_body (lua_enc_body), one
 * filter's. A script error naming what is not built otherwise. */
static void stream_check(lua_State *L, struct lua_call *c, const char *what)
{
	struct http_stream *st = c->st;
	if (c->resp) {
		if (st->state & HTTP_S_ENC_BODY)
			luaL_error(L,
				   "%s on a response whose body another filter (or Lua filter) "
				   "takes is not supported by Arion",
				   what);
		return;
	}
	uint8_t xf = xf_index();
	if (!xf || st->res->lua_chunks || (st->req_xf && st->req_xf != xf))
		luaL_error(L,
			   "%s on a request whose body another filter (or Lua filter) "
			   "streams or rewrites is not supported by Arion",
			   what);
}

/* The iterator bodyChunks() returns (Envoy's luaBodyIterator): the next
 * slice of the body as it passes (the coroutine waits for it, the head
 * gone on), nil at the end. A body read whole before (a body() of this
 * script's filter or an earlier one) is one chunk. */
static int chunk_next(lua_State *L)
{
	struct lua_call *c = live(L, lua_upvalueindex(1), MT_HANDLE);
	struct http_stream *st = c->st;
	if (!has_body(c) || c->ended)
		return 0;
	if (end_known(c)) {
		if (c->whole_given)
			return 0;
		c->whole_given = true;
		new_obj(L, c, MT_BUFFER);
		return 1;
	}
	if (!c->head_gone)
		stream_check(L, c, "bodyChunks()");
	(void)st;
	c->wait = LW_CHUNK;
	c->streamed = true;
	return lua_yield(L, 0);
}

/* bodyChunks(): the iterator (Envoy's luaBodyChunks: not once the body
 * was read by this script's body()) */
static int s_body_chunks(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	if (c->want_body)
		return luaL_error(L, "cannot call bodyChunks after body processing has begun");
	lua_pushvalue(L, 1);
	lua_pushcclosure(L, chunk_next, 1);
	return 1;
}

/* The chunk object @p idx, while it is the slice its call was resumed
 * with: Arion keeps none past that (Envoy's wrapper dies with the
 * resumption too). */
static struct lua_call *live_chunk(lua_State *L, int idx)
{
	struct lua_cobj *o = luaL_checkudata(L, idx, MT_CHUNK);
	struct http_lua_vm *vm = vm_of(L);
	struct lua_call *c = vm->cur;
	if (!c || c->serial != o->serial)
		luaL_error(L, "object used outside of proper scope");
	if (!c->chunk || c->chunk_no != o->no)
		luaL_error(L, "a body chunk lives until the script waits again (Arion keeps none)");
	return c;
}

static int k_length(lua_State *L)
{
	struct lua_call *c = live_chunk(L, 1);
	lua_pushinteger(L, (lua_Integer)c->chunk_len);
	return 1;
}

/* A chunk's bytes setBytes() gave, which pass on instead of it (the
 * stream's st->res->lua_out): kept to the stream's end, as the
 * connection manager's decode_xform contract asks (the upstream's codec
 * holds them by reference until its queue is flushed, before the
 * stream's next event), and reused for the next chunk (as the
 * compressor's output for a response's). */
struct lua_out {
	uint32_t cap;
	char b[];
};

/* setBytes(s) on a chunk (Envoy's BufferWrapper over the chunk's data:
 * drained, s added, the length returned): s passes on instead of the
 * chunk. Envoy also sets the head's content-length to it, which went
 * with the head already (a no-op on the wire); Arion refuses a new length
 * where the head's content-length frames the body (the upstream, or the
 * client, would read the message's end elsewhere), and a length past
 * HTTP_LUA_BODY_MAX. Its bytes charged to the call at one per 16. */
static int k_set(lua_State *L)
{
	struct lua_call *c = live_chunk(L, 1);
	size_t n;
	const char *p = luaL_checklstring(L, 2, &n);
	struct http_stream *st = c->st;
	if (n > HTTP_LUA_BODY_MAX)
		return luaL_error(L, "setBytes(): %d bytes, past the body bound (%d)", (int)n,
				  (int)HTTP_LUA_BODY_MAX);
	const struct arn_h1_msg *m = c->resp ? &st->resp.m : &st->req.m;
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && n != c->chunk_len)
		return luaL_error(
		    L,
		    "setBytes(): a chunk of a body framed by content-length keeps its "
		    "length (%d bytes) in Arion",
		    (int)c->chunk_len);
	arn_lua_charge(L, &c->vm->mem, n / 16);
	struct lua_out *o = st->res->lua_out;
	if (!o || o->cap < n) {
		struct lua_out *g = realloc(o, sizeof(*o) + (n ? n : 1));
		if (!g)
			return luaL_error(L, "setBytes(): no memory");
		g->cap = (uint32_t)n;
		st->res->lua_out = o = g;
	}
	memcpy(o->b, p, n);
	c->chunk = o->b;
	c->chunk_len = n;
	lua_pushinteger(L, (lua_Integer)n);
	return 1;
}

/* getBytes(index, length), as the body's: charged to the call's
 * instructions (one per byte copied, in hook steps) */
static int k_get(lua_State *L)
{
	struct lua_call *c = live_chunk(L, 1);
	lua_Integer at = luaL_checkinteger(L, 2), len = luaL_checkinteger(L, 3);
	size_t n = c->chunk_len;
	if (at < 0 || len < 0 || (uint64_t)at > n || (uint64_t)len > n - (uint64_t)at)
		return luaL_error(L, "index/length must be >= 0 and within the chunk (%d bytes)",
				  (int)n);
	arn_lua_charge(L, &c->vm->mem, (uint64_t)len);
	lua_pushlstring(L, c->chunk + at, (size_t)len);
	return 1;
}

/* ---- the trailer map (trailers()) ---------------------------------------------------------- */

static struct arn_h1_msg *trl_msg(struct lua_call *c)
{
	return c->resp ? &c->st->resp.m : &c->st->req.m;
}

static bool trl_any(const struct arn_h1_msg *m)
{
	return (m->flags & ARN_H1_F_TRAILERS) && m->n_trailers;
}

/* trailers(): the body's trailers (HTTP/1.1 chunked or HTTP/2), as a
 * header map whose changes go with them; nil when the body ended without
 * (or there is none). Before the end, the coroutine waits for it, the
 * head gone on (Envoy's luaTrailers, State::WaitForTrailers). */
static int s_trailers(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	if (!has_body(c))
		return 0;
	if (end_known(c)) {
		if (!trl_any(trl_msg(c)))
			return 0;
		new_obj(L, c, MT_TRAILERS);
		return 1;
	}
	if (!c->head_gone)
		stream_check(L, c, "trailers()");
	c->wait = LW_TRAILERS;
	return lua_yield(L, 0);
}

/* The @p k-th trailer named @p n, or -1. */
static int trl_find(const struct arn_h1_msg *m, const char *n, size_t nl, size_t k)
{
	for (unsigned j = 0; j < m->n_trailers; j++)
		if (eq(m->trailers[j].name, m->trailers[j].name_len, n, nl) && k-- == 0)
			return (int)j;
	return -1;
}

static const char *trl_nth(void *map, const char *n, size_t nl, size_t k, size_t *vl)
{
	const struct arn_h1_msg *m = map;
	int j = trl_find(m, n, nl, k);
	if (j < 0)
		return NULL;
	*vl = m->trailers[j].value_len;
	return m->trailers[j].value;
}

static struct arn_h1_msg *trl_live(lua_State *L, int idx, struct lua_call **pc)
{
	struct lua_call *c = live(L, idx, MT_TRAILERS);
	if (pc)
		*pc = c;
	return trl_msg(c);
}

static int t_get(lua_State *L)
{
	struct arn_h1_msg *m = trl_live(L, 1, NULL);
	size_t nl;
	const char *n = luaL_checklstring(L, 2, &nl);
	return push_joined(L, trl_nth, m, n, nl);
}

static int t_get_at(lua_State *L)
{
	struct arn_h1_msg *m = trl_live(L, 1, NULL);
	size_t nl;
	const char *n = luaL_checklstring(L, 2, &nl);
	lua_Integer k = luaL_checkinteger(L, 3);
	int j = k < 0 ? -1 : trl_find(m, n, nl, (size_t)k);
	if (j < 0)
		lua_pushnil(L);
	else
		lua_pushlstring(L, m->trailers[j].value, m->trailers[j].value_len);
	return 1;
}

static int t_num(lua_State *L)
{
	struct arn_h1_msg *m = trl_live(L, 1, NULL);
	size_t nl;
	const char *n = luaL_checklstring(L, 2, &nl);
	lua_Integer k = 0;
	while (trl_find(m, n, nl, (size_t)k) >= 0)
		k++;
	lua_pushinteger(L, k);
	return 1;
}

static void trl_remove(struct arn_h1_msg *m, const char *n, size_t nl)
{
	unsigned o = 0;
	for (unsigned j = 0; j < m->n_trailers; j++)
		if (!eq(m->trailers[j].name, m->trailers[j].name_len, n, nl))
			m->trailers[o++] = m->trailers[j];
	m->n_trailers = (uint16_t)o;
}

/* Bounded as the head's edits (HTTP_LUA_MAX_EDITS a call: the peer's
 * field budget is not spent by a script) and by the message's trailer
 * slots (the head's spare slots or the stream's trailer array) */
static void trl_add(lua_State *L, struct lua_call *c, struct arn_h1_msg *m, const char *n,
		    size_t nl, const char *v, size_t vl)
{
	if (c->n_trl >= HTTP_LUA_MAX_EDITS)
		luaL_error(L, "trailers: more than %d added", HTTP_LUA_MAX_EDITS);
	if (m->n_trailers >= m->trailer_cap)
		luaL_error(L, "trailers: no room for another (%d slots)", (int)m->trailer_cap);
	c->n_trl++;
	const char *kn = keep(L, c, n, nl, true);
	const char *kv = keep(L, c, v, vl, false);
	m->trailers[m->n_trailers++] = (struct arn_h1_header){
	    .name = kn,
	    .value = kv,
	    .value_len = (uint32_t)vl,
	    .name_len = (uint16_t)nl,
	    .id = (uint16_t)arn_h1_hdr_lookup(n, nl),
	};
}

static int t_add(lua_State *L)
{
	struct lua_call *c;
	struct arn_h1_msg *m = trl_live(L, 1, &c);
	size_t nl, vl;
	const char *n = check_name(L, 2, &nl);
	const char *v = check_value(L, 3, &vl);
	trl_add(L, c, m, n, nl, v, vl);
	return 0;
}

/* replace(name, value): the first line's value, the others gone (added
 * when absent) */
static int t_replace(lua_State *L)
{
	struct lua_call *c;
	struct arn_h1_msg *m = trl_live(L, 1, &c);
	size_t nl, vl;
	const char *n = check_name(L, 2, &nl);
	const char *v = check_value(L, 3, &vl);
	int j = trl_find(m, n, nl, 0);
	if (j < 0) {
		trl_add(L, c, m, n, nl, v, vl);
		return 0;
	}
	struct arn_h1_header h = m->trailers[j];
	h.value = keep(L, c, v, vl, false);
	h.value_len = (uint32_t)vl;
	trl_remove(m, n, nl);
	/* back where the first was */
	memmove(&m->trailers[j + 1], &m->trailers[j], (m->n_trailers - (unsigned)j) * sizeof(h));
	m->trailers[j] = h;
	m->n_trailers++;
	return 0;
}

static int t_remove(lua_State *L)
{
	struct arn_h1_msg *m = trl_live(L, 1, NULL);
	size_t nl;
	const char *n = check_name(L, 2, &nl);
	trl_remove(m, n, nl);
	return 0;
}

static int t_next(lua_State *L)
{
	struct arn_h1_msg *m = trl_live(L, lua_upvalueindex(1), NULL);
	lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
	if (pos >= m->n_trailers)
		return 0;
	lua_pushinteger(L, pos + 1);
	lua_replace(L, lua_upvalueindex(2));
	const struct arn_h1_header *h = &m->trailers[pos];
	luaL_Buffer b;
	char *p = luaL_buffinitsize(L, &b, h->name_len);
	for (size_t i = 0; i < h->name_len; i++)
		p[i] =
		    h->name[i] >= 'A' && h->name[i] <= 'Z' ? (char)(h->name[i] + 32) : h->name[i];
	luaL_pushresultsize(&b, h->name_len);
	lua_pushlstring(L, h->value, h->value_len);
	return 2;
}

static int t_pairs(lua_State *L)
{
	trl_live(L, 1, NULL);
	lua_pushvalue(L, 1);
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, t_next, 2);
	return 1;
}

/* ---- stream info, connection --------------------------------------------------------------- */

static void push_addr(lua_State *L, uint32_t a, uint16_t port)
{
	char b[ARN_FMT_IP4_MAX + 8];
	int k = arn_fmt_ip4(a, b);
	k += snprintf(b + k, sizeof(b) - (size_t)k, ":%u", port);
	lua_pushlstring(L, b, (size_t)k);
}

static int i_protocol(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	uint8_t v = c->st->version;
	lua_pushstring(L, v >= 20 ? "HTTP/2" : v == 10 ? "HTTP/1.0" : "HTTP/1.1");
	return 1;
}

static int i_local(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	push_addr(L, c->st->hc->laddr, c->st->hc->lport);
	return 1;
}

static int i_direct_remote(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	push_addr(L, c->st->hc->raddr, c->st->hc->rport);
	return 1;
}

/* the client the connection manager trusts (x-forwarded-for unless
 * use_remote_address): an address from the header has port 0, as Envoy's */
static int i_remote(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	struct http_conn *hc = c->st->hc;
	bool internal;
	uint32_t a = http_client_addr(hc->hcm, &c->st->req.m, hc->raddr, &internal);
	push_addr(L, a, a == hc->raddr ? hc->rport : 0);
	return 1;
}

static int i_sni(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	const struct arn_tls_conn *t = c->st->hc->tls;
	const char *sni =
	    t && t->ssl ? SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name) : NULL;
	lua_pushstring(L, sni ? sni : "");
	return 1;
}

/* ---- dynamic metadata ---------------------------------------------------------------------- */

/*
 * streamInfo():dynamicMetadata(), as Envoy's DynamicMetadataMapWrapper:
 * per stream, every Lua filter's (each has its own state: the values
 * are kept encoded, in C), records of
 *   [u16 filter name length][name][u16 key length][key][value]
 * a value 'z' (nil), 'f' / 't' (booleans), 'n' + a double, 's' + u32
 * length + bytes, 'l' + u32 count + values, 'm' + u32 count + (u16 key
 * length, key, value) each; a set of a (filter, key) there replaces it.
 */
struct lua_md {
	uint32_t len;
	uint8_t b[HTTP_LUA_MD_MAX];
};

struct md_out {
	lua_State *L;
	uint8_t *b;
	uint32_t len;
};

static void md_bytes(struct md_out *o, const void *p, size_t n)
{
	if (n > HTTP_LUA_MD_MAX - o->len)
		luaL_error(o->L, "dynamicMetadata past Arion's bound (%d bytes a stream)",
			   HTTP_LUA_MD_MAX);
	memcpy(o->b + o->len, p, n);
	o->len += (uint32_t)n;
}

static void md_u32(struct md_out *o, uint32_t v)
{
	md_bytes(o, &v, 4);
}

static void md_str(struct md_out *o, const char *p, size_t n, bool u16)
{
	if (u16) {
		if (n > UINT16_MAX)
			luaL_error(o->L, "dynamicMetadata: a name or key of more than %d bytes",
				   UINT16_MAX);
		uint16_t k = (uint16_t)n;
		md_bytes(o, &k, 2);
	} else {
		md_u32(o, (uint32_t)n);
	}
	md_bytes(o, p, n);
}

/* A table's length when it is a list (keys 1..n, Envoy's tableLength),
 * else 0 */
static lua_Integer md_list_len(lua_State *L, int t)
{
	lua_Integer n = 0, max = 0;
	bool list = true;
	lua_pushnil(L);
	while (lua_next(L, t)) {
		lua_pop(L, 1);
		n++;
		if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
			list = false;
		else if (lua_tointeger(L, -1) > max)
			max = lua_tointeger(L, -1);
	}
	return list && max == n ? n : 0;
}

/* The value at the top of the stack, encoded (Envoy's loadValue). */
static void md_value(struct md_out *o, int depth)
{
	lua_State *L = o->L;
	int t = lua_gettop(L);
	switch (lua_type(L, t)) {
	case LUA_TNIL:
		md_bytes(o, "z", 1);
		break;
	case LUA_TBOOLEAN:
		md_bytes(o, lua_toboolean(L, t) ? "t" : "f", 1);
		break;
	case LUA_TNUMBER: {
		double d = lua_tonumber(L, t);
		md_bytes(o, "n", 1);
		md_bytes(o, &d, sizeof(d));
		break;
	}
	case LUA_TSTRING: {
		size_t n;
		const char *p = lua_tolstring(L, t, &n);
		md_bytes(o, "s", 1);
		md_str(o, p, n, false);
		break;
	}
	case LUA_TTABLE: {
		if (depth >= HTTP_LUA_MD_DEPTH)
			luaL_error(L, "dynamicMetadata: tables nested past %d", HTTP_LUA_MD_DEPTH);
		luaL_checkstack(L, 4, "dynamicMetadata");
		lua_Integer n = md_list_len(L, t);
		if (n > 0) {
			md_bytes(o, "l", 1);
			md_u32(o, (uint32_t)n);
			for (lua_Integer i = 1; i <= n; i++) {
				lua_rawgeti(L, t, i);
				md_value(o, depth + 1);
				lua_pop(L, 1);
			}
			break;
		}
		md_bytes(o, "m", 1);
		uint32_t at = o->len, k = 0;
		md_u32(o, 0);
		lua_pushnil(L);
		while (lua_next(L, t)) {
			if (lua_type(L, -2) != LUA_TSTRING)
				luaL_error(L,
					   "unexpected type %s in table key (only string keys are "
					   "supported)",
					   luaL_typename(L, -2));
			size_t kl;
			const char *kp = lua_tolstring(L, -2, &kl);
			md_str(o, kp, kl, true);
			md_value(o, depth + 1);
			lua_pop(L, 1);
			k++;
		}
		memcpy(o->b + at, &k, 4);
		break;
	}
	default:
		luaL_error(L, "unexpected type '%s' in dynamicMetadata", luaL_typename(L, t));
	}
}

static uint32_t md_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t md_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* Push the value at @p p (its end returned). Numbers with an integer
 * value come back as integers: LuaJIT's tostring prints 1, not 1.0. */
static const uint8_t *md_push(lua_State *L, const uint8_t *p)
{
	luaL_checkstack(L, 3, "dynamicMetadata");
	switch (*p++) {
	case 'z':
		lua_pushnil(L);
		return p;
	case 't':
		lua_pushboolean(L, 1);
		return p;
	case 'f':
		lua_pushboolean(L, 0);
		return p;
	case 'n': {
		double d;
		memcpy(&d, p, sizeof(d));
		if (d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == (double)(int64_t)d)
			lua_pushinteger(L, (lua_Integer)d);
		else
			lua_pushnumber(L, d);
		return p + sizeof(d);
	}
	case 's': {
		uint32_t n = md_rd32(p);
		lua_pushlstring(L, (const char *)p + 4, n);
		return p + 4 + n;
	}
	case 'l': {
		uint32_t n = md_rd32(p);
		p += 4;
		lua_createtable(L, (int)n, 0);
		for (uint32_t i = 1; i <= n; i++) {
			p = md_push(L, p);
			lua_rawseti(L, -2, i);
		}
		return p;
	}
	default: { /* 'm' */
		uint32_t n = md_rd32(p);
		p += 4;
		lua_createtable(L, 0, (int)n);
		for (uint32_t i = 0; i < n; i++) {
			uint16_t kl = md_rd16(p);
			lua_pushlstring(L, (const char *)p + 2, kl);
			p = md_push(L, p + 2 + kl);
			lua_rawset(L, -3);
		}
		return p;
	}
	}
}

/* The end of the value at @p p */
static const uint8_t *md_skip(const uint8_t *p)
{
	switch (*p++) {
	case 'n':
		return p + sizeof(double);
	case 's':
		return p + 4 + md_rd32(p);
	case 'l': {
		uint32_t n = md_rd32(p);
		p += 4;
		for (uint32_t i = 0; i < n; i++)
			p = md_skip(p);
		return p;
	}
	case 'm': {
		uint32_t n = md_rd32(p);
		p += 4;
		for (uint32_t i = 0; i < n; i++)
			p = md_skip(p + 2 + md_rd16(p));
		return p;
	}
	default:
		return p;
	}
}

/* A record at @p p: its filter name, key and value; its end returned. */
static const uint8_t *md_rec(const uint8_t *p, const char **f, uint16_t *fl, const char **k,
			     uint16_t *kl, const uint8_t **v)
{
	*fl = md_rd16(p);
	*f = (const char *)p + 2;
	p += 2 + *fl;
	*kl = md_rd16(p);
	*k = (const char *)p + 2;
	*v = p + 2 + *kl;
	return md_skip(*v);
}

static struct lua_md *md_of(const struct lua_call *c)
{
	return c->st->res->lua_md;
}

/* Push filter @p f's table (every key of it, in the order set). */
static bool md_table(lua_State *L, const struct lua_md *md, const char *f, size_t fl)
{
	bool any = false;
	for (const uint8_t *p = md ? md->b : NULL; p && p < md->b + md->len;) {
		const char *rf, *rk;
		uint16_t rfl, rkl;
		const uint8_t *v;
		p = md_rec(p, &rf, &rfl, &rk, &rkl, &v);
		if (rfl != fl || memcmp(rf, f, fl) != 0)
			continue;
		if (!any)
			lua_newtable(L);
		any = true;
		lua_pushlstring(L, rk, rkl);
		md_push(L, v);
		lua_rawset(L, -3);
	}
	return any;
}

static int i_dynmd(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_INFO);
	new_obj(L, c, MT_DYNMD);
	return 1;
}

/* get(filterName): that filter's table, or nothing */
static int d_get(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_DYNMD);
	size_t fl;
	const char *f = luaL_checklstring(L, 2, &fl);
	return md_table(L, md_of(c), f, fl) ? 1 : 0;
}

/* set(filterName, key, value) */
static int d_set(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_DYNMD);
	size_t fl, kl;
	const char *f = luaL_checklstring(L, 2, &fl);
	const char *k = luaL_checklstring(L, 3, &kl);
	lua_settop(L, 4);
	struct lua_md *md = md_of(c);
	if (!md) {
		md = calloc(1, sizeof(*md));
		if (!md)
			return luaL_error(L, "dynamicMetadata: no memory");
		c->st->res->lua_md = md;
	}
	/* the new record encoded first (an error leaves the old ones) */
	uint8_t tmp[HTTP_LUA_MD_MAX];
	struct md_out o = {.L = L, .b = tmp};
	md_str(&o, f, fl, true);
	md_str(&o, k, kl, true);
	md_value(&o, 0);
	/* the old (filter, key) record out */
	for (uint8_t *p = md->b; p < md->b + md->len;) {
		const char *rf, *rk;
		uint16_t rfl, rkl;
		const uint8_t *v;
		uint8_t *e = (uint8_t *)md_rec(p, &rf, &rfl, &rk, &rkl, &v);
		if (rfl == fl && rkl == kl && !memcmp(rf, f, fl) && !memcmp(rk, k, kl)) {
			memmove(p, e, (size_t)(md->b + md->len - e));
			md->len -= (uint32_t)(e - p);
			break;
		}
		p = e;
	}
	if (o.len > HTTP_LUA_MD_MAX - md->len)
		return luaL_error(L, "dynamicMetadata past Arion's bound (%d bytes a stream)",
				  HTTP_LUA_MD_MAX);
	memcpy(md->b + md->len, tmp, o.len);
	md->len += o.len;
	return 0;
}

/* pairs(): each filter's name and table, in the order first set (a
 * position in upvalue 2) */
static int d_next(lua_State *L)
{
	struct lua_call *c = live(L, lua_upvalueindex(1), MT_DYNMD);
	const struct lua_md *md = md_of(c);
	lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
	while (md && pos < md->len) {
		const char *rf, *rk;
		uint16_t rfl, rkl;
		const uint8_t *v;
		const uint8_t *e = md_rec(md->b + pos, &rf, &rfl, &rk, &rkl, &v);
		lua_Integer at = pos;
		pos = e - md->b;
		/* a name seen before: its table went then */
		bool seen = false;
		for (const uint8_t *p = md->b; p < md->b + at && !seen;) {
			const char *f2, *k2;
			uint16_t fl2, kl2;
			const uint8_t *v2;
			p = md_rec(p, &f2, &fl2, &k2, &kl2, &v2);
			seen = fl2 == rfl && !memcmp(f2, rf, rfl);
		}
		if (seen)
			continue;
		lua_pushinteger(L, pos);
		lua_replace(L, lua_upvalueindex(2));
		lua_pushlstring(L, rf, rfl);
		md_table(L, md, rf, rfl);
		return 2;
	}
	return 0;
}

static int d_pairs(lua_State *L)
{
	live(L, 1, MT_DYNMD);
	lua_pushvalue(L, 1);
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, d_next, 2);
	return 1;
}

/* ---- the route's metadata ------------------------------------------------------------------ */

/* metadata(): the route's filter_metadata under the filter's name, else
 * under envoy.filters.http.lua (Envoy's getMetadata), as records of the
 * route's encoded metadata (arn_lua.h); *fl 0 when the route has none */
static const char *meta_name(lua_State *L, const struct lua_call *c, size_t *fl)
{
	const struct arn_cfg_route *r = c->route;
	*fl = 0;
	if (!r || !r->lua_md_len)
		return NULL;
	if (r->lua_md_len == UINT32_MAX)
		luaL_error(L, "metadata(): the route's metadata is past Arion's bound (%d bytes)",
			   (int)ARN_LUA_ROUTE_MD_MAX);
	const struct arn_cfg_hcm *h = c->st->hc->hcm;
	const char *names[2] = {h && h->http_filter_names ? h->http_filter_names[c->fi] : NULL,
				"envoy.filters.http.lua"};
	for (int k = 0; k < 2; k++) {
		if (!names[k])
			continue;
		size_t nl = strlen(names[k]);
		for (const uint8_t *p = r->lua_md; p < r->lua_md + r->lua_md_len;) {
			const char *rf, *rk;
			uint16_t rfl, rkl;
			const uint8_t *v;
			p = md_rec(p, &rf, &rfl, &rk, &rkl, &v);
			if (rfl == nl && memcmp(rf, names[k], nl) == 0) {
				*fl = nl;
				return names[k];
			}
		}
	}
	return NULL;
}

static int s_metadata(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	new_obj(L, c, MT_META);
	return 1;
}

/* get(key): the value, or nothing */
static int m_get(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_META);
	size_t kl, fl;
	const char *k = luaL_checklstring(L, 2, &kl);
	const char *f = meta_name(L, c, &fl);
	const struct arn_cfg_route *r = c->route;
	for (const uint8_t *p = f ? r->lua_md : NULL; p && p < r->lua_md + r->lua_md_len;) {
		const char *rf, *rk;
		uint16_t rfl, rkl;
		const uint8_t *v;
		p = md_rec(p, &rf, &rfl, &rk, &rkl, &v);
		if (rfl == fl && rkl == kl && !memcmp(rf, f, fl) && !memcmp(rk, k, kl)) {
			md_push(L, v);
			return 1;
		}
	}
	return 0;
}

/* pairs(): its keys and values (a position in upvalue 2) */
static int m_next(lua_State *L)
{
	struct lua_call *c = live(L, lua_upvalueindex(1), MT_META);
	size_t fl;
	const char *f = meta_name(L, c, &fl);
	const struct arn_cfg_route *r = c->route;
	lua_Integer pos = lua_tointeger(L, lua_upvalueindex(2));
	while (f && pos < r->lua_md_len) {
		const char *rf, *rk;
		uint16_t rfl, rkl;
		const uint8_t *v;
		const uint8_t *e = md_rec(r->lua_md + pos, &rf, &rfl, &rk, &rkl, &v);
		pos = e - r->lua_md;
		if (rfl != fl || memcmp(rf, f, fl) != 0)
			continue;
		lua_pushinteger(L, pos);
		lua_replace(L, lua_upvalueindex(2));
		lua_pushlstring(L, rk, rkl);
		md_push(L, v);
		return 2;
	}
	return 0;
}

static int m_pairs(lua_State *L)
{
	live(L, 1, MT_META);
	lua_pushvalue(L, 1);
	lua_pushinteger(L, 0);
	lua_pushcclosure(L, m_next, 2);
	return 1;
}

static int c_ssl(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_CONN);
	if (!c->st->hc->tls) {
		lua_pushnil(L);
		return 1;
	}
	new_obj(L, c, MT_SSL);
	return 1;
}

static SSL *ssl_of(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_SSL);
	return c->st->hc->tls ? c->st->hc->tls->ssl : NULL;
}

static int t_presented(lua_State *L)
{
	SSL *s = ssl_of(L);
	lua_pushboolean(L, s && SSL_get0_peer_certificate(s) != NULL);
	return 1;
}

static int t_validated(lua_State *L)
{
	SSL *s = ssl_of(L);
	lua_pushboolean(L, s && SSL_get0_peer_certificate(s) != NULL &&
			       SSL_get_verify_result(s) == X509_V_OK);
	return 1;
}

static int t_version(lua_State *L)
{
	SSL *s = ssl_of(L);
	lua_pushstring(L, s ? SSL_get_version(s) : "");
	return 1;
}

static int t_cipher(lua_State *L)
{
	SSL *s = ssl_of(L);
	const SSL_CIPHER *ci = s ? SSL_get_current_cipher(s) : NULL;
	lua_pushstring(L, ci ? SSL_CIPHER_get_name(ci) : "");
	return 1;
}

/* A metatable whose __index holds @p fns, and stubs naming @p nb, Envoy's
 * methods Arion does not build. */
static void type_new(lua_State *L, const char *mt, const luaL_Reg *fns, const char *const *nb)
{
	luaL_newmetatable(L, mt);
	lua_newtable(L);
	luaL_setfuncs(L, fns, 0);
	for (; nb && *nb; nb++) {
		lua_pushstring(L, *nb);
		lua_pushcclosure(L, not_built, 1);
		lua_setfield(L, -2, *nb);
	}
	lua_setfield(L, -2, "__index");
	lua_pushstring(L, "locked");
	lua_setfield(L, -2, "__metatable");
}

/* ---- httpCall() ---------------------------------------------------------------------------- */

static void run_resumed(struct http_stream *st, struct lua_call *w);
static void resp_call_resumed(struct http_stream *st, struct lua_resp *lr);
static bool run_k(struct lua_call *c, size_t i, lua_CFunction fn);
static int resume_k(lua_State *L);
static void count(struct http_stream *st, size_t i, unsigned id);

static void hcall_free(struct lua_hcall *k)
{
	http_timer_cancel(&k->over_t);
	free(k->hd);
	free(k->body);
	free(k->req);
	free(k);
}

/* The stream's calls that are over leave its list. @return how many are
 * in flight. */
static unsigned hcall_reap(struct http_stream *st)
{
	unsigned n = 0;
	struct lua_hcall **pp = (struct lua_hcall **)&st->res->lua_calls;
	while (*pp) {
		struct lua_hcall *k = *pp;
		if (k->over && !k->in_cb) {
			*pp = k->next;
			hcall_free(k);
			continue;
		}
		n += !k->over;
		pp = &k->next;
	}
	return n;
}

/* The answer as Envoy's onSuccess gives it: a table of the head's lines
 * (:status first, one value per name: the last), the body or nil; a
 * failure is 503 "upstream failure" (onFailure's), a timeout the router's
 * 504 "upstream request timeout". On @p L, two values. */
static void push_answer(lua_State *L, const struct lua_hcall *k)
{
	lua_createtable(L, 0, 4);
	if (!k || k->timed_out || k->failed || k->overflow) {
		bool t = k && k->timed_out;
		lua_pushstring(L, t ? "504" : "503");
		lua_setfield(L, -2, ":status");
		if (t) {
			lua_pushstring(L, "24");
			lua_setfield(L, -2, "content-length");
			lua_pushstring(L, "text/plain");
			lua_setfield(L, -2, "content-type");
		}
		lua_pushstring(L, t ? "upstream request timeout" : "upstream failure");
		return;
	}
	lua_pushfstring(L, "%d", (int)k->status);
	lua_setfield(L, -2, ":status");
	for (size_t o = 0; k->hd && o < k->hd_len;) {
		uint16_t nl;
		uint32_t vl;
		memcpy(&nl, k->hd + o, 2);
		memcpy(&vl, k->hd + o + 2, 4);
		o += 6;
		lua_pushlstring(L, k->hd + o, nl);
		lua_pushlstring(L, k->hd + o + nl, vl);
		lua_settable(L, -3);
		o += nl + (size_t)vl;
	}
	if (k->blen)
		lua_pushlstring(L, k->body, k->blen);
	else
		lua_pushnil(L);
}

static void hc_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct lua_hcall *k = OWNER(sr, struct lua_hcall, sr);
	k->status = m->status;
	if (!k->sync || k->hd)
		return; /* an asynchronous call's answer is dropped (Envoy's) */
	size_t n = 0;
	for (unsigned j = 0; j < m->n_hdrs; j++)
		n += 6 + m->hdrs[j].name_len + m->hdrs[j].value_len;
	if (!n || !(k->hd = malloc(n))) {
		k->failed = n != 0; /* without memory: as a failure */
		return;
	}
	for (unsigned j = 0; j < m->n_hdrs; j++) {
		const struct arn_h1_header *h = &m->hdrs[j];
		uint16_t nl = (uint16_t)h->name_len;
		uint32_t vl = (uint32_t)h->value_len;
		char *p = k->hd + k->hd_len;
		memcpy(p, &nl, 2);
		memcpy(p + 2, &vl, 4);
		for (uint16_t b = 0; b < nl; b++) /* names lower case, as Envoy's */
			p[6 + b] = (char)((h->name[b] >= 'A' && h->name[b] <= 'Z') ? h->name[b] + 32
										   : h->name[b]);
		memcpy(p + 6 + nl, h->value, vl);
		k->hd_len += 6 + (size_t)nl + vl;
	}
}

static void hc_over(struct lua_hcall *k);

/* The answer passed HTTP_LUA_CALL_BODY_MAX (hc_body reset it): the call
 * is over, a script waiting for it goes on with 503. */
static void hc_overflow(struct http_timer *t)
{
	hc_over(OWNER(t, struct lua_hcall, over_t));
}

static void hc_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct lua_hcall *k = OWNER(sr, struct lua_hcall, sr);
	if (!k->sync || k->overflow || k->failed)
		return;
	if ((uint64_t)k->blen + len > http_lua_call_body_max) {
		/* Envoy's AsyncRequestSharedImpl::onData past its buffer
		 * limit: the rest is not read, the stream is reset and the
		 * script gets onFailure's 503 (ExceedResponseBufferLimit), now,
		 * not once the answer ended or timed out. The connection goes
		 * at once; the script is resumed from the worker's timers, as
		 * the decode that called this reads the sub-request after it */
		k->overflow = true;
		free(k->body);
		k->body = NULL;
		k->blen = k->bcap = 0;
		http_subreq_cancel(&k->sr);
		k->over_t.fn = hc_overflow;
		http_timer_arm(k->st->hc->w, &k->over_t, 1);
		return;
	}
	if (k->blen + len > k->bcap) {
		size_t cap = k->bcap ? k->bcap * 2 : 4096;
		while (cap < k->blen + len)
			cap *= 2;
		if (cap > http_lua_call_body_max)
			cap = http_lua_call_body_max;
		char *b = realloc(k->body, cap);
		if (!b) {
			k->failed = true;
			return;
		}
		k->body = b;
		k->bcap = cap;
	}
	memcpy(k->body + k->blen, data, len);
	k->blen += len;
}

/* The call is over: a script waiting for it goes on with its answer. */
static void hc_over(struct lua_hcall *k)
{
	k->over = true;
	struct http_stream *st = k->st;
	if (k->failed || k->timed_out || k->overflow)
		count(st, k->fi, ARN_LUA_http_call_failed);
	if (!k->sync)
		return;
	k->sync = false;
	/* a request's script waits, or a response's (its head held) */
	struct lua_call *w = st->res->lua_wait;
	struct lua_resp *lr = st->res->lua_resp;
	bool resp = (!w || w->call != k) && lr && lr->w && lr->w->call == k;
	if (resp)
		w = lr->w;
	if (!w || w->call != k || (st->state & HTTP_S_LOCAL))
		return; /* the stream moved on (a reply): the coroutine goes with it */
	struct http_conn *hc = st->hc;
	k->in_cb = true;
	w->call = NULL;
	w->answer = k;
	w->rk = RK_ANSWER;
	run_k(w, w->fi, resume_k);
	w->answer = NULL;
	if (resp)
		resp_call_resumed(st, lr);
	else
		run_resumed(st, w);
	k->in_cb = false;
	if (!k->st)
		hcall_free(k); /* the stream ended inside: its last use */
	else {
		free(k->hd);
		free(k->body);
		k->hd = k->body = NULL;
	}
	http_conn_run(hc);
}

static void hc_end(struct http_subreq *sr)
{
	hc_over(OWNER(sr, struct lua_hcall, sr));
}

static void hc_failed(struct http_subreq *sr, const char *why)
{
	struct lua_hcall *k = OWNER(sr, struct lua_hcall, sr);
	if (strncmp(why, "timed out", 9) == 0)
		k->timed_out = true;
	else
		k->failed = true;
	hc_over(k);
}

static const struct http_subreq_ops hc_ops = {
    .on_head = hc_head,
    .on_body = hc_body,
    .on_end = hc_end,
    .on_failed = hc_failed,
};

/* The stream ends: its calls are cancelled and freed (one whose callback
 * is running frees itself when it returns). */
static void calls_end(struct http_stream *st)
{
	struct lua_hcall *k = st->res->lua_calls;
	st->res->lua_calls = NULL;
	while (k) {
		struct lua_hcall *nx = k->next;
		if (k->in_cb) {
			k->st = NULL;
		} else {
			http_subreq_cancel(&k->sr);
			hcall_free(k);
		}
		k = nx;
	}
}

/* The table's headers (at @p t) for a call: measured (@p out NULL) or
 * copied into @p out (lower-case names), @p hv filled (@p nh of them),
 * :method, :path and :authority into @p ps (@p have: which were there).
 * @return the bytes. Script errors as Envoy's and for what Arion makes
 * itself (framing, Host). */
static size_t hc_headers(lua_State *L, int t, struct http_subreq_header *hv, unsigned *nh,
			 char *out, struct arn_h1_slice *ps, unsigned *have)
{
	size_t used = 0;
	unsigned n = 0;
	lua_pushnil(L);
	while (lua_next(L, t) != 0) {
		if (lua_type(L, -2) != LUA_TSTRING)
			luaL_error(L, "http call header names must be strings");
		size_t nl;
		const char *name = lua_tolstring(L, -2, &nl);
		int pi = -1;
		if (nl && name[0] == ':') {
			static const char *const pn[] = {":method", ":path", ":authority"};
			for (int j = 0; j < 3; j++)
				if (strlen(pn[j]) == nl && memcmp(pn[j], name, nl) == 0)
					pi = j;
			bool scheme = nl == 7 && memcmp(name, ":scheme", 7) == 0;
			if (pi < 0 && !scheme)
				luaL_error(L, "http call header '%s' is not supported by Arion",
					   name);
			if (scheme) { /* the cluster's transport says it */
				lua_pop(L, 1);
				continue;
			}
		} else {
			check_name(L, -2, &nl);
		}
		/* a value, or a table of values (one line each) */
		bool many = lua_istable(L, -1);
		lua_Integer vi = 0;
		for (;;) {
			int vidx = -1;
			if (many) {
				lua_rawgeti(L, -1, ++vi);
				if (lua_isnil(L, -1)) {
					lua_pop(L, 1);
					break;
				}
			}
			if (lua_type(L, vidx) != LUA_TSTRING && lua_type(L, vidx) != LUA_TNUMBER)
				luaL_error(L, "http call header '%s' must have string values",
					   name);
			size_t vl;
			const char *v = lua_tolstring(L, vidx, &vl);
			for (size_t b = 0; b < vl; b++)
				if (v[b] == '\r' || v[b] == '\n' || v[b] == 0)
					luaL_error(L, "invalid header value");
			if (pi >= 0) {
				*have |= 1u << pi;
				if (out) {
					memcpy(out + used, v, vl);
					ps[pi] = (struct arn_h1_slice){out + used, vl};
				}
				used += vl;
			} else {
				if (n == HTTP_SUBREQ_MAX_HDRS)
					luaL_error(
					    L,
					    "http call headers: more than %d are not supported "
					    "by Arion",
					    HTTP_SUBREQ_MAX_HDRS);
				if (out) {
					char *p = out + used;
					for (size_t b = 0; b < nl; b++)
						p[b] = (char)((name[b] >= 'A' && name[b] <= 'Z')
								  ? name[b] + 32
								  : name[b]);
					memcpy(p + nl, v, vl);
					hv[n] = (struct http_subreq_header){p, p + nl, nl, vl};
				}
				n++;
				used += nl + vl;
			}
			if (many)
				lua_pop(L, 1);
			else
				break;
		}
		lua_pop(L, 1);
	}
	*nh = n;
	return used;
}

/* httpCall(cluster, headers, body, timeout_ms[, asynchronous]) or
 * httpCall(cluster, headers, body, {timeout_ms = , asynchronous = }), as
 * Envoy's: the synchronous form waits (the coroutine yields) for the
 * answer's headers and body; the asynchronous form returns at once and
 * its answer is dropped. On requests, and on responses (the head held
 * meanwhile, as Envoy's encodeHeaders StopIteration until onSuccess's
 * continueEncoding). */
static int s_http_call(lua_State *L)
{
	struct lua_call *c = live(L, 1, MT_HANDLE);
	struct http_stream *st = c->st;
	if (c->head_gone)
		return luaL_error(L, "httpCall() after bodyChunks() or trailers() is not supported "
				     "by Arion");
	if (c->resp && (st->state & HTTP_S_ENC_BODY))
		/* the body is read whole first (ext_proc BUFFERED, a body()) */
		return luaL_error(L, "httpCall() in envoy_on_response after the response's body "
				     "was taken is not supported by Arion");
	size_t cl;
	const char *cluster = luaL_checklstring(L, 2, &cl);
	luaL_checktype(L, 3, LUA_TTABLE);
	size_t blen = 0;
	const char *body = luaL_optlstring(L, 4, NULL, &blen);
	lua_Integer tmo = 0;
	bool async = false;
	if (lua_istable(L, 5)) {
		lua_pushnil(L);
		while (lua_next(L, 5) != 0) {
			if (lua_type(L, -2) != LUA_TSTRING)
				return luaL_error(L, "httpCall() options keys must be strings");
			const char *o = lua_tostring(L, -2);
			if (strcmp(o, "asynchronous") == 0) {
				async = lua_toboolean(L, -1);
			} else if (strcmp(o, "timeout_ms") == 0) {
				if (!lua_isinteger(L, -1))
					return luaL_error(L,
							  "'timeout_ms' option must be an integer");
				tmo = lua_tointeger(L, -1);
				if (tmo < 0)
					return luaL_error(L, "http call timeout must be >= 0");
			} else if (strcmp(o, "trace_sampled") == 0 || strcmp(o, "send_xff") == 0 ||
				   strcmp(o, "return_duplicate_headers") == 0) {
				return luaL_error(
				    L, "httpCall() option \"%s\" is not supported by Arion", o);
			} else {
				return luaL_error(
				    L, "\"%s\" is not valid key for httpCall() options", o);
			}
			lua_pop(L, 1);
		}
	} else {
		if (!lua_isnone(L, 6) && !lua_isboolean(L, 6))
			return luaL_error(
			    L, "http call asynchronous flag must be 'true', 'false', or empty");
		tmo = luaL_checkinteger(L, 5);
		if (tmo < 0)
			return luaL_error(L, "http call timeout must be >= 0");
		async = lua_toboolean(L, 6);
	}
	struct http_worker *w = st->hc->w;
	const struct arn_cfg_gen *g = w->gen_slot ? arn_config_gen_at(w->gen_slot) : NULL;
	struct arn_cfg_ref ref = {.name = cluster, .len = cl, .hash = arn_cfg_hash(cluster, cl)};
	struct arn_cfg_cluster_view v;
	if (!g || arn_cfg_cluster_resolve(g, &ref, &v) != 0)
		return luaL_error(L, "http call cluster invalid. Must be configured");
	/* measured, then copied into a block of the state's (a script error
	 * leaks nothing), then into the call's own memory: no Lua call
	 * once that is taken */
	struct http_subreq_header hv[HTTP_SUBREQ_MAX_HDRS];
	unsigned nh = 0, have = 0;
	size_t hb = hc_headers(L, 3, hv, &nh, NULL, NULL, &have);
	if (have != 7u)
		return luaL_error(L, "http call headers must include ':path', ':method', and "
				     "':authority'");
	if (hcall_reap(st) >= http_lua_calls_max) {
		count(st, c->fi, ARN_LUA_http_call_refused);
		return luaL_error(L,
				  "httpCall(): %d calls in flight on this stream, the most "
				  "Arion allows",
				  (int)http_lua_calls_max);
	}
	size_t total = cl + hb + blen;
	char *ud = lua_newuserdatauv(L, total ? total : 1, 0);
	struct arn_h1_slice ps[3];
	have = 0;
	hc_headers(L, 3, hv, &nh, ud + cl, ps, &have);
	memcpy(ud, cluster, cl);
	if (blen)
		memcpy(ud + cl + hb, body, blen);
	struct lua_hcall *k = calloc(1, sizeof(*k));
	char *req = k ? malloc(total ? total : 1) : NULL;
	if (!req) {
		free(k);
		return luaL_error(L, "httpCall(): no memory");
	}
	memcpy(req, ud, total);
	lua_pop(L, 1);
#define MOVED(p) (req + ((const char *)(p)-ud))
	k->req = req;
	k->cluster = (struct arn_cfg_ref){.name = req, .len = cl, .hash = ref.hash};
	k->n = nh;
	for (unsigned j = 0; j < nh; j++)
		k->h[j] = (struct http_subreq_header){MOVED(hv[j].name), MOVED(hv[j].value),
						      hv[j].name_len, hv[j].value_len};
	k->sr.method_name = (struct arn_h1_slice){MOVED(ps[0].p), ps[0].len};
	k->sr.method = (uint8_t)arn_h1_method_lookup(ps[0].p, ps[0].len);
	k->sr.host = MOVED(ps[2].p);
	k->sr.host_len = ps[2].len;
	/* no body: no content-length, as Envoy's (the script's method stays) */
	k->sr.get = body == NULL;
	k->st = st;
	k->fi = c->fi;
	k->sync = !async;
	int rc = http_subreq_start(&k->sr, st->hc, g, &k->cluster, MOVED(ps[1].p), ps[1].len, k->h,
				   k->n, body ? req + cl + hb : NULL, blen,
				   tmo > UINT32_MAX ? UINT32_MAX : (uint32_t)tmo, &hc_ops, k);
#undef MOVED
	if (rc != 0) {
		hcall_free(k);
		if (rc == -ENOENT)
			return luaL_error(L, "http call cluster invalid. Must be configured");
		/* Envoy's immediate failure: 503 at once (none asynchronously) */
		count(st, c->fi, ARN_LUA_http_call_failed);
		if (async)
			return 0;
		push_answer(L, NULL);
		return 2;
	}
	k->next = st->res->lua_calls;
	st->res->lua_calls = k;
	if (async)
		return 0;
	c->call = k;
	return lua_yield(L, 0);
}

/* In protected mode: the types. */
static int types_k(lua_State *L)
{
	static const luaL_Reg handle[] = {{"headers", s_headers},
					  {"respond", s_respond},
					  {"streamInfo", s_stream_info},
					  {"connection", s_connection},
					  {"base64Escape", s_base64},
					  {"timestamp", s_timestamp},
					  {"timestampString", s_timestamp_string},
					  {"body", s_body},
					  {"metadata", s_metadata},
					  {"httpCall", s_http_call},
					  {"bodyChunks", s_body_chunks},
					  {"trailers", s_trailers},
					  {NULL, NULL}};
	static const char *const handle_nb[] = {
	    "filterContext", "importPublicKey", "verifySignature",	"clearRouteCache",
	    "route",	     "virtualHost",	"connectionStreamInfo", NULL};
	type_new(L, MT_HANDLE, handle, handle_nb);
	/* log*(): Envoy's levels, Arion's log */
	static const char *const logs[] = {"logTrace", "logDebug", "logInfo",
					   "logWarn",  "logErr",   "logCritical"};
	static const int lv[] = {ARN_LOG_TRACE, ARN_LOG_DEBUG, ARN_LOG_INFO,
				 ARN_LOG_WARN,	ARN_LOG_ERROR, ARN_LOG_CRITICAL};
	luaL_getmetatable(L, MT_HANDLE);
	lua_getfield(L, -1, "__index");
	for (size_t k = 0; k < sizeof(logs) / sizeof(logs[0]); k++) {
		lua_pushinteger(L, lv[k]);
		lua_pushcclosure(L, s_log, 1);
		lua_setfield(L, -2, logs[k]);
	}
	lua_pop(L, 2);
	static const luaL_Reg headers[] = {
	    {"get", h_get}, {"getAtIndex", h_get_at}, {"getNumValues", h_num},
	    {"add", h_add}, {"replace", h_replace},   {"remove", h_remove},
	    {NULL, NULL}};
	static const char *const headers_nb[] = {"setHttp1ReasonPhrase", NULL};
	type_new(L, MT_HEADERS, headers, headers_nb);
	lua_pushcfunction(L, h_pairs);
	lua_setfield(L, -2, "__pairs");
	lua_pop(L, 1);
	static const luaL_Reg info[] = {{"protocol", i_protocol},
					{"downstreamLocalAddress", i_local},
					{"downstreamDirectRemoteAddress", i_direct_remote},
					{"downstreamRemoteAddress", i_remote},
					{"requestedServerName", i_sni},
					{"dynamicMetadata", i_dynmd},
					{NULL, NULL}};
	static const char *const info_nb[] = {"filterState", "downstreamSslConnection", "routeName",
					      "virtualClusterName", NULL};
	type_new(L, MT_INFO, info, info_nb);
	lua_pop(L, 1);
	static const luaL_Reg dynmd[] = {{"get", d_get}, {"set", d_set}, {NULL, NULL}};
	type_new(L, MT_DYNMD, dynmd, NULL);
	lua_pushcfunction(L, d_pairs);
	lua_setfield(L, -2, "__pairs");
	lua_pop(L, 1);
	static const luaL_Reg meta[] = {{"get", m_get}, {NULL, NULL}};
	type_new(L, MT_META, meta, NULL);
	lua_pushcfunction(L, m_pairs);
	lua_setfield(L, -2, "__pairs");
	lua_pop(L, 1);
	static const luaL_Reg conn[] = {{"ssl", c_ssl}, {NULL, NULL}};
	type_new(L, MT_CONN, conn, NULL);
	lua_pop(L, 1);
	static const luaL_Reg ssl[] = {{"peerCertificatePresented", t_presented},
				       {"peerCertificateValidated", t_validated},
				       {"tlsVersion", t_version},
				       {"ciphersuiteString", t_cipher},
				       {NULL, NULL}};
	static const char *const ssl_nb[] = {"uriSanLocalCertificate",
					     "sha256PeerCertificateDigest",
					     "serialNumberPeerCertificate",
					     "issuerPeerCertificate",
					     "subjectPeerCertificate",
					     "uriSanPeerCertificate",
					     "subjectLocalCertificate",
					     "dnsSansPeerCertificate",
					     "dnsSansLocalCertificate",
					     "validFromPeerCertificate",
					     "expirationPeerCertificate",
					     "sessionId",
					     "ciphersuiteId",
					     "urlEncodedPemEncodedPeerCertificate",
					     "urlEncodedPemEncodedPeerCertificateChain",
					     "parsedSubjectPeerCertificate",
					     NULL};
	type_new(L, MT_SSL, ssl, ssl_nb);
	lua_pop(L, 1);
	static const luaL_Reg buffer[] = {
	    {"length", b_length}, {"getBytes", b_get}, {"setBytes", b_set}, {NULL, NULL}};
	static const char *const buffer_nb[] = {NULL};
	type_new(L, MT_BUFFER, buffer, buffer_nb);
	lua_pop(L, 1);
	static const luaL_Reg chunk[] = {
	    {"length", k_length}, {"getBytes", k_get}, {"setBytes", k_set}, {NULL, NULL}};
	type_new(L, MT_CHUNK, chunk, NULL);
	lua_pop(L, 1);
	static const luaL_Reg trailers[] = {
	    {"get", t_get}, {"getAtIndex", t_get_at}, {"getNumValues", t_num},
	    {"add", t_add}, {"replace", t_replace},   {"remove", t_remove},
	    {NULL, NULL}};
	type_new(L, MT_TRAILERS, trailers, NULL);
	lua_pushcfunction(L, t_pairs);
	lua_setfield(L, -2, "__pairs");
	lua_pop(L, 1);
	/* EnvoyTimestampResolution, as Envoy's initializer */
	lua_newtable(L);
	lua_pushinteger(L, 0);
	lua_setfield(L, -2, "MILLISECOND");
	lua_pushinteger(L, 1);
	lua_setfield(L, -2, "MICROSECOND");
	lua_setglobal(L, "EnvoyTimestampResolution");
	return 0;
}

/* ---- workers ------------------------------------------------------------------------------- */

static void count(struct http_stream *st, size_t i, unsigned id)
{
	struct http_hcm_rt *r = st->hc->hrt;
	if (r && i < HTTP_MAX_FILTER_STATS && r->fstats[i])
		arn_stats_inc(r->fstats[i], st->hc->w->slot, id);
}

/* A state for script @p s (of filter @p i), its types and its chunk
 * loaded; one that failed (failed set, the reason logged and counted) is
 * kept so that it is not made again. NULL without memory. */
static struct http_lua_vm *vm_make(struct http_stream *st, size_t i,
				   const struct arn_cfg_lua_script *s)
{
	struct http_lua_vm *vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	vm->L = arn_lua_new(&vm->mem);
	char err[256];
	if (!vm->L) {
		snprintf(err, sizeof(err), "no memory for a state");
	} else {
		lua_pushcfunction(vm->L, types_k);
		if (lua_pcall(vm->L, 0, 0, 0) != LUA_OK) {
			snprintf(err, sizeof(err), "no memory for its types");
			lua_pop(vm->L, 1);
		} else if (arn_lua_load(vm->L, s->code, s->len, s->name, &vm->ref_req,
					&vm->ref_resp, err, sizeof(err)) == 0) {
			return vm;
		}
	}
	/* conversion ran it, so only the worker's own memory fails here */
	vm->failed = true;
	count(st, i, ARN_LUA_state_failed);
	ARN_ERR(HTTP, "lua: script '%s' cannot run on this worker: %s", s->name, err);
	return vm;
}

/* A route script's state from the worker's cache (@p t's), made now if
 * it has none: the least recently used one closed for it when full. */
static struct http_lua_vm *route_vm(struct http_stream *st, size_t i, struct http_lua_frt *t,
				    unsigned slot, const struct arn_cfg_lua_script *s)
{
	struct http_lua_rcache *rc = t->rc[slot];
	if (!rc && !(rc = t->rc[slot] = calloc(1, sizeof(*rc))))
		return NULL;
	unsigned k, old = 0;
	bool any = false;
	for (k = 0; k < HTTP_LUA_ROUTE_STATES; k++) {
		if (rc->uid[k] == s->uid && rc->vm[k])
			break;
		/* a state a waiting call holds is not closed */
		if (rc->vm[k] && rc->vm[k]->pins)
			continue;
		if (!any || rc->used[k] < rc->used[old])
			old = k;
		any = true;
	}
	if (k == HTTP_LUA_ROUTE_STATES) {
		if (!any)
			return NULL;
		k = old;
		http_lua_vm_free(rc->vm[k]);
		rc->uid[k] = s->uid;
		rc->vm[k] = vm_make(st, i, s);
	}
	rc->used[k] = ++rc->tick;
	return rc->vm[k] && !rc->vm[k]->failed ? rc->vm[k] : NULL;
}

/* The worker's state for script @p s of filter @p i, made now if it is
 * the first request that needs it; NULL when it cannot be. */
static struct http_lua_vm *vm_get(struct http_stream *st, size_t i,
				  const struct arn_cfg_lua_script *s)
{
	struct http_hcm_rt *r = st->hc->hrt;
	struct http_lua_frt *t = r && i < HTTP_MAX_FILTER_STATS ? r->lua[i] : NULL;
	unsigned slot = st->hc->w->slot;
	if (!t || slot >= SLOTS)
		return NULL;
	if (s->uid)
		return route_vm(st, i, t, slot, s);
	if (s->idx >= t->cfg->n_scripts)
		return NULL;
	struct http_lua_vm **pv = &t->vms[(size_t)slot * t->cfg->n_scripts + s->idx];
	if (!*pv)
		*pv = vm_make(st, i, s);
	return *pv && !(*pv)->failed ? *pv : NULL;
}

/* In protected mode (on the state's main thread): the call's coroutine. */
static int call_k(lua_State *L)
{
	struct lua_call *c = lua_touserdata(L, 1);
	struct http_lua_vm *vm = c->vm;
	lua_State *co = lua_newthread(L);
	arn_lua_arm(co, &vm->mem);
	lua_rawgeti(co, LUA_REGISTRYINDEX, c->resp ? vm->ref_resp : vm->ref_req);
	new_obj(co, c, MT_HANDLE);
	int nres;
	int rc = lua_resume(co, L, 1, &nres);
	if (rc == LUA_YIELD && c->responded) {
		/* the body is a string on the coroutine's stack: answer now */
		http_local_reply(c->st, c->status, c->body, c->blen, 0, "lua_response", c->reply,
				 c->n_reply);
		return 0;
	}
	if (rc == LUA_YIELD && (c->want_body || c->call || c->wait) && c->co_ref == LUA_NOREF) {
		/* body(), httpCall(), bodyChunks(), trailers(): the coroutine
		 * is kept until the body is whole, the answer came, the next
		 * slice or the end */
		lua_pushvalue(L, 2);
		c->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
		return 0;
	}
	if (rc == LUA_YIELD)
		return luaL_error(L, "script performed an unexpected yield");
	if (rc != LUA_OK) {
		lua_xmove(co, L, 1);
		return lua_error(L);
	}
	return 0;
}

/* In protected mode: the coroutine that waited for the body goes on,
 * body() returning the buffer. */
static int resume_k(lua_State *L)
{
	struct lua_call *c = lua_touserdata(L, 1);
	struct http_lua_vm *vm = c->vm;
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->co_ref);
	lua_State *co = lua_tothread(L, -1);
	if (!co)
		return luaL_error(L, "the coroutine is gone");
	arn_lua_arm(co, &vm->mem);
	int nargs = 1;
	c->wait = LW_NONE;
	c->yield_body = false;
	if (c->answer) { /* httpCall()'s answer: made here, moved over */
		push_answer(L, c->answer);
		lua_xmove(L, co, 2);
		nargs = 2;
	} else if (c->rk == RK_CHUNK) {
		struct lua_cobj *o = lua_newuserdatauv(co, sizeof(*o), 0);
		o->serial = c->serial;
		o->no = c->chunk_no;
		luaL_setmetatable(co, MT_CHUNK);
	} else if (c->rk == RK_NIL || (c->rk == RK_TRAILERS && !trl_any(trl_msg(c)))) {
		nargs = 0;
	} else {
		new_obj(co, c, c->rk == RK_TRAILERS ? MT_TRAILERS : MT_BUFFER);
	}
	int nres;
	int rc = lua_resume(co, L, nargs, &nres);
	if (rc == LUA_YIELD && c->responded) {
		http_local_reply(c->st, c->status, c->body, c->blen, 0, "lua_response", c->reply,
				 c->n_reply);
		return 0;
	}
	if (rc == LUA_YIELD && (c->call || c->wait || c->yield_body))
		return 0; /* another httpCall(), the next chunk, the body: it waits again */
	if (rc == LUA_YIELD)
		return luaL_error(L, "script performed an unexpected yield");
	if (rc != LUA_OK) {
		lua_xmove(co, L, 1);
		return lua_error(L);
	}
	return 0;
}

/* Run the script's function for @p c (@p fn: call_k, or resume_k for a
 * call that waited). @return false on a script error (logged, counted). */
static bool run_k(struct lua_call *c, size_t i, lua_CFunction fn)
{
	struct http_lua_vm *vm = c->vm;
	lua_State *L = vm->L;
	if (vm->cur)
		return false; /* never re-entered (a reply made from a call) */
	uint64_t refused = vm->mem.refused;
	if (fn == call_k)
		c->serial = ++vm->serial;
	vm->cur = c;
	lua_pushcfunction(L, fn);
	lua_pushlightuserdata(L, c);
	int rc = lua_pcall(L, 1, 0, 0);
	vm->cur = NULL;
	if (rc == LUA_OK)
		return true;
	/* the error object as it is: no __tostring of the script's runs here */
	const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
	/* a client can make a script fail on every request: its state logs
	 * its 1st, 2nd, 4th, 8th, ... error, each line with the count */
	uint64_t k = ++vm->n_errors;
	if ((k & (k - 1)) == 0)
		ARN_ERR(HTTP, "lua: script log: %.*s (error %llu of this worker's state)",
			HTTP_LUA_LOG_MAX, msg ? msg : "(an error object that is not a string)",
			(unsigned long long)k);
	lua_pop(L, 1);
	count(c->st, i, ARN_LUA_errors);
	if (vm->mem.over)
		count(c->st, i, ARN_LUA_instructions_exhausted);
	if (vm->mem.refused != refused)
		count(c->st, i, ARN_LUA_memory_exhausted);
	if (c->overflow)
		count(c->st, i, ARN_LUA_edits_overflow);
	return false;
}

static bool run(struct lua_call *c, size_t i)
{
	return run_k(c, i, call_k);
}

/* The edits a call made: the names removed, then the lines added. */
static unsigned emit(const struct lua_call *c, struct arn_h1_edit *e)
{
	unsigned n = 0;
	for (unsigned k = 0; k < c->n_rm; k++)
		e[n++] = (struct arn_h1_edit){
		    .name = c->rm[k], .name_len = c->rm_len[k], .op = ARN_H1_EDIT_REMOVE};
	for (unsigned k = 0; k < c->n_adds; k++)
		if (c->adds[k].live)
			e[n++] = (struct arn_h1_edit){.name = c->adds[k].n,
						      .name_len = c->adds[k].nl,
						      .value = c->adds[k].v,
						      .value_len = c->adds[k].vl,
						      .op = ARN_H1_EDIT_ADD};
	return n;
}

/* The script of filter @p i for route (@p vh, @p r): a LuaPerRoute's name
 * (none in source_codes: none, as Envoy), else the filter's default. */
static const struct arn_cfg_lua_script *script_for(const struct arn_cfg_hcm *h, size_t i,
						   const struct arn_cfg_lua *f,
						   const struct arn_cfg_vhost *vh,
						   const struct arn_cfg_route *r)
{
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	if (name && (vh || r)) {
		const struct arn_cfg_lua_route *pr =
		    arn_cfg_per_filter_find(vh, r, name, strlen(name), ARN_CFG_PF_LUA);
		if (pr)
			return pr->script ? pr->script
					  : arn_cfg_lua_find(f, pr->name, pr->name_len);
	}
	return f->dflt;
}

/* The call's request edits kept for the upstream request. @return false
 * when they did not fit (answered 500: never the request without them). */
static bool keep_edits(struct http_stream *st, size_t i, const struct lua_call *c)
{
	struct arn_h1_edit e[HTTP_LUA_MAX_EDITS];
	unsigned n = emit(c, e);
	if (n && http_req_edits_keep(st, e, n) < 0) {
		count(st, i, ARN_LUA_edits_overflow);
		HTTP_INC(st->hc, rq_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
		return false;
	}
	return true;
}

/* The state's hold on a waiting call's coroutine goes. */
static void let_go(struct lua_call *c)
{
	luaL_unref(c->vm->L, LUA_REGISTRYINDEX, c->co_ref);
	c->co_ref = LUA_NOREF;
	c->vm->pins--;
}

/* body(): the call waits, the head held (HTTP_S_MCP) while the body is
 * read into the stream's kept body. @return true (the walk stops), or
 * the call goes on as if the script had failed there without memory. */
/* Is a request body a script waits for past HTTP_LUA_BODY_MAX by its
 * content-length? Then too_large answers 413 before a byte of it is read
 * (as the buffer filter's). */
static bool past_bound(const struct http_stream *st)
{
	const struct arn_h1_msg *m = &st->req.m;
	return (m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > HTTP_LUA_BODY_MAX;
}

static void too_large(struct http_stream *st)
{
	HTTP_INC(st->hc, downstream_rq_too_large);
	http_local_reply(st, 413, "Payload Too Large", 17, 0, "request_payload_too_large", NULL, 0);
}

static bool wait_body(struct http_stream *st, size_t i, struct lua_call *c)
{
	c->vm->pins++;
	if (past_bound(st)) {
		let_go(c);
		too_large(st);
		return true;
	}
	struct lua_call *w = malloc(sizeof(*w));
	if (!w) {
		let_go(c);
		count(st, i, ARN_LUA_errors);
		return !keep_edits(st, i, c);
	}
	*w = *c;
	st->res->lua_wait = w;
	st->res->lua_from = (uint8_t)(i + 1);
	st->res->lua_reading = true;
	st->state |= HTTP_S_MCP;
	return true;
}

/* httpCall(): the call waits for its answer (hc_over resumes it), the
 * head held as the walk stopped here. @return true (the walk stops), or
 * the call goes on as if the script had failed there without memory. */
static bool wait_call(struct http_stream *st, size_t i, struct lua_call *c)
{
	c->vm->pins++;
	struct lua_call *w = malloc(sizeof(*w));
	if (!w) {
		c->call->sync = false; /* its answer is dropped */
		let_go(c);
		count(st, i, ARN_LUA_errors);
		return !keep_edits(st, i, c);
	}
	*w = *c;
	st->res->lua_wait = w;
	st->res->lua_from = (uint8_t)(i + 1);
	return true;
}

/* bodyChunks(), trailers() on a request: the call waits for the body's
 * slices (http_lua_xform: the connection manager's decode_xform, st->req_xf
 * the Lua filter's home), the walk going on with the edits it made. No
 * memory: the call ends there, as a script error. */
static void req_stream(struct http_stream *st, size_t i, struct lua_call *c)
{
	c->vm->pins++;
	struct lua_call *w = malloc(sizeof(*w));
	if (!w) {
		let_go(c);
		count(st, i, ARN_LUA_errors);
		return;
	}
	*w = *c;
	w->head_gone = true;
	st->res->lua_chunks = w;
	st->req_xf = xf_index();
}

/* The call streaming a body (request's or response's) is resumed with a
 * slice (@p data, @p len) or the end (@p end: nil, or the trailers to the
 * trailers() waiting); its hold let go once it ended. @return whether it
 * still waits. */
static bool stream_resume(struct lua_call *w, const char **data, size_t *len, bool end)
{
	if (end) {
		w->ended = true;
		w->rk = w->wait == LW_TRAILERS ? RK_TRAILERS : RK_NIL;
	} else {
		w->chunk = *data;
		w->chunk_len = *len;
		w->chunk_no++;
		w->rk = RK_CHUNK;
	}
	bool ok = run_k(w, w->fi, resume_k);
	if (!end) {
		/* the chunk, or what setBytes() made of it (k_set) */
		*data = w->chunk;
		*len = w->chunk_len;
	}
	w->chunk = NULL;
	w->chunk_len = 0;
	if (ok && w->wait && !end)
		return true;
	let_go(w);
	free(w);
	return false;
}

long http_lua_xform(struct http_stream *st, char *data, size_t len, bool end, const char **out)
{
	const char *o = data; /* a slice passes as it came, or as setBytes() made it */
	struct lua_call *w = st->res ? st->res->lua_chunks : NULL;
	if (w && (end || w->wait == LW_CHUNK) && !stream_resume(w, &o, &len, end))
		st->res->lua_chunks = NULL;
	*out = o;
	return (long)len;
}

bool http_lua_streaming(const struct http_stream *st)
{
	return st->res && st->res->lua_chunks;
}

bool http_lua_reading(const struct http_stream *st)
{
	return st->res && st->res->lua_reading;
}

static void reading_over(struct http_stream *st)
{
	st->res->lua_reading = false;
	st->state &= ~HTTP_S_MCP;
}

static void wait_free(struct http_stream *st)
{
	struct lua_call *w = st->res->lua_wait;
	if (!w)
		return;
	if (w->co_ref != LUA_NOREF)
		let_go(w);
	free(w);
	st->res->lua_wait = NULL;
}

bool http_lua_body(struct http_stream *st, const char *data, size_t len)
{
	if ((uint64_t)X(st)->rb_bytes + len > HTTP_LUA_BODY_MAX) {
		reading_over(st);
		wait_free(st);
		too_large(st);
		return false;
	}
	if (!http_rb_keep(st, data, len, HTTP_LUA_BODY_MAX)) {
		/* the worker's bound on kept bodies (HTTP_RB_WORKER_SEGS) */
		reading_over(st);
		wait_free(st);
		HTTP_INC(st->hc, rq_buffer_overflow);
		http_local_reply(st, 503, NULL, 0, 0, "request_buffer_overflow", NULL, 0);
		return false;
	}
	return true;
}

void http_lua_body_end(struct http_stream *st)
{
	reading_over(st);
	struct lua_call *w = st->res->lua_wait;
	if (!w)
		return;
	w->rk = RK_BODY;
	run_k(w, w->fi, resume_k);
	run_resumed(st, w);
}

/* The waiting call @p w ran again (its body came, or its httpCall()'s
 * answer): it answered, waits for another call, or the walk goes on
 * with its body (if it read it) and its edits. */
static void run_resumed(struct http_stream *st, struct lua_call *w)
{
	if (w->responded) {
		wait_free(st);
		return;
	}
	if (w->call)
		return;
	if (w->yield_body) {
		/* body() after its httpCall(): the head still held, the body
		 * read now (none was while the call ran) */
		if (past_bound(st)) {
			wait_free(st);
			too_large(st);
			return;
		}
		st->res->lua_reading = true;
		st->state |= HTTP_S_MCP;
		return;
	}
	if (w->wait) {
		/* bodyChunks() or trailers() after its httpCall(): the head
		 * goes on with the edits, the slices to the script as they
		 * pass (as req_stream) */
		if (!keep_edits(st, w->fi, w)) {
			wait_free(st);
			return;
		}
		st->res->lua_wait = NULL;
		w->head_gone = true;
		st->res->lua_chunks = w;
		st->req_xf = xf_index();
		st->hc->ops->resume_head(st, &http_l4_filter_ops);
		return;
	}
	if (!w->want_body)
		goto edits;
	if (w->body_lost) {
		/* setBytes() found no room: never a part of a body upstream */
		size_t fi = w->fi;
		wait_free(st);
		count(st, fi, ARN_LUA_body_overflow);
		http_local_reply(st, 503, NULL, 0, 0, "request_buffer_overflow", NULL, 0);
		return;
	}
	/* setBytes(): content-length the new length (Envoy's), the head's
	 * own replaced by the framing's SET */
	if (w->body_set)
		st->req.m.flags &= ~ARN_H1_F_CONTENT_LENGTH;
	/* whole: framed by its length, it goes first once the router has an
	 * upstream (as the buffer filter's) */
	int rc = http_rb_frame_kept(st);
	if (rc != 0) {
		wait_free(st);
		if (rc == -ENOSPC)
			HTTP_INC(st->hc, rq_edit_overflow);
		http_local_reply(
		    st, 500, NULL, 0, 0,
		    rc == -ENOSPC ? "header_edits_overflow" : "request_length_mismatch", NULL, 0);
		return;
	}
	http_rb_send_first(st);
edits:;
	size_t i = w->fi;
	bool ok = keep_edits(st, i, w);
	wait_free(st);
	if (!ok)
		return;
	st->hc->ops->resume_head(st, &http_l4_filter_ops);
}

size_t http_lua_resume_at(const struct http_stream *st)
{
	return st->res ? st->res->lua_from : 0;
}

static void resp_free(struct http_stream *st)
{
	struct lua_resp *lr = st->res->lua_resp;
	if (!lr)
		return;
	if (lr->w) {
		if (lr->w->co_ref != LUA_NOREF)
			let_go(lr->w);
		free(lr->w);
	}
	if (lr->sw) {
		let_go(lr->sw);
		free(lr->sw);
	}
	resp_free_body(st, lr);
	free(lr->text);
	free(lr);
	st->res->lua_resp = NULL;
}

void http_lua_stream_end(struct http_stream *st)
{
	if (!st->res)
		return;
	calls_end(st);
	wait_free(st);
	struct lua_call *sw = st->res->lua_chunks;
	if (sw) {
		let_go(sw);
		free(sw);
		st->res->lua_chunks = NULL;
	}
	resp_free(st);
	free(st->res->lua_md);
	st->res->lua_md = NULL;
	if (st->res->lua_out) { /* (a test, not a call, on every stream's end) */
		free(st->res->lua_out);
		st->res->lua_out = NULL;
	}
	st->res->lua_from = 0;
	st->res->lua_reading = false;
}

bool http_lua_step(struct http_stream *st, size_t i, const struct arn_cfg_lua *f,
		   const struct arn_cfg_route_match *mt)
{
	const struct arn_cfg_lua_script *s =
	    script_for(st->hc->hcm, i, f, mt ? mt->vhost : NULL, mt ? mt->route : NULL);
	if (!s || !s->on_request || !st->res || st->req.m.n_hdrs > HTTP_MAX_HDRS)
		return false;
	struct http_lua_vm *vm = vm_get(st, i, s);
	if (!vm || vm->ref_req == LUA_NOREF)
		return false;
	struct lua_call c;
	c.st = st;
	c.vm = vm;
	c.m = &st->req.m;
	c.resp = false;
	c.n_rm = c.n_adds = c.n_reply = 0;
	c.overflow = c.responded = c.want_body = c.yield_body = c.body_set = c.body_lost = false;
	c.co_ref = LUA_NOREF;
	c.call = c.answer = NULL;
	c.wait = c.rk = 0;
	c.head_gone = c.streamed = c.whole_given = c.ended = false;
	c.chunk = NULL;
	c.chunk_len = 0;
	c.chunk_no = 0;
	c.n_trl = 0;
	c.fi = i;
	c.route = mt ? mt->route : NULL;
	memset(c.gone, 0, sizeof(bool) * st->req.m.n_hdrs);
	run(&c, i);
	if (c.responded)
		return true;
	if (c.want_body && c.co_ref != LUA_NOREF)
		return wait_body(st, i, &c);
	if (c.call && c.co_ref != LUA_NOREF)
		return wait_call(st, i, &c);
	if (c.wait && c.co_ref != LUA_NOREF)
		req_stream(st, i, &c); /* the head goes on, its slices to the script */
	struct arn_h1_edit e[HTTP_LUA_MAX_EDITS];
	unsigned n = emit(&c, e);
	if (n && http_req_edits_keep(st, e, n) < 0) {
		/* never the request upstream without its edits */
		count(st, i, ARN_LUA_edits_overflow);
		HTTP_INC(st->hc, rq_edit_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "header_edits_overflow", NULL, 0);
		return true;
	}
	return false;
}

/* Is filter @p i off for the stream's route (HttpFilter.disabled,
 * FilterConfig, LuaPerRoute disabled)? */
static bool lua_off(const struct http_stream *st, const struct arn_cfg_hcm *h, size_t i)
{
	bool dflt = h->http_filter_off && h->http_filter_off[i];
	const char *name = h->http_filter_names ? h->http_filter_names[i] : NULL;
	if (!name || (!st->vhost && !st->route))
		return dflt;
	return arn_cfg_filter_off(st->vhost, st->route, name, strlen(name), dflt);
}

/* @p n bytes @p p onto the response's kept body, in whole mbufs within
 * the worker's kept bodies (HTTP_RB_WORKER_SEGS, shared with the request
 * bodies') and HTTP_LUA_BODY_MAX. @return false when a bound says no. */
static bool resp_keep(struct http_stream *st, struct lua_resp *lr, const char *p, size_t n)
{
	if ((uint64_t)lr->bytes + n > HTTP_LUA_BODY_MAX)
		return false;
	return http_rb_chain_append(st->hc->w, &lr->head, &lr->tail, &lr->segs, &lr->bytes, p, n);
}

static void resp_free_body(struct http_stream *st, struct lua_resp *lr)
{
	http_rb_chain_free(st->hc->w, lr->head, lr->segs);
	lr->head = lr->tail = NULL;
	lr->bytes = lr->segs = 0;
}

/* The call @p c (filter @p i) waits for the response's body: the filter
 * takes it, the edits e[0..n) of the calls before kept. @return -EAGAIN;
 * -ECANCELED (a content-length past the bound: answered 500); or 0 (no
 * memory: the call ends there, as a script error). */
static int resp_wait(struct http_stream *st, size_t i, struct lua_call *c,
		     const struct arn_h1_edit *e, unsigned n)
{
	c->vm->pins++;
	const struct arn_h1_msg *m = &st->resp.m;
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > HTTP_LUA_BODY_MAX) {
		/* Envoy's encoder buffer limit, the head not sent: 500, before
		 * a byte of it is read */
		let_go(c);
		HTTP_INC(st->hc, rs_too_large);
		http_local_reply(st, 500, NULL, 0, 0, "response_payload_too_large", NULL, 0);
		return -ECANCELED;
	}
	/* (one a script's httpCall() made before) */
	struct lua_resp *had = st->res->lua_resp;
	struct lua_resp *lr = had ? had : calloc(1, sizeof(*lr));
	struct lua_call *w = malloc(sizeof(*w));
	if (!lr || !w) {
		if (!had)
			free(lr);
		free(w);
		let_go(c);
		count(st, i, ARN_LUA_errors);
		return 0;
	}
	*w = *c;
	memmove(lr->e, e, n * sizeof(*e));
	lr->n = n;
	lr->w = w;
	lr->fi = i;
	st->res->lua_resp = lr;
	st->enc = &lua_enc_ops;
	st->enc_state = lr;
	st->state |= HTTP_S_ENC_BODY;
	return -EAGAIN;
}

/* bodyChunks(), trailers() on a response: the filter takes the body
 * (HTTP_S_ENC_BODY) to hand each slice to the call before it goes to the
 * client as it came (lua_enc_body), the head going now with the edits
 * made. No memory: the call ends there, as a script error. */
static void resp_stream(struct http_stream *st, size_t i, struct lua_call *c)
{
	c->vm->pins++;
	struct lua_resp *had = st->res->lua_resp;
	struct lua_resp *lr = had ? had : calloc(1, sizeof(*lr));
	struct lua_call *w = malloc(sizeof(*w));
	if (!lr || !w) {
		if (!had)
			free(lr);
		free(w);
		let_go(c);
		count(st, i, ARN_LUA_errors);
		return;
	}
	*w = *c;
	w->head_gone = true;
	lr->sw = w;
	lr->fi = i;
	lr->streaming = true;
	st->res->lua_resp = lr;
	st->enc = &lua_enc_ops;
	st->enc_state = lr;
	st->state |= HTTP_S_ENC_BODY;
}

/* The strings of lr's edits and of its waiting call's, moved into a
 * block of lr's own (lr->text, the one before freed): the connection
 * manager gives back the stream text a pass over the response head took
 * when a filter holds the head (http_hcm.c's write_resp_head), and the
 * scripts' strings were taken there. Bounded by the edits' own bounds
 * (HTTP_LUA_RESP_EDITS, HTTP_LUA_MAX_EDITS, HTTP_TEXT). @return false
 * without memory. */
static bool resp_pack(struct lua_resp *lr, struct lua_call *w)
{
	size_t need = 1;
	for (unsigned k = 0; k < lr->n; k++)
		need += lr->e[k].name_len + (size_t)lr->e[k].value_len;
	for (unsigned k = 0; k < w->n_rm; k++)
		need += w->rm_len[k];
	for (unsigned k = 0; k < w->n_adds; k++)
		need += w->adds[k].nl + (size_t)w->adds[k].vl;
	char *b = malloc(need), *p = b;
	if (!b)
		return false;
#define PACK(ptr, len)                                                                             \
	do {                                                                                       \
		if (len) {                                                                         \
			memcpy(p, (ptr), (len));                                                   \
			(ptr) = p;                                                                 \
			p += (len);                                                                \
		}                                                                                  \
	} while (0)
	for (unsigned k = 0; k < lr->n; k++) {
		PACK(lr->e[k].name, lr->e[k].name_len);
		PACK(lr->e[k].value, lr->e[k].value_len);
	}
	for (unsigned k = 0; k < w->n_rm; k++)
		PACK(w->rm[k], w->rm_len[k]);
	for (unsigned k = 0; k < w->n_adds; k++) {
		PACK(w->adds[k].n, w->adds[k].nl);
		PACK(w->adds[k].v, w->adds[k].vl);
	}
#undef PACK
	free(lr->text);
	lr->text = b;
	return true;
}

/* The call @p c (filter @p i) waits for its httpCall()'s answer (hc_over
 * resumes it: resp_call_resumed), the head held (http_filter.h's
 * -EINPROGRESS), the edits e[0..n) of the calls before kept. @return
 * -EINPROGRESS; or 0 (no memory: the call ends there, as a script error,
 * its answer dropped). */
static int resp_wait_call(struct http_stream *st, size_t i, struct lua_call *c,
			  const struct arn_h1_edit *e, unsigned n)
{
	c->vm->pins++;
	struct lua_resp *had = st->res->lua_resp;
	struct lua_resp *lr = had ? had : calloc(1, sizeof(*lr));
	struct lua_call *w = malloc(sizeof(*w));
	if (lr && w) {
		*w = *c;
		memmove(lr->e, e, n * sizeof(*e));
		lr->n = n;
		if (resp_pack(lr, w)) {
			lr->w = w;
			lr->fi = i;
			lr->calling = true;
			st->res->lua_resp = lr;
			return -EINPROGRESS;
		}
	}
	if (!had)
		free(lr);
	free(w);
	c->call->sync = false; /* its answer is dropped */
	let_go(c);
	count(st, i, ARN_LUA_errors);
	return 0;
}

/* A response's script that waited for its httpCall()'s answer ran on
 * (hc_over): waiting for another, or over; then its edits are kept and
 * the head asked for again (http_hcm_resume_resp_head), the Lua filters
 * after it running then (http_lua_resp_edits). */
static void resp_call_resumed(struct http_stream *st, struct lua_resp *lr)
{
	struct lua_call *w = lr->w;
	if (w->call) {
		/* another httpCall(): the strings it made since are in the
		 * stream's text, which no pass takes back while the head is
		 * held */
		return;
	}
	size_t i = w->fi;
	lr->calling = false;
	if (w->yield_body) {
		/* body() after its httpCall() (Envoy's luaBody yields when no
		 * body came, and Arion read none while the head was held): the
		 * body is taken when the head is asked again, as resp_wait's */
		const struct arn_h1_msg *m = &st->resp.m;
		if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > HTTP_LUA_BODY_MAX) {
			let_go(w);
			free(w);
			lr->w = NULL;
			HTTP_INC(st->hc, rs_too_large);
			http_local_reply(st, 500, NULL, 0, 0, "response_payload_too_large", NULL,
					 0);
			return;
		}
		lr->take = true;
		st->hc->ops->resume_resp_head(st);
		return;
	}
	bool room = lr->n + w->n_rm + w->n_adds <= HTTP_LUA_RESP_EDITS - 1;
	if (room)
		lr->n += emit(w, lr->e + lr->n);
	lr->w = NULL;
	if (room && w->wait) {
		/* bodyChunks() or trailers() after its httpCall(): the head
		 * goes with the edits, the slices to the script as they pass
		 * (resp_stream's) */
		w->head_gone = true;
		lr->sw = w;
		lr->streaming = true;
		lr->take = true;
		lr->from = i + 1;
		st->hc->ops->resume_resp_head(st);
		return;
	}
	let_go(w);
	free(w);
	if (!room) {
		/* as the connection manager's own (http_hcm.c) */
		HTTP_INC(st->hc, rs_edit_overflow);
		http_local_reply(st, 502, NULL, 0, 0, "response_edits_overflow", NULL, 0);
		return;
	}
	lr->from = i + 1;
	st->hc->ops->resume_resp_head(st);
}

/* The response scripts of the Lua filters from @p from on, their edits
 * after e[0..n) (at most @p cap). @return how many in all, -ENOSPC, or
 * resp_wait's -EAGAIN / -ECANCELED. */
static int resp_run(struct http_stream *st, size_t from, struct arn_h1_edit *e, unsigned cap,
		    unsigned n)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	for (size_t i = from; i < h->n_http_filters; i++) {
		if (h->http_filters[i] != ARN_CFG_HF_LUA || !h->http_filter_cfgs ||
		    !h->http_filter_cfgs[i] || lua_off(st, h, i))
			continue;
		const struct arn_cfg_lua_script *s =
		    script_for(h, i, h->http_filter_cfgs[i], st->vhost, st->route);
		if (!s || !s->on_response)
			continue;
		struct http_lua_vm *vm = vm_get(st, i, s);
		if (!vm || vm->ref_resp == LUA_NOREF)
			continue;
		struct lua_call c;
		c.st = st;
		c.vm = vm;
		c.m = &st->resp.m;
		c.resp = true;
		c.n_rm = c.n_adds = c.n_reply = 0;
		c.overflow = c.responded = c.want_body = c.yield_body = c.body_set = c.body_lost =
		    false;
		c.co_ref = LUA_NOREF;
		c.call = c.answer = NULL;
		c.wait = c.rk = 0;
		c.head_gone = c.streamed = c.whole_given = c.ended = false;
		c.chunk = NULL;
		c.chunk_len = 0;
		c.chunk_no = 0;
		c.n_trl = 0;
		c.fi = i;
		c.route = st->route;
		memset(c.gone, 0, sizeof(bool) * st->resp.m.n_hdrs);
		run(&c, i);
		if (c.want_body && c.co_ref != LUA_NOREF) {
			int rc = resp_wait(st, i, &c, e, n);
			if (rc < 0)
				return rc;
		}
		if (c.call && c.co_ref != LUA_NOREF) {
			int rc = resp_wait_call(st, i, &c, e, n);
			if (rc < 0)
				return rc;
		}
		if (c.wait && c.co_ref != LUA_NOREF)
			resp_stream(st, i, &c);
		if (n + c.n_rm + c.n_adds > cap)
			return -ENOSPC;
		n += emit(&c, e + n);
	}
	return (int)n;
}

int http_lua_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap)
{
	const struct arn_cfg_hcm *h = st->hc->hcm;
	/* a local reply has no parsed head (or replaced the upstream's):
	 * Arion runs no script on it; nor on a 1xx (Envoy's
	 * encode1xxHeaders runs no Lua) */
	if (!h || (st->state & HTTP_S_LOCAL) || st->resp.m.status < 200 || !st->res ||
	    st->resp.m.n_hdrs > HTTP_MAX_HDRS)
		return 0;
	struct lua_resp *lr = st->res->lua_resp;
	if (lr && lr->calling)
		return -EINPROGRESS; /* a script waits for its httpCall() */
	if (lr && lr->take) {
		/* a script waits for the body since its httpCall() */
		lr->take = false;
		st->enc = &lua_enc_ops;
		st->enc_state = lr;
		st->state |= HTTP_S_ENC_BODY;
		if (!lr->streaming)
			return -EAGAIN;
	}
	if (lr && lr->from) {
		/* asked again (http_hcm_resume_resp_head) once a script's
		 * httpCall() was answered: the Lua filters after it run */
		size_t from = lr->from;
		lr->from = 0;
		if (lr->n > cap)
			return -ENOSPC;
		memcpy(e, lr->e, lr->n * sizeof(*e));
		int n = resp_run(st, from, e, cap, lr->n);
		if (n >= 0 && (unsigned)n <= HTTP_LUA_RESP_EDITS) {
			memcpy(lr->e, e, (size_t)n * sizeof(*e));
			lr->n = (unsigned)n;
			lr->done = true; /* asked again: these */
		}
		return n;
	}
	if (lr) {
		/* asked again (http_hcm_write_head) once the body was read
		 * and the scripts ran */
		if (!lr->done)
			return -EAGAIN;
		if (lr->n > cap)
			return -ENOSPC;
		memcpy(e, lr->e, lr->n * sizeof(*e));
		return (int)lr->n;
	}
	int n = resp_run(st, 0, e, cap, 0);
	lr = st->res->lua_resp;
	if (n >= 0 && lr && lr->streaming && (unsigned)n <= HTTP_LUA_RESP_EDITS) {
		/* the head goes now (its body streams): asked again, these */
		memcpy(lr->e, e, (size_t)n * sizeof(*e));
		lr->n = (unsigned)n;
		lr->done = true;
	}
	return n;
}

/* The head (the filters' edits, the scripts' among them) and the kept
 * body go to the client. Once. */
static bool resp_write(struct http_stream *st, struct lua_resp *lr)
{
	if (lr->written)
		return true;
	lr->written = true;
	st->hc->ops->write_head(st);
	if ((st->state & HTTP_S_LOCAL) || !(st->state & HTTP_S_RESP_STARTED))
		return true;
	struct http_peer *dn = st->hc->dn;
	for (struct rte_mbuf *m = lr->head; m; m = m->next) {
		/* by reference: the mbufs stay until the stream ends */
		st->tx_body += m->data_len;
		dn->codec->encode_body(dn, rte_pktmbuf_mtod(m, const char *), m->data_len);
	}
	return true;
}

/* The body is whole: the waiting call goes on (body() returning the
 * buffer), then the Lua filters after it; the head and body go out. */
static bool resp_body_end(struct http_stream *st, struct lua_resp *lr)
{
	/* the end comes again while the client's output drains */
	if (lr->done)
		return resp_write(st, lr);
	struct lua_call *w = lr->w;
	if (!w)
		return false;
	lr->whole = true;
	size_t i = w->fi;
	w->rk = RK_BODY;
	run_k(w, i, resume_k);
	int n = (int)lr->n;
	if (lr->n + w->n_rm + w->n_adds > HTTP_LUA_RESP_EDITS - 1)
		n = -ENOSPC;
	else
		n += (int)emit(w, lr->e + lr->n);
	let_go(w);
	free(w);
	lr->w = NULL;
	if (n >= 0 && !lr->lost)
		n = resp_run(st, i + 1, lr->e, HTTP_LUA_RESP_EDITS - 1, (unsigned)n);
	if (lr->lost) {
		/* setBytes() found no room: never a part of a body */
		count(st, i, ARN_LUA_body_overflow);
		http_local_reply(st, 500, NULL, 0, 0, "response_buffer_overflow", NULL, 0);
		return false;
	}
	struct arn_h1_msg *m = &st->resp.m;
	if (n >= 0 && lr->len_set && (m->flags & ARN_H1_F_CONTENT_LENGTH)) {
		/* setBytes(): content-length the new length (a chunked
		 * response stays chunked: Arion's codec frames it) */
		char num[12];
		int k = snprintf(num, sizeof(num), "%u", lr->bytes);
		char *v = http_st_text(st, (size_t)k);
		if (!v) {
			n = -ENOSPC;
		} else {
			memcpy(v, num, (size_t)k);
			lr->e[n++] = (struct arn_h1_edit){.name = "content-length",
							  .name_len = 14,
							  .value = v,
							  .value_len = (uint32_t)k,
							  .op = ARN_H1_EDIT_SET};
			m->content_length = lr->bytes;
		}
	}
	if (n < 0) {
		/* as the connection manager's own (http_hcm.c) */
		HTTP_INC(st->hc, rs_edit_overflow);
		http_local_reply(st, 502, NULL, 0, 0, "response_edits_overflow", NULL, 0);
		return false;
	}
	lr->n = (unsigned)n;
	lr->done = true;
	return resp_write(st, lr);
}

/* The response's body, kept whole (http_filter.h's encode_body): at its
 * end the scripts go on and the response goes out. */
static bool lua_enc_body(struct http_stream *st, const char *data, size_t len, bool end)
{
	struct lua_resp *lr = st->enc_state;
	if (st->state & HTTP_S_LOCAL)
		return false;
	if (lr->streaming) {
		/* bodyChunks(), trailers(): the slice to the script, then on
		 * to the client as it came */
		if (lr->sw && (end || lr->sw->wait == LW_CHUNK) &&
		    !stream_resume(lr->sw, &data, &len, end))
			lr->sw = NULL;
		if (len) {
			st->tx_body += len;
			st->hc->dn->codec->encode_body(st->hc->dn, data, len);
		}
		return true;
	}
	if (end)
		return resp_body_end(st, lr);
	if (resp_keep(st, lr, data, len))
		return true;
	/* Envoy's encoder buffer limit, the head not sent: 500; the
	 * worker's kept bodies full: 500 too */
	bool big = (uint64_t)lr->bytes + len > HTTP_LUA_BODY_MAX;
	if (big)
		HTTP_INC(st->hc, rs_too_large);
	else
		count(st, lr->fi, ARN_LUA_body_overflow);
	if (lr->w) {
		let_go(lr->w);
		free(lr->w);
		lr->w = NULL;
	}
	http_local_reply(st, 500, NULL, 0, 0,
			 big ? "response_payload_too_large" : "response_buffer_overflow", NULL, 0);
	return false;
}

static bool lua_enc_more(struct http_stream *st)
{
	struct lua_resp *lr = st->enc_state;
	if (lr->streaming)
		return !(st->state & HTTP_S_LOCAL); /* (never behind: nothing kept) */
	if ((st->state & HTTP_S_LOCAL) || !lr->done)
		return false;
	return resp_write(st, lr);
}

/* Not in the filter table: st->enc of a response whose body a script
 * reads (resp_wait) */
static const struct http_filter_ops lua_enc_ops = {
    .name = "lua",
    .encode_body = lua_enc_body,
    .encode_more = lua_enc_more,
};
