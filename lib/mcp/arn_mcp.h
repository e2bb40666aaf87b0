/*
 * The MCP gateway's core: JSON-RPC 2.0 messages, MCP versions and
 * transports, sessions, and the tool catalog that tools/list and tools/call
 * are served from. No I/O and nothing of lib/http: the HTTP filter
 * (arion.filters.http.mcp_gateway) feeds request bodies in, asks what to do,
 * and writes what it is given; docs/mcp.md describes the whole.
 *
 * ---- JSON ------------------------------------------------------------------
 *
 * json-c (Debian's libjson-c5) holds parsed messages and builds answers:
 * an incremental tokener (the body is fed as it arrives, one TCP segment
 * at a time, with no reassembly copy), a nesting limit, strict RFC 8259
 * parsing, and reference-counted values, so an
 * answer can share a backend's tool definitions without copying them.
 *
 * json-c allocates with malloc(), one allocation or two per JSON value.
 * That is the one place the gateway allocates on a worker after start;
 * what it may allocate per request is bounded before json-c sees a byte:
 * arn_mcp_reader counts the body's bytes, its JSON containers and values
 * (a scan over each segment, in strings and out) and refuses the body as
 * soon as one count passes its limit (struct arn_mcp_limits; the worst
 * case per body is stated beside the defaults in docs/mcp.md).
 *
 * Duplicate keys: json-c keeps the last. The gateway never forwards the
 * client's bytes: every message it sends upstream is serialised again from
 * what it read, so a backend cannot read a different "method" or "name"
 * from the one the gateway routed and authorised.
 *
 * Re-serialising must not change data, so the scan refuses what json-c
 * would alter: integers outside [-2^63, 2^64-1] (clamped) and lone UTF-16
 * surrogates in \u escapes (made U+FFFD). It also checks UTF-8, numbers and
 * literals itself, since json-c 0.16 judges some of them differently when a
 * segment boundary cuts them.
 *
 * ---- Errors --------------------------------------------------------------
 *
 * The functions that judge messages return enum arn_mcp_err (0: none),
 * not errnos: each value is an answer to send (arn_mcp_err.def gives its
 * JSON-RPC code, HTTP status and message), not a system failure.
 *
 * Threading: everything here is for one worker at a time; nothing is
 * shared, nothing locks. That includes catalogs, although nothing changes
 * them once built: answering takes references on their definitions and
 * serialising caches text in them, and json-c's reference counts and
 * caches are not atomic, so each worker builds its own.
 */
#ifndef ARN_MCP_H
#define ARN_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** Parsers return this when they took all of their input and need more. */
#ifndef ARN_AGAIN
#include <errno.h>
#define ARN_AGAIN (-EAGAIN)
#endif

struct json_object;
struct json_tokener;

enum arn_mcp_err {
#define ARN_MCP_ERR(id, code, status, text) ARN_MCP_E_##id,
#include "arn_mcp_err.def"
#undef ARN_MCP_ERR
	ARN_MCP_E_COUNT,
};

enum arn_mcp_method {
	ARN_MCP_M_OTHER = 0,
#define ARN_MCP_METHOD(id, name, kind) ARN_MCP_M_##id,
#include "arn_mcp_method.def"
#undef ARN_MCP_METHOD
	ARN_MCP_M_COUNT,
};

enum arn_mcp_method_kind {
	ARN_MCP_MK_OTHER = 0, /* Method not found */
	ARN_MCP_MK_TOOLS,
	ARN_MCP_MK_LOCAL,
	ARN_MCP_MK_NOTE,
	ARN_MCP_MK_REFUSED,
	ARN_MCP_MK_PRIM, /* prompts and resources: lists merged, get / read routed */
};

/** The JSON-RPC error code, HTTP status and message of @p e. */
int arn_mcp_err_code(enum arn_mcp_err e);
int arn_mcp_err_status(enum arn_mcp_err e);
const char *arn_mcp_err_text(enum arn_mcp_err e);
/** The name of @p e's enumerator without its prefix ("UNKNOWN_TOOL"), for stats and logs. */
const char *arn_mcp_err_name(enum arn_mcp_err e);

/** The method named @p s (n bytes): ARN_MCP_M_OTHER when unknown. */
enum arn_mcp_method arn_mcp_method_lookup(const char *s, size_t n);
const char *arn_mcp_method_name(enum arn_mcp_method m);
enum arn_mcp_method_kind arn_mcp_method_kind(enum arn_mcp_method m);

/* ---- Limits ----------------------------------------------------------------- */

/** Ceilings the compile-time arrays are sized for. */
#define ARN_MCP_MAX_BATCH 64
#define ARN_MCP_MAX_DEPTH 64

/**
 * Hard limits, each a count of something (docs/mcp.md lists them with
 * their defaults). Zero in any member means "the default".
 *
 * Memory: json-c 0.16 on x86-64 holds about 780 bytes per object (its hash
 * table), 90 per string and 72 per other value (measured with mallinfo2).
 * A body at the default limits thus costs at most about
 * 4096 * 780 + 28672 * 90 bytes, 5.7 MiB, however it is shaped; the
 * typical MCP request (an initialize, a tools/call with a few arguments)
 * is under 100 values, a few KiB. Backends' answers are read with their
 * own limits (the filter's max_response_bytes and proportionate counts).
 */
struct arn_mcp_limits {
	uint32_t max_message_bytes; /* one request body; McpGateway max_request_bytes, 1 MiB */
	uint32_t max_batch; /* messages in one JSON-RPC batch; 64 (at most ARN_MCP_MAX_BATCH) */
	uint32_t max_depth; /* JSON nesting; 32 (at most ARN_MCP_MAX_DEPTH) */
	uint32_t max_containers;    /* JSON objects and arrays in one body; 4096 */
	uint32_t max_values;	    /* JSON values of any kind (keys too) in one body; 32768 */
	uint32_t max_tools;	    /* tools in one merged catalog; 4096 */
	uint32_t max_page_tools;    /* tools in one tools/list page; 256 */
	uint32_t max_tool_name;	    /* bytes of an exposed (prefixed) tool name; 128 */
	uint32_t max_backend_pages; /* tools/list pages read from one backend; 64 */
};

/** @p l with every zero member replaced by its default and ceilings applied. */
void arn_mcp_limits_resolve(struct arn_mcp_limits *l);

/* ---- JSON-RPC 2.0 messages -------------------------------------------------- */

enum arn_mcp_kind {
	ARN_MCP_REQUEST = 0,  /* method and id */
	ARN_MCP_NOTIFICATION, /* method, no id */
	ARN_MCP_RESULT,	      /* id and result */
	ARN_MCP_ERROR,	      /* id (may be JSON null) and error */
};

/**
 * One message of a body. Every pointer is borrowed from the body it came
 * from (struct arn_mcp_body) and lives as long as that body.
 */
