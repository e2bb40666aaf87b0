#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/*
 * The Linux reference for bench/tcp: a single-threaded epoll echo server
 * (what Arion's echo listener does, on the kernel's stack). Echoes until the
 * peer's FIN, then closes.
 *
 *   echo_server PORT [CONGESTION_CONTROL]
 *
 * CONGESTION_CONTROL (e.g. cubic, to match Arion's default) is set on the
 * listener, which its connections inherit: a namespace's own default may
 * only be one of net.ipv4.tcp_allowed_congestion_control, the socket
 * option (as root) any available one.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 7;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (argc > 2 &&
	    setsockopt(ls, IPPROTO_TCP, TCP_CONGESTION, argv[2], strlen(argv[2])) != 0) {
		perror("echo_server: TCP_CONGESTION");
		return 1;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 4096) != 0) {
		perror("echo_server");
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	static char buf[256 * 1024];
	struct epoll_event evs[256];
	fprintf(stderr, "echo_server: listening on %d%s%s\n", port,
		argc > 2 ? ", congestion control " : "", argc > 2 ? argv[2] : "");
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == ls) {
				int c;
				while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
				}
				continue;
			}
			for (;;) {
				ssize_t r = read(fd, buf, sizeof(buf));
				if (r > 0) {
					/* blocking-style write of what we read: the kernel
					 * send buffer absorbs it, as Arion's does */
					ssize_t off = 0;
					while (off < r) {
						ssize_t w = write(fd, buf + off, (size_t)(r - off));
						if (w < 0 && errno == EAGAIN) {
							usleep(50);
							continue;
						}
						if (w <= 0)
							break;
						off += w;
					}
					continue;
				}
				if (r == 0 || (r < 0 && errno != EAGAIN)) {
					close(fd);
				}
				break;
			}
		}
	}
}
