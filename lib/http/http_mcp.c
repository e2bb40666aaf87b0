/*
 * The MCP gateway filter on a stream (http_mcp.h): the head decides
 * whether and how the gateway answers (lib/mcp's arn_mcp_classify, the
 * ToolSet, the body's size), the body goes through lib/mcp's reader as it
 * arrives (nothing is copied or kept here), and the request's end
 * dispatches each message and answers. Sessions are this worker's
 * (arn_mcp_sessions): a session id naming another worker is answered with
 * a JSON-RPC error until requests are handed between workers
 * (docs/mcp.md, "What the filter needs", item 6).
 *
 * What the head's slices say is copied here at the head (the session id,
 * MCP-Protocol-Version, the headers access rules match on): the codec
 * keeps a head's input only until the head is handled, and the body may
 * be long.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "arn_config.h"
#include "arn_log.h"
#include "arn_mcp.h"
#include "http_local.h"
#include "http_mcp.h"
#include "http_stream.h"

/* Request headers an access rule's principals may match, copied per
 * request (the rest of the head is gone by the body's end). */
#define MCP_PRINCIPAL_HDRS 16

struct http_mcp_req {
	struct http_mcp_req *next; /* the worker's free list */
	const struct arn_cfg_mcp_filter *f;
	const struct arn_cfg_toolset *ts; /* pinned */
	struct arn_mcp_reader rd;
	bool rd_open;
	bool has_sid, sid_long, has_pver;
	char sid[ARN_MCP_SID_LEN + 1];
	size_t sid_len;
	char pver[32];
	size_t pver_len;
	struct arn_cfg_header hdrs[MCP_PRINCIPAL_HDRS]; /* values in the stream's text */
	size_t n_hdrs;
};

struct http_mcp_worker {
	struct arn_mcp_sessions *sessions;
	struct http_mcp_req *mem, *free;
	uint32_t n;
};

int http_mcp_worker_init(struct http_worker *w)
{
	struct http_mcp_worker *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->n = w->n_res;
	m->mem = calloc(m->n ? m->n : 1, sizeof(*m->mem));
	m->sessions = arn_mcp_sessions_create(w->idx, HTTP_MCP_SESSIONS, ARN_CFG_MCP_MAX_BACKENDS,
					      ARN_CFG_MCP_DEFAULT_SESSION_IDLE_MS);
	if (!m->mem || !m->sessions) {
		ARN_ERR(HTTP, "worker %u: out of memory for the MCP gateway's %u sessions", w->idx,
			HTTP_MCP_SESSIONS);
		if (m->sessions)
			arn_mcp_sessions_destroy(m->sessions);
		free(m->mem);
		free(m);
		return -ENOMEM;
	}
	for (uint32_t i = m->n; i-- > 0;) {
		m->mem[i].next = m->free;
		m->free = &m->mem[i];
	}
	w->mcp = m;
	return 0;
}

void http_mcp_worker_fini(struct http_worker *w)
{
	struct http_mcp_worker *m = w->mcp;
	if (!m)
		return;
	arn_mcp_sessions_destroy(m->sessions);
	free(m->mem);
	free(m);
	w->mcp = NULL;
}

/* ---- answers ------------------------------------------------------------------------------ */

/*
 * A whole answer: @p o as JSON (NULL: no body, as for 202), with
 * mcp-session-id @p sid and Allow @p allow when given. Counted by status.
 */