struct arn_mcp_msg {
	enum arn_mcp_err err;	 /* NONE, or why this element is not a valid message
				    (its answer is that error, with id null unless
				    the id itself was readable) */
	uint8_t kind;		 /* enum arn_mcp_kind */
	uint8_t method;		 /* enum arn_mcp_method */
	struct json_object *obj; /* the whole message */
	struct json_object *id;	 /* string or integer; NULL for a notification
				    (and for an error answering an unreadable id) */
	const char *method_name; /* REQUEST/NOTIFICATION, NUL-terminated */
	size_t method_len;
	struct json_object *params; /* an object, or NULL when absent */
	struct json_object *result; /* RESULT: any value but absent */
	int64_t error_code;	    /* ERROR */
	const char *error_message;  /* ERROR; "" if not a string */
};

/** A whole request (or response) body: one message, or a batch. */
struct arn_mcp_body {
	struct json_object *root; /* owned: arn_mcp_body_release() puts it */
	bool batch;		  /* the body was a JSON array */
	uint32_t n;		  /* messages in msgs */
	struct arn_mcp_msg msgs[ARN_MCP_MAX_BATCH];
};

/**
 * An incremental reader for one body. Bytes are fed as they arrive; the
 * reader counts them and the JSON structure against the limits before
 * json-c allocates anything for them, so an over-limit body costs no more
 * than the limit.
 */
struct arn_mcp_reader {
	struct json_tokener *tok; /* owned */
	struct json_object *root; /* the completed top-level value, owned */
	struct arn_mcp_limits lim;
	size_t bytes;
	uint32_t containers, values;
	uint32_t depth;		   /* the scan's, to count values in arrays */
	enum arn_mcp_err err;	   /* sticky */
	uint8_t in_string, escape; /* the scan's state across segments */
	uint8_t utf8_need;	   /* continuation bytes still due in a string */
	uint8_t utf8_lo, utf8_hi;  /* the next one's range */
	uint8_t scalar;		   /* the number or literal being read, its grammar state */
	uint8_t lit, lit_pos;
	uint8_t num_len;	  /* an integer's digits so far (range check) */
	uint8_t uesc;		  /* \\u hex digits still due */
	uint8_t want_low, in_low; /* surrogate pairs */
	uint16_t uval;
	bool num_neg;
	char num[21];
	uint8_t after_value; /* a value ended; the next non-space one is new */
	bool done;	     /* the top-level value ended */
};

/**
 * Prepare @p r for one body under @p lim (copied; resolved).
 * @return 0, or -ENOMEM.
 */
int arn_mcp_reader_init(struct arn_mcp_reader *r, const struct arn_mcp_limits *lim);

/**
 * Feed the next @p len bytes of the body.
 * @return ARN_AGAIN (all taken, more may follow) or a positive enum
 * arn_mcp_err once the body is refused (sticky; later feeds return it
 * again and take nothing). Whitespace after the top-level value is
 * accepted; anything else there is ARN_MCP_E_PARSE. A body with several
 * faults may be refused for a different one of them depending on where
 * the segments end; whether it is refused does not depend on it.
 */
int arn_mcp_reader_feed(struct arn_mcp_reader *r, const char *buf, size_t len);

/**
 * The body ended: decode it into @p out as JSON-RPC messages.
 * @p batch_ok: whether the negotiated version allows batches (see
 * arn_mcp_version_batches()). Batch elements that are not valid messages
 * are kept with their own err; the body as a whole is refused (the return
 * value) only when it is not JSON, not an object or array, an empty batch,
 * a batch when none is allowed, or a batch over max_batch.
 * On success @p out owns the parsed tree (arn_mcp_body_release()).
 * @return ARN_MCP_E_NONE or the body's error (then @p out holds nothing).
 */
enum arn_mcp_err arn_mcp_reader_finish(struct arn_mcp_reader *r, bool batch_ok,
				       struct arn_mcp_body *out);

/** Free what the reader still holds (its tokener; an unfinished tree). */
void arn_mcp_reader_fini(struct arn_mcp_reader *r);

/** Drop @p b's tree; its messages' pointers die with it. */
void arn_mcp_body_release(struct arn_mcp_body *b);

/**
 * Decode a single message already parsed (a backend's answer, an SSE
 * event's data) into @p m, borrowing from @p obj.
 * @return m->err.
 */
enum arn_mcp_err arn_mcp_msg_decode(struct json_object *obj, struct arn_mcp_msg *m);

/**
 * Convenience for whole buffers (SSE events, tests): init, feed, finish,
 * fini. @return as arn_mcp_reader_finish(), or the feed's error.
 */
enum arn_mcp_err arn_mcp_parse(const char *buf, size_t len, const struct arn_mcp_limits *lim,
			       bool batch_ok, struct arn_mcp_body *out);

/* ---- Building messages ------------------------------------------------------
 *
 * Each returns a new JSON object the caller owns (json_object_put), or NULL
 * when out of memory. Arguments are borrowed: an @p id or @p result passed
 * in gains a reference and stays the caller's too.
 */

/** {"jsonrpc":"2.0","id":id,"result":result}. */
struct json_object *arn_mcp_new_result(struct json_object *id, struct json_object *result);

/**
 * {"jsonrpc":"2.0","id":id,"error":{"code","message"[,"data"]}}: @p e's code
 * and message, then ": " and @p detail when given (what and where: the tool,
 * the backend, the limit). @p id NULL gives "id":null, as JSON-RPC wants
 * when the request's id could not be read.
 */
struct json_object *arn_mcp_new_error(struct json_object *id, enum arn_mcp_err e,
				      const char *detail);

/** {"jsonrpc":"2.0","id":id,"method":method[,"params":params]}; @p id NULL: a notification. */
struct json_object *arn_mcp_new_request(struct json_object *id, const char *method,
					struct json_object *params);

/**
 * @p o as compact JSON (no spaces, '/' not escaped). The text belongs to
 * @p o and lives until @p o is changed or put. @p len may be NULL.
 */
const char *arn_mcp_text(struct json_object *o, size_t *len);

/* ---- Versions ---------------------------------------------------------------
 *
 * The protocol versions the gateway speaks with clients (and backends).
 * 2024-11-05 is the HTTP+SSE era; 2025-03-26 brought Streamable HTTP and
 * sessions by header; 2025-06-18 dropped batches and made clients send
 * MCP-Protocol-Version on every request after initialize.
 */
enum arn_mcp_version {
	ARN_MCP_V_NONE = 0,
	ARN_MCP_V_2024_11_05,
	ARN_MCP_V_2025_03_26,
	ARN_MCP_V_2025_06_18,
	ARN_MCP_V_2025_11_25,
	ARN_MCP_V_COUNT,
};
#define ARN_MCP_V_LATEST ARN_MCP_V_2025_11_25

/** The version named @p s (n bytes), or ARN_MCP_V_NONE. */
enum arn_mcp_version arn_mcp_version_parse(const char *s, size_t n);
/** "2025-06-18"; "" for NONE. */
const char *arn_mcp_version_name(enum arn_mcp_version v);
/** Whether @p v allows JSON-RPC batches (2024-11-05, 2025-03-26). */
bool arn_mcp_version_batches(enum arn_mcp_version v);

/**
 * The version to answer an initialize asking for @p requested: the same
 * when the gateway speaks it, else its latest (the client then decides
 * whether it can go on, as the lifecycle section of the spec says).
 */
