/*
 * The MCP gateway filter on a stream (http_mcp.h): the head decides
 * whether and how the gateway answers (lib/mcp's arn_mcp_classify, the
 * ToolSet, the body's size), the body goes through lib/mcp's reader as it
 * arrives (nothing is copied or kept here), and the request's end
 * dispatches each message and answers. Sessions are this worker's
 * (arn_mcp_sessions): a request naming another worker's session is
 * handed to that worker whole and its answer comes back ("between
 * workers" below); requests with no client stream here (those, and
 * DELETEs to backend sessions nobody holds any more) are detached ones
 * (struct mcp_bg).
 *
 * What the head's slices say is copied here at the head (the session id,
 * MCP-Protocol-Version, the headers access rules match on): the codec
 * keeps a head's input only until the head is handled, and the body may
 * be long.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rte_ring.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_mcp.h"
#include "arn_tls.h"
#include "http_filter.h"
#include "http_local.h"
#include "http_mcp.h"
#include "http_mcp_tools.h"
#include "http_stream.h"
#include "http_int.h"
#include "http_l4.h"
#include "http_subreq.h"

/* A streamed answer that the backend keeps quiet on gets a comment line
 * this often, so that the client, proxies on the way and the stream's own
 * stream_idle_timeout see it alive. */
#define MCP_PING_MS 15000u

static void ping_fire(struct http_timer *t);

/* Request headers an access rule's principals may match, copied per
 * request (the rest of the head is gone by the body's end). */
#define MCP_PRINCIPAL_HDRS 16
/* The verified client certificate's SANs (URI, then DNS) its
 * client_cert_san principals may match, kept per request as the headers
 * are: at most this many names, this many bytes. */
#define MCP_CLIENT_SANS 16
#define MCP_CLIENT_SAN_BYTES 2048

struct mcp_leg;

/* What a request waits for from its backends. */
enum mcp_wait {
	MCP_W_NONE = 0,
	MCP_W_LIST,    /* a tools/list round (the fan-out) */
	MCP_W_CALL,    /* a tools/call (after a round when no catalog was there) */
	MCP_W_FORWARD, /* the client's answers and cancellations, on their way to backends */
	MCP_W_PRIM,    /* prompts or resources: every backend's list, then the merge or the route */
	MCP_W_REMOTE,  /* handed to the session's worker: its answer comes back (xw_poll) */
};

struct mcp_bg;

struct http_mcp_req {
	struct http_mcp_req *next; /* the worker's free list */
	struct http_stream *st;	   /* the client's stream; NULL for a detached request */
	/* the connection sub-requests go from (the worker, the local
	 * address, the HCM's statistics): the stream's, or a detached
	 * request's own (struct mcp_bg) */
	struct http_conn *hc;
	struct mcp_bg *bg; /* a detached request: no client stream here */
	/* handed to the worker that owns the session (X_REQ sent): what it
	 * answers comes back through the worker's inbox (xw_in) */
	bool xfer;
	uint32_t xgen; /* this context's use; a stale answer names an old one */
	char *xbody;   /* the body gathered for the hand-off */
	size_t xbody_len, xbody_cap;
	/* a leg started next sends this backend session id (DELETEs of
	 * detached requests: no client session holds it any more) */
	const char *bsid_next;
	size_t bsid_next_len;
	const struct arn_cfg_mcp_filter *f;
	const struct arn_cfg_toolset *ts; /* pinned */
	struct arn_mcp_reader rd;
	bool rd_open;
	bool has_sid, sid_long, has_pver;
	char sid[ARN_MCP_SID_LEN + 1];
	size_t sid_len;
	char pver[32];
	size_t pver_len;
	/* 2026-07-28: a stateless request (no session; its version in
	 * params._meta) and the headers it must repeat from its body */
	bool modern;
	bool has_mmethod, has_mname, mhdr_long;
	char mmethod[48];
	size_t mmethod_len;
	char mname[ARN_MCP_NAME_HDR_MAX];
	size_t mname_len;
	struct arn_cfg_header hdrs[MCP_PRINCIPAL_HDRS]; /* values in the stream's text */
	size_t n_hdrs;
	bool hdrs_lost; /* a header a principal names did not fit: header principals match none */
	struct arn_mcp_str sans[MCP_CLIENT_SANS]; /* in the stream's text */
	size_t n_sans;
	bool sans_lost; /* a SAN did not fit: SAN principals match none */
	/* waiting for backends */
	uint8_t wait; /* enum mcp_wait */
	struct arn_mcp_session *s;
	uint32_t s_gen;
	struct json_object *msg; /* the client's request (a reference) */
	struct json_object *id;	 /* its id (borrowed from msg) */
	struct json_object *params;
	bool fan_open;
	bool in_end; /* inside http_mcp_end: the connection runs on by itself */
	/* inside a backend callback's own leg_start: an answer made there
	 * (the sub-request failed at once) leaves the connection's run to
	 * the caller, which must not touch the request after it */
	uint8_t nested;
	bool run_after;
	bool routed;	/* tools/call: call_b is its backend */
	uint8_t method; /* enum arn_mcp_method of the request waiting for backends */
	bool prim_list; /* MCP_W_PRIM: a list (else prompts/get, resources/read) */
	uint32_t call_b;
	/* a tools/call answered as an event stream: the head went out, the
	 * backend's events follow as it sends them, from out (the worker's
	 * large scratch), which the codec reads until it flushed them */
	bool streaming;
	char *out;
	size_t out_len;
	struct http_timer ping; /* ": ping" while the backend says nothing */
	/* the session's GET stream (server-to-client messages): s->user is
	 * this request while it lives, and it is on the worker's list */
	bool get;
	struct http_mcp_req *gprev, *gnext;
	bool del; /* DELETE: the session ends, its backends' sessions too */
	/* for the access log: the tool as the client named it (cut to fit) */
	char tool[129];
	uint32_t tool_len;
	struct arn_mcp_fanout fan;
	uint32_t n_legs;
	struct mcp_leg *legs[ARN_CFG_MCP_MAX_BACKENDS];
};

/* One message to one backend (and the backend session's initialize
 * before it when the client's session has none with that backend). */
enum mcp_phase {
	LEG_INIT = 0, /* initialize */
	LEG_NOTIFY,   /* notifications/initialized */
	LEG_CALL,     /* the message itself */
	LEG_DISCOVER, /* server/discover: is the backend of the stateless era? */
	LEG_GET,      /* a GET stream of the backend's session, owned by the client's GET stream */
};

#define MCP_LEG_HDRS 24
/* the gateway's own: content-type, accept, and mcp-session-id with
 * mcp-protocol-version or the stateless era's three (leg_send) */
_Static_assert(MCP_LEG_HDRS >= 5 + ARN_CFG_MCP_MAX_BACKEND_HEADERS,
	       "a backend's request_headers_to_add must fit beside the gateway's");

struct mcp_leg {
	struct mcp_leg *next; /* the worker's free list */
	struct http_subreq sr;
	struct http_mcp_req *r;
	uint32_t b;	 /* the backend's index in the ToolSet */
	uint32_t slot;	 /* in r->legs */
	uint8_t phase;	 /* enum mcp_phase */
	uint8_t kind;	 /* enum arn_mcp_upstream of the answer */
	bool retried;	 /* re-initialized once after a 404 */
	bool side;	 /* forwards the client's answer or cancellation, or an error answer to the
			    backend's request: its end only frees it */
	bool sent_sid;	 /* the request carried the backend's session id */
	bool modern;	 /* the backend speaks 2026-07-28: no session, _meta */
	bool probed;	 /* the other era's handshake was tried too */
	unsigned status; /* the answer's HTTP status; 0: none came */
	uint64_t start_tsc;	    /* the message started (mcp.<ToolSet>.backend.<b>.rq_time) */
	struct json_object *call;   /* the message for the backend (owned) */
	struct json_object *sent;   /* what this phase sends (owned) */
	struct json_object *answer; /* the backend's answer to it (owned) */
	size_t answer_bytes;	    /* its size as received (a round counts its pages) */
	struct arn_mcp_reader rd;   /* a JSON answer */
	bool rd_open;
	struct arn_mcp_sse sse; /* an event-stream answer */
	/* the worker's large scratch, held only while an event is read in
	 * (leg_ops_body): a quiet stream holds none */
	char *sse_buf;
	char bsid[ARN_MCP_BACKEND_SID_MAX + 1];
	size_t bsid_len;
	char mname[ARN_MCP_NAME_HDR_MAX]; /* Mcp-Name for a stateless backend */
	struct http_subreq_header h[MCP_LEG_HDRS];
	char why[160];
	/* LEG_GET: reopened after this much once the backend ended it (the
	 * back-off doubles up to MCP_BGET_BACKOFF_MAX_MS, and starts over when
	 * a stream opened); live: counted in mcp_backend_get_active */
	struct http_timer retry;
	uint32_t backoff_ms;
	bool live;
};

/* Legs per worker by default (http_mcp_caps.legs) */
#define HTTP_MCP_LEGS 256

/* Backend GET streams per worker (struct mcp_leg, phase LEG_GET): each
 * holds an upstream connection and a response buffer for as long as the
 * client's GET stream lives, and a large scratch buffer (HTTP_BIG_SCRATCH,
 * of HTTP_BIG_SCRATCH_N) while an event is read in; past this a backend
 * session gets none (mcp_backend_get_overflow). */
#define MCP_BGET_MAX 16u
#define MCP_BGET_BACKOFF_MS 1000u
#define MCP_BGET_BACKOFF_MAX_MS 30000u

/* The catalog a worker built last for a ToolSet (pinned with it): tools/list
 * answers from it while tools_list_cache_ttl lasts, tools/call routes by it. */
#define MCP_CATALOGS 8
struct mcp_cat {
	const struct arn_cfg_toolset *ts; /* pinned */
	struct arn_mcp_catalog *cat;
	uint64_t built_ms;
	/* each backend's era as this worker learnt it (enum mcp_era) */
	uint8_t era[ARN_CFG_MCP_MAX_BACKENDS];
	/* what each backend's last initialize (or server/discover) answer
	 * offered, arn_mcp_backend_init_keep()'s bounded summary, for the
	 * capabilities the gateway's own initialize and server/discover merge */
	struct json_object *init[ARN_CFG_MCP_MAX_BACKENDS];
	/* stateless clients (2026-07-28) and session-era backends: one
	 * backend session per backend, opened by the first such request and
	 * used by the next ones (the gateway is that session's one client;
	 * a stateless client has nothing the backend could keep per
	 * session), DELETEd when the entry goes (cat_retire) */
	char bsid[ARN_CFG_MCP_MAX_BACKENDS][ARN_MCP_BACKEND_SID_MAX + 1];
	uint8_t bsid_len[ARN_CFG_MCP_MAX_BACKENDS];
	uint32_t laddr; /* the address the last of them went from */
};

enum mcp_era {
	ERA_UNKNOWN = 0,
	ERA_SESSION, /* initialize answered: 2024-11-05 .. 2025-11-25 */
	ERA_MODERN,  /* server/discover offered 2026-07-28 */
};

/*
 * A detached request: one that has no client stream on this worker.
 *   - remote: a request for one of this worker's sessions that arrived on
 *     another worker (X_REQ); it runs here as any request, and what it
 *     answers (a whole reply, or an event stream's head, events and end)
 *     goes back to that worker over its inbox for it to write;
 *   - local: DELETEs to backend sessions nobody holds any more (a client
 *     session that expired idle, a stateless clients' shared backend
 *     session retired), which run to their end after whatever made them.
 * Its connection is a stand-in (no client, no codec; its run, close and
 * reset do nothing) that carries what sub-requests need: the worker, the
 * local address and the HCM's statistics (a reference).
 */
struct mcp_bg {
	struct http_mcp_req r;
	struct http_conn hc;
	struct arn_cfg_mcp_filter f; /* the filter's limits and ToolSet name, copied */
	char tsname[256];
	bool used;
	bool done; /* answered (or abandoned): freed by the worker's poll */
	bool remote;
	uint8_t from;	       /* remote: the worker whose client stream waits */
	uint64_t handle;       /* remote: that stream's request (xw_handle) */
	struct mcp_xmsg *req;  /* remote: the X_REQ (header values point into it) */
	struct mcp_xmsg *owed; /* a last message the origin's inbox had no room for */
};

/* Detached requests per worker by default (http_mcp_caps.detached):
 * remote ones live as long as their answer (a GET stream's for hours),
 * local ones until their DELETEs end. */
#define MCP_BG 128u

/* A backend's notifications/tools/list_changed read on this worker, owed
 * to the other workers (X_LIST_CHANGED): their catalogs of the ToolSet
 * are stale too, and (notify) their GET streams of it are told. Repeats
 * while one waits coalesce into it (sent again from the first worker);
 * past MCP_LC_OWED ToolSets waiting, one is dropped
 * (mcp_list_changed_dropped). */
#define MCP_LC_OWED 8u
/* X_LIST_CHANGED messages one worker may have in the others' inboxes at
 * once: a backend that says list_changed without pause makes at most
 * this many, the rest wait (coalesced) in its MCP_LC_OWED entries. */
#define MCP_LC_INFLIGHT 64u

struct mcp_lc_owed {
	const struct arn_cfg_toolset *ts; /* pinned */
	uint16_t next;			  /* the first worker not told yet */
	bool notify;			  /* their GET streams of ts are told too */
};

/* What a worker keeps per session slot beyond lib/mcp's table, for the
 * DELETEs an expired session's backend sessions get: the ToolSet (pinned)
 * and the HCM (referenced) of the filter that opened it, its address. */
struct mcp_sx {
	const struct arn_cfg_toolset *ts;
	struct http_hcm_rt *hrt;
	uint32_t laddr;
};

/* A stream whose owner must be told it ended (X_CANCEL) once the owner's
 * inbox has room. */
struct mcp_owed_cancel {
	uint8_t to;
	uint64_t handle;
};

struct http_mcp_worker {
	/* first: what the loop's inline poll tests (http_mcp.h) */
	struct http_mcp_due due;
	struct arn_mcp_sessions *sessions;
	struct http_mcp_req *mem, *free;
	uint32_t n;
	struct mcp_leg *legs, *leg_free;
	uint32_t n_bg, n_sx; /* bgs and sx (http_mcp_caps') */
	struct mcp_cat cats[MCP_CATALOGS];
	struct http_mcp_req *gets;    /* the GET streams open on this worker */
	uint32_t n_bget;	      /* backend GET streams (legs of phase LEG_GET) */
	struct mcp_bg *bgs;	      /* [n_bg] */
	uint32_t n_bg_done;	      /* detached requests to free at the next poll */
	struct mcp_sx *sx;	      /* [n_sx] */
	struct mcp_owed_cancel *owed; /* [n]: every remote request is one of mem */
	uint32_t n_owed;
	struct mcp_lc_owed lc[MCP_LC_OWED];
	uint32_t n_lc;
	uint64_t sweep_ms; /* idle sessions are looked for then */
	struct http_worker *w;
};

static void cat_init_clear(struct mcp_cat *e)
{
	for (unsigned b = 0; b < ARN_CFG_MCP_MAX_BACKENDS; b++) {
		json_object_put(e->init[b]);
		e->init[b] = NULL;
	}
}

/* ---- between workers ----------------------------------------------------------------------
 *
 * A session lives on the worker that answered its initialize; a request
 * naming it that RSS put on another worker is handed to the owner whole
 * (X_REQ: the body, the headers the gateway reads, the ToolSet pinned and
 * the HCM referenced for it), runs there as a detached request, and its
 * answer comes back (X_REPLY; or X_HEAD, X_EVENTs and X_END / X_ABORT for
 * an event stream, a GET stream's included) for the receiving worker to
 * write to its client. A client stream that ends first tells the owner
 * (X_CANCEL), which drops the request. Each worker has one bounded
 * multi-producer inbox (MCP_XW_RING messages); a message that finds it
 * full is counted (mcp_handoff_dropped): a request is answered 503 with
 * a JSON-RPC error, an event ends its stream; the last message of an
 * answer, and X_CANCEL, are kept and sent again from the sender's poll,
 * so neither side waits forever. Messages are malloc'd by the sender and
 * freed by the receiver; the ring (plain memory) is made by the worker
 * and freed by the control lcore at stop (arn_http_stop), after every
 * worker ended.
 */
#define MCP_XW_RING 1024u

enum mcp_xkind {
	X_REQ = 1,
	X_REPLY,
	X_HEAD,
	X_EVENT,
	X_END,
	X_ABORT,
	X_CANCEL,
	X_LIST_CHANGED, /* a backend's tools changed: ts's catalog, its GET streams */
};

struct mcp_xmsg {
	uint8_t kind;	 /* enum mcp_xkind */
	uint8_t from;	 /* the sender's worker */
	uint64_t handle; /* the receiving worker's request (X_REQ: the sender's) */
	/* X_REQ, X_LIST_CHANGED */
	const struct arn_cfg_toolset *ts; /* pinned, for the receiver */
	bool notify;			  /* X_LIST_CHANGED: tell ts's GET streams */
	/* X_REQ */
	struct http_hcm_rt *hrt; /* referenced, for the receiver (or NULL) */
	uint32_t laddr;
	uint32_t max_request_bytes, max_response_bytes;
	bool get, del, has_pver, has_sid;
	char pver[32];
	uint8_t pver_len;
	char sid[ARN_MCP_SID_LEN + 1];
	uint32_t n_hdrs;
	bool hdrs_lost;
	struct arn_cfg_header hdrs[MCP_PRINCIPAL_HDRS]; /* values in text, after the body */
	uint32_t n_sans;
	bool sans_lost;
	uint32_t san_len[MCP_CLIENT_SANS]; /* the SANs in text, after the headers */
	/* X_REPLY, X_HEAD, X_END, X_ABORT: what the receiving worker's access
	 * log names (%MCP_TOOL%, %MCP_BACKEND%), as the owner routed it: the
	 * tool as the client named it, cut to its first 128 bytes as the
	 * owner's http_mcp_req keeps it, and the backend, an index into the
	 * ToolSet both workers pin (the X_REQ carried it); UINT32_MAX: none */
	char tool[129];
	uint32_t tool_len;
	uint32_t backend;
	/* X_REPLY */
	uint16_t status;
	bool with_sid;
	const char *details; /* a string literal of this program */
	const char *allow;   /* likewise, or NULL */
	/* the body (X_REQ, X_REPLY), an event's JSON (X_EVENT) */
	size_t len;
	char text[];
};

static struct rte_ring *xw_in[ARN_MCP_MAX_WORKERS];
/* X_LIST_CHANGED messages each worker has in the others' inboxes (taken
 * by the sender, given back by whoever frees the message) */
static uint32_t xw_lc_out[ARN_MCP_MAX_WORKERS];

/* A request context's handle: its worker, index and use. */
static uint64_t xw_handle(const struct http_mcp_worker *m, const struct http_mcp_req *r)
{
	return (uint64_t)m->w->idx << 56 | (uint64_t)(uint32_t)(r - m->mem) << 32 | r->xgen;
}

static struct mcp_xmsg *xmsg_new(enum mcp_xkind k, unsigned from, uint64_t handle, size_t len)
{
	struct mcp_xmsg *x = malloc(sizeof(*x) + len + 1);
	if (!x)
		return NULL;
	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)k;
	x->from = (uint8_t)from;
	x->handle = handle;
	x->backend = UINT32_MAX;
	x->len = len;
	x->text[len] = 0;
	return x;
}

/* What a message holds besides its memory goes back (a ToolSet pin, an
 * HCM reference), then the memory. */
static void xmsg_free(struct mcp_xmsg *x)
{
	if (!x)
		return;
	if (x->kind == X_REQ) {
		if (x->ts)
			arn_cfg_unpin(x->ts);
		http_rt_hcm_put(x->hrt);
	}
	if (x->kind == X_LIST_CHANGED) {
		arn_cfg_unpin(x->ts);
		__atomic_sub_fetch(&xw_lc_out[x->from], 1, __ATOMIC_RELEASE);
	}
	free(x);
}

