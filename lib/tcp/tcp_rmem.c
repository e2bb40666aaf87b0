/*
 * Receive memory, counted in mbufs (issue 12, item 2), and the growth of
 * send buffers, counted the same way (7. and 8. below).
 *
 * The receive window counts payload bytes, but every segment pins a whole
 * mbuf of the worker's pool, whatever it carries: a peer that sends
 * one-byte segments holds 2 KB of pool per byte of window. So, as Linux
 * counts an skb's truesize against sk_rcvbuf, each connection's receive
 * and out-of-order queues are also bounded in mbufs, and the pool itself
 * is watched:
 *
 *   1. Per connection, rcvq + oooq may hold at most c->rmem_max mbufs
 *      (twice what a full window of full segments needs). A segment that
 *      would pass it first collapses runs of small mbufs into full ones
 *      (Linux's tcp_collapse), then, for in-order data, drops the
 *      out-of-order queue (tcp_prune_ofo_queue); an out-of-order segment
 *      that still does not fit is dropped.
 *   2. Per worker, out-of-order queues together hold at most
 *      wk->ooo_max mbufs (an eighth of the pool). Past it, the queue that
 *      has held data longest is dropped first: a real loss is repaired
 *      within a round trip, a queue that stays is an attack or a dead
 *      peer.
 *   3. The pool: once a millisecond the worker reads how many mbufs are
 *      free. Under a quarter, every out-of-order queue is dropped and no
 *      new one starts (pressure); under an eighth, new connections are
 *      refused as well (SYNs and SYN-cookie ACKs dropped), so that the
 *      connections already established keep the mbufs they need.
 *
 * Dropping out-of-order data that was SACKed is reneging (RFC 2018 8):
 * allowed, and senders recover by retransmission; our SACK blocks for it
 * are forgotten at once so that we stop reporting what we no longer hold.
 *
 * Receive-buffer autotuning (issue 16; Linux's tcp_rcv_space_adjust,
 * "dynamic right-sizing"): a fixed rcvbuf is either too small for a fast
 * path with loss or reordering (a held segment pins the window's left
 * edge, and the sender stalls once it has sent a window past it) or too
 * large for a gateway's many slow connections. So each connection starts
 * at rcvbuf and, once per receiver round trip, when the application read
 * more than in the round trip before, grows to about twice what it read
 * (more while that grows, as a sender in slow start needs), up to the
 * worker's rcvbuf_max. The window scale is chosen at the SYN for
 * rcvbuf_max. The connection's mbuf budget (1. above) grows with it, and
 * that growth is what the worker bounds:
 *
 *   4. Per worker, connections' budgets together grow by at most
 *      wk->rmem_grow_max mbufs (a quarter of the pool; the gauge
 *      receive_buffer_grown_mbufs); a growth that would pass it is cut to
 *      what is left. While the pool is under pressure (3.) nothing grows.
 *      A connection gives its growth back when it goes, and while it
 *      lives as soon as it stops using it (5.).
 *   5. A grant is kept only by reading (issue 16, the stalled download:
 *      one client that stopped reading kept a grown upstream buffer full,
 *      2,046 of the worker's 2,047 mbufs, and no other connection could
 *      grow). A connection that has had nothing to read for a few round
 *      trips (idle), or whose application has read nothing for as many
 *      while others want the bound (see rmem_contended()), is clamped: its
 *      buffer goes back to rcvbuf, so its advertised right edge stays
 *      where it is (never retracted, RFC 9293 3.8.6) and moves again only
 *      once the base buffer reaches past it; its grant shrinks to what it
 *      holds beyond the base budget and what its offered edge still
 *      promises while its peer sends (rmem_trim()), and follows that down
 *      as it drains. Data held is memory in use: it stays counted against the
 *      bound, and is bounded by the edge the connection had offered when
 *      it stopped (data still arriving within that edge takes from the
 *      bound while there is some, and is dropped, the sender resending
 *      it, when there is none). A growth the bound cuts short first
 *      clamps connections that are not reading (sooner than the few
 *      round trips: see stalled()); so a reading connection grows with
 *      what a stalled one does not hold (Linux, under tcp_mem pressure,
 *      clamps rcv_ssthresh and window_clamp to what a socket holds,
 *      tcp_clamp_window, the same way). Clamped, a buffer grows again only
 *      by reading, measured from scratch.
 *   6. A grown connection's out-of-order queue may pass the worker's
 *      bound (2.) by the connection's own grant: a grown window with a
 *      hole at its left edge holds more above it than an eighth of the
 *      pool (bench/tcp/loss_matrix, 10% reordering: 2,185 segments
 *      dropped and resent in one run), and that memory is already
 *      reserved, and bounded, by the growth bound (4.): the connection's
 *      queues stay within its own budget (1.), and out-of-order queues
 *      together within an eighth of the pool plus the largest grant.
 *
 * Only reading grows a buffer: a peer whose data the application does not
 * read (or that sends out of order) gets no more than rcvbuf's budget.
 *
 * Send-buffer autotuning (issue 16; Linux's tcp_new_space,
 * tcp_should_expand_sndbuf and tcp_sndbuf_expand): a fixed sndbuf caps a
 * connection at sndbuf per round trip (256 KB on a 10 ms path: 25 MB/s),
 * however much cwnd allows. So, on an ACK of new data, when the
 * application waits on a full buffer and cwnd (and the peer's window)
 * has room for more than the buffer holds, not in loss recovery,
 * tcp_in.c asks for twice cwnd, up to the worker's sndbuf_max, as Linux
 * does; at most once a round trip. The memory is bounded as the receive
 * side's:
 *
 *   7. A send buffer grown by G bytes may pin 2 * ceil(G / (seg_max / 2))
 *      mbufs more (tcp_smem_cost: references of half a segment, two mbufs
 *      each, arn_tcp.h), and that is what the worker bounds: connections'
 *      send buffers together grow by at most wk->smem_grow_max mbufs (a
 *      quarter of the pool, apart from the receive side's 4.; the gauge
 *      send_buffer_grown_mbufs). A growth that would pass it is cut to
 *      what is left; while the pool is under pressure (3.) nothing grows.
 *   8. A connection gives its growth back when its send queue empties
 *      (its application had nothing more to send: the next burst grows
 *      it again within a round trip) and when it goes. A peer that stops
 *      acknowledging keeps what it was granted, no more: nothing grows
 *      without an ACK of new data, nor while the peer's window is the
 *      limit.
 */
