/*
 * envoy.filters.http.decompressor's configuration: the filter
 * (conv_decompressor_filter, from the connection manager's conversion,
 * conv_listener.c) and its decompressor_library (gzip, brotli, zstd with
 * Envoy's defaults and validation ranges: Envoy's
 * extensions/compression/{gzip,brotli,zstd}/decompressor/config.cc).
 * lib/http/http_decompressor.c runs it.
 */
#include <string.h>

#include "arn_config_model.h"
#include "arn_proto.h"
#include "config_int.h"

#define DECOMPRESSOR_TYPE "envoy.extensions.filters.http.decompressor.v3.Decompressor"
#define GZIP_TYPE "envoy.extensions.compression.gzip.decompressor.v3.Gzip"
#define BROTLI_TYPE "envoy.extensions.compression.brotli.decompressor.v3.Brotli"
#define ZSTD_TYPE "envoy.extensions.compression.zstd.decompressor.v3.Zstd"

/* decompressor_library: gzip, brotli or zstd, with Envoy's defaults. */
static void dc_library(struct conv *c, struct pb lib, struct arn_cfg_decompressor *o)
{
	o->chunk_size = 4096;
	o->max_ratio = 100;
	o->gz_window = 15;
	if (!lib.m) {
		conv_err(c, "decompressor_library", "missing (Envoy requires it)");
		return;
	}
	size_t m = conv_push(c, "decompressor_library");
	conv_only(c, lib, "name,typed_config");
	/* Envoy allows an empty name: the stats then read
	 * "decompressor..gzip." */
	o->name = conv_str(c, pb_str(lib, "name"));
	struct pb tc = pb_msg(lib, "typed_config");
	upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : (upb_StringView){"", 0};
	size_t m2 = conv_push(c, "typed_config");
	if (arn_sv_eq(tn, GZIP_TYPE)) {
		struct pb g = conv_any(c, tc, GZIP_TYPE);
		o->lib = ARN_CFG_CMP_GZIP;
		if (g.m) {
			conv_only(c, g, "window_bits,chunk_size,max_inflate_ratio");
			o->gz_window = (uint8_t)conv_wrapped_u32_in(c, g, "window_bits", 9, 15, 15);
			o->chunk_size = conv_wrapped_u32_in(c, g, "chunk_size", 4096, 65536, 4096);
			o->max_ratio = conv_wrapped_u32_in(c, g, "max_inflate_ratio", 1, 1032, 100);
		}
	} else if (arn_sv_eq(tn, BROTLI_TYPE)) {
		struct pb b = conv_any(c, tc, BROTLI_TYPE);
		o->lib = ARN_CFG_CMP_BROTLI;
		if (b.m) {
			conv_only(c, b, "disable_ring_buffer_reallocation,chunk_size");
			o->br_no_realloc = pb_bool(b, "disable_ring_buffer_reallocation");
			o->chunk_size = conv_wrapped_u32_in(c, b, "chunk_size", 4096, 65536, 4096);
		}
	} else if (arn_sv_eq(tn, ZSTD_TYPE)) {
		struct pb z = conv_any(c, tc, ZSTD_TYPE);
		o->lib = ARN_CFG_CMP_ZSTD;
		if (z.m) {
			conv_only(c, z, "dictionaries,chunk_size");
			if (pb_len(z, "dictionaries"))
				conv_err(c, "dictionaries",
					 "not supported by Arion: remove them (zstd bodies "
					 "compressed without a dictionary decompress without "
					 "one)");
			o->chunk_size = conv_wrapped_u32_in(c, z, "chunk_size", 4096, 65536, 4096);
		}
	} else {
		conv_err(c, "",
			 "decompressor library '%.*s' is not supported by Arion (gzip, brotli "
			 "and zstd are: "
			 "envoy.extensions.compression.{gzip,brotli,zstd}.decompressor.v3)",
			 (int)tn.size, tn.data);
	}
	conv_pop(c, m2);
	conv_pop(c, m);
}

/* A direction's common_config: enabled (true unset, as Envoy) and
 * ignore_no_transform_header. */
static void dc_common(struct conv *c, struct pb dir, bool *enabled, bool *ignore_nt)
{
	*enabled = true;
	*ignore_nt = false;
	struct pb cc = pb_msg(dir, "common_config");
	if (!cc.m)
		return;
	size_t m = conv_push(c, "common_config");
	conv_only(c, cc, "enabled,ignore_no_transform_header");
	*enabled = conv_runtime_flag(c, cc, "enabled");
	*ignore_nt = pb_bool(cc, "ignore_no_transform_header");
	conv_pop(c, m);
}

void conv_decompressor_filter(struct conv *c, struct pb any, size_t nf, struct arn_cfg_hcm *out)
{
	struct pb p = conv_any(c, any, DECOMPRESSOR_TYPE);
	if (!p.m)
		return;
	if (!out->decompressors)
		out->decompressors = CONV_NEW(c, struct arn_cfg_decompressor, nf);
	if (!out->decompressors)
		return;
	struct arn_cfg_decompressor *o =
	    (struct arn_cfg_decompressor *)&out->decompressors[out->n_decompressors];
	conv_only(c, p, "decompressor_library,request_direction_config,response_direction_config");
	dc_library(c, pb_msg(p, "decompressor_library"), o);
	struct pb rq = pb_msg(p, "request_direction_config");
	o->advertise = true;
	o->req_enabled = true;
	if (rq.m) {
		size_t m = conv_push(c, "request_direction_config");
		conv_only(c, rq, "common_config,advertise_accept_encoding");
		dc_common(c, rq, &o->req_enabled, &o->req_ignore_nt);
		bool v;
		if (pb_wrapped_bool(rq, "advertise_accept_encoding", &v))
			o->advertise = v;
		conv_pop(c, m);
	}
	struct pb rs = pb_msg(p, "response_direction_config");
	o->resp_enabled = true;
	if (rs.m) {
		size_t m = conv_push(c, "response_direction_config");
		conv_only(c, rs, "common_config");
		dc_common(c, rs, &o->resp_enabled, &o->resp_ignore_nt);
		conv_pop(c, m);
	}
	out->n_decompressors++;
}
