/*
 * Active health checks (Envoy's config.core.v3.HealthCheck, HTTP and TCP)
 * of the hosts of clusters that configure health_checks.
 *
 * Where they run: on worker 0 only, over its own lib/tcp stack and timer
 * wheel (the control lcore has no TCP stack). Each checked host has a
 * target here (worker 0's, allocated when a generation adds the host, in a
 * table that exists only while some cluster has checks: no malloc per
 * check), which
 * opens a connection (over TLS with the cluster's UpstreamTlsContext when
 * it has one, lib/tls directly: the handshake is bounded by the check's
 * timeout and a failed one is a network failure), sends the HTTP request
 * (or the TCP send bytes), reads a bounded response head (or the receive
 * blocks) and applies the result to the host's state machine. With
 * reuse_connection (Envoy's default) the connection stays for the host's
 * next check, as Envoy's: an HTTP check consumes the response's body
 * (bounded) first; the upstream's close, connection: close (or HTTP/1.0),
 * a body not delimited or over the bound, a timeout, a network failure, a
 * connect-only TCP check or a TCP check's failure close it, and the next
 * check opens a new one. Without it, each check has its own connection,
 * closed after the head (close_notify first over TLS). Why not
 * a pooled sub-request (http_subreq.h): a check must reach one given
 * host, not the balancer's pick; it must not count in the cluster's
 * request statistics and circuit breakers; and it must hold no more of a
 * hostile response than the status line and headers (a body it consumes
 * is counted and dropped).
 *
 * How results reach the workers: the host's health as the checks see it
 * is one byte of struct http_host (http_int.h, hc_flags), written by
 * worker 0 (and by the control lcore when it creates a host: a new host of
 * a checked cluster starts failed, as Envoy's do) and read by every worker
 * with a relaxed load, only in the balancer of a cluster that configures
 * health checks (http_lb_pick with in->hosts set).
 *
 * Lifetime: a target holds a reference to its host (http_host_ref) and a
 * pin on the cluster object whose first health check it runs. Worker 0
 * reconciles its targets with every new generation it sees
 * (http_hc_gen): hosts that stay keep their target and state, new ones get
 * one, the others' checks are stopped and their references dropped. A
 * connection that a target lets go has its user data cleared before it is
 * closed, so lib/tcp's later on_close finds no target.
 *
 * The pure parts (the state machine, intervals, status and payload
 * matching, the response head's verdict) are below for the unit tests.
 */
#ifndef ARN_HTTP_HC_H
#define ARN_HTTP_HC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arn_config_model.h"
#include "http_worker.h"

/* The outcome of one check, as Envoy's HealthCheckFailureType tells them
 * apart (they count differently). */
enum http_hc_result {
	HTTP_HC_SUCCESS = 0,
	HTTP_HC_FAIL_ACTIVE,	/* the host answered wrong: unhealthy at once */
	HTTP_HC_FAIL_NETWORK,	/* refused, reset, closed early: counts to the threshold */
	HTTP_HC_FAIL_TIMEOUT,	/* no verdict within timeout: counts to the threshold */
	HTTP_HC_FAIL_IMMEDIATE, /* x-envoy-immediate-health-check-fail: unhealthy at once */
};

/* One host's health check state machine (Envoy's ActiveHealthCheckSession). */
struct http_hc_sm {
	uint32_t n_ok, n_fail; /* consecutive successes while failed, failures while healthy */
	bool failed;	       /* FAILED_ACTIVE_HC */
	bool first;	       /* no check has completed yet */
	/* the last check, as Envoy's interval() takes it: did it fail (its
	 * HealthState), and did it count toward a change of health that did
	 * not happen yet (HealthTransition::ChangePending) */
	bool last_failed;
	bool pending;
};

/** A new host's state: failed until its first check passes (Envoy's
 * default for a host added to a checked cluster). */
void http_hc_sm_init(struct http_hc_sm *s, bool failed);