/* What the access log of the worker whose client waits names for remote
 * request @p r goes into its answer message @p x (events carry none: the
 * head before them and the end after them do). */
static void xmsg_log_of(struct mcp_xmsg *x, const struct http_mcp_req *r)
{
	if (!x || x->kind == X_EVENT)
		return;
	x->tool_len = r->tool_len < sizeof(x->tool) ? r->tool_len : (uint32_t)sizeof(x->tool) - 1;
	memcpy(x->tool, r->tool, x->tool_len);
	x->tool[x->tool_len] = 0;
	x->backend = r->routed && r->ts && r->call_b < r->ts->n_backends ? r->call_b : UINT32_MAX;
}

/* @p x (taken) to worker @p to's inbox. @return 0, or -ENOBUFS (full or
 * no such worker: @p x is still the caller's). */
static int xw_send(unsigned to, struct mcp_xmsg *x)
{
	struct rte_ring *q =
	    to < ARN_MCP_MAX_WORKERS ? __atomic_load_n(&xw_in[to], __ATOMIC_ACQUIRE) : NULL;
	if (!q || rte_ring_mp_enqueue(q, x) != 0)
		return -ENOBUFS;
	return 0;
}

static void bg_nop(struct http_conn *hc)
{
	(void)hc;
}

static void bg_nop_reset(struct http_conn *hc, int line)
{
	(void)hc;
	(void)line;
}

/* A detached request's stand-in connection: nothing to run, close or reset. */
static const struct http_conn_ops bg_conn_ops = {
    .run = bg_nop,
    .close = bg_nop,
    .reset = bg_nop_reset,
};

static void on_expire(void *arg, struct arn_mcp_session *s);
static void sess_close(struct http_mcp_worker *m, struct arn_mcp_session *s);
static void sx_set(struct http_mcp_worker *m, struct arn_mcp_session *s, struct http_mcp_req *r);
static bool sx_follow(struct http_mcp_worker *m, struct arn_mcp_session *s,
		      const struct arn_cfg_toolset *ts);
static void shared_bsid_set(struct http_mcp_req *r, uint32_t b, const char *sid, size_t n,
			    const char *old, size_t old_n);
static void shared_bsid_done(struct mcp_leg *l);
static void req_release(struct http_mcp_worker *m, struct http_mcp_req *r);

int http_mcp_worker_init(struct http_worker *w, const struct http_mcp_caps *caps)
{
	struct http_mcp_worker *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->w = w;
	m->n = w->n_res;
	m->mem = calloc(m->n ? m->n : 1, sizeof(*m->mem));
	m->owed = calloc(m->n ? m->n : 1, sizeof(*m->owed));
	uint32_t n_legs = caps && caps->legs ? caps->legs : HTTP_MCP_LEGS;
	m->n_bg = caps && caps->detached ? caps->detached : MCP_BG;
	m->n_sx = caps && caps->sessions ? caps->sessions : HTTP_MCP_SESSIONS;
	m->legs = calloc(n_legs, sizeof(*m->legs));
	m->bgs = calloc(m->n_bg, sizeof(*m->bgs));
	m->sx = calloc(m->n_sx, sizeof(*m->sx));
	m->sessions = arn_mcp_sessions_create(w->idx, m->n_sx, ARN_CFG_MCP_MAX_BACKENDS,
					      ARN_CFG_MCP_DEFAULT_SESSION_IDLE_MS);
	struct rte_ring *q = NULL;
	if (w->idx < ARN_MCP_MAX_WORKERS) {
		q = __atomic_load_n(&xw_in[w->idx], __ATOMIC_ACQUIRE);
		if (!q) {
			/* plain memory, not a memzone: it is freed at
			 * arn_http_stop, after the EAL is gone */
			char name[32];
			snprintf(name, sizeof(name), "arn_mcpx%u", w->idx);
			ssize_t sz = rte_ring_get_memsize(MCP_XW_RING);
			q = sz > 0 ? aligned_alloc(RTE_CACHE_LINE_SIZE,
						   RTE_ALIGN_CEIL((size_t)sz, RTE_CACHE_LINE_SIZE))
				   : NULL;
			if (q && rte_ring_init(q, name, MCP_XW_RING, RING_F_SC_DEQ) != 0) {
				free(q);
				q = NULL;
			}
			if (q)
				__atomic_store_n(&xw_in[w->idx], q, __ATOMIC_RELEASE);
		}
	}
	if (!m->mem || !m->owed || !m->legs || !m->bgs || !m->sx || !m->sessions || !q) {
		ARN_ERR(HTTP, "worker %u: out of memory for the MCP gateway's %u sessions", w->idx,
			m->n_sx);
		if (m->sessions)
			arn_mcp_sessions_destroy(m->sessions);
		free(m->mem);
		free(m->owed);
		free(m->legs);
		free(m->bgs);
		free(m->sx);
		free(m);
		return -ENOMEM;
	}
	arn_mcp_sessions_on_expire(m->sessions, on_expire, m);
	m->due.inbox = q;
	m->due.due_ms = 0; /* the first poll sets the sweep's time */
	for (uint32_t i = n_legs; i-- > 0;) {
		m->legs[i].next = m->leg_free;
		m->leg_free = &m->legs[i];
	}
	for (uint32_t i = m->n; i-- > 0;) {
		m->mem[i].next = m->free;
		m->free = &m->mem[i];
	}
	for (uint32_t i = 0; i < m->n_bg; i++) {
		m->bgs[i].hc.w = w;
		m->bgs[i].hc.ops = &bg_conn_ops;
		m->bgs[i].hc.state = HTTP_DC_OPEN;
		m->bgs[i].r.bg = &m->bgs[i];
		m->bgs[i].r.hc = &m->bgs[i].hc;
	}
	w->mcp = m;
	return 0;
}

static void bg_release(struct http_mcp_worker *m, struct mcp_bg *bg);
static void cat_retire(struct http_mcp_worker *m, struct mcp_cat *e);

void http_mcp_shutdown(struct http_worker *w)
{
	struct http_mcp_worker *m = w->mcp;
	if (!m)
		return;
	/* their sub-requests end while the upstream connections are there */
	for (uint32_t i = 0; i < m->n_bg; i++)
		if (m->bgs[i].used)
			bg_release(m, &m->bgs[i]);
	m->n_bg_done = 0;
}

void http_mcp_worker_fini(struct http_worker *w)
{
	struct http_mcp_worker *m = w->mcp;
	if (!m)
		return;
	http_mcp_shutdown(w);
	for (unsigned i = 0; i < MCP_CATALOGS; i++) {
		if (m->cats[i].ts)
			arn_cfg_unpin(m->cats[i].ts);
		arn_mcp_catalog_free(m->cats[i].cat);
		cat_init_clear(&m->cats[i]);
	}
	for (uint32_t i = 0; i < m->n_sx; i++) {
		if (m->sx[i].ts)
			arn_cfg_unpin(m->sx[i].ts);
		http_rt_hcm_put(m->sx[i].hrt);
	}
	for (uint32_t i = 0; i < m->n_lc; i++)
		arn_cfg_unpin(m->lc[i].ts);
	/* what others sent this worker and it did not read: nobody will */
	struct rte_ring *q = w->idx < ARN_MCP_MAX_WORKERS ? xw_in[w->idx] : NULL;
	void *x;
	while (q && rte_ring_dequeue(q, &x) == 0)
		xmsg_free(x);
	arn_mcp_sessions_destroy(m->sessions);
	free(m->mem);
	free(m->owed);
	free(m->legs);
	free(m->bgs);
	free(m->sx);
	free(m);
	w->mcp = NULL;
}

void http_mcp_stop(void)
{
	for (unsigned i = 0; i < ARN_MCP_MAX_WORKERS; i++) {
		struct rte_ring *q = xw_in[i];
		if (!q)
			continue;
		void *x;
		while (rte_ring_dequeue(q, &x) == 0)
			xmsg_free(x);
		free(q);
		xw_in[i] = NULL;
	}
}

/* ---- answers ------------------------------------------------------------------------------ */

/*
 * A whole answer: @p o as JSON (NULL: no body, as for 202), with
 * mcp-session-id @p sid and Allow @p allow when given. Counted by status.
 */
static void reply_text(struct http_stream *st, unsigned status, const char *text, size_t len,
		       const char *sid, const char *allow, const char *details)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_edit e[3];
	unsigned n = 0;
	if (text)
		e[n++] = (struct arn_h1_edit){.name = "content-type",
					      .name_len = 12,
					      .value = "application/json",
					      .value_len = 16,
					      .op = ARN_H1_EDIT_SET};
	if (sid)
		e[n++] = (struct arn_h1_edit){.name = "mcp-session-id",
					      .name_len = 14,
					      .value = sid,
					      .value_len = (uint32_t)strlen(sid),
					      .op = ARN_H1_EDIT_SET};
	if (allow)
		e[n++] = (struct arn_h1_edit){.name = "allow",
					      .name_len = 5,
					      .value = allow,
					      .value_len = (uint32_t)strlen(allow),
					      .op = ARN_H1_EDIT_SET};
	if (status >= 400)
		HTTP_INC(hc, mcp_rq_error);
	http_local_reply(st, status, text, len, 0, details, e, n);
}

static void reply(struct http_stream *st, unsigned status, struct json_object *o, const char *sid,
		  const char *allow, const char *details)
{
	size_t len = 0;
	const char *text = o ? arn_mcp_text(o, &len) : NULL;
	reply_text(st, status, text, len, sid, allow, details);
}

/* ---- answers of requests that may be detached (struct mcp_bg) -------------------------------- */

static void bg_finish(struct http_mcp_req *r);

/* A detached remote request's message @p x (taken; NULL: out of memory)
 * to the worker whose client waits. @p last: the answer ends with it, and
 * it is kept to be sent again when the inbox is full. @return false when
 * it did not go (and is not kept). */
static bool xw_out(struct http_mcp_req *r, struct mcp_xmsg *x, bool last)
{
	struct mcp_bg *bg = r->bg;
	if (!bg->remote || bg->done) {
		xmsg_free(x);
		return false;
	}
	xmsg_log_of(x, r);
	if (x && xw_send(bg->from, x) == 0) {
		HTTP_INC(r->hc, mcp_handoff_answer);
		if (last)
			bg_finish(r);
		return true;
	}
	HTTP_INC(r->hc, mcp_handoff_dropped);
	/* the origin must still learn that the answer ended: the last
	 * message is kept, or an X_ABORT instead of an event */
	if (!last || !x) {
		xmsg_free(x);
		x = xmsg_new(X_ABORT, r->hc->w->idx, bg->handle, 0);
		xmsg_log_of(x, r);
	}
	bg->owed = x; /* sent again by xw_poll (NULL: the origin's stream times out) */
	bg_finish(r);
	return false;
}

/* The request's whole answer: @p text (@p len bytes of JSON; NULL: no
 * body), with its session's id when @p sid. */
static void rreply_text(struct http_mcp_req *r, unsigned status, const char *text, size_t len,
			const char *sid, const char *allow, const char *details)
{
	if (!r->bg) {
		reply_text(r->st, status, text, len, sid, allow, details);
		return;
	}
	struct mcp_xmsg *x = xmsg_new(X_REPLY, r->hc->w->idx, r->bg->handle, text ? len : 0);
	if (x) {
		x->status = (uint16_t)status;
		x->with_sid = sid != NULL;
		x->details = details;
		x->allow = allow;
		if (text)
			memcpy(x->text, text, len);
		else
			x->len = SIZE_MAX; /* no body */
	}
	xw_out(r, x, true);
}

static void rreply(struct http_mcp_req *r, unsigned status, struct json_object *o, const char *sid,
		   const char *allow, const char *details)
{
	size_t len = 0;
	const char *text = o ? arn_mcp_text(o, &len) : NULL;
	rreply_text(r, status, text, len, sid, allow, details);
}

static void r500(struct http_mcp_req *r, const char *details)
{
	if (!r->bg)
		http_local_reply(r->st, 500, NULL, 0, 0, details, NULL, 0);
	else
		rreply_text(r, 500, NULL, 0, NULL, NULL, details);
}

/* An error that ends the exchange: lib/mcp's code, message and status,
 * "id": null (the request's id is unknown or there are several). */
static void reply_error(struct http_stream *st, enum arn_mcp_err e, const char *detail,
			const char *details)
{
	struct json_object *o = arn_mcp_new_error(NULL, e, detail);
	unsigned status = (unsigned)arn_mcp_err_status(e);
	if (!o) {
		http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
		return;
	}
	reply(st, status == 200 ? 400 : status, o, NULL, NULL, details);
	json_object_put(o);
}

static void rreply_error_id(struct http_mcp_req *r, enum arn_mcp_err e, struct json_object *id,
			    const char *detail, const char *details)
{
	struct json_object *o = arn_mcp_new_error(id, e, detail);
	unsigned status = (unsigned)arn_mcp_err_status(e);
	if (!o) {
		r500(r, "mcp_out_of_memory");
		return;
	}
	rreply(r, status == 200 ? 400 : status, o, NULL, NULL, details);
	json_object_put(o);
}

static void rreply_error(struct http_mcp_req *r, enum arn_mcp_err e, const char *detail,
			 const char *details)
{
	rreply_error_id(r, e, NULL, detail, details);
}

/* ---- the head ----------------------------------------------------------------------------- */

/* Does some access rule of @p ts name a client_cert_san principal? */
static bool names_san(const struct arn_cfg_toolset *ts)
{
	for (size_t i = 0; i < ts->n_rules; i++)
		for (size_t j = 0; j < ts->rules[i].n_principals; j++)
			if (ts->rules[i].principals[j].kind == ARN_CFG_MCP_PRINCIPAL_SAN)
				return true;
	return false;
}

/* Copy the SANs of the connection's verified client certificate (URI,
 * then DNS, as RBAC's principal_name sees them) into @p r, their bytes
 * into the stream's text space, when @p ts has a client_cert_san
 * principal. A list that does not fit whole (MCP_CLIENT_SANS names,
 * MCP_CLIENT_SAN_BYTES bytes, the text space left) is dropped and no SAN
 * principal matches the request (a client shown fewer tools, never more). */
static void keep_client_sans(struct http_stream *st, struct http_mcp_req *r,
			     const struct arn_cfg_toolset *ts)
{
	r->n_sans = 0;
	r->sans_lost = false;
	const struct arn_tls_conn *tls = st->hc->tls;
	if (!tls || !arn_tls_peer_cert(tls) || !names_san(ts))
		return;
	char *buf = st->res->text + st->text_len;
	size_t cap = HTTP_TEXT - st->text_len;
	if (cap > MCP_CLIENT_SAN_BYTES)
		cap = MCP_CLIENT_SAN_BYTES;
	size_t off[MCP_CLIENT_SANS], len[MCP_CLIENT_SANS];
	size_t used = 0, n = 0;
	for (int uri = 1; uri >= 0; uri--) {
		int k = arn_tls_peer_san_list(tls, uri, buf + used, cap - used, off + n, len + n,
					      MCP_CLIENT_SANS - n);
		if (k < 0) {
			r->sans_lost = true;
			return;
		}
		for (int i = 0; i < k; i++)
			r->sans[n + (size_t)i] = (struct arn_mcp_str){
			    buf + used + off[n + (size_t)i], len[n + (size_t)i]};
		if (k)
			used += off[n + (size_t)k - 1] + len[n + (size_t)k - 1];
		n += (size_t)k;
	}
	st->text_len += (uint32_t)used;
	r->n_sans = n;
}

static void hdr(const struct arn_h1_msg *m, const char *name, size_t n, const char **v,
		size_t *vlen)
{
	int i = arn_h1_find(m, name, n, 0);
	*v = i >= 0 ? m->hdrs[i].value : NULL;
	*vlen = i >= 0 ? m->hdrs[i].value_len : 0;
}

/* Copy the request headers @p ts's header principals name into @p r
 * (their values into the stream's text space). A header that does not
 * fit is left out and no header principal matches the request then: left
 * to match on what was kept, one that admits by a header's absence
 * (invert_match, present_match false) would admit a client that crowded
 * that header out with others' (a client shown fewer tools, never more). */
static void keep_principal_headers(struct http_stream *st, struct http_mcp_req *r,
				   const struct arn_cfg_toolset *ts,
				   const struct arn_cfg_request *req)
{
	r->n_hdrs = 0;
	r->hdrs_lost = false;
	for (size_t i = 0; i < ts->n_rules; i++) {
		const struct arn_cfg_mcp_access_rule *ru = &ts->rules[i];
		for (size_t j = 0; j < ru->n_principals; j++) {
			const struct arn_cfg_mcp_principal *p = &ru->principals[j];
			if (p->kind != ARN_CFG_MCP_PRINCIPAL_HEADER)
				continue;
			for (size_t k = 0; k < req->n_headers; k++) {
				const struct arn_cfg_header *h = &req->headers[k];
				if (h->name_len != p->header.name_len ||
				    strncasecmp(h->name, p->header.name, h->name_len) != 0)
					continue;
				/* a header two rules name is kept once (the kept
				 * ones are copies: compared by name and value) */
				bool dup = false;
				for (size_t q = 0; q < r->n_hdrs && !dup; q++)
					dup = r->hdrs[q].name_len == h->name_len &&
					      r->hdrs[q].value_len == h->value_len &&
					      strncasecmp(r->hdrs[q].name, h->name, h->name_len) ==
						  0 &&
					      memcmp(r->hdrs[q].value, h->value, h->value_len) == 0;
				if (dup)
					continue;
				if (r->n_hdrs == MCP_PRINCIPAL_HDRS ||
				    st->text_len + h->value_len + 1 > HTTP_TEXT) {
					r->hdrs_lost = true;
					continue;
				}
				char *v = st->res->text + st->text_len;
				memcpy(v, h->value, h->value_len);
				v[h->value_len] = 0;
				st->text_len += (uint32_t)h->value_len + 1;
				r->hdrs[r->n_hdrs++] = (struct arn_cfg_header){
				    p->header.name, p->header.name_len, v, h->value_len};
			}
		}
	}
}

static const char *action_details(uint8_t a)
{
	switch (a) {
	case ARN_MCP_A_GET_STREAM:
		return "mcp_get_stream_not_served";
	case ARN_MCP_A_SSE_OPEN:
	case ARN_MCP_A_SSE_POST:
		return "mcp_http_sse_not_served";
	default:
		return "mcp_refused";
	}
}

