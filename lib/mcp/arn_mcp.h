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
 * parsing with UTF-8 validation, and reference-counted values, so an
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
 * ---- Errors --------------------------------------------------------------
 *
 * The functions that judge messages return enum arn_mcp_err (0: none),
 * not errnos: each value is an answer to send (arn_mcp_err.def gives its
 * JSON-RPC code, HTTP status and message), not a system failure.
 *
 * Threading: everything here is for one worker at a time; nothing is
 * shared, nothing locks. A catalog is immutable once built and may be read
 * by several workers if its owner keeps it alive.
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
	uint32_t max_containers; /* JSON objects and arrays in one body; 4096 */
	uint32_t max_values;	 /* JSON values of any kind (keys too) in one body; 32768 */
	uint32_t max_tools;	 /* tools in one merged catalog; 4096 */
	uint32_t max_page_tools; /* tools in one tools/list page; 256 */
	uint32_t max_tool_name;	 /* bytes of an exposed (prefixed) tool name; 128 */
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

#endif
