/*
 * SACK, both directions.
 *
 * Sender (RFC 6675): the scoreboard is a sorted array of disjoint SACKed
 * intervals above snd_una. From it come IsLost() (more than
 * (DupThresh - 1) * SMSS bytes SACKed above), the lost edge (every hole
 * below it is lost), pipe, and NextSeg's next hole. A peer without SACK gets
 * the same machinery with duplicate ACKs counted as segments that left the
 * network (c->reno_sacked), as Linux does, which gives RFC 6582 NewReno.
 *
 * Receiver (RFC 2018): the out-of-order queue (sorted single-segment mbufs,
 * sequence in m->hash.usr, indexed by two red-black trees, tcp_ooo.c: its
 * mbufs and its runs) and the blocks to report, most recent first.
 */
#include <string.h>

#include "tcp_int.h"
#include "tcp_ooo.h"

/* ---- scoreboard -------------------------------------------------------------- */

static void sb_recount(struct arn_tcp_conn *c)
{
	uint32_t n = 0;
	for (unsigned i = 0; i < c->n_sb; i++)
		n += c->sb[i].end - c->sb[i].start;
	c->sacked_bytes = n;
}

static void sb_insert(struct arn_tcp_conn *c, uint32_t start, uint32_t end)
{
	unsigned i = 0;
	/* find the first block that ends at or after start */
	while (i < c->n_sb && seq_lt(c->sb[i].end, start))
		i++;
	/* merge every block that touches [start, end) */
	unsigned j = i;
	while (j < c->n_sb && seq_leq(c->sb[j].start, end)) {
		start = seq_min(start, c->sb[j].start);
		end = seq_max(end, c->sb[j].end);
		j++;
	}
	unsigned merged = j - i;
	if (merged == 0) {
		if (c->n_sb == TCP_SB_MAX) {
			/* Full: forget the highest block (it will be SACKed again). */
			if (i == TCP_SB_MAX)
				return;
			c->n_sb--;
		}
		memmove(&c->sb[i + 1], &c->sb[i], (c->n_sb - i) * sizeof(c->sb[0]));
		c->n_sb++;
	} else if (merged > 1) {
		memmove(&c->sb[i + 1], &c->sb[j], (c->n_sb - j) * sizeof(c->sb[0]));
		c->n_sb -= (uint8_t)(merged - 1);
	}
	c->sb[i].start = start;
	c->sb[i].end = end;
}

void tcp_sb_update(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	for (unsigned k = 0; k < s->n_sack; k++) {
		uint32_t st = s->sack[k].start, en = s->sack[k].end;
		/* Ignore nonsense and D-SACKs (RFC 2883: below the cumulative ACK). */
		if (!seq_lt(st, en) || seq_leq(en, c->snd_una) || seq_gt(en, c->snd_max))
			continue;
		if (seq_lt(st, c->snd_una))
			st = c->snd_una;
		sb_insert(c, st, en);
	}
	sb_recount(c);
}

void tcp_sb_trim(struct arn_tcp_conn *c)
{
	unsigned k = 0;
	while (k < c->n_sb && seq_leq(c->sb[k].end, c->snd_una))
		k++;
	if (k) {
		memmove(&c->sb[0], &c->sb[k], (c->n_sb - k) * sizeof(c->sb[0]));
		c->n_sb -= (uint8_t)k;
	}
	if (c->n_sb && seq_lt(c->sb[0].start, c->snd_una))
		c->sb[0].start = c->snd_una;
	sb_recount(c);
}

void tcp_sb_clear(struct arn_tcp_conn *c)
{
	c->n_sb = 0;
	c->sacked_bytes = 0;
}

static uint32_t sacked_above(const struct arn_tcp_conn *c, uint32_t seq)
{
	uint32_t n = 0;
	for (int i = c->n_sb - 1; i >= 0; i--) {
		if (seq_leq(c->sb[i].end, seq))
			break;
		n += c->sb[i].end - seq_max(c->sb[i].start, seq);
	}
	return n;
}

