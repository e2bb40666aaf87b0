/*
 * HTTP/1 behind the codec contract (http_codec_h1.h): events parsed from a
 * peer's input (arn_h1_parse, fed one segment at a time from http_in), and
 * heads, bodies and local replies written to its output (arn_h1_write_*
 * into mbuf chains, body bytes by reference, chunked when the head said
 * so).
 */
#include <errno.h>
#include <string.h>

#include <rte_mbuf.h>

#include "arn_tcp.h"
#include "h1_int.h"
#include "http_codec_h1.h"
#include "http_int.h"
#include "http_worker.h"

_Static_assert((int)HTTP_EV_HEAD == (int)ARN_H1_EV_HEAD &&
		   (int)HTTP_EV_BODY == (int)ARN_H1_EV_BODY &&
		   (int)HTTP_EV_END == (int)ARN_H1_EV_END,
	       "codec events mirror the parser's");
_Static_assert(ARN_H1_EV_NEED_TRAILERS == ARN_H1_EV_NEED_SCRATCH + 1 &&
		   ARN_H1_EV_NEED_SCRATCH > ARN_H1_EV_END,
	       "the parser's two requests are its last events (decode_fast_any tests once)");

static struct http_h1_peer *h1(struct http_peer *p)
{
	return http_h1_of(p);
}

static const struct http_h1_peer *h1c(const struct http_peer *p)
{
	return http_h1_of((struct http_peer *)(uintptr_t)p);
}

/* ---- set-up ---------------------------------------------------------------------------- */

void http_h1_peer_init(struct http_h1_peer *h, struct http_worker *w, struct arn_tcp_conn *tc)
{
	memset(h, 0, sizeof(*h));
	h->peer.codec = &http_codec_h1;
	h->w = w;
	h->tc = tc;
	h->tp = &http_transport_raw;
}

void http_h1_peer_free(struct http_h1_peer *h)
{
	if (h->w && h->in.head)
		h->w->body_seg = NULL; /* it may be one of these segments */
	http_in_free(&h->in);
	http_out_reset(&h->out);
	h->peer.queued = false;
}

void http_h1_serve(struct http_h1_peer *h, const struct arn_h1_config *cfg, struct arn_h1_msg *msg)
{
	h->server = true;
	arn_h1_parser_init(&h->p, ARN_H1_REQUEST, cfg, msg);
	arn_h1_parser_allow_grow(&h->p, true);
}

void http_h1_expect(struct http_h1_peer *h, struct arn_h1_msg *msg, uint16_t max_headers,
		    enum arn_h1_method method)
{
	/* a reused upstream connection (once a proxied request) */
	if (h1_parser_rearm_response(&h->p, msg, max_headers, method))
		return;
	struct arn_h1_config cfg = {.max_headers = max_headers};
	arn_h1_parser_init(&h->p, ARN_H1_RESPONSE, &cfg, msg);
	arn_h1_parser_allow_grow(&h->p, true);
	arn_h1_parser_expect(&h->p, method);
}

/* ---- what the peer sends ------------------------------------------------------------------ */

/* A head's lines that cross segments outgrew the message's scratch: go on
 * in a large one from the worker's pool (kept with the message buffer's
 * owner), or, with none left or that one full too, let the parser fail the
 * head (431 for a request, 502 for a response). */
static void scratch_grow(struct http_worker *w, struct arn_h1_parser *p, char **big)
{
	if (!*big)
		*big = http_big_get(w);
	if (*big && p->scratch != *big &&
	    arn_h1_parser_grow_scratch(p, *big, HTTP_BIG_SCRATCH) == 0)
		return;
	arn_h1_parser_grow_scratch(p, NULL, 0);
}

/* Parse the next event from @p in. @p pins gets every segment fed while
 * @p pin is true. @return as arn_h1_parse, with ARN_AGAIN when the input
 * is exhausted (more is needed). */
/* The first segment of @p in, all of it read. */
static inline void in_pop(struct http_in *in)
{
	struct rte_mbuf *m = in->head;
	in->head = m->next;
	if (!in->head)
		in->tail = NULL;
	in->off = 0;
	http_seg_free(m);
}

/*
 * A head's pins hold HTTP_PIN_MAX segments. A head in more (a client
 * with a small MSS and a long head: segments over 512 bytes are not
 * packed into the input's tail; an upstream that writes its head a line
 * at a time, or trickles it) goes on without pinning the rest: the
 * parser is given each of those segments up to its next LF, never past
 * it, so that every line ends at a run's end and is copied to scratch,
 * as a line across segments is (arn_h1.h), and no slice points into a
 * segment the pins do not hold. @return the bytes of the run at @p b
 * (@p avail) to give the parser: all of them, and @p m pinned, while
 * there is room or @p m is pinned already.
 */
static __attribute__((noinline, cold)) uint32_t head_cut(struct http_pins *pins, struct rte_mbuf *m,
							 const char *b, uint32_t avail)
{
	for (unsigned i = 0; i < pins->n; i++)
		if (pins->seg[i] == m)
			return avail;
	const char *lf = memchr(b, '\n', avail);
	if (!lf)
		return avail;
	/* the LF that ends the line scratch holds, alone */
	return lf == b ? 1 : (uint32_t)(lf - b);
}

