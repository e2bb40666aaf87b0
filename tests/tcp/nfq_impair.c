/*
 * nfq_impair: delay, jitter, reorder, duplicate and drop packets that an
 * iptables NFQUEUE rule hands to user space - netem for a kernel without
 * sch_netem (DESIGN.md). Speaks nfnetlink_queue over a raw netlink socket;
 * no library needed.
 *
 *   nfq_impair -q QUEUE [-d DELAY_MS] [-j JITTER_MS] [-r REORDER] [-e]
 *              [-D DUP] [-l LOSS] [-c CE] [-s SEED] [-m MARK]
 *
 * Every packet is held DELAY + rand(JITTER) ms; with probability REORDER it
 * is held 2-12 ms more (so later packets overtake it), or with -e, as
 * netem's "delay DELAY reorder REORDER" does, sent at once instead (so it
 * overtakes the ones held: lateness at most DELAY, which netem cannot
 * reorder without); with probability DUP
 * a copy is sent again through a raw socket, marked MARK (default 0x7e) so
 * the rule can skip it (-m mark ! --mark 0x7e); with probability LOSS it is
 * dropped; with probability CE an ECN-capable packet (ECT(0) or ECT(1)) is
 * marked Congestion Experienced, as a router that marks instead of
 * dropping (RFC 3168), and accepted at once. Verdicts go out when packets
 * are due, hence out of order.
 * Runs until SIGTERM/SIGINT, then accepts what it holds and prints counts.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <netinet/ip.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MAX 16384
#define PKT_MAX 65536

struct held {
	uint64_t due_us;
	uint32_t id;
	uint16_t len; /* of data, only kept when it is to be duplicated */
	uint8_t *data;
};

static struct held held[HOLD_MAX];
static unsigned n_held;
static volatile sig_atomic_t stop;
static uint64_t rng = 88172645463325252ull;
static unsigned long c_pkts, c_dup, c_drop, c_reorder, c_overflow, c_ce;

static double rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / (double)(1ull << 53);
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

/* Append one attribute to a netlink message. */
static void put_attr(struct nlmsghdr *nh, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)nh + NLMSG_ALIGN(nh->nlmsg_len));
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static struct nlmsghdr *start_msg(char *buf, uint16_t type, uint16_t queue, uint8_t family)
{
	memset(buf, 0, 256);
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
	nh->nlmsg_type = (uint16_t)((NFNL_SUBSYS_QUEUE << 8) | type);
	nh->nlmsg_flags = NLM_F_REQUEST;
	struct nfgenmsg *g = NLMSG_DATA(nh);
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(queue);
	return nh;
}

static int nl_send(int fd, struct nlmsghdr *nh)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	return sendto(fd, nh, nh->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno
											: 0;
}

static uint16_t queue_num;

static void verdict(int fd, uint32_t id, uint32_t v)
{
	char buf[256];
	struct nlmsghdr *nh = start_msg(buf, NFQNL_MSG_VERDICT, queue_num, AF_UNSPEC);
	struct nfqnl_msg_verdict_hdr vh = {.verdict = htonl(v), .id = htonl(id)};
	put_attr(nh, NFQA_VERDICT_HDR, &vh, sizeof(vh));
	if (nl_send(fd, nh) != 0)
		perror("nfq_impair: verdict");
}

/* Accept packet @p id with its IPv4 header's ECN field set to CE (@p p,
 * @p len: the packet as queued; changed in place, header checksum too). */
