/*
 * HTTP/1.x codec: an incremental, resumable, zero-copy parser for requests
 * and responses, and a serializer for heads and chunked bodies.
 *
 * The models are HAProxy's src/h1.c (a resumable parser that keeps slices
 * into the input) and picohttpparser (no allocation, no copy, return values
 * spelled out, tests against a guard page). Nothing here allocates; the
 * caller owns every buffer. Everything runs on one worker lcore per
 * connection and is not thread-safe per parser.
 *
 * ---- Input model ----------------------------------------------------------
 *
 * The TCP layer delivers a connection's bytes as a sequence of segments (an
 * mbuf chain, each segment a (pointer, length) run). The caller feeds them
 * to arn_h1_parse() one run at a time, in order; the parser never needs the
 * next run to make sense of the current one, and it can stop in the middle
 * of a run (one event per call).
 *
 * Header names and values are slices (pointer + length). A slice points
 * into the run where its line appeared when the whole line is inside that
 * run (the common case: a request head fits in one segment). A line that
 * straddles two or more runs is copied, whole, into a small per-connection
 * scratch buffer, and its slices point there. Why copy and not record chunk
 * boundaries in the slices: every consumer (router matching, header
 * rewriting, the serializer, access logs) then sees contiguous strings and
 * needs no segment-aware code; the copy happens only for the few lines that
 * cross a segment boundary (at most one per boundary), and the bytes copied
 * are bounded by the head itself, since each head byte belongs to one line:
 * scratch of max_head_bytes can never overflow during a head (trailers,
 * limited by max_head_bytes too, append after the head's lines, so twice
 * that covers a message with both). A smaller scratch bounds
 * memory harder (nginx's large_client_header_buffers does the same); a head
 * whose spanning lines do not fit gets ARN_H1_E_SCRATCH_FULL (431), unless
 * the caller allows growth (arn_h1_parser_allow_grow) and supplies a larger
 * buffer when asked.
 * Scratch can be attached lazily: when a line must be saved and none is
 * attached, the parser returns ARN_H1_EV_NEED_SCRATCH (nothing of that line
 * consumed); the caller attaches a buffer (arn_h1_parser_set_scratch) and
 * calls again. Idle connections and single-segment heads never need one.
 *
 * Trailer slots are attached lazily too: a message's trailers first take
 * the header array's slots that its head left; only when those are full
 * and max_headers allows another trailer line does the parser return
 * ARN_H1_EV_NEED_TRAILERS (nothing of that line consumed), and the caller
 * moves the trailers to an array of its own (arn_h1_msg_set_trailers) and
 * calls again. Messages without trailers, or with a few after a small
 * head, never need one.
 *
 * Ownership and lifetime: bytes consumed while parsing a head (or
 * trailers) must stay in place and unchanged until the caller is done with
 * that message's slices, i.e. the caller keeps those mbufs. Body data is
 * never copied: an ARN_H1_EV_BODY event points into the run just passed.
 *
 * ---- Events -----------------------------------------------------------------
 *
 * Every message yields ARN_H1_EV_HEAD, zero or more ARN_H1_EV_BODY, then
 * ARN_H1_EV_END (with no body, END comes from the call after HEAD, with 0
 * bytes consumed). The parser stops after END: the next call starts the
 * next pipelined message, so the caller decides when to look at it, and
 * the message struct stays valid until the first byte of the next message
 * is consumed. The usual loop over one run:
 *
 *	for (;;) {
 *		ssize_t n = arn_h1_parse(p, buf, len, &ev);
 *		if (n == ARN_AGAIN) break;           // all of buf taken; next run
 *		if (n < 0) { ... error ... }          // see below
 *		buf += n; len -= n;
 *		... handle ev (HEAD / BODY / END / NEED_SCRATCH / NEED_TRAILERS) ...
 *	}
 *
 * ---- Smuggling defences and limits --------------------------------------
 *
 * Each is a distinct enum arn_h1_err (arn_h1_err.def) with the status a
 * server answers: both Content-Length and Transfer-Encoding (unless
 * ARN_H1_O_ALLOW_CHUNKED_LENGTH), repeated Content-Length (even identical:
 * Envoy's http-parser and balsa codecs both reject it), a transfer coding
 * other than a single final "chunked", Transfer-Encoding in HTTP/1.0, bad
 * chunk sizes / extensions / CRLFs, obs-fold, bare CR, NUL, invalid name
 * and value characters, whitespace before the colon, missing, repeated or
 * invalid Host in HTTP/1.1. The caller answers the status and closes the
 * connection; the parser refuses further input after an error.
 */
#ifndef ARN_H1_H
#define ARN_H1_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/** Parsers return this when they took all of their input and need more. */
#ifndef ARN_AGAIN
#define ARN_AGAIN (-EAGAIN)
#endif

/* ---- enums from the .def lists -------------------------------------------- */