#include <string.h>

#include <rte_lcore.h>
#include <rte_mempool.h>

#include "tcp_int.h"
#include "tcp_ooo.h"
#include "tcp_rmem.h"

static inline uint32_t mseq(const struct rte_mbuf *m)
{
	return m->hash.usr;
}

static inline bool small(const struct arn_tcp_worker *wk, const struct rte_mbuf *m)
{
	return tcp_mbuf_small(wk, m);
}

#define TCP_RMEM_LCORES_ALL UINT16_MAX

void tcp_rmem_init(struct arn_tcp_worker *wk, struct rte_mempool *pool)
{
	wk->pool = pool;
	uint32_t size = pool ? pool->size : 0;
	wk->ooo_max = RTE_MAX(size / 8, 256u);
	wk->pressure_lo = size / 4;
	wk->pressure_severe = size / 8;
	wk->rmem_grow_max = size / 4;
	wk->smem_grow_max = size / 4;
	/* autotuning off: the buffer stays rcvbuf (sndbuf) */
	if (wk->rcvbuf_max < wk->rcvbuf)
		wk->rcvbuf_max = wk->rcvbuf;
	if (wk->sndbuf_max < wk->sndbuf)
		wk->sndbuf_max = wk->sndbuf;
	/* Only an lcore with a role (EAL, service or registered thread) has a
	 * mempool cache: list them once instead of summing all RTE_MAX_LCORE
	 * caches at every check, as rte_mempool_avail_count does (235
	 * instructions a millisecond; under bench/cost/run's valgrind a
	 * request takes about a millisecond, so that was 235 per request). */
	wk->n_cache_lcores = 0;
	for (unsigned i = 0; i < RTE_MAX_LCORE; i++) {
		if (rte_eal_lcore_role(i) == ROLE_OFF)
			continue;
		if (wk->n_cache_lcores == RTE_DIM(wk->cache_lcores)) {
			wk->n_cache_lcores = TCP_RMEM_LCORES_ALL;
			break;
		}
		wk->cache_lcores[wk->n_cache_lcores++] = (uint16_t)i;
	}
}

/* rte_mempool_avail_count over the listed lcores' caches: the pool's own
 * count (its ops' get_count) plus what those caches hold. */
unsigned tcp_rmem_avail(const struct arn_tcp_worker *wk)
{
	struct rte_mempool *mp = wk->pool;
	/* the stash's are free: the next segment takes one instead of the pool's */
	unsigned count = wk->n_stash;
	if (wk->n_cache_lcores == TCP_RMEM_LCORES_ALL)
		return RTE_MIN(count + rte_mempool_avail_count(mp), mp->size);
	count += rte_mempool_get_ops(mp->ops_index)->get_count(mp);
	if (mp->cache_size)
		for (unsigned i = 0; i < wk->n_cache_lcores; i++)
			count += mp->local_cache[wk->cache_lcores[i]].len;
	return count > mp->size ? mp->size : count;
}

/* ---- collapse ------------------------------------------------------------------ */