bool tcp_sb_is_lost(const struct arn_tcp_conn *c, uint32_t seq)
{
	return sacked_above(c, seq) > (TCP_DUPTHRESH - 1) * (uint32_t)c->mss;
}

void tcp_sb_update_lost_edge(struct arn_tcp_conn *c)
{
	uint32_t sum = 0;
	for (int i = c->n_sb - 1; i >= 0; i--) {
		sum += c->sb[i].end - c->sb[i].start;
		if (sum > (TCP_DUPTHRESH - 1) * (uint32_t)c->mss) {
			if (seq_gt(c->sb[i].start, c->lost_edge))
				c->lost_edge = c->sb[i].start;
			return;
		}
	}
}

/* Bytes in [a, b) that are not SACKed. */
static uint32_t hole_bytes(const struct arn_tcp_conn *c, uint32_t a, uint32_t b)
{
	if (!seq_lt(a, b))
		return 0;
	uint32_t n = b - a;
	for (unsigned i = 0; i < c->n_sb; i++) {
		uint32_t s = seq_max(c->sb[i].start, a), e = seq_min(c->sb[i].end, b);
		if (seq_lt(s, e))
			n -= e - s;
	}
	return n;
}

uint32_t tcp_sb_pipe(const struct arn_tcp_conn *c)
{
	int64_t flight = (int64_t)(uint32_t)(c->snd_max - c->snd_una);
	int64_t pipe;
	if (c->flags & TF_SACK_OK) {
		pipe = flight - c->sacked_bytes;
		if (c->recovery != TCP_REC_NONE) {
			uint32_t top = seq_min(c->lost_edge, c->snd_max);
			pipe -= hole_bytes(c, c->snd_una, top);
			if (seq_gt(c->high_rxt, c->snd_una))
				pipe += hole_bytes(c, c->snd_una, seq_min(c->high_rxt, c->snd_max));
		}
	} else {
		pipe = flight - (int64_t)c->reno_sacked * c->mss;
		if (c->recovery != TCP_REC_NONE) {
			if (seq_gt(c->lost_edge, c->snd_una))
				pipe -= seq_min(c->lost_edge, c->snd_max) - c->snd_una;
			if (seq_gt(c->high_rxt, c->snd_una))
				pipe += seq_min(c->high_rxt, c->snd_max) - c->snd_una;
		}
	}
	return pipe > 0 ? (uint32_t)pipe : 0;
}

bool tcp_sb_next_hole(const struct arn_tcp_conn *c, uint32_t limit, uint32_t *start, uint32_t *end)
{
	uint32_t x = seq_max(c->high_rxt, c->snd_una);
	uint32_t top = seq_min(limit, c->snd_max);
	for (unsigned i = 0; i < c->n_sb; i++) {
		if (!seq_lt(x, top))
			return false;
		if (seq_lt(x, c->sb[i].start)) {
			*start = x;
			*end = seq_min(c->sb[i].start, top);
			return true;
		}
		if (seq_lt(x, c->sb[i].end))
			x = c->sb[i].end;
	}
	if (!seq_lt(x, top))
		return false;
	*start = x;
	*end = top;
	return true;
}

/* ---- out-of-order queue ---------------------------------------------------------- */

/* Its index, the trees that say where a segment goes and which run is its
 * SACK block, is tcp_ooo.c's (the layer below this file and tcp_rmem.c). */

static inline uint32_t mseq(const struct rte_mbuf *m)
{
	return m->hash.usr;
}

static void ooo_free(struct arn_tcp_conn *c, struct rte_mbuf *m)
{
	c->oooq.bytes -= m->data_len;
	c->oooq.n--;
	c->wk->cnt[ARN_TCP_C_OOO_MBUFS]--;
	m->next = NULL;
	rte_pktmbuf_free_seg(m);
}

/* @p m (sequence @p seq) is queued: counted, and its run (which it
 * made, extended or bridged) is its SACK block. */