bool http_mcp_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		     const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_mcp_filter *f = hc->hcm->mcp_gateway;
	const struct arn_h1_msg *m = &st->req.m;
	HTTP_INC(hc, mcp_rq_total);

	struct arn_mcp_http_req hr = {
	    .method = m->method_name.p,
	    .method_len = m->method_name.len,
	    .path = m->path.p,
	    .path_len = m->path.len,
	};
	hdr(m, "accept", 6, &hr.accept, &hr.accept_len);
	hdr(m, "content-type", 12, &hr.content_type, &hr.content_type_len);
	hdr(m, "mcp-session-id", 14, &hr.session_id, &hr.session_id_len);
	struct arn_mcp_route rt;
	arn_mcp_classify(&hr, f->path, f->path_len, &rt);

	switch (rt.action) {
	case ARN_MCP_A_POST:
	case ARN_MCP_A_DELETE:
	case ARN_MCP_A_GET_STREAM:
		break;
	case ARN_MCP_A_REFUSE: {
		/* lib/mcp says what and why; the body is a JSON-RPC error as
		 * the SDK's server sends one */
		char body[256];
		snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
			 "\"message\":\"%s\"}}",
			 rt.why ? rt.why : "Bad Request");
		struct json_object *bo = json_tokener_parse(body);
		reply(st, rt.status, bo, NULL, rt.status == 405 ? rt.allow : NULL, "mcp_refused");
		json_object_put(bo);
		return true;
	}
	default: {
		/* 2024-11-05's HTTP+SSE transport (a GET without a session).
		 * 405 is what the SDK's client takes for "no such transport
		 * here"; 2024-11-05 clients on Streamable HTTP are served. */
		char body[256];
		snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":"
			 "\"Method Not Allowed: %s is not served by this gateway yet\"}}",
			 "the HTTP+SSE transport (2024-11-05)");
		struct json_object *bo = json_tokener_parse(body);
		reply(st, 405, bo, NULL, "POST, DELETE", action_details(rt.action));
		json_object_put(bo);
		return true;
	}
	}

	const struct arn_cfg_toolset *ts = g ? arn_cfg_toolset_find(g, &f->toolset) : NULL;
	if (!ts) {
		reply_error(st, ARN_MCP_E_TOOLSET_MISSING, f->toolset.name, "mcp_toolset_missing");
		return true;
	}
	/* Refused before a byte of the body is read (it is not read). */
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > f->max_request_bytes) {
		HTTP_INC(hc, mcp_rq_too_large);
		reply_error(st, ARN_MCP_E_TOO_LARGE, NULL, "mcp_request_too_large");
		return true;
	}
	struct http_mcp_req *r = w->mcp->free;
	if (!r) { /* one per request buffer: cannot happen while every stream has one */
		reply_error(st, ARN_MCP_E_INTERNAL, "no request context", "mcp_no_context");
		return true;
	}
	struct arn_mcp_limits lim = {.max_message_bytes = f->max_request_bytes};
	if (arn_mcp_reader_init(&r->rd, &lim) != 0) {
		reply_error(st, ARN_MCP_E_INTERNAL, "out of memory", "mcp_out_of_memory");
		return true;
	}
	w->mcp->free = r->next;
	r->next = NULL;
	r->rd_open = true;
	r->f = f;
	r->ts = ts;
	r->st = st;
	r->hc = hc;
	r->bg = NULL;
	r->bsid_next = NULL;
	r->xbody = NULL;
	r->xbody_len = r->xbody_cap = 0;
	r->wait = MCP_W_NONE;
	r->n_legs = 0;
	r->msg = NULL;
	r->routed = false;
	r->streaming = false;
	r->out = NULL;
	r->out_len = 0;
	r->ping.fn = ping_fire;
	r->tool_len = 0;
	r->fan_open = r->in_end = false;
	r->get = rt.action == ARN_MCP_A_GET_STREAM;
	r->del = rt.action == ARN_MCP_A_DELETE;
	r->gprev = r->gnext = NULL;
	r->s = NULL;
	r->nested = 0;
	r->run_after = false;
	arn_cfg_pin(ts);
	r->has_sid = hr.session_id != NULL;
	r->sid_long = hr.session_id_len > ARN_MCP_SID_LEN;
	r->sid_len = r->sid_long ? 0 : hr.session_id_len;
	if (r->sid_len)
		memcpy(r->sid, hr.session_id, r->sid_len);
	r->sid[r->sid_len] = 0;
	/* another worker's session: the request goes to it whole (xw_handoff) */
	int owner = r->sid_len ? arn_mcp_session_owner(r->sid, r->sid_len) : -1;
	r->xfer = owner >= 0 && (unsigned)owner != w->idx &&
		  __atomic_load_n(&xw_in[owner], __ATOMIC_ACQUIRE) != NULL;
	const char *pv;
	size_t pvl;
	hdr(m, "mcp-protocol-version", 20, &pv, &pvl);
	r->has_pver = pv != NULL;
	r->pver_len = pvl < sizeof(r->pver) ? pvl : sizeof(r->pver) - 1;
	if (pv)
		memcpy(r->pver, pv, r->pver_len);
	r->modern = false;
	hdr(m, "mcp-method", 10, &pv, &pvl);
	r->has_mmethod = pv != NULL;
	r->mhdr_long = pvl >= sizeof(r->mmethod);
	r->mmethod_len = r->mhdr_long ? 0 : pvl;
	if (pv && !r->mhdr_long)
		memcpy(r->mmethod, pv, pvl);
	hdr(m, "mcp-name", 8, &pv, &pvl);
	r->has_mname = pv != NULL;
	if (pvl > sizeof(r->mname))
		r->mhdr_long = true;
	r->mname_len = pvl > sizeof(r->mname) ? 0 : pvl;
	if (pv && r->mname_len)
		memcpy(r->mname, pv, r->mname_len);
	keep_principal_headers(st, r, ts, req);
	keep_client_sans(st, r, ts);
	st->mcp = r;
	st->state |= HTTP_S_MCP;
	return true;
}

/* ---- the body ----------------------------------------------------------------------------- */

bool http_mcp_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_mcp_req *r = st->mcp;
	if (r->xfer) {
		/* gathered for the session's worker, which reads it */
		if (r->xbody_len + len > r->f->max_request_bytes) {
			HTTP_INC(st->hc, mcp_rq_too_large);
			reply_error(st, ARN_MCP_E_TOO_LARGE, NULL, "mcp_request_too_large");
			return false;
		}
		if (r->xbody_len + len > r->xbody_cap) {
			size_t cap = r->xbody_cap ? r->xbody_cap : 4096;
			while (cap < r->xbody_len + len)
				cap *= 2;
			char *b = realloc(r->xbody, cap);
			if (!b) {
				http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
				return false;
			}
			r->xbody = b;
			r->xbody_cap = cap;
		}
		memcpy(r->xbody + r->xbody_len, data, len);
		r->xbody_len += len;
		return true;
	}
	int rc = arn_mcp_reader_feed(&r->rd, data, len);
	if (rc == ARN_AGAIN)
		return true;
	if (rc == ARN_MCP_E_TOO_LARGE)
		HTTP_INC(st->hc, mcp_rq_too_large);
	reply_error(st, (enum arn_mcp_err)rc, NULL, "mcp_bad_body");
	return false;
}

/* ---- the answer --------------------------------------------------------------------------- */

/* Whether an initialize's params offer what backends may ask a client
 * for (elicitation, sampling, roots): the gateway relays those. */
static bool client_relays(struct json_object *params)
{
	struct json_object *caps = params ? json_object_object_get(params, "capabilities") : NULL;
	if (!caps || !json_object_is_type(caps, json_type_object))
		return false;
	return json_object_object_get_ex(caps, "elicitation", NULL) ||
	       json_object_object_get_ex(caps, "sampling", NULL) ||
	       json_object_object_get_ex(caps, "roots", NULL);
}

static int session_random(uint8_t rnd[16])
{
	/* rte_rand() is not a CSPRNG: a session id is a bearer secret */
	ssize_t n = getrandom(rnd, 16, GRND_NONBLOCK);
	return n == 16 ? 0 : -EAGAIN;
}

/* ---- backends ----------------------------------------------------------------------------- */

static void leg_ops_head(struct http_subreq *sr, const struct arn_h1_msg *m);
static void leg_ops_body(struct http_subreq *sr, const char *data, size_t len);
static void leg_ops_end(struct http_subreq *sr);
static void leg_ops_failed(struct http_subreq *sr, const char *why);

static void forward_done(struct http_mcp_req *r);
static bool side_start(struct http_mcp_req *r, uint32_t b, struct json_object *msg);
static void backend_list_changed(struct http_mcp_req *r);
static void bget_start(struct http_mcp_req *g, uint32_t b);
static void bget_close_all(struct http_mcp_req *g);
static void bget_ended(struct mcp_leg *l, const char *why);
static void bget_event(struct mcp_leg *l, struct arn_mcp_msg *m);
static bool relay_request(struct mcp_leg *l, struct arn_mcp_msg *m);

static const struct http_subreq_ops leg_ops = {
    .on_head = leg_ops_head,
    .on_body = leg_ops_body,
    .on_end = leg_ops_end,
    .on_failed = leg_ops_failed,
};

static bool sess_ok(const struct http_mcp_req *r)
{
	return r->s && r->s->in_use && r->s->gen == r->s_gen;
}

static struct mcp_cat *cat_find(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts)
{
	for (unsigned i = 0; i < MCP_CATALOGS; i++)
		if (m->cats[i].ts == ts && m->cats[i].cat)
			return &m->cats[i];
	return NULL;
}

/* @p ts's entry, or NULL. */
static struct mcp_cat *cat_entry_of(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts)
{
	for (unsigned i = 0; i < MCP_CATALOGS; i++)
		if (m->cats[i].ts == ts)
			return &m->cats[i];
	return NULL;
}

/* @p ts's entry (a free one, else the oldest goes), pinning @p ts. */
static struct mcp_cat *cat_entry(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts)
{
	struct mcp_cat *e = NULL;
	for (unsigned i = 0; i < MCP_CATALOGS && !e; i++)
		if (m->cats[i].ts == ts)
			e = &m->cats[i];
	if (!e) {
		e = &m->cats[0];
		for (unsigned i = 0; i < MCP_CATALOGS; i++) {
			if (!m->cats[i].ts) {
				e = &m->cats[i];
				break;
			}
			if (m->cats[i].built_ms < e->built_ms)
				e = &m->cats[i];
		}
		cat_retire(m, e);
		if (e->ts)
			arn_cfg_unpin(e->ts);
		arn_mcp_catalog_free(e->cat);
		e->cat = NULL;
		e->built_ms = 0;
		memset(e->era, 0, sizeof(e->era));
		cat_init_clear(e);
		e->ts = ts;
		arn_cfg_pin(ts);
	}
	return e;
}

/* Keep @p c as @p ts's catalog. */
static void cat_store(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts,
		      struct arn_mcp_catalog *c, uint64_t now)
{
	struct mcp_cat *e = cat_entry(m, ts);
	arn_mcp_catalog_free(e->cat);
	e->cat = c;
	e->built_ms = now;
}

/* Backend @p b's era as this worker learnt it (enum mcp_era). */
static uint8_t era_get(const struct http_mcp_req *r, uint32_t b)
{
	struct http_mcp_worker *m = r->hc->w->mcp;
	for (unsigned i = 0; i < MCP_CATALOGS; i++)
		if (m->cats[i].ts == r->ts)
			return m->cats[i].era[b];
	return ERA_UNKNOWN;
}

static void era_set(const struct http_mcp_req *r, uint32_t b, uint8_t era)
{
	cat_entry(r->hc->w->mcp, r->ts)->era[b] = era;
}

/* Backend @p b of @p r's ToolSet answered initialize or server/discover
 * with @p result: what it offers, kept for the gateway's own answers. */
static void init_keep(const struct http_mcp_req *r, uint32_t b, struct json_object *result)
{
	struct json_object *k = arn_mcp_backend_init_keep(result);
	if (!k)
		return; /* out of memory: the last one kept stays */
	struct mcp_cat *e = cat_entry(r->hc->w->mcp, r->ts);
	json_object_put(e->init[b]);
	e->init[b] = k;
}

/* What @p r's ToolSet's backends offered, as this worker learnt it, in
 * @p bi (room for the ToolSet's backends). @return how many. A backend
 * not heard from yet has no result: before any has answered, the gateway
 * offers all it serves (arn_mcp_initialize_result). */
static size_t init_merge_in(const struct http_mcp_req *r, struct arn_mcp_backend_init *bi)
{
	const struct mcp_cat *e = NULL;
	struct http_mcp_worker *m = r->hc->w->mcp;
	for (unsigned i = 0; i < MCP_CATALOGS && !e; i++)
		if (m->cats[i].ts == r->ts)
			e = &m->cats[i];
	if (!e || !r->ts)
		return 0;
	for (uint32_t b = 0; b < r->ts->n_backends; b++) {
		bi[b].name = r->ts->backends[b].name;
		bi[b].result = e->init[b];
	}
	return r->ts->n_backends;
}

static const char *start_why(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "its cluster is not configured";
	case -EHOSTUNREACH:
		return "no healthy upstream";
	case -EBUSY:
		return "overflow (circuit breaker or no buffer)";
	case -E2BIG:
		return "too many request headers";
	case -ENOMEM:
		return "out of memory";
	default:
		return "connect failed";
	}
}

/* Send the leg's current phase. @return as http_subreq_start, -ENOMEM. */
static int leg_send(struct mcp_leg *l)
{
	struct http_mcp_req *r = l->r;
	struct http_worker *w = r->hc->w;
	const struct arn_cfg_mcp_backend *be = &r->ts->backends[l->b];
	enum arn_mcp_version v =
	    sess_ok(r) ? (enum arn_mcp_version)r->s->version : ARN_MCP_V_LATEST;
	const char *sid = l->phase != LEG_INIT && l->bsid_len ? l->bsid : NULL;
	json_object_put(l->sent);
	json_object_put(l->answer);
	l->answer = NULL;
	if (l->rd_open)
		arn_mcp_reader_fini(&l->rd);
	l->rd_open = false;
	switch (l->phase) {
	case LEG_GET:
		l->sent = NULL; /* no body */
		break;
	case LEG_INIT:
		l->sent = arn_mcp_backend_initialize(v, ARN_VERSION, sess_ok(r) && r->s->relay);
		break;
	case LEG_NOTIFY:
		l->sent = arn_mcp_new_request(NULL, "notifications/initialized", NULL);
		break;
	case LEG_DISCOVER:
		l->sent = arn_mcp_backend_discover();
		break;
	default:
		/* the backend's era, whatever the client's: the stateless
		 * envelope added, or a stateless client's removed */
		if (arn_mcp_envelope_set(l->call, l->modern) != 0)
			return -ENOMEM;
		l->sent = json_object_get(l->call);
		break;
	}
	if (!l->sent && l->phase != LEG_GET)
		return -ENOMEM;
	bool modern = l->phase == LEG_DISCOVER || (l->phase == LEG_CALL && l->modern);
	if (modern)
		sid = NULL;
	size_t blen = 0;
	const char *body = l->sent ? arn_mcp_text(l->sent, &blen) : NULL;
	struct arn_mcp_header hh[MCP_LEG_HDRS];
	size_t n = arn_mcp_upstream_headers(be, sid, v, hh, MCP_LEG_HDRS);
	if (n + (modern ? 3 : 0) > MCP_LEG_HDRS)
		return -E2BIG;
	if (modern) {
		/* what a 2026-07-28 server checks against the body */
		struct json_object *mo = json_object_object_get(l->sent, "method");
		struct json_object *po = json_object_object_get(l->sent, "params");
		const char *meth = json_object_get_string(mo);
		if (!meth)
			return -EINVAL; /* not a request or a notification: never sent so */
		hh[n++] = (struct arn_mcp_header){"mcp-protocol-version", ARN_MCP_MODERN, 20,
						  sizeof(ARN_MCP_MODERN) - 1};
		hh[n++] = (struct arn_mcp_header){"mcp-method", meth, 10, strlen(meth)};
		const char *field = arn_mcp_name_field(arn_mcp_method_lookup(meth, strlen(meth)));
		struct json_object *nv = field && po ? json_object_object_get(po, field) : NULL;
		if (nv && json_object_is_type(nv, json_type_string)) {
			size_t k = arn_mcp_name_encode(json_object_get_string(nv),
						       (size_t)json_object_get_string_len(nv),
						       l->mname, sizeof(l->mname));
			if (k > sizeof(l->mname))
				return -E2BIG;
			hh[n++] = (struct arn_mcp_header){"mcp-name", l->mname, 8, k};
		}
	}
	for (size_t i = 0; i < n; i++)
		l->h[i] = (struct http_subreq_header){hh[i].name, hh[i].value, hh[i].name_len,
						      hh[i].value_len};
	l->sent_sid = sid != NULL;
	l->sr.del = l->side && r->del;
	l->sr.get = l->phase == LEG_GET;
	l->sr.msg = NULL; /* a head of its own (http_subreq.h) */
	l->kind = ARN_MCP_U_FAILED;
	snprintf(l->why, sizeof(l->why), "no answer");
	const struct arn_cfg_gen *g = w->store ? arn_config_gen(w->store) : NULL;
	/* a GET stream stays open as long as both ends keep it: no timeout */
	return http_subreq_start(&l->sr, r->hc, g, &be->cluster, be->path, be->path_len, l->h,
				 (unsigned)n, body, blen, l->sr.get ? 0 : be->timeout_ms, &leg_ops,
				 l);
}

static void leg_free(struct mcp_leg *l)
{
	struct http_mcp_req *r = l->r;
	struct http_worker *w = r->hc->w;
	http_subreq_cancel(&l->sr);
	if (l->phase == LEG_GET) {
		http_timer_cancel(&l->retry);
		if (l->live)
			HTTP_GAUGE(r->hc, mcp_backend_get_active, -1);
		l->live = false;
		w->mcp->n_bget--;
		l->phase = LEG_INIT;
	}
	if (l->rd_open)
		arn_mcp_reader_fini(&l->rd);
	l->rd_open = false;
	if (l->sse_buf)
		http_big_put(w, l->sse_buf);
	l->sse_buf = NULL;
	json_object_put(l->call);
	json_object_put(l->sent);
	json_object_put(l->answer);
	l->call = l->sent = l->answer = NULL;
	r->legs[l->slot] = NULL;
	r->n_legs--;
	l->r = NULL;
	l->next = w->mcp->leg_free;
	w->mcp->leg_free = l;
}

/* A leg to backend @p b of @p r for message @p call (taken). @return NULL
 * with *@p why when it could not start. */
static struct mcp_leg *leg_start(struct http_mcp_req *r, uint32_t b, struct json_object *call,
				 bool side, const char **why)
{
	struct http_worker *w = r->hc->w;
	struct mcp_leg *l = w->mcp->leg_free;
	uint32_t slot = 0;
	while (slot < ARN_CFG_MCP_MAX_BACKENDS && r->legs[slot])
		slot++;
	if (!l || slot == ARN_CFG_MCP_MAX_BACKENDS || !call) {
		json_object_put(call);
		*why = call ? "the gateway is busy (no backend request slot)" : "out of memory";
		return NULL;
	}
	w->mcp->leg_free = l->next;
	l->next = NULL;
	l->r = r;
	l->b = b;
	l->slot = slot;
	l->retried = side; /* a side message is not worth a new backend session */
	l->side = side;
	l->call = call;
	l->sent = l->answer = NULL;
	l->answer_bytes = 0;
	l->rd_open = false;
	l->sse_buf = NULL;
	l->bsid_len = 0;
	size_t n = 0;
	const char *bsid =
	    sess_ok(r) ? arn_mcp_session_backend(w->mcp->sessions, r->s, b, &n) : NULL;
	if (r->bsid_next) {
		bsid = r->bsid_next;
		n = r->bsid_next_len;
	} else if (!r->s && !r->bg) {
		/* a stateless client: the worker's shared backend session */
		struct mcp_cat *e = cat_entry_of(w->mcp, r->ts);
		if (e && e->bsid_len[b]) {
			bsid = e->bsid[b];
			n = e->bsid_len[b];
		}
	}
	if (bsid && n <= ARN_MCP_BACKEND_SID_MAX) {
		memcpy(l->bsid, bsid, n);
		l->bsid_len = n;
	}
	l->bsid[l->bsid_len] = 0;
	uint8_t era = era_get(r, b);
	/* a side message (the client's answer or cancellation, a DELETE)
	 * belongs to the backend session it goes in, the session era's,
	 * whatever this worker learnt of the backend since (a backend that
	 * speaks both eras, learnt from a stateless client meanwhile) */
	l->modern = era == ERA_MODERN && !side;
	l->probed = false;
	l->status = 0;
	/* a backend of unknown era is asked in the client's era first, the
	 * other if that handshake is refused (leg_probe) */
	l->phase = l->modern || l->bsid_len	     ? LEG_CALL
		   : era == ERA_UNKNOWN && r->modern ? LEG_DISCOVER
						     : LEG_INIT;
	l->start_tsc = http_tsc(w);
	r->legs[slot] = l;
	r->n_legs++;
	struct arn_stats_scope *sc = http_rt_mcp_backend(r->ts, b);
	if (sc) {
		arn_stats_inc(sc, w->slot, ARN_MCPB_rq_total);
		if (r->routed && !side)
			arn_stats_inc(sc, w->slot, ARN_MCPB_tools_call);
	}
	int rc = leg_send(l);
	if (rc != 0) {
		*why = start_why(rc);
		leg_free(l);
		return NULL;
	}
	return l;
}