/*
 * A chunked body's trailer lines are slices of their runs, kept by the
 * message's pins as its head's are. With the pins full (a head in
 * HTTP_PIN_MAX segments), the lines of a segment they do not hold go to
 * scratch as head_cut sends a head's: the run is cut at its next LF while
 * the parser is in the chunks' framing, where trailers may begin, or in
 * the trailers (their lines used to be slices of unpinned segments, and
 * the trailers were dropped without a word). @return the bytes of the run
 * to give the parser.
 */
static __attribute__((noinline, cold)) uint32_t trailer_cut(struct http_pins *pins,
							    const struct arn_h1_parser *p,
							    struct rte_mbuf *m, const char *b,
							    uint32_t avail)
{
	if (!arn_h1_parser_in_chunk_lines(p))
		return avail;
	return head_cut(pins, m, b, avail);
}

/* Pin @p m for a head being decoded, or, with the pins full, the bytes
 * of its run to give the parser (head_cut). */
static inline uint32_t head_pin(struct http_pins *pins, struct rte_mbuf *m, const char *b,
				uint32_t avail)
{
	if (__builtin_expect(pins->n == HTTP_PIN_MAX, 0))
		return head_cut(pins, m, b, avail);
	http_pins_add(pins, m);
	return avail;
}

static ssize_t in_parse(struct http_in *in, struct arn_h1_parser *p, struct arn_h1_ev *ev,
			struct http_pins *pins, bool pin)
{
	while (in->head) {
		struct rte_mbuf *m = in->head;
		uint32_t avail = m->data_len - in->off;
		if (avail == 0) {
			in_pop(in);
			continue;
		}
		const char *b = rte_pktmbuf_mtod_offset(m, const char *, in->off);
		if (pin && pins)
			avail = head_pin(pins, m, b, avail);
		else if (pins && __builtin_expect(pins->n == HTTP_PIN_MAX, 0))
			avail = trailer_cut(pins, p, m, b, avail);
		ssize_t n = arn_h1_parse(p, b, avail, ev);
		if (n == ARN_AGAIN) {
			/* trailer lines may lie in this run, which goes before
			 * END: kept with the message, as a head's runs are
			 * (with the pins full, trailer_cut sent them to scratch) */
			if (!pin && pins && pins->n < HTTP_PIN_MAX && arn_h1_parser_in_trailers(p))
				http_pins_add(pins, m);
			in->off += avail;
			in->bytes -= avail;
			continue;
		}
		if (n < 0)
			return n;
		in->off += (uint32_t)n;
		in->bytes -= (uint32_t)n;
		return n;
	}
	/* no input left, but the parser may still owe an event that needs no
	 * byte (END after a head without body, or after the last body byte);
	 * between messages it owes none, and every decode after a message's
	 * END comes here with nothing read yet (half the calls: the parser's
	 * entry costs ~40 instructions, the test 5) */
	if (h1_parser_idle(p)) {
		ev->type = ARN_H1_EV_NONE;
		ev->data = NULL;
		ev->len = 0;
		return ARN_AGAIN;
	}
	return arn_h1_parse(p, "", 0, ev);
}

/* The message's trailers outgrew the slots its head left and
 * max_headers_count allows more (NEED_TRAILERS): they go on in a trailer
 * array of the worker's, kept with the stream's request buffer until its
 * end (the trailers' bytes are in the input the stream keeps). None free:
 * the trailers are refused as ones over max_headers_count are, and the
 * stream told that it was the proxy's want (-ENOBUFS; the parser takes no
 * more). Out of line: a message or two in a thousand comes here. */
static __attribute__((noinline, cold)) int trailers_grow(struct http_h1_peer *h,
							 struct http_msgbuf *mb, struct http_ev *ev)
{
	ev->type = HTTP_EV_NONE;
	struct http_trl *t = mb->more ? mb->more->trl : NULL;
	if (!t && mb->more && h->w)
		t = mb->more->trl = http_trl_get(h->w);
	if (t) {
		arn_h1_msg_set_trailers(&mb->m, t->f, HTTP_MAX_HDRS);
		return 0;
	}
	arn_h1_parser_no_trailers(&h->p);
	ev->status = h->server ? 431 : 502;
	ev->details = HTTP_TRL_DETAILS;
	return -ENOBUFS;
}

/* What a decode gives for the parser's result @p n and event @p e (the
 * input's cursor already moved past them). */
static int decode_result(struct http_h1_peer *h, struct http_msgbuf *mb, struct http_ev *ev,
			 ssize_t n, const struct arn_h1_ev *e)
{
	struct http_peer *pp = &h->peer;
	if (n < 0 || e->type >= ARN_H1_EV_NEED_SCRATCH) {
		/* no event's bytes (the event's own, below, set them once) */
		ev->data = NULL;
		ev->len = 0;
	}
	if (n == ARN_AGAIN) {
		if (!pp->eof)
			return -EAGAIN;
		struct arn_h1_ev end;
		int rc = arn_h1_parse_eof(&h->p, &end);
		ev->type = end.type == ARN_H1_EV_END ? HTTP_EV_END : HTTP_EV_NONE;
		return rc == 0 ? -ESHUTDOWN : -ECONNABORTED;
	}
	if (n < 0 && h->server && n != -EBADMSG) {
		/* -EPIPE: bytes after a request that ended the connection (not
		 * HTTP: dropped); -EBUSY: an upgrade waits for the upstream */
		if (n == -EPIPE)
			http_in_free(&h->in);
		return -EAGAIN;
	}
	if (n < 0) {
		enum arn_h1_err err = arn_h1_parser_error(&h->p);
		ev->status = (unsigned)arn_h1_err_status(err);
		ev->details = arn_h1_err_details(err);
		return -EBADMSG;
	}
	if (e->type == ARN_H1_EV_NEED_TRAILERS)
		return trailers_grow(h, mb, ev);
	if (e->type == ARN_H1_EV_NEED_SCRATCH) {
		if (arn_h1_parser_scratch_short(&h->p))
			scratch_grow(h->w, &h->p, &mb->more->big);
		else
			arn_h1_parser_set_scratch(&h->p, mb->scratch, HTTP_SCRATCH);
		ev->type = HTTP_EV_NONE;
		return 0;
	}
	return 1; /* an event for the caller to give out */
}

