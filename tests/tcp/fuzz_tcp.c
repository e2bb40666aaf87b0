/*
 * libFuzzer target: arbitrary segments into a connection in every state.
 *
 * Input: byte 0 picks the starting state (LISTEN, SYN_SENT, SYN_RECEIVED,
 * ESTABLISHED with or without SACK/timestamps, FIN_WAIT_1, FIN_WAIT_2,
 * CLOSE_WAIT, LAST_ACK, CLOSING, TIME_WAIT, a SYN-cookie connection:
 * byte 0 % 12), the MSS the peer's handshake announces (byte 0 / 12 % 8:
 * 1460, then the edges 1, 11, 12, 88, 536, 65535 and none) and the buffer
 * sizes (byte 0 / 96: 8 KB or 256 KB, so that the send queue can hold more
 * than any one segment and full-size segments are reachable);
 * the rest is a list of records, each a segment relative to the
 * connection's sequence numbers (so that most land near the window) or an
 * application action, with the clock advanced between them. The fake net
 * aborts on any output that breaks the lib/net contract (oversize, bad
 * headroom, checksum not requested); at the end every mbuf must be back in
 * the pool.
 * A segment record may arrive as an mbuf chain, as a kernel port's GRO
 * makes them (in_chain: r[6]'s top two bits).
 */
#include <stddef.h>
#include <stdint.h>

#include "../fuzz/fuzz_flags.h"
#include "arn_log.h"
#include "tcp_fake_net.h"

#define US FAKE_ADDR(0)
#define PEER 0xc6120063u
#define LPORT 80
#define PPORT 40000

static struct arn_lcore *lc = &fake_lc[0];
static struct arn_tcp_conn *conn;
static uint32_t p_seq, our_next;
static int hs_mss = 1460; /* what the peer's SYN (or SYN-ACK) announces; <0: none */
static const int hs_mss_table[8] = {1460, 1, 11, 12, 88, 536, 65535, -1};

static int f_accept(struct arn_tcp_conn *c, void *u)
{
	(void)u;
	conn = c;
	return 0;
}
static void f_data(struct arn_tcp_conn *c, struct rte_mbuf *h, uint32_t len)
{
	(void)h;
	/* consume half: leaves data queued, exercising the window */
	arn_tcp_rx_consume(c, len / 2);
}
static void f_connected(struct arn_tcp_conn *c, int st)
{
	conn = st == 0 ? c : conn;
}
static void f_close(struct arn_tcp_conn *c, int r)
{
	(void)r;
	if (c == conn)
		conn = NULL;
}
static const struct arn_tcp_ops f_ops = {
    .on_accept = f_accept,
    .on_data = f_data,
    .on_connected = f_connected,
    .on_close = f_close,
};

static void in(uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd, const struct fake_opts *o,
	       const void *d, uint32_t len)
{
	arn_tcp_input(lc, fake_seg(PEER, US, PPORT, LPORT, flags, seq, ack, wnd, o, d, len));
}

/* The segment as a kernel port's GRO hands it over (tcp_in.c's
 * chain_input): an mbuf chain. @p mode 1: the first link holds the
 * headers alone, the payload in links of 1..64 bytes; 2: some payload in
 * the first link too; 3: a super-segment of up to 16 KB (*len grows to
 * that), links of 2000. The sizes come from the record's bytes; a record
 * with r[11] zero (mode 1 or 2) gets an empty link, which tcp_input must
 * drop as malformed. RTE_MBUF_F_RX_LRO with a tso_segsz when r[10]'s top
 * bit is set. */
static void in_chain(unsigned mode, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
		     const struct fake_opts *o, const uint8_t *d, uint32_t *len, const uint8_t *r)
{
	if (mode == 3)
		*len = (uint32_t)(r[9] & 0x7f) * 128;
	uint32_t left = *len, sizes[64];
	unsigned n = 0;
	uint32_t first = mode == 1 ? 0 : RTE_MIN(left, (uint32_t)r[2] * 7);
	sizes[n++] = first;
	left -= first;
	uint32_t step = mode == 3 ? 2000 : 1 + r[11] % 64u;
	step = RTE_MAX(step, (left + 61) / 62); /* 64 links at most */
	if (mode != 3 && r[11] == 0 && left)
		sizes[n++] = 0;
	while (left) {
		uint32_t k = RTE_MIN(left, step);
		sizes[n++] = k;
		left -= k;
	}
	uint16_t tso = (r[10] & 0x80) ? (uint16_t)(88 + r[11] * 8) : 0;
	arn_tcp_input(lc, fake_chain(PEER, US, PPORT, LPORT, flags, seq, ack, wnd, o, d, *len,
				     sizes, n, tso));
}

/* Remember the last sequence number we sent, so the peer can ACK it. */
static void drain(void)
{
	struct fake_out o;
	arn_tcp_worker_poll(lc, fake_now_us);
	while (fake_next(lc, &o))
		if (o.sport == LPORT || conn)
			our_next = o.seq + o.len + !!(o.flags & (TH_SYN | TH_FIN));
}