static void client_of(const struct http_mcp_req *r, struct arn_cfg_request *creq,
		      struct arn_mcp_client *cl)
{
	memset(creq, 0, sizeof(*creq));
	creq->headers = r->hdrs;
	creq->n_headers = r->n_hdrs;
	*cl = (struct arn_mcp_client){.req = creq,
				      .headers_lost = r->hdrs_lost,
				      .sans = r->sans,
				      .n_sans = r->n_sans,
				      .sans_lost = r->sans_lost};
}

/*
 * The response head of an event stream (HTTP/1.1: chunked; 1.0: ended by
 * the close): 200, text/event-stream, no-cache, the session's id.
 * @return 0, or -ENOBUFS (no scratch or mbufs: the answer goes whole).
 */
static int stream_start(struct http_mcp_req *r)
{
	if (r->bg) {
		/* the head is written by the worker whose client waits */
		if (!xw_out(r, xmsg_new(X_HEAD, r->hc->w->idx, r->bg->handle, 0), false))
			return -ENOBUFS;
		r->streaming = true;
		if (!r->get)
			HTTP_INC(r->hc, mcp_streamed);
		return 0;
	}
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	r->out = http_big_get(w);
	if (!r->out)
		return -ENOBUFS;
	struct arn_h1_msg m;
	memset(&m, 0, sizeof(m));
	m.status = 200;
	m.version = 11;
	m.host_idx = -1;
	m.upgrade_idx = -1;
	struct arn_h1_edit e[6];
	unsigned n = 0;
	const char *server = hc->hcm && hc->hcm->server_name ? hc->hcm->server_name : "envoy";
#define EDIT(nm, v, vl)                                                                            \
	(struct arn_h1_edit){.name = nm,                                                           \
			     .name_len = sizeof(nm) - 1,                                           \
			     .value = v,                                                           \
			     .value_len = (uint32_t)(vl),                                          \
			     .op = ARN_H1_EDIT_ADD}
	e[n++] = EDIT("server", server, strlen(server));
	e[n++] = EDIT("content-type", "text/event-stream", 17);
	e[n++] = EDIT("cache-control", "no-cache", 8);
	if (sess_ok(r))
		e[n++] = EDIT("mcp-session-id", r->s->id, ARN_MCP_SID_LEN);
	else if (r->xfer && r->sid_len == ARN_MCP_SID_LEN)
		e[n++] = EDIT("mcp-session-id", r->sid, ARN_MCP_SID_LEN); /* another worker's */
#undef EDIT
	struct http_head_info hi = {
	    .req_method = st->method,
	    .req_version = st->version,
	    .close = hc->close_after,
	};
	struct http_peer *dn = hc->dn;
	if (dn->codec->encode_response_head(dn, &m, e, n, &hi) != 0) {
		http_big_put(w, r->out);
		r->out = NULL;
		return -ENOBUFS;
	}
	hc->close_after = hi.close;
	r->streaming = true;
	r->out_len = 0;
	st->state |= HTTP_S_RESP_STARTED;
	st->status = 200;
	st->details = "mcp_streamed";
	st->resp_first_tsc = http_tsc(w);
	http_timer_cancel(&st->req_timer);
	/* a GET stream may live for hours, a tools/call's for as long as
	 * its tool runs: it holds a large scratch buffer only while the
	 * client has not taken an event (out_ready); taken above, it said
	 * that one was there */
	http_big_put(w, r->out);
	r->out = NULL;
	if (!r->get && !r->xfer)
		HTTP_INC(hc, mcp_streamed); /* (a handed-over one: by the owner) */
	http_timer_arm(w, &r->ping, MCP_PING_MS);
	return 0;
}

/* r's output buffer, taken now if it holds none. */
static bool out_ready(struct http_mcp_req *r)
{
	if (!r->out)
		r->out = http_big_get(r->hc->w);
	return r->out != NULL;
}

/* The client took everything written from out. */
static void out_drained(struct http_mcp_req *r)
{
	r->out_len = 0;
	if (r->out) {
		http_big_put(r->hc->w, r->out);
		r->out = NULL;
	}
}

static void ping_fire(struct http_timer *t)
{
	struct http_mcp_req *r = OWNER(t, struct http_mcp_req, ping);
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	if (!r->streaming || (st->state & HTTP_S_RESP_DONE) || hc->state != HTTP_DC_OPEN)
		return;
	http_timer_arm(hc->w, t, MCP_PING_MS);
	static const char ping[] = ": ping\n\n";
	if (r->get && sess_ok(r))
		r->s->last_ms = hc->w->now_ms; /* a GET stream open keeps its session alive */
	if (r->out_len + sizeof(ping) - 1 > HTTP_BIG_SCRATCH || !out_ready(r))
		return; /* the client is not reading: no ping needed to keep it busy */
	struct http_peer *dn = hc->dn;
	memcpy(r->out + r->out_len, ping, sizeof(ping) - 1);
	dn->codec->encode_body(dn, r->out + r->out_len, sizeof(ping) - 1);
	r->out_len += sizeof(ping) - 1;
	st->tx_body += sizeof(ping) - 1;
	st->last_activity_ms = hc->w->now_ms;
	HTTP_INC(hc, mcp_ping);
	http_conn_run(hc); /* flushes it; http_mcp_run frees out once taken */
}

/* One event to the client's stream. @return false when it did not fit
 * (the output still holds what the client has not taken). */
static bool stream_text(struct http_mcp_req *r, const char *text, size_t n);

static bool stream_event(struct http_mcp_req *r, struct json_object *o)
{
	size_t n;
	const char *text = arn_mcp_text(o, &n);
	if (r->bg) {
		struct mcp_xmsg *x = xmsg_new(X_EVENT, r->hc->w->idx, r->bg->handle, n);
		if (x)
			memcpy(x->text, text, n);
		return xw_out(r, x, false);
	}
	return stream_text(r, text, n);
}

/* One event of JSON @p text (@p n bytes) to the client's stream, as
 * stream_event. */
static bool stream_text(struct http_mcp_req *r, const char *text, size_t n)
{
	struct http_stream *st = r->st;
	struct http_peer *dn = st->hc->dn;
	if (!out_ready(r))
		return false;
	size_t room = HTTP_BIG_SCRATCH - r->out_len;
	size_t k = arn_mcp_sse_event(r->out + r->out_len, room, "message", NULL, text, n);
	if (k > room)
		return false;
	dn->codec->encode_body(dn, r->out + r->out_len, k);
	r->out_len += k;
	st->tx_body += k;
	st->last_activity_ms = st->hc->w->now_ms;
	if (dn->codec->flush(dn) == 0 && !dn->queued)
		out_drained(r); /* taken: nothing points into out any more */
	return true;
}

void http_mcp_run(struct http_stream *st)
{
	struct http_mcp_req *r = st->mcp;
	if (!r || !r->streaming)
		return;
	struct http_peer *dn = st->hc->dn;
	if (dn->queued && dn->codec->flush(dn) != 0)
		return;
	out_drained(r);
	for (uint32_t i = 0; i < ARN_CFG_MCP_MAX_BACKENDS && r->n_legs; i++)
		if (r->legs[i] && r->legs[i]->sr.paused) {
			http_subreq_resume(&r->legs[i]->sr);
			return; /* the stream may have ended inside */
		}
}

/* The answer to the waiting request: @p o (taken; NULL: out of memory).
 * From a backend's callback the connection is run afterwards; the
 * request may be gone then. */
static void answer_async(struct http_mcp_req *r, struct json_object *o, const char *details)
{
	struct http_stream *st = r->st;
	struct http_conn *hc = r->hc;
	bool run = !r->in_end && !r->nested;
	if (r->nested)
		r->run_after = true;
	struct json_object *res;
	if (o && r->modern && json_object_object_get_ex(o, "result", &res))
		arn_mcp_modern_stamp(res, /* a session-era backend's, perhaps */
				     (enum arn_mcp_method)r->method, ARN_VERSION);
	r->wait = MCP_W_NONE;
	if (sess_ok(r))
		r->s->last_ms = hc->w->now_ms; /* idle counts from the answer, not the request */
	if (r->bg) {
		if (!r->streaming) {
			if (o)
				rreply(r, 200, o, sess_ok(r) ? r->s->id : NULL, NULL, details);
			else
				r500(r, "mcp_out_of_memory");
		} else if (o && stream_event(r, o)) {
			xw_out(r, xmsg_new(X_END, hc->w->idx, r->bg->handle, 0), true);
		} else {
			xw_out(r, xmsg_new(X_ABORT, hc->w->idx, r->bg->handle, 0), true);
		}
		json_object_put(o);
		return;
	}
	if (r->streaming) {
		/* the last event, then the stream's end; an answer that cannot
		 * be sent must not look like a complete stream: reset */
		struct http_peer *dn = hc->dn;
		if (!o || !stream_event(r, o)) {
			json_object_put(o);
			st->flags |= ARN_RF_BIT(LOCAL_RESET);
			http_conn_abort(hc);
			return;
		}
		json_object_put(o);
		dn->codec->encode_end(dn);
		st->state |= HTTP_S_RESP_DONE;
		hc->again = true;
		if (run)
			http_conn_run(hc);
		return;
	}
	if (!o)
		http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
	else
		reply(st, 200, o, sess_ok(r) ? r->s->id : NULL, NULL, details);
	json_object_put(o);
	if (run)
		http_conn_run(hc);
}

/* ---- the GET stream, and messages forwarded for the client ----------------------------- */

static void get_link(struct http_mcp_worker *m, struct http_mcp_req *r)
{
	r->gprev = NULL;
	r->gnext = m->gets;
	if (m->gets)
		m->gets->gprev = r;
	m->gets = r;
}

static void get_unlink(struct http_mcp_worker *m, struct http_mcp_req *r)
{
	if (!r->gprev && m->gets != r)
		return; /* not linked */
	if (r->gprev)
		r->gprev->gnext = r->gnext;
	else
		m->gets = r->gnext;
	if (r->gnext)
		r->gnext->gprev = r->gprev;
	r->gprev = r->gnext = NULL;
	if (sess_ok(r) && r->s->user == r)
		r->s->user = NULL;
}

/* Open @p r as session @p s's GET stream: the head now, the server's
 * messages as they come, ": ping" while there are none. One per session,
 * as the SDK's server allows (409 for another). */
static void get_open(struct http_mcp_req *r, struct arn_mcp_session *s)
{
	struct http_conn *hc = r->hc;
	if (s->user) {
		rreply_error(r, ARN_MCP_E_STREAM_CONFLICT, NULL, "mcp_get_stream_conflict");
		return;
	}
	r->s = s;
	r->s_gen = s->gen;
	if (stream_start(r) != 0) {
		rreply_error(r, ARN_MCP_E_INTERNAL, "no buffer for the event stream",
			     "mcp_no_buffer");
		return;
	}
	if (r->st)
		r->st->details = "mcp_get_stream";
	s->user = r;
	get_link(hc->w->mcp, r);
	HTTP_INC(hc, mcp_get_stream);
	/* what backends send outside a request comes on their own GET
	 * streams: one to each backend session the client's session has
	 * (the others open as their sessions do, leg_phase_done) */
	for (uint32_t b = 0; b < r->ts->n_backends; b++)
		bget_start(r, b);
}

/* @p o on GET stream @p r. @return false when the client was cut off
 * (it does not read its stream: it reconnects and lists again), which
 * may have ended other streams of its connection too. */
static bool get_send(struct http_mcp_req *r, struct json_object *o)
{
	if (r->bg)
		return !r->streaming || r->bg->done || stream_event(r, o);
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	if (!r->streaming || (st->state & HTTP_S_RESP_DONE) || hc->state != HTTP_DC_OPEN)
		return true;
	if (stream_event(r, o))
		return true;
	st->flags |= ARN_RF_BIT(LOCAL_RESET);
	http_conn_abort(hc);
	return false;
}

/* The session ends (DELETE, on connection @p cur): so does its GET
 * stream, cleanly. Its connection is run now unless it is @p cur (an
 * HTTP/2 connection carrying both), which runs on by itself. */
static void get_end(struct http_mcp_req *r, struct http_conn *cur)
{
	bget_close_all(r);
	get_unlink(r->hc->w->mcp, r);
	if (r->bg) {
		if (r->streaming)
			xw_out(r, xmsg_new(X_END, r->hc->w->idx, r->bg->handle, 0), true);
		return;
	}
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	if (!r->streaming || (st->state & HTTP_S_RESP_DONE) || hc->state != HTTP_DC_OPEN)
		return;
	http_timer_cancel(&r->ping);
	hc->dn->codec->encode_end(hc->dn);
	st->state |= HTTP_S_RESP_DONE;
	hc->again = true;
	if (hc != cur)
		http_conn_run(hc);
}

/* notifications/tools/list_changed to every GET stream on this worker
 * for which @p pick says so (restarting when a send cut a client off,
 * since that may have ended others). */
static void list_changed_each(struct http_mcp_worker *m,
			      bool (*pick)(struct http_mcp_req *r, const void *arg),
			      const void *arg)
{
	struct json_object *note = NULL;
	struct http_mcp_req *next;
	for (struct http_mcp_req *r = m->gets; r; r = next) {
		next = r->gnext;
		if (!pick(r, arg))
			continue;
		if (!note &&
		    !(note = arn_mcp_new_request(NULL, "notifications/tools/list_changed", NULL)))
			break;
		HTTP_INC(r->hc, mcp_list_changed);
		if (!get_send(r, note))
			next = m->gets;
	}
	json_object_put(note);
}

/* The stream's ToolSet in generation @p g differs: follow it, and say so.
 * A ToolSet replaced is taken as a changed list (backends, filters,
 * prefixes and access rules all decide it; the client lists again). */
static bool pick_gen(struct http_mcp_req *r, const void *arg)
{
	const struct arn_cfg_toolset *ts = arn_cfg_toolset_find(arg, &r->f->toolset);
	if (!ts || ts == r->ts)
		return false;
	arn_cfg_pin(ts);
	arn_cfg_unpin(r->ts);
	r->ts = ts;
	/* its backends may be others now, or in another order: the session's
	 * backend sessions follow their backends (the stream's ToolSet is
	 * its filter's, by name: the session's) */
	if (sess_ok(r))
		(void)sx_follow(r->hc->w->mcp, r->s, ts);
	bget_close_all(r);
	for (uint32_t b = 0; b < ts->n_backends; b++)
		bget_start(r, b);
	return true;
}

void http_mcp_gen(struct http_worker *w, const struct arn_cfg_gen *g)
{
	if (w->mcp && w->mcp->gets && g)
		list_changed_each(w->mcp, pick_gen, g);
	if (!w->mcp || !g)
		return;
	/* a ToolSet replaced or removed: its entry goes, and with it the
	 * shared backend sessions of its stateless clients (cat_retire) */
	for (unsigned i = 0; i < MCP_CATALOGS; i++) {
		struct mcp_cat *e = &w->mcp->cats[i];
		if (!e->ts)
			continue;
		struct arn_cfg_ref ref = {e->ts->obj.name, e->ts->obj.name_len, e->ts->obj.hash};
		if (arn_cfg_toolset_find(g, &ref) == e->ts)
			continue;
		cat_retire(w->mcp, e);
		arn_cfg_unpin(e->ts);
		arn_mcp_catalog_free(e->cat);
		cat_init_clear(e);
		memset(e, 0, sizeof(*e));
	}
}

static bool pick_ts(struct http_mcp_req *r, const void *arg)
{
	return r->ts == arg;
}

static bool pick_one(struct http_mcp_req *r, const void *arg)
{
	return r == arg;
}

/* The catalog this worker built for @p ts is stale: the next tools/list
 * asks the backends again, whatever tools_list_cache_ttl says. */
static void cat_drop(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts)
{
	struct mcp_cat *c = cat_find(m, ts);
	if (c) {
		arn_mcp_catalog_free(c->cat);
		c->cat = NULL;
	}
}

/* A backend of ToolSet @p ts said its tools changed, read on connection
 * @p hc's worker: the other workers are told from its next polls (lc_flush),
 * their catalogs dropped and, when @p notify, their GET streams of @p ts
 * told, as this worker's were. */
static void lc_owe(struct http_conn *hc, const struct arn_cfg_toolset *ts, bool notify)
{
	struct http_mcp_worker *m = hc->w->mcp;
	for (uint32_t i = 0; i < m->n_lc; i++) {
		if (m->lc[i].ts != ts)
			continue;
		m->lc[i].next = 0; /* a change after the last: all hear it again */
		m->lc[i].notify |= notify;
		return;
	}
	if (m->n_lc == MCP_LC_OWED) {
		HTTP_INC(hc, mcp_list_changed_dropped);
		return;
	}
	arn_cfg_pin(ts);
	m->lc[m->n_lc++] = (struct mcp_lc_owed){ts, 0, notify};
	m->due.due_ms = 0;
}

/* What lc_owe owes, as far as MCP_LC_INFLIGHT and the inboxes take it;
 * the rest from the next poll. */
static void lc_flush(struct http_mcp_worker *m)
{
	unsigned self = m->w->idx;
	for (uint32_t i = 0; i < m->n_lc;) {
		struct mcp_lc_owed *e = &m->lc[i];
		unsigned to = e->next;
		for (; to < ARN_MCP_MAX_WORKERS; to++) {
			if (to == self || !__atomic_load_n(&xw_in[to], __ATOMIC_ACQUIRE))
				continue;
			if (__atomic_load_n(&xw_lc_out[self], __ATOMIC_ACQUIRE) >= MCP_LC_INFLIGHT)
				break;
			struct mcp_xmsg *x = xmsg_new(X_LIST_CHANGED, self, 0, 0);
			if (!x)
				break;
			arn_cfg_pin(e->ts);
			x->ts = e->ts;
			x->notify = e->notify;
			__atomic_add_fetch(&xw_lc_out[self], 1, __ATOMIC_ACQ_REL);
			if (xw_send(to, x) != 0) {
				xmsg_free(x);
				break;
			}
		}
		e->next = (uint16_t)to;
		if (to < ARN_MCP_MAX_WORKERS) {
			i++;
			continue;
		}
		arn_cfg_unpin(e->ts);
		*e = m->lc[--m->n_lc];
	}
}

/* X_LIST_CHANGED: a backend of x->ts said its tools changed to another
 * worker. */
static void lc_heard(struct http_mcp_worker *m, const struct mcp_xmsg *x)
{
	cat_drop(m, x->ts);
	if (x->notify && m->gets)
		list_changed_each(m, pick_ts, x->ts);
}

/* A backend of @p r's ToolSet said its tools changed (on a call's
 * stream): the catalog is dropped, and the GET streams of that ToolSet
 * hear it, on every worker. */
static void backend_list_changed(struct http_mcp_req *r)
{
	struct http_mcp_worker *m = r->hc->w->mcp;
	cat_drop(m, r->ts);
	list_changed_each(m, pick_ts, r->ts);
	lc_owe(r->hc, r->ts, true);
}

/* ---- backend GET streams ----------------------------------------------------------------
 *
 * A client's GET stream (session era) holds one GET stream to each
 * backend session its session has (legs of phase LEG_GET in its legs):
 * what a backend sends outside a request (notifications/tools/list_changed
 * once a tool is registered after connect, its own requests) comes only
 * there. At most MCP_BGET_MAX per worker; reopened with back-off when the
 * backend ends one; closed with the client's GET stream or its session.
 */

static struct mcp_leg *bget_find(const struct http_mcp_req *g, uint32_t b)
{
	for (uint32_t i = 0; i < ARN_CFG_MCP_MAX_BACKENDS; i++)
		if (g->legs[i] && g->legs[i]->phase == LEG_GET && g->legs[i]->b == b)
			return g->legs[i];
	return NULL;
}