/* The END of a message whose connection does not go on as HTTP (not
 * h1_parser_end_now's): the parser's, as a decode with no input gets it.
 * Out of line: its event on the stack costs the usual path a frame. */
static __attribute__((noinline, cold)) void end_parse(struct arn_h1_parser *p)
{
	struct arn_h1_ev e;
	arn_h1_parse(p, "", 0, &e);
}

/* A Content-Length body that just ended (the parser at its END): take the
 * END, which needs no input, as h1_decode or (a connection that does not
 * go on as HTTP) the parser takes it. @return false when the body goes on. */
static inline __attribute__((always_inline)) bool cl_end_take(struct arn_h1_parser *p)
{
	if (p->state != H1_ST_END)
		return false;
	if (!h1_parser_end_now(p))
		end_parse(p);
	return true;
}

/* A Content-Length body's bytes from @p m, the input's first segment,
 * which holds some unread (the parser is in that state), into @p ev's data
 * and len, as decode_event gives a BODY's (its range test these bytes pass
 * by construction): the segment stays in the input, and the encoder is
 * told which one it is. */
static inline __attribute__((always_inline)) void body_take(struct http_h1_peer *h,
							    struct rte_mbuf *m, struct http_ev *ev)
{
	struct http_in *in = &h->in;
	const char *b = rte_pktmbuf_mtod_offset(m, const char *, in->off);
	struct arn_h1_ev e;
	size_t n = h1_parser_body_take(&h->p, b, m->data_len - in->off, &e);
	in->off += (uint32_t)n;
	in->bytes -= (uint32_t)n;
	ev->data = b;
	ev->len = n;
	struct http_worker *w = h->w; /* NULL in codec-only tests */
	if (w) {
		w->body_seg = m;
		w->body_at = b;
	}
}

/* A body's bytes just given in @p ev (they lie in @p m), for a caller that
 * takes HTTP_EV_BODY_END (http_h1_decode_fused): were they its last, the
 * END is taken too and given with them. The segment stays in the input,
 * used up or not, where the END's own decode would have freed it: the
 * other peer's output refers to the bytes until it is flushed. The next
 * decode, or the connection's reuse (http_h1_reuse, once a keep-alive
 * response) or its end (http_h1_peer_free), frees it. Out of line: only
 * body events come here. */
static __attribute__((noinline)) void body_end(struct http_h1_peer *h, struct rte_mbuf *m,
					       struct http_ev *ev)
{
	struct arn_h1_parser *p = &h->p;
	if (cl_end_take(p)) {
		ev->type = HTTP_EV_BODY_END;
		return;
	}
	if (p->state != H1_ST_CHUNK_DATA_CR || !m)
		return;
	/* chunked: the last chunk right after this one's data, in the same
	 * segment */
	struct http_in *in = &h->in;
	size_t k = h1_parser_chunked_end(p, rte_pktmbuf_mtod_offset(m, const char *, in->off),
					 m->data_len - in->off);
	if (k) {
		in->off += (uint32_t)k;
		in->bytes -= (uint32_t)k;
		ev->type = HTTP_EV_BODY_END;
	}
}

/*
 * A response's head just parsed, for http_h1_decode_fused: what follows it
 * in the input's first segment comes with it (issue 17: the usual
 * response, a head and a short body in one segment, is one decode and one
 * event, not a HEAD and a BODY_END). A Content-Length body's bytes there
 * go in ev->data, ev->len (as decode_body would give them: the segment
 * stays in the input, the encoder told which one); the END, when the
 * message ended with the head (a keep-alive one without a body) or with
 * those bytes, in ev->end, taken as body_end takes it.
 */
static inline __attribute__((always_inline)) void head_more(struct http_h1_peer *h,
							    struct http_ev *ev)
{
	struct arn_h1_parser *p = &h->p;
	struct http_in *in = &h->in;
	struct rte_mbuf *m = in->head;
	if (p->state != H1_ST_BODY_CL || !m || m->data_len == in->off) {
		if (h1_parser_end_now(p))
			ev->end = true;
		return;
	}
	body_take(h, m, ev);
	if (cl_end_take(p))
		ev->end = true;
}

/*
 * Head segment @p m, which the head's pins @p p (empty) do not hold yet:
 * pinned once the head was decoded from it (decode_fast_any). When the
 * input is done with it (used up: the usual request's, a GET whose END came
 * with its head, and the usual response's, whose body and END came with it
 * too), the input's reference goes to the pins: the segment leaves the
 * input as in_pop takes it out, but no reference is added for the pins and
 * none dropped for the input (issue 17: bench_hcm, about 40 instructions a
 * request). The pins then keep it until the stream's end, past the moment
 * the input would have let go of it (its next decode, or the upstream
 * connection's reuse): body bytes the other peer's output refers to stay
 * valid as long. Else it is pinned as http_pins_add pins it.
 */