enum arn_h1_err {
#define ARN_H1_ERR(id, status, details, text) ARN_H1_E_##id,
#include "arn_h1_err.def"
#undef ARN_H1_ERR
	ARN_H1_E_COUNT,
};

/* Header ids: ARN_H1_H_OTHER for any name not in arn_h1_hdr.def. */
enum arn_h1_hdr_id {
	ARN_H1_H_OTHER = 0,
#define ARN_H1_HDR(id, name) ARN_H1_H_##id,
#include "arn_h1_hdr.def"
#undef ARN_H1_HDR
	ARN_H1_H_COUNT,
};

enum arn_h1_method {
	ARN_H1_M_NONE = 0, /* responses */
#define ARN_H1_METHOD(id, name) ARN_H1_M_##id,
#include "arn_h1_method.def"
#undef ARN_H1_METHOD
	ARN_H1_M_OTHER, /* any other token, with ARN_H1_O_ALLOW_CUSTOM_METHODS */
	ARN_H1_M_COUNT,
};

enum arn_h1_kind {
	ARN_H1_REQUEST = 0,
	ARN_H1_RESPONSE,
};

/* RFC 9112 section 3.2 request-target forms. */
enum arn_h1_target_form {
	ARN_H1_TF_ORIGIN = 0, /* /path?query */
	ARN_H1_TF_ABSOLUTE,   /* http://authority/path?query */
	ARN_H1_TF_AUTHORITY,  /* host:port, CONNECT only */
	ARN_H1_TF_ASTERISK,   /* *, OPTIONS only */
};

/* ---- parsed message -------------------------------------------------------- */

/** A run of bytes owned by someone else (the input, scratch, or static). */
struct arn_h1_slice {
	const char *p;
	uint32_t len;
};

/** One header (or trailer) line: name and value, value without OWS. */
struct arn_h1_header {
	const char *name;
	const char *value;
	uint32_t value_len;
	uint16_t name_len;
	uint16_t id; /* enum arn_h1_hdr_id */
};

/* msg->flags */
/* framing: what follows the head */
#define ARN_H1_F_CONTENT_LENGTH (1u << 0) /* body framed by Content-Length */
#define ARN_H1_F_CHUNKED (1u << 1)	  /* body framed by chunked coding */
#define ARN_H1_F_UNTIL_CLOSE (1u << 2)	  /* response body ends when the server closes */
#define ARN_H1_F_NO_BODY (1u << 3)	  /* no body: END is the next event */
/* the connection: may it carry another message, and what Connection said */
#define ARN_H1_F_KEEP_ALIVE (1u << 4)
#define ARN_H1_F_CONN_CLOSE (1u << 5)
#define ARN_H1_F_CONN_KEEP_ALIVE (1u << 6)
#define ARN_H1_F_CONN_UPGRADE (1u << 7)
/* a request asking to switch protocols (HTTP/1.1, "Connection: upgrade"
 * and an Upgrade field); WEBSOCKET or H2C tell which protocol was named
 * (a proxy strips an h2c upgrade, as Envoy does) */
#define ARN_H1_F_UPGRADE (1u << 8)
#define ARN_H1_F_WEBSOCKET (1u << 9)
#define ARN_H1_F_H2C (1u << 10)
/* Expect: 100-continue in an HTTP/1.1 request, or another expectation */
#define ARN_H1_F_EXPECT_CONTINUE (1u << 11)
#define ARN_H1_F_EXPECT_OTHER (1u << 12)
/* Transfer-Encoding present; CL_IGNORED: a Content-Length that is not to
 * be forwarded (with ARN_H1_O_ALLOW_CHUNKED_LENGTH because TE was present;
 * "0" in a 1xx or 204 response) */
#define ARN_H1_F_TE (1u << 13)
#define ARN_H1_F_CL_IGNORED (1u << 14)
/* after this response the connection is a raw tunnel (101, 2xx to CONNECT) */
#define ARN_H1_F_TUNNEL (1u << 15)
#define ARN_H1_F_FRAGMENT (1u << 16) /* request-target contains '#' */
#define ARN_H1_F_TRAILERS (1u << 17) /* trailers were received (n_trailers) */
/* the HTTP/1 parser's word on hop-by-hop fields: HOPS_NAMED while it
 * reads a Connection line that is not a whole "keep-alive" or "close" (it
 * may name fields to drop) or a TE line; PLAIN_HOPS at the head's end when
 * it saw none. A message built otherwise (HTTP/2) has neither: writers
 * that skip work on PLAIN_HOPS do it in full for them. */
#define ARN_H1_F_HOPS_NAMED (1u << 18)
#define ARN_H1_F_PLAIN_HOPS (1u << 19)
/* a request line the HTTP/1 parser saw as "method SP request-target SP
 * HTTP/1.1 CRLF", in one piece from method_name.p on: a writer of HTTP/1.1
 * may copy it whole (arn_h1_write_request_line_of) */