/**
 * Apply the result @p r of one check under @p c: a success clears the
 * failure after healthy_threshold consecutive ones (at once for the first
 * check a host ever completes, as Envoy); an active or immediate failure
 * fails the host at once; a network failure or a timeout after
 * unhealthy_threshold consecutive ones.
 * @return true when the host's health changed.
 */
bool http_hc_sm_apply(const struct arn_cfg_health_check *c, struct http_hc_sm *s,
		      enum http_hc_result r);

/**
 * The time to the next check, ms, as Envoy's HealthCheckerImplBase::
 * interval(): after a failed check unhealthy_interval, after a passed one
 * interval (a check that counted toward a change still pending: the
 * unhealthy or healthy edge interval, which default to them), or
 * no_traffic_interval when @p traffic is false (the cluster has opened no
 * connection yet), plus a jitter in [0, interval_jitter_percent % of it)
 * and one in [0, interval_jitter), both taken from @p rand. At least 1.
 */
uint64_t http_hc_next_ms(const struct arn_cfg_health_check *c, const struct http_hc_sm *s,
			 bool traffic, uint64_t rand);

/** The time to a new target's first check, ms: at once (1), or within
 * initial_jitter ([1, initial_jitter]) taken from @p rand, as Envoy's
 * onInitialInterval(). */
uint64_t http_hc_first_ms(const struct arn_cfg_health_check *c, uint64_t rand);

/** Is @p status in expected_statuses (default [200, 201))? */
bool http_hc_status_ok(const struct arn_cfg_health_check *c, unsigned status);

/**
 * Envoy's TCP receive matching: do the receive blocks of @p c appear in
 * @p buf in order (each after the end of the previous one)? True when
 * there is none.
 */
bool http_hc_tcp_match(const struct arn_cfg_health_check *c, const uint8_t *buf, size_t len);

/* How the body after a response head ends (for a connection that carries
 * the next check: reuse_connection). */
enum http_hc_framing {
	HTTP_HC_BODY_NONE = 0, /* no body (1xx, 204, 304, content-length 0) */
	HTTP_HC_BODY_LENGTH,   /* content-length bytes */
	HTTP_HC_BODY_CHUNKED,  /* chunked coding, trailers included */
	HTTP_HC_BODY_CLOSE,    /* until the upstream closes: not delimited */
};

/* What an HTTP check's response head says. */
struct http_hc_verdict {
	enum http_hc_result r;
	unsigned status;
	/* with a final head (else 0): its bytes, interim 1xx heads included,
	 * how its body ends, and whether the connection may carry another
	 * request (Envoy's HeaderUtility::shouldCloseConnection says no for
	 * an HTTP/1.0 response without keep-alive, connection: close, or
	 * proxy-connection: close) */
	uint32_t head_len;
	uint8_t framing; /* enum http_hc_framing */
	bool keep;
	uint64_t content_length;
};

/* A response body being consumed (http_hc_body_eat): only its framing is
 * read; the bytes are dropped. */
struct http_hc_body {
	uint8_t framing; /* enum http_hc_framing */
	uint8_t st;	 /* chunked: where in the coding */
	bool digits;	 /* chunked: a chunk-size digit seen */
	uint64_t left;	 /* bytes of the body (length) or of the chunk left */
};

/** Start consuming the body a head of @p framing (@p content_length) announced. */
void http_hc_body_init(struct http_hc_body *b, enum http_hc_framing framing,
		       uint64_t content_length);

/**
 * Consume the next @p len bytes @p p of the body @p b: *@p used of them
 * belong to it (all of them unless it ended within them).
 * @return 1 (the body ended: the bytes after *@p used are not its), 0 (it
 *   goes on), or -EBADMSG (a chunked coding that is not one; an
 *   HTTP_HC_BODY_CLOSE body never ends here).
 */
int http_hc_body_eat(struct http_hc_body *b, const char *p, size_t len, size_t *used);

