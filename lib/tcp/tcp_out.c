/*
 * Sending: segment construction (header, options, payload copied out of the
 * send queue into one contiguous mbuf, so lib/net and every PMD see a
 * single-segment packet; a connection's Ethernet and IPv4 headers come
 * from its template in lib/net), the send decision (window, cwnd against pipe,
 * RFC 6675 NextSeg), the retransmission timeout, RSTs and probes.
 *
 * Output for a connection is normally deferred: input and the API put the
 * connection on the worker's output list and arn_tcp_worker_poll() runs
 * tcp_output() once per loop, so ACKs for a burst coalesce and data the
 * application wrote in a callback rides on the ACK.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_tcp.h>

#include "arn_log.h"
#include "tcp_int.h"
#include "tcp_timer.h"
#include "tcp_rack.h"
#include "tcp_stash.h"

uint16_t tcp_adv_mss(struct arn_tcp_worker *wk, uint32_t raddr)
{
	uint32_t mtu = arn_net_route_mtu(wk->lc, raddr);
	uint32_t mss = mtu ? mtu - RTE_MIN(mtu, 40u) : TCP_DEFAULT_MSS; /* 0: no route yet */
	mss = RTE_MIN(mss, wk->seg_max);
	return (uint16_t)RTE_MAX(mss, (uint32_t)TCP_MIN_SND_MSS);
}

uint16_t tcp_mss_clamp(const struct arn_tcp_worker *wk, uint32_t peer_mss, uint32_t raddr, bool ts)
{
	uint32_t mss = peer_mss ? peer_mss : TCP_DEFAULT_MSS;
	mss = RTE_MIN(mss, (uint32_t)tcp_adv_mss((struct arn_tcp_worker *)wk, raddr));
	/* Clamp first, then take the options off: in that order no value of
	 * the peer's option can wrap the subtraction (Linux's
	 * __tcp_mtu_to_mss). */
	mss = RTE_MAX(mss, (uint32_t)TCP_MIN_SND_MSS);
	if (ts)
		mss -= 12;
	return (uint16_t)RTE_MIN(mss, wk->seg_max);
}

/* ---- options ------------------------------------------------------------------- */

/* The timestamps option (RFC 7323), led by SACK-permitted or two NOPs:
 * three 32-bit stores. */
static inline unsigned put_ts(uint8_t *p, uint32_t tsval, uint32_t tsecr, bool sack_perm)
{
	static const uint8_t lead[2][4] = {{1, 1, 8, 10}, {4, 2, 8, 10}};
	uint32_t w[3];
	memcpy(&w[0], lead[sack_perm], 4);
	w[1] = rte_cpu_to_be_32(tsval);
	w[2] = rte_cpu_to_be_32(tsecr);
	memcpy(p, w, 12);
	return 12;
}

static unsigned put_syn_opts(uint8_t *p, uint16_t mss, bool sack, bool ts, uint32_t tsval,
			     uint32_t tsecr, int ws)
{
	unsigned n = 0;
	p[n++] = 2;
	p[n++] = 4;
	p[n++] = (uint8_t)(mss >> 8);
	p[n++] = (uint8_t)mss;
	if (ts) {
		n += put_ts(p + n, tsval, tsecr, sack);
	} else if (sack) {
		p[n++] = 1;
		p[n++] = 1;
		p[n++] = 4;
		p[n++] = 2;
	}
	if (ws >= 0) {
		p[n++] = 1;
		p[n++] = 3;
		p[n++] = 3;
		p[n++] = (uint8_t)ws;
	}
	return n;
}

/* ---- raw segment out ------------------------------------------------------------ */

static inline struct rte_mbuf *seg_alloc(struct arn_tcp_worker *wk)
{
	struct rte_mbuf *m = tcp_mbuf_alloc(wk);
	if (m == NULL)
		TCP_INC(wk, OUT_NOMBUF);
	return m;
}

/* @p tos: the IPv4 Type of Service byte (ECT(0) on an ECN connection's new data). */
static void seg_send(struct arn_tcp_worker *wk, struct rte_mbuf *m, unsigned hdr_len, uint32_t src,
		     uint32_t dst, uint8_t tos)
{
	m->l4_len = hdr_len;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4;
	TCP_INC(wk, SEG_OUT);
	if (arn_net_ip4_output_tos(wk->lc, m, src, dst, IPPROTO_TCP, tos) != 0)
		TCP_INC(wk, OUT_DROPPED);
}

/* seg_send() for a segment of connection @p c: through the connection's
 * header template (arn_l4.h), which lib/net builds on the first segment
 * and again whenever the next hop changes. */
static inline __attribute__((always_inline)) void
conn_seg_send(struct arn_tcp_conn *c, struct rte_mbuf *m, unsigned hdr_len, uint8_t tos)
{
	struct arn_tcp_worker *wk = c->wk;
	m->l4_len = hdr_len;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_CKSUM | RTE_MBUF_F_TX_IPV4;
	TCP_INC(wk, SEG_OUT);
	if (arn_net_tcp_output(wk->lc, m, &c->tmpl, c->laddr, c->raddr, tos) != 0)
		TCP_INC(wk, OUT_DROPPED);
}