#define ARN_H1_F_LINE_CRLF (1u << 20)
/* The head's field block is its wire bytes: the HTTP/1 parser saw every
 * field line as exactly name ":" SP value CRLF (hdrs[i].value is
 * hdrs[i].name + name_len + 2, CRLF right after the value, no OWS trimmed,
 * no obs-fold) and each line's name right after the line before's CRLF,
 * all in the one input run that held the whole head (no line copied to
 * scratch, none taken by the parser's line-by-line path). A writer may
 * then copy the bytes from a line's name to a later line's end as they
 * are (arn_h1_write_headers does: it tests no line for that). Set only by
 * the parser, at the head's end; a message built otherwise (HTTP/2, a
 * sub-request) never has it. Whoever changes a parsed message's head
 * fields afterwards (a slice, their order or their count: n_hdrs, hdrs or
 * an entry of it) must clear it first, or the writer forwards the bytes
 * as they came. Trailers (msg->trailers) are not covered. */
#define ARN_H1_F_FIELDS_WHOLE (1u << 21)
/* the parser asked for a trailer array (ARN_H1_EV_NEED_TRAILERS) for this
 * message: it asks once */
#define ARN_H1_F_TRAILERS_ASKED (1u << 22)
/* a head field a connection manager may have to take out before anything
 * reads the head (Envoy's mutateRequestHeaders): one named x-envoy-*, or
 * x-forwarded-client-cert. Set by the parser and by HTTP/2's header
 * callback (arn_h1_proxy_field), so that a head without one costs the
 * manager one test. */
#define ARN_H1_F_PROXY_FIELDS (1u << 23)

/**
 * One message. The caller owns it and the header array; the parser fills it
 * from the first byte of a message on, completely by ARN_H1_EV_HEAD
 * (trailers by ARN_H1_EV_END). Slices point into the caller's input runs,
 * the scratch buffer, or static strings.
 */
struct arn_h1_msg {
	/* set by the caller (arn_h1_msg_init), untouched by the parser */
	struct arn_h1_header *hdrs;
	uint16_t hdr_cap;

	/* filled by the parser */
	uint16_t n_hdrs;	 /* head fields: hdrs[0 .. n_hdrs) */
	uint16_t n_trailers;	 /* trailer fields: trailers[0 .. n_trailers) */
	uint8_t version;	 /* 10 or 11 */
	uint8_t method;		 /* enum arn_h1_method (requests) */
	uint8_t target_form;	 /* enum arn_h1_target_form (requests) */
	uint16_t status;	 /* responses */
	int16_t host_idx;	 /* index of Host in hdrs, or -1 */
	int16_t upgrade_idx;	 /* index of (the first) Upgrade, or -1 */
	uint32_t flags;		 /* ARN_H1_F_* */
	uint32_t head_len;	 /* bytes of the head on the wire, start line to empty line */
	uint64_t content_length; /* when ARN_H1_F_CONTENT_LENGTH */
	uint64_t body_len;	 /* body bytes delivered so far (without chunk framing) */

	struct arn_h1_slice method_name; /* requests: as received */
	struct arn_h1_slice target;	 /* requests: request-target as received */
	struct arn_h1_slice scheme;	 /* absolute-form only ("http"), else empty */
	/* The authority the request is for: from the target in absolute and
	 * authority forms (RFC 9112 3.2.2: a proxy ignores Host then), else the
	 * Host value (possibly empty); split it with arn_h1_authority_split. */
	struct arn_h1_slice authority;
	/* Path and query: the target in origin form, the part after the
	 * authority in absolute form ("/" when empty), "*" in asterisk form,
	 * empty in authority form. */
	struct arn_h1_slice path;
	struct arn_h1_slice reason; /* responses: reason phrase (may be empty) */

	/* The trailer fields, trailer_cap slots (NULL, 0: none yet). The
	 * trailers have a field budget of their own (max_headers, as the
	 * head's), but most messages have none, so no array is kept for
	 * them: at the last chunk the parser points trailers at the slots
	 * the head left, hdrs + n_hdrs (hdr_cap - n_hdrs of them), which hold
	 * a small head's trailers (a gRPC call's); when those are full and
	 * the budget allows another line, it asks the caller for an array
	 * of its own (ARN_H1_EV_NEED_TRAILERS, arn_h1_msg_set_trailers). A
	 * message built otherwise (HTTP/2) sets them as it likes; readers
	 * take trailers[0 .. n_trailers) and nothing else (with n_trailers
	 * 0 the pointer may be a former message's: the parser leaves both
	 * as they are until the last chunk). Last: not cleared per message. */
	struct arn_h1_header *trailers;
	uint16_t trailer_cap;
};

