/*
 * Arion's TCP: the interface for the layers above (HTTP, TLS, the echo
 * filter). lib/net drives the stack through lib/net/arn_l4.h; this header is
 * what an application protocol uses.
 *
 * Threading: everything here runs on one worker lcore and touches only that
 * worker's state (share-nothing). A connection lives on the worker that
 * accepted or opened it for its whole life. Nothing blocks, nothing locks,
 * nothing allocates except mbufs from the worker's pool.
 *
 * Ownership and lifetime:
 *   - struct arn_tcp_conn is owned by the stack. A pointer to it is valid
 *     from on_accept / a successful arn_tcp_connect() until on_close()
 *     returns; after that it may be reused for another connection. Code that
 *     keeps a reference across modules or loop iterations keeps a handle
 *     (arn_tcp_handle(), VPP style: worker, generation, index) and resolves
 *     it with arn_tcp_lookup(), which answers NULL once the connection ended.
 *   - on_close() is called exactly once per connection that reached the
 *     application, always from arn_tcp_worker_poll() (never from inside an
 *     arn_tcp_* call the application made), and is the last callback.
 *   - Callbacks may call any function here on the same connection,
 *     including close and abort.
 *   - An mbuf the stack took (arn_tcp_write_mbuf, or a received segment
 *     from lib/net) is the stack's until it is acknowledged or, for a
 *     received one, consumed. Then it goes back to the pool, or, if it is
 *     one direct mbuf of the worker's pool that nothing else references
 *     (refcnt 1) and an ACK let it go (the send queue's, or the pure ACK
 *     itself), the worker may keep it to build its next segment in:
 *     at most 4 (tcp_int.h's TCP_STASH_MAX), all given back after the
 *     poll that had output to do, at the next millisecond's tick, and at
 *     arn_tcp_worker_fini(). So a count of the pool
 *     (rte_mempool_avail_count) may miss up to 4 free mbufs for up to a
 *     millisecond; lib/tcp's own pressure checks count them as free. An
 *     mbuf the caller still holds a reference to is never kept.
 */
#ifndef ARN_TCP_H
#define ARN_TCP_H

#include <stdbool.h>
#include <stdint.h>

#include "arn_l4.h"

struct rte_mbuf;
struct arn_lcore;
struct arn_tcp_conn;
struct arn_tcp_listener;
struct arn_bootstrap;

/** Congestion control algorithms. */
enum arn_tcp_cc {
	ARN_TCP_CC_DEFAULT = 0, /* the worker's: dataplane.tcp.congestion_control */
	ARN_TCP_CC_CUBIC,	/* RFC 9438, the default's default */
	ARN_TCP_CC_NEWRENO,	/* RFC 5681 + RFC 6582 */
	ARN_TCP_CC_BBR,		/* BBR v1 (draft-cardwell-iccrg-bbr-congestion-control), paced */
};

/**
 * What an application supplies per listener (and per active connection).
 * Every member may be NULL. @p c is the connection; its user data is
 * arn_tcp_user(c).
 */
struct arn_tcp_ops {
	/**
	 * A connection finished its handshake on a listener. Set user data
	 * (arn_tcp_set_user) and, if wanted, other ops (arn_tcp_set_ops).
	 * Return 0 to keep it, a negative errno to refuse it (the peer gets a
	 * RST, and on_close is NOT called).
	 */
	int (*on_accept)(struct arn_tcp_conn *c, void *listener_user);
	/** An active open finished: @p status 0 (established) or a negative
	 * errno (-ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH); after an error,
	 * on_close follows. */
	void (*on_connected)(struct arn_tcp_conn *c, int status);
	/**
	 * New in-order bytes arrived. @p head is the first mbuf of the
	 * connection's receive queue, holding @p len unconsumed bytes in total
	 * (not only the new ones), linked through m->next; every mbuf's
	 * rte_pktmbuf_mtod()/data_len is payload. The chain stays owned by the
	 * stack: consume with arn_tcp_rx_consume() / arn_tcp_read() /
	 * arn_tcp_rx_take(). Data left unconsumed keeps the window closed;
	 * on_data is called again only when more data arrives. Pointers into
	 * the chain are valid only until the callback returns: the stack may
	 * copy small segments into full mbufs afterwards, so that a peer's
	 * tiny segments cannot pin an mbuf each (tcp_rmem.c).
	 */
	void (*on_data)(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len);
	/** The peer sent FIN (after all its data was delivered). */
	void (*on_eof)(struct arn_tcp_conn *c);
	/** Send buffer space became available after a write fell short. */
	void (*on_writable)(struct arn_tcp_conn *c);
	/**
	 * The connection is gone for the application. @p reason: 0 (orderly
	 * close), -ECONNRESET (peer reset), -ETIMEDOUT (retransmission,
	 * keepalive or handshake timeout), -ECONNABORTED (arn_tcp_abort or the
	 * stack was stopped), -ECONNREFUSED / -EHOSTUNREACH (connect failed).
	 */
	void (*on_close)(struct arn_tcp_conn *c, int reason);
};

