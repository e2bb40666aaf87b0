/*
 * lib/tcp private types. Layering follows mTCP / VPP: tcp_in.c (receive
 * path and state machine), tcp_out.c (segment construction and the send
 * decision), tcp_timer.c (the per-worker wheel), tcp_sack.c (scoreboard,
 * out-of-order queue, SACK blocks to send), tcp_cc.c (NewReno and CUBIC),
 * tcp_conn.c (pool, flow table, listeners, lifecycle), tcp_api.c (what
 * arn_tcp.h promises), tcp_cookie.c (ISNs and SYN cookies), tcp_rack.c
 * (RACK-TLP loss detection, DSACK, undo), tcp_cksum.h (receive checksum).
 *
 * Layers, each calling only those below it (docs/architecture.md):
 *   tcp_echo.c, tcp_api.c, tcp_worker.c    what arn_tcp.h and arn_l4.h promise
 *   tcp_in.c                               the receive path, state machine
 *   tcp_timeout.c                          what a passed deadline does
 *   tcp_out.c                              segments, the send decision
 *   tcp_rack.c                             loss detection, pipe, undo
 *   tcp_sack.c                             scoreboard, out-of-order queue
 *   tcp_rmem.c                             receive memory, the receive window,
 *                                          send-buffer growth
 *   tcp_conn.c                             pools, flow table, lists, lifecycle
 *   tcp_ooo.c                              the out-of-order queue's index (tcp_ooo.h)
 *   tcp_stash.c                            the worker's kept mbufs (tcp_stash.h)
 *   tcp_timer.c, tcp_cookie.c, tcp_cc.c, tcp_rb.c, tcp_cksum.h   leaves
 *
 * Loss detection: with SACK, RACK-TLP (RFC 8985) decides what is lost from
 * per-segment transmission records; without SACK, or when a worker's
 * record pool runs dry, RFC 6675 (scoreboard, lost_edge, high_rxt) and
 * RFC 6582 (NewReno) do, as before.
 *
 * The per-worker context (struct arn_tcp_worker) is the first argument of
 * every fast-path function; it is created on its worker and never touched
 * by another thread (only the counters are read by the control lcore).
 */
#ifndef ARN_TCP_INT_H
#define ARN_TCP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>

#include "arn_l4.h"
#include "arn_tcp.h"
#include "tcp_rb.h"

/* ---- sequence arithmetic (RFC 9293 3.4, mod 2^32) ------------------------- */

static inline bool seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}
static inline bool seq_leq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}
static inline bool seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}
static inline bool seq_geq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}
static inline uint32_t seq_max(uint32_t a, uint32_t b)
{
	return seq_gt(a, b) ? a : b;
}
static inline uint32_t seq_min(uint32_t a, uint32_t b)
{
	return seq_lt(a, b) ? a : b;
}
/* lo <= x < hi, modulo 2^32 */
static inline bool seq_in(uint32_t x, uint32_t lo, uint32_t hi)
{
	return x - lo < hi - lo;
}

/* ---- constants -------------------------------------------------------------- */

#define TCP_HDR_LEN 20
#define TCP_MAX_OPT 40
#define TCP_DEFAULT_MSS 536 /* RFC 9293 3.7.1 when the peer sent none */
/* The smallest MSS option honoured, options included (Linux's
 * tcp_min_snd_mss, its answer to CVE-2019-11479): a peer that announces
 * less gets segments of this size, so that no MSS can make a segment carry
 * less than a few bytes of data (or, unchecked, wrap below zero). */
#define TCP_MIN_SND_MSS 48

#define TCP_RTO_INIT_MS 1000
#define TCP_RTO_MIN_MS 200 /* Linux's value; RFC 6298 2.4 allows a lower bound below 1 s */
#define TCP_RTO_MAX_MS 60000
#define TCP_RTO_SYN_FALLBACK_MS 3000 /* RFC 6298 5.7 */
#define TCP_DELACK_MS 40
/* ACKs sent at once (quick-ACK mode) at the start of a connection, after it
 * was idle for an RTO and after a duplicate segment: at most this many,
 * and no more than half the receive window's segments (Linux's
 * tcp_incr_quickack, TCP_MAX_QUICKACKS). Counted in ACKs sent, not in
 * segments received. */
#define TCP_QUICKACK_SEGS 16
/* Duplicate ACKs sent at once, one per out-of-order segment, for one
 * rcv_nxt before the rest of a burst's SACK changes share an ACK (Linux's
 * TCP_FASTRETRANS_THRESH in __tcp_ack_snd_check). */
#define TCP_DUPACKS_AT_ONCE 3
#define TCP_MSL_MS 30000 /* TIME_WAIT lasts 2 MSL = 60 s, Linux's value */
#define TCP_FIN_WAIT2_MS 60000
#define TCP_SYN_RETRIES 6
#define TCP_SYNACK_RETRIES 5
#define TCP_DATA_RETRIES 15
#define TCP_PERSIST_MAX_PROBES 15
#define TCP_DUPTHRESH 3
#define TCP_SB_MAX 32	/* SACK scoreboard intervals */
#define TCP_RSACK_MAX 4 /* SACK blocks we remember to report */
#define TCP_LISTENERS_MAX 64
#define TCP_APPS_MAX ARN_TCP_APPS_MAX
#define TCP_WHEEL_SLOTS 4096	     /* 1 ms slots; later deadlines go round again */
#define TCP_CHALLENGE_ACK_LIMIT 1000 /* per second per worker (Linux default) */
#define TCP_COOKIE_VALID_MS 128000   /* a cookie's life: two 64 s counter steps */
#define TCP_INVALID_RATELIMIT_MS 500 /* per connection (Linux's tcp_invalid_ratelimit) */
#define TCP_PORT_LO 32768
#define TCP_PORT_HI 60999
#define TCP_PAWS_24DAYS_MS (24u * 86400u * 1000u)
#define TCP_PAWS_WINDOW 1	    /* ticks a timestamp may lag TS.Recent (Linux's value) */
#define TCP_TLP_WCDELACK_US 200000u /* RFC 8985 7.2 WCDelAckT */
#define TCP_TLP_SLACK_US 2000u	    /* added to 2 x SRTT: Linux's TCP_TIMEOUT_MIN (2 ticks) */
#define TCP_REO_PERSIST 16	    /* RFC 8985 6.2: recoveries a grown reo_wnd lasts */
#define TCP_MINRTT_WIN_MS 10000	    /* window of the min RTT filter */
/* mbufs a worker keeps between an ACK and its next segments
 * (tcp_mbuf_done): a keep-alive exchange's poll sends two or three */
#define TCP_STASH_MAX 4

/* TCP flags */
#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_PSH 0x08
#define TH_ACK 0x10
#define TH_URG 0x20
#define TH_ECE 0x40
#define TH_CWR 0x80

/* TCP states (RFC 9293 3.3.2) */
enum tcp_state {
	TCPS_CLOSED = 0,
	TCPS_LISTEN,
	TCPS_SYN_SENT,
	TCPS_SYN_RECEIVED,
	TCPS_ESTABLISHED,
	TCPS_FIN_WAIT_1,
	TCPS_FIN_WAIT_2,
	TCPS_CLOSE_WAIT,
	TCPS_CLOSING,
	TCPS_LAST_ACK,
	TCPS_TIME_WAIT,
	TCPS_COUNT,
};
const char *tcp_state_name(int s);

/* Connection flags (c->flags) */
enum {
	TF_SACK_OK = 1u << 0,	  /* both sides sent SACK-permitted */
	TF_TS_OK = 1u << 1,	  /* timestamps negotiated */
	TF_WS_OK = 1u << 2,	  /* window scaling negotiated */
	TF_ACK_NOW = 1u << 3,	  /* send an ACK at the next output */
	TF_DELACK = 1u << 4,	  /* an ACK is owed; delayed-ACK timer armed */
	TF_FIN_QUEUED = 1u << 5,  /* application shut down sending: FIN after data */
	TF_FIN_SENT = 1u << 6,	  /* FIN has been sent at least once (at fin_seq) */
	TF_RCVD_FIN = 1u << 7,	  /* peer's FIN received in order */
	TF_APP_CLOSED = 1u << 8,  /* arn_tcp_close() was called: no more callbacks */
	TF_NOTIFIED = 1u << 9,	  /* on_close has been scheduled or called */
	TF_ACCEPTED = 1u << 10,	  /* the application knows the connection */
	TF_PASSIVE = 1u << 11,	  /* from a listener */
	TF_WANT_WRITE = 1u << 12, /* a write fell short: on_writable when space frees */
	TF_IN_OUTQ = 1u << 13,	  /* on the worker's output list */
	TF_IN_CLOSEQ = 1u << 14,  /* on the worker's close list */
	TF_SYN_RTX = 1u << 15,	  /* SYN or SYN-ACK was retransmitted (RFC 6298 5.7) */
	TF_OOO_FIN = 1u << 16,	  /* a FIN arrived out of order at ooo_fin_seq */
	TF_PERSIST = 1u << 17,	  /* the rexmt timer is the persist timer */
	TF_KEEPALIVE = 1u << 18,
	TF_RTT_TIMING = 1u << 19,  /* rtt_seq is being timed (no timestamps) */
	TF_EOF_PENDING = 1u << 20, /* on_eof owed once data before the FIN is read */
	TF_FREE = 1u << 21,	   /* on the free list */
	TF_FORCE = 1u << 22,	   /* persist timeout: ignore sender SWS avoidance once */
	TF_TLP = 1u << 23,	   /* the rexmt timer is the tail loss probe timer (RFC 8985 7) */
	TF_RACK_OFF = 1u << 24,	   /* no transmission records: RFC 6675 until the pipe drains */
	TF_DSACK = 1u << 25,	   /* c->dsack goes first in the next ACK (RFC 2883) */
	TF_TLP_RETRANS = 1u << 26, /* the outstanding probe was a retransmission */
	TF_TLP_DSACKED = 1u << 27, /* ... and a DSACK showed it was not needed */
	TF_UNDO = 1u << 28,	   /* a congestion response that DSACKs may still undo */
	TF_TLP_OUT = 1u << 29,	   /* a loss probe is outstanding up to tlp_high_seq */
	TF_PUSHED = 1u << 30,	   /* a pushed segment's ACK is owed (Linux ICSK_ACK_PUSHED) */
	TF_PINGPONG = 1u << 31,	   /* interactive: our data follows theirs within the delack time */
};