/* Room for a header of @p hdr_len bytes and @p payload bytes in @p m, or
 * NULL. Checked in 32 bits before anything narrows to the mbuf's 16-bit
 * lengths: a length that does not fit is refused, never wrapped. Inline:
 * xmit calls it for every segment, and out of line its call cost a quarter
 * of its own instructions. */
static inline __attribute__((always_inline)) struct rte_tcp_hdr *
hdr_put(struct rte_mbuf *m, unsigned hdr_len, uint32_t payload)
{
	/* @p m is seg_alloc's, as reset (one segment, no data: data_len and
	 * pkt_len 0), at every call: its room is all after the headroom, and
	 * the lengths are set rather than added to (rte_pktmbuf_append's walk
	 * to the last segment and its second tailroom check are not needed
	 * either). */
	RTE_ASSERT(m->data_len == 0 && m->pkt_len == 0 && m->nb_segs == 1);
	uint32_t room = (uint32_t)m->buf_len - m->data_off;
	if (hdr_len > TCP_HDR_LEN + TCP_MAX_OPT || payload > room || hdr_len + payload > room)
		return NULL;
	uint16_t n = (uint16_t)(hdr_len + payload);
	char *p = rte_pktmbuf_mtod(m, char *);
	m->data_len = n;
	m->pkt_len = n;
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)p;
	th->data_off = (uint8_t)((hdr_len / 4) << 4);
	th->cksum = 0;
	th->tcp_urp = 0;
	return th;
}

/* ---- the send queue --------------------------------------------------------------- */

/* Copy @p len bytes of the send queue starting at sequence @p seq. */
static inline __attribute__((always_inline)) void sndq_copy(struct arn_tcp_conn *c, uint32_t seq,
							    uint8_t *dst, uint32_t len)
{
	struct rte_mbuf *m;
	uint32_t mseq;
	if (c->snd_cur && seq_geq(seq, c->snd_cur_off)) {
		m = c->snd_cur;
		mseq = c->snd_cur_off;
	} else {
		m = c->sndq.head;
		mseq = c->snd_una;
	}
	while (m && seq_geq(seq, mseq + m->data_len)) {
		mseq += m->data_len;
		m = m->next;
	}
	/* The usual segment: all of it in one mbuf (a head the application
	 * wrote, a body piece by reference), one copy without the loop's
	 * state kept across the call. */
	if (likely(m != NULL && len <= (uint32_t)m->data_len - (seq - mseq))) {
		uint32_t off = seq - mseq;
		memcpy(dst, rte_pktmbuf_mtod_offset(m, uint8_t *, off), len);
		/* the queue's last mbuf stays the cursor when all of it is
		 * sent: data the application queues next follows it */
		if (off + len == m->data_len && m->next) {
			mseq += m->data_len;
			m = m->next;
		}
		c->snd_cur = m;
		c->snd_cur_off = mseq;
		return;
	}
	/* Remember where new data continues: the next send starts here, or
	 * after the queue's last mbuf. Without that, a sender that catches
	 * up with its application (a proxy forwarding a download as it
	 * arrives) found no cursor at each new piece and walked the whole
	 * unacknowledged queue from its head: thousands of mbufs a segment
	 * with a grown window, 7% of the worker in bench/proxy/run's
	 * downloads (2026-12-05). */
	while (len > 0 && m) {
		uint32_t off = seq - mseq;
		uint32_t n = RTE_MIN(len, (uint32_t)m->data_len - off);
		memcpy(dst, rte_pktmbuf_mtod_offset(m, uint8_t *, off), n);
		dst += n;
		seq += n;
		len -= n;
		if (off + n == m->data_len) {
			if (m->next == NULL)
				break; /* the last mbuf stays the cursor, as above */
			mseq += m->data_len;
			m = m->next;
		}
	}
	c->snd_cur = m;
	c->snd_cur_off = mseq;
}

static inline __attribute__((always_inline)) uint16_t rcv_wnd_field(struct arn_tcp_conn *c,
								    bool syn)
{
	uint32_t w = tcp_rcv_window(c);
	if (syn)
		return (uint16_t)RTE_MIN(w, 65535u);
	uint32_t adv = w >> c->rcv_ws;
	if (adv > 65535)
		adv = 65535;
	/* never move the right edge left (RFC 9293 3.8.6.2.2): round up */
	if (seq_lt(c->rcv_nxt + (adv << c->rcv_ws), c->rcv_adv) && adv < 65535)
		adv++;
	uint32_t edge = c->rcv_nxt + (adv << c->rcv_ws);
	if (seq_gt(edge, c->rcv_adv))
		c->rcv_adv = edge;
	return (uint16_t)adv;
}