/** Listener options; zero-initialise and set what you need. */
struct arn_tcp_listen_opts {
	uint32_t backlog; /* SYN queue bound; 0: 1024. Beyond it: SYN cookies. */
	enum arn_tcp_cc cc;
	bool keepalive; /* probe idle accepted connections (7200 s / 75 s / 9) */
};

/* ---- per worker ----------------------------------------------------------- */

/**
 * Listen on @p addr:@p port (host byte order; addr 0 = every local address)
 * on the calling worker. Call it on every worker that should accept (RSS
 * spreads SYNs over all of them), typically from an arn_tcp_app init hook.
 * @p ops and @p user must outlive the listener.
 * @return the listener, or NULL: errno-style reason in *@p err (-EADDRINUSE,
 *   -ENOSPC listener table full, -EINVAL).
 */
struct arn_tcp_listener *arn_tcp_listen(struct arn_lcore *lc, uint32_t addr, uint16_t port,
					const struct arn_tcp_ops *ops, void *user,
					const struct arn_tcp_listen_opts *opts, int *err);

/** Stop listening: new SYNs get RST; connections already accepted go on. */
void arn_tcp_unlisten(struct arn_lcore *lc, struct arn_tcp_listener *l);

/**
 * Open a connection from @p laddr (one of our port addresses) to
 * @p raddr:@p rport (host byte order). The source port is chosen so that
 * the peer's replies hash to the calling worker (arn_net_flow_worker) and
 * the 4-tuple is unused. The SYN goes out at the next poll.
 * @return the connection (on_connected reports the outcome), or NULL with
 *   *@p err: -EADDRNOTAVAIL (no usable source port or laddr not local),
 *   -ENOBUFS (connection pool exhausted), -EINVAL.
 */
struct arn_tcp_conn *arn_tcp_connect(struct arn_lcore *lc, uint32_t laddr, uint32_t raddr,
				     uint16_t rport, const struct arn_tcp_ops *ops, void *user,
				     enum arn_tcp_cc cc, int *err);

/* ---- per connection --------------------------------------------------------- */

/*
 * The start of every struct arn_tcp_conn (tcp_int.h lays the stack's
 * fields out so, and checks it): what the layers above read several times
 * per request, inline below (arn_tcp_user, arn_tcp_rx_pending) rather than
 * by a call each. Written only by the stack; read only through those
 * accessors, under the ownership and lifetime rules above (valid as long
 * as the connection pointer is). may_alias: it is read over the stack's
 * own fields, whose types are not these.
 */
struct __attribute__((may_alias)) arn_tcp_conn_pub {
	void *user;	   /* arn_tcp_set_user's */
	uint32_t rx_bytes; /* received in order, unconsumed (the receive queue's) */
};

static inline const struct arn_tcp_conn_pub *arn_tcp_pub(const struct arn_tcp_conn *c)
{
	return (const struct arn_tcp_conn_pub *)(const void *)c;
}

static inline void *arn_tcp_user(const struct arn_tcp_conn *c)
{
	return arn_tcp_pub(c)->user;
}
void arn_tcp_set_user(struct arn_tcp_conn *c, void *user);
/** Replace the callbacks (@p ops must outlive the connection). */
void arn_tcp_set_ops(struct arn_tcp_conn *c, const struct arn_tcp_ops *ops);

/** Addresses and ports in host byte order. */
void arn_tcp_endpoints(const struct arn_tcp_conn *c, uint32_t *laddr, uint16_t *lport,
		       uint32_t *raddr, uint16_t *rport);

/**
 * Copy up to @p len bytes into the send buffer.
 * @return bytes accepted (may be fewer than @p len, even 0, when the send
 *   buffer is full: on_writable follows once space frees), or -EPIPE after
 *   shutdown/close, -ENOTCONN before the handshake completed or after the
 *   connection ended.
 */
int arn_tcp_write(struct arn_tcp_conn *c, const void *buf, uint32_t len);