/**
 * Point @p m at the caller's header array (@p cap entries, kept by the
 * caller). hdrs / hdr_cap may be changed again whenever the parser is idle
 * (arn_h1_parser_idle): a connection manager can take an array from a
 * per-worker pool when a request starts and give it back after the
 * response, so idle keep-alive connections hold none (100 entries are
 * 2.4 KB).
 */
void arn_h1_msg_init(struct arn_h1_msg *m, struct arn_h1_header *hdrs, uint16_t cap);

/**
 * Move @p m's trailers to @p arr (@p cap entries, kept by the caller until
 * it is done with the message, at least @p m's n_trailers): the answer to
 * ARN_H1_EV_NEED_TRAILERS, or an HTTP/2 codec's own. The trailers so far
 * are copied (slices only, not their bytes).
 */
void arn_h1_msg_set_trailers(struct arn_h1_msg *m, struct arn_h1_header *arr, uint16_t cap);

/* ---- parser ------------------------------------------------------------------ */

/* arn_h1_config.opts, named after Envoy's Http1ProtocolOptions fields */
/* allow_chunked_length: CL + TE is accepted, CL ignored (ARN_H1_F_CL_IGNORED) */
#define ARN_H1_O_ALLOW_CHUNKED_LENGTH (1u << 0)
/* allow_custom_methods: any token is a method (ARN_H1_M_OTHER) */
#define ARN_H1_O_ALLOW_CUSTOM_METHODS (1u << 1)

/** Limits and options. Zero fields take the defaults shown. */
struct arn_h1_config {
	/* Start line + header lines + CRLFs, also applied to trailers
	 * separately. Default 60 KiB: Envoy's max_request_headers_kb. */
	uint32_t max_head_bytes;
	/* Request line (or status line) length; default: max_head_bytes. A
	 * request line over it (or over max_head_bytes) is ARN_H1_E_URI_TOO_LONG
	 * (414), so the caller can tell it from a header block too large (431). */
	uint32_t max_start_line;
	/* Header lines (and, separately, trailer lines). Default 100: Envoy's
	 * max_headers_count. Also capped by the message's hdr_cap. */
	uint16_t max_headers;
	/* A chunk-size line with its extensions. Default 4096. */
	uint16_t max_chunk_line;
	uint32_t opts; /* ARN_H1_O_* */
};

#define ARN_H1_DEFAULT_MAX_HEAD (60u * 1024)
#define ARN_H1_DEFAULT_MAX_HEADERS 100
#define ARN_H1_DEFAULT_MAX_CHUNK_LINE 4096

enum arn_h1_ev_type {
	ARN_H1_EV_NONE = 0,
	ARN_H1_EV_HEAD,		/* the head is complete: msg is filled, framing known */
	ARN_H1_EV_BODY,		/* data/len: body bytes (de-chunked), or tunnel bytes */
	ARN_H1_EV_END,		/* the message is complete (trailers in msg) */
	ARN_H1_EV_NEED_SCRATCH, /* attach scratch, then call again with the rest */
	/* a trailer line has no slot: the ones the head left are full and
	 * max_headers allows more. Nothing of the line is consumed; give the
	 * message an array (arn_h1_msg_set_trailers) and call again, or call
	 * arn_h1_parser_no_trailers (none to be had). Asked once a message:
	 * called again without an array, the line fails as one over
	 * max_headers does (ARN_H1_E_TOO_MANY_HEADERS, 431). */
	ARN_H1_EV_NEED_TRAILERS,
};

struct arn_h1_ev {
	enum arn_h1_ev_type type;
	const char *data; /* ARN_H1_EV_BODY: points into the input run */
	size_t len;
};

/**
 * Per-connection (per-direction) parser state. The caller allocates it
 * (typically inside its connection struct); the fields are private.
 */
struct arn_h1_parser {
	struct arn_h1_msg *msg;
	char *scratch;
	uint32_t scratch_len; /* (with head_bytes, one store at a message's start) */
	uint32_t head_bytes;  /* of the head (or trailers) so far */
	uint32_t scratch_cap;
	uint32_t line_off; /* start of the partial line in scratch */
	uint32_t max_head, max_start;
	uint16_t max_hdrs, max_chunk_line;
	uint16_t chunk_line_len;
	uint8_t kind;	    /* enum arn_h1_kind */
	uint8_t req_method; /* responses: method of the request answered */
	uint8_t err;	    /* enum arn_h1_err once in error */
	uint8_t grow_ok;    /* arn_h1_parser_allow_grow */
	/* the state and what a message starts with, in 8 bytes, which the
	 * parser sets at a message's start with one store */
	uint8_t state;
	uint8_t partial;    /* a line is being assembled in scratch */
	uint8_t start_done; /* start line parsed */
	uint8_t te_bits;
	uint8_t chunk_digits;
	uint8_t grow_denied; /* this message: no larger scratch to be had */
	uint8_t short_room;  /* the pending NEED_SCRATCH is for more room */
	uint8_t host_plain;  /* this request's Host is letters, digits, '-' and '.' */
	uint32_t opts;
	uint64_t remaining; /* Content-Length body or current chunk */
};