enum tcp_recovery {
	TCP_REC_NONE = 0,
	TCP_REC_FAST, /* fast retransmit / SACK recovery: cwnd brought to ssthresh by PRR */
	TCP_REC_LOSS, /* after an RTO: everything unSACKed is lost, slow start */
};

/* ECN (RFC 3168), c->ecn. Arion accepts ECN when a peer's SYN asks for it
 * (ECE and CWR set), as Linux does by default (net.ipv4.tcp_ecn = 2); its
 * own SYNs do not ask. */
enum {
	TCP_ECN_OK = 1u << 0,	/* negotiated: new data goes out ECT(0) */
	TCP_ECN_ECHO = 1u << 1, /* a CE arrived: ECE on every ACK until the peer's CWR */
	TCP_ECN_CWR = 1u << 2,	/* cwnd was reduced for an ECE: CWR on the next new data */
};

/* ---- RACK transmission records (RFC 8985) ------------------------------------
 * One per transmitted segment still outstanding, in sequence order (new data
 * is always sent at snd_max, and a retransmission resends one record's
 * range), linked by index through a per-worker pool. Records cost nothing on
 * the clean path: a cumulative ACK frees them from the head. */
#define TXR_NIL UINT32_MAX
enum {
	TXR_SACKED = 1u << 0,
	TXR_LOST = 1u << 1,	    /* marked lost; needs (re)transmission */
	TXR_RETRANS = 1u << 2,	    /* a retransmission of it is in flight */
	TXR_EVER_RETRANS = 1u << 3, /* retransmitted at least once */
	TXR_APP_LIMITED = 1u << 4,  /* sent while the application limited the flow */
};
struct tcp_txrec {
	uint32_t start, end;
	uint32_t xmit_us; /* last (re)transmission, worker's microsecond clock (wraps) */
	uint32_t next;
	uint32_t flags;
	/* delivery rate estimation (draft-cheng-iccrg-delivery-rate-
	 * estimation): the connection's state when this was (re)sent */
	uint32_t delivered;	/* C.delivered (low 32 bits; differences only) */
	uint32_t delivered_us;	/* C.delivered_time */
	uint32_t first_sent_us; /* C.first_sent_time */
};

/* One ACK's delivery rate sample (the draft's rs), for the congestion
 * control's on_sample. */
struct tcp_rate_sample {
	uint32_t delivered;	  /* bytes delivered over the interval */
	uint32_t prior_delivered; /* C.delivered when the newest acked segment was sent */
	int64_t interval_us;	  /* -1: no valid sample on this ACK */
	uint32_t rtt_us;	  /* of the newest segment acked (0: none) */
	uint32_t acked_sacked;	  /* bytes newly ACKed or SACKed by this ACK */
	uint32_t losses;	  /* bytes newly marked lost by this ACK */
	uint32_t prior_in_flight;
	bool is_app_limited;
	/* while the ACK is processed */
	bool has_prior;
	uint32_t prior_us;	  /* P.delivered_time of the newest segment acked */
	uint32_t send_elapsed_us; /* its P.sent_time - P.first_sent_time */
};

/* ---- TIME_WAIT records -------------------------------------------------------
 * What is left of a connection in TIME_WAIT (RFC 9293 3.10.7.4): enough to
 * answer a retransmitted FIN, to refuse or accept a new SYN for the 4-tuple
 * (RFC 6191, with timestamps) and to keep the tuple from an active open,
 * as Linux keeps a tcp_timewait_sock instead of the socket. Records live in
 * their own per-worker pool and hash; a connection block is freed the
 * moment its connection enters TIME_WAIT. */
#define TW_NIL UINT32_MAX
struct tcp_tw {
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint32_t snd_nxt;    /* our next sequence number (after our FIN) */
	uint32_t rcv_nxt;    /* after the peer's FIN */
	uint32_t ts_recent;  /* the peer's last TSval (PAWS, and our TSecr) */
	uint32_t ts_offset;  /* our timestamp clock's offset */
	uint64_t expire_ms;  /* 2 MSL after the last FIN */
	uint32_t hnext;	     /* hash chain, TW_NIL-terminated */
	uint32_t prev, next; /* oldest first (expiry order); next also links the free list */
	uint16_t wnd;	     /* the window field to advertise (scaled as it was) */
	uint8_t ts_ok;	     /* timestamps were negotiated */
	uint8_t used;
	uint32_t ack_ms; /* our last rate-limited ACK (low 32 bits of now_ms; 0: none) */
};

/* ---- parsed segment -------------------------------------------------------- */

struct tcp_sack_block {
	uint32_t start, end;
};

struct tcp_seg {
	uint32_t src, dst; /* host order: peer, us */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint32_t len; /* payload bytes */
	uint16_t wnd; /* raw, unscaled */
	uint8_t flags;
	uint8_t n_sack;
	bool has_mss, has_ws, has_ts, sack_ok;
	uint16_t mss;
	uint8_t ws;
	uint32_t tsval, tsecr;
	bool old_ack; /* a reordered pure ACK: used for its ACK/SACK only (tcp_in.c) */
	bool ce;      /* the IP header said Congestion Experienced (RFC 3168) */
	/* One link of a received mbuf chain (a kernel port's GRO super-segment,
	 * tcp_in.c's chain_input), taken as a segment of its own: TCP_SEG_*
	 * bits; 0 for a plain segment (tcp_input's memset). In the padding
	 * before sack, as segs_adj: the struct, and what tcp_input clears of
	 * it for every segment, stay as they were. With TCP_SEG_CHAIN, mss
	 * (an MSS option's only on a SYN, which no chain carries) is the
	 * sender's segment size: m->tso_segsz, or the packet's payload. */
	uint8_t chain;
	/* the sender's segments that end in this segment, less one: 0 for a
	 * plain segment, -1 for a link in which none ends (the delayed-ACK
	 * rule's count, tcp_in.c's rcv_ack_policy) */
	int8_t segs_adj;
	struct tcp_sack_block sack[4];
};

/* struct tcp_seg's chain */
enum {
	TCP_SEG_CHAIN = 1u << 0, /* a link of a chain */
	/* links of the same packet follow: no FIN or PSH, no ACK at once */
	TCP_SEG_MORE = 1u << 1,
};

/** Parse the options of a TCP header (@p opt, @p len bytes). Malformed
 * options end parsing (what was parsed so far stays). */
void tcp_parse_options(struct tcp_seg *s, const uint8_t *opt, unsigned len);

/* ---- a worker's lists of connections ------------------------------------------ */

/* A connection's place on one of its worker's lists (the out-of-order
 * queues', the receive grants'), linked both ways so that a connection
 * leaves in O(1) when it closes (tcp_conn.c: list_append, list_remove). */
struct tcp_link {
	struct arn_tcp_conn *prev, *next;
};
/* oldest first: appended at the tail, pruned or visited from the head */
struct tcp_list {
	struct arn_tcp_conn *head, *tail;
};

/* ---- mbuf queues -------------------------------------------------------------- */

/* A byte queue of single-segment mbufs linked through m->next. */
struct tcp_q {
	uint32_t bytes; /* first: arn_tcp_conn_pub's rx_bytes is rcvq's */
	uint32_t n;
	struct rte_mbuf *head, *tail;
};

/* A node of the out-of-order queue's indexes (tcp_ooo.c): an mbuf of
 * oooq (at its first byte's sequence), or a run of contiguous data in
 * it, [start, end). From the worker's pool of them (ooo_nodes). */
