/*
 * envoy.filters.http.buffer's Buffer and a route level's BufferPerRoute ->
 * struct arn_cfg_buffer, as Envoy's buffer.proto validates them:
 * max_request_bytes required and above 0; BufferPerRoute one of disabled
 * (true only) or buffer (required). A BufferPerRoute disabled is the
 * filter off at that level, as a FilterConfig disabled is
 * (ARN_CFG_PF_DISABLED: arn_cfg_filter_off).
 */
#include "arn_config.h"
#include "config_int.h"

const struct arn_cfg_buffer *conv_buffer(struct conv *c, struct pb p)
{
	struct arn_cfg_buffer *o = CONV_NEW(c, struct arn_cfg_buffer, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "max_request_bytes");
	if (!pb_wrapped_u32(p, "max_request_bytes", &o->max_request_bytes))
		conv_err(c, "max_request_bytes", "missing (Envoy requires it)");
	else if (!o->max_request_bytes)
		conv_err(c, "max_request_bytes", "must be more than 0 (Envoy requires it)");
	return o;
}

const struct arn_cfg_buffer *conv_buffer_route(struct conv *c, struct pb p, uint8_t *kind)
{
	conv_only(c, p, "disabled,buffer");
	*kind = ARN_CFG_PF_DISABLED;
	const char *which = pb_which(p, "override");
	if (!which) {
		conv_err(c, "override", "missing: disabled or buffer (Envoy requires one)");
		return NULL;
	}
	if (which[0] == 'd') {
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy's only value)");
		return NULL;
	}
	size_t m = conv_push(c, "buffer");
	const struct arn_cfg_buffer *o = conv_buffer(c, pb_msg(p, "buffer"));
	conv_pop(c, m);
	*kind = ARN_CFG_PF_BUFFER;
	return o;
}