/**
 * Queue an mbuf chain (zero copy into the send buffer; segments are built by
 * copying from it; small mbufs are copied into the queue's tail instead, so
 * that the queue stays bounded in mbufs as well as in bytes). On success the stack owns @p m. The
 * chain may exceed the remaining space by less than one chain (the limit is checked before, as
 * Linux does with sk_sndbuf); when the buffer is already full the call fails.
 * @return 0; -EAGAIN (buffer full; caller keeps @p m; on_writable follows),
 *   -EPIPE, -ENOTCONN as arn_tcp_write().
 */
int arn_tcp_write_mbuf(struct arn_tcp_conn *c, struct rte_mbuf *m);

/**
 * Queue @p len bytes at @p data, which lie within mbuf @p m's data (a
 * segment the caller took with arn_tcp_rx_take() from any connection of
 * this worker, direct or indirect), by reference: the send queue holds an
 * indirect mbuf attached to @p m's buffer until the bytes are acknowledged
 * (segments, retransmissions included, are still built from it), and no
 * byte is copied here. @p m stays the caller's: it may free it at once.
 *
 * A reference pins a whole mbuf of the pool (two, counting the indirect
 * one), so only slices of at least half the largest segment an mbuf
 * holds (seg_max / 2, about 950 bytes with 2 KiB mbufs) go by reference:
 * smaller ones, any while the worker's mbuf pool is under pressure (under
 * a quarter free: a reference costs about three times the pool per byte
 * that a copy does), and any when no mbuf is left for the reference, are
 * copied as arn_tcp_write() does. The send buffer's byte bound therefore
 * bounds the mbufs a slow reader can pin: at most
 * 2 * (sndbuf / (seg_max / 2) + 1) per connection (docs/security.md),
 * with sndbuf as autotuning has grown it (dataplane.tcp.sndbuf_max): what
 * it grows by is granted at that worst case, within the worker's bound
 * (lib/tcp's tcp_rmem.c).
 * @return @p len (all of it went, possibly past the buffer's end by less
 *   than @p len, as arn_tcp_write_mbuf()), or fewer/0 when the buffer was
 *   full (on_writable follows), or the errors of arn_tcp_write(), or
 *   -EINVAL when [@p data, @p data + @p len) is not within @p m's data.
 */
int arn_tcp_write_ref(struct arn_tcp_conn *c, struct rte_mbuf *m, const void *data, uint32_t len);

/** Free space in the send buffer, in bytes. The buffer may grow while the
 * application waits on it (send-buffer autotuning), so the space can be
 * more than dataplane.tcp.sndbuf allows. */
uint32_t arn_tcp_sndbuf_space(const struct arn_tcp_conn *c);

/** Ask for on_writable once send buffer space frees (for a caller that saw
 * arn_tcp_sndbuf_space() == 0 and did not try a write that fell short). */
void arn_tcp_want_writable(struct arn_tcp_conn *c);

/** Unconsumed received bytes. */
static inline uint32_t arn_tcp_rx_pending(const struct arn_tcp_conn *c)
{
	return arn_tcp_pub(c)->rx_bytes;
}

/** Drop @p n bytes (at most arn_tcp_rx_pending) from the receive queue,
 * which opens the window. */
void arn_tcp_rx_consume(struct arn_tcp_conn *c, uint32_t n);

/** Copy up to @p len bytes out of the receive queue and consume them.
 * @return bytes copied. */
uint32_t arn_tcp_read(struct arn_tcp_conn *c, void *buf, uint32_t len);

/**
 * Detach the first @p n bytes (at most arn_tcp_rx_pending; a whole number of
 * mbufs is cheapest) of the receive queue as an owned chain, consumed as far
 * as the window is concerned. Used to move data without copying (echo,
 * proxying). The returned chain's pkt_len/nb_segs are set.
 * @return the chain (caller owns it), or NULL (n == 0 or out of mbufs when a
 *   partial mbuf had to be split).
 */
struct rte_mbuf *arn_tcp_rx_take(struct arn_tcp_conn *c, uint32_t n);

/**
 * Send an ACK that is owed (delayed) for pushed data at once. For connections the
 * application opened: it knows when the peer waits for our ACK, e.g. a
 * response still incomplete from a server that holds its next small
 * segment behind Nagle's algorithm until the previous one is ACKed. (On
 * accepted connections the stack does this by itself when the application
 * has read a pushed segment, as Linux does.) No-op when no ACK is owed or
 * the data it would ACK was not pushed (a bulk transfer's middle).
 */
void arn_tcp_ack_now(struct arn_tcp_conn *c);