static void handshake(bool opts)
{
	struct fake_opts o = {.mss = hs_mss, .ws = 7, .sack_ok = true, .ts = true, .tsval = 100};
	p_seq = 1000;
	in(TH_SYN, p_seq, 0, 65535, opts ? &o : NULL, NULL, 0);
	drain();
	p_seq++;
	struct fake_opts a = {.mss = -1, .ws = -1, .ts = true, .tsval = 101};
	in(TH_ACK, p_seq, our_next, 65535, opts ? &a : NULL, NULL, 0);
	drain();
}

static void reach(unsigned st)
{
	int err;
	struct fake_opts a = {.mss = -1, .ws = -1, .ts = true, .tsval = 102};
	switch (st) {
	case 0: /* LISTEN */
		break;
	case 1: /* SYN_SENT */
		conn = arn_tcp_connect(lc, US, PEER, PPORT, &f_ops, NULL, 0, &err);
		drain();
		break;
	case 2: /* SYN_RECEIVED */
		in(TH_SYN, 5000, 0, 1000, NULL, NULL, 0);
		p_seq = 5001;
		drain();
		break;
	case 3:
		handshake(true);
		break;
	case 4:
		handshake(false);
		break;
	case 5: /* FIN_WAIT_1 */
		handshake(true);
		if (conn)
			arn_tcp_close(conn);
		drain();
		break;
	case 6: /* FIN_WAIT_2 */
		handshake(true);
		if (conn)
			arn_tcp_shutdown(conn);
		drain();
		in(TH_ACK, p_seq, our_next, 1000, &a, NULL, 0);
		drain();
		break;
	case 7: /* CLOSE_WAIT */
		handshake(true);
		in(TH_ACK | TH_FIN, p_seq, our_next, 1000, &a, NULL, 0);
		p_seq++;
		drain();
		break;
	case 8: /* LAST_ACK */
		handshake(true);
		in(TH_ACK | TH_FIN, p_seq, our_next, 1000, &a, NULL, 0);
		p_seq++;
		if (conn)
			arn_tcp_close(conn);
		drain();
		break;
	case 9: /* CLOSING */
		handshake(true);
		if (conn)
			arn_tcp_shutdown(conn);
		drain();
		in(TH_ACK | TH_FIN, p_seq, our_next - 1, 1000, &a, NULL, 0);
		p_seq++;
		drain();
		break;
	case 10: /* TIME_WAIT */
		handshake(true);
		if (conn)
			arn_tcp_shutdown(conn);
		drain();
		in(TH_ACK | TH_FIN, p_seq, our_next, 1000, &a, NULL, 0);
		p_seq++;
		drain();
		break;
	default: { /* a SYN-cookie connection: fill the SYN queue first */
		for (int i = 0; i < 4; i++)
			arn_tcp_input(lc, fake_seg(PEER, US, (uint16_t)(30000 + i), LPORT, TH_SYN,
						   1, 0, 1000, NULL, NULL, 0));
		drain();
		struct fake_opts o = {
		    .mss = hs_mss, .ws = 2, .sack_ok = true, .ts = true, .tsval = 9};
		in(TH_SYN, 7000, 0, 1000, &o, NULL, 0);
		struct fake_out out;
		arn_tcp_worker_poll(lc, fake_now_us);
		uint32_t cookie = 0, tsv = 0;
		while (fake_next(lc, &out))
			if (out.dport == PPORT) {
				cookie = out.seq;
				tsv = out.o.tsval;
			}
		struct fake_opts ca = {.mss = -1, .ws = -1, .ts = true, .tsval = 10, .tsecr = tsv};
		p_seq = 7001;
		in(TH_ACK, p_seq, cookie + 1, 1000, &ca, NULL, 0);
		our_next = cookie + 1;
		drain();
		break;
	}
	}
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The out-of-order queue's invariants: sorted, disjoint, ooo_tail_run
 * where the tail's run starts, its trees of mbufs and runs matching it
 * (tcp_sack.c appends and searches by them); and the receive queues' when collapse would skip its
 * walk. */
static void check_ooo(const struct arn_tcp_conn *c)
{
	const struct rte_mbuf *last = NULL;
	uint32_t run = 0;
	for (const struct rte_mbuf *x = c->oooq.head; x; x = x->next) {
		uint32_t xs = x->hash.usr;
		if (last == NULL || xs != last->hash.usr + last->data_len)
			run = xs;
		if (last && seq_lt(xs, last->hash.usr + last->data_len))
			abort();
		last = x;
	}
	if (last != c->oooq.tail || (last && c->ooo_tail_run != run))
		abort();
	/* its indexes, the trees of its mbufs and its runs (tcp_sack.c) */
	if (!tcp_ooo_consistent(c))
		abort();
	/* tcp_rmem.c's collapse skips its walk as long as the last one
	 * found nothing: then there is nothing, but a receive queue's head
	 * trimmed small by a read, which it looks at */
	if (!c->rmem_packed || c->rmem_packed_nxt != c->rcv_nxt)
		return;
	for (const struct rte_mbuf *x = c->oooq.head; x && x->next; x = x->next)
		if (tcp_mbuf_small(c->wk, x) && tcp_mbuf_small(c->wk, x->next) &&
		    x->hash.usr + x->data_len == x->next->hash.usr)
			abort();
	const struct rte_mbuf *h = c->rcvq.head;
	for (const struct rte_mbuf *x = h ? h->next : NULL; x && x->next; x = x->next)
		if (tcp_mbuf_small(c->wk, x) && tcp_mbuf_small(c->wk, x->next))
			abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char entropic[] = "-entropic=0"; /* fuzz_flags.h says why */
	fuzz_default_flag(argc, argv, entropic);
	fake_eal_init();
	atexit(fake_eal_fini);	       /* removes /var/run/dpdk/arn-t-unit-<pid> */
	arn_log_set_spec("off", NULL); /* no counter line per run */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned full = rte_mempool_avail_count(fake_pool);
	uint32_t buf = data[0] / 96 ? 256 * 1024 : 8192;
	struct arn_dataplane conf = {
	    .tcp_max_connections = 8, .tcp_rcvbuf = buf, .tcp_sndbuf = buf};
	if (arn_tcp_worker_init(lc, &conf) != 0)
		abort();
	struct arn_tcp_listen_opts lo = {.backlog = 4};
	int err;
	arn_tcp_listen(lc, 0, LPORT, &f_ops, NULL, &lo, &err);
	conn = NULL;
	our_next = 0;
	fake_mtu = 1500;
	hs_mss = hs_mss_table[data[0] / 12 % 8];
	reach(data[0] % 12);
	size_t i = 1;
	static uint8_t payload[65536];
	while (i + 12 <= size) {
		const uint8_t *r = data + i;
		uint8_t kind = r[0];
		i += 12;
		if (kind >= 0xf0) {
			/* application actions */
			if (conn) {
				switch (kind & 7) {
				case 0:
					/* up to 64 KB at once: more than any segment */
					arn_tcp_write(conn, payload, (uint32_t)r[1] * 257);
					break;
				case 1:
					arn_tcp_shutdown(conn);
					break;
				case 2:
					arn_tcp_close(conn);
					break;
				case 3:
					arn_tcp_abort(conn);
					break;
				case 4:
					arn_tcp_rx_consume(conn, arn_tcp_rx_pending(conn));
					break;
				case 5: {
					struct rte_mbuf *m = arn_tcp_rx_take(conn, r[1] * 16u);
					rte_pktmbuf_free(m);
					break;
				}
				case 6:
					arn_tcp_set_keepalive(conn, 1, 1, 2);
					break;
				default:
					/* the quoted sequence number: snd_una
					 * plus an offset (0: in flight if
					 * anything is) */
					arn_tcp_icmp_unreach(
					    lc, r[1] & 7, (uint16_t)(r[2] << 8 | r[3]), US, PEER,
					    LPORT, PPORT, conn->snd_una + (uint32_t)r[4] * 1000u);
					break;
				}
			}
		} else {
			/* a segment: flags, seq/ack offsets, window, options, data */
			struct fake_opts o = fake_no_opts;
			uint8_t ob = r[10];
			if (ob & 1) /* 0x80: the small values, else 0..65535 coarsely */
				o.mss = (ob & 0x80) ? r[11] : r[11] * 257;
			if (ob & 2)
				o.ws = r[11] & 15;
			o.sack_ok = ob & 4;
			if (ob & 8) {
				o.ts = true;
				o.tsval = 100 + (int8_t)r[11] * 1000u + (uint32_t)i;
				o.tsecr = rd32(r + 5);
			}
			if (ob & 16) {
				o.n_sack = 1 + (r[11] & 1);
				for (int k = 0; k < 2 * o.n_sack; k++)
					o.sack[k] = our_next + (int8_t)r[1 + k] * 512;
			}
			uint32_t seq = p_seq + (int32_t)(int16_t)(r[1] << 8 | r[2]);
			uint32_t ack = our_next + (int32_t)(int16_t)(r[3] << 8 | r[4]);
			uint32_t len = (ob & 0x20) ? (uint32_t)(r[9] & 0x7f) * 8 : 0;
			uint16_t wnd = (uint16_t)(r[7] << 8 | r[8]);
			unsigned chain = r[6] >> 6;
			if (chain && len)
				in_chain(chain, kind, seq, ack, wnd, &o, payload, &len, r);
			else
				in(kind, seq, ack, wnd, &o, payload, len);
			if ((ob & 0x40) && len)
				p_seq += len; /* in order next time */
		}
		fake_clock_set(fake_now_us + (uint64_t)(r[9] >> 7) * 250000 +
			       (uint64_t)(r[6] & 0x3f) * 1000);
		drain();
		if (conn)
			check_ooo(conn);
	}
	arn_tcp_worker_fini(lc);
	fake_drain(lc);
	if (rte_mempool_avail_count(fake_pool) != full) {
		fprintf(stderr, "mbuf leak: %u of %u\n", rte_mempool_avail_count(fake_pool), full);
		abort();
	}
	return 0;
}