static void verdict_ce(int fd, uint32_t id, uint8_t *p, uint16_t len)
{
	static char buf[PKT_MAX + 256];
	struct iphdr *ip = (struct iphdr *)p;
	ip->tos |= 0x03;
	ip->check = 0;
	uint32_t sum = 0;
	for (unsigned i = 0; i + 1 < ip->ihl * 4u; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip->check = htons((uint16_t)~sum);
	struct nlmsghdr *nh = start_msg(buf, NFQNL_MSG_VERDICT, queue_num, AF_UNSPEC);
	struct nfqnl_msg_verdict_hdr vh = {.verdict = htonl(NF_ACCEPT), .id = htonl(id)};
	put_attr(nh, NFQA_VERDICT_HDR, &vh, sizeof(vh));
	put_attr(nh, NFQA_PAYLOAD, p, len);
	if (nl_send(fd, nh) != 0)
		perror("nfq_impair: verdict");
	else
		c_ce++;
}

static void send_copy(int raw, const uint8_t *p, uint16_t len)
{
	if (len < sizeof(struct iphdr))
		return;
	const struct iphdr *ip = (const struct iphdr *)p;
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = ip->daddr};
	if (sendto(raw, p, len, 0, (struct sockaddr *)&to, sizeof(to)) == len)
		c_dup++;
}

static void release_due(int fd, int raw, uint64_t t, bool all)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n_held; i++) {
		if (all || held[i].due_us <= t) {
			verdict(fd, held[i].id, NF_ACCEPT);
			if (held[i].data) {
				send_copy(raw, held[i].data, held[i].len);
				free(held[i].data);
			}
		} else {
			held[k++] = held[i];
		}
	}
	n_held = k;
}