/*
 * Copy runs of small mbufs of @p q into as few new mbufs as their bytes
 * need. Out of order (@p ooo), a run also has to be contiguous in
 * sequence, and each new mbuf carries its first byte's sequence, and
 * the connection's index of it (@p oc, tcp_sack.c) follows each run
 * replaced. Stops, keeping what it has not replaced, when the pool is
 * empty, and then clears @p *whole. @p one_run: only the run that
 * starts after @p from (NULL: at the head), if any. @return mbufs saved.
 */
static uint32_t q_collapse(struct arn_tcp_worker *wk, struct tcp_q *q, struct arn_tcp_conn *oc,
			   bool *whole, struct rte_mbuf *from, bool one_run)
{
	bool ooo = oc != NULL;
	uint32_t saved = 0;
	struct rte_mbuf *prev = from, *m = from ? from->next : q->head;
	while (m) {
		struct rte_mbuf *nx = m->next;
		TCP_INC(wk, RCV_COLLAPSE_VISITS);
		if (!small(wk, m) || nx == NULL || !small(wk, nx) ||
		    (ooo && mseq(m) + m->data_len != mseq(nx))) {
			if (one_run)
				return saved;
			prev = m;
			m = nx;
			continue;
		}
		/* the run: m and every small (contiguous) mbuf after it */
		struct rte_mbuf *end = nx;
		uint32_t run_n = 2;
		while (end->next && small(wk, end->next) &&
		       (!ooo || mseq(end) + end->data_len == mseq(end->next))) {
			end = end->next;
			run_n++;
		}
		/* the run's mbufs: the walk goes on after it */
		wk->cnt[ARN_TCP_C_RCV_COLLAPSE_VISITS] += run_n - 1;
		struct rte_mbuf *after = end->next;
		/* copy it into new mbufs */
		struct rte_mbuf *nh = NULL, *nt = NULL;
		uint32_t new_n = 0;
		bool ok = true;
		for (struct rte_mbuf *x = m; x != after; x = x->next) {
			uint32_t off = 0;
			while (off < x->data_len) {
				if (nt == NULL || rte_pktmbuf_tailroom(nt) == 0) {
					struct rte_mbuf *n = arn_net_alloc(wk->lc);
					if (n == NULL) {
						ok = false;
						break;
					}
					if (ooo)
						n->hash.usr = mseq(x) + off;
					n->next = NULL;
					if (nt)
						nt->next = n;
					else
						nh = n;
					nt = n;
					new_n++;
				}
				uint32_t k = RTE_MIN((uint32_t)x->data_len - off,
						     (uint32_t)rte_pktmbuf_tailroom(nt));
				char *dst = rte_pktmbuf_append(nt, (uint16_t)k);
				memcpy(dst, rte_pktmbuf_mtod_offset(x, char *, off), k);
				off += k;
			}
			if (!ok)
				break;
		}
		if (!ok || new_n >= run_n) {
			for (struct rte_mbuf *x = nh; x;) {
				struct rte_mbuf *y = x->next;
				x->next = NULL;
				rte_pktmbuf_free_seg(x);
				x = y;
			}
			if (!ok) {
				*whole = false;
				return saved;
			}
			if (one_run)
				return saved;
			prev = end;
			m = after;
			continue;
		}
		/* splice the new mbufs in place of the run, free the run */
		bool indexed = ooo && tcp_ooo_unindex(oc, m, after);
		for (struct rte_mbuf *x = m; x != after;) {
			struct rte_mbuf *y = x->next;
			x->next = NULL;
			rte_pktmbuf_free_seg(x);
			x = y;
		}
		if (prev)
			prev->next = nh;
		else
			q->head = nh;
		nt->next = after;
		if (after == NULL)
			q->tail = nt;
		if (indexed)
			tcp_ooo_index_run(oc, nh, after);
		q->n -= run_n - new_n;
		saved += run_n - new_n;
		if (one_run)
			return saved;
		prev = nt;
		m = after;
	}
	return saved;
}

/*
 * Can a collapse walk find nothing to copy? A walk that went through both
 * queues leaves no run of small mbufs (it copies each into full mbufs but
 * the last, whose neighbours end the run). A run appears again only where
 * the queues change, and each change is seen here:
 *   - in-order data joins rcvq (tcp_in.c, tcp_ooo_pull): rcv_nxt moves
 *     (it comes back to the same value only after 4 GiB without one
 *     walk; then a walk is missed, which is harmless: the budget holds as
 *     without collapsing, the segment is dropped and sent again);
 *   - a small mbuf joins oooq: tcp_ooo_insert clears rmem_packed (a full
 *     one cannot start or bridge a run);
 *   - the application reads (tcp_api.c): whole mbufs leave rcvq's head,
 *     which makes no new neighbours, and a partial read trims the head,
 *     which may make it small: a run of it and the next, looked at here;
 *   - mbufs freed (a prune, a segment covering them): no new neighbours
 *     but the segment itself, counted above.
 * So this skips exactly the walks that would save nothing: a bulk sender's
 * full segments at the budget used to be walked for each segment above a
 * hole (3.9% of a worker's CPU in a lossy 16 MiB download, 2026-12-05),
 * while tiny segments (an attacker's, test_tcp.c's
 * test_ooo_tiny_segments_bounded) still collapse on the first segment
 * after they are queued.
 */