static inline __attribute__((always_inline)) void pin_late(struct http_in *in, struct http_pins *p,
							   struct rte_mbuf *m)
{
	if (in->head != m || in->off != m->data_len) {
		http_pins_add(p, m);
		return;
	}
	in->head = m->next;
	if (!in->head)
		in->tail = NULL;
	in->off = 0;
	m->next = NULL;
	p->seg[0] = m;
	p->n = 1;
}

/* The event @p e parsed from @p m (the input's first segment) into @p ev;
 * @p fused: a body's last bytes come with the END (body_end), a
 * response's first ones and its END with its head (head_more). @p late: a
 * head's pins that do not hold @p m yet (pin_late), or NULL. */
static inline __attribute__((always_inline)) void
decode_event(struct http_h1_peer *h, struct rte_mbuf *m, struct http_ev *ev,
	     const struct arn_h1_ev *e, bool fused, struct http_pins *late)
{
	ev->type = (enum http_ev_type)e->type;
	ev->data = e->data;
	ev->len = e->len;
	if (e->type == ARN_H1_EV_HEAD) {
		if (fused && !h->server) {
			ev->data = NULL;
			ev->len = 0;
			ev->end = false;
			head_more(h, ev);
			if (late)
				pin_late(&h->in, late, m);
			return;
		}
		/* a request without a body (a GET): its END goes with it, as
		 * h1_decode's first answer would give it (the segment the head
		 * ended in goes if it is used up: the head's pins keep it) */
		ev->end = h->server && h1_parser_end_now(&h->p);
		if (late) {
			pin_late(&h->in, late, m);
			return;
		}
		struct rte_mbuf *f = h->in.head;
		if (ev->end && f && h->in.off == f->data_len)
			in_pop(&h->in);
		return;
	}
	if (late) /* (not a head: pinned as before the parse) */
		http_pins_add(late, m);
	/* body bytes lie in the segment just parsed (in_parse frees it only
	 * at the next decode): tell the encoder which one */
	struct http_worker *w = h->w; /* NULL in codec-only tests */
	if (e->type == ARN_H1_EV_BODY) {
		if (w && m && e->len && e->data >= rte_pktmbuf_mtod(m, const char *) &&
		    e->data + e->len <= rte_pktmbuf_mtod_offset(m, const char *, m->data_len)) {
			w->body_seg = m;
			w->body_at = e->data;
		}
		if (fused)
			body_end(h, m, ev);
	}
}

/* h1_decode past its fast path: segments used up, input taken from TCP,
 * errors, scratch, end of input. In a function of its own (one for each
 * kind of decode, below), which saves the registers it needs: the usual
 * decode does not pay for them. */
static inline __attribute__((always_inline)) int
decode_in(struct http_h1_peer *h, struct http_msgbuf *mb, bool keep, struct http_ev *ev, bool fused)
{
	struct arn_h1_ev e;
	ssize_t n;
	/* what TCP holds is taken in as the parser needs it */
	while ((n = in_parse(&h->in, &h->p, &e, &mb->pins, keep)) == ARN_AGAIN &&
	       http_tp_fill(h->tp, h->tc, &h->in))
		;
	int rc = decode_result(h, mb, ev, n, &e);
	if (rc <= 0)
		return rc;
	decode_event(h, h->in.head, ev, &e, fused, NULL);
	return 0;
}

static __attribute__((noinline)) int h1_decode_in(struct http_h1_peer *h, struct http_msgbuf *mb,
						  bool keep, struct http_ev *ev)
{
	return decode_in(h, mb, keep, ev, false);
}

static __attribute__((noinline)) int
h1_decode_in_fused(struct http_h1_peer *h, struct http_msgbuf *mb, bool keep, struct http_ev *ev)
{
	return decode_in(h, mb, keep, ev, true);
}

/* An event whose bytes the input's first segment holds, the usual decode
 * (three a proxied request: its head, the response's head and its body),
 * as in_parse's first round gives it; the rest goes to h1_decode_in,
 * which goes on where this one stopped. */
static inline __attribute__((always_inline)) int decode_fast_any(struct http_h1_peer *h,
								 struct http_msgbuf *mb, bool keep,
								 struct http_ev *ev, bool fused)
{
	struct http_in *in = &h->in;
	struct rte_mbuf *m = in->head;
	struct arn_h1_ev e;
	/* between messages with nothing read yet (a request's head, on a
	 * connection that waits for it): what TCP holds, as in_parse's
	 * caller takes it */
	if (!m && h1_parser_idle(&h->p)) {
		if (!http_tp_fill(h->tp, h->tc, in)) {
			e.type = ARN_H1_EV_NONE;
			return decode_result(h, mb, ev, ARN_AGAIN, &e);
		}
		m = in->head;
	}
	if (!m || m->data_len == in->off)
		return fused ? h1_decode_in_fused(h, mb, keep, ev) : h1_decode_in(h, mb, keep, ev);
	uint32_t avail = m->data_len - in->off;
	/* a head's first segment is pinned once the head is decoded from
	 * it (pin_late), others before the parse, as in_parse pins them */
	struct http_pins *late = keep && mb->pins.n == 0 ? &mb->pins : NULL;
	const char *b = rte_pktmbuf_mtod_offset(m, const char *, in->off);
	if (keep && !late)
		avail = head_pin(&mb->pins, m, b, avail);
	else if (__builtin_expect(mb->pins.n == HTTP_PIN_MAX, 0))
		avail = trailer_cut(&mb->pins, &h->p, m, b, avail);
	ssize_t n = arn_h1_parse(&h->p, b, avail, &e);
	if (late && (n < 0 || e.type == ARN_H1_EV_NEED_SCRATCH)) {
		/* no head decoded: pinned now, as before the parse */
		http_pins_add(late, m);
		late = NULL;
	}
	if (n == ARN_AGAIN) {
		/* as in_parse's: the run is taken (the segment used up, or
		 * as far as head_cut gave it) */
		if (!keep && mb->pins.n < HTTP_PIN_MAX && arn_h1_parser_in_trailers(&h->p))
			http_pins_add(&mb->pins, m);
		in->off += avail;
		in->bytes -= avail;
		return fused ? h1_decode_in_fused(h, mb, keep, ev) : h1_decode_in(h, mb, keep, ev);
	}
	if (n >= 0) {
		in->off += (uint32_t)n;
		in->bytes -= (uint32_t)n;
		/* (NEED_SCRATCH and NEED_TRAILERS last: one test) */
		if (__builtin_expect(e.type < ARN_H1_EV_NEED_SCRATCH, 1)) {
			decode_event(h, m, ev, &e, fused, late);
			return 0;
		}
	}
	int rc = decode_result(h, mb, ev, n, &e);
	if (rc <= 0)
		return rc;
	decode_event(h, m, ev, &e, fused, NULL);
	return 0;
}