struct tcp_ooo_node {
	struct tcp_rb_node rb; /* first */
	uint32_t start, end;   /* a run's; an mbuf's start */
	union {
		struct rte_mbuf *m;	   /* an mbuf's */
		struct tcp_ooo_node *free; /* on the worker's free list */
	};
};

/* ---- congestion control ----------------------------------------------------- */

struct arn_tcp_conn;
struct tcp_cc_ops {
	const char *name;
	void (*init)(struct arn_tcp_conn *c);
	/* new data acknowledged outside fast recovery */
	void (*on_ack)(struct arn_tcp_conn *c, uint32_t acked, uint64_t now_ms);
	/* loss detected: return the new ssthresh */
	uint32_t (*ssthresh)(struct arn_tcp_conn *c, uint64_t now_ms);
	/* recovery ended (full ACK) */
	void (*after_recovery)(struct arn_tcp_conn *c, uint64_t now_ms);
	/* optional (BBR; Linux's cong_control): every ACK's rate sample, after
	 * loss detection and PRR; sets cwnd and the pacing rate itself */
	void (*on_sample)(struct arn_tcp_conn *c, const struct tcp_rate_sample *rs);
};
extern const struct tcp_cc_ops tcp_cc_newreno;
extern const struct tcp_cc_ops tcp_cc_cubic;
extern const struct tcp_cc_ops tcp_cc_bbr;

/* BBR v1 (Linux's net/ipv4/tcp_bbr.c; draft-cardwell-iccrg-bbr-congestion-
 * control-00), in bytes and microseconds. */
enum tcp_bbr_mode {
	BBR_STARTUP = 0,
	BBR_DRAIN,
	BBR_PROBE_BW,
	BBR_PROBE_RTT,
};
#define BBR_BW_RTTS 10 /* the max bandwidth filter's window, in round trips */
struct tcp_bbr {
	uint64_t bw[3];	      /* windowed max filter samples (bytes/s) ... */
	uint32_t bw_round[3]; /* ... and the round each was taken in */
	uint32_t min_rtt_us;  /* 0: none yet */
	uint64_t min_rtt_stamp_ms;
	uint64_t probe_rtt_done_ms; /* 0: not yet at the PROBE_RTT floor */
	uint64_t cycle_stamp_us;
	uint64_t full_bw;
	uint32_t round_count;
	uint32_t next_rtt_delivered;
	uint32_t prior_cwnd;
	uint32_t pacing_gain, cwnd_gain; /* x 256 (BBR_UNIT) */
	uint8_t mode;
	uint8_t cycle_idx;
	uint8_t full_bw_cnt;
	bool full_bw_reached;
	bool round_start;
	bool probe_rtt_round_done;
	bool packet_conservation;
	uint8_t prev_recovery; /* c->recovery at the last sample */
	uint32_t cwnd;	       /* BBR's own: PRR, ECN and TLP reductions do not apply */
	/* ACK aggregation (Linux's bbr_update_ack_aggregation): bytes ACKed
	 * beyond bw x time since the epoch began, the max of two windows of
	 * five rounds each */
	uint32_t ack_epoch_us;	 /* C.delivered_time when the epoch began */
	uint32_t ack_epoch_acked; /* bytes ACKed or SACKed since */
	uint32_t extra_acked[2];
	uint8_t extra_acked_win_rtts, extra_acked_win_idx;
};

struct tcp_cubic {
	double w_max; /* segments */
	double w_last_max;
	double k;     /* seconds */
	double w_est; /* Reno-friendly estimate, segments */
	uint64_t epoch_ms;
	uint32_t ack_bytes; /* for w_est */
};

/* ---- the connection ------------------------------------------------------------ */

struct arn_tcp_worker;

struct arn_tcp_conn {
	/* first, as arn_tcp.h's struct arn_tcp_conn_pub: read inline by the
	 * application (checked below the struct) */
	void *user;
	struct tcp_q rcvq; /* in order, unconsumed */

	/* lookup: hot on every segment */
	struct arn_tcp_conn *hnext;
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint8_t state;
	uint8_t recovery;
	uint8_t snd_ws, rcv_ws;
	uint32_t flags;
	struct arn_tcp_worker *wk;

	/* send sequence space */
	uint32_t iss;
	uint32_t snd_una;
	uint32_t snd_nxt; /* next new byte to send (== snd_max except right after an RTO
			     without SACK: never; kept equal, retransmits use high_rxt) */
	uint32_t snd_max; /* highest sequence sent + 1 */
	uint32_t snd_wnd; /* peer's window, scaled */
	uint32_t max_sndwnd;
	uint32_t snd_wl1, snd_wl2;
	uint32_t fin_seq; /* valid with TF_FIN_QUEUED */
	uint16_t mss;	  /* payload per segment, options excluded */
	uint16_t peer_mss;
	uint32_t cwnd, ssthresh;
	uint32_t recover;   /* RFC 6582 / 6675 recovery point */
	uint32_t high_rxt;  /* RFC 6675 HighRxt */
	uint32_t lost_edge; /* unSACKed data below it is deemed lost */
	uint32_t dupacks;
	uint32_t reno_sacked; /* segments assumed to have left the network (no SACK) */
	uint32_t sacked_bytes;
	uint8_t n_sb;
	uint8_t n_rsack;
	uint8_t rsack_dirty; /* bit i: rsack[i] changed since an ACK last carried it */
	uint8_t backoff;
	uint8_t probes;	   /* persist / keepalive probes unanswered */
	uint8_t ecn;	   /* TCP_ECN_* (RFC 3168) */
	uint32_t ecn_high; /* snd_max at the last ECN reduction: one per window */
	struct tcp_sack_block sb[TCP_SB_MAX]; /* sorted, disjoint, above snd_una */

	/* RACK-TLP (RFC 8985): records, then the RACK state (times in us) */
	uint32_t txr_head, txr_tail;
	uint32_t lost_bytes;	/* records LOST and not SACKed (retransmitted or not) */
	uint32_t retrans_bytes; /* records RETRANS and not SACKed: retransmissions in flight */
	uint32_t rack_xmit_us, rack_end; /* the most recently sent delivered segment */
	uint32_t rack_rtt_us; /* 0: nothing delivered in this flight yet (RACK.xmit_ts unset) */
	uint32_t rack_fack;   /* highest SACKed sequence + 1 */
	uint32_t min_rtt_us;
	uint32_t dsack_round; /* valid with rack_dsack_round */
	uint64_t min_rtt_ms;  /* when min_rtt_us was taken */
	/* RACK's reordering timer: a worker microsecond, 0 = off. Not on the
	 * 1 ms wheel: the time left is RACK.rtt + reo_wnd less the time since
	 * the segment went out, tens of microseconds on a fast path, and
	 * rounding it up to whole milliseconds held a lost segment up to 2 ms
	 * on a path whose RTT is 50 us. The worker looks at the connections
	 * listed (rack_wait) on every poll, as at paced ones. */
	uint64_t t_rack_us;
	struct arn_tcp_conn *rknext; /* the worker's list of reordering timers */
	/* the window's min_rtt/4 steps: RFC 8985 6.2 counts them without a
	 * bound; 16 bits, as a step of a tiny min_RTT needs hundreds
	 * (tcp_rack.c, reo_late_dsack) */
	uint16_t reo_wnd_mult;
	bool rack_listed;
	uint8_t reo_wnd_persist;
	bool rack_reord;       /* reordering seen: the window is min_rtt/4 * mult */
	bool rack_dsack_round; /* a DSACK already grew the window this round trip */
	uint32_t reo_late_us, reo_rxt_seq, reo_rxt_us; /* tcp_rack.c: reo_wnd beyond SRTT */
	/* the middle of RACK's RTT samples, one an ACK (tcp_rtt_med_update):
	 * twice it caps the reordering window, as SRTT does; 0: no sample yet */
	uint32_t rtt_med_us;
	uint32_t tlp_high_seq;
	/* the rexmt timer (TF_TLP) is for a second probe, this many ms after the
	 * first (tcp_tlp_again_ms); 0 when it is not */
	uint32_t tlp_again_ms;
	/* undo of a spurious congestion response (RFC 3708 / RFC 2883 4) */
	uint32_t undo_marker; /* snd_una when the response began */
	uint32_t undo_end;    /* DSACKs count until snd_una passes this */
	int32_t undo_retrans; /* retransmissions not yet shown spurious by DSACK */
	/* segments retransmitted, and segments the DSACKs taken reported,
	 * over the connection's life: a DSACK that would make the second pass
	 * the first reports more duplicates than we ever sent twice, and is
	 * ignored (tcp_rack.c's dsack_valid, Linux's tcp_dsack_seen) */
	uint32_t retrans_segs, dsack_segs;
	uint32_t prior_cwnd, prior_ssthresh;
	struct tcp_sack_block dsack; /* valid with TF_DSACK */
	/* the last DSACK block received and the ACK it came on: the same pair
	 * again is a copy of that ACK's options, not a new duplicate */
	struct tcp_sack_block dsack_in;
	uint32_t dsack_in_ack;
	/* Proportional Rate Reduction (RFC 9937) during TCP_REC_FAST, bytes */
	uint32_t prr_delivered; /* delivered to the receiver since recovery began */
	uint32_t prr_out;	/* sent since recovery began */
	uint32_t recover_fs;	/* pipe when it began (RecoverFS, RFC 9937) */
	uint32_t cwnd_lim_seq;	/* snd_max when cwnd last held data back */

