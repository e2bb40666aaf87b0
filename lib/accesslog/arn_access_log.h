/*
 * Access logs: Envoy's envoy.access_loggers.file / stdout / stderr, with
 * Envoy's command operators (%START_TIME%, %REQ(X)%, %RESPONSE_CODE%, ...),
 * the default format string and json_format, written without blocking
 * workers.
 *
 * How a line travels: lib/http fills a struct arn_access_record (plain C,
 * pointing into its own buffers) when a request ends and calls
 * arn_access_log_write() on its worker. That formats the line at once into
 * a per-worker scratch buffer (no malloc, no lock, no syscall) and copies
 * it into the sink's single-producer ring for that worker; when the ring
 * is full the line is dropped and counted (access_logs.file.dropped), so a
 * slow disk never stalls a worker. The control lcore drains every ring into
 * the file from arn_access_log_drain() (the application's control loop
 * calls it). Rings are per stats slot: they follow arn_stats_set_workers().
 *
 * Lifetime: loggers are created on the control lcore while lib/http builds
 * the runtime objects of a generation (one per HCM access_log entry),
 * reference counted, and freed through the process's deferred-free queue
 * (arn_defer_default(), arn_defer.h) after the last arn_access_logger_put().
 * Loggers writing to one path share one file (and one set of rings), as in
 * Envoy.
 */
#ifndef ARN_ACCESS_LOG_H
#define ARN_ACCESS_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_sb.h"

/* Envoy's default access log format (file, stdout, stderr without log_format). */
#define ARN_ACCESS_LOG_DEFAULT_FORMAT                                                              \
	"[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "         \
	"%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "               \
	"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "  \
	"\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\"\n"

/* Envoy's response flags, short and long names, in Envoy's output order. */
enum arn_response_flag {
#define ARN_RESPONSE_FLAG(id, short_name, long_name) ARN_RF_##id,
#include "arn_response_flags.def"
#undef ARN_RESPONSE_FLAG
	ARN_RF__COUNT,
};
#define ARN_RF_BIT(id) (1u << ARN_RF_##id)

/** A byte string that is not NUL-terminated; p == NULL means absent ("-"). */
struct arn_access_str {
	const char *p;
	uint32_t len;
};

/** One header; names compare case-insensitively. */
struct arn_access_header {
	struct arn_access_str name;
	struct arn_access_str value;
};

/* An IPv4 endpoint; ip == 0 && port == 0 means absent. Host byte order. */
struct arn_access_addr {
	uint32_t ip;
	uint16_t port;
};

/*
 * One finished (or reset) request, filled by lib/http on its worker. Every
 * pointer is borrowed for the duration of arn_access_log_write() only.
 * Times are microseconds; durations use UINT64_MAX for "not reached" ("-").
 */
/* A field of the downstream peer's certificate (%DOWNSTREAM_PEER_*%). */
enum arn_access_peer {
	ARN_ACCESS_PEER_SUBJECT = 0,	 /* RFC 2253 */
	ARN_ACCESS_PEER_ISSUER,		 /* RFC 2253 */
	ARN_ACCESS_PEER_URI_SAN,	 /* the URI SANs, joined by ',' */
	ARN_ACCESS_PEER_FINGERPRINT_256, /* lower-case hex SHA-256 of the DER */
	ARN_ACCESS_PEER_SERIAL,		 /* lower-case hex */
	ARN_ACCESS_PEER_V_START,	 /* notBefore, epoch seconds */
	ARN_ACCESS_PEER_V_END,		 /* notAfter, epoch seconds */
};

struct arn_access_record {
	int64_t start_time_us;		  /* wall clock (CLOCK_REALTIME), us since the epoch */
	uint64_t duration_us;		  /* %DURATION%: first request byte to last response byte */
	uint64_t request_duration_us;	  /* %REQUEST_DURATION%: to last request byte */
	uint64_t response_duration_us;	  /* %RESPONSE_DURATION%: to first upstream response byte */
	uint64_t response_tx_duration_us; /* %RESPONSE_TX_DURATION%: first to last response byte */