static __attribute__((noinline)) int decode_fast(struct http_h1_peer *h, struct http_msgbuf *mb,
						 bool keep, struct http_ev *ev)
{
	return decode_fast_any(h, mb, keep, ev, false);
}

static __attribute__((noinline)) int
decode_fast_fused(struct http_h1_peer *h, struct http_msgbuf *mb, bool keep, struct http_ev *ev)
{
	return decode_fast_any(h, mb, keep, ev, true);
}

/* A Content-Length body's bytes from @p m, the input's first segment,
 * which holds some unread (the parser is in that state): as decode_fast
 * would give them, without its frame and the parser's call. Out of line,
 * so that h1_decode's other answers save no registers for it. */
static inline __attribute__((always_inline)) int
decode_body_any(struct http_h1_peer *h, struct rte_mbuf *m, struct http_ev *ev, bool fused)
{
	ev->type = HTTP_EV_BODY;
	body_take(h, m, ev);
	/* the body's last bytes (the usual response's only ones): its END
	 * with them, as body_end takes it */
	if (fused && cl_end_take(&h->p))
		ev->type = HTTP_EV_BODY_END;
	return 0;
}

static __attribute__((noinline)) int decode_body(struct http_h1_peer *h, struct rte_mbuf *m,
						 struct http_ev *ev)
{
	return decode_body_any(h, m, ev, false);
}

static __attribute__((noinline)) int decode_body_fused(struct http_h1_peer *h, struct rte_mbuf *m,
						       struct http_ev *ev)
{
	return decode_body_any(h, m, ev, true);
}

static inline __attribute__((always_inline)) int
decode_any(struct http_peer *pp, struct http_msgbuf *mb, bool keep, struct http_ev *ev, bool fused)
{
	struct http_h1_peer *h = h1(pp);
	if (h->w) /* NULL in codec-only tests */
		h->w->body_seg = NULL;
	/* END after a head without a body or after the last body byte (twice
	 * a proxied request) reads nothing: the segment the message ended in
	 * goes now if it is used up, as in_parse would drop it */
	if (h1_parser_end_now(&h->p)) {
		struct rte_mbuf *m = h->in.head;
		if (m && h->in.off == m->data_len)
			in_pop(&h->in);
		ev->type = HTTP_EV_END;
		ev->data = NULL;
		ev->len = 0;
		return 0;
	}
	/* a Content-Length body's bytes in the input's first segment (a
	 * response's, after its head: once a proxied request): decode_body
	 * (a body pins nothing: a head still kept goes the long way) */
	struct rte_mbuf *m = h->in.head;
	if (h->p.state == H1_ST_BODY_CL && m && m->data_len != h->in.off && !keep)
		return fused ? decode_body_fused(h, m, ev) : decode_body(h, m, ev);
	return fused ? decode_fast_fused(h, mb, keep, ev) : decode_fast(h, mb, keep, ev);
}

static int h1_decode(struct http_peer *pp, struct http_msgbuf *mb, bool keep, struct http_ev *ev)
{
	return decode_any(pp, mb, keep, ev, false);
}

int http_h1_decode_fused(struct http_peer *pp, struct http_msgbuf *mb, bool keep,
			 struct http_ev *ev)
{
	return decode_any(pp, mb, keep, ev, true);
}

static void h1_upgrade(struct http_peer *pp, bool accepted)
{
	struct http_h1_peer *h = h1(pp);
	if (accepted)
		h->chunked = false; /* raw bytes from now on */
	if (!h->server)
		return; /* a response parser turns into a tunnel by itself */
	if (accepted)
		arn_h1_parser_tunnel(&h->p);
	else
		arn_h1_parser_resume(&h->p);
}

static bool h1_idle(const struct http_peer *pp)
{
	return h1_parser_idle(&h1c(pp)->p);
}

static void h1_release(struct http_peer *pp)
{
	/* between messages the parser holds no partial line: the scratch only
	 * holds slices of the message that ended */
	h1_parser_set_scratch(&h1(pp)->p, NULL, 0);
}