static bool head_pair(const struct arn_tcp_conn *c)
{
	const struct rte_mbuf *h = c->rcvq.head;
	return h && h->next && small(c->wk, h) && small(c->wk, h->next);
}

static bool packed(const struct arn_tcp_conn *c)
{
	if (!c->rmem_packed || c->rmem_packed_nxt != c->rcv_nxt)
		return false;
	return !head_pair(c);
}

/*
 * A walk costs the queues' length, and may save a single mbuf: a peer
 * alternating tiny segments (one freeing a queued byte and taking its
 * place next to a small mbuf, a run of two; one alone that finds the
 * budget full) made every other segment walk both queues, 5,044
 * instructions a segment at 272 mbufs and 13,507 at 1,064
 * (tests/tcp/bench_tcp_ooo gaps; 870 in order). packed() does not see
 * it: a small mbuf joined the queue each time. So a walk also waits
 * until the changes since the last one (c->rmem_queued: an mbuf joining
 * rcvq or oooq, or a partial read, the only ways a run can appear, as
 * packed() lists) number an eighth of what the queues hold: each walk
 * visits at most 8 mbufs for each change before it, so walks visit at
 * most 8 mbufs per mbuf queued (or partial read) over a connection's
 * life (and what a walk copies is the small mbufs queued since, and one
 * partial mbuf per run it saves an mbuf in), whatever the arrival order
 * and the queues' length. The segment that finds the walk deferred is
 * handled as if it had found nothing (out of order: dropped, counted;
 * in order: the out-of-order queue pruned first), as before when the
 * queues held no run. A legitimate sender does not wait on it: its
 * segments are full (nothing to collapse), or small ones that a walk
 * packs by far more than an eighth, which the mbufs queued to fill the
 * budget again pay for.
 */
#define TCP_RMEM_COLLAPSE_PER_MBUF 8

/* The run of small contiguous mbufs of oooq holding the last small mbuf
 * queued (c->ooo_small_seq), found in the queue's index: O(log n) and
 * the run's length, which is its mbufs queued since they were last
 * copied (a copy leaves full mbufs, which end runs, and one last).
 * @return mbufs saved. */
static uint32_t ooo_run_collapse(struct arn_tcp_conn *c, bool *whole)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t seq = c->ooo_small_seq;
	if (c->oooq.head == NULL || seq_lt(seq, mseq(c->oooq.head)))
		return 0;
	tcp_ooo_index_all(c);
	struct tcp_ooo_node *n = tcp_ooo_floor(wk, &c->ooo_mbufs, c->ooo_mlast, seq), *p;
	if (n == NULL || !seq_lt(seq, n->end) || !small(wk, n->m))
		return 0; /* gone since (pulled, pruned, covered) */
	while ((p = tcp_ooo_onode(tcp_rb_prev(&n->rb))) != NULL && p->end == n->start &&
	       small(wk, p->m)) {
		TCP_INC(wk, RCV_COLLAPSE_VISITS);
		n = p;
	}
	p = tcp_ooo_onode(tcp_rb_prev(&n->rb));
	return q_collapse(wk, &c->oooq, c, whole, p ? p->m : NULL, true);
}

static void collapse(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	if (packed(c))
		return;
	bool whole = true;
	uint32_t s, o = 0;
	uint32_t since = c->rmem_queued - c->rmem_walk_queued;
	if ((uint64_t)since * TCP_RMEM_COLLAPSE_PER_MBUF < (uint64_t)c->rcvq.n + c->oooq.n) {
		TCP_INC(wk, RCV_COLLAPSE_DEFERRED);
		/* but where the queues changed last is looked at: a partial
		 * read's small head next to a small mbuf, and the run of the
		 * last small mbuf queued out of order (a tiny segment next to
		 * others: a sender of small segments, the gaps above), each
		 * copied alone, which leaves it full mbufs but its last */
		s = head_pair(c) ? q_collapse(wk, &c->rcvq, NULL, &whole, NULL, true) : 0;
		o = ooo_run_collapse(c, &whole);
	} else {
		c->rmem_walk_queued = c->rmem_queued;
		TCP_INC(wk, RCV_COLLAPSE_WALKS);
		s = q_collapse(wk, &c->rcvq, NULL, &whole, NULL, false);
		o = q_collapse(wk, &c->oooq, c, &whole, NULL, false);
		/* cut short by an empty pool: what is left may still be copied */
		c->rmem_packed = whole;
		c->rmem_packed_nxt = c->rcv_nxt;
	}
	wk->cnt[ARN_TCP_C_OOO_MBUFS] -= o;
	if (s + o) {
		wk->cnt[ARN_TCP_C_RCV_COLLAPSED] += s + o;
		/* the receive queue's chain changed under the application:
		 * on_data's contract says it holds no pointer into it */
	}
}

