/*
 * The admin HTTP/1.1 server: kernel sockets, non-blocking, polled from the
 * control lcore's loop (arn_admin_poll) with a zero timeout, so it never
 * holds up xDS or configuration work. Requests are small and answered in
 * one go; responses are queued and written as the socket takes them.
 *
 * Limits keep a misbehaving client from hurting the process: 64
 * connections, 64 KiB of request head, 1 MiB of body, 10 s to send a
 * request, 60 s idle on keep-alive. Requests are parsed by
 * arn_admin_parse_head (http_parse.c), strictly: what it refuses is
 * answered with its status and the connection closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "admin_int.h"
#include "arn_bootstrap.h"
#include "arn_http_reason.h"
#include "arn_log.h"
#include "arn_stats.h"
#include "arn_stats_envoy.h"
#include "http_parse.h"

#define MAX_CONNS 64
#define MAX_HEAD ARN_ADMIN_MAX_HEAD
#define MAX_BODY ARN_ADMIN_MAX_BODY
#define REQUEST_TIMEOUT_MS 10000
#define IDLE_TIMEOUT_MS 60000

/* The admin counts itself as Envoy does: http.admin.* and listener.admin.*. */

struct conn {
	int fd;
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_len, out_off;
	bool close_after; /* close once out is written */
	bool has_request; /* bytes of a request arrived since the last response */
	int64_t since_ms; /* start of the current request, or of idleness */
	char peer[64];
};

