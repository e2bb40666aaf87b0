#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * bench/xds's probe: GETs PATH through Arion (198.18.0.2:80) in a keep-alive
 * loop until a response's body starts with WANT.
 *
 *   xds_probe PATH WANT [warm]
 *
 * Prints "ready" before the first request (with "warm": after the first
 * answer, so that what follows is timed on an open connection, not on
 * connecting), then "seen <epoch s> mono <CLOCK_MONOTONIC s> errors <n>" at
 * the first response whose body starts with WANT, and exits 0; "timeout"
 * and 1 after 120 s. Any answer other than a 200 is counted as an error, as
 * is a failed connection (retried after a millisecond: the first probe
 * knocks before the listener exists).
 *
 * It replaces probe.py, which stays as the fallback when this is not
 * built: at nice 10 on the load core beside the control plane, Python's
 * 100-odd microseconds of CPU a request left the probe waiting for the
 * core for up to 2 ms before it asked again, which the bench counted as
 * time to serving. Blocking sockets, one request in flight: its own cost
 * is a send and a few receives a round.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};
	inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One response on @p fd into @p buf (@p cap bytes): the status in
 * *@p status, the body's first bytes at *@p body (*@p blen of them).
 * @return 0, or -1 when the connection must be dropped (closed, timed out,
 * a response this probe does not read: no Content-Length, or too big). */
static int read_response(int fd, char *buf, size_t cap, int *status, const char **body,
			 size_t *blen)
{
	size_t have = 0;
	char *eoh = NULL;
	while (eoh == NULL) {
		if (have + 1 >= cap)
			return -1;
		ssize_t k = recv(fd, buf + have, cap - 1 - have, 0);
		if (k <= 0)
			return -1;
		have += (size_t)k;
		buf[have] = '\0';
		eoh = strstr(buf, "\r\n\r\n");
	}
	if (sscanf(buf, "HTTP/1.%*d %d", status) != 1)
		return -1;
	size_t hlen = (size_t)(eoh + 4 - buf);
	long clen = -1;
	for (char *p = strstr(buf, "\r\n"); p != NULL && p < eoh; p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, "content-length:", 15) == 0)
			clen = strtol(p + 17, NULL, 10);
	if (clen < 0 || hlen + (size_t)clen >= cap)
		return -1;
	while (have < hlen + (size_t)clen) {
		ssize_t k = recv(fd, buf + have, hlen + (size_t)clen - have, 0);
		if (k <= 0)
			return -1;
		have += (size_t)k;
	}
	*body = buf + hlen;
	*blen = (size_t)clen;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: xds_probe PATH WANT [warm]\n");
		return 2;
	}
	const char *want = argv[2];
	bool warm = argc > 3 && strcmp(argv[3], "warm") == 0;
	char req[512];
	int rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 198.18.0.2\r\n\r\n", argv[1]);
	if (rl < 0 || (size_t)rl >= sizeof(req))
		return 2;
	double deadline = clock_s(CLOCK_MONOTONIC) + 120;
	int fd = -1, errors = 0;
	char buf[8192];
	if (!warm) {
		printf("ready\n");
		fflush(stdout);
	}
	while (clock_s(CLOCK_MONOTONIC) < deadline) {
		if (fd < 0 && (fd = dial()) < 0) {
			errors++;
			usleep(1000);
			continue;
		}
		int status = 0;
		const char *body = NULL;
		size_t blen = 0;
		if (send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl ||
		    read_response(fd, buf, sizeof(buf), &status, &body, &blen) != 0) {
			errors++;
			close(fd);
			fd = -1;
			usleep(1000);
			continue;
		}
		double wall = clock_s(CLOCK_REALTIME), mono = clock_s(CLOCK_MONOTONIC);
		if (warm) {
			warm = false; /* the answer before the change, whatever it is */
			printf("ready\n");
			fflush(stdout);
			continue;
		}
		if (status != 200)
			errors++;
		else if (blen >= strlen(want) && memcmp(body, want, strlen(want)) == 0) {
			printf("seen %.6f mono %.6f errors %d\n", wall, mono, errors);
			fflush(stdout);
			return 0;
		}
	}
	printf("timeout errors %d\n", errors);
	return 1;
}
