/*
 * An access log format checked at conversion as the runtime compiles it
 * (the file loggers, local_reply_config, custom_response, the gRPC
 * loggers' bodies and attributes): below every converter that has one,
 * so that none of them calls another to reach it.
 */
#include <stdio.h>
#include <string.h>

#include "arn_access_log.h"
#include "arn_sb.h"
#include "config_int.h"

/* Compile @p a's format (from field @p field of the typed_config) as the
 * runtime will (arn_access_format_of): a format Arion cannot write refuses
 * the resource, as Envoy refuses it, instead of an accepted configuration
 * whose log the runtime turns off. */
void conv_check_access_format(struct conv *c, const char *json, const char *text, bool omit,
			      const char *field)
{
	if (!json && !text)
		return;
	struct arn_sb e = ARN_SB_INIT;
	struct arn_access_format *f = arn_access_format_of(json, text, omit, field, &e);
	if (f) {
		arn_access_format_free(f);
	} else {
		/* "<field>[.<key>]: reason\n": the path, then the reason */
		const char *t = arn_sb_cstr(&e), *sep = strstr(t, ": ");
		size_t tl = strlen(t);
		while (tl && t[tl - 1] == '\n')
			tl--;
		if (sep && (size_t)(sep - t) < tl) {
			char path[256];
			snprintf(path, sizeof(path), "%.*s", (int)(sep - t), t);
			conv_err(c, path, "%.*s", (int)(tl - (size_t)(sep + 2 - t)), sep + 2);
		} else {
			conv_err(c, field, "%.*s", (int)tl, t);
		}
	}
	arn_sb_free(&e);
}