/**
 * Prepare @p p to parse a stream of @p kind messages into @p msg (owned by
 * the caller, kept for the parser's life). @p cfg may be NULL (defaults);
 * it is copied. No scratch is attached.
 */
void arn_h1_parser_init(struct arn_h1_parser *p, enum arn_h1_kind kind,
			const struct arn_h1_config *cfg, struct arn_h1_msg *msg);

/**
 * Attach a scratch buffer (@p cap bytes, owned by the caller) for lines that
 * span input runs. Allowed while the parser holds no partial line in the
 * current one (arn_h1_parser_scratch_busy() is false), and then any slices
 * into the old buffer remain the caller's to keep alive.
 * @return 0, or -EBUSY when a partial line is held in the current scratch.
 */
int arn_h1_parser_set_scratch(struct arn_h1_parser *p, char *buf, uint32_t cap);

/** Does the current message have lines in scratch (slices into it)? */
bool arn_h1_parser_scratch_busy(const struct arn_h1_parser *p);

/**
 * Let the parser ask for a larger scratch when a line that spans input runs
 * does not fit in the attached one: ARN_H1_EV_NEED_SCRATCH (as for a first
 * scratch, the complete lines before it are consumed, the line that does not
 * fit is not) with arn_h1_parser_scratch_short() true, instead of failing
 * with ARN_H1_E_SCRATCH_FULL. The caller answers with
 * arn_h1_parser_grow_scratch(). Off by default.
 */
void arn_h1_parser_allow_grow(struct arn_h1_parser *p, bool on);

/** After ARN_H1_EV_NEED_SCRATCH: does the parser want more room (true) or a
 * first buffer (false, arn_h1_parser_set_scratch)? */
bool arn_h1_parser_scratch_short(const struct arn_h1_parser *p);

/**
 * Answer a NEED_SCRATCH for more room: continue in @p buf (@p cap bytes).
 * The line being assembled moves there; slices of lines already complete
 * stay in the old buffer, which the caller keeps alive with the message.
 * @p buf NULL: no more room is to be had; the line fails with
 * ARN_H1_E_SCRATCH_FULL (431) when parsing goes on.
 * @return 0, or -ENOSPC when @p cap cannot hold the partial line (nothing
 *   changed).
 */
int arn_h1_parser_grow_scratch(struct arn_h1_parser *p, char *buf, uint32_t cap);

/**
 * Answer an ARN_H1_EV_NEED_TRAILERS when no trailer array is to be had:
 * the message fails now, as a trailer line over max_headers does
 * (ARN_H1_E_TOO_MANY_HEADERS); the parser takes no more input.
 */
void arn_h1_parser_no_trailers(struct arn_h1_parser *p);

/**
 * Responses only: the method of the request the next response answers
 * (HEAD: no body; CONNECT: 2xx turns into a tunnel). Call before feeding
 * the response; it stays in force for 1xx interim responses. Default GET.
 */
void arn_h1_parser_expect(struct arn_h1_parser *p, enum arn_h1_method req_method);

/**
 * Parse the next piece of one run of input.
 *
 * @return n >= 0: the first n bytes of @p buf were consumed and @p ev holds
 *   an event (n may be 0, e.g. END after a head without body);
 *   ARN_AGAIN: all @p len bytes were consumed (remembered or copied as
 *   needed) and no event is ready: feed the next run;
 *   -EBADMSG: the input violates HTTP/1 or a limit: arn_h1_parser_error()
 *   tells which (with the status to answer); the parser stays in error;
 *   -EBUSY: a request asked for an upgrade / CONNECT and the caller has not
 *   yet called arn_h1_parser_tunnel() or arn_h1_parser_resume(); nothing
 *   consumed;
 *   -EPIPE: the previous message ended the connection (not keep-alive), so
 *   further bytes are not HTTP; nothing consumed.
 */
ssize_t arn_h1_parse(struct arn_h1_parser *p, const char *buf, size_t len, struct arn_h1_ev *ev);

/**
 * The peer closed its side. For a response read until close this is its
 * END; between messages (or after only empty lines) it is a clean close.
 * @return 0 with ev->type ARN_H1_EV_END or ARN_H1_EV_NONE; -EBADMSG with
 *   ARN_H1_E_TRUNCATED when a message was cut short.
 */
int arn_h1_parse_eof(struct arn_h1_parser *p, struct arn_h1_ev *ev);

/**
 * Switch to a raw tunnel: every later byte is returned as ARN_H1_EV_BODY.
 * The caller does it on the request side when the upstream answered 101 to
 * an upgrade or 2xx to CONNECT (the response parser does it by itself).
 */
