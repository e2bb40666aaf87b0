/*
 * Envoy's envoy.filters.network.echo: every byte received is written back.
 * Bytes move from the receive queue to the send queue without a copy
 * (arn_tcp_rx_take + arn_tcp_write_mbuf); when the send buffer is full the
 * filter stops taking, the receive queue fills, and the advertised window
 * slows the peer down. After the peer's FIN, once everything is echoed, the
 * connection is closed (Envoy's echo passes end_stream through, which is the
 * same on the wire: data, then FIN).
 */
#include <stdbool.h>
#include <stdint.h>

#include "tcp_int.h"

static char echo_eof_mark;

void arn_tcp_echo_pump(struct arn_tcp_conn *c, bool eof)
{
	for (;;) {
		uint32_t pending = arn_tcp_rx_pending(c);
		uint32_t space = arn_tcp_sndbuf_space(c);
		if (pending == 0)
			break;
		if (space == 0) {
			/* the window holds the peer back until we drain */
			arn_tcp_want_writable(c);
			break;
		}
		struct rte_mbuf *m = arn_tcp_rx_take(c, RTE_MIN(pending, space));
		if (m == NULL)
			break;
		if (arn_tcp_write_mbuf(c, m) != 0) {
			rte_pktmbuf_free(m); /* not expected: space was checked */
			arn_tcp_abort(c);
			return;
		}
	}
	if (eof && arn_tcp_rx_pending(c) == 0)
		arn_tcp_close(c);
}

static void echo_pump(struct arn_tcp_conn *c)
{
	arn_tcp_echo_pump(c, arn_tcp_user(c) == &echo_eof_mark);
}

static int echo_accept(struct arn_tcp_conn *c, void *listener_user)
{
	(void)listener_user;
	arn_tcp_set_user(c, NULL);
	return 0;
}

static void echo_data(struct arn_tcp_conn *c, struct rte_mbuf *head, uint32_t len)
{
	(void)head;
	(void)len;
	echo_pump(c);
}

static void echo_eof(struct arn_tcp_conn *c)
{
	arn_tcp_set_user(c, &echo_eof_mark);
	echo_pump(c);
}

static void echo_writable(struct arn_tcp_conn *c)
{
	echo_pump(c);
}

const struct arn_tcp_ops arn_tcp_echo_ops = {
    .on_accept = echo_accept,
    .on_data = echo_data,
    .on_eof = echo_eof,
    .on_writable = echo_writable,
};