/* ---- the grant's upkeep ---------------------------------------------------------- */

/* A connection's application has stopped reading when it has read
 * nothing, with data to read, for a few of the connection's round trips
 * and at least TCP_RMEM_STALL_MIN_MS (an event loop busy elsewhere for a
 * moment still reads). A connection is idle when it has had nothing to
 * read for as many round trips and at least TCP_RMEM_IDLE_MIN_MS (Linux
 * restarts an idle sender's window after an RTO, at least 200 ms): a
 * keep-alive connection between two responses keeps its growth. A hole
 * that in-order data waits on is neither: the peer is repairing it. When
 * a reading connection finds the worker's bound spent, sooner: nothing
 * read for a round trip, at least TCP_RMEM_RECLAIM_MIN_MS, or a buffer
 * more than half full (its application does not keep up: a trickle of
 * reads would otherwise keep what it grew). */
#define TCP_RMEM_STALL_RTTS 4
#define TCP_RMEM_STALL_MIN_MS 10
#define TCP_RMEM_IDLE_MIN_MS 200
#define TCP_RMEM_RECLAIM_MIN_MS 2
/* Grants looked at once a millisecond, and at most by one growth cut
 * short: the work stays bounded however many connections hold one. */
#define TCP_RMEM_VISIT 4
#define TCP_RMEM_RECLAIM_SCAN 32
/* mbufs taken at once by data arriving within an edge already offered */
#define TCP_RMEM_TAKE 16

static inline uint32_t read_seq(const struct arn_tcp_conn *c)
{
	return c->rcv_nxt - c->rcvq.bytes;
}

static inline uint32_t rcv_offered(const struct arn_tcp_conn *c)
{
	return seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
}

/* Has @p c's application read within the last @p ms? It has if it read
 * since the last look, or waits on a hole (either starts the count
 * again). */
static bool read_within(struct arn_tcp_conn *c, uint64_t ms)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t rs = read_seq(c);
	if (rs != c->rmem_read_seq || (c->rcvq.bytes == 0 && c->oooq.n)) {
		c->rmem_read_seq = rs;
		c->rmem_read_ms = wk->now_ms;
		return true;
	}
	return wk->now_ms - c->rmem_read_ms < ms;
}

/* Is the worker's bound wanted by others than @p c: the pool under
 * pressure, or the other connections' grants more than half of the
 * bound? A connection never crowds out itself: alone on the bound (one
 * may grow to all of it) it keeps its grant, and a newcomer's growth
 * takes it back when it comes (reclaim()). */
static bool rmem_contended(const struct arn_tcp_conn *c)
{
	const struct arn_tcp_worker *wk = c->wk;
	uint64_t others = wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS] - c->rmem_grant;
	return wk->pressure || others > wk->rmem_grow_max / 2;
}

/* The receiver's round-trip estimate in whole milliseconds (0: none yet,
 * or under one). */
static inline uint64_t rcv_rtt_ms(const struct arn_tcp_conn *c)
{
	return (c->rcv_rtt8_us >> 3) / 1000;
}

static bool stalled(struct arn_tcp_conn *c, bool short_of_budget)
{
	uint64_t rtt_ms = rcv_rtt_ms(c);
	if (short_of_budget)
		return !read_within(c, RTE_MAX(rtt_ms, (uint64_t)TCP_RMEM_RECLAIM_MIN_MS)) ||
		       c->rcvq.bytes > c->rcvbuf / 2;
	uint64_t floor = c->rcvq.bytes ? TCP_RMEM_STALL_MIN_MS : TCP_RMEM_IDLE_MIN_MS;
	if (read_within(c, RTE_MAX(TCP_RMEM_STALL_RTTS * rtt_ms, floor)))
		return false;
	/* an application not reading is often waiting on its own sending
	 * direction (an echo, a proxy whose other side is in loss recovery):
	 * what it holds is held either way, and clamping only costs its
	 * window; so unless others want the bound, an idle one only */
	return c->rcvq.bytes == 0 || rmem_contended(c);
}

/* @p more mbufs of the worker's bound join @p c's budget. */
static void grant(struct arn_tcp_conn *c, uint32_t more)
{
	struct arn_tcp_worker *wk = c->wk;
	c->rmem_max += more;
	c->rmem_grant += more;
	wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS] += more;
	if (!c->rmem_listed) {
		c->rmem_read_seq = read_seq(c);
		c->rmem_read_ms = wk->now_ms;
		tcp_rmem_track(c);
	}
}