/** Send FIN after the queued data (half-close); receiving goes on. */
int arn_tcp_shutdown(struct arn_tcp_conn *c);

/**
 * Close: no more callbacks except on_close. Queued data is sent, then FIN.
 * If received data was left unread, the peer gets a RST instead (RFC 2525
 * 2.17) and on_close gets -ECONNABORTED.
 */
void arn_tcp_close(struct arn_tcp_conn *c);

/** Reset the connection now (RST to the peer). on_close follows with
 * -ECONNABORTED. */
void arn_tcp_abort(struct arn_tcp_conn *c);

/**
 * Close an idle connection that nobody will miss (an upstream connection
 * of an endpoint a configuration change removed): with a RST instead of a
 * FIN, so that neither side keeps TIME_WAIT, when that loses nothing and
 * cannot confuse a later connection of the same 4-tuple: established,
 * every byte sent acknowledged, nothing received unread, and timestamps
 * negotiated (our timestamp clock only grows across the tuple's
 * connections, so the peer's PAWS refuses a delayed segment of this one in
 * the next, as TIME_WAIT would have). Otherwise as arn_tcp_close(). On
 * RST, on_close follows with -ECONNABORTED. @return true if it was reset.
 */
bool arn_tcp_close_quiet(struct arn_tcp_conn *c);

/** Enable keepalive probes (seconds; 0 disables). */
void arn_tcp_set_keepalive(struct arn_tcp_conn *c, uint32_t idle_s, uint32_t intvl_s,
			   uint32_t count);

/* ---- handles across module boundaries --------------------------------------- */

/** A connection's handle: worker (8 bits), generation (24), index (32). */
uint64_t arn_tcp_handle(const struct arn_tcp_conn *c);
static inline unsigned arn_tcp_handle_worker(uint64_t h)
{
	return (unsigned)(h >> 56);
}
/** The live connection a handle names on this worker, or NULL (ended, or a
 * handle of another worker). */
struct arn_tcp_conn *arn_tcp_lookup(struct arn_lcore *lc, uint64_t h);

/* ---- application modules ------------------------------------------------------ */

/**
 * A module above TCP (echo, HTTP) that needs per-worker set-up: the stack
 * calls worker_init at the end of arn_tcp_worker_init on every worker (open
 * listeners there), worker_poll once per loop iteration and worker_fini at
 * shutdown. Register on the control lcore before workers start; @p app
 * must stay valid. At most 8 modules.
 * @return 0, -ENOSPC.
 */
struct arn_tcp_app {
	const char *name;
	int (*worker_init)(struct arn_lcore *lc, void *arg);
	void (*worker_poll)(struct arn_lcore *lc, void *arg);
	void (*worker_fini)(struct arn_lcore *lc, void *arg);
	void *arg;
};
int arn_tcp_app_register(const struct arn_tcp_app *app);

/*
 * The modules' states at the head of each TCP worker (the lcore's L4 state,
 * arn_l4.h): slot i is the i-th registered module's, filled by
 * arn_tcp_app_set_state. Declared here, in the interface, rather than in a
 * header beside tcp_worker.c (the tree's place for an inline front that
 * reads a .c's internals): this header would then include tcp_worker.c's,
 * and tcp_worker.c includes this one through tcp_int.h (a circle). The
 * search below reads the slots and calls nothing, so the interface depends
 * on no file of lib/tcp; lib/tcp only promises to keep the slots first.
 */
#define ARN_TCP_APPS_MAX 8
struct arn_tcp_app_slots {
	struct {
		const struct arn_tcp_app *app; /* NULL: no state set */
		void *state;
	} slot[ARN_TCP_APPS_MAX];
};

/**
 * A module's per-worker state, kept by the TCP worker of @p lc for it (set
 * in worker_init, read on the fast path): the way a module above TCP finds
 * its state without global arrays or thread-locals. Inline: the modules ask
 * for it on every loop iteration, and the first registered module's is
 * found in three loads and a compare.
 * arn_tcp_lcore() gives the lcore of a connection, for callbacks.
 * @return the state, or NULL (not set, or @p app not registered).
 */
static inline void *arn_tcp_app_state(struct arn_lcore *lc, const struct arn_tcp_app *app)
{
	const struct arn_tcp_app_slots *s = (const struct arn_tcp_app_slots *)arn_l4_state(lc);
	if (s == NULL || app == NULL)
		return NULL;
	for (unsigned i = 0; i < ARN_TCP_APPS_MAX; i++)
		if (s->slot[i].app == app)
			return s->slot[i].state;
	return NULL;
}
/**
 * The slot of @p app's state among the worker's (arn_tcp_app_slots), for a
 * module that asks for its state on every loop iteration: a slot is its
 * module's registration index, the same on every worker and for the
 * process's life, so a module finds it once (in worker_init, after
 * arn_tcp_app_set_state) and reads its state with arn_tcp_app_state_at().
 * @return the slot, or ARN_TCP_APPS_MAX (no state set for @p app).
 */