static void reply(struct http_stream *st, unsigned status, struct json_object *o, const char *sid,
		  const char *allow, const char *details)
{
	struct http_conn *hc = st->hc;
	struct arn_h1_edit e[3];
	unsigned n = 0;
	size_t len = 0;
	const char *text = o ? arn_mcp_text(o, &len) : NULL;
	if (o)
		e[n++] = (struct arn_h1_edit){.name = "content-type",
					      .name_len = 12,
					      .value = "application/json",
					      .value_len = 16,
					      .op = ARN_H1_EDIT_SET};
	if (sid)
		e[n++] = (struct arn_h1_edit){.name = "mcp-session-id",
					      .name_len = 14,
					      .value = sid,
					      .value_len = (uint32_t)strlen(sid),
					      .op = ARN_H1_EDIT_SET};
	if (allow)
		e[n++] = (struct arn_h1_edit){.name = "allow",
					      .name_len = 5,
					      .value = allow,
					      .value_len = (uint32_t)strlen(allow),
					      .op = ARN_H1_EDIT_SET};
	if (status >= 400)
		HTTP_INC(hc, mcp_rq_error);
	http_local_reply(st, status, text, len, 0, details, e, n);
}

/* An error that ends the exchange: lib/mcp's code, message and status,
 * "id": null (the request's id is unknown or there are several). */
static void reply_error(struct http_stream *st, enum arn_mcp_err e, const char *detail,
			const char *details)
{
	struct json_object *o = arn_mcp_new_error(NULL, e, detail);
	unsigned status = (unsigned)arn_mcp_err_status(e);
	if (!o) {
		http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
		return;
	}
	reply(st, status == 200 ? 400 : status, o, NULL, NULL, details);
	json_object_put(o);
}

/* ---- the head ----------------------------------------------------------------------------- */

static void hdr(const struct arn_h1_msg *m, const char *name, size_t n, const char **v,
		size_t *vlen)
{
	int i = arn_h1_find(m, name, n, 0);
	*v = i >= 0 ? m->hdrs[i].value : NULL;
	*vlen = i >= 0 ? m->hdrs[i].value_len : 0;
}

/* Copy the request headers @p ts's header principals name into @p r
 * (their values into the stream's text space); a header that does not
 * fit is left out, so a principal matching on it does not match (a
 * client shown fewer tools, never more). */
static void keep_principal_headers(struct http_stream *st, struct http_mcp_req *r,
				   const struct arn_cfg_toolset *ts,
				   const struct arn_cfg_request *req)
{
	r->n_hdrs = 0;
	for (size_t i = 0; i < ts->n_rules; i++) {
		const struct arn_cfg_mcp_access_rule *ru = &ts->rules[i];
		for (size_t j = 0; j < ru->n_principals; j++) {
			const struct arn_cfg_mcp_principal *p = &ru->principals[j];
			if (p->kind != ARN_CFG_MCP_PRINCIPAL_HEADER)
				continue;
			for (size_t k = 0; k < req->n_headers; k++) {
				const struct arn_cfg_header *h = &req->headers[k];
				if (h->name_len != p->header.name_len ||
				    strncasecmp(h->name, p->header.name, h->name_len) != 0)
					continue;
				bool dup = false;
				for (size_t q = 0; q < r->n_hdrs && !dup; q++)
					dup = r->hdrs[q].name == h->name;
				if (dup || r->n_hdrs == MCP_PRINCIPAL_HDRS ||
				    st->text_len + h->value_len + 1 > HTTP_TEXT)
					continue;
				char *v = st->res->text + st->text_len;
				memcpy(v, h->value, h->value_len);
				v[h->value_len] = 0;
				st->text_len += (uint32_t)h->value_len + 1;
				r->hdrs[r->n_hdrs++] = (struct arn_cfg_header){
				    p->header.name, p->header.name_len, v, h->value_len};
			}
		}
	}
}

static const char *action_details(uint8_t a)
{
	switch (a) {
	case ARN_MCP_A_GET_STREAM:
		return "mcp_get_stream_not_served";
	case ARN_MCP_A_SSE_OPEN:
	case ARN_MCP_A_SSE_POST:
		return "mcp_http_sse_not_served";
	default:
		return "mcp_refused";
	}
}