void arn_h1_parser_tunnel(struct arn_h1_parser *p);

/** After an upgrade / CONNECT request that the upstream refused: go on
 * parsing HTTP on this connection. */
void arn_h1_parser_resume(struct arn_h1_parser *p);

/** Why the parser failed (ARN_H1_E_NONE if it did not). */
enum arn_h1_err arn_h1_parser_error(const struct arn_h1_parser *p);

/** Is the parser between messages (no byte of a next message consumed)?
 * Inline: the upstream's release asks once a request. Its idle state is 0
 * (asserted in h1_parse.c). */
static inline bool arn_h1_parser_idle(const struct arn_h1_parser *p)
{
	return p->state == 0;
}

/** Is the parser inside a chunked body's trailer section? Its lines'
 * slices point into the runs passed since the last chunk, which the caller
 * keeps until END, as for a head. */
bool arn_h1_parser_in_trailers(const struct arn_h1_parser *p);

/** Is the parser in a chunked body's framing (a size line, the CRLF after
 * a chunk's data) or its trailer section: where its next run may hold
 * trailer lines (a run never goes on from a chunk's data to them: the data
 * is an event of its own)? */
bool arn_h1_parser_in_chunk_lines(const struct arn_h1_parser *p);

/** The status a server answers for @p e in a request (400, 414, 431, 501, 505). */
int arn_h1_err_status(enum arn_h1_err e);
/** "http1.headers_too_large"-style details (response code details, counters). */
const char *arn_h1_err_details(enum arn_h1_err e);
/** "CL_AND_TE"-style identifier. */
const char *arn_h1_err_name(enum arn_h1_err e);
/** A sentence for logs and local reply bodies. */
const char *arn_h1_err_text(enum arn_h1_err e);

/** "GET" for ARN_H1_M_GET ... ("" for ARN_H1_M_NONE, ARN_H1_M_OTHER or out of range;
 * msg->method_name has the method as received). */
const char *arn_h1_method_str(enum arn_h1_method m);
/** The method for a name (case-sensitive), or ARN_H1_M_NONE. */
enum arn_h1_method arn_h1_method_lookup(const char *s, size_t n);
/** The id of a header name (case-insensitive), or ARN_H1_H_OTHER. */
enum arn_h1_hdr_id arn_h1_hdr_lookup(const char *s, size_t n);
/** Lower-case name of a header id ("" for ARN_H1_H_OTHER). */
const char *arn_h1_hdr_name(enum arn_h1_hdr_id id);

/* ---- header helpers ---------------------------------------------------------- */

/** ASCII case-insensitive equality of two byte strings. */
bool arn_h1_eq_nocase(const char *a, size_t an, const char *b, size_t bn);

/** Is a field named @p name (@p len bytes of a valid field name, a token)
 * with header id @p id one ARN_H1_F_PROXY_FIELDS marks? One load and
 * compare for a name without an id: OR 0x20 folds the case of letters
 * and leaves '-' (0x2d) as it is; no other token byte folds onto one of
 * "x-envoy-"'s. */
static inline bool arn_h1_proxy_field(const char *name, size_t len, unsigned id)
{
	if (id == ARN_H1_H_X_FORWARDED_CLIENT_CERT)
		return true;
	if (id != ARN_H1_H_OTHER || len <= 8)
		return false;
	uint64_t w, lit;
	memcpy(&w, name, 8);
	memcpy(&lit, "x-envoy-", 8);
	return (w | 0x2020202020202020ull) == lit;
}

/**
 * Index of the first head header at or after @p from named @p name
 * (case-insensitive), or -1. Trailers are not searched.
 */
int arn_h1_find(const struct arn_h1_msg *m, const char *name, size_t n, int from);
/** Same by id (faster; @p id must not be ARN_H1_H_OTHER). */
int arn_h1_find_id(const struct arn_h1_msg *m, enum arn_h1_hdr_id id, int from);

/**
 * Take out of @p m's head every field @p drop says to (called once per
 * field, in order, with @p arg), keeping the rest in order, host_idx and
 * upgrade_idx pointing at the same fields (-1 if dropped), and clearing
 * ARN_H1_F_FIELDS_WHOLE when any went. The parser's flags are left as
 * they are: the caller drops no field they were read from. Trailers are
 * untouched. @return the number of fields taken out.
 */
unsigned arn_h1_drop_fields(struct arn_h1_msg *m,
			    bool (*drop)(const struct arn_h1_header *f, void *arg), void *arg);

/**
 * Iterate a comma-separated list (Connection, Transfer-Encoding, Upgrade,
 * ...): RFC 9110 5.6.1 rules, OWS trimmed, empty elements skipped.
 * Initialise with arn_h1_list_init(&it, value, len); each call yields the
 * next element in @p out. Elements are not split at ';' (parameters stay).
 * @return true with an element, false at the end.
 */