/* Is @p c's peer sending: in-order data arrived within the idle time
 * (stalled()'s: a few round trips, at least TCP_RMEM_IDLE_MIN_MS)? A peer
 * idle that long, or repairing a hole for that long (retransmission
 * timeouts: its window back to one segment), restarts from a small
 * window (RFC 5681 4.1, Linux's tcp_slow_start_after_idle), which the base
 * budget holds. Out-of-order data alone does not count: a hole nobody
 * fills would keep the promise, and the grant, for as long as it stays. */
static bool sending(const struct arn_tcp_conn *c)
{
	uint64_t idle =
	    RTE_MAX(TCP_RMEM_STALL_RTTS * rcv_rtt_ms(c), (uint64_t)TCP_RMEM_IDLE_MIN_MS);
	return c->wk->now_ms - c->last_rcv_ms < idle;
}

/* A clamped connection gives back the part of its grant that it neither
 * holds nor has promised; once it holds nothing beyond the base budget
 * and its offered edge is the base buffer's own, it has no grant.
 *
 * Promised: the right edge it offered stays where it is (never
 * retracted), so its sender may still send up to it, and a segment
 * dropped there costs more than the memory: the sender, seeing no SACK
 * for it and nothing after it, waits for its retransmission timer, which
 * doubles on each drop (the bench's 16 MiB downloads through a proxy
 * whose upstream connection was clamped while the client drained it: 138
 * in-order drops and requests of 8.5 s against 0.25 s at the median). So
 * the grant keeps what the offered edge still needs in full segments,
 * and shrinks as that data arrives and is read, or all at once when the
 * peer has gone idle (sending()). A sender of smaller
 * segments is served by rmem_take() (the worker's bound, while it lasts)
 * and by collapsing, as before. Under pool pressure the promise yields:
 * the pool is what every connection needs. */
static void rmem_trim(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t base = c->rmem_max - c->rmem_grant;
	uint32_t held = c->rcvq.n + c->oooq.n;
	uint32_t keep = RTE_MAX(base, held);
	uint32_t offered = rcv_offered(c);
	if (offered && !wk->pressure && sending(c)) {
		uint32_t mss = c->mss ? c->mss : 536;
		/* out-of-order data lies within the offered edge: what it
		 * holds counts once */
		uint32_t ahead = offered > c->oooq.bytes ? offered - c->oooq.bytes : 0;
		uint64_t need = (uint64_t)held + (ahead + mss - 1) / mss;
		if (need > keep)
			keep = (uint32_t)RTE_MIN((uint64_t)c->rmem_max, need);
	}
	if (keep < c->rmem_max) {
		uint32_t give = c->rmem_max - keep;
		c->rmem_max = keep;
		c->rmem_grant -= give;
		wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS] -= give;
		wk->cnt[ARN_TCP_C_RCVBUF_SHRUNK_MBUFS] += give;
	}
	if (c->rmem_grant == 0) {
		c->rmem_clamped = false;
		tcp_rmem_untrack(c);
	}
}

/* @p c's application stopped reading (or has nothing to read): its
 * buffer goes back to the base rcvbuf, which holds the advertised right
 * edge where it is (tcp_rcv_window never retracts it, and moves it again
 * only once the base buffer reaches past it), and autotuning starts
 * again from scratch, as for a new connection: only reading grows it. */
static void rmem_clamp(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	if (!c->rmem_clamped) {
		c->rmem_clamped = true;
		TCP_INC(wk, RCVBUF_CLAMPED);
		c->rcvbuf = wk->rcvbuf;
		c->rcvq_space = RTE_MIN(c->rcvbuf, 10u * c->mss);
		c->rcvq_space_seq = read_seq(c);
		c->rcvq_space_us = wk->now_us;
	}
	rmem_trim(c);
}

/* The head of the worker's list goes to its tail: looked at last. */
static void rotate(struct arn_tcp_conn *c)
{
	tcp_rmem_untrack(c);
	tcp_rmem_track(c);
}

/* The worker's bound is spent and @p c, reading, wants @p want more
 * mbufs: clamp the grants of connections not reading, for as many as
 * that. @return mbufs given back. */
static uint32_t reclaim(struct arn_tcp_conn *c, uint32_t want)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t freed = 0;
	for (unsigned i = 0; i < TCP_RMEM_RECLAIM_SCAN && wk->rmem.head && freed < want; i++) {
		struct arn_tcp_conn *x = wk->rmem.head;
		rotate(x);
		if (x == c)
			continue;
		uint32_t had = x->rmem_grant;
		if (x->rmem_clamped) {
			rmem_trim(x);
		} else if (stalled(x, true)) {
			rmem_clamp(x);
			TCP_INC(wk, RCVBUF_RECLAIMED);
		}
		freed += had - x->rmem_grant;
	}
	return freed;
}

/* Once a millisecond: a few grants are looked at, oldest look first. A
 * connection not reading for a few round trips is clamped (an idle one
 * holds nothing: its whole grant goes back); a clamped one gives back
 * what it drained. */
