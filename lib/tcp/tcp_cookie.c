/*
 * Initial sequence numbers (RFC 6528) and SYN cookies (RFC 4987 3.6), both
 * keyed with SipHash-2-4 under per-worker secrets drawn at start.
 *
 * Cookie layout (the ISN of a stateless SYN-ACK), Linux's scheme:
 *   isn = H1(tuple) + peer_isn + (count << 24)
 *         + ((H2(tuple, count) + mss_index) mod 2^24)
 * count is a 64-second clock; a cookie is accepted for two periods. When the
 * peer offered timestamps, the options that do not fit in the ISN (its
 * window scale and SACK-permitted) ride in the low 6 bits of our TSval and
 * come back in the ACK's TSecr.
 */
#include <string.h>
#include <sys/random.h>

#include "tcp_int.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = ROTL(v1, 13);                                                                 \
		v1 ^= v0;                                                                          \
		v0 = ROTL(v0, 32);                                                                 \
		v2 += v3;                                                                          \
		v3 = ROTL(v3, 16);                                                                 \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = ROTL(v3, 21);                                                                 \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = ROTL(v1, 17);                                                                 \
		v1 ^= v2;                                                                          \
		v2 = ROTL(v2, 32);                                                                 \
	} while (0)

uint64_t tcp_siphash(const uint64_t key[2], const void *data, size_t len)
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ key[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ key[0];
	uint64_t v3 = 0x7465646279746573ULL ^ key[1];
	const uint8_t *p = data;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t m;
		memcpy(&m, p + i, 8);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	uint64_t b = (uint64_t)len << 56;
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void tcp_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);
		if (n <= 0) {
			/* Never expected; fall back to the TSC so we still start. */
			uint64_t t = rte_rdtsc();
			size_t k = len < sizeof(t) ? len : sizeof(t);
			memcpy(p, &t, k);
			n = (ssize_t)k;
		}
		p += n;
		len -= (size_t)n;
	}
}

static uint32_t tuple_hash(const uint64_t key[2], uint32_t laddr, uint16_t lport, uint32_t raddr,
			   uint16_t rport, uint32_t extra)
{
	uint32_t t[4] = {laddr, raddr, ((uint32_t)lport << 16) | rport, extra};
	return (uint32_t)tcp_siphash(key, t, sizeof(t));
}

uint32_t tcp_isn(struct arn_tcp_worker *wk, uint32_t laddr, uint16_t lport, uint32_t raddr,
		 uint16_t rport)
{
	/* RFC 6528: M (a 4 us clock) + F(tuple, secret) */
	uint64_t us4 = arn_net_now(wk->lc) / (wk->hz / 250000 ? wk->hz / 250000 : 1);
	return (uint32_t)us4 + tuple_hash(wk->key, laddr, lport, raddr, rport, 0);
}

/* MSS values a cookie can carry (3 bits), as Linux's msstab plus two. */
static const uint16_t cookie_mss[8] = {536, 1024, 1200, 1300, 1360, 1440, 1452, 1460};

static uint32_t cookie_count(struct arn_tcp_worker *wk)
{
	return (uint32_t)(wk->now_ms / 64000);
}

uint32_t tcp_cookie_make(struct arn_tcp_worker *wk, const struct tcp_seg *s, uint16_t mss,
			 uint16_t *mss_out)
{
	unsigned idx = 0;
	for (unsigned i = 0; i < 8; i++)
		if (cookie_mss[i] <= mss)
			idx = i;
	*mss_out = cookie_mss[idx];
	uint32_t count = cookie_count(wk);
	uint32_t h1 = tuple_hash(wk->cookie_key, s->dst, s->dport, s->src, s->sport, 0);
	uint32_t h2 =
	    tuple_hash(wk->cookie_key, s->dst, s->dport, s->src, s->sport, count | 1u << 31);
	return h1 + s->seq + (count << 24) + ((h2 + idx) & 0xffffff);
}

uint16_t tcp_cookie_check(struct arn_tcp_worker *wk, const struct tcp_seg *s)
{
	uint32_t cookie = s->ack - 1;
	uint32_t peer_isn = s->seq - 1;
	uint32_t h1 = tuple_hash(wk->cookie_key, s->dst, s->dport, s->src, s->sport, 0);
	uint32_t v = cookie - h1 - peer_isn;
	uint32_t now = cookie_count(wk);
	uint32_t count = (now & ~0xffu) | (v >> 24);
	if (count > now) /* the 8 bits wrapped */
		count -= 256;
	if (now - count > 1)
		return 0;
	uint32_t h2 =
	    tuple_hash(wk->cookie_key, s->dst, s->dport, s->src, s->sport, count | 1u << 31);
	uint32_t idx = ((v & 0xffffff) - h2) & 0xffffff;
	if (idx >= 8)
		return 0;
	return cookie_mss[idx];
}