/* Send GET leg @p l, naming the backend session as the client's session
 * knows it now (re-initialized perhaps). @return 0, -ESRCH (the session
 * has none with that backend any more), or as leg_send. */
static int bget_send(struct mcp_leg *l)
{
	struct http_mcp_req *g = l->r;
	struct http_mcp_worker *m = g->hc->w->mcp;
	size_t n = 0;
	const char *bsid = sess_ok(g) ? arn_mcp_session_backend(m->sessions, g->s, l->b, &n) : NULL;
	if (!bsid || !n || n > ARN_MCP_BACKEND_SID_MAX)
		return -ESRCH;
	memcpy(l->bsid, bsid, n);
	l->bsid_len = n;
	l->bsid[n] = 0;
	l->status = 0;
	l->kind = ARN_MCP_U_FAILED;
	int rc = leg_send(l);
	if (rc == 0)
		HTTP_INC(g->hc, mcp_backend_get_opened);
	return rc;
}

/* Try @p l again after its back-off, which doubles for the next time. */
static void bget_later(struct mcp_leg *l)
{
	http_timer_arm(l->r->hc->w, &l->retry, l->backoff_ms);
	l->backoff_ms = l->backoff_ms >= MCP_BGET_BACKOFF_MAX_MS / 2 ? MCP_BGET_BACKOFF_MAX_MS
								     : l->backoff_ms * 2;
}

static void bget_retry(struct http_timer *t)
{
	struct mcp_leg *l = OWNER(t, struct mcp_leg, retry);
	if (!l->r || l->phase != LEG_GET)
		return;
	HTTP_INC(l->r->hc, mcp_backend_get_reopened);
	int rc = bget_send(l);
	if (rc == -ESRCH)
		leg_free(l);
	else if (rc != 0)
		bget_later(l);
}

/* Client GET stream @p g gets a GET stream to backend @p b's session, if
 * its session has one with @p b and @p g holds none yet (one waiting out
 * its back-off is tried now: the backend session may be a new one). */
static void bget_start(struct http_mcp_req *g, uint32_t b)
{
	struct http_conn *hc = g->hc;
	struct http_mcp_worker *m = hc->w->mcp;
	if (!g->get || !g->streaming || !sess_ok(g) || g->s->user != g || !g->ts ||
	    b >= g->ts->n_backends || !arn_mcp_session_backend(m->sessions, g->s, b, NULL))
		return;
	struct mcp_leg *l = bget_find(g, b);
	if (l) {
		if (!l->sr.running && l->retry.armed) {
			http_timer_cancel(&l->retry);
			bget_retry(&l->retry);
		}
		return;
	}
	uint32_t slot = 0;
	while (slot < ARN_CFG_MCP_MAX_BACKENDS && g->legs[slot])
		slot++;
	if (m->n_bget >= MCP_BGET_MAX || !m->leg_free || slot == ARN_CFG_MCP_MAX_BACKENDS) {
		HTTP_INC(hc, mcp_backend_get_overflow);
		return;
	}
	l = m->leg_free;
	m->leg_free = l->next;
	l->next = NULL;
	l->r = g;
	l->b = b;
	l->slot = slot;
	l->phase = LEG_GET;
	l->retried = true;
	l->side = false;
	l->call = l->sent = l->answer = NULL;
	l->rd_open = false;
	l->sse_buf = NULL;
	l->bsid_len = 0;
	l->modern = false;
	l->probed = true;
	l->live = false;
	l->backoff_ms = MCP_BGET_BACKOFF_MS;
	l->retry.fn = bget_retry;
	l->start_tsc = http_tsc(hc->w);
	g->legs[slot] = l;
	g->n_legs++;
	m->n_bget++;
	int rc = bget_send(l);
	if (rc == -ESRCH)
		leg_free(l);
	else if (rc != 0)
		bget_later(l);
}

static void bget_close_all(struct http_mcp_req *g)
{
	for (uint32_t i = 0; i < ARN_CFG_MCP_MAX_BACKENDS && g->n_legs; i++)
		if (g->legs[i] && g->legs[i]->phase == LEG_GET)
			leg_free(g->legs[i]);
}

/* Backend GET stream @p l ended (the backend closed it) or failed
 * (@p why): reopened after its back-off, unless the backend said it has
 * no such stream (405, 406, ...: no GET stream then) or forgot the
 * session (404: the next request to it opens another, and with it a GET
 * stream, leg_phase_done). */
static void bget_ended(struct mcp_leg *l, const char *why)
{
	struct http_mcp_req *g = l->r;
	struct http_conn *hc = g->hc;
	struct http_mcp_worker *m = hc->w->mcp;
	if (l->rd_open)
		arn_mcp_reader_fini(&l->rd);
	l->rd_open = false;
	HTTP_INC(hc, mcp_backend_get_closed);
	if (l->live)
		HTTP_GAUGE(hc, mcp_backend_get_active, -1);
	l->live = false;
	ARN_DEBUG(HTTP, "MCP: the GET stream of backend '%s' ended (HTTP %u): %s",
		  g->ts->backends[l->b].name, l->status, why ? why : "closed by the backend");
	unsigned st = l->status;
	bool again = st == 0 || l->kind == ARN_MCP_U_SSE || st == 409 || st == 429 || st >= 500;
	if (l->kind == ARN_MCP_U_SESSION_GONE && sess_ok(g))
		arn_mcp_session_backend_forget(m->sessions, g->s, l->b);
	if (!again || l->kind == ARN_MCP_U_SESSION_GONE) {
		HTTP_INC(hc, mcp_backend_get_refused);
		leg_free(l);
		return;
	}
	bget_later(l);
}

/* One message on a backend's GET stream: list_changed drops the catalog
 * and tells this client; the backend's requests are relayed with wrapped
 * ids (its answers come back through forward_reply), its other
 * notifications pass as they are. */
static void bget_event(struct mcp_leg *l, struct arn_mcp_msg *m)
{
	struct http_mcp_req *g = l->r;
	struct http_mcp_worker *mw = g->hc->w->mcp;
	if (m->kind == ARN_MCP_NOTIFICATION && m->method == ARN_MCP_M_N_TOOLS_LIST_CHANGED) {
		HTTP_INC(g->hc, mcp_backend_list_changed);
		cat_drop(mw, g->ts);
		/* this client's only: every client session has its own backend
		 * sessions, each of which says so on its own stream; every
		 * worker's catalog of the ToolSet is stale all the same */
		list_changed_each(mw, pick_one, g);
		lc_owe(g->hc, g->ts, false);
		return;
	}
	if (m->kind == ARN_MCP_RESULT || m->kind == ARN_MCP_ERROR)
		return; /* answers to the gateway's own requests come on their POSTs */
	if ((m->kind != ARN_MCP_REQUEST || relay_request(l, m)) &&
	    arn_mcp_from_backend(m, l->b) == 0)
		get_send(g, m->obj);
}

/* Every message forwarded for a POST of answers and notifications went:
 * 202, as a backend would. */
static void forward_done(struct http_mcp_req *r)
{
	struct http_conn *hc = r->hc;
	bool run = !r->in_end;
	r->wait = MCP_W_NONE;
	if (r->bg && !r->bg->remote) {
		bg_finish(r); /* DELETEs nobody waits for: they went */
		return;
	}
	if (r->del)
		rreply(r, 200, NULL, NULL, NULL, "mcp_session_deleted");
	else
		rreply(r, 202, NULL, NULL, NULL, "mcp_accepted");
	if (run)
		http_conn_run(hc);
}

/* @p msg (taken) to backend @p b in the session's own backend session,
 * as a side leg of @p r. Nothing is sent to a backend the session never
 * opened (it cannot be waiting for anything). @return whether it went. */
static bool side_start(struct http_mcp_req *r, uint32_t b, struct json_object *msg)
{
	struct http_worker *w = r->hc->w;
	if (!msg || !sess_ok(r) || b >= r->ts->n_backends ||
	    !arn_mcp_session_backend(w->mcp->sessions, r->s, b, NULL)) {
		json_object_put(msg);
		return false;
	}
	const char *why = NULL;
	if (!leg_start(r, b, msg, true, &why)) {
		ARN_DEBUG(HTTP, "MCP: could not forward to backend '%s': %s",
			  r->ts->backends[b].name, why);
		return false;
	}
	return true;
}

/* DELETE: the session ends here and at every backend it opened a session
 * with (a DELETE naming that session each; their answers are not
 * waited on beyond their timeouts), and its GET stream ends. 200 once the
 * backends answered. */
static void session_delete(struct http_mcp_req *r, struct arn_mcp_session *s)
{
	struct http_conn *hc = r->hc;
	struct http_worker *w = hc->w;
	if (s->user)
		get_end(s->user, hc);
	r->s = s;
	r->s_gen = s->gen;
	r->in_end = true;
	for (uint32_t b = 0; b < r->ts->n_backends; b++)
		side_start(r, b, json_object_new_object()); /* only those it has a session with */
	r->in_end = false;
	sess_close(w->mcp, s);
	HTTP_INC(hc, mcp_session_closed);
	if (r->n_legs) {
		r->wait = MCP_W_FORWARD; /* forward_done */
		return;
	}
	rreply(r, 200, NULL, NULL, NULL, "mcp_session_deleted");
}

/* The client's answer @p m to a backend's request: its id unwrapped, to
 * that backend, if the gateway relayed that request and it is still
 * unanswered; else dropped. */
static void forward_reply(struct http_mcp_req *r, const struct arn_mcp_msg *m)
{
	struct http_conn *hc = r->hc;
	uint32_t b = 0;
	struct json_object *id = NULL;
	if (arn_mcp_id_unwrap(m->id, &b, &id) != 0 || !sess_ok(r) ||
	    arn_mcp_session_pending_take(r->s, b, id) != 0) {
		json_object_put(id);
		HTTP_INC(hc, mcp_reply_dropped);
		return;
	}
	json_object_object_add(m->obj, "id", id); /* the backend's own id again */
	if (side_start(r, b, json_object_get(m->obj)))
		HTTP_INC(hc, mcp_reply_forwarded);
}

/* notifications/cancelled @p m: to the backend running the session's
 * tools/call with that id (ids are kept on the way, so it names the same
 * request there), whose request to the backend ends now; the call's own
 * HTTP request is answered -32000 "Request cancelled" (the last event of its stream when it
 * streams). */
static void forward_cancel(struct http_mcp_req *r, const struct arn_mcp_msg *m)
{
	struct http_mcp_worker *mw = r->hc->w->mcp;
	struct json_object *rid = m->params ? json_object_object_get(m->params, "requestId") : NULL;
	if (!rid || !sess_ok(r))
		return;
	for (uint32_t i = 0; i < mw->n + mw->n_bg; i++) {
		/* the session's calls run here, handed over from other workers or not */
		struct http_mcp_req *c = i < mw->n ? &mw->mem[i] : &mw->bgs[i - mw->n].r;
		if (c == r || c->wait != MCP_W_CALL || (c->bg && (!c->bg->used || c->bg->done)) ||
		    (!c->bg && !c->st) || !c->routed || c->s != r->s || c->s_gen != r->s_gen ||
		    !c->id || !json_object_equal(c->id, rid))
			continue;
		side_start(r, c->call_b, json_object_get(m->obj));
		for (uint32_t k = 0; k < ARN_CFG_MCP_MAX_BACKENDS && c->n_legs; k++)
			if (c->legs[k])
				leg_free(c->legs[k]);
		HTTP_INC(c->hc, mcp_cancelled);
		/* the call's connection is run now, unless it is this one (HTTP/2) */
		bool same = c->hc == r->hc;
		c->in_end = same;
		answer_async(c, arn_mcp_new_error(c->id, ARN_MCP_E_CANCELLED, NULL),
			     "mcp_cancelled");
		if (same) {
			c->in_end = false;
			r->hc->again = true;
		}
		return;
	}
}

static void route_call(struct http_mcp_req *r);

/* The catalog is there (or the round left it empty): go on. */
static void with_catalog(struct http_mcp_req *r, const struct arn_mcp_catalog *cat)
{
	struct arn_cfg_request creq;
	struct arn_mcp_client cl;
	client_of(r, &creq, &cl);
	if (r->wait == MCP_W_LIST) {
		struct json_object *res = NULL;
		enum arn_mcp_err e = cat ? arn_mcp_tools_list(cat, r->ts, &cl, r->params, 0, &res)
					 : ARN_MCP_E_INTERNAL;
		struct json_object *o =
		    e ? arn_mcp_new_error(r->id, e, NULL) : arn_mcp_new_result(r->id, res);
		json_object_put(res);
		answer_async(r, o, "mcp_tools_list");
		return;
	}
	struct json_object *nm = r->params ? json_object_object_get(r->params, "name") : NULL;
	if (nm && json_object_is_type(nm, json_type_string)) {
		size_t n = (size_t)json_object_get_string_len(nm);
		r->tool_len = (uint32_t)(n < sizeof(r->tool) ? n : sizeof(r->tool) - 1);
		memcpy(r->tool, json_object_get_string(nm), r->tool_len);
	}
	const struct arn_mcp_tool *t = NULL;
	enum arn_mcp_err e =
	    cat ? arn_mcp_tools_call(cat, r->ts, &cl, r->params, &t) : ARN_MCP_E_UNKNOWN_TOOL;
	if (e) {
		if (e == ARN_MCP_E_FORBIDDEN_TOOL)
			HTTP_INC(r->hc, mcp_tool_forbidden);
		else if (e == ARN_MCP_E_UNKNOWN_TOOL)
			HTTP_INC(r->hc, mcp_tool_unknown);
		answer_async(r, arn_mcp_new_error(r->id, e, NULL), "mcp_tools_call_refused");
		return;
	}
	r->call_b = t->backend;
	r->routed = true;
	route_call(r);
}

static void route_call(struct http_mcp_req *r)
{
	const char *why = NULL;
	struct json_object *call = arn_mcp_new_request(r->id, "tools/call", r->params);
	HTTP_INC(r->hc, mcp_tools_call);
	if (!leg_start(r, r->call_b, call, false, &why)) {
		answer_async(r, arn_mcp_backend_error(r->id, r->ts->backends[r->call_b].name, why),
			     "mcp_backend_failed");
	}
}

static void prim_round(struct http_mcp_req *r, enum arn_mcp_prim k);

/* Every backend's prompts or resources list is in: answer the merged
 * list, or route the get / read to the backend that listed it (a
 * resources/read of a URI none lists: a round of templates next). */
static void prim_done(struct http_mcp_req *r)
{
	struct json_object *lists[ARN_CFG_MCP_MAX_BACKENDS] = {0};
	for (uint32_t i = 0; i < r->fan.n && i < ARN_CFG_MCP_MAX_BACKENDS; i++)
		lists[i] = r->fan.b[i].state == ARN_MCP_F_DONE ? r->fan.b[i].tools : NULL;
	enum arn_mcp_prim k = (enum arn_mcp_prim)r->fan.kind;
	struct arn_cfg_request creq;
	struct arn_mcp_client cl;
	client_of(r, &creq, &cl);
	if (r->prim_list) {
		struct json_object *res = arn_mcp_prim_merge(r->ts, k, lists, &cl);
		arn_mcp_fanout_fini(&r->fan);
		r->fan_open = false;
		struct json_object *o = res ? arn_mcp_new_result(r->id, res) : NULL;
		json_object_put(res);
		answer_async(r, o, "mcp_prim_list");
		return;
	}
	uint32_t b = 0;
	enum arn_mcp_err e = arn_mcp_prim_route(r->ts, k, lists, &cl, r->params, &b);
	arn_mcp_fanout_fini(&r->fan);
	r->fan_open = false;
	if (e == ARN_MCP_E_UNKNOWN_RESOURCE && k == ARN_MCP_P_RESOURCES) {
		prim_round(r, ARN_MCP_P_TEMPLATES); /* its second and last round */
		return;
	}
	if (e) {
		answer_async(r, arn_mcp_new_error(r->id, e, NULL), "mcp_prim_refused");
		return;
	}
	r->call_b = b;
	r->routed = true;
	const char *why = NULL;
	struct json_object *call = arn_mcp_new_request(
	    r->id, arn_mcp_method_name((enum arn_mcp_method)r->method), r->params);
	if (!leg_start(r, b, call, false, &why))
		answer_async(r, arn_mcp_backend_error(r->id, r->ts->backends[b].name, why),
			     "mcp_backend_failed");
}

/* A tools/list round's backend @p b answered @p ans (a reference, or NULL
 * with @p why), @p bytes as received. */
static void fan_answer(struct http_mcp_req *r, uint32_t b, struct json_object *ans, size_t bytes,
		       const char *why)
{
	struct http_worker *w = r->hc->w;
	if (ans) {
		struct arn_mcp_msg m;
		arn_mcp_msg_decode(ans, &m);
		if (arn_mcp_fanout_answer(&r->fan, b, &m, bytes) == ARN_MCP_F_ASK) {
			const char *sw = NULL;
			/* the next page: its sub-request may fail before
			 * http_subreq_start returns, and that failure may
			 * answer the client (the last backend): then the
			 * round is over here and the connection runs once */
			r->nested++;
			bool started =
			    leg_start(r, b, arn_mcp_fanout_request(&r->fan, b), false, &sw);
			r->nested--;
			if (!started) {
				arn_mcp_fanout_fail(&r->fan, b, sw);
			} else if (r->wait == MCP_W_NONE) {
				json_object_put(ans);
				if (r->run_after && !r->nested) {
					r->run_after = false;
					if (!r->in_end)
						http_conn_run(r->hc);
				}
				return;
			}
		}
	} else {
		arn_mcp_fanout_fail(&r->fan, b, why);
	}
	json_object_put(ans);
	if (b < r->fan.n && r->fan.b[b].state == ARN_MCP_F_FAILED) {
		HTTP_INC(r->hc, mcp_backend_error);
		ARN_DEBUG(HTTP, "MCP tools/list: backend '%s' left out: %s",
			  r->ts->backends[b].name, r->fan.b[b].why);
	}
	if (!arn_mcp_fanout_done(&r->fan))
		return;
	if (r->wait == MCP_W_PRIM) {
		prim_done(r);
		return;
	}
	struct arn_mcp_catalog *cat = arn_mcp_fanout_catalog(&r->fan);
	arn_mcp_fanout_fini(&r->fan);
	r->fan_open = false;
	if (cat)
		cat_store(w->mcp, r->ts, cat, w->now_ms);
	with_catalog(r, cat);
}

/* Whether a tools/call's answer @p ans (NULL: the backend failed) counts
 * as an error in the tool's statistics: none, a JSON-RPC error, or a
 * result saying isError (the tool itself failed). */
static bool call_failed(struct json_object *ans)
{
	struct json_object *res, *ie;
	if (!ans || !json_object_object_get_ex(ans, "result", &res))
		return true;
	return json_object_object_get_ex(res, "isError", &ie) &&
	       json_object_is_type(ie, json_type_boolean) && json_object_get_boolean(ie);
}

/* The leg's message was answered (its answer in l->answer) or failed
 * (@p why): hand it to the request, and the leg goes back. */