void http_h1_reuse(struct http_h1_peer *h)
{
	/* The segment the response ended in, used up, once a keep-alive
	 * response: a fused END (body_end) leaves it in the input (inline
	 * http_in_free). The scratch is let go without the codec's release
	 * through its table. */
	http_in_free(&h->in);
	h1_parser_set_scratch(&h->p, NULL, 0);
}

/* ---- the next request ---------------------------------------------------------------- */

bool http_h1_skip_empty_lines(struct http_in *in)
{
	for (;;) {
		struct rte_mbuf *m = in->head;
		if (!m)
			return false;
		if (in->off == m->data_len) {
			in->head = m->next;
			if (!in->head)
				in->tail = NULL;
			in->off = 0;
			http_seg_free(m);
			continue;
		}
		const char *p = rte_pktmbuf_mtod_offset(m, const char *, in->off);
		if (p[0] == '\n') {
			http_in_drop(in, 1);
			continue;
		}
		if (p[0] != '\r')
			return true;
		/* CR: an empty line only with its LF (a bare CR is the parser's
		 * to refuse), which may not be here yet */
		const char *q = in->off + 1 < m->data_len ? p + 1
				: m->next		  ? rte_pktmbuf_mtod(m->next, const char *)
							  : NULL;
		if (!q)
			return false;
		if (*q != '\n')
			return true;
		http_in_drop(in, 2); /* CR LF */
	}
}

/* ---- what goes to the peer ------------------------------------------------------------------ */

static __attribute__((noinline)) void out_link_chain(struct http_out *o, struct rte_mbuf *m)
{
	if (rte_pktmbuf_chain(o->chain, m) != 0) {
		/* too many segments to link: drop the new part (never expected) */
		rte_pktmbuf_free(m);
	}
}

/* The usual output is empty when a head goes in: no call for it */
static inline void out_add_chain(struct http_out *o, struct rte_mbuf *m)
{
	if (!o->chain)
		o->chain = m;
	else
		out_link_chain(o, m);
}

/* The serialized head, or an error: -E2BIG (more edits than the serializer
 * applies: none of them would be written), -ENOBUFS. Inline in both head
 * encoders (its call and frame cost about 14 instructions a head). */
static inline __attribute__((always_inline)) int head_done(struct http_h1_peer *h,
							   struct http_wchain *c, int rc)
{
	struct rte_mbuf *m;
	if (rc == -E2BIG) {
		m = http_wchain_finish(c);
		if (m)
			rte_pktmbuf_free(m);
		return -E2BIG;
	}
	/* the empty line, where it fits, without a call (~20 instructions a head) */
	struct arn_h1_wbuf *wb = &c->wb;
	m = c->head;
	if (wb->cap - wb->len >= 2) {		    /* (none after an error) */
		memcpy(wb->p + wb->len, "\r\n", 2); /* one store */
		if (m == c->tail && !wb->err) {
			/* the usual head, one mbuf (there is room: it is
			 * there): http_wchain_finish's, without its call */
			uint16_t len = (uint16_t)(wb->len + 2);
			m->data_len = len;
			m->pkt_len = len;
			m->nb_segs = 1;
			out_add_chain(&h->out, m);
			h->peer.queued = true;
			return 0;
		}
		wb->len += 2;
		wb->total += 2;
	} else {
		arn_h1_write_end(wb);
	}
	m = http_wchain_finish(c);
	if (!m)
		return -ENOBUFS;
	out_add_chain(&h->out, m);
	h->peer.queued = true;
	return 0;
}