static inline unsigned arn_tcp_app_slot(struct arn_lcore *lc, const struct arn_tcp_app *app)
{
	const struct arn_tcp_app_slots *s = (const struct arn_tcp_app_slots *)arn_l4_state(lc);
	if (s == NULL || app == NULL)
		return ARN_TCP_APPS_MAX;
	unsigned i = 0;
	while (i < ARN_TCP_APPS_MAX && s->slot[i].app != app)
		i++;
	return i;
}
/** The state in slot @p slot (from arn_tcp_app_slot()) of @p lc's worker,
 * without the search; NULL for ARN_TCP_APPS_MAX or a slot with no state. */
static inline void *arn_tcp_app_state_at(struct arn_lcore *lc, unsigned slot)
{
	const struct arn_tcp_app_slots *s = (const struct arn_tcp_app_slots *)arn_l4_state(lc);
	return s != NULL && slot < ARN_TCP_APPS_MAX ? s->slot[slot].state : NULL;
}
/** Set it (on the worker, typically in worker_init); -ENOENT if @p app is
 * not registered. */
int arn_tcp_app_set_state(struct arn_lcore *lc, const struct arn_tcp_app *app, void *state);
/** The worker lcore that owns @p c. */
struct arn_lcore *arn_tcp_lcore(const struct arn_tcp_conn *c);

/* ---- lib/net's side: the L4 ops table -------------------------------------------- */

struct arn_dataplane;
/** What lib/net calls (arn_l4.h): register it with arn_net_set_l4() before
 * the data plane is created. Its members are the functions below. */
extern const struct arn_l4_ops arn_tcp_l4_ops;

/** One received segment (arn_l4_ops.input's contract, for one mbuf);
 * tests and benchmarks call it directly. */
void arn_tcp_input(struct arn_lcore *lc, struct rte_mbuf *m);
void arn_tcp_icmp_unreach(struct arn_lcore *lc, uint8_t code, uint16_t mtu, uint32_t src,
			  uint32_t dst, uint16_t sport, uint16_t dport, uint32_t seq);
/** The worker's TCP state from @p conf sizes (0 or a negative errno). */
int arn_tcp_worker_init(struct arn_lcore *lc, const struct arn_dataplane *conf);
void arn_tcp_worker_poll(struct arn_lcore *lc, uint64_t now_tsc);
void arn_tcp_worker_fini(struct arn_lcore *lc);

/* ---- statistics ----------------------------------------------------------------- */

enum arn_tcp_counter {
#define ARN_TCP_COUNTER(id, name, help) ARN_TCP_C_##id,
#include "arn_tcp_counters.def"
#undef ARN_TCP_COUNTER
	ARN_TCP_C_COUNT,
};

/** Counter name (Prometheus style, without prefix) and help text. */
const char *arn_tcp_counter_name(enum arn_tcp_counter id);
const char *arn_tcp_counter_help(enum arn_tcp_counter id);
/** True for gauges (active connections), false for monotonic counters. */
bool arn_tcp_counter_is_gauge(enum arn_tcp_counter id);

/**
 * Read worker @p worker's counters into @p out[ARN_TCP_C_COUNT] (any
 * thread; values are 64-bit loads, each one consistent, the set not
 * atomic).
 * @return 0, or -ENOENT if that worker has no TCP state.
 */
int arn_tcp_stats(unsigned worker, uint64_t *out);

/** Number of workers with TCP state (for iterating arn_tcp_stats). */
unsigned arn_tcp_stats_workers(void);

/* ---- Envoy's envoy.filters.network.echo --------------------------------------- */

/** Callbacks of the echo network filter (everything received is written
 * back; the connection closes after the peer's FIN once all is echoed). */
extern const struct arn_tcp_ops arn_tcp_echo_ops;

/**
 * The echo filter's work for a caller that keeps its own user data on @p c
 * (HTTP's worker, which tracks echo connections to drain them): move what
 * @p c received to its send queue, as much as there is room for; @p eof
 * (the peer's FIN came): close @p c once everything is echoed.
 */
void arn_tcp_echo_pump(struct arn_tcp_conn *c, bool eof);

#endif