static void leg_done(struct mcp_leg *l, const char *why)
{
	struct http_mcp_req *r = l->r;
	shared_bsid_done(l);
	uint32_t b = l->b;
	struct json_object *ans = why ? NULL : json_object_get(l->answer);
	size_t ans_bytes = l->answer_bytes;
	struct http_worker *w = r->hc->w;
	struct arn_stats_scope *sc = http_rt_mcp_backend(r->ts, b);
	if (sc) {
		arn_stats_hist_record(sc, w->slot, ARN_MCPB_rq_time, http_now_us(w, l->start_tsc));
		if (why)
			arn_stats_inc(sc, w->slot, ARN_MCPB_rq_error);
		if (why && !strncmp(why, "timed out", 9))
			arn_stats_inc(sc, w->slot, ARN_MCPB_rq_timeout);
	}
	if (r->routed && !l->side && r->wait == MCP_W_CALL)
		http_mcp_tools_count(w, r->ts->obj.name, r->ts->obj.name_len, r->tool, r->tool_len,
				     call_failed(ans), http_now_us(w, l->start_tsc));
	if (l->side) {
		/* nothing answers the client from it; a forward that failed is
		 * like a message lost on the way (the backend times out) */
		if (why)
			ARN_DEBUG(HTTP, "MCP: a message forwarded to backend '%s' failed: %s",
				  r->ts->backends[b].name, why);
		json_object_put(ans);
		leg_free(l);
		if (r->wait == MCP_W_FORWARD && r->n_legs == 0)
			forward_done(r);
		return;
	}
	char whybuf[sizeof(l->why)];
	if (why) {
		snprintf(whybuf, sizeof(whybuf), "%s", why);
		why = whybuf;
	}
	leg_free(l);
	if (r->wait == MCP_W_LIST ||
	    ((r->wait == MCP_W_CALL || r->wait == MCP_W_PRIM) && !r->routed)) {
		fan_answer(r, b, ans, ans_bytes, why);
		return;
	}
	if (!ans) {
		HTTP_INC(r->hc, mcp_backend_error);
		answer_async(r, arn_mcp_backend_error(r->id, r->ts->backends[b].name, why),
			     "mcp_backend_failed");
		return;
	}
	struct arn_mcp_msg m;
	if (arn_mcp_msg_decode(ans, &m) != ARN_MCP_E_NONE ||
	    (m.kind != ARN_MCP_RESULT && m.kind != ARN_MCP_ERROR)) {
		json_object_put(ans);
		answer_async(r,
			     arn_mcp_backend_error(r->id, r->ts->backends[b].name,
						   "its answer is not a JSON-RPC response"),
			     "mcp_backend_failed");
		return;
	}
	/* the client's own id, whatever the backend echoed */
	json_object_object_add(ans, "id", json_object_get(r->id));
	answer_async(r, ans, r->wait == MCP_W_PRIM ? "mcp_prim" : "mcp_tools_call");
}

/* The backend answered (an HTTP status) but refused initialize: ask
 * whether it is of the stateless era, once. @return true when the leg
 * goes on that way. */
static bool leg_probe(struct mcp_leg *l)
{
	if (l->probed || l->status == 0 || era_get(l->r, l->b) != ERA_UNKNOWN)
		return false;
	l->probed = true;
	l->phase = LEG_DISCOVER;
	return leg_send(l) == 0;
}

/* server/discover answered (or failed: @p why): the call in 2026-07-28's
 * form, or the session era's handshake. */
static void discover_done(struct mcp_leg *l, const char *why)
{
	struct arn_mcp_msg dm;
	if (!why && arn_mcp_msg_decode(l->answer, &dm) == ARN_MCP_E_NONE &&
	    arn_mcp_discover_modern(&dm)) {
		era_set(l->r, l->b, ERA_MODERN);
		init_keep(l->r, l->b, dm.result);
		l->modern = true;
		l->phase = LEG_CALL;
	} else if (l->status == 0 || l->probed) {
		/* no HTTP answer, or initialize was refused already */
		leg_done(l, why ? why
				: "neither initialize nor server/discover (2026-07-28) answered");
		return;
	} else {
		l->probed = true;
		l->phase = LEG_INIT;
	}
	int rc = leg_send(l);
	if (rc != 0)
		leg_done(l, start_why(rc));
}

/* The phase's answer is in (or it failed: @p why): the next phase. */
static void leg_phase_done(struct mcp_leg *l, const char *why)
{
	struct http_mcp_req *r = l->r;
	struct http_worker *w = r->hc->w;
	if (l->sse_buf)
		http_big_put(w, l->sse_buf);
	l->sse_buf = NULL;
	if (l->phase == LEG_GET) {
		bget_ended(l, why);
		return;
	}
	if (!why) {
		switch (l->kind) {
		case ARN_MCP_U_JSON: {
			struct arn_mcp_body body;
			l->answer_bytes = l->rd_open ? l->rd.bytes : 0;
			enum arn_mcp_err e = l->rd_open
						 ? arn_mcp_reader_finish(&l->rd, false, &body)
						 : ARN_MCP_E_PARSE;
			if (l->rd_open)
				arn_mcp_reader_fini(&l->rd);
			l->rd_open = false;
			if (e || body.n != 1) {
				snprintf(l->why, sizeof(l->why), "its answer is not JSON-RPC (%s)",
					 arn_mcp_err_name(e));
				why = l->why;
			} else {
				l->answer = json_object_get(body.msgs[0].obj);
			}
			arn_mcp_body_release(&body);
			break;
		}
		case ARN_MCP_U_SSE:
			if (!l->answer)
				why = "its event stream ended without an answer";
			break;
		case ARN_MCP_U_ACCEPTED:
			if (l->phase != LEG_NOTIFY && !l->side)
				why = "it answered 202 to a request";
			break;
		case ARN_MCP_U_SESSION_GONE:
			if (sess_ok(r))
				arn_mcp_session_backend_forget(w->mcp->sessions, r->s, l->b);
			else if (!r->s && !r->bg)
				shared_bsid_set(r, l->b, NULL, 0, l->bsid, l->bsid_len);
			if (!l->retried) {
				/* it forgot its session: open another, send again (once) */
				l->retried = true;
				l->phase = LEG_INIT;
				l->bsid_len = 0;
				int rc = leg_send(l);
				if (rc == 0)
					return;
				why = start_why(rc);
			} else {
				why = "session not found (twice)";
			}
			break;
		default:
			why = l->why;
			break;
		}
	}
	if (l->phase == LEG_DISCOVER) {
		discover_done(l, why);
		return;
	}
	if (why && l->phase == LEG_CALL && l->modern && l->status >= 400)
		era_set(r, l->b, ERA_UNKNOWN); /* learnt again next time */
	if (why && l->phase == LEG_INIT && leg_probe(l))
		return;
	if (why) {
		leg_done(l, why);
		return;
	}
	int rc = 0;
	switch (l->phase) {
	case LEG_INIT: {
		struct arn_mcp_msg m;
		if (arn_mcp_msg_decode(l->answer, &m) != ARN_MCP_E_NONE ||
		    m.kind != ARN_MCP_RESULT) {
			if (!leg_probe(l))
				leg_done(l, "initialize refused");
			return;
		}
		if (era_get(r, l->b) == ERA_UNKNOWN)
			era_set(r, l->b, ERA_SESSION);
		init_keep(r, l->b, m.result);
		if (l->bsid_len && sess_ok(r))
			arn_mcp_session_backend_set(w->mcp->sessions, r->s, l->b, l->bsid,
						    l->bsid_len);
		else if (l->bsid_len && !r->s && !r->bg)
			shared_bsid_set(r, l->b, l->bsid, l->bsid_len, NULL, 0);
		l->phase = LEG_NOTIFY;
		rc = leg_send(l);
		break;
	}
	case LEG_NOTIFY:
		/* the backend session is usable now: the client's GET stream,
		 * if it holds one, gets that session's */
		if (sess_ok(r) && r->s->user)
			bget_start(r->s->user, l->b);
		l->phase = LEG_CALL;
		rc = leg_send(l);
		break;
	default:
		leg_done(l, NULL);
		return;
	}
	if (rc != 0)
		leg_done(l, start_why(rc));
}

static struct mcp_leg *leg_of(struct http_subreq *sr)
{
	return sr->user;
}

static void leg_ops_head(struct http_subreq *sr, const struct arn_h1_msg *m)
{
	struct mcp_leg *l = leg_of(sr);
	int ci = arn_h1_find(m, "content-type", 12, 0);
	l->status = m->status;
	l->kind = arn_mcp_upstream_classify(m->status, ci >= 0 ? m->hdrs[ci].value : NULL,
					    ci >= 0 ? m->hdrs[ci].value_len : 0, l->sent_sid);
	if (l->phase == LEG_INIT) {
		int si = arn_h1_find(m, "mcp-session-id", 14, 0);
		if (si >= 0 && m->hdrs[si].value_len <= ARN_MCP_BACKEND_SID_MAX) {
			memcpy(l->bsid, m->hdrs[si].value, m->hdrs[si].value_len);
			l->bsid_len = m->hdrs[si].value_len;
			l->bsid[l->bsid_len] = 0;
		}
	}
	if (l->kind == ARN_MCP_U_JSON) {
		struct arn_mcp_limits lim = {.max_message_bytes = l->r->f->max_response_bytes};
		if (arn_mcp_reader_init(&l->rd, &lim) == 0)
			l->rd_open = true;
		else
			l->kind = ARN_MCP_U_FAILED;
	} else if (l->kind == ARN_MCP_U_SSE) {
		/* its buffer is taken while an event is read (leg_ops_body) */
		l->sse_buf = NULL;
		arn_mcp_sse_init(&l->sse, NULL, HTTP_BIG_SCRATCH);
	}
	if (l->kind == ARN_MCP_U_FAILED)
		snprintf(l->why, sizeof(l->why), "HTTP %u", m->status);
	if (l->phase == LEG_GET && l->kind == ARN_MCP_U_SSE) {
		/* open: the next reopen waits the shortest back-off again */
		l->backoff_ms = MCP_BGET_BACKOFF_MS;
		l->live = true;
		HTTP_GAUGE(l->r->hc, mcp_backend_get_active, 1);
	}
}

/* @p r's tag for the session's pending requests it relayed. */
static uint32_t req_tag(const struct http_mcp_req *r)
{
	const struct http_mcp_worker *m = r->hc->w->mcp;
	return r->bg ? m->n + (uint32_t)(r->bg - m->bgs) : (uint32_t)(r - m->mem);
}

/* A backend's request to the client (elicitation, sampling, roots/list)
 * on its tools/call stream: remembered so that the client's answer goes
 * back to it (@return true: relay it), or, past ARN_MCP_MAX_PENDING,
 * answered here with an error (@return false). */
static bool relay_request(struct mcp_leg *l, struct arn_mcp_msg *m)
{
	struct http_mcp_req *r = l->r;
	struct http_conn *hc = r->hc;
	int rc = sess_ok(r) ? arn_mcp_session_pending_add(r->s, l->b, m->id, req_tag(r)) : -ENOENT;
	if (rc == 0) {
		HTTP_INC(hc, mcp_relayed_request);
		return true;
	}
	HTTP_INC(hc, mcp_pending_full);
	side_start(r, l->b, arn_mcp_new_error(m->id, ARN_MCP_E_PENDING_FULL, NULL));
	return false;
}

/* One event of a backend's event stream: the answer, or something the
 * client is not sent yet (its own notifications and requests need the
 * streamed replies). */
static void leg_event(struct mcp_leg *l, const struct arn_mcp_sse_ev *ev)
{
	if (l->answer ||
	    (ev->event_len && !(ev->event_len == 7 && memcmp(ev->event, "message", 7) == 0)))
		return;
	struct arn_mcp_limits lim = {.max_message_bytes = l->r->f->max_response_bytes};
	struct arn_mcp_body body;
	if (arn_mcp_parse(ev->data, ev->data_len, &lim, false, &body) != ARN_MCP_E_NONE)
		return;
	struct arn_mcp_msg *m = &body.msgs[0];
	struct http_mcp_req *r = l->r;
	if (l->phase == LEG_GET) {
		if (body.n == 1)
			bget_event(l, m);
		arn_mcp_body_release(&body);
		return;
	}
	if (body.n == 1 && m->kind == ARN_MCP_NOTIFICATION &&
	    m->method == ARN_MCP_M_N_TOOLS_LIST_CHANGED)
		backend_list_changed(r);
	if (body.n == 1 && (m->kind == ARN_MCP_RESULT || m->kind == ARN_MCP_ERROR)) {
		l->answer = json_object_get(m->obj);
		l->answer_bytes = ev->data_len;
	} else if (body.n == 1 && r->wait == MCP_W_CALL && r->routed && l->phase == LEG_CALL &&
		   !l->side && (m->kind != ARN_MCP_REQUEST || relay_request(l, m)) &&
		   arn_mcp_from_backend(m, l->b) == 0) {
		/* progress, logging, the backend's own requests: to the
		 * client as they come, on an event stream */
		if ((r->streaming || stream_start(r) == 0) && !stream_event(r, m->obj)) {
			snprintf(l->why, sizeof(l->why),
				 "an event the client's stream has no room for");
			l->kind = ARN_MCP_U_FAILED;
		}
	}
	arn_mcp_body_release(&body);
}

static void leg_ops_body(struct http_subreq *sr, const char *data, size_t len)
{
	struct mcp_leg *l = leg_of(sr);
	if (l->kind == ARN_MCP_U_JSON && l->rd_open) {
		int rc = arn_mcp_reader_feed(&l->rd, data, len);
		if (rc != ARN_AGAIN) {
			snprintf(l->why, sizeof(l->why), "its answer is refused (%s)",
				 arn_mcp_err_name((enum arn_mcp_err)rc));
			l->kind = ARN_MCP_U_FAILED;
		}
		return;
	}
	if (l->kind != ARN_MCP_U_SSE)
		return;
	if (!l->sse_buf) {
		l->sse_buf = http_big_get(l->r->hc->w);
		if (!l->sse_buf) {
			snprintf(l->why, sizeof(l->why), "no buffer for its event stream");
			l->kind = ARN_MCP_U_FAILED;
			return;
		}
		l->sse.buf = l->sse_buf;
	}
	while (len) {
		struct arn_mcp_sse_ev ev;
		ssize_t k = arn_mcp_sse_feed(&l->sse, data, len, &ev);
		if (k == ARN_AGAIN)
			return;
		if (k < 0) {
			snprintf(l->why, sizeof(l->why), "an event over %u bytes",
				 (unsigned)HTTP_BIG_SCRATCH);
			l->kind = ARN_MCP_U_FAILED;
			return;
		}
		leg_event(l, &ev);
		if (!l->r)
			return; /* a GET leg whose client was cut off while it relayed (get_send) */
		data += k;
		len -= (size_t)k;
	}
	if (l->sse.len == 0 && !l->sse.has_data) {
		/* between events: the parser keeps its state, the buffer holds
		 * nothing, and a quiet stream should not hold one */
		http_big_put(l->r->hc->w, l->sse_buf);
		l->sse_buf = l->sse.buf = NULL;
	}
	/* the client has not taken what its stream was sent: read no more
	 * of the backend until it has (http_mcp_run resumes) */
	if (l->r->streaming && l->r->st && l->r->hc->dn->queued)
		http_subreq_pause(&l->sr);
}

static void leg_ops_end(struct http_subreq *sr)
{
	leg_phase_done(leg_of(sr), NULL);
}

static void leg_ops_failed(struct http_subreq *sr, const char *why)
{
	struct mcp_leg *l = leg_of(sr);
	snprintf(l->why, sizeof(l->why), "%s", why);
	leg_phase_done(l, l->why);
}

/* tools/list or tools/call @p m of session @p s: answered from the
 * catalog, or once the backends answered. */
static void start_tools(struct http_mcp_req *r, const struct arn_mcp_msg *m,
			struct arn_mcp_session *s, bool list)
{
	struct http_worker *w = r->hc->w;
	r->s = s;
	r->s_gen = s ? s->gen : 0;
	r->msg = json_object_get(m->obj);
	r->id = m->id;
	r->params = m->params;
	r->routed = false;
	r->method = list ? ARN_MCP_M_TOOLS_LIST : ARN_MCP_M_TOOLS_CALL;
	r->wait = list ? MCP_W_LIST : MCP_W_CALL;
	if (list)
		HTTP_INC(r->hc, mcp_tools_list);
	struct mcp_cat *c = cat_find(w->mcp, r->ts);
	bool fresh = c && r->ts->tools_list_cache_ttl_ms &&
		     w->now_ms - c->built_ms < r->ts->tools_list_cache_ttl_ms;
	/* tools/call routes by the last catalog built; tools/list builds a
	 * new one unless tools_list_cache_ttl says the last is fresh */
	if (c && (fresh || !list)) {
		with_catalog(r, c->cat);
		return;
	}
	/* a backend's pages together are bounded as one answer is */
	struct arn_mcp_limits lim = {.max_message_bytes = r->f->max_response_bytes};
	if (arn_mcp_fanout_init(&r->fan, r->ts, &lim) != 0) {
		with_catalog(r, NULL);
		return;
	}
	r->fan_open = true;
	for (uint32_t b = 0; b < r->fan.n; b++) {
		const char *why = NULL;
		if (!leg_start(r, b, arn_mcp_fanout_request(&r->fan, b), false, &why))
			fan_answer(r, b, NULL, 0, why);
		if (!r->fan_open)
			return; /* every backend failed at once: answered */
	}
}

static void start_prim(struct http_mcp_req *r, const struct arn_mcp_msg *m,
		       struct arn_mcp_session *s);

/*
 * A request without a session: when its body claims 2026-07-28 in
 * params._meta (or MCP-Protocol-Version names it), it is the stateless
 * era's, served here. @return true when it was (answered, or waiting for
 * backends); false leaves it to the session era's path, the body unread.
 */
static bool modern_end(struct http_mcp_req *r, struct arn_mcp_body *bp)
{
	bool hdr_modern = r->has_pver && arn_mcp_is_modern(r->pver, r->pver_len);
	const struct arn_mcp_msg *m = &bp->msgs[0];
	const char *claim;
	size_t cn;
	bool claimed =
	    !bp->batch && m->err == ARN_MCP_E_NONE && arn_mcp_meta_claim(m->params, &claim, &cn);
	if (!claimed && !hdr_modern)
		return false;
	struct arn_mcp_body *body = bp; /* released here from now on */
	if (body->batch) {
		arn_mcp_body_release(body);
		rreply_error(r, ARN_MCP_E_BATCH_REFUSED, NULL, "mcp_bad_body");
		return true;
	}
	if (!claimed && m->kind == ARN_MCP_REQUEST) {
		HTTP_INC(r->hc, mcp_header_mismatch);
		rreply_error_id(r, ARN_MCP_E_HEADER_MISMATCH, m->id,
				"MCP-Protocol-Version names 2026-07-28 but params._meta does not "
				"carry io.modelcontextprotocol/protocolVersion",
				"mcp_header_mismatch");
		arn_mcp_body_release(body); /* m->id is the body's */
		return true;
	}
	r->modern = true;
	HTTP_INC(r->hc, mcp_stateless);
	struct arn_mcp_modern_hdrs h = {
	    .version = r->has_pver ? r->pver : NULL,
	    .version_len = r->pver_len,
	    .method = r->has_mmethod ? r->mmethod : NULL,
	    .method_len = r->mmethod_len,
	    .name = r->has_mname ? r->mname : NULL,
	    .name_len = r->mname_len,
	};
	char why[200];
	enum arn_mcp_err e = r->mhdr_long ? ARN_MCP_E_HEADER_MISMATCH
					  : arn_mcp_modern_check(m, &h, why, sizeof(why));
	if (r->mhdr_long)
		snprintf(why, sizeof(why),
			 "Mcp-Method or Mcp-Name is longer than the gateway reads");
	if (e) {
		HTTP_INC(r->hc, mcp_header_mismatch);
		rreply_error_id(r, e, m->id, why, "mcp_header_mismatch");
		arn_mcp_body_release(body);
		return true;
	}
	struct json_object *ans = NULL;
	struct arn_mcp_backend_init bi[ARN_CFG_MCP_MAX_BACKENDS];
	enum arn_mcp_step step =
	    arn_mcp_modern_dispatch(m, &ans, ARN_VERSION, bi, init_merge_in(r, bi));
	switch (step) {
	case ARN_MCP_S_TOOLS_LIST:
	case ARN_MCP_S_TOOLS_CALL:
		r->in_end = true;
		start_tools(r, m, NULL, step == ARN_MCP_S_TOOLS_LIST);
		r->in_end = false;
		arn_mcp_body_release(body);
		return true;
	case ARN_MCP_S_PRIM:
		r->in_end = true;
		start_prim(r, m, NULL);
		r->in_end = false;
		arn_mcp_body_release(body);
		return true;
	case ARN_MCP_S_ANSWER:
		arn_mcp_body_release(body);
		if (!ans) {
			r500(r, "mcp_out_of_memory");
			return true;
		}
		rreply(r, 200, ans, NULL, NULL, "mcp_answered");
		json_object_put(ans);
		return true;
	default:
		arn_mcp_body_release(body);
		rreply(r, 202, NULL, NULL, NULL, "mcp_accepted");
		return true;
	}
}

