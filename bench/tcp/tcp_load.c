#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * The load generator of bench/tcp (the Python client of tests/tcp could not
 * keep up with either server): single-threaded, epoll, non-blocking.
 *
 *   tcp_load bulk HOST PORT BYTES [SECONDS]
 *       one connection sends BYTES of a pseudo-random stream while reading
 *       the echo, then shuts down writing and reads to EOF; every byte that
 *       comes back is compared with the stream.
 *   tcp_load cps HOST PORT SECONDS CONCURRENCY
 *       connections per second: CONCURRENCY connections in flight, each
 *       connects, sends 64 bytes, reads them back and closes with SO_LINGER
 *       0 (so the client keeps no TIME_WAIT), as many as fit in SECONDS.
 *
 * Output lines match tests/tcp/tcp_client.py, which bench_tcp.sh parses.
 * Exit 0 on success.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The stream: byte i is a function of i alone (xorshift of the 8-byte
 * block index), so the reader checks what it gets without keeping a copy. */
static inline uint64_t block(uint64_t k)
{
	uint64_t x = k * 0x9e3779b97f4a7c15ull + 1;
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

static void fill(uint8_t *p, uint64_t off, size_t n)
{
	size_t i = 0;
	for (; i < n && ((off + i) & 7); i++)
		p[i] = (uint8_t)(block((off + i) >> 3) >> (8 * ((off + i) & 7)));
	for (; i + 8 <= n; i += 8) {
		uint64_t b = block((off + i) >> 3);
		for (int k = 0; k < 8; k++)
			p[i + k] = (uint8_t)(b >> (8 * k));
	}
	for (; i < n; i++)
		p[i] = (uint8_t)(block((off + i) >> 3) >> (8 * ((off + i) & 7)));
}

static struct sockaddr_in addr_of(const char *host, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
		fprintf(stderr, "tcp_load: bad address %s\n", host);
		exit(2);
	}
	return a;
}

static int bulk(const char *host, int port, uint64_t total, double limit)
{
	struct sockaddr_in a = addr_of(host, port);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	int big = 4 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		printf("bulk FAILED: connect: %s\n", strerror(errno));
		return 1;
	}
	fcntl(s, F_SETFL, O_NONBLOCK);
	static uint8_t out[1 << 18], in[1 << 18], want[1 << 18];
	uint64_t sent = 0, got = 0, bad_at = UINT64_MAX;
	size_t out_len = 0, out_off = 0;
	bool shut = false, eof = false;
	double t0 = now_s();
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.fd = s};
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	while (!eof && now_s() - t0 < limit) {
		struct epoll_event e;
		if (epoll_wait(ep, &e, 1, 200) <= 0)
			continue;
		if ((e.events & EPOLLOUT) && !shut) {
			for (;;) {
				if (out_off == out_len) {
					out_len =
					    (size_t)(total - sent < sizeof(out) ? total - sent
										: sizeof(out));
					out_off = 0;
					if (out_len == 0) {
						shutdown(s, SHUT_WR);
						shut = true;
						ev.events = EPOLLIN;
						epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
						break;
					}
					fill(out, sent, out_len);
				}
				ssize_t w = write(s, out + out_off, out_len - out_off);
				if (w <= 0)
					break;
				out_off += (size_t)w;
				sent += (uint64_t)w;
			}
		}
		if (e.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
			for (;;) {
				ssize_t r = read(s, in, sizeof(in));
				if (r == 0) {
					eof = true;
					break;
				}
				if (r < 0)
					break;
				fill(want, got, (size_t)r);
				if (bad_at == UINT64_MAX && memcmp(in, want, (size_t)r) != 0)
					bad_at = got;
				got += (uint64_t)r;
			}
		}
	}
	double dt = now_s() - t0;
	close(s);
	bool ok = eof && got == total && bad_at == UINT64_MAX;
	printf("bulk %s: %lu bytes each way in %.2f s (%.1f MB/s each way) data %s\n",
	       ok ? "ok" : "FAILED", (unsigned long)got, dt, dt > 0 ? (double)total / dt / 1e6 : 0,
	       bad_at == UINT64_MAX ? "match" : "MISMATCH");
	return ok ? 0 : 1;
}

struct cstate {
	int fd;
	unsigned got;
	bool sent;
};

static int cps(const char *host, int port, double seconds, int conc)
{
	struct sockaddr_in a = addr_of(host, port);
	struct rlimit rl = {(rlim_t)conc + 256, (rlim_t)conc + 256};
	setrlimit(RLIMIT_NOFILE, &rl);
	int ep = epoll_create1(0);
	struct cstate *st = calloc((size_t)conc, sizeof(*st));
	static const char msg[64] =
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";
	unsigned long done = 0, bad = 0;
	struct linger lg = {1, 0};

#define START(i)                                                                                   \
	do {                                                                                       \
		int fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);                         \
		setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));                           \
		connect(fd_, (struct sockaddr *)&a, sizeof(a));                                    \
		st[i] = (struct cstate){.fd = fd_};                                                \
		struct epoll_event e_ = {.events = EPOLLOUT, .data.u32 = (uint32_t)(i)};           \
		epoll_ctl(ep, EPOLL_CTL_ADD, fd_, &e_);                                            \
	} while (0)

	double t0 = now_s();
	for (int i = 0; i < conc; i++)
		START(i);
	struct epoll_event evs[256];
	while (now_s() - t0 < seconds) {
		int n = epoll_wait(ep, evs, 256, 100);
		for (int k = 0; k < n; k++) {
			unsigned i = evs[k].data.u32;
			struct cstate *c = &st[i];
			bool finished = false, failed = false;
			if (evs[k].events & EPOLLERR) {
				failed = true;
			} else if (!c->sent && (evs[k].events & EPOLLOUT)) {
				if (write(c->fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
					failed = true;
				} else {
					c->sent = true;
					struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
				}
			} else if (evs[k].events & (EPOLLIN | EPOLLHUP)) {
				char buf[256];
				ssize_t r = read(c->fd, buf, sizeof(buf));
				if (r <= 0)
					failed = true;
				else if ((c->got += (unsigned)r) >= sizeof(msg))
					finished = true;
			}
			if (finished || failed) {
				done += finished;
				bad += failed;
				close(c->fd);
				START(i);
			}
		}
	}
	double dt = now_s() - t0;
	printf("cps: %.0f connections/s (%lu in %.1f s, %lu failed, %d in flight)\n",
	       (double)done / dt, done, dt, bad, conc);
	return bad == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: tcp_load bulk HOST PORT BYTES [SECONDS]\n"
				"       tcp_load cps HOST PORT SECONDS CONCURRENCY\n");
		return 2;
	}
	if (strcmp(argv[1], "bulk") == 0)
		return bulk(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
			    argc > 5 ? atof(argv[5]) : 300);
	if (strcmp(argv[1], "cps") == 0 && argc > 5)
		return cps(argv[2], atoi(argv[3]), atof(argv[4]), atoi(argv[5]));
	fprintf(stderr, "tcp_load: unknown mode %s\n", argv[1]);
	return 2;
}