/*
 * Build and send one segment of connection @p c: @p len payload bytes from
 * sequence @p seq (copied from the send queue), flags @p flags.
 * @p clean (a constant): the caller found ECN off, no SACK block or
 * D-SACK owed and no recovery (send_one_ok), so the tests for those fold
 * away.
 * @return 0 or -ENOBUFS.
 * Inline in send_data's new data and send_one, nearly every segment sent,
 * where the flags (ACK, no SYN or RST) fold its tests away; xmit() for the
 * others.
 */
static inline __attribute__((always_inline)) int xmit_body(struct arn_tcp_conn *c, uint32_t seq,
							   uint32_t len, uint8_t flags, bool clean)
{
	struct arn_tcp_worker *wk = c->wk;
	uint8_t opt[TCP_MAX_OPT];
	unsigned olen = 0;
	bool syn = flags & TH_SYN;
	/* The mbuf first: building the options below marks SACK blocks and a
	 * D-SACK reported, which must not happen for a segment that is never
	 * sent (a D-SACK is reported once, RFC 2883). */
	struct rte_mbuf *m = seg_alloc(wk);
	if (m == NULL)
		return -ENOBUFS;
	/* ECN (RFC 3168 6.1): new data goes out ECN-capable, never a
	 * retransmission, a window probe or a pure ACK (6.1.5, 6.1.6), and
	 * the first new segment after a reduction carries CWR. The SYN-ACK
	 * to a SYN that asked for ECN says yes with ECE; our ACKs carry ECE
	 * while a CE is owed its echo. */
	uint8_t tos = 0;
	if (!clean && (c->ecn & TCP_ECN_OK)) {
		if (syn) {
			if (c->state != TCPS_SYN_SENT)
				flags |= TH_ECE;
		} else if (!(flags & TH_RST)) {
			if (len && !seq_lt(seq, c->snd_max) &&
			    !(c->flags & (TF_PERSIST | TF_FORCE))) {
				tos = ARN_IP_ECN_ECT0;
				if (c->ecn & TCP_ECN_CWR)
					flags |= TH_CWR; /* cleared once the segment is built */
			}
			if ((c->ecn & TCP_ECN_ECHO) && (flags & TH_ACK))
				flags |= TH_ECE;
		}
	}
	if (syn) {
		bool offer = c->state == TCPS_SYN_SENT;
		bool sack = offer || (c->flags & TF_SACK_OK);
		bool ts = offer || (c->flags & TF_TS_OK);
		int ws = offer || (c->flags & TF_WS_OK) ? c->rcv_ws : -1;
		olen = put_syn_opts(opt, tcp_adv_mss(wk, c->raddr), sack, ts, tcp_ts_now(c),
				    c->ts_echo, ws);
	} else {
		if (c->flags & TF_TS_OK)
			olen = put_ts(opt, tcp_ts_now(c), c->ts_echo, false);
		bool dsack = (c->flags & TF_DSACK) != 0;
		if (!clean && (c->flags & TF_SACK_OK) && (c->n_rsack || dsack) &&
		    (flags & TH_ACK) && !(flags & TH_RST)) {
			unsigned room = (TCP_MAX_OPT - olen - 4) / 8; /* NOP NOP 5 len */
			unsigned nb = RTE_MIN((unsigned)c->n_rsack + dsack, room);
			opt[olen++] = 1;
			opt[olen++] = 1;
			opt[olen++] = 5;
			opt[olen++] = (uint8_t)(2 + 8 * nb);
			/* RFC 2883: the duplicate first, then the usual blocks */
			for (unsigned i = 0; i < nb; i++) {
				const struct tcp_sack_block *b =
				    dsack ? (i == 0 ? &c->dsack : &c->rsack[i - 1]) : &c->rsack[i];
				uint32_t s = rte_cpu_to_be_32(b->start);
				uint32_t e = rte_cpu_to_be_32(b->end);
				memcpy(opt + olen, &s, 4);
				memcpy(opt + olen + 4, &e, 4);
				olen += 8;
			}
			tcp_rsack_sent(c, nb - dsack);
			if (dsack) {
				c->flags &= ~TF_DSACK;
				TCP_INC(wk, DSACK_SENT);
			}
		}
	}
	unsigned hlen = TCP_HDR_LEN + olen;
	struct rte_tcp_hdr *th = hdr_put(m, hlen, len);
	if (th == NULL) {
		/* Cannot happen while every MSS goes through tcp_mss_clamp();
		 * counted, and nothing is written, if it ever does. */
		rte_pktmbuf_free(m);
		TCP_INC(wk, OUT_OVERSIZE);
		return -EMSGSIZE;
	}
	/* both ports in one word: lport and rport are adjacent (checked in
	 * tcp_int.h), so byte-swapped whole and turned by 16 bits */
	uint32_t ports;
	memcpy(&ports, &c->lport, sizeof(ports));
	ports = rte_bswap32(ports);
	ports = ports >> 16 | ports << 16;
	memcpy(&th->src_port, &ports, sizeof(ports));
	th->sent_seq = rte_cpu_to_be_32(seq);
	th->recv_ack = (flags & TH_ACK) ? rte_cpu_to_be_32(c->rcv_nxt) : 0;
	th->tcp_flags = flags;
	th->rx_win = (flags & TH_RST) ? 0 : rte_cpu_to_be_16(rcv_wnd_field(c, syn));
	/* timestamps alone, the usual case, as a fixed-size copy (inlined) */
	if (olen == 12)
		memcpy(th + 1, opt, 12);
	else if (olen)
		memcpy(th + 1, opt, olen);
	if (flags & TH_CWR)
		c->ecn &= (uint8_t)~TCP_ECN_CWR;
	if (len) {
		sndq_copy(c, seq, (uint8_t *)th + hlen, len);
		if (!clean && c->recovery == TCP_REC_FAST)
			c->prr_out += len;
	}
	if (flags & TH_ACK) {
		if (c->flags & (TF_ACK_NOW | TF_DELACK)) {
			if (len)
				TCP_INC(wk, ACKS_PIGGYBACKED);
			/* quick-ACK mode counts the ACKs that answer data,
			 * however many segments each covers (Linux's
			 * tcp_dec_quickack_mode) */
			if (c->quickack)
				c->quickack--;
		}
		c->last_ack_sent = c->rcv_nxt;
		c->flags &= ~(TF_ACK_NOW | TF_DELACK | TF_PUSHED);
		c->t_delack = 0;
		c->segs_unacked = 0;
	}
	/* Data soon after the peer's: an interactive exchange, where ACKs ride
	 * on our data (Linux: tcp_event_data_sent enters ping-pong mode). Only
	 * on accepted connections: there our data answers theirs. On ours, a
	 * client's next request follows a response by timing, not because of
	 * it, and the server (Nagle on) needs the ACK of its response headers
	 * before it sends the body; a proxy's upstream connections would wait
	 * TCP_DELACK_MS per response. */
	if (len && (c->flags & TF_PASSIVE) && wk->now_ms - c->last_rcv_ms < TCP_DELACK_MS)
		c->flags |= TF_PINGPONG;
	/* data sent before: a port that merges segments sends it alone
	 * (arn_l4.h's ARN_L4_DYNFLAG_REXMIT); send_one's (clean) never is */
	if (!clean && len && seq_lt(seq, c->snd_max))
		m->ol_flags |= wk->rexmit_flag;
	conn_seg_send(c, m, hlen, tos);
	return 0;
}