static void rmem_visit(struct arn_tcp_worker *wk)
{
	for (unsigned i = 0; i < TCP_RMEM_VISIT && wk->rmem.head; i++) {
		struct arn_tcp_conn *x = wk->rmem.head;
		rotate(x);
		if (x->rmem_clamped)
			rmem_trim(x);
		else if (stalled(x, false))
			rmem_clamp(x);
	}
}

/* Data arrives within a right edge offered before the connection was
 * clamped, and its budget is full: the edge was promised, so the data is
 * taken while the worker's bound allows (as much as the edge needs, at
 * most), and counts against it as long as it is held. @return room made. */
static bool rmem_take(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t edge = c->rcvq.bytes + rcv_offered(c);
	if (edge <= c->rcvbuf || wk->pressure)
		return false; /* the edge is the buffer's own: its budget covers it */
	uint32_t promised = tcp_rmem_budget(wk, edge);
	if (c->rmem_max >= promised)
		return false;
	uint64_t granted = wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS];
	if (granted >= wk->rmem_grow_max)
		return false;
	uint32_t more = RTE_MIN(wk->rmem_grow_max - (uint32_t)granted, promised - c->rmem_max);
	grant(c, RTE_MIN(more, (uint32_t)TCP_RMEM_TAKE));
	return true;
}

/* ---- autotuning ----------------------------------------------------------------- */

void tcp_rcv_space_init(struct arn_tcp_conn *c)
{
	/* Linux's tcp_init_buffer_space: an initial window's worth */
	c->rcvq_space = RTE_MIN(c->rcvbuf, 10u * c->mss);
	c->rcvq_space_seq = c->rcv_nxt - c->rcvq.bytes;
	c->rcvq_space_us = c->wk->now_us;
}

/* Grow @p c's buffer towards @p want bytes, within what the worker may
 * still grant. @return false if it got less than it wanted. */
static bool rcvbuf_grow(struct arn_tcp_conn *c, uint32_t want)
{
	struct arn_tcp_worker *wk = c->wk;
	if (wk->pressure) {
		TCP_INC(wk, RCVBUF_GROW_LIMITED);
		return false;
	}
	uint64_t granted = wk->cnt[ARN_TCP_C_RCVBUF_GROWN_MBUFS];
	uint32_t left = granted < wk->rmem_grow_max ? wk->rmem_grow_max - (uint32_t)granted : 0;
	uint32_t need = tcp_rmem_budget(wk, want);
	bool ok = true;
	if (need > c->rmem_max + left) {
		/* connections not reading give back first */
		left += reclaim(c, need - c->rmem_max - left);
	}
	if (need > c->rmem_max + left) {
		/* the most the budget tcp_rmem_budget gives for rmem_max + left */
		uint64_t full = (c->rmem_max + left - 8) / 2;
		want = (uint32_t)RTE_MIN((uint64_t)want, full * wk->seg_max);
		TCP_INC(wk, RCVBUF_GROW_LIMITED);
		if (want <= c->rcvbuf)
			return false;
		need = tcp_rmem_budget(wk, want);
		ok = false;
	}
	c->rcvbuf = want;
	if (need > c->rmem_max)
		grant(c, need - c->rmem_max);
	/* it reads again */
	c->rmem_clamped = false;
	c->rmem_read_seq = read_seq(c);
	c->rmem_read_ms = wk->now_ms;
	TCP_INC(wk, RCVBUF_GROWN);
	return ok;
}

void tcp_rcv_space_adjust_slow(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	bool clamped = c->rmem_clamped;
	if (clamped)
		rmem_trim(c); /* what it read goes back */
	if (c->rcvbuf >= wk->rcvbuf_max || tcp_rcv_space_too_soon(c))
		return;
	uint32_t read_seq = c->rcv_nxt - c->rcvq.bytes;
	uint32_t copied = read_seq - c->rcvq_space_seq;
	if (clamped && wk->now_us - c->rcvq_space_us > c->rcv_rtt8_us >> 2) {
		/* the first read after a pause: what it drained was held
		 * over many round trips and says nothing of the rate it
		 * reads at; that is measured from now on */
		c->rcvq_space_seq = read_seq;
		c->rcvq_space_us = wk->now_us;
		return;
	}
	if (copied > c->rcvq_space) {
		/* Linux's comment: twice what was read, to cope with loss;
		 * 16 segments of cushion; and as much again as it grew by,
		 * twice, for a sender whose window still doubles each round
		 * trip (the ACK sent now opens the window for the next) */
		/* no more than the window scale lets us advertise (a peer
		 * without window scaling: 64 KB); capped before the growth
		 * term too, so that its product stays within 64 bits */
		uint64_t cap = RTE_MIN(wk->rcvbuf_max, 65535u << c->rcv_ws);
		uint64_t space = c->rcvq_space ? c->rcvq_space : 1;
		uint64_t win = RTE_MIN(2ull * copied + 16ull * c->mss, cap);
		win += 2 * (win * (copied - space) / space);
		uint32_t want = (uint32_t)RTE_MIN(win, cap);
		/* cut short (memory): the next round trip asks again, from
		 * the same reference, as long as the reader keeps up */
		if (want <= c->rcvbuf || rcvbuf_grow(c, want))
			c->rcvq_space = copied;
	}
	c->rcvq_space_seq = read_seq;
	c->rcvq_space_us = wk->now_us;
}