static inline void ooo_queued(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t seq,
			      struct tcp_ooo_node *r)
{
	uint32_t end = seq + m->data_len;
	c->wk->cnt[ARN_TCP_C_OOO_MBUFS]++;
	c->rmem_queued++;
	tcp_ooo_track(c);
	if (tcp_mbuf_small(c->wk, m)) {
		c->rmem_packed = false; /* collapse may have a run to copy */
		c->ooo_small_seq = seq; /* where (tcp_rmem.c's ooo_run_collapse) */
	}
	if (r && r->end == seq)
		r->end = end; /* the last run grows: nothing else changes */
	else
		r = tcp_ooo_runs_add(c, seq, end);
	tcp_rsack_note(c, r->start, r->end);
}

/* Append @p m (sequence @p seq) at the queue's tail: nothing queued
 * reaches past its start. Not indexed (tcp_ooo.h's tcp_ooo_index_all): a bulk flight above a
 * hole costs no tree work but its runs'. */
static inline void ooo_append(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t seq)
{
	m->hash.usr = seq;
	tcp_q_append(&c->oooq, m);
	ooo_queued(c, m, seq, c->ooo_rlast);
}

/* @p m (sequence @p seq, not in the queue) joins the queue, indexed
 * (index_all), after @p prev (NULL: first), whose node is @p pn. */
static void ooo_link(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t seq,
		     struct rte_mbuf *prev, struct tcp_ooo_node *pn)
{
	struct tcp_ooo_node *n = tcp_ooo_node_get(c->wk);
	m->hash.usr = seq;
	if (prev == c->oooq.tail) {
		tcp_q_append(&c->oooq, m);
	} else {
		m->next = prev ? prev->next : c->oooq.head;
		if (prev)
			prev->next = m;
		else
			c->oooq.head = m;
		c->oooq.bytes += m->data_len;
		c->oooq.n++;
	}
	n->start = seq;
	n->end = seq + m->data_len;
	n->m = m;
	tcp_ooo_tree_insert_after(&c->ooo_mbufs, &c->ooo_mlast, n, pn);
	ooo_queued(c, m, seq, NULL);
}

/* No queued mbuf holds a byte of [s, e) any more (a refused segment freed
 * those it covered): the SACK blocks kept for the next ACKs lose it too,
 * each cut around it (the least recent dropped if the cuts make more than
 * fit), or they would report bytes we dropped, a reneging (RFC 2018 8) the
 * sender repairs only at its retransmission timeout. */
static void rsack_cut(struct arn_tcp_conn *c, uint32_t s, uint32_t e)
{
	struct tcp_sack_block nb[TCP_RSACK_MAX];
	unsigned n = 0;
	uint8_t dirty = 0;
	for (unsigned i = 0; i < c->n_rsack && n < TCP_RSACK_MAX; i++) {
		struct tcp_sack_block b = c->rsack[i];
		uint8_t d = (uint8_t)((c->rsack_dirty >> i) & 1u);
		if (!seq_lt(b.start, e) || !seq_lt(s, b.end)) {
			dirty |= (uint8_t)(d << n);
			nb[n++] = b;
			continue;
		}
		if (seq_lt(b.start, s)) {
			dirty |= (uint8_t)(d << n);
			nb[n++] = (struct tcp_sack_block){b.start, s};
		}
		if (seq_lt(e, b.end) && n < TCP_RSACK_MAX) {
			dirty |= (uint8_t)(d << n);
			nb[n++] = (struct tcp_sack_block){e, b.end};
		}
	}
	memcpy(c->rsack, nb, n * sizeof(nb[0]));
	c->n_rsack = (uint8_t)n;
	c->rsack_dirty = dirty;
}

/* The nodes a segment may take: its mbuf's, and a run's (a new run, or
 * the part of one left above the hole a refused segment makes). Never
 * short while the bounds tcp_ooo_nodes_init sized them by hold. */