bool http_mcp_filter(struct http_stream *st, const struct arn_cfg_gen *g,
		     const struct arn_cfg_request *req)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	const struct arn_cfg_mcp_filter *f = hc->hcm->mcp_gateway;
	const struct arn_h1_msg *m = &st->req.m;
	HTTP_INC(hc, mcp_rq_total);

	struct arn_mcp_http_req hr = {
	    .method = m->method_name.p,
	    .method_len = m->method_name.len,
	    .path = m->path.p,
	    .path_len = m->path.len,
	};
	hdr(m, "accept", 6, &hr.accept, &hr.accept_len);
	hdr(m, "content-type", 12, &hr.content_type, &hr.content_type_len);
	hdr(m, "mcp-session-id", 14, &hr.session_id, &hr.session_id_len);
	struct arn_mcp_route rt;
	arn_mcp_classify(&hr, f->path, f->path_len, &rt);

	switch (rt.action) {
	case ARN_MCP_A_POST:
	case ARN_MCP_A_DELETE:
		break;
	case ARN_MCP_A_REFUSE: {
		/* lib/mcp says what and why; the body is a JSON-RPC error as
		 * the SDK's server sends one */
		char body[256];
		snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
			 "\"message\":\"%s\"}}",
			 rt.why ? rt.why : "Bad Request");
		struct json_object *bo = json_tokener_parse(body);
		reply(st, rt.status, bo, NULL, rt.status == 405 ? rt.allow : NULL, "mcp_refused");
		json_object_put(bo);
		return true;
	}
	default: {
		/* The GET stream (server-to-client messages) and 2024-11-05's
		 * HTTP+SSE come with streamed replies. 405 is what the SDK's
		 * client takes for "this server offers no GET stream" and goes
		 * on without one. */
		char body[256];
		snprintf(body, sizeof(body),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":"
			 "\"Method Not Allowed: %s is not served by this gateway yet\"}}",
			 rt.action == ARN_MCP_A_GET_STREAM ? "the GET stream"
							   : "the HTTP+SSE transport (2024-11-05)");
		struct json_object *bo = json_tokener_parse(body);
		reply(st, 405, bo, NULL, "POST, DELETE", action_details(rt.action));
		json_object_put(bo);
		return true;
	}
	}

	const struct arn_cfg_toolset *ts = g ? arn_cfg_toolset_find(g, &f->toolset) : NULL;
	if (!ts) {
		reply_error(st, ARN_MCP_E_TOOLSET_MISSING, f->toolset.name, "mcp_toolset_missing");
		return true;
	}
	if (rt.action == ARN_MCP_A_DELETE) {
		struct arn_mcp_session *s = NULL;
		enum arn_mcp_err e = arn_mcp_session_find(w->mcp->sessions, hr.session_id,
							  hr.session_id_len, w->now_ms, &s);
		if (e == ARN_MCP_E_SESSION_ELSEWHERE)
			HTTP_INC(hc, mcp_session_elsewhere);
		if (e) {
			reply_error(st, e,
				    e == ARN_MCP_E_SESSION_ELSEWHERE
					? "the session lives on another worker of this Arion; "
					  "requests are not handed between workers yet"
					: NULL,
				    "mcp_session");
			return true;
		}
		arn_mcp_session_close(w->mcp->sessions, s);
		HTTP_INC(hc, mcp_session_closed);
		reply(st, 200, NULL, NULL, NULL, "mcp_session_deleted");
		return true;
	}
	/* Refused before a byte of the body is read (it is not read). */
	if ((m->flags & ARN_H1_F_CONTENT_LENGTH) && m->content_length > f->max_request_bytes) {
		HTTP_INC(hc, mcp_rq_too_large);
		reply_error(st, ARN_MCP_E_TOO_LARGE, NULL, "mcp_request_too_large");
		return true;
	}
	struct http_mcp_req *r = w->mcp->free;
	if (!r) { /* one per request buffer: cannot happen while every stream has one */
		reply_error(st, ARN_MCP_E_INTERNAL, "no request context", "mcp_no_context");
		return true;
	}
	struct arn_mcp_limits lim = {.max_message_bytes = f->max_request_bytes};
	if (arn_mcp_reader_init(&r->rd, &lim) != 0) {
		reply_error(st, ARN_MCP_E_INTERNAL, "out of memory", "mcp_out_of_memory");
		return true;
	}
	w->mcp->free = r->next;
	r->next = NULL;
	r->rd_open = true;
	r->f = f;
	r->ts = ts;
	arn_cfg_pin(ts);
	r->has_sid = hr.session_id != NULL;
	r->sid_long = hr.session_id_len > ARN_MCP_SID_LEN;
	r->sid_len = r->sid_long ? 0 : hr.session_id_len;
	if (r->sid_len)
		memcpy(r->sid, hr.session_id, r->sid_len);
	r->sid[r->sid_len] = 0;
	const char *pv;
	size_t pvl;
	hdr(m, "mcp-protocol-version", 20, &pv, &pvl);
	r->has_pver = pv != NULL;
	r->pver_len = pvl < sizeof(r->pver) ? pvl : sizeof(r->pver) - 1;
	if (pv)
		memcpy(r->pver, pv, r->pver_len);
	keep_principal_headers(st, r, ts, req);
	st->mcp = r;
	st->state |= HTTP_S_MCP;
	return true;
}