	/* receive sequence space */
	uint32_t irs;
	uint32_t rcv_nxt;
	uint32_t rcv_adv; /* right edge advertised so far */
	uint32_t last_ack_sent;
	uint32_t ooo_fin_seq;
	uint32_t segs_unacked;	 /* full segments since our last ACK */
	uint32_t rcv_dupack_nxt; /* the rcv_nxt rcv_dupacks counts for */
	uint8_t quickack;	 /* ACKs left to send at once */
	uint8_t rcv_dupacks;	 /* duplicate ACKs sent at once for rcv_dupack_nxt */
	uint64_t last_rcv_ms;	 /* when in-order data last arrived */
	struct tcp_sack_block rsack[TCP_RSACK_MAX]; /* most recent first */

	/* timestamps (RFC 7323). TS.Recent is kept twice: ts_echo is what
	 * TSecr carries (RFC 7323 4.3, the hole-filling segment's TSval
	 * included, so that the peer's RTT samples stay true under loss);
	 * ts_recent is PAWS's reference, which does not move while a hole is
	 * open (segments sent before the hole filler may still arrive). */
	uint32_t ts_recent;
	uint32_t ts_echo;
	uint64_t ts_recent_age; /* ms */
	uint32_t ts_offset;

	/* RTT (RFC 6298): SRTT and RTTVAR in microseconds, the RTO in ms.
	 * In milliseconds, a path of 100 us had an SRTT of 1-2 ms (every
	 * sample rounded up to one): twice the loss probe's timeout, ten
	 * times RACK's reordering window cap and CUBIC's RTT (issue 16). */
	uint32_t srtt_us8;   /* srtt * 8 */
	uint32_t rttvar_us4; /* rttvar * 4 */
	uint32_t rto;	     /* ms */
	uint32_t rtt_seq;
	uint64_t rtt_start;

	/* buffers */
	struct tcp_q sndq;	  /* bytes from snd_una on */
	struct rte_mbuf *snd_cur; /* mbuf holding snd_nxt, or the last one sent whole when
				   * snd_nxt is past the queue; NULL: recompute */
	uint32_t snd_cur_off;	  /* sequence of snd_cur's first byte */
	/* where the run of contiguous data ending at oooq's tail starts
	 * (valid while the queue holds any): the SACK block of a segment
	 * appended there (tcp_sack.c) */
	uint32_t ooo_tail_run;
	struct tcp_q oooq; /* out of order, sorted; seq in m->hash.usr */
	/* oooq's indexes (tcp_ooo.c): its mbufs by sequence (a head of the
	 * list: those appended at its tail join at the next search), and its
	 * runs of contiguous data by start (what SACK blocks report); each
	 * tree's last node, where a bulk flight above a hole goes (Linux's
	 * ooo_last_skb) */
	struct tcp_rb_root ooo_mbufs, ooo_runs;
	struct tcp_ooo_node *ooo_mlast, *ooo_rlast;
	uint32_t rcvbuf, sndbuf;
	/* send-buffer autotuning (tcp_rmem.c, Linux's tcp_sndbuf_expand):
	 * sndbuf grows towards the worker's sndbuf_max while the application
	 * waits on it, and the mbufs that may cost are granted */
	uint32_t smem_grant; /* mbufs sndbuf has grown by (the worker's gauge) */
	/* no growth asked again until snd_una passes it (0 at first: at
	 * worst a round trip's wait, if the flight spans sequence 0) */
	uint32_t smem_next_seq;
	uint32_t rmem_max; /* mbufs rcvq + oooq may hold (tcp_rmem.c) */
	/* receive-buffer autotuning (tcp_rmem.c, Linux's tcp_rcv_space_adjust):
	 * rcvbuf grows towards the worker's rcvbuf_max */
	uint32_t rmem_grant;	 /* of rmem_max, mbufs grown by (the worker's gauge) */
	uint32_t rcv_rtt8_us;	 /* the receiver's RTT estimate * 8, us; 0: none yet */
	uint32_t rcv_rtt_tsecr;	 /* the TSecr last sampled */
	uint32_t rcv_rtt_seq;	 /* without timestamps: a sample ends when rcv_nxt passes it */
	uint64_t rcv_rtt_us0;	 /* ... and began then (worker us); 0: none running */
	uint32_t rcvq_space;	 /* bytes the application read in the last measured RTT */
	uint32_t rcvq_space_seq; /* what it had read (rcv_nxt - rcvq.bytes) when this one began */
	uint64_t rcvq_space_us;	 /* when this one began */
	uint64_t chack_ms;	 /* last challenge ACK for a SYN or data (rate limit) */
	bool ooo_listed;	 /* on the worker's list of out-of-order queues */
	/* the last collapse walk (tcp_rmem.c) found no run of small mbufs to
	 * copy, at this rcv_nxt, and no small mbuf was queued out of order
	 * since: the next collapse need not walk (see collapse()) */
	bool rmem_packed;
	uint32_t rmem_packed_nxt;
	/* mbufs queued in rcvq or oooq, and partial reads (which may leave
	 * rcvq's head small), since the connection began (wraps), and that
	 * count at the last collapse walk: a walk, as long as the queues,
	 * waits until what happened since pays for it (tcp_rmem.c's
	 * collapse()) */
	uint32_t rmem_queued, rmem_walk_queued;
	uint32_t ooo_small_seq; /* the last small mbuf queued in oooq (collapse()) */
	struct tcp_link ooo_link;
	/* the grant's upkeep (tcp_rmem.c): a connection that stops reading
	 * keeps of it only what it holds */
	bool rmem_clamped;	/* not reading: the edge stays, the grant follows what it holds */
	bool rmem_listed;	/* on the worker's list of grants */
	uint32_t rmem_read_seq; /* what it had read when last looked at */
	uint64_t rmem_read_ms;	/* when it was last seen reading */
	struct tcp_link rmem_link;

	/* transmit: lib/net's Ethernet and IPv4 headers of this flow, built
	 * once and copied into each segment (arn_net_tcp_output, tcp_out.c) */
	struct arn_net_tmpl tmpl;

	/* timers: absolute ms deadlines, 0 = off */
	uint64_t t_rexmt, t_delack, t_keep, t_2msl;
	uint64_t t_sched; /* deadline the wheel entry is filed under, 0 = none */
	struct arn_tcp_conn *tprev, *tnext;
	struct arn_tcp_conn *xnext; /* timers due in this tick */
	uint32_t keep_idle_ms, keep_intvl_ms;
	uint8_t keep_cnt;

	/* application */
	const struct arn_tcp_ops *ops;
	struct arn_tcp_listener *lsn; /* SYN queue accounting while SYN_RECEIVED */
	int close_reason;
	uint32_t index;
	uint32_t gen;

	/* per-worker lists: output pending, close notifications */
	struct arn_tcp_conn *onext, *cnext;

	const struct tcp_cc_ops *cc;
	struct tcp_cubic cubic;
	struct tcp_cubic prior_cubic; /* for undo */

	/* delivery rate estimation (tcp_rack.c; draft-cheng-iccrg-delivery-
	 * rate-estimation), in bytes and worker microseconds */
	uint64_t delivered;	/* C.delivered */
	uint32_t delivered_us;	/* C.delivered_time */
	uint32_t first_sent_us; /* C.first_sent_time */
	uint64_t app_limited;	/* C.app_limited: 0, or delivered at which it ends */
	struct tcp_rate_sample rs;
	/* pacing (BBR): bytes per second (0: not paced) and the worker
	 * microsecond before which no more data may go */
	uint64_t pacing_rate;
	uint64_t next_send_us;
	struct arn_tcp_conn *pnext; /* the worker's list of paced connections waiting */
	bool paced_listed;
	struct tcp_bbr bbr;
} __rte_cache_aligned;

_Static_assert(offsetof(struct arn_tcp_conn, user) == offsetof(struct arn_tcp_conn_pub, user) &&
		   offsetof(struct arn_tcp_conn, rcvq.bytes) ==
		       offsetof(struct arn_tcp_conn_pub, rx_bytes),
	       "struct arn_tcp_conn starts as struct arn_tcp_conn_pub (arn_tcp.h)");
/* tcp_in.c's fast path reads state and recovery as one word */
_Static_assert(offsetof(struct arn_tcp_conn, recovery) == offsetof(struct arn_tcp_conn, state) + 1,
	       "recovery follows state");
/* tcp_out.c reads both ports as one word, as the TCP header has them */
_Static_assert(offsetof(struct arn_tcp_conn, rport) == offsetof(struct arn_tcp_conn, lport) + 2,
	       "rport follows lport");