enum arn_mcp_version arn_mcp_negotiate(const char *requested, size_t n);

/**
 * Check a request's MCP-Protocol-Version header (@p n 0: absent) against
 * the version its session negotiated. Absent: the negotiated one (the
 * spec's fallback, 2025-03-26, is for servers that cannot tell).
 * @return NONE, VERSION_HEADER (not a version the gateway speaks) or
 * VERSION_MISMATCH (not the session's); both are HTTP 400.
 */
enum arn_mcp_err arn_mcp_version_header(const char *hdr, size_t n, enum arn_mcp_version negotiated);

/* ---- HTTP transports ----------------------------------------------------------
 *
 * One path serves both transports. A 2024-11-05 client GETs it for an SSE
 * stream whose first event ("endpoint") names where to POST its messages
 * (the same path with ?sessionId=); it gets 202 for each POST and the
 * answers on the stream. A Streamable HTTP client POSTs messages to the
 * path and gets each answer in the POST's own response (JSON, or SSE when
 * it streams); with a session it may GET the path for the server's own
 * messages, and DELETE it to end the session. The spec's backwards
 * compatibility section has old clients find the transport this way, and a
 * GET without Mcp-Session-Id tells them apart.
 */
enum arn_mcp_action {
	ARN_MCP_A_PASS = 0,   /* not the MCP path: not the filter's request */
	ARN_MCP_A_POST,	      /* Streamable HTTP: JSON-RPC message(s) in the body */
	ARN_MCP_A_GET_STREAM, /* Streamable HTTP: the session's server-to-client stream */
	ARN_MCP_A_DELETE,     /* Streamable HTTP: end the session */
	ARN_MCP_A_SSE_OPEN,   /* HTTP+SSE: open the stream; first event "endpoint" */
	ARN_MCP_A_SSE_POST,   /* HTTP+SSE: a message for session ?sessionId=; 202, answer on the
				 stream */
	ARN_MCP_A_REFUSE,     /* answer route.status (route.allow: the Allow header for 405) */
};

/** What the HTTP layer tells the core about a request (slices; borrowed). */
struct arn_mcp_http_req {
	const char *method, *path; /* path: the request target, query included */
	size_t method_len, path_len;
	const char *accept, *content_type; /* NULL / 0: absent */
	size_t accept_len, content_type_len;
	const char *session_id; /* Mcp-Session-Id */
	size_t session_id_len;
};

struct arn_mcp_route {
	uint8_t action;		/* enum arn_mcp_action */
	uint16_t status;	/* REFUSE: 405, 406 or 415 */
	const char *allow;	/* REFUSE with 405: "GET, POST, DELETE" */
	const char *why;	/* REFUSE: the body's message */
	const char *session_id; /* the session named (header, or SSE_POST's query); borrowed */
	size_t session_id_len;
};

/**
 * Decide what @p req is for the gateway serving @p mcp_path (the path
 * alone; a request matches it with any query). Content-Type and Accept are
 * checked as the TypeScript SDK's server checks them (POST: JSON in, JSON
 * and event-stream accepted; GET: event-stream accepted), "*" "/" "*"
 * counting as both.
 */
void arn_mcp_classify(const struct arn_mcp_http_req *req, const char *mcp_path, size_t mcp_path_len,
		      struct arn_mcp_route *out);

/**
 * Write one SSE event: "event: <event>\n" (when @p event), "id: <id>\n"
 * (when @p id), "data: <data>\n\n". @p data must hold no CR or LF (JSON
 * from arn_mcp_text() never does). At most @p cap bytes are written.
 * @return the event's length (more than @p cap: nothing usable written).
 */
size_t arn_mcp_sse_event(char *out, size_t cap, const char *event, const char *id, const char *data,
			 size_t data_len);

/* ---- Server-sent events from backends ---------------------------------------------
 *
 * A backend answers a POST with JSON or with an event stream (its own
 * notifications and requests, then the answer), and a 2024-11-05 backend
 * answers everything on its GET stream. This reads such a stream as it
 * arrives, to the HTML standard's rules (CRLF, LF or CR line ends; one
 * space after the colon dropped; comments; data lines joined with LF;
 * an event without data not dispatched; a leading BOM ignored), into a
 * buffer the caller supplies, which bounds an event.
 */
#define ARN_MCP_SSE_NAME_MAX 32 /* longer event types read as "" (not message / endpoint) */
#define ARN_MCP_SSE_ID_MAX 128	/* longer ids are dropped */

struct arn_mcp_sse_ev {
	const char *event; /* "message" when the event named none */
	size_t event_len;
	const char *data; /* the caller's buffer */
	size_t data_len;
	const char *id; /* the last id seen on the stream ("" none); the parser's */
	size_t id_len;
};

struct arn_mcp_sse {
	char *buf; /* the caller's, for data */
	size_t cap;
	size_t len;
	char field[8]; /* the field name being read ("data", "event", "id", "retry") */
	uint8_t field_len;
	uint8_t state;	/* private */
	bool cr;	/* the last byte was CR: a following LF belongs to it */
	bool started;	/* past a possible BOM */
	bool has_data;	/* a data line was seen for this event */
	bool name_long; /* the event type overflowed */
	bool id_long;	/* the id being read overflowed */
	uint8_t bom;	/* BOM bytes matched */
	char name[ARN_MCP_SSE_NAME_MAX + 1];
	uint8_t name_len;
	char id[ARN_MCP_SSE_ID_MAX + 1]; /* the stream's last event id */
	uint8_t id_len;
	char id_new[ARN_MCP_SSE_ID_MAX + 1]; /* the id line being read */
	uint8_t id_new_len;
};

/** Read a stream into @p buf (@p cap bytes: the largest event's data). */
void arn_mcp_sse_init(struct arn_mcp_sse *p, char *buf, size_t cap);

/**
 * Feed @p n bytes. @return the bytes consumed up to and including the end
 * of an event (then *@p ev describes it, valid until the next call),
 * ARN_AGAIN when all @p n were taken without completing one, or -E2BIG
 * when an event's data passes the buffer (the stream is then unusable).
 */
ssize_t arn_mcp_sse_feed(struct arn_mcp_sse *p, const char *in, size_t n,
			 struct arn_mcp_sse_ev *ev);

/* ---- Sessions ------------------------------------------------------------------
 *
 * Arion issues its own session ids and keeps, per session, the negotiated
 * version and each backend's own session id (opened lazily, forgotten when
 * the backend answers 404, re-opened on the next call). A table is one
 * worker's, made at start with every slot it will ever have: nothing is
 * allocated per session. An id names its worker, its slot and the slot's
 * generation, then 128 random bits (the caller's: getrandom or rte_rand),
 * so a lookup is one index and one comparison, and an old or guessed id
 * finds nothing.
 *
 * Why the worker: a client opens several connections (a POST stream, the
 * GET stream), and RSS may put them on different workers. The session
 * lives on the worker that answered initialize; another worker reads the
 * owner from the id (arn_mcp_session_owner) and hands the request over.
 */