/* A prompts or resources request @p m: every backend's list first (prim_done). */
static void start_prim(struct http_mcp_req *r, const struct arn_mcp_msg *m,
		       struct arn_mcp_session *s)
{
	enum arn_mcp_prim k = ARN_MCP_P_PROMPTS;
	bool list = true;
	arn_mcp_prim_of((enum arn_mcp_method)m->method, &k, &list);
	r->s = s;
	r->s_gen = s ? s->gen : 0;
	r->msg = json_object_get(m->obj);
	r->id = m->id;
	r->params = m->params;
	r->routed = false;
	r->method = m->method;
	r->prim_list = list;
	r->wait = MCP_W_PRIM;
	prim_round(r, k);
}

/* Ask every backend for its whole list of kind @p k (prim_done when all
 * are in). Also started from a backend's callback (the templates round
 * of a resources/read), so a backend failing at once may end the round,
 * or answer the client, inside the loop: the connection then runs only
 * once nothing here touches the request (nested / run_after), and a
 * round that a failure moved on (to templates, or to the routed read)
 * is left to that. */
static void prim_round(struct http_mcp_req *r, enum arn_mcp_prim k)
{
	struct arn_mcp_limits lim = {.max_message_bytes = r->f->max_response_bytes};
	if (arn_mcp_fanout_init_kind(&r->fan, r->ts, &lim, k) != 0) {
		answer_async(r, arn_mcp_new_error(r->id, ARN_MCP_E_INTERNAL, "out of memory"),
			     "mcp_out_of_memory");
		return;
	}
	r->fan_open = true;
	for (uint32_t b = 0; b < r->fan.n; b++) {
		const char *why = NULL;
		r->nested++;
		if (!leg_start(r, b, arn_mcp_fanout_request(&r->fan, b), false, &why))
			fan_answer(r, b, NULL, 0, why);
		r->nested--;
		if (r->wait == MCP_W_NONE) { /* answered */
			if (r->run_after && !r->nested) {
				r->run_after = false;
				if (!r->in_end)
					http_conn_run(r->hc);
			}
			return;
		}
		if (!r->fan_open || r->fan.kind != (uint8_t)k)
			return; /* the round is over (or the next one started) */
	}
}

static void mcp_end(struct http_mcp_req *r)
{
	struct http_conn *hc = r->hc;
	struct http_worker *w = hc->w;
	struct arn_mcp_session *s = NULL;
	struct arn_mcp_body body;
	bool have_body = false;
	if (!r->has_sid) {
		/* a stateless request (2026-07-28) or an initialize: the body
		 * says which; a stateless body is one message */
		enum arn_mcp_err e = arn_mcp_reader_finish(&r->rd, false, &body);
		arn_mcp_reader_fini(&r->rd);
		r->rd_open = false;
		if (e) {
			rreply_error(r, e, NULL, "mcp_bad_body");
			return;
		}
		if (modern_end(r, &body))
			return;
		have_body = true;
	}
	if (r->has_sid) {
		enum arn_mcp_err e = r->sid_long ? ARN_MCP_E_SESSION_UNKNOWN
						 : arn_mcp_session_find(w->mcp->sessions, r->sid,
									r->sid_len, w->now_ms, &s);
		if (e == ARN_MCP_E_SESSION_ELSEWHERE)
			HTTP_INC(hc, mcp_session_elsewhere);
		if (e) {
			rreply_error(r, e,
				     e == ARN_MCP_E_SESSION_ELSEWHERE
					 ? "the session lives on another worker of this Arion, "
					   "which cannot be reached"
					 : NULL,
				     "mcp_session");
			return;
		}
		if (!sx_follow(w->mcp, s, r->ts)) {
			rreply_error(r, ARN_MCP_E_SESSION_UNKNOWN,
				     "the session belongs to another ToolSet's gateway",
				     "mcp_session");
			return;
		}
		enum arn_mcp_err ve = arn_mcp_version_header(r->has_pver ? r->pver : NULL,
							     r->has_pver ? r->pver_len : 0,
							     (enum arn_mcp_version)s->version);
		if (ve) {
			rreply_error(r, ve, NULL, "mcp_protocol_version");
			return;
		}
		if (r->get || r->del) {
			arn_mcp_reader_fini(&r->rd);
			r->rd_open = false;
			if (r->get)
				get_open(r, s);
			else
				session_delete(r, s);
			return;
		}
	} else if (r->get || r->del) {
		rreply_error(r, ARN_MCP_E_SESSION_MISSING, NULL, "mcp_session_missing");
		return;
	}
	if (!have_body) {
		bool batch_ok = s && arn_mcp_version_batches((enum arn_mcp_version)s->version);
		enum arn_mcp_err e = arn_mcp_reader_finish(&r->rd, batch_ok, &body);
		arn_mcp_reader_fini(&r->rd);
		r->rd_open = false;
		if (e) {
			rreply_error(r, e, NULL, "mcp_bad_body");
			return;
		}
	}
	if (!s && !(body.n == 1 && !body.batch && body.msgs[0].err == ARN_MCP_E_NONE &&
		    body.msgs[0].kind == ARN_MCP_REQUEST &&
		    body.msgs[0].method == ARN_MCP_M_INITIALIZE)) {
		arn_mcp_body_release(&body);
		rreply_error(r, ARN_MCP_E_SESSION_MISSING, NULL, "mcp_session_missing");
		return;
	}

	struct json_object *answers[ARN_MCP_MAX_BATCH];
	uint32_t n_ans = 0;
	const char *sid_out = s ? s->id : NULL;
	for (uint32_t i = 0; i < body.n; i++) {
		const struct arn_mcp_msg *m = &body.msgs[i];
		struct json_object *ans = NULL;
		enum arn_mcp_version ver = ARN_MCP_V_NONE;
		enum arn_mcp_step step = arn_mcp_dispatch(m, s, body.batch, &ans, &ver);
		switch (step) {
		case ARN_MCP_S_ANSWER:
			break;
		case ARN_MCP_S_INITIALIZE: {
			uint8_t rnd[16];
			if (session_random(rnd) != 0) {
				ans = arn_mcp_new_error(m->id, ARN_MCP_E_INTERNAL,
							"no random bytes for a session id");
				break;
			}
			enum arn_mcp_err oe =
			    arn_mcp_session_open(w->mcp->sessions, ver, ARN_MCP_T_STREAMABLE,
						 w->now_ms, rnd, &s, NULL, NULL);
			if (oe) {
				for (uint32_t k = 0; k < n_ans; k++)
					json_object_put(answers[k]);
				arn_mcp_body_release(&body);
				rreply_error(r, oe, NULL, "mcp_sessions_full");
				return;
			}
			/* the table is the worker's, shared by every gateway
			 * listener: the timeout is this filter's */
			s->idle_ms = r->f->session_idle_timeout_ms;
			sx_set(w->mcp, s, r);
			HTTP_INC(hc, mcp_session_opened);
			sid_out = s->id;
			s->relay = client_relays(m->params);
			struct arn_mcp_backend_init bi[ARN_CFG_MCP_MAX_BACKENDS];
			struct json_object *res =
			    arn_mcp_initialize_result(ver, bi, init_merge_in(r, bi), ARN_VERSION);
			ans = res ? arn_mcp_new_result(m->id, res) : NULL;
			json_object_put(res);
			break;
		}
		case ARN_MCP_S_TOOLS_LIST:
		case ARN_MCP_S_TOOLS_CALL:
			if (body.batch) {
				/* one backend exchange per request for now */
				ans = arn_mcp_new_error(m->id, ARN_MCP_E_BACKEND,
							"tools/list and tools/call are not served "
							"in a batch by this gateway yet");
				break;
			}
			r->in_end = true;
			start_tools(r, m, s, step == ARN_MCP_S_TOOLS_LIST);
			r->in_end = false;
			arn_mcp_body_release(&body);
			return;
		case ARN_MCP_S_REPLY:
		case ARN_MCP_S_CANCEL:
			r->s = s;
			r->s_gen = s->gen;
			r->in_end = true;
			if (step == ARN_MCP_S_REPLY)
				forward_reply(r, m);
			else
				forward_cancel(r, m);
			r->in_end = false;
			continue;
		case ARN_MCP_S_PRIM:
			if (body.batch) {
				ans = arn_mcp_new_error(m->id, ARN_MCP_E_BACKEND,
							"prompts and resources are not served in a "
							"batch by this gateway yet");
				break;
			}
			r->in_end = true;
			start_prim(r, m, s);
			r->in_end = false;
			arn_mcp_body_release(&body);
			return;
		default: /* notifications: nothing to say */
			continue;
		}
		if (!ans) {
			for (uint32_t k = 0; k < n_ans; k++)
				json_object_put(answers[k]);
			arn_mcp_body_release(&body);
			r500(r, "mcp_out_of_memory");
			return;
		}
		answers[n_ans++] = ans;
	}
	bool batch = body.batch;
	arn_mcp_body_release(&body);
	if (n_ans == 0 && r->n_legs) {
		r->wait = MCP_W_FORWARD; /* 202 once they went (forward_done) */
		return;
	}
	if (n_ans == 0) {
		/* only notifications and answers: 202, no body */
		rreply(r, 202, NULL, NULL, NULL, "mcp_accepted");
		return;
	}
	struct json_object *out = answers[0];
	if (batch) {
		out = json_object_new_array_ext((int)n_ans);
		for (uint32_t k = 0; k < n_ans; k++) {
			if (out)
				json_object_array_add(out, answers[k]);
			else
				json_object_put(answers[k]);
		}
		if (!out) {
			r500(r, "mcp_out_of_memory");
			return;
		}
	}
	rreply(r, 200, out, sid_out, NULL, "mcp_answered");
	json_object_put(out);
}

static void xw_handoff(struct http_mcp_req *r);

void http_mcp_end(struct http_stream *st)
{
	struct http_mcp_req *r = st->mcp;
	if (r->xfer) {
		xw_handoff(r);
		return;
	}
	mcp_end(r);
}

/* ---- detached requests ---------------------------------------------------------------------- */

/* A free detached request for ToolSet @p ts (its pin and @p hrt's
 * reference are taken over), going out from @p laddr; NULL when none is
 * free (the caller still holds both). */
static struct mcp_bg *bg_take(struct http_mcp_worker *m, const struct arn_cfg_toolset *ts,
			      struct http_hcm_rt *hrt, uint32_t laddr)
{
	struct mcp_bg *bg = NULL;
	for (uint32_t i = 0; i < m->n_bg && !bg; i++)
		if (!m->bgs[i].used)
			bg = &m->bgs[i];
	if (!bg)
		return NULL;
	struct http_mcp_req *r = &bg->r;
	memset(r, 0, sizeof(*r));
	r->bg = bg;
	r->hc = &bg->hc;
	r->ts = ts;
	r->ping.fn = ping_fire;
	bg->hc.hrt = hrt;
	bg->hc.laddr = laddr;
	bg->hc.sladdr = laddr;
	size_t nl = ts->obj.name_len < sizeof(bg->tsname) ? ts->obj.name_len : 0;
	memcpy(bg->tsname, ts->obj.name, nl);
	bg->tsname[nl] = 0;
	bg->f = (struct arn_cfg_mcp_filter){
	    .toolset = {bg->tsname, nl, ts->obj.hash},
	    .max_request_bytes = ARN_CFG_MCP_DEFAULT_MAX_REQUEST,
	    .max_response_bytes = ARN_CFG_MCP_DEFAULT_MAX_RESPONSE,
	};
	r->f = &bg->f;
	bg->used = true;
	bg->done = bg->remote = false;
	bg->from = 0;
	bg->handle = 0;
	bg->req = NULL;
	bg->owed = NULL;
	return bg;
}

/* Detached request @p r is over (answered, its DELETEs gone, or its
 * client gone): the worker's poll frees it, never a callback inside it. */
static void bg_finish(struct http_mcp_req *r)
{
	struct mcp_bg *bg = r->bg;
	if (bg->done)
		return;
	bg->done = true;
	r->hc->w->mcp->n_bg_done++;
	r->hc->w->mcp->due.due_ms = 0;
}

static void bg_release(struct http_mcp_worker *m, struct mcp_bg *bg)
{
	req_release(m, &bg->r);
	xmsg_free(bg->req);
	bg->req = NULL;
	free(bg->owed); /* (only at the worker's end: an X_END or X_ABORT, nothing pinned) */
	bg->owed = NULL;
	http_rt_hcm_put(bg->hc.hrt);
	bg->hc.hrt = NULL;
	bg->used = false;
}

/* DELETE backend @p b's session @p sid (@p n bytes) from detached
 * request @p bg, counted. */
static void bg_delete(struct mcp_bg *bg, uint32_t b, const char *sid, size_t n)
{
	struct http_mcp_req *r = &bg->r;
	const char *why = NULL;
	r->del = true;
	r->bsid_next = sid;
	r->bsid_next_len = n;
	r->in_end = true;
	if (leg_start(r, b, json_object_new_object(), true, &why))
		HTTP_INC(r->hc, mcp_backend_session_deleted);
	else
		ARN_DEBUG(HTTP, "MCP: could not DELETE the session of backend '%s': %s",
			  r->ts->backends[b].name, why);
	r->in_end = false;
	r->bsid_next = NULL;
}

/* Every DELETE of @p bg started: it ends with the last (forward_done). */
static void bg_deletes_sent(struct mcp_bg *bg)
{
	if (bg->r.n_legs)
		bg->r.wait = MCP_W_FORWARD;
	else
		bg_finish(&bg->r);
}

/* Session @p s opened by request @p r: what its expiry needs. */
static void sx_set(struct http_mcp_worker *m, struct arn_mcp_session *s, struct http_mcp_req *r)
{
	struct mcp_sx *x = &m->sx[s->slot];
	if (x->ts)
		arn_cfg_unpin(x->ts);
	http_rt_hcm_put(x->hrt);
	arn_cfg_pin(r->ts);
	x->ts = r->ts;
	x->hrt = r->hc->hcm ? http_rt_hcm(r->hc->hcm) : NULL;
	x->laddr = r->hc->sladdr;
}