struct arn_admin {
	int lfd;
	uint16_t port;
	char addr[INET6_ADDRSTRLEN];
	struct conn conns[MAX_CONNS];
	unsigned n_conns;
	struct arn_admin_ctx ctx;
	struct arn_stats_scope *hs, *ls;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- responses ------------------------------------------------------------------ */

static void queue(struct conn *c, const char *p, size_t n)
{
	if (c->out_len + n > 0 && c->out == NULL) {
		c->out = malloc(n);
		if (c->out == NULL) {
			c->close_after = true;
			return;
		}
	} else if (n) {
		char *o = realloc(c->out, c->out_len + n);
		if (o == NULL) {
			c->close_after = true;
			return;
		}
		c->out = o;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
}

static void respond(struct arn_admin *a, struct conn *c, int status, const char *ctype,
		    const struct arn_sb *body, bool head_only, const char *extra_headers)
{
	char h[512];
	int n =
	    snprintf(h, sizeof(h),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Cache-Control: no-cache, max-age=0\r\nX-Content-Type-Options: nosniff\r\n"
		     "%sConnection: %s\r\n\r\n",
		     status, arn_http_reason((unsigned)status), ctype, body->len,
		     extra_headers ? extra_headers : "", c->close_after ? "close" : "keep-alive");
	queue(c, h, (size_t)n);
	if (!head_only && body->len)
		queue(c, body->buf, body->len);
	arn_stats_inc(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_rq_total);
	arn_stats_inc(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_rq_http1_total);
	arn_stats_inc(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_rq_completed);
	arn_stats_inc(a->hs, ARN_STATS_SLOT_CONTROL,
		      arn_stats_code_class(ARN_HTTP_downstream_rq_1xx, (unsigned)status));
}

static void respond_text(struct arn_admin *a, struct conn *c, int status, const char *text)
{
	struct arn_sb b = ARN_SB_INIT;
	arn_sb_puts(&b, text);
	c->close_after = true;
	respond(a, c, status, "text/plain; charset=UTF-8", &b, false, NULL);
	arn_sb_free(&b);
}

/* ---- requests -------------------------------------------------------------------- */

static void dispatch(struct arn_admin *a, struct conn *c, const char *method, char *target,
		     const char *body, size_t body_len)
{
	uint64_t t0 = mono_us();
	char *qm = strchr(target, '?');
	const char *query = "";
	if (qm) {
		*qm = '\0';
		query = qm + 1;
	}
	char path[1024];
	size_t path_len = arn_admin_pct_decode(target, strlen(target), path, sizeof(path), false);
	if (path_len != strlen(path)) {
		respond_text(a, c, 400, "percent-encoded NUL in the path\n");
		return;
	}
	/* Envoy accepts a trailing slash on no endpoint but "/"; neither do we. */
	struct arn_admin_request req = {
	    .method = method,
	    .path = path,
	    .query = query,
	    .body = body,
	    .body_len = body_len,
	};
	struct arn_admin_response resp = {200, "text/plain; charset=UTF-8", ARN_SB_INIT};
	bool head = strcmp(method, "HEAD") == 0;
	unsigned m = strcmp(method, "GET") == 0 || head ? ARN_ADMIN_GET
		     : strcmp(method, "POST") == 0	? ARN_ADMIN_POST
							: 0;
	const struct arn_admin_handler *h = arn_admin_handler_find_(path);
	char allow[64] = "";
	if (h == NULL) {
		resp.status = 404;
		arn_sb_printf(&resp.body, "invalid path: %s\n", path);
		arn_admin_help_(&resp.body);
	} else if ((h->methods & m) == 0) {
		resp.status = 405;
		bool post = h->methods & ARN_ADMIN_POST, get = h->methods & ARN_ADMIN_GET;
		snprintf(allow, sizeof(allow), "Allow: %s%s%s\r\n", get ? "GET, HEAD" : "",
			 get && post ? ", " : "", post ? "POST" : "");
		if (post && !get)
			arn_sb_printf(&resp.body,
				      "Method %s not allowed, POST required: %s changes the "
				      "server's state (curl -X POST http://%s:%u%s)\n",
				      method, path, a->addr, a->port, path);
		else
			arn_sb_printf(&resp.body, "Method %s not allowed on %s; use GET\n", method,
				      path);
	} else {
		h->fn(&req, &resp, h->arg);
	}
	ARN_DEBUG(ADMIN, "%s %s%s%s %d (%zu bytes) from %s", method, path, *query ? "?" : "", query,
		  resp.status, resp.body.len, c->peer);
	if (resp.body.oom) {
		arn_sb_free(&resp.body);
		respond_text(a, c, 500, "out of memory building the response\n");
	} else {
		respond(a, c, resp.status, resp.content_type, &resp.body, head,
			allow[0] ? allow : NULL);
	}
	arn_sb_free(&resp.body);
	arn_stats_hist_record(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_rq_time,
			      mono_us() - t0);
}

/* Try to handle one complete request from c->in. @return true if one was handled. */
static bool try_request(struct arn_admin *a, struct conn *c)
{
	struct arn_admin_head h;
	ssize_t hlen = arn_admin_parse_head(c->in, c->in_len, &h);
	if (hlen == ARN_AGAIN)
		return false;
	if (hlen < 0) {
		char msg[160];
		snprintf(msg, sizeof(msg), "%s\n", h.error);
		respond_text(a, c, h.status, msg);
		return true;
	}
	size_t used = (size_t)hlen + h.content_length;
	if (c->in_len < used)
		return false; /* wait for the body */
	char method[ARN_ADMIN_MAX_METHOD + 1];
	memcpy(method, h.method, h.method_len);
	method[h.method_len] = '\0';
	char *target = malloc(h.target_len + 1);
	if (target == NULL) {
		c->close_after = true;
		return false;
	}
	memcpy(target, h.target, h.target_len);
	target[h.target_len] = '\0';
	if (!h.keep_alive)
		c->close_after = true;
	dispatch(a, c, method, target, c->in + hlen, h.content_length);
	free(target);
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	c->has_request = c->in_len > 0;
	c->since_ms = mono_ms();
	return true;
}

/* ---- connections ------------------------------------------------------------------ */

static void conn_close(struct arn_admin *a, unsigned i)
{
	struct conn *c = &a->conns[i];
	close(c->fd);
	free(c->in);
	free(c->out);
	a->conns[i] = a->conns[--a->n_conns];
	arn_stats_gauge_add(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_cx_active, -1);
	arn_stats_gauge_add(a->ls, ARN_STATS_SLOT_CONTROL, ARN_LS_downstream_cx_active, -1);
}

/* Write what is queued. @return -1 if the connection is done with. */
static int conn_flush(struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->out_off += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return c->close_after ? -1 : 0;
}

/* Read and answer. @return -1 to close. */
static int conn_read(struct arn_admin *a, struct conn *c)
{
	for (;;) {
		if (c->in_cap - c->in_len < 4096) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
			if (cap > MAX_HEAD + MAX_BODY + 8192)
				break; /* try_request will refuse it */
			char *in = realloc(c->in, cap);
			if (in == NULL)
				return -1;
			c->in = in;
			c->in_cap = cap;
		}
		ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n == 0)
			return c->out_len ? 0 : -1;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!c->has_request) {
			c->has_request = true;
			c->since_ms = mono_ms();
		}
		c->in_len += (size_t)n;
	}
	/* One request at a time: answer it, then read on once it is written. */
	while (!c->close_after && c->in_len && c->out_len == 0 && try_request(a, c))
		;
	return 0;
}