#define ARN_MCP_SID_LEN 48 /* hex: worker (2), slot (6), generation (8), random (32) */
#define ARN_MCP_MAX_WORKERS 256
#define ARN_MCP_BACKEND_SID_MAX 128 /* longest backend session id kept */
/* Backends' requests to the client (elicitation, sampling, roots/list)
 * a session may have relayed and not had answered yet: one more is
 * refused (the backend gets a JSON-RPC error), so a backend cannot make a
 * session remember without bound. */
#define ARN_MCP_MAX_PENDING 16

enum arn_mcp_transport {
	ARN_MCP_T_STREAMABLE = 0,
	ARN_MCP_T_SSE, /* 2024-11-05's HTTP+SSE */
};

struct arn_mcp_session {
	char id[ARN_MCP_SID_LEN + 1];
	uint8_t version;   /* enum arn_mcp_version */
	uint8_t transport; /* enum arn_mcp_transport */
	bool initialized;  /* notifications/initialized seen */
	bool relay;	   /* the client offered elicitation, sampling or roots: so do
			      the gateway's initializes to backends */
	bool in_use;
	uint32_t slot, gen;
	uint64_t last_ms; /* the last request that named it */
	/* idle for this long: forgotten (0: never); the table's default at
	 * open, the filter that opened it sets its own (session_idle_timeout) */
	uint32_t idle_ms;
	void *user; /* the filter's (its server-to-client stream) */
	/* backends' requests relayed to the client and not answered yet
	 * (arn_mcp_session_pending_add): only answers to these go back */
	uint8_t n_pending;
	struct arn_mcp_pending {
		uint32_t backend;
		uint32_t owner;	  /* the caller's: what relayed it (its call) */
		uint64_t id_hash; /* of the backend's own id, as JSON text */
	} pending[ARN_MCP_MAX_PENDING];
};

struct arn_mcp_sessions;

/**
 * Worker @p worker's table of @p max_sessions sessions (at most 2^24),
 * each able to hold @p max_backends
 * backend session ids, idle for at most @p idle_ms (0: never expire).
 * Memory: max_sessions * sizeof(struct arn_mcp_session) + (max_sessions +
 * 1) * max_backends * (ARN_MCP_BACKEND_SID_MAX + 2), allocated here, once.
 * @return the table, or NULL (errno EINVAL for zero or too large sizes,
 * a worker past ARN_MCP_MAX_WORKERS; ENOMEM).
 */
struct arn_mcp_sessions *arn_mcp_sessions_create(uint32_t worker, uint32_t max_sessions,
						 uint32_t max_backends, uint32_t idle_ms);

/** The worker that owns session id @p id (n bytes), or -EINVAL when it is no id of ours. */
int arn_mcp_session_owner(const char *id, size_t n);
void arn_mcp_sessions_destroy(struct arn_mcp_sessions *t);
/** Sessions open now. */
uint32_t arn_mcp_sessions_count(const struct arn_mcp_sessions *t);

/**
 * Open a session (an initialize was answered) with id from @p rnd.
 * When the table is full, idle sessions are expired first (@p on_expire
 * is called for each, may be NULL).
 * @return NONE with *@p out, or SESSIONS_FULL (HTTP 503).
 */
enum arn_mcp_err arn_mcp_session_open(struct arn_mcp_sessions *t, enum arn_mcp_version v,
				      enum arn_mcp_transport tr, uint64_t now_ms,
				      const uint8_t rnd[16], struct arn_mcp_session **out,
				      void (*on_expire)(void *arg, struct arn_mcp_session *s),
				      void *arg);

/**
 * The session @p id (n bytes; 0: the header was absent) names, refreshed
 * to @p now_ms. @return NONE with *@p out, SESSION_MISSING (400),
 * SESSION_UNKNOWN (404: never issued, ended, or idle past the timeout) or
 * SESSION_ELSEWHERE (another worker's: hand the request to it).
 */
enum arn_mcp_err arn_mcp_session_find(struct arn_mcp_sessions *t, const char *id, size_t n,
				      uint64_t now_ms, struct arn_mcp_session **out);

/** End @p s (DELETE, or the SSE stream closed); its slot's next id differs. */
void arn_mcp_session_close(struct arn_mcp_sessions *t, struct arn_mcp_session *s);

/**
 * Call @p on_expire (with @p arg; NULL: nothing) for every session about
 * to end by idling: found idle by arn_mcp_session_find, or expired by
 * arn_mcp_sessions_expire or arn_mcp_session_open without a callback of
 * their own. The session is still whole inside the call (its backend
 * session ids, for DELETEs), and released after it.
 */
void arn_mcp_sessions_on_expire(struct arn_mcp_sessions *t,
				void (*on_expire)(void *arg, struct arn_mcp_session *s), void *arg);

/**
 * End every session idle for its idle_ms or longer, calling
 * @p on_expire (NULL: the table's, arn_mcp_sessions_on_expire) for each
 * first. @return how many.
 */
uint32_t arn_mcp_sessions_expire(struct arn_mcp_sessions *t, uint64_t now_ms,
				 void (*on_expire)(void *arg, struct arn_mcp_session *s),
				 void *arg);

/**
 * Remember backend @p b's own session id for @p s.
 * @return 0, -ERANGE (b >= max_backends), -E2BIG (longer than
 * ARN_MCP_BACKEND_SID_MAX), -EINVAL (empty, or not visible ASCII as the
 * spec requires of session ids: refused rather than sent back in a header).
 */
int arn_mcp_session_backend_set(struct arn_mcp_sessions *t, struct arn_mcp_session *s, uint32_t b,
				const char *sid, size_t n);
/** Backend @p b's session id for @p s (NUL-terminated, the table's), or NULL. */
const char *arn_mcp_session_backend(const struct arn_mcp_sessions *t,
				    const struct arn_mcp_session *s, uint32_t b, size_t *n);
/** Forget backend @p b's id (it answered 404), or every backend's (b UINT32_MAX). */
void arn_mcp_session_backend_forget(struct arn_mcp_sessions *t, struct arn_mcp_session *s,
				    uint32_t b);
/**
 * The backends moved: the ids kept for backends 0 .. @p n - 1 go to
 * indexes @p map[b] (UINT32_MAX: forgotten), and so do the relayed
 * requests waiting on them (arn_mcp_session_pending_add; those of a
 * backend forgotten are dropped). For a new version of the ToolSet the
 * ids were kept under: its backend b may stand elsewhere in the list, or
 * be gone, and an id must never reach another backend. @p map must not
 * send two backends to one index.
 */
void arn_mcp_session_backend_remap(struct arn_mcp_sessions *t, struct arn_mcp_session *s,
				   const uint32_t *map, uint32_t n);

/**
 * Remember that backend @p backend's request @p id (its own id) was
 * relayed to @p s's client, on behalf of @p owner (the caller's tag: the
 * call whose stream carried it). @return 0, -ENOSPC (ARN_MCP_MAX_PENDING
 * are waiting already: refuse it), -EEXIST (the same one is waiting: a
 * backend reusing an id it has not had answered).
 */
int arn_mcp_session_pending_add(struct arn_mcp_session *s, uint32_t backend, struct json_object *id,
				uint32_t owner);
/** Forget every request relayed for @p owner (its call ended: the
 * backend waits for none of them any more). @return how many. */