struct arn_tcp_listener {
	uint64_t cookie_sent_ms; /* last SYN cookie sent; 0: never */
	uint32_t addr;
	uint16_t port;
	bool used;
	bool keepalive;
	enum arn_tcp_cc cc;
	uint32_t backlog;
	uint32_t syn_queued;
	const struct arn_tcp_ops *ops;
	void *user;
};

/* ---- per worker ----------------------------------------------------------------- */

struct arn_tcp_worker {
	/* first: arn_tcp_app_state (arn_tcp.h) reads the L4 state as these */
	struct arn_tcp_app_slots apps;
	struct arn_lcore *lc;
	unsigned index;
	uint64_t now_ms;
	uint64_t now_us;
	uint64_t clock_tsc; /* the TSC now_ms and now_us were last taken from */
	/* the TSCs at which now_ms and now_us next tick (tcp_clock_set) */
	uint64_t next_ms_tsc, next_us_tsc;
	uint64_t hz;
	uint64_t tsc_per_ms;
	uint64_t tsc_per_us;

	/* connection pool: conns[max_conns], LIFO free list through hnext */
	struct arn_tcp_conn *conns;
	uint32_t max_conns;
	struct arn_tcp_conn *free;
	uint32_t n_free;  /* blocks on the free list */
	uint32_t reserve; /* blocks passive opens leave for active ones */
	uint32_t rcvbuf, sndbuf;
	uint32_t rcvbuf_max; /* autotuning's ceiling (tcp_rmem.c); rcvbuf: off */
	uint32_t sndbuf_max; /* the send side's (tcp_rmem.c); sndbuf: off */
	/* the cap of the reordering window beyond SRTT on DSACK evidence
	 * (tcp_rack.c, reo_late_dsack); 0: off, RFC 8985's window */
	uint32_t reo_late_max_us;
	/* The most payload one segment can carry: what an mbuf of the worker's
	 * pool holds after the headroom, less the largest TCP header. Every
	 * MSS is clamped to it (segments are built in one mbuf). */
	uint32_t seg_max;
	/* ol_flags' mark on a retransmitted segment (arn_l4.h's
	 * ARN_L4_DYNFLAG_REXMIT), 0 if it could not be registered */
	uint64_t rexmit_flag;
	enum arn_tcp_cc cc_default; /* for ARN_TCP_CC_DEFAULT: CUBIC or NewReno */

	/* receive memory in mbufs (tcp_rmem.c) */
	struct rte_mempool *pool; /* the pool every segment comes from */
	uint32_t ooo_max;	  /* mbufs all out-of-order queues may hold */
	uint32_t pressure_lo;	  /* free mbufs below which: pressure */
	uint32_t pressure_severe; /* ... and below which: refuse new connections */
	uint32_t rmem_grow_max;	  /* mbufs connections' budgets may grow by, together */
	uint32_t smem_grow_max;	  /* ... and their send buffers, a bound of their own */
	bool pressure, pressure_severe_on;
	uint64_t rmem_checked_ms;
	/* the lcores whose mempool caches count as free mbufs (tcp_rmem.c),
	 * or UINT16_MAX: too many to list, rte_mempool_avail_count counts */
	uint16_t n_cache_lcores;
	uint16_t cache_lcores[16];
	struct tcp_list ooo; /* out-of-order queues, the oldest first */
	/* the out-of-order queues' index nodes (tcp_sack.c): two for each
	 * mbuf those queues may hold (ooo_max + rmem_grow_max: one for the
	 * mbuf, at most one for its run), and the free ones */
	struct tcp_ooo_node *ooo_nodes;
	struct tcp_ooo_node *ooo_node_free;
	uint32_t ooo_nodes_n, ooo_nodes_free_n;

	/* Mbufs an ACK let go (a send queue's, a pure ACK's own), kept for
	 * the next segment or send-queue copy this worker builds instead of
	 * a free now and an alloc then (tcp_mbuf_done, tcp_mbuf_alloc): a
	 * keep-alive request's segments each had both. Only single direct mbufs of
	 * @p pool that nobody else references, in the state a free leaves
	 * them; given back (tcp_stash_drain) after every poll with output, at
	 * each millisecond tick and at stop, so they are never held long;
	 * lib/tcp's count of the pool takes them as free (tcp_rmem_avail). */
	struct rte_mbuf *stash[TCP_STASH_MAX];
	uint32_t n_stash;

	/* grants of grown receive buffers, the longest not looked at first */
	struct tcp_list rmem;

	/* flow table */
	struct arn_tcp_conn **htab;
	uint32_t hmask;
	uint64_t hkey[4]; /* tcp_flow_hash's secret */

	struct arn_tcp_listener lsn[TCP_LISTENERS_MAX];

	/* RACK transmission records: pool and free list (index-linked) */
	struct tcp_txrec *txr;
	uint32_t txr_n, txr_free;

	/* timer wheel: 1 ms slots */
	struct arn_tcp_conn *wheel[TCP_WHEEL_SLOTS];
	uint64_t wheel_ms; /* slots up to this ms have been run */

	struct arn_tcp_conn *outq, *outq_tail;
	struct arn_tcp_conn *paced;	/* waiting for their next_send_us (tcp_worker.c) */
	struct arn_tcp_conn *rack_wait; /* reordering timers running (t_rack_us) */
	struct arn_tcp_conn *closeq;
	/* TIME_WAIT records: pool, hash, and the list oldest first */
	struct tcp_tw *tw;
	uint32_t tw_n, tw_free;
	uint32_t *tw_htab;
	uint32_t tw_hmask;
	uint32_t tw_head, tw_tail;

	/* secrets for ISNs (RFC 6528) and SYN cookies */
	uint64_t key[2];
	uint64_t cookie_key[2];
	uint32_t port_hint;

	/* RFC 5961 challenge ACK budget: drawn at random each second */
	uint64_t chack_sec;
	uint32_t chack_budget;
	uint64_t rng; /* xorshift64* state, seeded from getrandom() at start */

	/* A received mbuf chain (a kernel port's GRO super-segment) being
	 * taken link by link (tcp_in.c's chain_input): the per-packet
	 * counters it has bumped already (TCP_PKT_*), so that it counts
	 * once, as Linux counts a GRO packet once. */
	bool in_chain;
	uint8_t chain_counted;

	uint64_t cnt[ARN_TCP_C_COUNT];
};

#define TCP_INC(wk, id) ((wk)->cnt[ARN_TCP_C_##id]++)

/* Counters of received packets that a chain bumps once, whichever of
 * its links it is for (TCP_INC_PKT); segments_fast_path, on the hot
 * path, is brought back to one by chain_input itself */
enum {
	TCP_PKT_OOO = 1,
	TCP_PKT_DUP = 2,
	TCP_PKT_COALESCED = 4,
	TCP_PKT_ACK_SET = 8, /* the chain's own link owed the connection's ACK */
};
#define TCP_INC_PKT(wk, id, bit)                                                                   \
	do {                                                                                       \
		if (likely(!(wk)->in_chain))                                                       \
			TCP_INC(wk, id);                                                           \
		else if (!((wk)->chain_counted & (bit))) {                                         \
			(wk)->chain_counted |= (bit);                                              \
			TCP_INC(wk, id);                                                           \
		}                                                                                  \
	} while (0)

/* A packet whose @p bytes were all received already: duplicate_data
 * (once for a chain) and duplicate_bytes, counted together. */
#define TCP_DUP(wk, bytes)                                                                         \
	do {                                                                                       \
		TCP_INC_PKT(wk, DUP_DATA, TCP_PKT_DUP);                                            \
		(wk)->cnt[ARN_TCP_C_DUP_BYTES] += (bytes);                                         \
	} while (0)

/* cwnd was just reduced (an ECN-Echo, a recovery, an RTO): with ECN, the
 * next new segment carries CWR so that the receiver stops echoing, and
 * ECEs for data sent before now cause no second reduction (RFC 3168
 * 6.1.2; Linux's tcp_ecn_queue_cwr on every reduction). */
static inline void tcp_ecn_queue_cwr(struct arn_tcp_conn *c)
{
	if (c->ecn & TCP_ECN_OK) {
		c->ecn |= TCP_ECN_CWR;
		c->ecn_high = c->snd_max;
	}
}
#define TCP_DEC(wk, id) ((wk)->cnt[ARN_TCP_C_##id]--)

/* Per-worker state: on the lcore's L4 slot (arn_l4.h), one load away. */
#define TCP_MAX_WORKERS 128

static inline struct arn_tcp_worker *tcp_wk(struct arn_lcore *lc)
{
	return (struct arn_tcp_worker *)arn_l4_state(lc);
}

/* The clock from lib/net's TSC, which is the loop iteration's (arn_net_now):
 * every segment of a burst and the poll after it bring the same value, and
 * the two divisions (tens of cycles each) are made once for it, each only
 * when the TSC reached the next tick of its clock (a millisecond's about
 * one iteration in thousands). The same floors as dividing every time,
 * never going back. */
