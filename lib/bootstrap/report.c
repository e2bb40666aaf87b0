/*
 * What is wrong with the file, said where it is: "FILE:LINE:COL: PATH: msg"
 * (the line and column of the YAML node at PATH), and the fields of a
 * message that Arion refuses because it does not implement them. Every
 * check of the loader reports through here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "upb/reflection.h"

#include "bootstrap_int.h"
#include "y2j.h"

void arn_bs_error(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	char msg[768];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	arn_bs_report(c, c->err, path, msg);
	c->n_errors++;
}

void arn_bs_warn(struct arn_bs_ctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	char msg[768];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	arn_bs_report(c, c->warnings, path, msg);
}

void arn_bs_report(struct arn_bs_ctx *c, struct arn_sb *to, const char *path, const char *msg)
{
	yaml_node_t *root = yaml_document_get_root_node(c->doc);
	yaml_node_t *n = root ? arn_y2j_find(c->doc, root, path) : NULL;
	if (n != NULL)
		arn_sb_printf(to, "%s:%zu:%zu: %s: %s\n", c->file, n->start_mark.line + 1,
			      n->start_mark.column + 1, path, msg);
	else
		arn_sb_printf(to, "%s: %s: %s\n", c->file, path, msg);
}

/*
 * Fields of a message that Arion implements. A field outside the list is
 * refused by name rather than silently ignored: in Envoy it would change
 * behaviour, and an operator must know that Arion does not do it.
 */
void arn_bs_only_fields(struct arn_bs_ctx *c, const upb_Message *msg, const upb_MessageDef *m,
			const char *path, const char *const *allowed, const char *why)
{
	size_t iter = kUpb_Message_Begin;
	const upb_FieldDef *f;
	upb_MessageValue v;
	while (upb_Message_Next(msg, m, NULL, &f, &v, &iter)) {
		const char *name = upb_FieldDef_Name(f);
		bool ok = false;
		for (const char *const *a = allowed; *a; a++)
			ok |= strcmp(*a, name) == 0;
		if (!ok) {
			char p[512];
			snprintf(p, sizeof(p), "%s.%s", path, name);
			arn_bs_error(c, p, "not supported by Arion%s%s", why ? ": " : "",
				     why ? why : "");
		}
	}
}