/**
 * The verdict of the response bytes @p buf (@p len, from the first) of an
 * HTTP check under @p c. Only the status line and headers are read, and
 * of them only the first HTTP_HC_RX_MAX bytes (interim 1xx heads included).
 * @return 1 (a complete head: *@p v set), 0 (incomplete: read more), or
 *   -EBADMSG (not an HTTP/1 response, or no final head within
 *   HTTP_HC_RX_MAX bytes: an active failure, *@p v set).
 */
int http_hc_http_verdict(const struct arn_cfg_health_check *c, const char *buf, size_t len,
			 struct http_hc_verdict *v);

/**
 * What the bytes @p rx read for a check under @p c say: @p len of them so
 * far, the first @p was of them judged before (an HTTP head is parsed again
 * only when a line ended since). At most HTTP_HC_RX_MAX of them are read;
 * that many without a verdict is an active failure (a head over the bound,
 * or TCP receive blocks that did not come). However the bytes are split
 * into calls, a verdict once given is the one the whole gives.
 * @return 1 (a verdict: *@p r set) or 0 (read more).
 */
int http_hc_judge(const struct arn_cfg_health_check *c, const char *rx, size_t was, size_t len,
		  enum http_hc_result *r);
/** http_hc_judge, with what an HTTP check's final head says of its body
 * and connection in *@p v (TCP: only v->r). */
int http_hc_judge_v(const struct arn_cfg_health_check *c, const char *rx, size_t was, size_t len,
		    struct http_hc_verdict *v);

/**
 * HTTP check @p c's request for @p path and @p host into @p out (@p cap):
 * Envoy's GET with host and user-agent Envoy/HC, then c's
 * request_headers_to_remove and _to_add applied as Envoy's header parser
 * applies them (@p c NULL: none), then connection: close unless c reuses
 * its connection (reuse_connection). @return its length, or -ENOSPC.
 */
int http_hc_http_request(const struct arn_cfg_health_check *c, const char *path, const char *host,
			 char *out, size_t cap);

/* ---- worker 0 ----------------------------------------------------------------- */

/* Hosts worker 0 checks, at most (each a target of about 4.7 KB, the
 * response buffer included, allocated as a generation adds it): hosts
 * beyond are not checked (logged, counted in
 * cluster.<c>.health_check.unchecked) and count as healthy for active
 * checks. */
#define HTTP_HC_MAX_TARGETS 8192
/* A response head (or TCP receive data) read for a check, at most. */
#define HTTP_HC_RX_MAX 4096
/* A response body (its chunked framing included) a check consumes to
 * keep its connection (reuse_connection), at most: past it (or past the
 * check's timeout) the connection is closed, counted in
 * cluster.<c>.health_check.body_over_limit; the head's verdict stands. */
#define HTTP_HC_BODY_MAX 65536

/** Allocate worker @p w's checker (worker 0 only; others: nothing): a
 * few words; the targets' table waits for a generation with checks.
 * @return 0, -ENOMEM. */
int http_hc_worker_init(struct http_worker *w);
/** Follow generation @p g: start, keep or stop the targets. Worker 0. */
void http_hc_gen(struct http_worker *w, const struct arn_cfg_gen *g);
/** Stop every check and free the checker (worker stop). */
void http_hc_worker_fini(struct http_worker *w);
/** Targets worker 0 has (tests). */
size_t http_hc_targets(const struct http_worker *w);
struct http_host;
/** Where worker @p w checks host @p h (tests): the port its checks
 * connect to and the Host an HTTP check sends. @return 0, or -ENOENT (not
 * checked). */
int http_hc_target_peer(const struct http_worker *w, const struct http_host *h, uint16_t *port,
			const char **host);
/** Bytes worker @p w's checker holds (tests): a few words while no
 * cluster has checks, then its table and targets. */
size_t http_hc_mem(const struct http_worker *w);

#endif