/* ---- the body ----------------------------------------------------------------------------- */

bool http_mcp_body(struct http_stream *st, const char *data, size_t len)
{
	struct http_mcp_req *r = st->mcp;
	int rc = arn_mcp_reader_feed(&r->rd, data, len);
	if (rc == ARN_AGAIN)
		return true;
	if (rc == ARN_MCP_E_TOO_LARGE)
		HTTP_INC(st->hc, mcp_rq_too_large);
	reply_error(st, (enum arn_mcp_err)rc, NULL, "mcp_bad_body");
	return false;
}

/* ---- the answer --------------------------------------------------------------------------- */

static int session_random(uint8_t rnd[16])
{
	/* rte_rand() is not a CSPRNG: a session id is a bearer secret */
	ssize_t n = getrandom(rnd, 16, GRND_NONBLOCK);
	return n == 16 ? 0 : -EAGAIN;
}

void http_mcp_end(struct http_stream *st)
{
	struct http_conn *hc = st->hc;
	struct http_worker *w = hc->w;
	struct http_mcp_req *r = st->mcp;
	struct arn_mcp_session *s = NULL;
	if (r->has_sid) {
		enum arn_mcp_err e = r->sid_long ? ARN_MCP_E_SESSION_UNKNOWN
						 : arn_mcp_session_find(w->mcp->sessions, r->sid,
									r->sid_len, w->now_ms, &s);
		if (e == ARN_MCP_E_SESSION_ELSEWHERE)
			HTTP_INC(hc, mcp_session_elsewhere);
		if (e) {
			reply_error(st, e,
				    e == ARN_MCP_E_SESSION_ELSEWHERE
					? "the session lives on another worker of this Arion; "
					  "requests are not handed between workers yet"
					: NULL,
				    "mcp_session");
			return;
		}
		enum arn_mcp_err ve = arn_mcp_version_header(r->has_pver ? r->pver : NULL,
							     r->has_pver ? r->pver_len : 0,
							     (enum arn_mcp_version)s->version);
		if (ve) {
			reply_error(st, ve, NULL, "mcp_protocol_version");
			return;
		}
	}
	struct arn_mcp_body body;
	bool batch_ok = s && arn_mcp_version_batches((enum arn_mcp_version)s->version);
	enum arn_mcp_err e = arn_mcp_reader_finish(&r->rd, batch_ok, &body);
	arn_mcp_reader_fini(&r->rd);
	r->rd_open = false;
	if (e) {
		reply_error(st, e, NULL, "mcp_bad_body");
		return;
	}
	if (!s && !(body.n == 1 && !body.batch && body.msgs[0].err == ARN_MCP_E_NONE &&
		    body.msgs[0].kind == ARN_MCP_REQUEST &&
		    body.msgs[0].method == ARN_MCP_M_INITIALIZE)) {
		arn_mcp_body_release(&body);
		reply_error(st, ARN_MCP_E_SESSION_MISSING, NULL, "mcp_session_missing");
		return;
	}

	struct json_object *answers[ARN_MCP_MAX_BATCH];
	uint32_t n_ans = 0;
	const char *sid_out = s ? s->id : NULL;
	for (uint32_t i = 0; i < body.n; i++) {
		const struct arn_mcp_msg *m = &body.msgs[i];
		struct json_object *ans = NULL;
		enum arn_mcp_version ver = ARN_MCP_V_NONE;
		enum arn_mcp_step step = arn_mcp_dispatch(m, s, body.batch, &ans, &ver);
		switch (step) {
		case ARN_MCP_S_ANSWER:
			break;
		case ARN_MCP_S_INITIALIZE: {
			uint8_t rnd[16];
			if (session_random(rnd) != 0) {
				ans = arn_mcp_new_error(m->id, ARN_MCP_E_INTERNAL,
							"no random bytes for a session id");
				break;
			}
			enum arn_mcp_err oe =
			    arn_mcp_session_open(w->mcp->sessions, ver, ARN_MCP_T_STREAMABLE,
						 w->now_ms, rnd, &s, NULL, NULL);
			if (oe) {
				for (uint32_t k = 0; k < n_ans; k++)
					json_object_put(answers[k]);
				arn_mcp_body_release(&body);
				reply_error(st, oe, NULL, "mcp_sessions_full");
				return;
			}
			HTTP_INC(hc, mcp_session_opened);
			sid_out = s->id;
			struct json_object *res =
			    arn_mcp_initialize_result(ver, NULL, 0, ARN_VERSION);
			ans = res ? arn_mcp_new_result(m->id, res) : NULL;
			json_object_put(res);
			break;
		}
		case ARN_MCP_S_TOOLS_LIST:
		case ARN_MCP_S_TOOLS_CALL:
			/* the backends are reached from the next step on */
			ans = arn_mcp_new_error(m->id, ARN_MCP_E_BACKEND,
						"no backend is reachable from this gateway yet");
			break;
		default: /* notifications, answers, cancellation: nothing to say */
			continue;
		}
		if (!ans) {
			for (uint32_t k = 0; k < n_ans; k++)
				json_object_put(answers[k]);
			arn_mcp_body_release(&body);
			http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
			return;
		}
		answers[n_ans++] = ans;
	}
	bool batch = body.batch;
	arn_mcp_body_release(&body);
	if (n_ans == 0) {
		/* only notifications and answers: 202, no body */
		reply(st, 202, NULL, NULL, NULL, "mcp_accepted");
		return;
	}
	struct json_object *out = answers[0];
	if (batch) {
		out = json_object_new_array_ext((int)n_ans);
		for (uint32_t k = 0; k < n_ans; k++) {
			if (out)
				json_object_array_add(out, answers[k]);
			else
				json_object_put(answers[k]);
		}
		if (!out) {
			http_local_reply(st, 500, NULL, 0, 0, "mcp_out_of_memory", NULL, 0);
			return;
		}
	}
	reply(st, 200, out, sid_out, NULL, "mcp_answered");
	json_object_put(out);
}

void http_mcp_stream_end(struct http_stream *st)
{
	struct http_mcp_req *r = st->mcp;
	if (!r)
		return;
	struct http_mcp_worker *m = st->hc->w->mcp;
	if (r->rd_open)
		arn_mcp_reader_fini(&r->rd);
	r->rd_open = false;
	if (r->ts)
		arn_cfg_unpin(r->ts);
	r->ts = NULL;
	r->next = m->free;
	m->free = r;
	st->mcp = NULL;
	st->state &= ~HTTP_S_MCP;
}
