/*
 * envoy.filters.http.ext_proc (external processing), as Envoy's
 * ext_proc filter (ext_proc.cc, processor_state.cc, mutation_utils.cc):
 * ONE bidirectional gRPC stream per request,
 * envoy.service.ext_proc.v3.ExternalProcessor/Process, a streaming
 * sub-request (http_subreq.h, sr->stream) over the processor's cluster's
 * HTTP/2. The request's headers go as a ProcessingRequest and the
 * request waits (its head held) for the ProcessingResponse: its
 * header_mutation (checked by the mutation rules) rides on the request
 * upstream, an immediate_response answers the client instead. A failure
 * (the stream's, a grpc-status not OK, an answer that does not decode, a
 * mutation that is invalid, no answer within message_timeout) answers 500
 * (504 for the timeout) unless failure_mode_allow. Built: the request's
 * headers SEND or SKIP; the response's headers SEND (the upstream's head
 * held for the answer: http_ext_proc_resp_edits) or SKIP; the request's
 * body BUFFERED; the response's BUFFERED or STREAMED (each piece sent as
 * it comes and held until its answer); no trailers (the configuration
 * refuses the rest by name). docs/http.md.
 *
 * Ownership: a stream's context (struct http_ext_proc) comes from its
 * worker's pool (HTTP_EXT_PROC_N) and stays with the client's stream
 * (st->ext_proc) until the stream ends (http_ext_proc_stream_end), which
 * resets the gRPC stream if it is still open (Envoy closes it when its
 * filter goes): it holds the copies of the mutations the upstream request
 * takes. While it waits for an answer it also holds one of the worker's
 * large scratch buffers (the message sent, the answer reassembled).
 */
#ifndef ARN_HTTP_EXT_PROC_H
#define ARN_HTTP_EXT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct arn_cfg_ext_proc;
struct arn_cfg_route_match;
struct arn_h1_edit;
struct http_stream;
struct http_worker;

/* Streams per worker (each client request processed holds one until it
 * ends): past it the stream cannot start, a failure counted in
 * ext_proc.overflow (failure_mode_allow lets the request on). */
#define HTTP_EXT_PROC_N 256
/* What a context holds of the answers, in bytes: the header names and
 * values the request upstream takes. More fails the request, counted in
 * overflow. */
#define HTTP_EXT_PROC_BUF 8192
/* A stream's large scratch buffer (HTTP_BIG_SCRATCH): the
 * ProcessingRequest sent in the first HTTP_EXT_PROC_REQ bytes, the
 * answer's gRPC message reassembled in the next HTTP_EXT_PROC_ANS. A
 * request or an answer past them fails the stream (overflow). */
#define HTTP_EXT_PROC_REQ (32u * 1024)
#define HTTP_EXT_PROC_ANS (32u * 1024)
/* request_body_mode BUFFERED: the body read whole at most this many
 * bytes (Envoy's default per-connection buffer limit, its decoder buffer
 * limit), in the stream's kept body (the worker's kept_body_mbufs); more:
 * 413, as Envoy's. */
#define HTTP_EXT_PROC_BODY_MAX (1024u * 1024)
/* response_body_mode STREAMED (Envoy's ProcessorState chunk queue): the
 * pieces of the response's body sent to the processor and not answered
 * yet, each kept (whole mbufs, in the worker's kept bodies) until its
 * answer. At HTTP_EXT_PROC_STREAM_CHUNKS pieces or past
 * HTTP_EXT_PROC_BODY_MAX bytes (Envoy's buffer limit, its high
 * watermark) the upstream is read no more, until the answers brought
 * them under half of both (its low watermark). */
#define HTTP_EXT_PROC_STREAM_CHUNKS 16
/* override_message_timeout messages taken per exchange (each restarts the
 * wait, as Envoy's, up to max_message_timeout): past it they are ignored
 * (override_message_timeout_ignored), so a processor holds a request at
 * most message_timeout + this many max_message_timeout. */
#define HTTP_EXT_PROC_OVERRIDES 16

/** The worker's pool (worker init). @return 0 or -ENOMEM. */
int http_ext_proc_worker_init(struct http_worker *w);
void http_ext_proc_worker_fini(struct http_worker *w);
/** Contexts taken from @p w's pool (tests: none after every stream ended). */
unsigned http_ext_proc_in_use(const struct http_worker *w);

/**
 * The filter at index @p i of the stream's connection manager, config
 * @p f, on the request of @p st (route @p mt, NULL if none matched).
 * @return true when it took the stream: the request's headers went to
 * the processor (the walk goes on from http_ext_proc_resume_at once its
 * answer lets the request on), or it answered.
 */
bool http_ext_proc_step(struct http_stream *st, size_t i, const struct arn_cfg_ext_proc *f,
			const struct arn_cfg_route_match *mt);
/** The filter index the HCM's walk goes on from once @p st's processor
 * let it on (0 without a stream). */
size_t http_ext_proc_resume_at(const struct http_stream *st);
/**
 * The response head of @p st goes to the client (http_l4_resp_edits):
 * the response_headers mutations of every ext_proc filter that processed
 * it, into @p e (at most @p cap). @return how many, -ENOSPC, or
 * -EINPROGRESS: a filter with response_header_mode SEND sent the
 * upstream's head to its processor and holds it (http_filter.h) until the
 * answer (http_hcm_resume_resp_head) or a local reply. Local replies are
 * not sent to the processor.
 */
int http_ext_proc_resp_edits(struct http_stream *st, struct arn_h1_edit *e, unsigned cap);
/**
 * Before any response edit: does an ext_proc filter hold @p st's response
 * head? -EINPROGRESS: its headers went to the processor (as above);
 * -EAGAIN: response_body_mode BUFFERED, the filter took the body
 * (HTTP_S_ENC_BODY) and writes head and body once the processor answered;
 * -ECANCELED: a local reply went instead; 0: none.
 */
int http_ext_proc_resp_hold(struct http_stream *st);
/** Is an ext_proc filter reading @p st's body (request_body_mode
 * BUFFERED: http_ext_proc_body takes it)? */
bool http_ext_proc_reading(const struct http_stream *st);
/** A piece of the body it reads, into the kept body. @return true for
 * more (false: it answered, 413 past HTTP_EXT_PROC_BODY_MAX). */
bool http_ext_proc_body(struct http_stream *st, const char *data, size_t len);
/** The body is whole: it goes to the processor (request_body). */
void http_ext_proc_body_end(struct http_stream *st);
/** The stream ends: the gRPC stream is reset if open, the context goes back. */
void http_ext_proc_stream_end(struct http_stream *st);

#endif