static inline bool nodes_short(struct arn_tcp_worker *wk, struct rte_mbuf *m)
{
	if (likely(wk->ooo_nodes_free_n >= 2))
		return false;
	TCP_INC(wk, OOO_DROPPED);
	rte_pktmbuf_free(m);
	return true;
}

/* tcp_ooo_insert below the queue's tail: overlaps trimmed, placed by
 * searching. */
static __attribute__((noinline)) bool ooo_insert_below(struct arn_tcp_conn *c, struct rte_mbuf *m,
						       uint32_t seq)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t end = seq + m->data_len;
	if (nodes_short(wk, m))
		return false;
	TCP_INC(wk, OOO_WALKS);
	/* the last mbuf starting at or below seq, and the one after */
	tcp_ooo_index_all(c);
	struct tcp_ooo_node *pn = tcp_ooo_floor(wk, &c->ooo_mbufs, c->ooo_mlast, seq);
	struct tcp_ooo_node *cn =
	    tcp_ooo_onode(pn ? tcp_rb_next(&pn->rb) : tcp_rb_first(&c->ooo_mbufs));
	struct rte_mbuf *prev = pn ? pn->m : NULL;
	struct rte_mbuf *cur = cn ? cn->m : NULL;
	if (prev) {
		uint32_t pend = mseq(prev) + prev->data_len;
		if (seq_geq(pend, end)) {
			/* all of it is queued already: report it (RFC 2883),
			 * the block that holds it right after (its section 4) */
			tcp_dsack_note(c, seq, end);
			tcp_rsack_front(c, seq, end);
			TCP_DUP(wk, end - seq);
			rte_pktmbuf_free(m);
			return false;
		}
		if (seq_gt(pend, seq)) {
			tcp_dsack_note(c, seq, pend);
			rte_pktmbuf_adj(m, (uint16_t)(pend - seq));
			seq = pend;
		}
	}
	bool freed = false;
	while (cur && seq_lt(mseq(cur), end)) {
		uint32_t cend = mseq(cur) + cur->data_len;
		if (!(c->flags & TF_DSACK))
			tcp_dsack_note(c, mseq(cur), seq_min(cend, end));
		if (seq_leq(cend, end)) {
			struct rte_mbuf *n = cur->next;
			struct tcp_ooo_node *nn = tcp_ooo_onode(tcp_rb_next(&cn->rb));
			if (prev)
				prev->next = n;
			else
				c->oooq.head = n;
			if (c->oooq.tail == cur)
				c->oooq.tail = prev;
			tcp_ooo_tree_erase(wk, &c->ooo_mbufs, &c->ooo_mlast, cn);
			ooo_free(c, cur);
			cur = n;
			cn = nn;
			freed = true;
			continue;
		}
		rte_pktmbuf_trim(m, (uint16_t)(end - mseq(cur)));
		end = mseq(cur);
		break;
	}
	if (m->data_len == 0) {
		rte_pktmbuf_free(m);
		return false;
	}
	/* the mbuf bounds (tcp_rmem.c), once the overlaps are gone */
	uint64_t collapsed = wk->cnt[ARN_TCP_C_RCV_COLLAPSED];
	if (!tcp_rmem_admit(c, false)) {
		/* the mbufs it covered are gone, and [seq, end) with them */
		if (freed) {
			tcp_ooo_runs_remove(c, seq, end);
			rsack_cut(c, seq, end);
		}
		rte_pktmbuf_free(m);
		return false;
	}
	/* Admission may have collapsed this queue: its mbufs (not its runs:
	 * a collapse copies, it never adds or drops a byte) indexed again
	 * (counted in receive_mbufs_collapsed), the place is looked for
	 * again. Otherwise it changed other connections' queues only (a
	 * prune), and prev, which it did not free, is still the place. */
	if (wk->cnt[ARN_TCP_C_RCV_COLLAPSED] != collapsed) {
		tcp_ooo_index_all(c);
		pn = tcp_ooo_floor(wk, &c->ooo_mbufs, c->ooo_mlast, seq);
	}
	ooo_link(c, m, seq, pn ? pn->m : NULL, pn);
	return true;
}