static void accept_all(struct arn_admin *a)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				ARN_WARN(ADMIN, "accept: %s", strerror(errno));
			return;
		}
		if (a->n_conns == MAX_CONNS) {
			arn_stats_inc(a->ls, ARN_STATS_SLOT_CONTROL, ARN_LS_downstream_cx_overflow);
			static const char busy[] =
			    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 31\r\n"
			    "Connection: close\r\n\r\ntoo many admin connections open\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = &a->conns[a->n_conns++];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->since_ms = mono_ms();
		char host[INET6_ADDRSTRLEN] = "?";
		unsigned port = 0;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
			port = ntohs(s4->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
			port = ntohs(s6->sin6_port);
		}
		snprintf(c->peer, sizeof(c->peer), "%s:%u", host, port);
		arn_stats_inc(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_cx_total);
		arn_stats_inc(a->ls, ARN_STATS_SLOT_CONTROL, ARN_LS_downstream_cx_total);
		arn_stats_gauge_add(a->hs, ARN_STATS_SLOT_CONTROL, ARN_HTTP_downstream_cx_active,
				    1);
		arn_stats_gauge_add(a->ls, ARN_STATS_SLOT_CONTROL, ARN_LS_downstream_cx_active, 1);
	}
}

void arn_admin_poll(struct arn_admin *a)
{
	if (a == NULL)
		return;
	struct pollfd pf[MAX_CONNS + 1];
	pf[0] = (struct pollfd){.fd = a->lfd, .events = POLLIN};
	for (unsigned i = 0; i < a->n_conns; i++)
		pf[i + 1] = (struct pollfd){
		    .fd = a->conns[i].fd,
		    .events = (short)(a->conns[i].out_len ? POLLOUT : POLLIN),
		};
	unsigned n = a->n_conns;
	if (poll(pf, n + 1, 0) <= 0)
		goto timeouts;
	/* Walk backwards: conn_close moves the last connection into the hole. */
	for (unsigned i = n; i-- > 0;) {
		struct conn *c = &a->conns[i];
		short re = pf[i + 1].revents;
		if (re == 0)
			continue;
		int rc = 0;
		if (re & (POLLIN | POLLHUP | POLLERR))
			rc = conn_read(a, c);
		if (rc == 0 && c->out_len)
			rc = conn_flush(c);
		if (rc == 0 && c->out_len == 0 && c->in_len && !c->close_after) {
			/* pipelined requests already read */
			while (c->in_len && c->out_len == 0 && !c->close_after && try_request(a, c))
				if (conn_flush(c) != 0) {
					rc = -1;
					break;
				}
		}
		if (rc != 0)
			conn_close(a, i);
	}
	if (pf[0].revents & POLLIN)
		accept_all(a);
timeouts:;
	int64_t now = mono_ms();
	for (unsigned i = a->n_conns; i-- > 0;) {
		struct conn *c = &a->conns[i];
		if (c->out_len)
			continue;
		if (c->has_request && now - c->since_ms > REQUEST_TIMEOUT_MS) {
			respond_text(a, c, 408, "request not received in time\n");
			if (conn_flush(c) != 0 || c->out_len == 0)
				conn_close(a, i);
		} else if (!c->has_request && now - c->since_ms > IDLE_TIMEOUT_MS) {
			conn_close(a, i);
		}
	}
}

/* ---- start / stop ------------------------------------------------------------------- */

static bool is_loopback(int fam, const void *addr)
{
	if (fam == AF_INET)
		return (ntohl(((const struct in_addr *)addr)->s_addr) >> 24) == 127;
	const struct in6_addr *a6 = addr;
	if (IN6_IS_ADDR_LOOPBACK(a6))
		return true;
	return IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127;
}

