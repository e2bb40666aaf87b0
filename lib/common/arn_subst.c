/*
 * Header values' command operators: Envoy's grammar and Arion's list
 * (arn_subst.h).
 */
#include "arn_subst.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool cmd_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* After the command (and its argument): ":N%" or "%". @return the bytes
 * up to and with that %, counted from the value's start, or 0. */
static size_t tail(const char *v, size_t n, size_t p, struct arn_subst_tok *t)
{
	if (p < n && v[p] == ':') {
		size_t d = p + 1, len = 0;
		/* Envoy reads LENGTH into a size_t: more digits do not parse */
		while (d < n && v[d] >= '0' && v[d] <= '9' && d - p <= 18)
			len = len * 10 + (size_t)(v[d++] - '0');
		if (d > p + 1 && d < n && v[d] == '%') {
			t->has_len = true;
			t->max_len = len;
			return d + 1;
		}
	}
	return p < n && v[p] == '%' ? p + 1 : 0;
}

int arn_subst_token(const char *v, size_t n, struct arn_subst_tok *t)
{
	size_t p = 1;
	while (p < n && cmd_char(v[p]))
		p++;
	if (p == 1)
		return -1;
	*t = (struct arn_subst_tok){.cmd = v + 1, .cmd_len = p - 1};
	if (p < n && v[p] == '(') {
		/* (.*?)\): the first ) after which the rest matches; RE2's .
		 * takes no newline */
		for (size_t q = p + 1; q < n && v[q] != '\n'; q++) {
			if (v[q] != ')')
				continue;
			t->has_len = false;
			size_t e = tail(v, n, q + 1, t);
			if (e) {
				t->arg = v + p + 1;
				t->arg_len = q - p - 1;
				t->len = e;
				return 0;
			}
		}
		return -1;
	}
	size_t e = tail(v, n, p, t);
	if (!e)
		return -1;
	t->len = e;
	return 0;
}

static const struct {
	const char *name;
	unsigned char len, syntax;
} arion_ops[] = {
    {NULL, 0, 0},
#define ARN_SUBST_OP(name, syntax) {#name, sizeof(#name) - 1, (syntax)},
#include "arn_subst_ops.def"
};

static const char *const envoy_ops[] = {
#define ARN_SUBST_ENVOY(name) #name,
#include "arn_subst_ops.def"
};

enum arn_subst_op arn_subst_lookup(const char *cmd, size_t len)
{
	for (unsigned i = 1; i < ARN_SUBST_N; i++)
		if (arion_ops[i].len == len && memcmp(arion_ops[i].name, cmd, len) == 0)
			return (enum arn_subst_op)i;
	return ARN_SUBST_NONE;
}

static bool envoy_knows(const char *cmd, size_t len)
{
	for (size_t i = 0; i < sizeof(envoy_ops) / sizeof(envoy_ops[0]); i++)
		if (strlen(envoy_ops[i]) == len && memcmp(envoy_ops[i], cmd, len) == 0)
			return true;
	return false;
}

/* RFC 9110 5.6.2's tchar: what Envoy's headerNameIsValid takes */
static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* %REQ()%'s names, as Envoy's parseSubcommandHeaders checks them, and
 * what Arion reads: no pseudo-header (Arion's request keeps its method,
 * path and authority out of the header list, and its %REQ()% reads the
 * list). */
static int req_names(const struct arn_subst_tok *t, char *err, size_t cap)
{
	size_t ml, al;
	const char *alt;
	arn_subst_req_names(t->arg, t->arg_len, &ml, &alt, &al);
	if (memchr(alt, '?', al)) {
		snprintf(err, cap, "More than 1 alternative header specified in token: %.*s",
			 (int)t->arg_len, t->arg);
		return -EINVAL;
	}
	const char *nm[2] = {t->arg, alt};
	size_t nl[2] = {ml, al};
	for (int k = 0; k < 2; k++) {
		if (nl[k] && nm[k][0] == ':') {
			snprintf(err, cap,
				 "%%REQ(%.*s)%%: a pseudo-header in %%REQ()%% is not supported by "
				 "Arion (name a header)",
				 (int)nl[k], nm[k]);
			return -EINVAL;
		}
		for (size_t i = 0; i < nl[k]; i++)
			if (!tchar(nm[k][i])) {
				snprintf(err, cap,
					 "Invalid header configuration. Format string "
					 "contains invalid characters.");
				return -EINVAL;
			}
	}
	return 0;
}

int arn_subst_check(const char *v, size_t n, char *err, size_t cap)
{
	for (size_t i = 0; i < n;) {
		if (v[i] != '%') {
			i++;
			continue;
		}
		if (i + 1 < n && v[i + 1] == '%') {
			i += 2;
			continue;
		}
		struct arn_subst_tok t;
		if (arn_subst_token(v + i, n - i, &t) < 0) {
			snprintf(err, cap,
				 "Incorrect configuration: %.*s. Couldn't find valid command at "
				 "position %zu",
				 (int)(n > 200 ? 200 : n), v, i);
			return -EINVAL;
		}
		enum arn_subst_op op = arn_subst_lookup(t.cmd, t.cmd_len);
		if (op == ARN_SUBST_NONE) {
			if (envoy_knows(t.cmd, t.cmd_len))
				snprintf(err, cap,
					 "%%%.*s%%: Envoy's command operator is not supported by "
					 "Arion in header values (docs/http.md lists those it is)",
					 (int)t.cmd_len, t.cmd);
			else
				snprintf(err, cap, "Not supported field in StreamInfo: %.*s",
					 (int)t.cmd_len, t.cmd);
			return -EINVAL;
		}
		/* CommandSyntaxChecker::verifySyntax */
		unsigned syn = arion_ops[op].syntax;
		if (syn == ARN_SUBST_COMMAND_ONLY && (t.arg_len || t.has_len)) {
			snprintf(err, cap, "%.*s does not take any parameters or length",
				 (int)t.cmd_len, t.cmd);
			return -EINVAL;
		}
		if ((syn & ARN_SUBST_PARAMS_REQUIRED) && !t.arg_len) {
			snprintf(err, cap, "%.*s requires parameters", (int)t.cmd_len, t.cmd);
			return -EINVAL;
		}
		if (!(syn & ARN_SUBST_LENGTH_ALLOWED) && t.has_len) {
			snprintf(err, cap, "%.*s does not allow length to be specified.",
				 (int)t.cmd_len, t.cmd);
			return -EINVAL;
		}
		if (op == ARN_SUBST_REQ && req_names(&t, err, cap) < 0)
			return -EINVAL;
		i += t.len;
	}
	return 0;
}