	/* Request pseudo-headers, served by %REQ(:METHOD)% etc. */
	struct arn_access_str method;
	struct arn_access_str path;	 /* with query */
	struct arn_access_str authority; /* Host */
	struct arn_access_str scheme;
	struct arn_access_str protocol; /* "HTTP/1.1"; %PROTOCOL% */
	const struct arn_access_header *req_headers;
	unsigned n_req_headers;
	const struct arn_access_header *resp_headers;
	unsigned n_resp_headers;
	const struct arn_access_header *resp_trailers;
	unsigned n_resp_trailers;

	uint32_t response_code; /* 0: none sent ("0", as Envoy) */
	struct arn_access_str response_code_details;
	/* why Arion closed a connection for L4 reasons (network RBAC's
	 * "rbac_access_denied_matched_policy[...]"), or empty */
	struct arn_access_str connection_termination_details;
	uint32_t response_flags; /* ARN_RF_BIT(...) */
	uint64_t bytes_received; /* request body bytes */
	uint64_t bytes_sent;	 /* response body bytes */

	struct arn_access_addr downstream_remote;
	/* the TCP peer when a PROXY header gave downstream_remote; 0: the same */
	struct arn_access_addr downstream_direct_remote;
	struct arn_access_addr downstream_local;
	struct arn_access_addr upstream_host;  /* %UPSTREAM_HOST% */
	struct arn_access_addr upstream_local; /* %UPSTREAM_LOCAL_ADDRESS% */
	struct arn_access_str upstream_cluster;
	struct arn_access_str upstream_transport_failure_reason;
	struct arn_access_str route_name;
	/* the MCP gateway filter's: the tool called (as the client named it)
	 * and the backend it went to (%MCP_TOOL%, %MCP_BACKEND%) */
	struct arn_access_str mcp_tool, mcp_backend;
	/* a local reply's body, for %LOCAL_REPLY_BODY% (local_reply_config's
	 * body_format); an access log line has none */
	struct arn_access_str local_reply_body;
	struct arn_access_str requested_server_name;  /* SNI */
	struct arn_access_str downstream_tls_version; /* "TLSv1.3"; empty: plain text */
	struct arn_access_str downstream_tls_cipher;  /* OpenSSL's name */
	/* The downstream peer's certificate, read only by formats that print
	 * it (%DOWNSTREAM_PEER_*%): @p downstream_peer writes field @p what
	 * into @p buf (V_START / V_END: epoch seconds in decimal) and returns
	 * its length, or a negative errno when there is none. NULL: plain
	 * text. Called during arn_access_log_write only. */
	int (*downstream_peer)(const void *arg, enum arn_access_peer what, char *buf, size_t len);
	const void *downstream_peer_arg;
	uint64_t connection_id;
	/* the request's active span (HCM tracing): its trace id (16 bytes)
	 * and span id (8), for the OpenTelemetry access logger's trace_id
	 * and span_id; NULL: none */
	const uint8_t *trace_id, *span_id;
	uint32_t upstream_request_attempt_count;
	bool health_check; /* the health_check HTTP filter took it (not_health_check_filter) */
	/* Envoy's envoy.common access_log_hint: set by an RBAC filter with
	 * action LOG (true: one of its policies matched), for metadata_filter */
	uint8_t access_log_hint; /* enum arn_access_hint */
};

enum arn_access_hint {
	ARN_ACCESS_HINT_ABSENT = 0,
	ARN_ACCESS_HINT_FALSE,
	ARN_ACCESS_HINT_TRUE,
};

/* ---- formatter ----------------------------------------------------------- */

struct arn_access_format;

/**
 * Compile an Envoy format string (text_format / text_format_source
 * inline_string). Operators take Envoy's arguments: %REQ(X?Y):N%,
 * %START_TIME(%Y-%m-%dT%H:%M:%S.%3fZ)%. An unknown operator is an error.
 * @return the format (arn_access_format_free), or NULL with the reason in
 *   @p err ("'%FOO%' at offset 12 is not a command operator Arion knows").
 */
struct arn_access_format *arn_access_format_text(const char *fmt, struct arn_sb *err);

/**
 * Compile a json_format: @p n keys, each with a value format string (a
 * whole-value single operator keeps its type: numbers stay numbers, absent
 * values become null; other values are strings). Lines are one JSON object
 * and a newline.
 */
struct arn_access_format *arn_access_format_json(const char *const *keys, const char *const *values,
						 size_t n, struct arn_sb *err);

void arn_access_format_free(struct arn_access_format *f);