static __attribute__((noinline)) int xmit(struct arn_tcp_conn *c, uint32_t seq, uint32_t len,
					  uint8_t flags)
{
	return xmit_body(c, seq, len, flags, false);
}

int tcp_send_syn(struct arn_tcp_conn *c)
{
	uint8_t fl = c->state == TCPS_SYN_SENT ? TH_SYN : TH_SYN | TH_ACK;
	return xmit(c, c->iss, 0, fl);
}

void tcp_send_ack(struct arn_tcp_conn *c)
{
	if (xmit(c, c->snd_max, 0, TH_ACK) == 0)
		TCP_INC(c->wk, PURE_ACKS);
}

/*
 * RFC 5961's challenge ACK, limited as Linux limits it since the
 * CVE-2016-5696 side channel (an off-path attacker who counts the challenge
 * ACKs of a shared, fixed per-second budget learns whether a guessed
 * 4-tuple exists):
 *   - per connection, a SYN or a segment with data gets at most one per
 *     TCP_INVALID_RATELIMIT_MS (Linux's tcp_invalid_ratelimit);
 *   - per worker, the per-second budget is drawn at random in
 *     [limit / 2, limit * 3 / 2) each second, so that its exhaustion says
 *     nothing an attacker can count on.
 */
void tcp_send_challenge_ack(struct arn_tcp_conn *c, const struct tcp_seg *s)
{
	struct arn_tcp_worker *wk = c->wk;
	if (s && (s->len || (s->flags & TH_SYN))) {
		if (c->chack_ms && wk->now_ms - c->chack_ms < TCP_INVALID_RATELIMIT_MS) {
			TCP_INC(wk, CHALLENGE_ACKS_LIMITED);
			return;
		}
		c->chack_ms = wk->now_ms ? wk->now_ms : 1;
	}
	if (!tcp_chack_budget_take(wk)) {
		TCP_INC(wk, CHALLENGE_ACKS_LIMITED);
		return;
	}
	TCP_INC(wk, CHALLENGE_ACKS);
	tcp_send_ack(c);
}

bool tcp_chack_budget_take(struct arn_tcp_worker *wk)
{
	uint64_t sec = wk->now_ms / 1000;
	if (sec != wk->chack_sec) {
		uint32_t half = (TCP_CHALLENGE_ACK_LIMIT + 1) / 2;
		wk->chack_sec = sec;
		wk->chack_budget = half + (uint32_t)(tcp_rng(wk) % TCP_CHALLENGE_ACK_LIMIT);
	}
	if (wk->chack_budget == 0)
		return false;
	wk->chack_budget--;
	return true;
}

void tcp_send_rst_conn(struct arn_tcp_conn *c)
{
	uint32_t seq = c->state == TCPS_SYN_SENT ? c->iss + 1 : c->snd_max;
	xmit(c, seq, 0, TH_RST | TH_ACK);
}

