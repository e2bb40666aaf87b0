/*
 * The per-worker handshake budget. A handshake step (a ClientHello
 * answered, a client's flight verified) costs the server one or more
 * public-key operations and OpenSSL 3.0's bookkeeping around them: about
 * 0.28 ms for ECDSA P-256 and 0.5 ms for RSA-2048 (bench/tls). A client that opens thousands of
 * handshakes at once must not hold a worker for seconds while its established connections wait, so
 * each loop iteration runs at most `budget` steps; further ones wait in a FIFO queue (the
 * connection's ciphertext stays in TCP meanwhile) and go first in the next iteration. Waiting for
 * the rest of a flight costs nothing; reading and writing application data never touches the
 * budget.
 */
#include "tls_int.h"

void arn_tls_worker_init(struct arn_tls_worker *w, unsigned index, uint32_t per_iter)
{
	*w = (struct arn_tls_worker){0};
	w->index = index;
	w->budget = per_iter ? per_iter : ARN_TLS_DEFAULT_HANDSHAKES_PER_ITER;
	w->budget_left = w->budget;
}

void tls_worker_defer(struct arn_tls_worker *w, struct arn_tls_conn *c)
{
	c->deferred = true;
	c->dnext = NULL;
	c->dprev = w->deferred_tail;
	if (w->deferred_tail)
		w->deferred_tail->dnext = c;
	else
		w->deferred_head = c;
	w->deferred_tail = c;
	tls_inc(&w->c[ARN_TLS_W_HANDSHAKES_DEFERRED]);
	tls_inc(&w->c[ARN_TLS_W_DEFERRED_NOW]);
}

void tls_worker_undefer(struct arn_tls_worker *w, struct arn_tls_conn *c)
{
	if (c->dprev)
		c->dprev->dnext = c->dnext;
	else
		w->deferred_head = c->dnext;
	if (c->dnext)
		c->dnext->dprev = c->dprev;
	else
		w->deferred_tail = c->dprev;
	c->dnext = c->dprev = NULL;
	c->deferred = false;
	tls_add(&w->c[ARN_TLS_W_DEFERRED_NOW], (uint64_t)-1);
}

void arn_tls_worker_begin(struct arn_tls_worker *w, uint32_t now_s)
{
	w->now_s = now_s;
	w->budget_left = w->budget;
	/* the oldest first, each granted its step now (so a caller that runs
	 * it later in the iteration keeps its place) */
	struct arn_tls_conn *last = w->deferred_tail;
	while (w->budget_left && w->deferred_head) {
		struct arn_tls_conn *c = w->deferred_head;
		bool was_last = c == last;
		tls_worker_undefer(w, c);
		c->granted = true;
		w->budget_left--;
		if (c->io->resume)
			c->io->resume(c->io_arg); /* may free c */
		if (was_last)
			break; /* everything queued before this iteration had its turn */
	}
}

void arn_tls_worker_read(const struct arn_tls_worker *w, uint64_t *out)
{
	for (unsigned i = 0; i < ARN_TLS_W_COUNT; i++)
		out[i] = __atomic_load_n(&w->c[i], __ATOMIC_RELAXED);
}