uint32_t arn_mcp_session_pending_drop(struct arn_mcp_session *s, uint32_t owner);
/**
 * The client answered backend @p backend's request @p id: forget it.
 * @return 0, or -ENOENT when no such request waits (an answer to nothing
 * the gateway asked: dropped, not forwarded).
 */
int arn_mcp_session_pending_take(struct arn_mcp_session *s, uint32_t backend,
				 struct json_object *id);

/* ---- initialize -------------------------------------------------------------------- */

/**
 * Read an initialize request's params: an object with a string
 * protocolVersion. @return NONE with *@p v the negotiated version, or
 * INVALID_PARAMS.
 */
enum arn_mcp_err arn_mcp_initialize_params(struct json_object *params, enum arn_mcp_version *v);

/** What one backend said to its initialize (for the merged answer). */
struct arn_mcp_backend_init {
	const char *name;	    /* the ToolSet's backend name */
	struct json_object *result; /* its InitializeResult, or NULL (not asked, or failed) */
};

/**
 * The gateway's InitializeResult for version @p v: serverInfo (Arion,
 * @p server_version), capabilities merged from the backends' (@p b, those
 * with a result), and the backends' instructions, each under its name.
 * Merged: `tools` when any backend offers tools or none has answered yet,
 * always with listChanged (the gateway itself says list_changed when its
 * ToolSet changes); `prompts` and `resources` when any backend offers them
 * or none has answered, each with listChanged when a backend offering them
 * says listChanged (the gateway relays backends' other notifications);
 * `logging` when any backend offers it (its log notifications are relayed;
 * logging/setLevel is accepted). Never offered, because the gateway does
 * not serve them: resources' `subscribe`, `completions`, `experimental`.
 * @return a new object (caller puts), or NULL.
 */
struct json_object *arn_mcp_initialize_result(enum arn_mcp_version v,
					      const struct arn_mcp_backend_init *b, size_t n,
					      const char *server_version);

/** Bytes of one backend's instructions kept for the merged answer. */
#define ARN_MCP_INSTRUCTIONS_MAX 2048

/**
 * What arn_mcp_initialize_result() reads of a backend's InitializeResult
 * (or server/discover result) @p res, as a new small object to keep
 * between requests: `capabilities` with only `tools`, `prompts`,
 * `resources` (each reduced to its listChanged) and `logging`, and
 * `instructions` cut to ARN_MCP_INSTRUCTIONS_MAX bytes at a UTF-8
 * boundary. What a backend sends is hostile: whatever its size, what is
 * kept is bounded. @return the object (caller puts), or NULL when @p res
 * is not an object or memory ran out.
 */
struct json_object *arn_mcp_backend_init_keep(struct json_object *res);

/* ---- The tool catalog: tools/list and tools/call ----------------------------------
 *
 * The filter asks every backend for tools/list (following each one's
 * nextCursor to the end, arn_mcp_tools_page_read()), then builds a catalog
 * from the answers and the ToolSet: filters, prefixes, collisions and
 * access rules applied once, an index by exposed name. The catalog does
 * not change once built (and is one worker's: see Threading); it serves
 * tools/list pages (with the gateway's own cursors) and routes tools/call
 * until the filter builds the next one (the ToolSet changed,
 * tools_list_cache_ttl passed, a backend announced list_changed).
 */
struct arn_cfg_toolset;
struct arn_cfg_request;

/** A borrowed string slice. */
struct arn_mcp_str {
	const char *s;
	size_t n;
};

/** Who is asking: what access rules' principals are matched against. */
struct arn_mcp_client {
	const struct arn_cfg_request
	    *req;			/* the request's headers (Principal.header); may be NULL */
	const struct arn_mcp_str *sans; /* the verified client certificate's SANs (mTLS) */
	size_t n_sans;
	/* some request header a principal names is not in req (it did not
	 * fit): no header principal matches, present or absent */
	bool headers_lost;
	/* the certificate's SANs did not all fit: no SAN principal matches */
	bool sans_lost;
};

struct arn_mcp_tool {
	const char *name; /* as clients see it (prefixed or not); NUL-terminated, the catalog's */
	size_t name_len;
	const char *orig; /* as its backend lists it; the catalog's */
	size_t orig_len;
	uint32_t backend;	 /* index in the ToolSet's backends */
	bool governed;		 /* some access rule names it: only its principals see it */
	struct json_object *def; /* the definition clients get: the backend's, "name" exposed */
};

/* One worker's (see Threading above). */
struct arn_mcp_catalog {
	uint64_t hash;	    /* of the exposed names and backends, in order: cursors carry it */
	uint64_t defs_hash; /* of the definitions as clients get them (list_changed) */
	uint32_t n;
	struct arn_mcp_tool *tools; /* in the ToolSet's backend order, then each backend's */
	uint32_t *index;	    /* open addressing by exposed name: tool + 1, 0 empty */
	uint32_t index_mask;
	/* What was left out, for statistics and logs. */
	uint32_t n_filtered; /* by tool_filter (allow / deny) */
	uint32_t n_invalid;  /* no string name, a name too long (prefixed or not), control
			      * bytes, an inputSchema not an object of "type": "object", an
			      * outputSchema not an object */
	uint32_t n_shadowed; /* an exposed name another backend's tool took first */
	uint32_t n_over;     /* past max_tools */
	char *arena;	     /* private: every name */
};

/**
 * Read one page of a backend's tools/list answer (@p result, the
 * response's "result"): append its tools to @p acc (an array the caller
 * owns; the tools gain a reference) without letting @p acc pass
 * @p max_tools, and point *@p next at its nextCursor (borrowed from
 * @p result) or NULL at the end.
 * @return NONE, INVALID (not a tools/list result) or BACKEND (the
 * backend lists more than max_tools: the caller stops asking it).
 */
enum arn_mcp_err arn_mcp_tools_page_read(struct json_object *result, struct json_object *acc,
					 uint32_t max_tools, const char **next);

/**
 * Build the catalog of @p ts from @p lists, one per backend in ToolSet
 * order (an array of tool objects, or NULL for a backend that did not
 * answer: its tools are simply absent). Order: backends in ToolSet order,
 * each one's tools in its own order. Prefix modes as ToolSet.PrefixMode
 * says; when names still collide (a prefixed name equal to another
 * backend's own name), the first keeps it. Definitions are shallow copies
 * sharing the backends' values. @return the catalog (arn_mcp_catalog_free)
 * or NULL when out of memory.
 */
struct arn_mcp_catalog *arn_mcp_catalog_build(const struct arn_cfg_toolset *ts,
					      struct json_object *const *lists,
					      const struct arn_mcp_limits *lim);
void arn_mcp_catalog_free(struct arn_mcp_catalog *c);

/** The tool exposed as @p name (n bytes), or NULL. */
const struct arn_mcp_tool *arn_mcp_catalog_find(const struct arn_mcp_catalog *c, const char *name,
						size_t n);

/**
 * Whether client @p cl may see and call @p t under @p ts's access rules: a
 * tool no rule names is open to all; one that rules name is open to a
 * client one principal of one of those rules matches.
 */
