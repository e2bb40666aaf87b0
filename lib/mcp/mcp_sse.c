/*
 * Server-sent events from backends: an incremental reader to the HTML
 * standard's event stream rules (9.2.6), into a caller-supplied buffer.
 */
#include <string.h>

#include "arn_mcp.h"

enum {
	ST_FIELD = 0, /* reading a field name */
	ST_SPACE,     /* just after the colon: one space is dropped */
	ST_VALUE,
};

enum {
	F_OTHER = 0, /* retry, comments, unknown fields: ignored */
	F_DATA,
	F_EVENT,
	F_ID,
};

void arn_mcp_sse_init(struct arn_mcp_sse *p, char *buf, size_t cap)
{
	memset(p, 0, sizeof(*p));
	p->buf = buf;
	p->cap = cap;
}

static int field_kind(const struct arn_mcp_sse *p)
{
	if (p->field_len == 4 && memcmp(p->field, "data", 4) == 0)
		return F_DATA;
	if (p->field_len == 5 && memcmp(p->field, "event", 5) == 0)
		return F_EVENT;
	if (p->field_len == 2 && memcmp(p->field, "id", 2) == 0)
		return F_ID;
	return F_OTHER;
}

/* The field's value starts (after "name:" or, for a line without a colon,
 * at its end): set up where its bytes go. */
static int value_begin(struct arn_mcp_sse *p)
{
	switch (field_kind(p)) {
	case F_DATA:
		if (p->has_data) { /* lines of one event are joined with LF */
			if (p->len >= p->cap)
				return -E2BIG;
			p->buf[p->len++] = '\n';
		}
		p->has_data = true;
		break;
	case F_EVENT:
		p->name_len = 0;
		p->name_long = false;
		break;
	case F_ID:
		p->id_new_len = 0;
		p->id_long = false;
		break;
	}
	return 0;
}

static int value_byte(struct arn_mcp_sse *p, char c)
{
	switch (field_kind(p)) {
	case F_DATA:
		if (p->len >= p->cap)
			return -E2BIG;
		p->buf[p->len++] = c;
		break;
	case F_EVENT:
		if (p->name_len < ARN_MCP_SSE_NAME_MAX)
			p->name[p->name_len++] = c;
		else
			p->name_long = true;
		break;
	case F_ID:
		if (c == '\0' || p->id_new_len >= ARN_MCP_SSE_ID_MAX)
			p->id_long = true; /* the standard ignores ids with NUL */
		else
			p->id_new[p->id_new_len++] = c;
		break;
	}
	return 0;
}

static void value_end(struct arn_mcp_sse *p)
{
	if (field_kind(p) == F_ID && !p->id_long) {
		memcpy(p->id, p->id_new, p->id_new_len);
		p->id_len = p->id_new_len;
		p->id[p->id_len] = '\0';
	}
}

/* A line ended. @return 1 when it ended an event to dispatch. */
static int line_end(struct arn_mcp_sse *p)
{
	int rc = 0;
	if (p->state == ST_FIELD && p->field_len == 0) {
		/* A blank line: dispatch, if there is data. */
		rc = p->has_data ? 1 : 0;
		if (!rc) {
			p->name_len = 0;
			p->name_long = false;
		}
	} else {
		if (p->state == ST_FIELD &&
		    value_begin(p) < 0) /* "data" alone: an empty line of data */
			return -E2BIG;
		value_end(p);
	}
	p->state = ST_FIELD;
	p->field_len = 0;
	return rc;
}

ssize_t arn_mcp_sse_feed(struct arn_mcp_sse *p, const char *in, size_t n, struct arn_mcp_sse_ev *ev)
{
	static const unsigned char bom[3] = {0xef, 0xbb, 0xbf};
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (!p->started) {
			if (p->bom < 3 && (unsigned char)c == bom[p->bom]) {
				if (++p->bom == 3)
					p->started = true;
				continue;
			}
			p->started = true;
		}
		if (p->cr) {
			p->cr = false;
			if (c == '\n')
				continue; /* CRLF: the CR ended the line */
		}
		if (c == '\r' || c == '\n') {
			p->cr = c == '\r';
			int k = line_end(p);
			if (k < 0)
				return k;
			if (k == 1) {
				ev->data = p->buf;
				ev->data_len = p->len;
				if (p->name_len == 0 && !p->name_long) {
					ev->event = "message";
					ev->event_len = 7;
				} else {
					p->name[p->name_long ? 0 : p->name_len] = '\0';
					ev->event = p->name;
					ev->event_len = p->name_long ? 0 : p->name_len;
				}
				ev->id = p->id;
				ev->id_len = p->id_len;
				p->len = 0;
				p->has_data = false;
				p->name_len = 0;
				p->name_long = false;
				return (ssize_t)(i + 1);
			}
			continue;
		}
		switch (p->state) {
		case ST_FIELD:
			if (c == ':') {
				/* A line starting with ':' is a comment: field "", ignored. */
				if (value_begin(p) < 0)
					return -E2BIG;
				p->state = ST_SPACE;
			} else if (p->field_len < sizeof(p->field)) {
				p->field[p->field_len++] = c;
			} /* longer: no known field; field_kind() says OTHER */
			break;
		case ST_SPACE:
			p->state = ST_VALUE;
			if (c == ' ')
				break;
			/* fall through */
		case ST_VALUE:
			if (value_byte(p, c) < 0)
				return -E2BIG;
			break;
		}
	}
	return ARN_AGAIN;
}