/**
 * The format of an access log as lib/config's model keeps it: @p
 * json_format (a json_format object's JSON text) if set, else the format
 * string @p text, else Envoy's default; omit_empty_values @p omit_empty.
 * The one builder for lib/config (which refuses a log whose format fails)
 * and lib/http's runtime. @return the format, or NULL with the reason in
 * @p err, which starts with @p where (the field's path), or
 * "<where>.<key>" for a json_format member, then ": ".
 */
struct arn_access_format *arn_access_format_of(const char *json_format, const char *text,
					       bool omit_empty, const char *where,
					       struct arn_sb *err);

/**
 * Envoy's SubstitutionFormatString `omit_empty_values`: an operator with no
 * value prints nothing instead of "-" (text, and the parts of a JSON string
 * value), and a JSON key whose lone operator has no value is left out
 * instead of null. Set before the format is shared with workers.
 */
void arn_access_format_omit_empty(struct arn_access_format *f, bool on);

/**
 * Format @p r into @p buf (any lcore, no allocation). A text line is cut at
 * @p cap - 1 bytes (ending in "...\n" when cut); a JSON line leaves out the
 * members that do not fit, so that it stays one JSON object. NUL-terminated.
 * @return the length written, excluding the NUL.
 */
size_t arn_access_format_apply(const struct arn_access_format *f, const struct arn_access_record *r,
			       char *buf, size_t cap);

/* ---- loggers (created on the control lcore) ---------------------------- */

struct arn_access_logger;

/**
 * A logger from one envoy.config.accesslog.v3.AccessLog entry (an HCM's
 * access_log[i]): typed_config FileAccessLog (path, log_format or the
 * deprecated format/json_format), StdoutAccessLog or StderrAccessLog.
 * Filters: status_code_filter, duration_filter, not_health_check_filter,
 * response_flag_filter, header_filter (no regex or range), metadata_filter
 * (RBAC's access_log_hint), and_filter / or_filter of those (runtime keys are
 * not read: the default values apply). Anything else is refused with a reason.
 * @p where names the field in errors ("listener 'http' ... access_log[0]").
 * @return the logger (arn_access_logger_put), or NULL with the reason in @p err.
 */
struct arn_access_logger *arn_access_logger_create(const void *access_log_pb, const char *where,
						   struct arn_sb *err);

/**
 * An access log filter from the JSON form of an
 * envoy.config.accesslog.v3.AccessLogFilter (the filters listed above).
 * @return the filter, or NULL with the reason in @p err (naming @p where).
 */
struct arn_access_filter;
struct arn_access_filter *arn_access_filter_json(const char *json, size_t len, const char *where,
						 struct arn_sb *err);
void arn_access_filter_free(struct arn_access_filter *f);
/** Whether @p r passes @p f (an access log's test; local_reply_config's
 * mappers use it too). Any lcore, no allocation. */
bool arn_access_filter_match(const struct arn_access_filter *f, const struct arn_access_record *r);

/** Give @p l the filter @p f (owned by @p l from now; before @p l is used). */
void arn_access_logger_set_filter(struct arn_access_logger *l, struct arn_access_filter *f);

/**
 * A logger writing @p fmt (NULL: the default format) to @p path, or to
 * stdout/stderr when @p path is "/dev/stdout" / "/dev/stderr".
 * @return the logger, or NULL with the reason in @p err (cannot open the file).
 */
struct arn_access_logger *arn_access_logger_open(const char *path, struct arn_access_format *fmt,
						 struct arn_sb *err);

void arn_access_logger_ref(struct arn_access_logger *l);
/** Release; at zero the logger is freed after workers are done with it. NULL: no-op. */
void arn_access_logger_put(struct arn_access_logger *l);

/**
 * Log one request from @p slot (ARN_STATS_SLOT_WORKER(w) on worker w,
 * ARN_STATS_SLOT_CONTROL on the control lcore). Never blocks: a full ring
 * drops the line and counts it.
 */
void arn_access_log_write(struct arn_access_logger *l, unsigned slot,
			  const struct arn_access_record *r);

/**
 * Write what the rings hold to their files (control lcore). Returns the
 * bytes written. Called from the control loop; call it once more at exit.
 */
size_t arn_access_log_drain(void);

/** Reopen every file (POST /reopen_logs, log rotation). @return 0 or the first error. */
int arn_access_log_reopen(void);

#endif