bool arn_mcp_tool_visible(const struct arn_cfg_toolset *ts, const struct arn_mcp_tool *t,
			  const struct arn_mcp_client *cl);

/**
 * The ToolSet's allow / deny filters for a name @p orig (as backend
 * @p backend lists it): tools' and prompts'.
 */
bool arn_mcp_name_allowed(const struct arn_cfg_toolset *ts, uint32_t backend, const char *orig,
			  size_t n);

/**
 * The access rules for a name (a prompt's, as arn_mcp_tool_visible() for a
 * tool): true when no rule's matcher names it, or @p cl (may be NULL: no
 * principal) matches a principal of one that does.
 */
bool arn_mcp_name_visible(const struct arn_cfg_toolset *ts, uint32_t backend, const char *orig,
			  size_t n, const struct arn_mcp_client *cl);

/**
 * Whether @p cl may see backend @p backend's resources and resource
 * templates (URIs have no matchers): not when `allow` is set and none of
 * its matchers can cover the backend (each names another backend); not
 * when access rules with a matcher that can cover it (no backend, or
 * this one) exist and @p cl matches a principal of none of them.
 */
bool arn_mcp_backend_visible(const struct arn_cfg_toolset *ts, uint32_t backend,
			     const struct arn_mcp_client *cl);

/**
 * Answer tools/list (@p params may be NULL or hold "cursor") for @p cl:
 * the visible tools from the cursor on, at most @p page_size (0: the
 * limits' max_page_tools), and "nextCursor" when more follow. Cursors are
 * the gateway's own (the catalog's hash and a position), so they survive
 * a rebuilt catalog with the same tools and are refused (BAD_CURSOR,
 * -32602, as the spec says for an invalid cursor) after it changed.
 * @return NONE with *@p result (caller puts), INVALID_PARAMS or BAD_CURSOR.
 */
enum arn_mcp_err arn_mcp_tools_list(const struct arn_mcp_catalog *c,
				    const struct arn_cfg_toolset *ts,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    uint32_t page_size, struct json_object **result);

/**
 * Route tools/call (@p params: "name", optional "arguments" object): find
 * the tool, check @p cl may call it, and rewrite params.name to the name
 * its backend knows (params is changed in place: send it re-serialised).
 * @return NONE with *@p out, INVALID_PARAMS, UNKNOWN_TOOL or
 * FORBIDDEN_TOOL (answered alike; counted apart).
 */
enum arn_mcp_err arn_mcp_tools_call(const struct arn_mcp_catalog *c,
				    const struct arn_cfg_toolset *ts,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    const struct arn_mcp_tool **out);

/* ---- Dispatch: what the filter does with one message --------------------------------
 *
 * Ids: a client's request keeps its id on the way to the backend (each
 * goes on its own upstream request within that client's backend session,
 * so ids cannot collide) and so does a notifications/cancelled naming it.
 * A backend's own requests to the client (elicitation, sampling) share the
 * client's stream with other backends', so their ids are wrapped with the
 * backend's index (arn_mcp_id_wrap) and unwrapped on the client's answer.
 */
enum arn_mcp_step {
	ARN_MCP_S_ANSWER = 0, /* send *answer (a result or an error) */
	ARN_MCP_S_INITIALIZE, /* open (or, on HTTP+SSE, fill) the session at *version; answer
				 arn_mcp_initialize_result() */
	ARN_MCP_S_TOOLS_LIST, /* answer arn_mcp_tools_list() from a fresh enough catalog */
	ARN_MCP_S_TOOLS_CALL, /* route with arn_mcp_tools_call(); forward; stream the answer */
	ARN_MCP_S_CANCEL,     /* forward to the backend running params.requestId, if any */
	ARN_MCP_S_REPLY,      /* a client's answer to a backend's request: unwrap its id, forward */
	ARN_MCP_S_CONSUMED,   /* nothing to send (a notification the gateway takes) */
	ARN_MCP_S_PRIM,	      /* prompts/list, prompts/get, resources/list, resources/read,
				 resources/templates/list: every backend's list first (arn_mcp_prim_*) */
};

/**
 * Decide what to do with @p m, from a client in session @p s (NULL: none
 * yet; on HTTP+SSE a session exists before initialize, with version
 * NONE). @p in_batch: @p m came in a batch (initialize may not).
 * notifications/initialized marks @p s initialized here.
 * @return the step; with ARN_MCP_S_ANSWER, *@p answer (caller puts) or
 * NULL when out of memory; with ARN_MCP_S_INITIALIZE, *@p version.
 */
enum arn_mcp_step arn_mcp_dispatch(const struct arn_mcp_msg *m, struct arn_mcp_session *s,
				   bool in_batch, struct json_object **answer,
				   enum arn_mcp_version *version);

/**
 * A backend's request id @p id as sent to the client: the string
 * "arn.<backend>.<id as JSON>" (new; caller puts). NULL when out of memory.
 */
struct json_object *arn_mcp_id_wrap(uint32_t backend, struct json_object *id);

/**
 * Undo arn_mcp_id_wrap(): *@p backend and *@p id (new; caller puts).
 * @return 0, or -EINVAL when @p wrapped is not an id the gateway made
 * (the client answered something it was never asked: drop it).
 */
int arn_mcp_id_unwrap(struct json_object *wrapped, uint32_t *backend, struct json_object **id);

/**
 * The first event of a 2024-11-05 stream: "endpoint", whose data is
 * @p path with "?sessionId=<session id>". @return as arn_mcp_sse_event().
 */
size_t arn_mcp_sse_endpoint(char *out, size_t cap, const char *path, size_t path_len,
			    const struct arn_mcp_session *s);

/* ---- Upstream: the gateway as a client of its backends ------------------------------
 *
 * Each backend is reached through its Arion cluster like any upstream
 * (load balancing, health checks, timeouts), one HTTP request per message,
 * always Streamable HTTP. Per client session the gateway opens the
 * backend's own session lazily: its first message to that backend is an
 * initialize (arn_mcp_backend_initialize) at the client's version, then
 * notifications/initialized; the backend's Mcp-Session-Id is kept
 * (arn_mcp_session_backend_set) and sent on every later request.
 */
struct arn_cfg_mcp_backend;

/** One header for an upstream request; name lower case; both borrowed. */
struct arn_mcp_header {
	const char *name, *value;
	size_t name_len, value_len;
};

/**
 * The headers of a request to backend @p b: content-type, accept, the
 * backend's session id (@p sid, NULL before its initialize answered),
 * mcp-protocol-version (@p v, not for 2024-11-05 nor before initialize,
 * i.e. @p sid NULL), then the backend's request_headers_to_add. Strings
 * point into @p b, @p sid and static text. @return how many (at most
 * @p cap written; more means @p cap was short).
 */
size_t arn_mcp_upstream_headers(const struct arn_cfg_mcp_backend *b, const char *sid,
				enum arn_mcp_version v, struct arn_mcp_header *out, size_t cap);

/**
 * The initialize the gateway sends a backend for a client at version
 * @p v: clientInfo arion-mcp-gateway @p version, no client capabilities
 * beyond what the gateway relays (elicitation and sampling go through it
 * to the client, so they are offered when @p relay). Its id is
 * "arn.init". @return a new request (caller puts) or NULL.
 */