static inline void tcp_clock_set(struct arn_tcp_worker *wk, uint64_t tsc)
{
	if (tsc == wk->clock_tsc)
		return;
	wk->clock_tsc = tsc;
	if (tsc >= wk->next_us_tsc) {
		wk->now_us = tsc / wk->tsc_per_us;
		wk->next_us_tsc = (wk->now_us + 1) * wk->tsc_per_us;
	}
	if (unlikely(tsc >= wk->next_ms_tsc)) {
		wk->now_ms = tsc / wk->tsc_per_ms;
		wk->next_ms_tsc = (wk->now_ms + 1) * wk->tsc_per_ms;
	}
}

static inline uint64_t tcp_clock(struct arn_tcp_worker *wk)
{
	tcp_clock_set(wk, arn_net_now(wk->lc));
	return wk->now_ms;
}

/* ---- tcp_conn.c ------------------------------------------------------------------ */
/* The worker's pool of transmission records: a record taken per segment
 * sent and given back per segment ACKed on a RACK connection. Inline
 * (they call nothing, so the header depends on no .c file for them). */
static inline uint32_t tcp_txr_alloc(struct arn_tcp_worker *wk) /* TXR_NIL: none left */
{
	uint32_t i = wk->txr_free;
	if (i != TXR_NIL)
		wk->txr_free = wk->txr[i].next;
	return i;
}
static inline void tcp_txr_put(struct arn_tcp_worker *wk, uint32_t i)
{
	wk->txr[i].next = wk->txr_free;
	wk->txr_free = i;
}
void tcp_txr_pool_init(struct arn_tcp_worker *wk);
void tcp_txr_free_all(struct arn_tcp_conn *c);
/* Output for @p c at the worker's next tcp_process_outq (tcp_worker.c).
 * Inline: it runs several times a request (a send, an ACK to answer) and
 * is mostly the one flag test. */
static inline void tcp_want_output(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	if (c->flags & TF_IN_OUTQ)
		return;
	c->flags |= TF_IN_OUTQ;
	c->onext = NULL;
	if (wk->outq_tail)
		wk->outq_tail->onext = c;
	else
		wk->outq = c;
	wk->outq_tail = c;
}
/* Pacing: @p c may send nothing more before c->next_send_us; the worker
 * puts it on the output list then (tcp_worker.c). */
void tcp_pace_wait(struct arn_tcp_conn *c);
/* RACK's reordering timer: @p c's t_rack_us is set; the worker calls
 * tcp_rack_timeout once it passes (tcp_worker.c, every poll). */
void tcp_rack_wait(struct arn_tcp_conn *c);
/* The worker's list of out-of-order queues, oldest first (tcp_rmem.c). */
void tcp_ooo_track(struct arn_tcp_conn *c);
void tcp_ooo_untrack(struct arn_tcp_conn *c);
/* The worker's list of connections holding a grant (tcp_rmem.c). */
void tcp_rmem_track(struct arn_tcp_conn *c);
void tcp_rmem_untrack(struct arn_tcp_conn *c);
/* The mbufs a connection with @p rcvbuf may hold in rcvq + oooq. */
uint32_t tcp_rmem_budget(const struct arn_tcp_worker *wk, uint32_t rcvbuf);
/* A free block, or NULL (counted). @p passive: for a client's connection,
 * which may not take the last max_connections / 8 blocks (kept for active
 * opens: upstream connections). */
struct arn_tcp_conn *tcp_conn_alloc(struct arn_tcp_worker *wk, bool passive);
void tcp_conn_init_common(struct arn_tcp_worker *wk, struct arn_tcp_conn *c, uint32_t laddr,
			  uint16_t lport, uint32_t raddr, uint16_t rport, enum arn_tcp_cc cc);
struct arn_tcp_conn *tcp_lookup(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport,
				uint32_t raddr, uint16_t rport);
/* The flow table's hash of a 4-tuple: the one every connection and
 * TIME_WAIT record is filed and found by (tcp_conn.c, tcp_lookup_inline).
 * Keyed by the worker's secret, since a client chooses its address and
 * port (and spoofs them in SYNs, each a half-open connection in the
 * table): with the unkeyed CRC32C it was, anyone could compute tuples
 * that share a bucket (CRC is linear: a seed changes no collision), and
 * one chain of a backlog's half-open connections made every lookup in it
 * walk them all. Thorup's vector multiply-shift ("High speed hashing for
 * integers and strings", 2.3): with random 64-bit keys, the high 32 bits
 * of a0 + a1 x1 + a2 x2 + a3 x3 (mod 2^64) over 32-bit words are strongly
 * universal, and so is any subset of them (the low bits hmask takes).
 * Three multiplies that do not wait on each other, where two CRC32
 * instructions did. */
static inline uint32_t tcp_flow_hash(const struct arn_tcp_worker *wk, uint32_t laddr,
				     uint16_t lport, uint32_t raddr, uint16_t rport)
{
	const uint64_t *k = wk->hkey;
	uint64_t h = k[0] + k[1] * raddr + k[2] * laddr + k[3] * (((uint32_t)lport << 16) | rport);
	return (uint32_t)(h >> 32);
}
/* tcp_lookup inline, for tcp_input: every segment received looks its
 * connection up, and the call with its five arguments cost a fifth of the
 * lookup. */
static inline __attribute__((always_inline)) struct arn_tcp_conn *
tcp_lookup_inline(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport, uint32_t raddr,
		  uint16_t rport)
{
	struct arn_tcp_conn *c =
	    wk->htab[tcp_flow_hash(wk, laddr, lport, raddr, rport) & wk->hmask];
	for (; c; c = c->hnext)
		if (c->raddr == raddr && c->rport == rport && c->lport == lport &&
		    c->laddr == laddr)
			return c;
	return NULL;
}
void tcp_hash_insert(struct arn_tcp_worker *wk, struct arn_tcp_conn *c);
struct arn_tcp_listener *tcp_listener_find(struct arn_tcp_worker *wk, uint32_t addr, uint16_t port);
void tcp_set_state(struct arn_tcp_conn *c, int state);
/* End the connection now (state CLOSED): timers off, out of the flow table,
 * on_close scheduled with @p reason if the application knows it, block
 * freed at the next poll. */
void tcp_conn_drop(struct arn_tcp_conn *c, int reason);
/* The connection enters TIME_WAIT: a record keeps what TIME_WAIT needs and
 * the block goes (state CLOSED; on_close as for an orderly close). */
void tcp_enter_time_wait(struct arn_tcp_conn *c);
/* TIME_WAIT records (tcp_conn.c): the record of a 4-tuple, or NULL. */
struct tcp_tw *tcp_tw_lookup(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport,
			     uint32_t raddr, uint16_t rport);
void tcp_tw_free(struct arn_tcp_worker *wk, struct tcp_tw *tw);
/* A retransmitted FIN: 2 MSL again from now (and to the list's end). */
void tcp_tw_restart(struct arn_tcp_worker *wk, struct tcp_tw *tw);
/* Free the records whose 2 MSL has passed (oldest first: O(expired)). */
void tcp_tw_expire(struct arn_tcp_worker *wk);
int tcp_tw_pool_init(struct arn_tcp_worker *wk, uint32_t n);
void tcp_schedule_close(struct arn_tcp_conn *c, int reason);
void tcp_process_closeq(struct arn_tcp_worker *wk);
void tcp_q_free(struct tcp_q *q);
/* @p m (one segment) joins the end of @p q. Inline: each segment received
 * in order and each mbuf written joins a queue. */
static inline void tcp_q_append(struct tcp_q *q, struct rte_mbuf *m)
{
	m->next = NULL;
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += m->data_len;
	q->n++;
}

/* A small mbuf is worth copying into a shared one (tcp_rmem.c's collapse). */
static inline bool tcp_mbuf_small(const struct arn_tcp_worker *wk, const struct rte_mbuf *m)
{
	return m->data_len < wk->seg_max / 2;
}

/* ---- tcp_in.c -------------------------------------------------------------------- */
void tcp_input(struct arn_tcp_worker *wk, struct rte_mbuf *m);
void tcp_deliver_eof_if_due(struct arn_tcp_conn *c);

/* ---- tcp_out.c ------------------------------------------------------------------- */
void tcp_output(struct arn_tcp_conn *c);
/* Could tcp_output's send loop send anything: new data or a FIN not yet
 * sent, or a retransmission that RACK (lost_bytes) or RFC 6675 recovery
 * owes? When not, the loop would only compute the pipe and the windows to
 * find nothing; on a keep-alive exchange most calls are such (the ACK of
 * our response, the request that only queues an ACK), and the check after
 * each segment sent saves the loop's last round. */
static inline __attribute__((always_inline)) bool tcp_may_send(const struct arn_tcp_conn *c)
{
	return seq_gt(c->snd_una + c->sndq.bytes, c->snd_max) ||
	       (c->flags & (TF_FIN_QUEUED | TF_FIN_SENT)) == TF_FIN_QUEUED ||
	       c->recovery != TCP_REC_NONE || c->lost_bytes > c->retrans_bytes;
}
int tcp_send_syn(struct arn_tcp_conn *c);
void tcp_send_ack(struct arn_tcp_conn *c);
/* @p s: the segment that earned it (NULL: none), for the per-connection limit */
void tcp_send_challenge_ack(struct arn_tcp_conn *c, const struct tcp_seg *s);
/* One answer from the worker's per-second challenge ACK budget (drawn at
 * random each second, tcp_send_challenge_ack): false when it is spent. */