int main(int argc, char **argv)
{
	double delay = 0, jitter = 0, reorder = 0, dup = 0, loss = 0, ce = 0;
	bool early = false; /* -e: netem's reorder */
	uint32_t mark = 0x7e;
	int o;
	while ((o = getopt(argc, argv, "q:d:j:r:eD:l:c:s:m:")) != -1) {
		switch (o) {
		case 'q':
			queue_num = (uint16_t)atoi(optarg);
			break;
		case 'd':
			delay = atof(optarg);
			break;
		case 'j':
			jitter = atof(optarg);
			break;
		case 'r':
			reorder = atof(optarg);
			break;
		case 'e':
			early = true;
			break;
		case 'D':
			dup = atof(optarg);
			break;
		case 'l':
			loss = atof(optarg);
			break;
		case 'c':
			ce = atof(optarg);
			break;
		case 's':
			rng ^= strtoull(optarg, NULL, 0) * 0x9e3779b97f4a7c15ull;
			break;
		case 'm':
			mark = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: nfq_impair -q QUEUE [-d MS] [-j MS] [-r P] [-e] [-D P] "
				"[-l P] [-c P] [-s SEED] [-m MARK]\n");
			return 2;
		}
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
	int raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || raw < 0) {
		perror("nfq_impair: socket");
		return 1;
	}
	int big = 16 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(raw, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("nfq_impair: bind");
		return 1;
	}
	char buf[256];
	struct nlmsghdr *nh = start_msg(buf, NFQNL_MSG_CONFIG, queue_num, AF_UNSPEC);
	struct nfqnl_msg_config_cmd cmd = {.command = NFQNL_CFG_CMD_BIND, .pf = htons(AF_INET)};
	put_attr(nh, NFQA_CFG_CMD, &cmd, sizeof(cmd));
	if (nl_send(fd, nh) != 0) {
		perror("nfq_impair: bind queue");
		return 1;
	}
	nh = start_msg(buf, NFQNL_MSG_CONFIG, queue_num, AF_UNSPEC);
	struct nfqnl_msg_config_params par = {.copy_range = htonl(PKT_MAX),
					      .copy_mode = NFQNL_COPY_PACKET};
	put_attr(nh, NFQA_CFG_PARAMS, &par, sizeof(par));
	uint32_t maxlen = htonl(HOLD_MAX);
	put_attr(nh, NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof(maxlen));
	if (nl_send(fd, nh) != 0) {
		perror("nfq_impair: params");
		return 1;
	}
	fprintf(stderr, "nfq_impair: queue %u ready\n", queue_num);

	static char rbuf[PKT_MAX + 4096];
	while (!stop) {
		uint64_t t = now_us();
		release_due(fd, raw, t, false);
		int timeout = 50;
		for (unsigned i = 0; i < n_held; i++) {
			int64_t w = ((int64_t)held[i].due_us - (int64_t)t) / 1000;
			if (w < timeout)
				timeout = w < 0 ? 0 : (int)w;
		}
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (poll(&pfd, 1, timeout) <= 0)
			continue;
		ssize_t n = recv(fd, rbuf, sizeof(rbuf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == ENOBUFS)
				c_overflow++; /* the kernel dropped some: fail-open or lost */
			continue;
		}
		/* An int, not a size_t: the kernel does not pad a packet
		 * message to 4 bytes (nfqnl_build_packet_message ends it with
		 * the payload), NLMSG_NEXT steps by the padded length, and the
		 * count left goes below zero after an odd-sized last packet; as
		 * a size_t that was a huge count, and the loop read on through
		 * the stale rest of rbuf and past it (a crash, with every
		 * packet of the queue then dropped, when Arion's send buffer
		 * grew on a 10 ms path). NLMSG_OK spelt out: the kernel
		 * header's compares the unsigned length with the count as it
		 * is (clang's -Wsign-compare). */
		int left = (int)n;
		for (struct nlmsghdr *m = (struct nlmsghdr *)rbuf;
		     left >= (int)sizeof(*m) && m->nlmsg_len >= sizeof(*m) &&
		     m->nlmsg_len <= (unsigned)left;
		     left -= (int)NLMSG_ALIGN(m->nlmsg_len),
				     m = (struct nlmsghdr *)((char *)m +
							     NLMSG_ALIGN(m->nlmsg_len))) {
			if ((m->nlmsg_type & 0xff) != NFQNL_MSG_PACKET)
				continue;
			uint32_t id = 0;
			const uint8_t *payload = NULL;
			uint16_t plen = 0;
			struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(m) +
							     NLMSG_ALIGN(sizeof(struct nfgenmsg)));
			int rem = (int)m->nlmsg_len - (int)NLMSG_LENGTH(sizeof(struct nfgenmsg));
			while (rem >= (int)sizeof(*a) && a->nla_len >= sizeof(*a) &&
			       a->nla_len <= rem) {
				uint16_t type = a->nla_type & NLA_TYPE_MASK;
				void *d = (char *)a + NLA_HDRLEN;
				if (type == NFQA_PACKET_HDR) {
					struct nfqnl_msg_packet_hdr *ph = d;
					id = ntohl(ph->packet_id);
				} else if (type == NFQA_PAYLOAD) {
					payload = d;
					plen = (uint16_t)(a->nla_len - NLA_HDRLEN);
				}
				rem -= NLA_ALIGN(a->nla_len);
				a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
			}
			c_pkts++;
			if (rnd() < loss) {
				c_drop++;
				verdict(fd, id, NF_DROP);
				continue;
			}
			if (payload && plen >= sizeof(struct iphdr) &&
			    (((const struct iphdr *)payload)->tos & 0x03) != 0 &&
			    (((const struct iphdr *)payload)->tos & 0x03) != 0x03 && rnd() < ce) {
				verdict_ce(fd, id, (uint8_t *)payload, plen);
				continue;
			}
			if (n_held == HOLD_MAX) {
				verdict(fd, id, NF_ACCEPT);
				continue;
			}
			double hold = delay + jitter * rnd();
			if (rnd() < reorder) {
				hold = early ? 0 : hold + 2 + 10 * rnd();
				c_reorder++;
			}
			struct held *h = &held[n_held++];
			h->id = id;
			h->due_us = now_us() + (uint64_t)(hold * 1000);
			h->data = NULL;
			if (payload && rnd() < dup) {
				h->data = malloc(plen);
				if (h->data) {
					memcpy(h->data, payload, plen);
					h->len = plen;
				}
			}
		}
	}
	release_due(fd, raw, 0, true);
	fprintf(stderr,
		"nfq_impair: %lu packets, %lu reordered, %lu duplicated, %lu dropped, %lu "
		"marked CE, %lu overflows\n",
		c_pkts, c_reorder, c_dup, c_drop, c_ce, c_overflow);
	return 0;
}