/*
 * A lossy bulk transfer queues out of order mostly at the tail: one hole,
 * and the sender's whole flight arriving above it in order (500-1,000
 * segments on a fast path). Those are appended to the list, not yet
 * indexed (index_all), their SACK block the last run, which they extend
 * (walking the list for each, to place it, again after admission, and
 * for its block, made a loss episode O(n^2), 2.6% of a worker's CPU in a
 * 16 MiB download through Arion with a few hundred drops per run,
 * 2026-12-05). The rest (a retransmission filling a hole, reordering, an
 * overlap) search the trees, counted in out_of_order_walks.
 */
bool tcp_ooo_insert(struct arn_tcp_conn *c, struct rte_mbuf *m, uint32_t seq)
{
	struct rte_mbuf *t = c->oooq.tail;
	if (t && seq_lt(seq, mseq(t) + t->data_len))
		return ooo_insert_below(c, m, seq);
	/* at or above the tail's end: nothing queued overlaps it */
	if (nodes_short(c->wk, m))
		return false;
	if (!tcp_rmem_admit(c, false)) {
		rte_pktmbuf_free(m);
		return false;
	}
	/* Admission may have collapsed the queue (the tail another mbuf,
	 * its run the same: a collapse copies, it never adds or drops a
	 * byte) or pruned others': the tail is looked at again. */
	t = c->oooq.tail;
	if (likely(t == NULL || seq_geq(seq, mseq(t) + t->data_len))) {
		ooo_append(c, m, seq);
		return true;
	}
	tcp_ooo_index_all(c);
	struct tcp_ooo_node *pn = tcp_ooo_floor(c->wk, &c->ooo_mbufs, c->ooo_mlast, seq);
	ooo_link(c, m, seq, pn ? pn->m : NULL, pn);
	return true;
}

uint32_t tcp_ooo_pull(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t moved = 0, k = 0;
	struct rte_mbuf *m;
	while ((m = c->oooq.head) != NULL && seq_leq(mseq(m), c->rcv_nxt)) {
		c->oooq.head = m->next;
		if (c->oooq.head == NULL)
			c->oooq.tail = NULL;
		c->oooq.bytes -= m->data_len;
		c->oooq.n--;
		wk->cnt[ARN_TCP_C_OOO_MBUFS]--;
		k++;
		uint32_t end = mseq(m) + m->data_len;
		if (seq_leq(end, c->rcv_nxt)) {
			m->next = NULL;
			rte_pktmbuf_free_seg(m);
			continue;
		}
		rte_pktmbuf_adj(m, (uint16_t)(c->rcv_nxt - mseq(m)));
		m->pkt_len = m->data_len;
		tcp_q_append(&c->rcvq, m);
		c->rcv_nxt = end;
		moved += m->data_len;
	}
	if (c->oooq.head == NULL) {
		/* the whole queue (a hole filled): one walk frees the nodes */
		tcp_ooo_clear(c);
		tcp_ooo_untrack(c);
	} else if (k) {
		/* The mbufs gone, those starting at or below rcv_nxt (those
		 * indexed), and the runs they made up: every run starting at
		 * or below it (its mbufs each start where the one before
		 * ends, which rcv_nxt passed). */
		struct tcp_ooo_node *n = tcp_ooo_onode(tcp_rb_first(&c->ooo_mbufs)), *nx;
		for (; n && seq_leq(n->start, c->rcv_nxt); n = nx) {
			nx = tcp_ooo_onode(tcp_rb_next(&n->rb));
			tcp_ooo_tree_erase(wk, &c->ooo_mbufs, &c->ooo_mlast, n);
		}
		for (n = tcp_ooo_onode(tcp_rb_first(&c->ooo_runs)); seq_leq(n->start, c->rcv_nxt);
		     n = nx) {
			nx = tcp_ooo_onode(tcp_rb_next(&n->rb));
			tcp_ooo_tree_erase(wk, &c->ooo_runs, &c->ooo_rlast, n);
		}
	}
	tcp_rsack_trim(c);
	return moved;
}