bool tcp_chack_budget_take(struct arn_tcp_worker *wk);
void tcp_send_rst_conn(struct arn_tcp_conn *c);
/* RST in reply to @p s for which there is no connection (RFC 9293 3.10.7.1) */
void tcp_send_rst_reply(struct arn_tcp_worker *wk, const struct tcp_seg *s);
/* a segment with no state behind it (SYN-ACK with a cookie) */
void tcp_send_synack_cookie(struct arn_tcp_worker *wk, const struct tcp_seg *s, uint32_t isn,
			    uint32_t tsval, uint16_t mss, int ws, bool sack);
void tcp_send_probe(struct arn_tcp_conn *c); /* zero-window / keepalive probe */
/* Our last ACK again, for a segment to a 4-tuple in TIME_WAIT. */
void tcp_send_tw_ack(struct arn_tcp_worker *wk, const struct tcp_tw *t);
uint16_t tcp_adv_mss(struct arn_tcp_worker *wk, uint32_t raddr);
/* The payload per segment for a peer that announced MSS @p peer_mss (0:
 * none, RFC 9293's 536), with @p ts timestamps on every segment: the
 * smaller of the peer's and ours, raised to TCP_MIN_SND_MSS before the
 * options are taken off (so it never wraps), and never more than one mbuf
 * holds. Always in [TCP_MIN_SND_MSS - 12, wk->seg_max]. */
uint16_t tcp_mss_clamp(const struct arn_tcp_worker *wk, uint32_t peer_mss, uint32_t raddr, bool ts);
/* Our timestamp clock for @p c (RFC 7323: milliseconds, offset per
 * connection). Inline: read for every segment sent and every ACK. */
static inline uint32_t tcp_ts_now(const struct arn_tcp_conn *c)
{
	return (uint32_t)c->wk->now_ms + c->ts_offset;
}
/* The work a passed retransmission timer does (tcp_timeout.c calls it). */
bool tcp_tlp_send(struct arn_tcp_conn *c);
/* The probe's retransmission alone: the last segment sent (RFC 8985 7.3),
 * or the first retransmission not SACKed (tcp_rack_rxt_probe_ok). */
bool tcp_tlp_resend(struct arn_tcp_conn *c);

/* ---- tcp_timeout.c ---------------------------------------------------------------- */
/* Run what is due on the wheel up to @p now_ms. */
void tcp_timer_run(struct arn_tcp_worker *wk, uint64_t now_ms);
void tcp_retransmit_timeout(struct arn_tcp_conn *c);
void tcp_tlp_fire(struct arn_tcp_conn *c);

/* ---- tcp_timer.c ------------------------------------------------------------------ */
/* tcp_timer_update, its inline tcp_timer_armed, tcp_rtt_update: tcp_timer.h */
void tcp_timer_cancel_all(struct arn_tcp_conn *c);
/* Unlink and return (through xnext) the connections of slot @p t due by @p now. */
struct arn_tcp_conn *tcp_timer_due(struct arn_tcp_worker *wk, uint64_t t, uint64_t now);
void tcp_rexmt_arm(struct arn_tcp_conn *c);

/* ---- tcp_sack.c -------------------------------------------------------------------- */
void tcp_sb_update(struct arn_tcp_conn *c, const struct tcp_seg *s);
void tcp_sb_trim(struct arn_tcp_conn *c);
void tcp_sb_clear(struct arn_tcp_conn *c);
bool tcp_sb_is_lost(const struct arn_tcp_conn *c, uint32_t seq);
void tcp_sb_update_lost_edge(struct arn_tcp_conn *c);
/* RFC 6675's pipe from the scoreboard (tcp_pipe() chooses it without RACK) */
uint32_t tcp_sb_pipe(const struct arn_tcp_conn *c);
/* Next hole to retransmit at or above max(high_rxt, snd_una) and below
 * @p limit: true with [*start, *end). */
bool tcp_sb_next_hole(const struct arn_tcp_conn *c, uint32_t limit, uint32_t *start, uint32_t *end);
/* Insert a payload segment (single mbuf, data = payload, seq @p seq) into
 * the out-of-order queue; trims overlaps. Returns false if it was dropped. */
bool tcp_ooo_insert(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t seq);
/* Move what became in order from the out-of-order queue to rcvq. */
uint32_t tcp_ooo_pull(struct arn_tcp_conn *c);
/* ---- tcp_ooo.c: the out-of-order queue's index (its inlines: tcp_ooo.h) ---- */
/* The out-of-order queue's indexes forget everything (its mbufs are the
 * caller's to free): a prune, the connection's end. */
void tcp_ooo_clear(struct arn_tcp_conn *c);
/* tcp_rmem.c's collapse replaces oooq's mbufs from @p first up to @p
 * after (excluded) with fewer copies (its runs stay): their nodes go,
 * and @return whether they had any (the mbufs indexed, tcp_ooo.h's
 * tcp_ooo_index_all); if so, once the copies @p first_new... are in
 * their place, tcp_ooo_index_run indexes them. O(k log n) for k mbufs. */
bool tcp_ooo_unindex(struct arn_tcp_conn *c, struct rte_mbuf *first, struct rte_mbuf *after);
void tcp_ooo_index_run(struct arn_tcp_conn *c, struct rte_mbuf *first_new, struct rte_mbuf *after);
/* The worker's index nodes (after tcp_rmem_init, which sets the bounds
 * they are sized by; wk_free frees them); 0 or -ENOMEM. */
int tcp_ooo_nodes_init(struct arn_tcp_worker *wk);
/* Do the indexes match the queue (tests and fuzz_tcp: O(n))? */
bool tcp_ooo_consistent(const struct arn_tcp_conn *c);
/* ---- tcp_sack.c again: the SACK blocks we send ---- */
void tcp_rsack_note(struct arn_tcp_conn *c, uint32_t start, uint32_t end);
/* RFC 2883 section 4: the block holding a D-SACK above the ACK [start,
 * end) goes to the front, so the D-SACK is followed by it. */
void tcp_rsack_front(struct arn_tcp_conn *c, uint32_t start, uint32_t end);
void tcp_rsack_trim(struct arn_tcp_conn *c);
/* SACK blocks that fit in one ACK beside our other options. */
unsigned tcp_rsack_fit(const struct arn_tcp_conn *c);
/* Must the owed ACK go out before more out-of-order data is noted? True
 * when one more SACK block would push a change not yet reported out of
 * the blocks an ACK carries, or a DSACK waits (one per ACK). */
bool tcp_rsack_ack_due(const struct arn_tcp_conn *c);
/* An ACK carried the first @p n blocks: they are reported. */
static inline void tcp_rsack_sent(struct arn_tcp_conn *c, unsigned n)
{
	c->rsack_dirty &= (uint8_t) ~((1u << n) - 1);
}

/* ---- tcp_rack.c --------------------------------------------------------------------- */
/* Bytes in flight: tcp_pipe() in tcp_rack.h. */
static inline bool tcp_rack_on(const struct arn_tcp_conn *c)
{
	return (c->flags & (TF_SACK_OK | TF_RACK_OFF)) == TF_SACK_OK;
}
/* Does the congestion control read delivery rate samples (on_sample:
 * BBR)? Nothing else reads them or the app-limited mark (C.app_limited),
 * so for the others (CUBIC, NewReno) neither is kept: process_ack does
 * not reset or finish c->rs, and tcp_output does not check whether the
 * application limits the flow (six checks a request-response exchange).
 * The congestion control is chosen before the first segment of data and
 * never changes after. */
static inline bool tcp_rate_on(const struct arn_tcp_conn *c)
{
	return c->cc->on_sample != NULL;
}
/* New data went out: tcp_txr_sent in tcp_rack.h. */
/* The first record that is lost and not yet retransmitted, cut to at most
 * @p room bytes (the record is split): its index with [*start, *end), or
 * TXR_NIL. tcp_txr_rexmit() marks it once it went out. */
uint32_t tcp_rack_next_lost(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end);
void tcp_txr_rexmit(struct arn_tcp_conn *c, uint32_t idx);
/* The rate sample of the ACK just processed is complete: c->rs. */
void tcp_rate_sample_end(struct arn_tcp_conn *c, uint32_t prior_in_flight);
/* The application has nothing more to send (draft's C.app_limited). */
void tcp_rate_check_app_limited(struct arn_tcp_conn *c);
/* ACK processing, after snd_una moved from @p old_una to s->ack (or not):
 * DSACK, delivered records, RACK state, TLP episode, loss detection.
 * @p sack_new: some SACK block was not in the scoreboard before this ACK
 * (tcp_rack_sack_is_new(), asked before tcp_sb_update()). */
void tcp_rack_on_ack(struct arn_tcp_conn *c, const struct tcp_seg *s, uint32_t old_una,
		     bool sack_new);
