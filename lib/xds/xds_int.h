/*
 * The client's internals, shared by xds_client.c (stream, timers, requests),
 * xds_response.c (decoding and checking a response) and xds_state.c (what
 * operators see). Control lcore only.
 */
#ifndef ARN_XDS_INT_H
#define ARN_XDS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "upb/upb.h"

#include "arn_xds.h"
#include "xds_map.h"

/* google.rpc.Code values used in error_detail. */
#define XDS_CODE_INVALID_ARGUMENT 3
#define XDS_CODE_DEADLINE_EXCEEDED 4
#define XDS_CODE_INTERNAL 13

struct arn_xds_errors {
	struct {
		char *name;
		char *reason;
	} * v;
	size_t n, cap;
};

void xds_errors_free(struct arn_xds_errors *e);
/** "'a': reason; 'b': reason" */
void xds_errors_format(const struct arn_xds_errors *e, struct arn_sb *out);

/* One response waiting to be answered, in arrival order per type. */
/* How long after an apply the client polls without waiting for workers to
 * acknowledge it (X17), before it falls back to 1 ms waits. */
#define XDS_ACK_SPIN_MS 10

struct xds_pending {
	struct xds_pending *next;
	char *nonce;
	char *system_version;
	char *error;	/* NULL: ACK (once acknowledged); else NACK with this text */
	int code;	/* google.rpc.Code for a NACK */
	bool has_token; /* wait for sink->acknowledged(token) (X17) */
	uint64_t token;
	uint64_t applied_ms; /* when the sink applied it */
	/* For the ACK's debug line (issue 17): monotonic microseconds when
	 * the response arrived, and how long decoding and the sink took. */
	uint64_t t_in_us, decode_us, apply_us;
	uint64_t deadline_ms;
	/* What the response changed, for the ACK's log line; the versions
	 * themselves were committed when the sink applied them (D5). */
	size_t n_add;
	size_t n_rm;
	size_t n_hb; /* heartbeats (TTL refreshes only) */
};

struct xds_type {
	char *type_url;
	const char *short_name; /* after the last '.', for logs */
	const upb_MessageDef *def;
	bool wildcard;
	/* wildcard: every resource held (name -> version).
	 * on-demand: every subscribed name (version NULL until received, or
	 * after removal). D6 follows from this: only names with a version go
	 * into initial_resource_versions. */
	struct xds_map names;
	struct xds_map added, removed; /* interest changes not sent yet (D8) */
	struct xds_map wanted;	       /* scratch for interest refresh */
	bool sent_on_stream;	       /* D7: first request of a stream resends all */
	struct xds_pending *q_head, *q_tail;
	size_t q_len;

	/* for operators (G8) */
	char *last_nonce;
	char *last_acked_nonce;
	char *system_version;
	char *last_error;
	uint64_t last_ack_ms, last_nack_ms;
	uint64_t last_ack_wall_ms, last_nack_wall_ms;
	uint32_t n_responses, n_acks, n_nacks;
	uint32_t n_empty; /* responses with neither resources nor removals */
	bool first_done;

	/* Resource TTLs (xds_ttl.c): no deadline in names is earlier than
	 * ttl_next_ms (a lower bound; 0: none set). */
	uint64_t ttl_next_ms;
	uint32_t n_ttl_updates;	     /* expiries applied, one update each */
	uint32_t n_ttl_expired;	     /* resources they removed */
	uint64_t last_ttl_update_ms; /* 0: never */
};

struct xds_server {
	char *cluster;
	char **hosts;
	uint16_t *ports;
	size_t n;
	struct arn_xds_tls *tls; /* NULL: plaintext (xds_tls_dup'd) */
	size_t rr;		 /* next endpoint (round-robin, X9) */
};

struct arn_xds_client {
	/* identity */
	upb_Arena *arena; /* node */
	struct envoy_config_core_v3_Node *node;
	bool node_first_only;
	bool node_sent_on_stream;

	struct xds_server *servers;
	size_t n_servers;

	const struct arn_xds_sink_ops *sink;
	void *sink_ctx;
	const struct arn_xds_transport_ops *tr;
	void *tr_ctx;

	uint32_t ack_timeout_ms, backoff_base_ms, backoff_max_ms, failover_ms;
	uint64_t (*now_ms)(void *);
	uint32_t (*rand)(void *);
	void *clock_ctx;

	struct xds_type **types;
	size_t n_types;

	/* connection */
	enum arn_xds_conn_state state;
	uint64_t since_ms;
	uint64_t next_attempt_ms;
	uint64_t connect_deadline_ms;
	uint64_t window_start_ms; /* X9: trying the current cluster since */
	size_t cur;		  /* current server */
	size_t cur_ep;
	uint32_t backoff_k;
	uint32_t attempts;
	uint32_t failures_in_row;
	uint32_t failures;
	bool got_message; /* on the current stream */
	bool connected;	  /* the current stream's connection came up */
	bool stream_open;
	char *last_error;

	bool interest_dirty;
	bool in_flush;
};

uint64_t xds_now(const struct arn_xds_client *c);
uint64_t xds_wall_ms(void);
/** Monotonic microseconds, for the stage times of the debug log. */
uint64_t xds_mono_us(void);
struct xds_type *xds_type_find(const struct arn_xds_client *c, const char *type_url, size_t len);

/** Handle one serialized DeltaDiscoveryResponse (xds_response.c). */
void xds_handle_response(struct arn_xds_client *c, const char *buf, size_t len);

/** Queue @p p as the next answer for @p t (xds_client.c). */
void xds_enqueue(struct xds_type *t, struct xds_pending *p);
void xds_pending_free(struct xds_pending *p);

/* ---- xds_ttl.c ---- */

struct google_protobuf_Duration;
/** Resource.ttl in ms. @return 0, or -1 for a negative or out-of-range duration. */
int xds_ttl_ms(const struct google_protobuf_Duration *d, uint64_t *ms);
/** Set (or, with 0, clear) @p e's TTL deadline in @p t (client clock). */
void xds_ttl_set(struct xds_type *t, struct xds_ent *e, uint64_t deadline_ms);
/** The earliest TTL deadline of any type (a lower bound); 0: none. */
uint64_t xds_ttl_next(const struct arn_xds_client *c);
/** Remove, through the sink, every resource whose TTL passed by @p now. */
void xds_ttl_expire(struct arn_xds_client *c, uint64_t now);

/* ---- xds_tls.c ---- */

/** A deep copy of @p in (NULL for NULL, or on ENOMEM); free with xds_tls_free. */
struct arn_xds_tls *xds_tls_dup(const struct arn_xds_tls *in);
/** Free a copy, wiping the key material and the certificates first. */
void xds_tls_free(struct arn_xds_tls *t);
/** "plaintext", "TLS" (server verified) or "mTLS" (and a client certificate). */
const char *xds_tls_kind(const struct arn_xds_tls *t);
/** "the control plane's certificate (SANs: ...) matches none of ..." into @p o. */
void xds_tls_san_mismatch(const struct arn_xds_tls *tls, const struct arn_xds_peer_sans *p,
			  struct arn_sb *o);

#endif