struct arn_h1_list_iter {
	const char *p, *end;
};
void arn_h1_list_init(struct arn_h1_list_iter *it, const char *s, size_t n);
bool arn_h1_list_next(struct arn_h1_list_iter *it, struct arn_h1_slice *out);
/** Is @p tok (case-insensitive) an element of the list @p s? */
bool arn_h1_list_has(const char *s, size_t n, const char *tok, size_t tn);
/** Is @p tok an element of any head header with id @p id? */
bool arn_h1_msg_has_token(const struct arn_h1_msg *m, enum arn_h1_hdr_id id, const char *tok,
			  size_t tn);

/**
 * Split an authority (Host value, or the target's authority) into host and
 * port: "example.com", "example.com:8080", "[2001:db8::1]:443", "1.2.3.4".
 * @p host gets the host without brackets for IPv6 literals; @p port gets the
 * port or -1 when absent (an empty port after ':' counts as absent, RFC
 * 3986). Characters are checked against RFC 3986 host syntax (no userinfo).
 * @return 0, or -EINVAL for an invalid authority (host or port); an empty
 *   authority is valid (host empty, port -1).
 */
int arn_h1_authority_split(const char *s, size_t n, struct arn_h1_slice *host, int *port);

/* ---- serializer ------------------------------------------------------------- */

/**
 * An output cursor over caller-provided buffers: the writer copies into
 * p[len..cap) and, when that is full, calls @p refill to get the next
 * buffer (e.g. a new mbuf appended to the chain: the callback sets p, len
 * and cap, keeping arg). refill may be NULL (a single fixed buffer).
 * Errors are sticky: after one, writes do nothing and return the error.
 */
struct arn_h1_wbuf {
	char *p;
	uint32_t len;
	uint32_t cap;
	int err; /* 0 or the first negative errno; then cap = len (no room) */
	/* @return 0 with a buffer that has room, or a negative errno (stop). */
	int (*refill)(struct arn_h1_wbuf *w);
	void *arg;
	uint64_t total; /* bytes written over all buffers */
};

void arn_h1_wbuf_init(struct arn_h1_wbuf *w, char *buf, uint32_t cap,
		      int (*refill)(struct arn_h1_wbuf *w), void *arg);

/** Append @p n bytes. @return 0, or -ENOBUFS (no refill / refill failed). */
int arn_h1_put(struct arn_h1_wbuf *w, const void *s, size_t n);

/** "METHOD target HTTP/1.x\r\n" (minor 0 or 1). @return as arn_h1_put. */
int arn_h1_write_request_line(struct arn_h1_wbuf *w, const char *method, size_t mlen,
			      const char *target, size_t tlen, int minor);
/**
 * "METHOD target HTTP/1.1\r\n" for request @p m with @p target: the line
 * as @p m's bytes hold it, in one copy, when the parser saw it so
 * (ARN_H1_F_LINE_CRLF) and @p target is @p m's own (the same slice: not
 * rewritten); else as arn_h1_write_request_line writes it from @p m's
 * method. @return as arn_h1_put.
 */
int arn_h1_write_request_line_of(struct arn_h1_wbuf *w, const struct arn_h1_msg *m,
				 const char *target, size_t tlen);
/** "HTTP/1.x status reason\r\n"; @p reason NULL: the standard phrase. */
int arn_h1_write_status_line(struct arn_h1_wbuf *w, unsigned status, const char *reason,
			     size_t rlen, int minor);
/** "name: value\r\n" (the caller supplies valid name and value). */
int arn_h1_write_header(struct arn_h1_wbuf *w, const char *name, size_t nlen, const char *value,
			size_t vlen);
/** The empty line that ends a head (or trailers). */
int arn_h1_write_end(struct arn_h1_wbuf *w);

/* Header edits applied while writing a parsed message's headers. Names
 * compare case-insensitively. Modelled on Envoy's HeaderValueOption
 * append_action plus header removal and x-forwarded-for appending. */
enum arn_h1_edit_op {
	ARN_H1_EDIT_REMOVE = 0,	    /* drop every line with this name */
	ARN_H1_EDIT_SET,	    /* OVERWRITE_IF_EXISTS_OR_ADD: one line, where the first was */
	ARN_H1_EDIT_SET_IF_PRESENT, /* OVERWRITE_IF_EXISTS */
	ARN_H1_EDIT_ADD,	    /* APPEND_IF_EXISTS_OR_ADD: one more line at the end */
	ARN_H1_EDIT_ADD_IF_ABSENT,  /* ADD_IF_ABSENT */
	ARN_H1_EDIT_APPEND_VALUE,   /* x-forwarded-for: existing values joined with ",", then
				       ",value"; or add */
};

