/*
 * The delta-ADS client: one DeltaAggregatedResources stream to the control
 * plane (spec/RULES.md X1-X18, G1-G10, D1-D10).
 *
 * Everything here runs on the control lcore. The client owns its stream,
 * its subscriptions and their versions; what it accepts goes to a *sink*
 * (struct arn_xds_sink_ops: in arion, lib/config), which converts and applies
 * one batch of one type at a time and later says when the configuration it
 * published has reached every worker (X17).
 *
 * The network side is a *transport* (struct arn_xds_transport_ops). The real
 * one, arn_xds_grpc_transport(), drives gRPC's C core completion queue from
 * arn_xds_client_poll(); unit tests pass a fake one and a fake clock.
 *
 * Ownership: the client copies every string and option it is given; the
 * sink's and transport's contexts are borrowed and must outlive the client.
 */
#ifndef ARN_XDS_H
#define ARN_XDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upb/def.h"
#include "upb/msg.h"

#include "arn_envoy_types.h"
#include "arn_sb.h"

struct arn_bootstrap;
struct arn_xds_client;

/* The five Envoy types subscribed as wildcards on connect, in X3's order. */
#define ARN_XDS_TYPE_SECRET ARN_TYPE_URL_SECRET
#define ARN_XDS_TYPE_CLUSTER ARN_TYPE_URL_CLUSTER
#define ARN_XDS_TYPE_CLA ARN_TYPE_URL_CLA
#define ARN_XDS_TYPE_LISTENER ARN_TYPE_URL_LISTENER
#define ARN_XDS_TYPE_ROUTE ARN_TYPE_URL_ROUTE

/* Defaults of the contract (arion-xds.txt). */
#define ARN_XDS_MAX_RECV_BYTES (10u << 20) /* X6 */
#define ARN_XDS_ACK_TIMEOUT_MS 20000u	   /* X17 */
#define ARN_XDS_BACKOFF_BASE_MS 1000u	   /* X18 */
#define ARN_XDS_BACKOFF_MAX_MS 20000u	   /* X18 */
#define ARN_XDS_FAILOVER_MS 10000u	   /* X9 */
#define ARN_XDS_ERROR_DETAIL_MAX 4096u	   /* D9: longer texts are cut, never dropped */

/* ------------------------------------------------------------------------ */
/* The sink: where accepted resources go.                                    */

/** One resource of a batch. Everything is valid during the apply call only. */
struct arn_xds_resource {
	const char *name;    /* Resource.name, NUL-terminated */
	const char *version; /* Resource.version, NUL-terminated */
	const char *bytes;   /* the Any's value: the serialized resource */
	size_t len;
	/* @p bytes decoded as the batch's type (lib/proto pool); NULL when the
	 * sink decodes them itself (arn_xds_sink_ops.decodes) */
	const upb_Message *msg;
};

/** One response's worth of one type (X15: one response carries one type). */
struct arn_xds_batch {
	const char *type_url;
	const upb_MessageDef *def;	      /* the type's definition */
	const char *system_version;	      /* DeltaDiscoveryResponse.system_version_info */
	const struct arn_xds_resource *added; /* added or updated */
	size_t n_added;
	const char *const *removed; /* removed_resources (G3) */
	size_t n_removed;
};

/** Per-resource reasons, collected while a batch is converted or applied. */
struct arn_xds_errors;

/**
 * Report that resource @p name failed, and why (printf-style). The reason
 * should name the field and the rule, as operators read it in the NACK
 * ("'name': reason", or the reason alone when it quotes 'name' already).
 * After a partial failure (X16) the client commits every resource of the
 * batch that no report names (D5): name each failed resource.
 */