void tcp_send_probe(struct arn_tcp_conn *c)
{
	/* An already acknowledged sequence number: the peer answers with an
	 * ACK carrying its current window (Linux's tcp_xmit_probe_skb). */
	xmit(c, c->snd_una - 1, 0, TH_ACK);
}

void tcp_send_rst_reply(struct arn_tcp_worker *wk, const struct tcp_seg *s)
{
	if (s->flags & TH_RST)
		return;
	struct rte_mbuf *m = seg_alloc(wk);
	if (m == NULL)
		return;
	struct rte_tcp_hdr *th = hdr_put(m, TCP_HDR_LEN, 0);
	if (th == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	th->src_port = rte_cpu_to_be_16(s->dport);
	th->dst_port = rte_cpu_to_be_16(s->sport);
	if (s->flags & TH_ACK) {
		th->sent_seq = rte_cpu_to_be_32(s->ack);
		th->recv_ack = 0;
		th->tcp_flags = TH_RST;
	} else {
		uint32_t end = s->seq + s->len + !!(s->flags & TH_SYN) + !!(s->flags & TH_FIN);
		th->sent_seq = 0;
		th->recv_ack = rte_cpu_to_be_32(end);
		th->tcp_flags = TH_RST | TH_ACK;
	}
	th->rx_win = 0;
	seg_send(wk, m, TCP_HDR_LEN, s->dst, s->src, 0);
}

void tcp_send_tw_ack(struct arn_tcp_worker *wk, const struct tcp_tw *t)
{
	uint8_t opt[TCP_MAX_OPT];
	unsigned olen =
	    t->ts_ok ? put_ts(opt, (uint32_t)wk->now_ms + t->ts_offset, t->ts_recent, false) : 0;
	struct rte_mbuf *m = seg_alloc(wk);
	if (m == NULL)
		return;
	unsigned hlen = TCP_HDR_LEN + olen;
	struct rte_tcp_hdr *th = hdr_put(m, hlen, 0);
	if (th == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	th->src_port = rte_cpu_to_be_16(t->lport);
	th->dst_port = rte_cpu_to_be_16(t->rport);
	th->sent_seq = rte_cpu_to_be_32(t->snd_nxt);
	th->recv_ack = rte_cpu_to_be_32(t->rcv_nxt);
	th->tcp_flags = TH_ACK;
	th->rx_win = rte_cpu_to_be_16(t->wnd);
	memcpy(th + 1, opt, olen);
	seg_send(wk, m, hlen, t->laddr, t->raddr, 0);
}

void tcp_send_synack_cookie(struct arn_tcp_worker *wk, const struct tcp_seg *s, uint32_t isn,
			    uint32_t tsval, uint16_t mss, int ws, bool sack)
{
	uint8_t opt[TCP_MAX_OPT];
	unsigned olen = put_syn_opts(opt, mss, sack, s->has_ts, tsval, s->tsval, ws);
	struct rte_mbuf *m = seg_alloc(wk);
	if (m == NULL)
		return;
	unsigned hlen = TCP_HDR_LEN + olen;
	struct rte_tcp_hdr *th = hdr_put(m, hlen, 0);
	if (th == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	th->src_port = rte_cpu_to_be_16(s->dport);
	th->dst_port = rte_cpu_to_be_16(s->sport);
	th->sent_seq = rte_cpu_to_be_32(isn);
	th->recv_ack = rte_cpu_to_be_32(s->seq + 1);
	th->tcp_flags = TH_SYN | TH_ACK;
	th->rx_win = rte_cpu_to_be_16((uint16_t)RTE_MIN(wk->rcvbuf, 65535u));
	memcpy(th + 1, opt, olen);
	seg_send(wk, m, hlen, s->dst, s->src, 0);
}

/* ---- the send decision ------------------------------------------------------------- */

/* Payload that fits one segment now: c->mss already leaves room for
 * timestamps; SACK blocks on the ACK take more (Linux's tcp_current_mss).
 * Inline: without blocks to send (nearly always) it is c->mss. */
static inline __attribute__((always_inline)) uint32_t seg_room(const struct arn_tcp_conn *c)
{
	uint32_t room = c->mss;
	unsigned blocks = c->n_rsack + !!(c->flags & TF_DSACK);
	if ((c->flags & TF_SACK_OK) && blocks) {
		unsigned olen = (c->flags & TF_TS_OK) ? 12 : 0;
		unsigned nb = RTE_MIN(blocks, (TCP_MAX_OPT - olen - 4) / 8);
		uint32_t sack = 4 + 8 * nb;
		/* never above c->mss: TCP_MIN_SND_MSS leaves 8 bytes beside
		 * the largest option set */
		room = room > sack + 8 ? room - sack : RTE_MIN(room, 8u);
	}
	return room;
}

static bool can_send_data(const struct arn_tcp_conn *c)
{
	switch (c->state) {
	case TCPS_ESTABLISHED:
	case TCPS_CLOSE_WAIT:
	case TCPS_FIN_WAIT_1:
	case TCPS_CLOSING:
	case TCPS_LAST_ACK:
		return true;
	default:
		return false;
	}
}

static void after_fin_sent(struct arn_tcp_conn *c)
{
	if (c->flags & TF_FIN_SENT)
		return;
	c->flags |= TF_FIN_SENT;
	if (c->state == TCPS_ESTABLISHED)
		tcp_set_state(c, TCPS_FIN_WAIT_1);
	else if (c->state == TCPS_CLOSE_WAIT)
		tcp_set_state(c, TCPS_LAST_ACK);
}

/* Send [s, e) again (already cut to one segment), with FIN when the range
 * covers it. @return sequence space sent (0: nothing there to send), or
 * -1 when no mbuf. */
static int send_range(struct arn_tcp_conn *c, uint32_t s, uint32_t e, uint32_t data_end, bool fin_q)
{
	uint32_t len = RTE_MIN(e - s, seg_room(c));
	if (seq_gt(s + len, data_end))
		len = seq_gt(data_end, s) ? data_end - s : 0;
	uint8_t fl = TH_ACK;
	if (len && s + len == data_end)
		fl |= TH_PSH;
	uint32_t adv = len;
	if (fin_q && (c->flags & TF_FIN_SENT) && s + len == data_end && seq_gt(e, data_end)) {
		fl |= TH_FIN;
		adv++;
	}
	if (adv == 0)
		return 0;
	if (xmit(c, s, len, fl) != 0)
		return -1;
	return (int)adv;
}

static void retransmitted(struct arn_tcp_conn *c, uint32_t s)
{
	TCP_INC(c->wk, RETRANSMITS);
	c->retrans_segs++;
	if (c->flags & TF_UNDO)
		c->undo_retrans++;
	/* Karn: a retransmitted range must not be timed */
	if ((c->flags & TF_RTT_TIMING) && seq_geq(c->rtt_seq, s))
		c->flags &= ~TF_RTT_TIMING;
	if (c->t_rexmt == 0 || (c->flags & TF_TLP))
		tcp_rexmt_arm(c);
}

bool tcp_tlp_send(struct arn_tcp_conn *c)
{
	if (!can_send_data(c))
		return false;
	uint32_t data_end = c->snd_una + c->sndq.bytes;
	bool fin_q = c->flags & TF_FIN_QUEUED;
	uint32_t avail = seq_gt(data_end, c->snd_max) ? data_end - c->snd_max : 0;
	int32_t wl = (int32_t)(c->snd_una + c->snd_wnd - c->snd_max);
	if ((avail && wl > 0) || (fin_q && !(c->flags & TF_FIN_SENT))) {
		/* RFC 8985 7.3: new data if the peer's window allows, whatever
		 * cwnd says: room for exactly one segment */
		uint32_t old_max = c->snd_max, saved = c->cwnd;
		c->cwnd = tcp_pipe(c) + 1;
		c->flags |= TF_FORCE;
		tcp_output(c);
		c->flags &= ~TF_FORCE;
		c->cwnd = saved;
		if (c->snd_max != old_max) {
			c->flags &= ~TF_TLP_RETRANS;
			return true;
		}
	}
	return tcp_tlp_resend(c);
}

bool tcp_tlp_resend(struct arn_tcp_conn *c)
{
	if (!can_send_data(c))
		return false;
	uint32_t data_end = c->snd_una + c->sndq.bytes;
	bool fin_q = c->flags & TF_FIN_QUEUED;
	uint32_t s, e;
	/* a lost retransmission with nothing after it (tcp_rack.c, pto_ms):
	 * the first one not SACKed; else RFC 8985 7.3's last segment */
	uint32_t idx = tcp_rack_rxt_probe_ok(c) ? tcp_txr_rxt_probe(c, seg_room(c), &s, &e)
						: tcp_txr_tail_probe(c, seg_room(c), &s, &e);
	if (idx == TXR_NIL || send_range(c, s, e, data_end, fin_q) <= 0)
		return false;
	tcp_txr_probed(c, idx);
	TCP_INC(c->wk, RETRANSMITS);
	c->retrans_segs++;
	if (c->flags & TF_UNDO)
		c->undo_retrans++;
	c->flags |= TF_TLP_RETRANS;
	return true;
}

/* Pacing (BBR): may data go now? If not, the worker wakes @p c when it
 * may (tcp_worker.c). */
static bool pace_ok(struct arn_tcp_conn *c)
{
	if (c->pacing_rate == 0 || (int64_t)(c->next_send_us - c->wk->now_us) <= 0)
		return true;
	tcp_pace_wait(c);
	return false;
}

/* @p len bytes of data went out paced: the next may go len / rate later.
 * Credit for time the connection was not sending is kept up to one send
 * quantum (a millisecond at the pacing rate, at most 64 KB, at least two
 * segments; Linux's bbr_tso_segs_goal), so that a worker loop slower than
 * one segment's time still sends at the rate, in bursts that small. */
static __attribute__((noinline)) void pace_advance(struct arn_tcp_conn *c, uint32_t len)
{
	uint64_t rate = c->pacing_rate;
	uint64_t now = c->wk->now_us;
	uint64_t quantum = RTE_MIN(rate / 1000, 65536u);
	quantum = RTE_MAX(quantum, 2u * c->mss);
	uint64_t slack = quantum * 1000000 / rate;
	uint64_t floor = now > slack ? now - slack : 0;
	if ((int64_t)(c->next_send_us - floor) < 0)
		c->next_send_us = floor;
	c->next_send_us += ((uint64_t)len + TCP_HDR_LEN + 32) * 1000000 / rate;
}

/* pace_advance for a paced connection (BBR); no call for the others. */
static inline void pace_sent(struct arn_tcp_conn *c, uint32_t len)
{
	if (c->pacing_rate)
		pace_advance(c, len);
}

/* tcp_output's send loop, for a connection in a state that sends data
 * (can_send_data, which no segment sent here changes: a FIN takes
 * ESTABLISHED and CLOSE-WAIT to FIN-WAIT-1 and LAST-ACK) that may send
 * (tcp_may_send). Out of line: the calls that find nothing to send (4 of 6 in
 * a request-response exchange) do not set up its frame.
 * @return whether a segment went out. */
/* Data waiting, nothing in flight, and the window (zero, or too small for
 * sender SWS avoidance) keeps it back: the persist timer probes, so a lost
 * window update cannot deadlock us (RFC 9293 3.8.6.1). Only after a send
 * attempt: without data or a FIN to send (tcp_may_send false) there is
 * nothing to probe for. */
static inline void persist_check(struct arn_tcp_conn *c)
{
	if (c->snd_max == c->snd_una &&
	    (c->sndq.bytes > 0 || ((c->flags & TF_FIN_QUEUED) && !(c->flags & TF_FIN_SENT))) &&
	    !(c->flags & TF_PERSIST)) {
		c->flags |= TF_PERSIST;
		c->probes = 0;
		tcp_rexmt_arm(c);
	}
}

static __attribute__((noinline)) bool send_data(struct arn_tcp_conn *c)
{
	struct arn_tcp_worker *wk = c->wk;
	bool sent = false, new_data = false, rexmit = false;

	do {
		uint32_t data_end = c->snd_una + c->sndq.bytes;
		bool fin_q = c->flags & TF_FIN_QUEUED;
		uint32_t pipe = tcp_pipe(c);
		if (pipe >= c->cwnd) {
			c->cwnd_lim_seq = c->snd_max; /* cwnd-limited (tcp_in.c) */
			break;
		}
		if (!pace_ok(c))
			break;
		uint32_t s, e;
		if (tcp_rack_on(c) && c->lost_bytes > c->retrans_bytes) {
			/* RACK (RFC 8985): what it marked lost, oldest first */
			uint32_t idx = tcp_rack_next_lost(c, seg_room(c), &s, &e);
			if (idx != TXR_NIL) {
				int adv = send_range(c, s, e, data_end, fin_q);
				if (adv < 0)
					break;
				tcp_txr_rexmit(c, idx);
				if (adv > 0) {
					retransmitted(c, s);
					pace_sent(c, (uint32_t)adv);
					sent = rexmit = true;
				}
				continue;
			}
			/* nothing (or RACK just fell back): new data, or RFC 6675 */
			if (tcp_rack_on(c))
				goto new_data;
		}
		/* RFC 6675 NextSeg (1): a lost hole not yet retransmitted. */
		if (!tcp_rack_on(c) && c->recovery != TCP_REC_NONE &&
		    tcp_sb_next_hole(c, c->lost_edge, &s, &e)) {
			int adv = send_range(c, s, e, data_end, fin_q);
			if (adv < 0)
				break;
			if (adv == 0) {
				c->high_rxt = e;
				continue;
			}
			c->high_rxt = s + (uint32_t)adv;
			retransmitted(c, s);
			sent = true;
			continue;
		}
	new_data:;
		/* NextSeg (2): new data the windows allow. */
		uint32_t avail = seq_gt(data_end, c->snd_max) ? data_end - c->snd_max : 0;
		int32_t wl = (int32_t)(c->snd_una + c->snd_wnd - c->snd_max);
		uint32_t win = wl > 0 ? (uint32_t)wl : 0;
		uint32_t room = seg_room(c);
		uint32_t len = RTE_MIN(avail, room);
		len = RTE_MIN(len, win);
		bool fin = fin_q && !(c->flags & TF_FIN_SENT) && c->snd_max + len == data_end;
		if (len == 0 && !fin)
			break;
		/* Sender SWS avoidance (RFC 9293 3.8.6.2.1), Nagle off: send a
		 * short segment only if it empties the queue or is at least half
		 * the largest window the peer offered. */
		if (len < room && len < avail && len < c->max_sndwnd / 2 && !(c->flags & TF_FORCE))
			break;
		if (fin && len == 0 && c->snd_max != data_end)
			break;
		uint8_t fl = TH_ACK;
		if (len == avail && len)
			fl |= TH_PSH;
		if (fin)
			fl |= TH_FIN;
		uint32_t seq = c->snd_max;
		if (xmit_body(c, seq, len, fl, false) != 0)
			break;
		sent = true;
		pace_sent(c, len);
		c->snd_max += len + (fin ? 1 : 0);
		c->snd_nxt = c->snd_max;
		wk->cnt[ARN_TCP_C_BYTES_OUT] += len;
		if (fin) {
			c->fin_seq = seq + len;
			after_fin_sent(c);
		}
		tcp_txr_sent(c, seq, len + (fin ? 1 : 0));
		new_data = true;
		if (!(c->flags & TF_TS_OK) && !(c->flags & TF_RTT_TIMING)) {
			c->flags |= TF_RTT_TIMING;
			c->rtt_seq = seq;
			c->rtt_start = wk->now_ms;
		}
		/* tcp_may_send's answer when this emptied the queue and no FIN
		 * waits (a keep-alive request's or response's one segment),
		 * from what the round already has */
		if (len == avail && !fin_q && c->recovery == TCP_REC_NONE &&
		    c->lost_bytes <= c->retrans_bytes)
			break;
	} while (tcp_may_send(c));

	/* RTO per RFC 6298 5.1 (not restarted by new data); a loss probe timer
	 * is, since it counts from the last transmission. Once per burst. A
	 * retransmission with nothing to follow it may be probed too (pto_ms
	 * in tcp_rack.c); otherwise this leaves the RTO as it was. */
	if (new_data || rexmit)
		tcp_rexmt_new_data(c);

	persist_check(c);
	return sent;
}

/* send_data's answer, without its loop, for the usual segment of a
 * keep-alive exchange (send_one_ok): everything queued fits one segment
 * the windows allow, and nothing else (a retransmission, a FIN, SACK
 * blocks, ECN, pacing, a recovery) asks for the loop's tests. Out of
 * line, as send_data. @return whether the segment went out. */
static __attribute__((noinline)) bool send_one(struct arn_tcp_conn *c, uint32_t len)
{
	struct arn_tcp_worker *wk = c->wk;
	uint32_t seq = c->snd_max;
	if (xmit_body(c, seq, len, TH_ACK | TH_PSH, true) != 0) {
		persist_check(c);
		return false;
	}
	c->snd_max = seq + len;
	c->snd_nxt = seq + len;
	wk->cnt[ARN_TCP_C_BYTES_OUT] += len;
	tcp_txr_sent(c, seq, len);
	if (!(c->flags & (TF_TS_OK | TF_RTT_TIMING))) {
		c->flags |= TF_RTT_TIMING;
		c->rtt_seq = seq;
		c->rtt_start = wk->now_ms;
	}
	tcp_rexmt_new_data(c);
	return true;
}

/* send_data would send exactly one segment of new data, all that is
 * queued (@p *len bytes), with ACK and PSH, and do nothing else: no
 * FIN queued, ECN off, no SACK block or D-SACK owed (so seg_room() is
 * c->mss), nothing SACKed, lost, retransmitted or in recovery (so the
 * pipe is the flight and RACK owes nothing), no pacing, and the data
 * within c->mss, the peer's window and cwnd. Inline in tcp_output: a few
 * loads and one branch decide between send_one and send_data. */
static inline __attribute__((always_inline)) bool send_one_ok(const struct arn_tcp_conn *c,
							      uint32_t *len)
{
	uint32_t avail = c->snd_una + c->sndq.bytes - c->snd_max;
	uint32_t flight = c->snd_max - c->snd_una;
	*len = avail;
	return ((c->flags & (TF_FIN_QUEUED | TF_DSACK | TF_FORCE)) | (c->ecn & TCP_ECN_OK) |
		c->n_rsack | c->sacked_bytes | c->reno_sacked | c->lost_bytes | c->retrans_bytes |
		c->recovery) == 0 &&
	       c->pacing_rate == 0 && (int32_t)avail > 0 && avail <= c->mss &&
	       avail <= c->snd_wnd - flight && flight < c->cwnd && flight <= c->snd_wnd;
}

void tcp_output(struct arn_tcp_conn *c)
{
	if (c->state == TCPS_SYN_RECEIVED || c->state == TCPS_SYN_SENT || c->state == TCPS_CLOSED ||
	    c->state == TCPS_LISTEN)
		return;
	uint32_t len;
	bool sent = can_send_data(c) && tcp_may_send(c) &&
		    (send_one_ok(c, &len) ? send_one(c, len) : send_data(c));
	if (tcp_rate_on(c))
		tcp_rate_check_app_limited(c);
	if (sent)
		return;
	if (c->flags & TF_ACK_NOW) {
		tcp_send_ack(c);
	} else if ((c->flags & TF_DELACK) && c->t_delack == 0) {
		c->t_delack = c->wk->now_ms + TCP_DELACK_MS;
		tcp_timer_update(c);
	}
}