struct arn_h1_edit {
	const char *name;
	const char *value;
	uint32_t value_len;
	uint16_t name_len;
	uint8_t op; /* enum arn_h1_edit_op */
	/* the name's enum arn_h1_hdr_id + 1 where the caller knows it (a
	 * constant name: the writer skips looking it up), 0 where it does
	 * not (what an initializer that leaves it out gives) */
	uint8_t id1;
	/* nonzero: the bytes from name on are the whole wire line, "name:
	 * value\r\n" (value = name + name_len + 2, CRLF after it), built where
	 * the name and value were validated (a configuration's, or Arion's
	 * own): the HTTP/1 writer copies it once, not as name, ": ", value and
	 * CRLF (bench_hcm: ~15 instructions a line). Every other reader
	 * (HTTP/2's encoders, local replies) takes name and value as ever. */
	uint8_t line;
};

/* arn_h1_write_headers flags */
/* Drop hop-by-hop fields (RFC 9110 7.6.1): Connection, Keep-Alive,
 * Proxy-Connection, TE, Transfer-Encoding, Upgrade, HTTP2-Settings, and
 * unrecognised fields that Connection names. */
#define ARN_H1_W_DROP_HOP (1u << 0)
/* With DROP_HOP: keep Upgrade and write "connection: upgrade". */
#define ARN_H1_W_UPGRADE (1u << 1)
/* With DROP_HOP, for requests: when a TE field lists "trailers", write
 * "te: trailers" (and only that) as Envoy does, so an upstream knows the
 * client takes trailers (gRPC servers check it). */
#define ARN_H1_W_TE_TRAILERS (1u << 2)

#define ARN_H1_MAX_EDITS 64

/**
 * Write @p m's head fields (not trailers) with @p edits applied, then the
 * additions the edits ask for; no start line and no empty line (the
 * caller writes those, and any framing header it needs, e.g.
 * "transfer-encoding: chunked" when it re-chunks a body).
 * @return 0, -E2BIG (more than ARN_H1_MAX_EDITS edits), or the writer's error.
 */
int arn_h1_write_headers(struct arn_h1_wbuf *w, const struct arn_h1_msg *m,
			 const struct arn_h1_edit *edits, unsigned n_edits, unsigned flags);

/**
 * Is @p h a field a proxy does not forward in trailers? Pseudo-headers,
 * hop-by-hop fields (RFC 9110 7.6.1) and those RFC 9110 6.5.1 keeps out of
 * trailers because they frame or route the message (Content-Length, Host).
 * @p h's id must be set (arn_h1_hdr_lookup).
 */
bool arn_h1_trailer_dropped(const struct arn_h1_header *h);

/** Write trailer or header lines from an array (e.g. msg trailers). */
int arn_h1_write_fields(struct arn_h1_wbuf *w, const struct arn_h1_header *h, unsigned n);

/* Chunked encoding. The CRLF that closes one chunk's data is written with
 * the next chunk's size line (or the last chunk), so each data piece needs
 * exactly one small prefix, which fits in an mbuf's headroom; unless the
 * writer closes the chunk itself right after its data (arn_h1_chunk_close),
 * as a proxy must: a chunk held open until the next one arrives stalls a
 * client that acts on whole chunks (server-sent events, streamed replies)
 * for as long as the sender pauses. */
struct arn_h1_chunker {
	bool open; /* a chunk's data was announced and not yet closed */
};
#define ARN_H1_CHUNK_PREFIX_MAX 20 /* "\r\n" + 16 hex digits + "\r\n" */
#define ARN_H1_CHUNK_LAST_MAX 5	   /* "\r\n0\r\n" */

/**
 * Format the prefix for @p size (> 0) bytes of chunk data into @p out.
 * @return its length (<= ARN_H1_CHUNK_PREFIX_MAX); 0 if @p size is 0
 *   (an empty chunk would end the body, so none is written).
 */
size_t arn_h1_chunk_prefix(struct arn_h1_chunker *c, uint64_t size,
			   char out[ARN_H1_CHUNK_PREFIX_MAX]);
/**
 * Close the chunk announced last: "\r\n" into @p out, for the caller to
 * write right after the chunk's data. @return its length (2), or 0 when no
 * chunk is open.
 */
size_t arn_h1_chunk_close(struct arn_h1_chunker *c, char out[2]);
/** Format "[\r\n]0\r\n" (the last chunk, before trailers); @return its length. */
size_t arn_h1_chunk_last(struct arn_h1_chunker *c, char out[ARN_H1_CHUNK_LAST_MAX]);

/** Writer forms: a chunk prefix, and the end of a chunked body with trailers. */
int arn_h1_write_chunk_prefix(struct arn_h1_wbuf *w, struct arn_h1_chunker *c, uint64_t size);
int arn_h1_write_chunk_end(struct arn_h1_wbuf *w, struct arn_h1_chunker *c,
			   const struct arn_h1_header *trailers, unsigned n);

#endif