void arn_xds_errors_add(struct arn_xds_errors *e, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** Number of reasons reported so far. */
size_t arn_xds_errors_count(const struct arn_xds_errors *e);

/** Called once per (type URL, name) that configuration references (X4). */
typedef void (*arn_xds_interest_fn)(void *arg, const char *type_url, const char *name);

struct arn_xds_sink_ops {
	/**
	 * Convert, then apply one batch.
	 *
	 * Conversion of every resource comes first. If any resource fails it
	 * (report each through @p errs), return -EINVAL having applied
	 * nothing: the client NACKs the whole response (X15).
	 *
	 * Otherwise apply the changes one by one; a resource whose application
	 * fails is reported through @p errs, under its name, while the others
	 * stay applied (X16), and 0 is returned. The client then commits every
	 * resource not reported, update or removal: from now on it reports
	 * holding exactly those (D5, initial_resource_versions). *@p token
	 * receives a value that acknowledged() will be asked about (X17); 0
	 * means "in force already".
	 *
	 * Any other negative errno: an internal failure with nothing applied;
	 * the client NACKs the response with that reason (and the reasons in
	 * @p errs) and commits nothing.
	 */
	int (*apply)(void *ctx, const struct arn_xds_batch *b, struct arn_xds_errors *errs,
		     uint64_t *token);
	/** Has what apply() returned @p token for reached every worker? (X17) */
	bool (*acknowledged)(void *ctx, uint64_t token);
	/**
	 * Enumerate every name of an on-demand type (anything but the five
	 * wildcard types) that configuration references now, through @p fn
	 * (X4). NULL: no on-demand types.
	 */
	void (*interest)(void *ctx, arn_xds_interest_fn fn, void *arg);
	/**
	 * The first response of @p type_url since start was processed
	 * (@p accepted: ACKed). For initial-fetch and readiness. May be NULL.
	 */
	void (*first_response)(void *ctx, const char *type_url, bool accepted);
	/**
	 * true: apply() decodes each resource's bytes itself and refuses what
	 * does not decode (X15), so the client does not decode them first
	 * (a 10,000-route RouteConfiguration decoded twice cost as much as
	 * applying it; issue 17) and arn_xds_resource.msg is NULL.
	 */
	bool decodes;
};

/* ------------------------------------------------------------------------ */
/* TLS to the control plane (the xDS cluster's UpstreamTlsContext).          */

/** Which subject alternative names a matcher looks at (Envoy's SanType values). */
enum arn_xds_san_type {
	ARN_XDS_SAN_ANY = 0, /* match_subject_alt_names: DNS, URI, email and IP alike */
	ARN_XDS_SAN_EMAIL = 1,
	ARN_XDS_SAN_DNS = 2,
	ARN_XDS_SAN_URI = 3,
	ARN_XDS_SAN_IP = 4,
};

/** How a matcher compares (Envoy's StringMatcher, less safe_regex). */
enum arn_xds_match {
	ARN_XDS_MATCH_EXACT = 0,
	ARN_XDS_MATCH_PREFIX,
	ARN_XDS_MATCH_SUFFIX,
	ARN_XDS_MATCH_CONTAINS,
};

struct arn_xds_san_matcher {
	enum arn_xds_san_type type;
	enum arn_xds_match how;
	const char *value;
	bool ignore_case;
};

/**
 * The channel's TLS: the server's chain is verified against @p ca_pem, then
 * at least one SAN of the server's certificate must satisfy one of @p san
 * (none: any certificate the CA signed). No host name check beyond that, as
 * in Envoy.
 */
struct arn_xds_tls {
	const char *ca_pem;   /* trusted CA certificates, PEM; required */
	const char *cert_pem; /* client certificate chain, PEM; NULL: none (no mTLS) */
	const char *key_pem;  /* its private key, PEM (NULL with cert_pem) */
	const char *sni;      /* server name sent; NULL: none */
	const struct arn_xds_san_matcher *san;
	size_t n_san;
};

/** The subject alternative names of a peer certificate, by type. */
struct arn_xds_peer_sans {
	const char *const *dns;
	size_t n_dns;
	const char *const *uri;
	size_t n_uri;
	const char *const *email;
	size_t n_email;
	const char *const *ip;
	size_t n_ip;
};

/**
 * Envoy's SAN check: does any matcher of @p tls match any SAN of its type
 * in @p peer? A DNS SAN like "*.example.com" matches an exact matcher for
 * one label under it; DNS names compare without case. True when @p tls has
 * no matchers.
 */
bool arn_xds_tls_san_ok(const struct arn_xds_tls *tls, const struct arn_xds_peer_sans *peer);

/* ------------------------------------------------------------------------ */
/* The transport: one bidirectional stream at a time.                        */

struct arn_xds_transport_ops {
	/** Tell the transport which client its events go to (called once, by arn_xds_client_new).
	 */
	void (*attach)(void *t, struct arn_xds_client *c);
	/**
	 * Open a new DeltaAggregatedResources stream to @p host : @p port
	 * (any previous stream was closed first), over TLS as @p tls says, or
	 * in plaintext when @p tls is NULL. @p tls is borrowed for the call.
	 * Events then come through the arn_xds_transport_*() functions below,
	 * from inside poll().
	 * @return 0, or a negative errno (the client treats it as a failed
	 *   connection attempt).
	 */
	int (*open)(void *t, const char *host, uint16_t port, const struct arn_xds_tls *tls);
	/** Can send() take a message now? (one message in flight at a time) */
	bool (*writable)(void *t);
	/** Queue one serialized DeltaDiscoveryRequest. @return 0 or -errno. */
	int (*send)(void *t, const char *buf, size_t len);
	/** Cancel the current stream, if any. No event follows for it. */
	void (*close)(void *t);
	/** Wait up to @p max_wait_ms for events and deliver them. */
	void (*poll)(void *t, int max_wait_ms);
	/** Free the transport (the stream is closed first). */
	void (*destroy)(void *t);
};

/* Events, called by a transport from inside its poll(). */

/** The stream's connection is up (HTTP/2 connected or headers received). */
void arn_xds_transport_connected(struct arn_xds_client *c);
/** One DeltaDiscoveryResponse (serialized); @p buf is borrowed. */
void arn_xds_transport_message(struct arn_xds_client *c, const char *buf, size_t len);
/** A send() finished: writable() may be true again. */
void arn_xds_transport_writable(struct arn_xds_client *c);
/** The stream ended with gRPC status @p code and @p details. */
void arn_xds_transport_closed(struct arn_xds_client *c, int code, const char *details);

/**
 * The gRPC C core transport: a channel per connection attempt with a 10 MiB
 * receive limit (X6), no gRPC-level retries; TLS credentials (gRPC's
 * grpc_tls_credentials_options) when open() is given TLS. Create it on the control lcore
 * after EAL init so that gRPC's threads inherit its affinity.
 * @return the transport's context for arn_xds_grpc_transport_ops, or NULL.
 */
void *arn_xds_grpc_transport_new(void);
extern const struct arn_xds_transport_ops arn_xds_grpc_transport_ops;

/* ------------------------------------------------------------------------ */
/* The client.                                                               */

/** One cluster of ads_config.grpc_services (X9), with its endpoints. */
struct arn_xds_server {
	const char *cluster;
	const char *const *hosts; /* IP literals */
	const uint16_t *ports;
	size_t n_endpoints;
	const struct arn_xds_tls *tls; /* NULL: plaintext */
};

struct arn_xds_options {
	const char *node_id;
	const char *node_cluster;
	/* The bootstrap's node (serialized envoy.config.core.v3.Node), sent with
	 * id and cluster above; NULL/0: only id and cluster. */
	const char *node_pb;
	size_t node_pb_len;
	/* ads_config.set_node_on_first_message_only: node only in the first
	 * request of a stream (Envoy's default, false: in every request). */
	bool node_first_only;
	const struct arn_xds_server *servers; /* in grpc_services order */
	size_t n_servers;

	const struct arn_xds_sink_ops *sink;
	void *sink_ctx;
	const struct arn_xds_transport_ops *transport;
	void *transport_ctx; /* borrowed; the client calls destroy() when freed */

	/* Timers (0: the contract's default). Tests shorten ack_timeout_ms. */
	uint32_t ack_timeout_ms;
	uint32_t backoff_base_ms;
	uint32_t backoff_max_ms;
	uint32_t failover_ms;
	/* Clock in milliseconds (NULL: CLOCK_MONOTONIC) and a random source for
	 * backoff jitter (NULL: getrandom(), so that processes differ); both
	 * injectable for tests. */
	uint64_t (*now_ms)(void *ctx);
	uint32_t (*rand)(void *ctx);
	void *clock_ctx;
};

/**
 * Fill @p o's node and server fields from a loaded bootstrap (node, node id
 * and cluster after overrides, ads_config.set_node_on_first_message_only,
 * and each grpc_services cluster's endpoints from its static
 * load_assignment and TLS from its transport_socket, whose secrets are read
 * from static_resources.secrets: files, environment variables or inline).
 * The bootstrap was checked when loaded (lib/bootstrap refuses what the
 * channel cannot do). Strings point into @p b or into heap storage owned by
 * @p holder (key material is wiped when freed); free with
 * arn_xds_options_release(@p holder).
 * @return 0, -EINVAL (no ads_config, an xDS cluster without endpoints, TLS
 *   material that cannot be read; logged with the field), -ENOMEM.
 */
struct arn_xds_options_holder;
int arn_xds_options_from_bootstrap(const struct arn_bootstrap *b, struct arn_xds_options *o,
				   struct arn_xds_options_holder **holder);
void arn_xds_options_release(struct arn_xds_options_holder *holder);

/**
 * Create a client; it connects on the first arn_xds_client_poll().
 * @return the client (free with arn_xds_client_free), or NULL (logged).
 */
struct arn_xds_client *arn_xds_client_new(const struct arn_xds_options *o);
void arn_xds_client_free(struct arn_xds_client *c);

/**
 * Do what is due: connect or reconnect, send requests, poll the transport
 * for up to @p max_wait_ms, handle responses, check acknowledgements and
 * timeouts. Call it repeatedly on the control lcore.
 */
void arn_xds_client_poll(struct arn_xds_client *c, int max_wait_ms);

/** Configuration references changed: query the sink's interest() again (X4). */
void arn_xds_client_interest_changed(struct arn_xds_client *c);

/* ------------------------------------------------------------------------ */
/* State for operators (G8): the admin endpoint shows it.                    */

enum arn_xds_conn_state {
	ARN_XDS_IDLE = 0,   /* not started yet */
	ARN_XDS_CONNECTING, /* stream opened, connection not up yet */
	ARN_XDS_CONNECTED,  /* connection up */
	ARN_XDS_BACKOFF,    /* waiting to retry (X18) */
};

const char *arn_xds_conn_state_name(enum arn_xds_conn_state s);

struct arn_xds_status {
	enum arn_xds_conn_state state;
	const char *cluster; /* current grpc_services cluster */
	const char *host;    /* current endpoint */
	uint16_t port;
	const char *channel;	  /* "plaintext", "TLS" or "mTLS" (client certificate) */
	uint64_t since_ms;	  /* when state last changed (client clock) */
	uint64_t next_attempt_ms; /* in BACKOFF: when the next attempt is due */
	uint32_t attempts;	  /* connection attempts since start */
	uint32_t failures_in_row; /* stream failures since the last response */
	uint32_t failures;	  /* stream failures since start */
	const char *last_error;	  /* last stream failure ("" if none) */
};

struct arn_xds_type_status {
	const char *type_url;
	bool wildcard;
	size_t n_subscribed;	/* explicit names (on-demand types) */
	size_t n_held;		/* resources with a version */
	const char *last_nonce; /* last response nonce on this stream ("" if none) */
	const char *last_acked_nonce;
	const char *system_version; /* of the last ACKed response */
	uint64_t last_ack_ms;	    /* 0: never */
	uint64_t last_nack_ms;
	uint32_t n_responses; /* responses received (update attempts) */
	uint32_t n_acks, n_nacks;
	uint32_t n_empty;	/* responses with neither resources nor removals */
	const char *last_error; /* last NACK's error_detail ("" if none) */
	size_t pending_acks;	/* responses waiting for X17 acknowledgement */
	/* Resource TTLs: resources held with one running; expiries applied
	 * (each is one update, as in Envoy, which counts it in update_attempt
	 * and update_success and sets the version to an empty one); resources
	 * they removed; when the last one was (client clock, 0: never). */
	size_t n_ttl;
	uint32_t n_ttl_updates;
	uint32_t n_ttl_expired;
	uint64_t last_ttl_update_ms;
};

/** Connection state. Pointers are valid until the next poll. */
void arn_xds_client_status(const struct arn_xds_client *c, struct arn_xds_status *st);

/** Number of types the client knows (the five wildcard ones first). */
size_t arn_xds_client_n_types(const struct arn_xds_client *c);

/** Type @p i's state. Pointers are valid until the next poll. @return 0 or -ENOENT. */
int arn_xds_client_type_status(const struct arn_xds_client *c, size_t i,
			       struct arn_xds_type_status *ts);

/**
 * Call @p fn for every name tracked for type @p i, sorted: @p version is
 * NULL for a name subscribed but not (or no longer) held; @p subscribed says
 * whether it is an explicit subscription. @return 0 or -ENOENT.
 */
int arn_xds_client_type_resources(const struct arn_xds_client *c, size_t i,
				  void (*fn)(void *arg, const char *name, const char *version,
					     bool subscribed),
				  void *arg);

/** Append the whole state as one JSON object (for /config_dump and /xds). */
void arn_xds_client_state_json(const struct arn_xds_client *c, struct arn_sb *out);

/* ------------------------------------------------------------------------ */
/* Helpers shared with the fuzz target and tests.                            */

/**
 * Truncate @p msg for google.rpc.Status.message: at most @p max bytes,
 * ending in "...(truncated)" when cut (D9). Appends to @p out.
 */
void arn_xds_truncate_error(const char *msg, size_t max, struct arn_sb *out);

#endif