struct json_object *arn_mcp_backend_initialize(enum arn_mcp_version v, const char *version,
					       bool relay);

enum arn_mcp_upstream {
	ARN_MCP_U_JSON = 0,	/* 200, application/json: one answer in the body */
	ARN_MCP_U_SSE,		/* 200, text/event-stream: read with arn_mcp_sse_feed() */
	ARN_MCP_U_ACCEPTED,	/* 202: a notification or answer taken, no body */
	ARN_MCP_U_SESSION_GONE, /* 404 while sending a session id: forget it, re-initialize,
				   send again (once) */
	ARN_MCP_U_FAILED,	/* anything else: an error naming the backend */
};

/**
 * Classify a backend's HTTP answer: @p status, its content-type (NULL:
 * none) and whether the request carried a backend session id.
 */
enum arn_mcp_upstream arn_mcp_upstream_classify(int status, const char *ctype, size_t ctype_len,
						bool sent_session);

/**
 * The error a client gets when backend @p backend failed its request
 * (@p why: "connect failed", "timed out after 30000 ms", "HTTP 502", ...):
 * -32000 "Backend unavailable: backend '<name>': <why>", so the client
 * knows which one while the others keep serving. @return new, or NULL.
 */
struct json_object *arn_mcp_backend_error(struct json_object *id, const char *backend,
					  const char *why);

/**
 * A message backend @p backend sent on a call's stream (or its GET
 * stream), made ready for the client: its own requests get wrapped ids
 * (arn_mcp_id_wrap); notifications (progress, logging, list_changed) and
 * the answer to the client's request pass as they are. @p m from
 * arn_mcp_msg_decode(); @p m->obj is changed in place for a request.
 * @return 0, or -EINVAL for a message that is not valid (dropped: the
 * client is never sent what the gateway could not read), -ENOMEM.
 */
int arn_mcp_from_backend(struct arn_mcp_msg *m, uint32_t backend);

/* ---- tools/list across the backends ---------------------------------------------------
 *
 * The state of one round of asking every backend for its whole tool list:
 * per backend, the tools so far and the next cursor. The filter sends
 * each request arn_mcp_fanout_request() builds to its backend (all at
 * once), feeds each answer back, asks again while told to, and builds the
 * catalog when every backend is done or failed. A backend that fails
 * (error, timeout, too many tools or pages, a cursor that repeats) has
 * its tools left out; the others serve.
 */
enum arn_mcp_fanout_state {
	ARN_MCP_F_ASK = 0, /* a request is due (arn_mcp_fanout_request) */
	ARN_MCP_F_WAIT,	   /* its answer is awaited */
	ARN_MCP_F_DONE,	   /* its whole list is in */
	ARN_MCP_F_FAILED,  /* left out; why says why */
};

struct arn_mcp_fanout_backend {
	uint8_t state;		    /* enum arn_mcp_fanout_state */
	uint32_t pages;		    /* pages read */
	size_t bytes;		    /* their answers' bytes, as received */
	struct json_object *tools;  /* the tools so far (owned) */
	struct json_object *cursor; /* the cursor to ask next (owned), or NULL */
	char why[128];		    /* FAILED: for the log and the statistics */
};

struct arn_mcp_fanout {
	const struct arn_cfg_toolset *ts; /* borrowed; must outlive the round */
	struct arn_mcp_limits lim;
	uint8_t kind;			  /* enum arn_mcp_prim: what is listed (0: tools) */
	uint32_t n, pending;		  /* backends; those neither DONE nor FAILED */
	struct arn_mcp_fanout_backend *b; /* n (owned) */
};

/** Start a round over @p ts's backends. @return 0 or -ENOMEM. */
int arn_mcp_fanout_init(struct arn_mcp_fanout *f, const struct arn_cfg_toolset *ts,
			const struct arn_mcp_limits *lim);
void arn_mcp_fanout_fini(struct arn_mcp_fanout *f);

/**
 * The tools/list request due to backend @p b (state ASK; it becomes
 * WAIT), with its next cursor; its id is "arn.list.<b>.<page>".
 * @return new (caller puts), or NULL (not ASK, or out of memory).
 */
struct json_object *arn_mcp_fanout_request(struct arn_mcp_fanout *f, uint32_t b);

/**
 * Backend @p b's answer @p m (decoded), @p bytes as received. A result
 * adds its page: the state becomes ASK when it has a nextCursor, else
 * DONE. An error answer, a malformed one, a repeated cursor, or passing
 * max_tools, max_backend_pages or, with the pages before it,
 * max_message_bytes (a round keeps every page until it ends: each answer
 * is bounded by its reader, and so are they all): FAILED. @return the new
 * state.
 */
enum arn_mcp_fanout_state arn_mcp_fanout_answer(struct arn_mcp_fanout *f, uint32_t b,
						const struct arn_mcp_msg *m, size_t bytes);

/** Backend @p b failed outside the protocol (connect, timeout, HTTP status): FAILED, @p why. */
void arn_mcp_fanout_fail(struct arn_mcp_fanout *f, uint32_t b, const char *why);

/** Every backend is DONE or FAILED. */
static inline bool arn_mcp_fanout_done(const struct arn_mcp_fanout *f)
{
	return f->pending == 0;
}

/**
 * The catalog from the round's lists (failed backends' tools absent).
 * @return as arn_mcp_catalog_build().
 */
struct arn_mcp_catalog *arn_mcp_fanout_catalog(const struct arn_mcp_fanout *f);

/**
 * Whether clients must be told notifications/tools/list_changed when
 * catalog @p next replaces @p prev (NULL: none before): the exposed tools
 * or their backends or definitions differ.
 */
bool arn_mcp_catalog_changed(const struct arn_mcp_catalog *prev,
			     const struct arn_mcp_catalog *next);

/* ---- The stateless era (2026-07-28) ----------------------------------------------------
 *
 * No initialize and no sessions: every request names its version (and the
 * client's capabilities and info) in params._meta, and repeats what an
 * intermediary routes by in headers: MCP-Protocol-Version, Mcp-Method and,
 * for tools/call and prompts/get (params.name) and resources/read
 * (params.uri), Mcp-Name. A client learns the server's versions and
 * capabilities with server/discover. The gateway tells a stateless request
 * from a session-era one by the body's claim (or a 2026 version header),
 * as the SDK's server does, and speaks each backend's own era, learnt per
 * worker the first time it is asked (server/discover, or initialize).
 */
#define ARN_MCP_MODERN "2026-07-28"
/** Longest Mcp-Name the gateway reads or writes (decoded or encoded), bytes. */
#define ARN_MCP_NAME_HDR_MAX 512

/** Whether @p v (n bytes) is the stateless era's version. */
bool arn_mcp_is_modern(const char *v, size_t n);

/**
 * The version @p params._meta["io.modelcontextprotocol/protocolVersion"]
 * claims: true with *@p v / *@p n borrowed from @p params, else false.
 */
bool arn_mcp_meta_claim(struct json_object *params, const char **v, size_t *n);