bool tcp_rack_sack_is_new(const struct arn_tcp_conn *c, const struct tcp_seg *s);
/* The tail record cut to its last @p room bytes, for a loss probe: its
 * index and range, or TXR_NIL; tcp_txr_probed() once it went out. */
uint32_t tcp_txr_tail_probe(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end);
void tcp_txr_probed(struct arn_tcp_conn *c, uint32_t idx);
/* May a loss probe go in recovery or with SACKed data out: everything
 * RACK called lost has been retransmitted, its reordering timer is off,
 * and no new segment can go (nothing left unsent, or cwnd or the peer's
 * window without room for one)? */
bool tcp_rack_rxt_probe_ok(const struct arn_tcp_conn *c);
/* The first retransmission not yet SACKed, cut to @p room bytes, for that
 * probe: its index and range, or TXR_NIL; tcp_txr_probed() once sent. */
uint32_t tcp_txr_rxt_probe(struct arn_tcp_conn *c, uint32_t room, uint32_t *start, uint32_t *end);

/* Loss recovery (fast retransmit / RACK) starts: ssthresh, and PRR
 * (RFC 9937) to bring cwnd down to it; the first retransmission may go at
 * once. */
void tcp_enter_recovery(struct arn_tcp_conn *c);
/* PRR's step for one ACK in fast recovery (RFC 9937, PRR-SSRB): @p
 * delivered bytes newly ACKed or SACKed. Sets cwnd to pipe plus what may
 * be sent now. */
void tcp_prr_ack(struct arn_tcp_conn *c, uint32_t delivered);
/* Recovery ended with a full ACK. */
void tcp_exit_recovery(struct arn_tcp_conn *c);
/* Run RACK loss detection; enter recovery on new losses; arm the
 * reordering timer. */
void tcp_rack_detect(struct arn_tcp_conn *c);
void tcp_rack_timeout(struct arn_tcp_conn *c);
/* RTO: everything unSACKed is lost. */
void tcp_rack_mark_all_lost(struct arn_tcp_conn *c);
uint32_t tcp_rack_pipe(const struct arn_tcp_conn *c);
/* Arm the retransmission timer, or the tail loss probe timer when RACK may
 * use one (RFC 8985 7.2). */
void tcp_rexmt_arm_pto(struct arn_tcp_conn *c);
/* New data went out: tcp_rexmt_new_data in tcp_rack.h. */
void tcp_rexmt_new_data_full(struct arn_tcp_conn *c);
/* A probe went: the time to a second one in ms, or 0 for none. */
uint64_t tcp_tlp_again_ms(const struct arn_tcp_conn *c);
/* A new congestion response starts (loss recovery or RTO): remember what
 * to restore if DSACKs prove it spurious. */
void tcp_undo_begin(struct arn_tcp_conn *c);
/* The receiver side: @p start..@p end arrived again; report it (RFC 2883). */
static inline void tcp_dsack_note(struct arn_tcp_conn *c, uint32_t start, uint32_t end)
{
	if (!(c->flags & TF_SACK_OK) || !seq_lt(start, end))
		return;
	c->dsack.start = start;
	c->dsack.end = end;
	c->flags |= TF_DSACK;
}

/* ---- tcp_rmem.c --------------------------------------------------------------------- */
void tcp_rmem_init(struct arn_tcp_worker *wk, struct rte_mempool *pool);
/* The window scale we offer: the smallest that lets the most the receive
 * buffer may grow to be advertised (chosen once, at the SYN). */
static inline uint8_t tcp_rcv_wscale(const struct arn_tcp_worker *wk)
{
	uint32_t most = RTE_MAX(wk->rcvbuf, wk->rcvbuf_max);
	uint8_t ws = 0;
	while (ws < 14 && (most >> ws) > 65535)
		ws++;
	return ws;
}
/* The connection is established: autotuning's first measurement starts. */
void tcp_rcv_space_init(struct arn_tcp_conn *c);
/* The application read: grow the receive buffer if it read more in the
 * last round trip than in the one before (Linux's tcp_rcv_space_adjust).
 * For a read that may do something: tcp_api.c's inline test before the
 * call leaves out those that cannot. */
void tcp_rcv_space_adjust_slow(struct arn_tcp_conn *c);
/* Autotuning's measurement of @p c's reading has nothing to give yet: no
 * receiver RTT sample (a keep-alive exchange's short segments never give
 * one: tcp_in.c's rcv_rtt_measure takes full segments only), or less than
 * a round trip since it began. */
static inline bool tcp_rcv_space_too_soon(const struct arn_tcp_conn *c)
{
	return c->rcv_rtt8_us == 0 || c->wk->now_us - c->rcvq_space_us < c->rcv_rtt8_us >> 3;
}
/* A connection going gives back what autotuning granted it (the worker's
 * gauge of grown budgets). Inline here, not in tcp_rmem.c: tcp_conn.c's
 * free path calls it, and tcp_rmem.c already calls into tcp_conn.c. */
static inline void tcp_rmem_ungrant(struct arn_tcp_conn *c)
{
	c->wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS] -= c->rmem_grant;
	c->rmem_grant = 0;
}
/* The mbufs a send buffer grown by @p grown bytes may pin beyond its base:
 * a reference (arn_tcp_write_ref) of at least seg_max / 2 bytes pins two,
 * the send queue's worst case (arn_tcp.h). */
static inline uint32_t tcp_smem_cost(const struct arn_tcp_worker *wk, uint32_t grown)
{
	uint32_t half = wk->seg_max / 2;
	return 2 * (uint32_t)(((uint64_t)grown + half - 1) / half);
}
/* Grow @p c's send buffer towards @p want bytes (at most sndbuf_max),
 * within what the worker may still grant (Linux's tcp_sndbuf_expand);
 * the caller has found the buffer, not cwnd, holding the sender back. */
void tcp_sndbuf_expand(struct arn_tcp_conn *c, uint32_t want);
/* @p c's send buffer goes back to the worker's sndbuf and its grant to the
 * worker's bound: its send queue emptied, or it goes. Inline here, as
 * tcp_rmem_ungrant, for tcp_conn.c's free path and tcp_in.c's ACKs. */
static inline void tcp_smem_ungrant(struct arn_tcp_conn *c)
{
	c->wk->cnt[ARN_TCP_C_SNDBUF_GROWN_MBUFS] -= c->smem_grant;
	c->smem_grant = 0;
	c->sndbuf = c->wk->sndbuf;
}
/* The window to advertise: rcvbuf less what waits, receiver SWS avoidance,
 * never shrinking what was offered. Inline: every segment sent asks. */
static inline uint32_t tcp_rcv_window(const struct arn_tcp_conn *c)
{
	uint32_t used = c->rcvq.bytes;
	uint32_t space = c->rcvbuf > used ? c->rcvbuf - used : 0;
	uint32_t max = 65535u << c->rcv_ws;
	if (space > max)
		space = max;
	uint32_t old = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	/* Receiver SWS avoidance (RFC 9293 3.8.6.2.2): move the right edge
	 * only by at least min(buffer/2, MSS). */
	if (space > old && space - old < RTE_MIN(c->rcvbuf / 2, (uint32_t)c->mss))
		space = old;
	/* Never shrink what was offered. */
	if (space < old)
		space = old;
	return space;
}
/* May one more mbuf join @p c's receive queues (@p in_order: at rcv_nxt)?
 * Collapses and prunes to make room; false (counted) when it may not. */
bool tcp_rmem_admit(struct arn_tcp_conn *c, bool in_order);
/* Pool pressure so low that new connections are refused (counted). */
bool tcp_rmem_refuse_new(struct arn_tcp_worker *wk);
/* Once per poll: read the pool, prune out-of-order queues under pressure. */
void tcp_rmem_poll(struct arn_tcp_worker *wk);
/* Free mbufs in the worker's pool, as rte_mempool_avail_count counts them. */
unsigned tcp_rmem_avail(const struct arn_tcp_worker *wk);
/* Drop @p c's whole out-of-order queue (and the SACK blocks for it). */
void tcp_ooo_prune(struct arn_tcp_conn *c);

/* ---- tcp_cookie.c -------------------------------------------------------------------- */
uint64_t tcp_siphash(const uint64_t key[2], const void *data, size_t len);
uint32_t tcp_isn(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport, uint32_t raddr,
		 uint16_t rport);
uint32_t tcp_cookie_make(struct arn_tcp_worker *wk, const struct tcp_seg *s, uint16_t mss,
			 uint16_t *mss_out);
/* @return the MSS encoded in a valid cookie, or 0 */
uint16_t tcp_cookie_check(struct arn_tcp_worker *wk, const struct tcp_seg *s);
void tcp_random(void *buf, size_t len);
/* A fast per-worker pseudo-random number (xorshift64*): for choices that
 * must not be predictable from outside but need no system call per draw. */
static inline uint64_t tcp_rng(struct arn_tcp_worker *wk)
{
	uint64_t x = wk->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	wk->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

#endif