struct arn_admin *arn_admin_start(const struct arn_admin_options *opt)
{
	const struct arn_bootstrap *b = opt->bootstrap;
	const char *addr = opt->address ? opt->address : b ? b->admin_address : NULL;
	int port = opt->port >= 0 ? opt->port : b ? b->admin_port : -1;
	if (addr == NULL || port < 0) {
		ARN_ERR(ADMIN, "no admin address to listen on");
		return NULL;
	}
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} sa;
	memset(&sa, 0, sizeof(sa));
	int fam;
	socklen_t sl;
	if (inet_pton(AF_INET, addr, &sa.v4.sin_addr) == 1) {
		fam = AF_INET;
		sa.v4.sin_family = AF_INET;
		sa.v4.sin_port = htons((uint16_t)port);
		sl = sizeof(sa.v4);
	} else if (inet_pton(AF_INET6, addr, &sa.v6.sin6_addr) == 1) {
		fam = AF_INET6;
		sa.v6.sin6_family = AF_INET6;
		sa.v6.sin6_port = htons((uint16_t)port);
		sl = sizeof(sa.v6);
	} else {
		ARN_ERR(ADMIN,
			"envoy_bootstrap.admin.address.socket_address.address: '%s' is not an IP "
			"address; write one such as 127.0.0.1",
			addr);
		return NULL;
	}
	const char *env = getenv("ARION_ADMIN_ALLOW_REMOTE");
	bool allow = opt->allow_non_loopback || (env && strcmp(env, "1") == 0);
	if (!is_loopback(fam,
			 fam == AF_INET ? (void *)&sa.v4.sin_addr : (void *)&sa.v6.sin6_addr)) {
		if (!allow) {
			ARN_ERR(
			    ADMIN,
			    "envoy_bootstrap.admin.address: %s:%d is not a loopback address. The "
			    "admin endpoint has no authentication: anyone who reaches it can stop "
			    "the process (POST /quitquitquit), fail health checks and read the "
			    "whole configuration. Bind it to 127.0.0.1 (reach it through an SSH "
			    "tunnel or a local agent), or start arion with "
			    "ARION_ADMIN_ALLOW_REMOTE=1 in the environment to expose it anyway "
			    "(docs/admin.md)",
			    addr, port);
			return NULL;
		}
		ARN_WARN(ADMIN,
			 "the admin endpoint listens on %s:%d, which is not loopback "
			 "(ARION_ADMIN_ALLOW_REMOTE=1): protect it with a firewall",
			 addr, port);
	}
	struct arn_admin *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	a->lfd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->lfd < 0) {
		ARN_ERR(ADMIN, "admin socket: %s", strerror(errno));
		free(a);
		return NULL;
	}
	int one = 1;
	setsockopt(a->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(a->lfd, (struct sockaddr *)&sa, sl) != 0 || listen(a->lfd, 64) != 0) {
		ARN_ERR(ADMIN, "cannot listen on admin address %s:%d: %s%s", addr, port,
			strerror(errno),
			errno == EADDRINUSE ? " (another process holds the port; change "
					      "admin.address.socket_address.port_value)"
					    : "");
		close(a->lfd);
		free(a);
		return NULL;
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	getsockname(a->lfd, (struct sockaddr *)&bound, &bl);
	a->port = ntohs(fam == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
				       : ((struct sockaddr_in6 *)&bound)->sin6_port);
	snprintf(a->addr, sizeof(a->addr), "%s", addr);
	a->ctx = (struct arn_admin_ctx){
	    .bs = b,
	    .argc = opt->argc,
	    .argv = opt->argv,
	    .stop = opt->stop,
	    .healthcheck_changed = opt->healthcheck_changed,
	    .healthcheck_arg = opt->healthcheck_arg,
	};
	a->hs = arn_stats_scope_get(&arn_stats_http_schema, ARN_STATS_TAG_HCM, "admin");
	a->ls = arn_stats_scope_get(&arn_stats_listener_schema, ARN_STATS_TAG_LISTENER, "admin");
	if (a->hs == NULL || a->ls == NULL || arn_admin_builtins_register_(&a->ctx) != 0) {
		arn_stats_scope_put(a->hs);
		arn_stats_scope_put(a->ls);
		close(a->lfd);
		free(a);
		return NULL;
	}
	arn_admin_set_started_(true);
	ARN_INFO(ADMIN, "admin listening on %s%s%s:%u", fam == AF_INET6 ? "[" : "", addr,
		 fam == AF_INET6 ? "]" : "", a->port);
	return a;
}

uint16_t arn_admin_port(const struct arn_admin *a)
{
	return a->port;
}

void arn_admin_stop(struct arn_admin *a)
{
	if (a == NULL)
		return;
	/* Give queued answers (the /quitquitquit reply) a moment to go out. */
	int64_t deadline = mono_ms() + 200;
	for (bool pending = true; pending && mono_ms() < deadline;) {
		pending = false;
		for (unsigned i = 0; i < a->n_conns; i++)
			if (a->conns[i].out_len && conn_flush(&a->conns[i]) == 0 &&
			    a->conns[i].out_len)
				pending = true;
		if (pending) {
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
	}
	while (a->n_conns)
		conn_close(a, a->n_conns - 1);
	close(a->lfd);
	arn_admin_builtins_unregister_(&a->ctx);
	arn_admin_set_started_(false);
	arn_stats_scope_put(a->hs);
	arn_stats_scope_put(a->ls);
	free(a);
}