static bool same_str(const char *a, size_t an, const char *b, size_t bn)
{
	return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* The same backend in two versions of a ToolSet: its name, and where its
 * requests go (cluster and path). A backend session id is a credential
 * for that server: it follows the backend, never the index. */
static bool same_backend(const struct arn_cfg_mcp_backend *a, const struct arn_cfg_mcp_backend *b)
{
	return same_str(a->name, a->name_len, b->name, b->name_len) &&
	       same_str(a->cluster.name, a->cluster.len, b->cluster.name, b->cluster.len) &&
	       same_str(a->path, a->path_len, b->path, b->path_len);
}

/* Session @p s, opened on ToolSet sx.ts, is used with ToolSet @p ts. Its
 * backend session ids (and the backend requests it relayed) are kept by
 * index into the ToolSet that opened them; a new version of that ToolSet
 * may list its backends in another order, drop some, or point a name
 * elsewhere, so each id follows its backend to its index in @p ts, and
 * the ids of backends @p ts no longer has are forgotten (they expire at
 * their backends). @return false when @p ts is another ToolSet (another
 * gateway listener's): the session is not one of its sessions. */
static bool sx_follow(struct http_mcp_worker *m, struct arn_mcp_session *s,
		      const struct arn_cfg_toolset *ts)
{
	struct mcp_sx *x = &m->sx[s->slot];
	const struct arn_cfg_toolset *old = x->ts;
	if (!old || old == ts)
		return true;
	if (!same_str(old->obj.name, old->obj.name_len, ts->obj.name, ts->obj.name_len))
		return false;
	uint32_t map[ARN_CFG_MCP_MAX_BACKENDS];
	for (uint32_t b = 0; b < old->n_backends && b < ARN_CFG_MCP_MAX_BACKENDS; b++) {
		map[b] = UINT32_MAX;
		for (uint32_t k = 0; k < ts->n_backends; k++)
			if (same_backend(&old->backends[b], &ts->backends[k])) {
				map[b] = k;
				break;
			}
	}
	arn_mcp_session_backend_remap(m->sessions, s, map, (uint32_t)old->n_backends);
	arn_cfg_pin(ts);
	arn_cfg_unpin(old);
	x->ts = ts; /* (its listener and statistics stay the opener's) */
	return true;
}

static void sx_clear(struct mcp_sx *x)
{
	if (x->ts)
		arn_cfg_unpin(x->ts);
	http_rt_hcm_put(x->hrt);
	*x = (struct mcp_sx){0};
}

static void sess_close(struct http_mcp_worker *m, struct arn_mcp_session *s)
{
	sx_clear(&m->sx[s->slot]);
	arn_mcp_session_close(m->sessions, s);
}

/* Session @p s ends by idling (lib/mcp calls this, then releases it): its
 * backend sessions are DELETEd as a client's DELETE would, from a
 * detached request. */
static void on_expire(void *arg, struct arn_mcp_session *s)
{
	struct http_mcp_worker *m = arg;
	struct mcp_sx *x = &m->sx[s->slot];
	const struct arn_cfg_toolset *ts = x->ts;
	if (x->hrt)
		arn_stats_inc(x->hrt->stats, m->w->slot, ARN_HTTP_mcp_session_expired);
	uint32_t nb = 0;
	for (uint32_t b = 0; ts && b < ts->n_backends; b++)
		if (arn_mcp_session_backend(m->sessions, s, b, NULL))
			nb++;
	if (!nb) {
		sx_clear(x);
		return;
	}
	struct mcp_bg *bg = bg_take(m, ts, x->hrt, x->laddr);
	if (!bg) {
		if (x->hrt)
			arn_stats_add(x->hrt->stats, m->w->slot,
				      ARN_HTTP_mcp_backend_delete_overflow, nb);
		sx_clear(x);
		return;
	}
	*x = (struct mcp_sx){0}; /* the pin and the reference are the detached request's */
	for (uint32_t b = 0; b < ts->n_backends; b++) {
		size_t n = 0;
		const char *sid = arn_mcp_session_backend(m->sessions, s, b, &n);
		if (sid)
			bg_delete(bg, b, sid, n); /* (the leg copies the id) */
	}
	bg_deletes_sent(bg);
}

/* The shared backend session of stateless clients with backend @p b of
 * @p r's ToolSet: @p sid (@p n bytes) when there is none yet (a request
 * that opened one while another did keeps its own for its message only,
 * shared_bsid_done), or, @p sid NULL, forget @p old when it is the one
 * (the backend answered 404 to it). */
static void shared_bsid_set(struct http_mcp_req *r, uint32_t b, const char *sid, size_t n,
			    const char *old, size_t old_n)
{
	struct http_mcp_worker *m = r->hc->w->mcp;
	struct mcp_cat *e = cat_entry(m, r->ts);
	e->laddr = r->hc->sladdr;
	if (!sid) {
		if (e->bsid_len[b] == old_n && memcmp(e->bsid[b], old, old_n) == 0)
			e->bsid_len[b] = 0;
		return;
	}
	if (e->bsid_len[b] || n > ARN_MCP_BACKEND_SID_MAX)
		return;
	memcpy(e->bsid[b], sid, n);
	e->bsid_len[b] = (uint8_t)n;
}

/* Stateless leg @p l is over: a backend session it opened that is not the
 * shared one (another request's won) is DELETEd now. */
static void shared_bsid_done(struct mcp_leg *l)
{
	struct http_mcp_req *r = l->r;
	if (r->s || r->bg || l->modern || !l->bsid_len || l->side)
		return;
	struct http_mcp_worker *m = r->hc->w->mcp;
	struct mcp_cat *e = cat_entry_of(m, r->ts);
	if (e && e->bsid_len[l->b] == l->bsid_len &&
	    memcmp(e->bsid[l->b], l->bsid, l->bsid_len) == 0)
		return;
	arn_cfg_pin(r->ts);
	struct mcp_bg *bg = bg_take(m, r->ts, NULL, r->hc->sladdr);
	if (!bg) {
		arn_cfg_unpin(r->ts);
		HTTP_INC(r->hc, mcp_backend_delete_overflow);
		return;
	}
	bg_delete(bg, l->b, l->bsid, l->bsid_len);
	bg_deletes_sent(bg);
}

/* Catalog entry @p e goes (another ToolSet takes it): its shared backend
 * sessions are DELETEd. */
static void cat_retire(struct http_mcp_worker *m, struct mcp_cat *e)
{
	uint32_t nb = 0;
	for (uint32_t b = 0; e->ts && b < e->ts->n_backends; b++)
		nb += e->bsid_len[b] != 0;
	struct mcp_bg *bg = NULL;
	if (nb) {
		arn_cfg_pin(e->ts);
		bg = bg_take(m, e->ts, NULL, e->laddr);
		if (!bg)
			arn_cfg_unpin(e->ts);
	}
	for (uint32_t b = 0; bg && b < e->ts->n_backends; b++)
		if (e->bsid_len[b])
			bg_delete(bg, b, e->bsid[b], e->bsid_len[b]);
	if (bg)
		bg_deletes_sent(bg);
	memset(e->bsid_len, 0, sizeof(e->bsid_len));
}

/* ---- between workers: the receiving side -------------------------------------------------- */

/* Request @p r names another worker's session: its body (all of it, now)
 * and what the gateway read from its head go to that worker (X_REQ). */
static void xw_handoff(struct http_mcp_req *r)
{
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	struct http_mcp_worker *m = hc->w->mcp;
	int owner = arn_mcp_session_owner(r->sid, r->sid_len);
	size_t hl = 0;
	for (size_t i = 0; i < r->n_hdrs; i++)
		hl += r->hdrs[i].value_len + 1;
	for (size_t i = 0; i < r->n_sans; i++)
		hl += r->sans[i].n;
	HTTP_INC(hc, mcp_session_elsewhere);
	struct mcp_xmsg *x = xmsg_new(X_REQ, hc->w->idx, xw_handle(m, r), r->xbody_len + hl);
	if (!x) {
		http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
		return;
	}
	if (r->xbody_len)
		memcpy(x->text, r->xbody, r->xbody_len);
	x->len = r->xbody_len;
	char *v = x->text + r->xbody_len;
	for (size_t i = 0; i < r->n_hdrs; i++) {
		x->hdrs[i] = r->hdrs[i];
		memcpy(v, r->hdrs[i].value, r->hdrs[i].value_len);
		v[r->hdrs[i].value_len] = 0;
		x->hdrs[i].value = NULL; /* the owner points it into its copy */
		v += r->hdrs[i].value_len + 1;
	}
	x->n_hdrs = (uint32_t)r->n_hdrs;
	x->hdrs_lost = r->hdrs_lost;
	for (size_t i = 0; i < r->n_sans; i++) {
		memcpy(v, r->sans[i].s, r->sans[i].n);
		x->san_len[i] = (uint32_t)r->sans[i].n;
		v += r->sans[i].n;
	}
	x->n_sans = (uint32_t)r->n_sans;
	x->sans_lost = r->sans_lost;
	arn_cfg_pin(r->ts);
	x->ts = r->ts;
	x->hrt = hc->hcm ? http_rt_hcm(hc->hcm) : NULL;
	x->laddr = hc->sladdr;
	x->max_request_bytes = r->f->max_request_bytes;
	x->max_response_bytes = r->f->max_response_bytes;
	x->get = r->get;
	x->del = r->del;
	x->has_sid = r->has_sid;
	memcpy(x->sid, r->sid, r->sid_len);
	x->has_pver = r->has_pver;
	x->pver_len = (uint8_t)r->pver_len;
	memcpy(x->pver, r->pver, r->pver_len);
	free(r->xbody);
	r->xbody = NULL;
	r->xbody_len = r->xbody_cap = 0;
	if (owner < 0 || xw_send((unsigned)owner, x) != 0) {
		xmsg_free(x);
		HTTP_INC(hc, mcp_handoff_dropped);
		struct json_object *o = arn_mcp_new_error(
		    NULL, ARN_MCP_E_INTERNAL,
		    "the worker of this Arion that holds the session is busy; try again");
		reply(st, 503, o, NULL, NULL, "mcp_handoff_dropped");
		json_object_put(o);
		return;
	}
	HTTP_INC(hc, mcp_handoff_out);
	r->wait = MCP_W_REMOTE;
}

/* The client stream of handed-over request @p r ended before its answer
 * did: its owner drops it (X_CANCEL), now or from the next polls. */
static void xw_cancel(struct http_mcp_worker *m, struct http_mcp_req *r)
{
	int owner = arn_mcp_session_owner(r->sid, r->sid_len);
	if (owner < 0)
		return;
	struct mcp_xmsg *x = xmsg_new(X_CANCEL, m->w->idx, xw_handle(m, r), 0);
	if (x && xw_send((unsigned)owner, x) == 0)
		return;
	free(x);
	if (m->n_owed < m->n) {
		m->owed[m->n_owed++] = (struct mcp_owed_cancel){(uint8_t)owner, xw_handle(m, r)};
		m->due.due_ms = 0;
	}
}

/* An answer from the owner for this worker's request x->handle. */
static void xw_answer(struct http_mcp_worker *m, struct mcp_xmsg *x)
{
	uint32_t idx = (uint32_t)(x->handle >> 32) & 0xffffff;
	if (idx >= m->n)
		return;
	struct http_mcp_req *r = &m->mem[idx];
	if (r->xgen != (uint32_t)x->handle || !r->xfer || !r->st || r->st->mcp != r)
		return; /* its stream ended: stale */
	struct http_stream *st = r->st;
	struct http_conn *hc = st->hc;
	if (x->kind != X_EVENT) {
		/* what the owner routed, for this stream's access log
		 * (http_mcp_log): r->ts is the ToolSet the owner ran it with */
		r->tool_len = x->tool_len < sizeof(r->tool) ? x->tool_len : 0;
		memcpy(r->tool, x->tool, r->tool_len);
		r->routed = r->ts && x->backend < r->ts->n_backends;
		r->call_b = r->routed ? x->backend : 0;
	}
	switch (x->kind) {
	case X_REPLY:
		if (r->wait != MCP_W_REMOTE || r->streaming)
			return;
		r->wait = MCP_W_NONE;
		reply_text(st, x->status, x->len == SIZE_MAX ? NULL : x->text,
			   x->len == SIZE_MAX ? 0 : x->len, x->with_sid ? r->sid : NULL, x->allow,
			   x->details);
		break;
	case X_HEAD:
		if (r->wait != MCP_W_REMOTE || r->streaming)
			return;
		if (stream_start(r) != 0) {
			r->wait = MCP_W_NONE;
			xw_cancel(m, r);
			http_local_reply(st, 500, NULL, 0, 0, "mcp_no_buffer", NULL, 0);
		} else if (r->get) {
			st->details = "mcp_get_stream";
		}
		break;
	case X_EVENT:
		if (!r->streaming || (st->state & HTTP_S_RESP_DONE) || hc->state != HTTP_DC_OPEN)
			return;
		if (!stream_text(r, x->text, x->len)) {
			/* the client does not read: cut off, as on the owner */
			xw_cancel(m, r);
			r->wait = MCP_W_NONE;
			st->flags |= ARN_RF_BIT(LOCAL_RESET);
			http_conn_abort(hc);
			return;
		}
		break;
	case X_END:
	case X_ABORT:
		if (!r->streaming || (st->state & HTTP_S_RESP_DONE) || hc->state != HTTP_DC_OPEN) {
			if (r->wait == MCP_W_REMOTE && x->kind == X_ABORT) {
				r->wait = MCP_W_NONE;
				http_local_reply(st, 502, NULL, 0, 0, "mcp_handoff_aborted", NULL,
						 0);
				break;
			}
			return;
		}
		r->wait = MCP_W_NONE;
		http_timer_cancel(&r->ping);
		if (x->kind == X_ABORT) {
			st->flags |= ARN_RF_BIT(LOCAL_RESET);
			http_conn_abort(hc);
			return;
		}
		hc->dn->codec->encode_end(hc->dn);
		st->state |= HTTP_S_RESP_DONE;
		hc->again = true;
		break;
	default:
		return;
	}
	http_conn_run(hc);
}

/* ---- between workers: the owning side ----------------------------------------------------- */

/* A request another worker received for one of this worker's sessions
 * (X_REQ @p x, taken): run here as a detached request. */
static void xw_request(struct http_mcp_worker *m, struct mcp_xmsg *x)
{
	struct mcp_bg *bg = bg_take(m, x->ts, x->hrt, x->laddr);
	if (!bg) {
		/* as when its inbox is full: 503, the client tries again */
		struct json_object *o = arn_mcp_new_error(
		    NULL, ARN_MCP_E_INTERNAL,
		    "the worker of this Arion that holds the session is busy; try again");
		size_t n = 0;
		const char *t = o ? arn_mcp_text(o, &n) : "";
		struct mcp_xmsg *y = xmsg_new(X_REPLY, m->w->idx, x->handle, n);
		if (y) {
			memcpy(y->text, t, n);
			y->status = 503;
			y->details = "mcp_handoff_dropped";
			if (xw_send(x->from, y) != 0)
				free(y);
		}
		json_object_put(o);
		if (x->hrt)
			arn_stats_inc(x->hrt->stats, m->w->slot, ARN_HTTP_mcp_handoff_dropped);
		xmsg_free(x);
		return;
	}
	x->ts = NULL; /* the detached request's now */
	x->hrt = NULL;
	struct http_mcp_req *r = &bg->r;
	bg->remote = true;
	bg->from = x->from;
	bg->handle = x->handle;
	bg->req = x;
	bg->f.max_request_bytes = x->max_request_bytes;
	bg->f.max_response_bytes = x->max_response_bytes;
	HTTP_INC(r->hc, mcp_handoff_in);
	r->get = x->get;
	r->del = x->del;
	r->has_sid = x->has_sid;
	r->sid_len = strnlen(x->sid, ARN_MCP_SID_LEN);
	memcpy(r->sid, x->sid, r->sid_len);
	r->sid[r->sid_len] = 0;
	r->has_pver = x->has_pver;
	r->pver_len = x->pver_len;
	memcpy(r->pver, x->pver, x->pver_len);
	const char *v = x->text + x->len;
	r->n_hdrs = x->n_hdrs;
	r->hdrs_lost = x->hdrs_lost;
	for (size_t i = 0; i < x->n_hdrs; i++) {
		r->hdrs[i] = x->hdrs[i];
		r->hdrs[i].value = v;
		v += x->hdrs[i].value_len + 1;
	}
	r->n_sans = x->n_sans;
	r->sans_lost = x->sans_lost;
	for (size_t i = 0; i < x->n_sans; i++) {
		r->sans[i] = (struct arn_mcp_str){v, x->san_len[i]};
		v += x->san_len[i];
	}
	struct arn_mcp_limits lim = {.max_message_bytes = x->max_request_bytes};
	if (arn_mcp_reader_init(&r->rd, &lim) != 0) {
		rreply_error(r, ARN_MCP_E_INTERNAL, "out of memory", "mcp_out_of_memory");
		return;
	}
	r->rd_open = true;
	if (!r->get && !r->del) {
		int rc = x->len ? arn_mcp_reader_feed(&r->rd, x->text, x->len) : ARN_AGAIN;
		if (rc != ARN_AGAIN) {
			rreply_error(r, (enum arn_mcp_err)rc, NULL, "mcp_bad_body");
			return;
		}
	}
	mcp_end(r);
}

/* X_CANCEL: the client of a request handed here went away. */
static void xw_cancelled(struct http_mcp_worker *m, const struct mcp_xmsg *x)
{
	for (uint32_t i = 0; i < m->n_bg; i++) {
		struct mcp_bg *bg = &m->bgs[i];
		if (!bg->used || !bg->remote || bg->done || bg->from != x->from ||
		    bg->handle != x->handle)
			continue;
		HTTP_INC(bg->r.hc, mcp_handoff_cancel);
		bg_finish(&bg->r);
		return;
	}
}

#define MCP_XW_BURST 32u
#define MCP_SWEEP_MS 1000u

/* Every loop iteration asks (http_mcp_poll, inline); nearly always there
 * is nothing, and the test is the inbox and one time, due.due_ms: 0 while
 * the poll has work of the worker's own (list changes, cancels that found
 * an inbox full, detached requests that ended; what adds one sets it),
 * else the next idle-session sweep. */
void http_mcp_poll_work(struct http_worker *w)
{
	struct http_mcp_worker *m = w->mcp;
	struct rte_ring *q = m->due.inbox;
	void *xs[MCP_XW_BURST];
	unsigned n =
	    q && !rte_ring_empty(q) ? rte_ring_sc_dequeue_burst(q, xs, MCP_XW_BURST, NULL) : 0;
	for (unsigned i = 0; i < n; i++) {
		struct mcp_xmsg *x = xs[i];
		switch (x->kind) {
		case X_REQ:
			xw_request(m, x);
			continue; /* taken */
		case X_CANCEL:
			xw_cancelled(m, x);
			break;
		case X_LIST_CHANGED:
			lc_heard(m, x);
			break;
		default:
			xw_answer(m, x);
			break;
		}
		xmsg_free(x);
	}
	if (m->n_lc)
		lc_flush(m);
	/* what found an inbox full before */
	for (uint32_t i = 0; i < m->n_owed;) {
		struct mcp_xmsg *x = xmsg_new(X_CANCEL, w->idx, m->owed[i].handle, 0);
		if (!x || xw_send(m->owed[i].to, x) != 0) {
			free(x);
			break;
		}
		m->owed[i] = m->owed[--m->n_owed];
	}
	if (m->n_bg_done) {
		for (uint32_t i = 0; i < m->n_bg; i++) {
			struct mcp_bg *bg = &m->bgs[i];
			if (!bg->used || !bg->done)
				continue;
			if (bg->owed && xw_send(bg->from, bg->owed) == 0)
				bg->owed = NULL;
			if (bg->owed)
				continue;
			bg_release(m, bg);
			m->n_bg_done--;
		}
	}
	/* without a session open there is none to keep or expire: the walks
	 * over every request slot and session slot are skipped */
	if (w->now_ms >= m->sweep_ms && arn_mcp_sessions_count(m->sessions) == 0)
		m->sweep_ms = w->now_ms + MCP_SWEEP_MS;
	if (w->now_ms >= m->sweep_ms) {
		m->sweep_ms = w->now_ms + MCP_SWEEP_MS;
		/* a session with a request in flight (a long call, a stream)
		 * is not idle: idle time counts from the last answer */
		for (uint32_t i = 0; i < m->n + m->n_bg; i++) {
			struct http_mcp_req *r = i < m->n ? &m->mem[i] : &m->bgs[i - m->n].r;
			if ((r->wait != MCP_W_NONE || r->streaming) && sess_ok(r) &&
			    (!r->bg || (r->bg->used && !r->bg->done)))
				r->s->last_ms = w->now_ms;
		}
		arn_mcp_sessions_expire(m->sessions, w->now_ms, NULL, NULL);
	}
	m->due.due_ms = m->n_lc || m->n_owed || m->n_bg_done ? 0 : m->sweep_ms;
}

void http_mcp_log(struct http_stream *st)
{
	const struct http_mcp_req *r = st->mcp;
	struct http_log_fields *f = &st->log;
	f->mcp_tool = NULL;
	f->mcp_tool_len = 0;
	f->mcp_backend = NULL;
	f->mcp_backend_len = 0;
	if (!r)
		return;
	if (r->tool_len) {
		f->mcp_tool = r->tool;
		f->mcp_tool_len = r->tool_len;
	}
	if (r->routed && r->ts && r->call_b < r->ts->n_backends) {
		f->mcp_backend = r->ts->backends[r->call_b].name;
		f->mcp_backend_len = (uint32_t)r->ts->backends[r->call_b].name_len;
	}
}

/* What request @p r holds goes back (its legs, its output, its pins). */
static void req_release(struct http_mcp_worker *m, struct http_mcp_req *r)
{
	if (r->get)
		get_unlink(m, r);
	r->get = false;
	/* (what a backend asked on its GET stream stays pending: that
	 * backend session still waits for the answer, which the client may
	 * POST after its GET stream ended) */
	if (r->routed && sess_ok(r))
		arn_mcp_session_pending_drop(r->s, req_tag(r));
	for (uint32_t i = 0; i < ARN_CFG_MCP_MAX_BACKENDS && r->n_legs; i++)
		if (r->legs[i])
			leg_free(r->legs[i]);
	if (r->fan_open)
		arn_mcp_fanout_fini(&r->fan);
	r->fan_open = false;
	json_object_put(r->msg);
	r->msg = NULL;
	r->wait = MCP_W_NONE;
	http_timer_cancel(&r->ping);
	if (r->out)
		http_big_put(m->w, r->out);
	r->out = NULL;
	r->streaming = false;
	if (r->rd_open)
		arn_mcp_reader_fini(&r->rd);
	r->rd_open = false;
	if (r->ts)
		arn_cfg_unpin(r->ts);
	r->ts = NULL;
	free(r->xbody);
	r->xbody = NULL;
	r->xbody_len = r->xbody_cap = 0;
	r->s = NULL;
}

static void xw_cancel(struct http_mcp_worker *m, struct http_mcp_req *r);

void http_mcp_stream_end(struct http_stream *st)
{
	struct http_mcp_req *r = st->mcp;
	if (!r)
		return;
	struct http_mcp_worker *m = st->hc->w->mcp;
	if (r->xfer && (r->wait == MCP_W_REMOTE || r->streaming))
		xw_cancel(m, r); /* its owner still runs it */
	r->xfer = false;
	r->xgen++; /* what the owner still sends for it is stale */
	req_release(m, r);
	r->next = m->free;
	m->free = r;
	st->mcp = NULL;
	st->state &= ~HTTP_S_MCP;
}

/* Is @p m's path (its query aside) the MCP gateway filter's endpoint? */
static bool mcp_path(const struct arn_cfg_mcp_filter *f, const struct arn_h1_msg *m)
{
	size_t n = m->path.len;
	const char *q = memchr(m->path.p, '?', n);
	if (q)
		n = (size_t)(q - m->path.p);
	return n == f->path_len && memcmp(m->path.p, f->path, n) == 0;
}

/* The MCP gateway answers its path itself (after the filters before it in
 * the chain, which may refuse a client first); it is never routed on as if
 * no filter were there, even while its ToolSet is missing. */
static bool mcp_decode_head(struct http_stream *st, const struct arn_cfg_gen *g,
			    const struct arn_cfg_route_table *rt, const struct arn_cfg_request *req)
{
	const struct arn_cfg_mcp_filter *f = st->hc->hcm->mcp_gateway;
	if (!f || !mcp_path(f, &st->req.m) ||
	    http_filter_kind_off(st->hc->hcm, ARN_CFG_HF_MCP_GATEWAY, rt, req))
		return false;
	http_mcp_filter(st, g, req);
	return true;
}

/* Only a manager with the gateway takes streams (mcp_decode_head): the
 * others' have no st->mcp for the log and end hooks to read. */
static bool mcp_active(const struct arn_cfg_hcm *h)
{
	return h->mcp_gateway != NULL;
}

const struct http_filter_ops http_mcp_filter_ops = {
    .name = "mcp_gateway",
    .active = mcp_active,
    .decode_head = mcp_decode_head,
    .decode_body = http_mcp_body,
    .decode_end = http_mcp_end,
    .log = http_mcp_log,
    .stream_end = http_mcp_stream_end,
};