/* ---- send-buffer autotuning -------------------------------------------------------- */

void tcp_sndbuf_expand(struct arn_tcp_conn *c, uint32_t want)
{
	struct arn_tcp_worker *wk = c->wk;
	want = RTE_MIN(want, wk->sndbuf_max);
	if (want <= c->sndbuf)
		return;
	if (wk->pressure) {
		TCP_INC(wk, SNDBUF_GROW_LIMITED);
		return;
	}
	/* c->smem_grant is always the cost of what the buffer grew by */
	uint64_t granted = wk->cnt[ARN_TCP_C_SNDBUF_GROWN_MBUFS];
	uint32_t left = granted < wk->smem_grow_max ? wk->smem_grow_max - (uint32_t)granted : 0;
	uint32_t need = tcp_smem_cost(wk, want - wk->sndbuf);
	if (need > c->smem_grant + left) {
		/* the most bytes what it holds and what is left cover */
		uint64_t most =
		    wk->sndbuf + (uint64_t)((c->smem_grant + left) / 2) * (wk->seg_max / 2);
		TCP_INC(wk, SNDBUF_GROW_LIMITED);
		if (most <= c->sndbuf)
			return;
		want = (uint32_t)most;
		need = tcp_smem_cost(wk, want - wk->sndbuf);
	}
	wk->cnt[ARN_TCP_C_SNDBUF_GROWN_MBUFS] += need - c->smem_grant;
	c->smem_grant = need;
	c->sndbuf = want;
	TCP_INC(wk, SNDBUF_GROWN);
}

/* ---- admission ------------------------------------------------------------------ */

bool tcp_rmem_admit(struct arn_tcp_conn *c, bool in_order)
{
	struct arn_tcp_worker *wk = c->wk;
	if (!in_order) {
		if (wk->pressure) {
			TCP_INC(wk, OOO_DROPPED_PRESSURE);
			return false;
		}
		/* the worker's bound: the oldest queue goes, if not ours. A
		 * grown connection may pass it by its own grant (6. above) */
		uint64_t max = (uint64_t)wk->ooo_max + c->rmem_grant;
		while (wk->cnt[ARN_TCP_C_OOO_MBUFS] >= max && wk->ooo.head && wk->ooo.head != c)
			tcp_ooo_prune(wk->ooo.head);
		if (wk->cnt[ARN_TCP_C_OOO_MBUFS] >= max) {
			TCP_INC(wk, OOO_DROPPED);
			return false;
		}
	}
	if (c->rcvq.n + c->oooq.n < c->rmem_max)
		return true;
	collapse(c);
	if (c->rcvq.n + c->oooq.n < c->rmem_max || rmem_take(c))
		return true;
	if (!in_order) {
		TCP_INC(wk, OOO_DROPPED);
		return false;
	}
	/* in-order data is worth more than what waits above a hole */
	tcp_ooo_prune(c);
	if (c->rcvq.n < c->rmem_max)
		return true;
	/* A clamped connection whose offered edge the worker's bound no
	 * longer covers (the peer sends again what is dropped); otherwise
	 * cannot happen while the window counts bytes and full mbufs hold
	 * seg_max of them. Not queued: tcp_rmem_admit_in_order's count
	 * taken back. */
	TCP_INC(wk, RCV_DROPPED_MBUFS);
	c->rmem_queued--;
	return false;
}

bool tcp_rmem_refuse_new(struct arn_tcp_worker *wk)
{
	if (!wk->pressure_severe_on)
		return false;
	TCP_INC(wk, CONN_REFUSED_PRESSURE);
	return true;
}

void tcp_rmem_poll(struct arn_tcp_worker *wk)
{
	/* rte_mempool_avail_count() sums every lcore's cache: once a
	 * millisecond is plenty for a pool that drains at most a burst per
	 * poll */
	if (wk->pool == NULL || wk->now_ms == wk->rmem_checked_ms)
		return;
	wk->rmem_checked_ms = wk->now_ms;
	unsigned avail = tcp_rmem_avail(wk);
	bool was = wk->pressure;
	wk->pressure = avail < wk->pressure_lo;
	wk->pressure_severe_on = avail < wk->pressure_severe;
	if (wk->pressure && !was)
		TCP_INC(wk, MEM_PRESSURE);
	if (wk->pressure)
		while (wk->ooo.head)
			tcp_ooo_prune(wk->ooo.head);
	if (wk->rmem.head)
		rmem_visit(wk);
}