static int h1_encode_request_head(struct http_peer *pp, const struct arn_h1_msg *m,
				  const char *path, uint32_t plen, struct arn_h1_edit *e,
				  unsigned n, bool upgrade)
{
	struct http_h1_peer *h = h1(pp);
	if (m->flags & ARN_H1_F_CL_IGNORED)
		e[n++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	struct http_wchain c;
	http_wchain_init_head(&c, h->w);
	arn_h1_write_request_line_of(&c.wb, m, path, plen);
	int rc = arn_h1_write_headers(&c.wb, m, e, n,
				      ARN_H1_W_DROP_HOP | ARN_H1_W_TE_TRAILERS |
					  (upgrade ? ARN_H1_W_UPGRADE : 0));
	/* the body is re-chunked when it came chunked */
	h->chunked = false;
	h->trailed = false;
	h->ch.open = false;
	if (rc != -E2BIG && (m->flags & ARN_H1_F_CHUNKED)) {
		arn_h1_write_header(&c.wb, "transfer-encoding", 17, "chunked", 7);
		h->chunked = true;
	}
	return head_done(h, &c, rc);
}

static int h1_encode_response_head(struct http_peer *pp, const struct arn_h1_msg *r,
				   struct arn_h1_edit *e, unsigned n, struct http_head_info *hi)
{
	struct http_h1_peer *h = h1(pp);
	bool no_body = (r->flags & ARN_H1_F_NO_BODY) || hi->req_method == ARN_H1_M_HEAD ||
		       r->status == 204 || r->status == 304;
	h->chunked = false;
	h->trailed = false;
	h->ch.open = false;
	if (!no_body && !hi->tunnel && !(r->flags & ARN_H1_F_CONTENT_LENGTH)) {
		if (hi->req_version >= 11)
			h->chunked = true;
		else
			hi->close = true; /* the body ends with our close */
	}
	if (r->flags & ARN_H1_F_CL_IGNORED) /* "0" in a 204 or 101 */
		e[n++] = (struct arn_h1_edit){
		    .name = "content-length", .name_len = 14, .op = ARN_H1_EDIT_REMOVE};
	struct http_wchain c;
	http_wchain_init_head(&c, h->w);
	arn_h1_write_status_line(&c.wb, r->status, NULL, 0, 1);
	int rc = arn_h1_write_headers(&c.wb, r, e, n,
				      ARN_H1_W_DROP_HOP | (hi->tunnel ? ARN_H1_W_UPGRADE : 0));
	if (rc != -E2BIG) {
		if (h->chunked)
			arn_h1_write_header(&c.wb, "transfer-encoding", 17, "chunked", 7);
		if (!hi->tunnel) {
			if (hi->close)
				arn_h1_write_header(&c.wb, "connection", 10, "close", 5);
			else if (hi->req_version == 10)
				arn_h1_write_header(&c.wb, "connection", 10, "keep-alive", 10);
		}
	}
	return head_done(h, &c, rc);
}

static int h1_encode_reply(struct http_peer *pp, const struct http_reply *r)
{
	struct http_h1_peer *h = h1(pp);
	uint32_t dlen;
	const char *date = http_date(h->w, &dlen);
	struct http_wchain c;
	http_wchain_init(&c, h->w);
	http_local_reply_write(&c.wb, r->status, r->body, r->blen, r->server, date, dlen, r->extra,
			       r->n_extra, r->close, r->head_only);
	struct rte_mbuf *m = http_wchain_finish(&c);
	if (!m)
		return -ENOBUFS;
	out_add_chain(&h->out, m);
	h->peer.queued = true;
	return 0;
}

static void h1_encode_continue(struct http_peer *pp)
{
	struct http_h1_peer *h = h1(pp);
	struct http_wchain c;
	http_wchain_init(&c, h->w);
	arn_h1_put(&c.wb, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	struct rte_mbuf *m = http_wchain_finish(&c);
	if (m) {
		out_add_chain(&h->out, m);
		h->peer.queued = true;
	}
}

/* Body bytes up to this many join a head still queued (body_join): TCP
 * copies a slice under half a segment anyway (arn_tcp_write_ref: about
 * 950 bytes with 2 KiB mbufs), so the bound takes nothing from zero
 * copy. */
#define H1_BODY_JOIN_MAX 900

/*
 * Body bytes that follow a head still queued in the output whole (the
 * usual response: its head waits for its first body piece, http_hcm.c's
 * resp_ready) go into the head's last mbuf when it has the room: the head
 * and the bytes then go to TCP as one mbuf, one arn_tcp_write_mbuf, not
 * that and an arn_tcp_write_ref that copies them into it (issue 17: about
 * 90 instructions a response under bench/cost/run). The bytes' segment
 * is then no longer referred to. @return where the @p len bytes go (the
 * mbuf counts them already: the caller copies them), or NULL (nothing
 * done) when the output holds more than a head or the room is short.
 */
static inline char *body_join(struct http_out *o, size_t len)
{
	struct rte_mbuf *m = o->chain;
	if (!m || o->stage_len || o->crlf || o->data_len || len > H1_BODY_JOIN_MAX)
		return NULL;
	struct rte_mbuf *t = m;
	while (t->next)
		t = t->next;
	if (!RTE_MBUF_DIRECT(t) || rte_mbuf_refcnt_read(t) != 1 || rte_pktmbuf_tailroom(t) < len)
		return NULL;
	char *to = rte_pktmbuf_mtod_offset(t, char *, t->data_len);
	t->data_len = (uint16_t)(t->data_len + len);
	m->pkt_len += (uint32_t)len;
	return to;
}

/* Body bytes into the output: after a queued head when they fit
 * (body_join), else by reference to their segment, the bytes the other
 * side's decoder just gave out, on a raw transport (TLS encrypts a copy
 * anyway). */
static inline __attribute__((always_inline)) void body_out(struct http_h1_peer *h, const char *data,
							   size_t len)
{
	struct http_out *o = &h->out;
	char *to = body_join(o, len);
	if (to) {
		if (h->w)
			h->w->body_seg = NULL;
		h->peer.queued = true;
		/* last, so that the copy is a tail call: no frame */
		memcpy(to, data, len);
		return;
	}
	o->data = data;
	o->data_len = (uint32_t)len;
	struct http_worker *w = h->w;
	o->seg = NULL;
	if (w) {
		if (w->body_seg && data == w->body_at && h->tp == &http_transport_raw)
			o->seg = w->body_seg;
		w->body_seg = NULL;
	}
	h->peer.queued = http_out_busy(o);
}

/* A chunked body's bytes: their chunk's prefix and CRLF around them. Out
 * of line: a body with a length (the usual response) then takes no frame
 * for these calls. */
static __attribute__((noinline)) void body_chunk(struct http_h1_peer *h, const char *data,
						 size_t len)
{
	struct http_out *o = &h->out;
	size_t k = arn_h1_chunk_prefix(&h->ch, len, o->stage);
	o->stage_off = 0;
	o->stage_len = (uint8_t)k;
	/* the chunk leaves whole: its CRLF does not wait for the next one,
	 * which a streaming sender may send much later */
	char crlf[2];
	o->crlf = (uint8_t)arn_h1_chunk_close(&h->ch, crlf);
	body_out(h, data, len);
}

static void h1_encode_body(struct http_peer *pp, const char *data, size_t len)
{
	struct http_h1_peer *h = h1(pp);
	if (h->chunked)
		body_chunk(h, data, len);
	else
		body_out(h, data, len);
}

/* Envoy's HTTP/1 codec: trailers are written only with enable_trailers,
 * and only where chunked framing has room for them (a body with a length
 * has none: they are dropped). The stream hands them over once the body
 * is out (queued false), so they follow it in the chain. */
static void h1_encode_trailers(struct http_peer *pp, const struct arn_h1_msg *m)
{
	struct http_h1_peer *h = h1(pp);
	if (!h->trailers || !h->chunked || h->trailed)
		return;
	struct http_wchain c;
	http_wchain_init(&c, h->w);
	char last[ARN_H1_CHUNK_LAST_MAX];
	size_t k = arn_h1_chunk_last(&h->ch, last);
	arn_h1_put(&c.wb, last, k);
	for (unsigned i = 0; i < m->n_trailers; i++) {
		const struct arn_h1_header *t = &m->trailers[i];
		if (!arn_h1_trailer_dropped(t))
			arn_h1_write_header(&c.wb, t->name, t->name_len, t->value, t->value_len);
	}
	arn_h1_write_end(&c.wb);
	struct rte_mbuf *b = http_wchain_finish(&c);
	if (!b)
		return; /* out of mbufs: encode_end ends the body without them */
	out_add_chain(&h->out, b);
	h->trailed = true;
	pp->queued = true;
}

/* A chunked body's last chunk. Out of line: the usual END (a body with a
 * length, or none: twice a proxied request) then sets up no frame. */
static __attribute__((noinline)) void end_chunked(struct http_h1_peer *h)
{
	struct http_out *o = &h->out;
	size_t k = arn_h1_chunk_last(&h->ch, o->stage);
	o->stage[k++] = '\r';
	o->stage[k++] = '\n';
	o->stage_off = 0;
	o->stage_len = (uint8_t)k;
	h->peer.queued = true;
}

static void h1_encode_end(struct http_peer *pp)
{
	struct http_h1_peer *h = h1(pp);
	if (h->trailed) {
		h->trailed = false; /* the last chunk and the trailers are queued */
		return;
	}
	if (h->chunked)
		end_chunked(h);
}

/*
 * The output's lent body bytes (data, data_len: in the other side's
 * input, which goes with its closed connection) become the output's own:
 * the pieces written after the chain (a chunk's prefix, the bytes, the
 * chunk's CRLF) are copied, in that order, into mbufs linked after it, so
 * the bytes go out as they would have and a last chunk (encode_end) still
 * follows them. Off the usual path: only an upstream that closes while
 * its response's end waits for the client comes here.
 */
static __attribute__((cold)) int h1_own_body(struct http_peer *pp)
{
	struct http_h1_peer *h = h1(pp);
	struct http_out *o = &h->out;
	if (!o->data_len)
		return 0;
	static const char crlf[2] = {'\r', '\n'};
	struct http_wchain c;
	http_wchain_init(&c, h->w);
	arn_h1_put(&c.wb, o->stage + o->stage_off, o->stage_len);
	arn_h1_put(&c.wb, o->data, o->data_len);
	arn_h1_put(&c.wb, crlf + 2 - o->crlf, o->crlf);
	struct rte_mbuf *m = http_wchain_finish(&c);
	o->stage_off = o->stage_len = 0;
	o->data = NULL;
	o->data_len = 0;
	o->seg = NULL;
	o->crlf = 0;
	if (m && o->chain && rte_pktmbuf_chain(o->chain, m) != 0) {
		rte_pktmbuf_free(m); /* too many segments (never expected) */
		m = NULL;
	} else if (m && !o->chain) {
		o->chain = m;
	}
	pp->queued = http_out_busy(o);
	return m ? 0 : -ENOBUFS;
}

static int h1_flush(struct http_peer *pp)
{
	struct http_h1_peer *h = h1(pp);
	struct http_out *o = &h->out;
	/* The usual flush, twice a request: a head (with a short body joined
	 * to it, body_join) and nothing after it, on a raw transport. One
	 * arn_tcp_write_mbuf, as http_out_flush's first step, without its
	 * call and the pieces' tests (bench_hcm: about 20 instructions a
	 * flush). */
	if (h->tp == &http_transport_raw && o->chain && h->tc &&
	    !(o->stage_len | o->crlf | o->data_len)) {
		int rc = arn_tcp_write_mbuf(h->tc, o->chain);
		if (rc == -EAGAIN) {
			pp->queued = true; /* the head waits for on_writable */
			return rc;
		}
		if (rc < 0)
			rte_pktmbuf_free(o->chain);
		o->chain = NULL;
		o->seg = NULL;
		pp->queued = false;
		return rc;
	}
	int rc = http_tp_flush(h->tp, h->tc, o);
	/* 0: everything went (the transports' contract, http_io.h), so
	 * nothing is left to test (twice a request) */
	pp->queued = rc != 0 && http_out_busy(&h->out);
	return rc;
}

const struct http_codec_ops http_codec_h1 = {
    .name = "HTTP/1.1",
    .decode = h1_decode,
    .upgrade = h1_upgrade,
    .idle = h1_idle,
    .release = h1_release,
    .encode_request_head = h1_encode_request_head,
    .encode_response_head = h1_encode_response_head,
    .encode_reply = h1_encode_reply,
    .encode_continue = h1_encode_continue,
    .encode_body = h1_encode_body,
    .encode_trailers = h1_encode_trailers,
    .encode_end = h1_encode_end,
    .own_body = h1_own_body,
    .flush = h1_flush,
};