/* ---- SACK blocks we send ------------------------------------------------------------ */

/* Blocks are kept most recent first (RFC 2018 4), and each remembers
 * whether an ACK has carried it since it changed (rsack_dirty): a change
 * moves a block to the front, so the unreported ones are always the first
 * few, and tcp_rsack_ack_due() has the ACK sent before they would be
 * pushed past what one ACK carries. Coalescing the ACKs of a burst (one
 * per poll) used to lose them: a burst that filled several holes reported
 * only the last three, the sender never learnt the others had arrived and
 * sent them again (issue 16: 9,000 spurious retransmissions from Linux per
 * 100 MB at 5% loss, 95% of them for data never reported). */
void tcp_rsack_note(struct arn_tcp_conn *c, uint32_t start, uint32_t end)
{
	struct tcp_sack_block nb[TCP_RSACK_MAX];
	unsigned n = 0;
	uint8_t dirty = 1;
	nb[n++] = (struct tcp_sack_block){start, end};
	for (unsigned i = 0; i < c->n_rsack && n < TCP_RSACK_MAX; i++) {
		const struct tcp_sack_block *b = &c->rsack[i];
		if (seq_leq(b->start, end) && seq_leq(start, b->end))
			continue; /* merged into the new one */
		if (c->rsack_dirty & (1u << i))
			dirty |= (uint8_t)(1u << n);
		nb[n++] = *b;
	}
	memcpy(c->rsack, nb, n * sizeof(nb[0]));
	c->n_rsack = (uint8_t)n;
	c->rsack_dirty = dirty;
}

void tcp_rsack_front(struct arn_tcp_conn *c, uint32_t start, uint32_t end)
{
	for (unsigned i = 0; i < c->n_rsack; i++) {
		struct tcp_sack_block b = c->rsack[i];
		if (!seq_leq(b.start, start) || !seq_leq(end, b.end))
			continue;
		/* rotated to the front, as Linux's tcp_sack_new_ofo_skb does,
		 * and reported again (dirty) */
		uint8_t d = c->rsack_dirty;
		uint8_t below = (uint8_t)(d & ((1u << i) - 1u));
		uint8_t above = (uint8_t)(d & ~((2u << i) - 1u));
		memmove(&c->rsack[1], &c->rsack[0], i * sizeof(c->rsack[0]));
		c->rsack[0] = b;
		c->rsack_dirty = (uint8_t)(above | (below << 1) | 1u);
		return;
	}
}

void tcp_rsack_trim(struct arn_tcp_conn *c)
{
	unsigned n = 0;
	uint8_t dirty = 0;
	for (unsigned i = 0; i < c->n_rsack; i++) {
		struct tcp_sack_block b = c->rsack[i];
		if (seq_leq(b.end, c->rcv_nxt))
			continue;
		if (seq_lt(b.start, c->rcv_nxt))
			b.start = c->rcv_nxt;
		if (c->rsack_dirty & (1u << i))
			dirty |= (uint8_t)(1u << n);
		c->rsack[n++] = b;
	}
	c->n_rsack = (uint8_t)n;
	c->rsack_dirty = dirty;
	if (c->oooq.head == NULL)
		c->n_rsack = c->rsack_dirty = 0;
}

unsigned tcp_rsack_fit(const struct arn_tcp_conn *c)
{
	unsigned olen = (c->flags & TF_TS_OK) ? 12 : 0;
	return RTE_MIN((TCP_MAX_OPT - olen - 4) / 8, (unsigned)TCP_RSACK_MAX);
}

bool tcp_rsack_ack_due(const struct arn_tcp_conn *c)
{
	if (!(c->flags & TF_SACK_OK))
		return false;
	if (c->flags & TF_DSACK)
		return true;
	/* a dirty block at the last place an ACK reports would leave it
	 * when the next block comes in front */
	return (c->rsack_dirty >> (tcp_rsack_fit(c) - 1)) != 0;
}