/** The params field Mcp-Name mirrors for @p m ("name", "uri"), or NULL. */
const char *arn_mcp_name_field(enum arn_mcp_method m);

/**
 * An Mcp-Name header's value decoded: as it is, or the Base64 of its
 * "=?base64?...?=" sentinel form (canonical Base64 only).
 * @return bytes written, -EINVAL (a bad sentinel), -E2BIG (over @p cap).
 */
ssize_t arn_mcp_name_decode(const char *h, size_t n, char *out, size_t cap);

/**
 * @p s as an Mcp-Name value: as it is when it is visible ASCII without
 * leading or trailing space, else the Base64 sentinel form. @return its
 * length (over @p cap: nothing written).
 */
size_t arn_mcp_name_encode(const char *s, size_t n, char *out, size_t cap);

/** A stateless request's headers (slices; NULL: absent). */
struct arn_mcp_modern_hdrs {
	const char *version, *method, *name;
	size_t version_len, method_len, name_len;
};

/**
 * Check a stateless message @p m against its headers @p h, as the SDK's
 * server does: for a request, MCP-Protocol-Version and Mcp-Method present
 * and equal to the body's claim and method, and Mcp-Name present and equal
 * (decoded) to params.name / params.uri when the body has it; for a
 * notification, those present equal. @p why (@p cap bytes) says what
 * differs. @return NONE, HEADER_MISMATCH (HTTP 400, -32020) or
 * MODERN_VERSION (a claim of a version the gateway does not speak
 * statelessly: 400, -32022).
 */
enum arn_mcp_err arn_mcp_modern_check(const struct arn_mcp_msg *m,
				      const struct arn_mcp_modern_hdrs *h, char *why, size_t cap);

/**
 * The gateway's server/discover result: supportedVersions ["2026-07-28"],
 * the capabilities and instructions arn_mcp_initialize_result() merges
 * from @p b, resultType "complete", serverInfo in _meta. @return new, or NULL.
 */
struct json_object *arn_mcp_discover_result(const struct arn_mcp_backend_init *b, size_t n,
					    const char *server_version);

/** Whether 2026-07-28 results of @p m carry cache hints (ttlMs, cacheScope). */
bool arn_mcp_cacheable(enum arn_mcp_method m);

/**
 * Make @p result (of method @p m) one a stateless client accepts:
 * resultType "complete" when absent (a session-era backend's), ttlMs 0 and
 * cacheScope "private" for cacheable methods when absent (the gateway's
 * answers depend on the client's access rules and on every backend),
 * serverInfo in _meta when it has no _meta.
 * @return 0, -EINVAL (not an object), -ENOMEM.
 */
int arn_mcp_modern_stamp(struct json_object *result, enum arn_mcp_method m,
			 const char *server_version);

/**
 * Dress request @p msg for a backend of era @p modern: the stateless
 * envelope added to params._meta (the client's capabilities and info kept
 * when it sent them), or, for a session-era backend, the envelope's keys
 * removed. @p msg is changed in place. @return 0, -EINVAL, -ENOMEM.
 */
int arn_mcp_envelope_set(struct json_object *msg, bool modern);

/** The server/discover the gateway asks a backend whose era it does not know yet (id
 * "arn.discover"). */
struct json_object *arn_mcp_backend_discover(void);

/** Whether a backend's answer @p m to server/discover offers 2026-07-28. */
bool arn_mcp_discover_modern(const struct arn_mcp_msg *m);

/**
 * What to do with stateless message @p m (arn_mcp_modern_check() passed):
 * server/discover (with the capabilities and instructions of backends
 * @p b, as arn_mcp_discover_result()), ping and logging/setLevel are
 * answered here (*@p answer, NULL when out of memory); TOOLS_LIST /
 * TOOLS_CALL go to the backends; notifications and answers are CONSUMED;
 * anything else is answered with an error.
 */
enum arn_mcp_step arn_mcp_modern_dispatch(const struct arn_mcp_msg *m, struct json_object **answer,
					  const char *server_version,
					  const struct arn_mcp_backend_init *b, size_t n);

/* ---- Prompts and resources -----------------------------------------------------------
 *
 * Aggregated like tools, without a catalog: each prompts/list,
 * resources/list, resources/templates/list, prompts/get or resources/read
 * asks every backend for the whole list first (arn_mcp_fanout with its
 * kind set), then merges or routes. Prompt names are prefixed under the
 * ToolSet's prefix mode and separator as tool names are; resources and
 * templates keep their URIs (their identity, which clients may hold),
 * the first backend's winning when two list the same. The ToolSet's
 * filters and access rules apply: prompts by name as tools, resources and
 * templates by their backend (arn_mcp_backend_visible()).
 */
enum arn_mcp_prim {
	ARN_MCP_P_TOOLS = 0,
	ARN_MCP_P_PROMPTS,
	ARN_MCP_P_RESOURCES,
	ARN_MCP_P_TEMPLATES,
};

/** The list method of @p k ("prompts/list", ...). */
const char *arn_mcp_prim_list_method(enum arn_mcp_prim k);

/**
 * Whether @p m is a prompts or resources method: *@p k what it lists
 * or routes by, *@p list whether it is a list (else get / read).
 */
bool arn_mcp_prim_of(enum arn_mcp_method m, enum arn_mcp_prim *k, bool *list);

/** As arn_mcp_tools_page_read() for a list of kind @p k ("prompts", "resources",
 * "resourceTemplates"). */
enum arn_mcp_err arn_mcp_prim_page_read(enum arn_mcp_prim k, struct json_object *result,
					struct json_object *acc, uint32_t max, const char **next);

/** arn_mcp_fanout_init() for lists of kind @p k. */
int arn_mcp_fanout_init_kind(struct arn_mcp_fanout *f, const struct arn_cfg_toolset *ts,
			     const struct arn_mcp_limits *lim, enum arn_mcp_prim k);

/**
 * The merged list result of kind @p k from @p lists (one per backend in
 * ToolSet order; NULL: that backend failed): {"prompts": [...]} etc.,
 * items shallow-copied, prompts renamed as exposed, only those the
 * ToolSet's filters pass and @p cl (NULL: no principal) may see (mcp_prim.c
 * says how). @return new, or NULL.
 */
struct json_object *arn_mcp_prim_merge(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				       struct json_object *const *lists,
				       const struct arn_mcp_client *cl);

/**
 * Route prompts/get (@p k PROMPTS, params.name) or resources/read
 * (RESOURCES, params.uri) by @p lists: *@p backend the first backend that
 * lists it and @p cl may see; a prompt's params.name is rewritten to the
 * backend's own. With @p k TEMPLATES (@p lists the templates), a
 * resources/read by URI template: the visible template whose literal
 * prefix (before its first '{') the URI starts with, the longest winning.
 * @return NONE, INVALID_PARAMS, UNKNOWN_PROMPT or UNKNOWN_RESOURCE (-32002).
 */
enum arn_mcp_err arn_mcp_prim_route(const struct arn_cfg_toolset *ts, enum arn_mcp_prim k,
				    struct json_object *const *lists,
				    const struct arn_mcp_client *cl, struct json_object *params,
				    uint32_t *backend);

#endif
