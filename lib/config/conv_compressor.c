/*
 * envoy.filters.http.compressor's configuration: the filter
 * (conv_compressor_filter, from the connection manager's conversion,
 * conv_listener.c), its compressor_library (gzip, brotli, zstd with
 * Envoy's defaults and validation ranges) and a route's CompressorPerRoute
 * (conv_compressor_route, from the per-filter configuration, conv_l4.c).
 * lib/http/http_compressor.c runs it.
 */
#include <string.h>

#include "arn_config_model.h"
#include "arn_proto.h"
#include "config_int.h"

#define COMPRESSOR_TYPE "envoy.extensions.filters.http.compressor.v3.Compressor"
#define GZIP_TYPE "envoy.extensions.compression.gzip.compressor.v3.Gzip"
#define BROTLI_TYPE "envoy.extensions.compression.brotli.compressor.v3.Brotli"
#define ZSTD_TYPE "envoy.extensions.compression.zstd.compressor.v3.Zstd"

/* An enum field @p f of @p p: a value in 0..@p max (defined_only). */
static uint8_t cmp_enum(struct conv *c, struct pb p, const char *f, int32_t max)
{
	int32_t v = pb_i32(p, f);
	if (v < 0 || v > max) {
		conv_err(c, f, "%d is not a value Envoy defines (0 to %d)", v, max);
		return 0;
	}
	return (uint8_t)v;
}

/* compressor_library: gzip, brotli or zstd, with Envoy's defaults. */
static void cmp_library(struct conv *c, struct pb lib, struct arn_cfg_compressor *o)
{
	if (!lib.m) {
		conv_err(c, "compressor_library", "missing (Envoy requires it)");
		return;
	}
	size_t m = conv_push(c, "compressor_library");
	conv_only(c, lib, "name,typed_config");
	upb_StringView name = pb_str(lib, "name");
	if (!name.size)
		conv_err(c, "name", "missing (Envoy requires it: the stats are named with it)");
	o->name = conv_str(c, name);
	struct pb tc = pb_msg(lib, "typed_config");
	upb_StringView tn = tc.m ? arn_proto_any_type_name(tc.m) : (upb_StringView){"", 0};
	size_t m2 = conv_push(c, "typed_config");
	o->chunk_size = 4096;
	if (arn_sv_eq(tn, GZIP_TYPE)) {
		struct pb g = conv_any(c, tc, GZIP_TYPE);
		o->lib = ARN_CFG_CMP_GZIP;
		o->gz_level = -1;
		o->gz_window = 12;
		o->gz_memlevel = 5;
		if (g.m) {
			conv_only(c, g,
				  "memory_level,compression_level,compression_strategy,window_bits,"
				  "chunk_size");
			o->gz_memlevel =
			    (uint8_t)conv_wrapped_u32_in(c, g, "memory_level", 1, 9, 5);
			uint8_t lv = cmp_enum(c, g, "compression_level", 9);
			o->gz_level = lv ? (int8_t)lv : -1;
			o->gz_strategy = cmp_enum(c, g, "compression_strategy", 4);
			o->gz_window = (uint8_t)conv_wrapped_u32_in(c, g, "window_bits", 9, 15, 12);
			o->chunk_size = conv_wrapped_u32_in(c, g, "chunk_size", 4096, 65536, 4096);
		}
	} else if (arn_sv_eq(tn, BROTLI_TYPE)) {
		struct pb b = conv_any(c, tc, BROTLI_TYPE);
		o->lib = ARN_CFG_CMP_BROTLI;
		o->br_quality = 3;
		o->br_window = 18;
		o->br_block = 24;
		if (b.m) {
			conv_only(c, b,
				  "quality,encoder_mode,window_bits,input_block_bits,chunk_size,"
				  "disable_literal_context_modeling");
			o->br_quality = (uint8_t)conv_wrapped_u32_in(c, b, "quality", 0, 11, 3);
			o->br_mode = cmp_enum(c, b, "encoder_mode", 3);
			o->br_window =
			    (uint8_t)conv_wrapped_u32_in(c, b, "window_bits", 10, 24, 18);
			o->br_block =
			    (uint8_t)conv_wrapped_u32_in(c, b, "input_block_bits", 16, 24, 24);
			o->chunk_size = conv_wrapped_u32_in(c, b, "chunk_size", 4096, 65536, 4096);
			o->br_no_literal_ctx = pb_bool(b, "disable_literal_context_modeling");
		}
	} else if (arn_sv_eq(tn, ZSTD_TYPE)) {
		struct pb z = conv_any(c, tc, ZSTD_TYPE);
		o->lib = ARN_CFG_CMP_ZSTD;
		if (z.m) {
			conv_only(
			    c, z,
			    "compression_level,enable_checksum,strategy,dictionary,chunk_size");
			/* zstd's levels: up to 22 (ZSTD_maxCLevel); more is
			 * clamped by zstd, refused here */
			o->zs_level = conv_wrapped_u32_in(c, z, "compression_level", 0, 22, 0);
			o->zs_checksum = pb_bool(z, "enable_checksum");
			o->zs_strategy = cmp_enum(c, z, "strategy", 9);
			if (pb_has(z, "dictionary"))
				conv_err(c, "dictionary",
					 "not supported by Arion: remove it (zstd compresses "
					 "without one)");
			o->chunk_size = conv_wrapped_u32_in(c, z, "chunk_size", 4096, 65536, 4096);
		}
	} else {
		conv_err(c, "",
			 "compressor library '%.*s' is not supported by Arion (gzip, brotli and "
			 "zstd are: envoy.extensions.compression.{gzip,brotli,zstd}.compressor.v3)",
			 (int)tn.size, tn.data);
	}
	conv_pop(c, m2);
	conv_pop(c, m);
}

/*
 * envoy.filters.http.compressor: response compression with Envoy's
 * fields and defaults. The deprecated top-level fields apply when
 * response_direction_config is unset, as Envoy applies them. Request
 * compression (request_direction_config enabled) is refused, not ignored:
 * an upstream would wait for compressed bodies that never come.
 */
void conv_compressor_filter(struct conv *c, struct pb any, size_t nf, struct arn_cfg_hcm *out)
{
	struct pb p = conv_any(c, any, COMPRESSOR_TYPE);
	if (!p.m)
		return;
	if (!out->compressors)
		out->compressors = CONV_NEW(c, struct arn_cfg_compressor, nf);
	if (!out->compressors)
		return;
	struct arn_cfg_compressor *o =
	    (struct arn_cfg_compressor *)&out->compressors[out->n_compressors];
	conv_only(c, p,
		  "content_length,content_type,disable_on_etag_header,remove_accept_encoding_"
		  "header,runtime_enabled,compressor_library,request_direction_config,"
		  "response_direction_config,choose_first");
	struct pb rq = pb_msg(p, "request_direction_config");
	if (rq.m) {
		size_t m = conv_push(c, "request_direction_config");
		conv_only(c, rq, "common_config");
		struct pb cc = pb_msg(rq, "common_config");
		/* Envoy compresses requests once the message is there, unless
		 * enabled says false */
		bool on = true;
		if (cc.m) {
			size_t m2 = conv_push(c, "common_config");
			conv_only(c, cc, "enabled,min_content_length,content_type");
			on = conv_runtime_flag(c, cc, "enabled");
			conv_pop(c, m2);
		}
		if (on)
			conv_err(c, "",
				 "request compression is not supported by Arion: remove "
				 "request_direction_config or set common_config.enabled."
				 "default_value false");
		conv_pop(c, m);
	}
	struct pb rs = pb_msg(p, "response_direction_config");
	o->min_content_length = 30;
	if (rs.m) {
		size_t m = conv_push(c, "response_direction_config");
		conv_only(c, rs,
			  "common_config,disable_on_etag_header,remove_accept_encoding_header");
		o->response_config = true;
		o->disable_on_etag = pb_bool(rs, "disable_on_etag_header");
		o->remove_accept_encoding = pb_bool(rs, "remove_accept_encoding_header");
		struct pb cc = pb_msg(rs, "common_config");
		o->enabled = true;
		if (cc.m) {
			size_t m2 = conv_push(c, "common_config");
			conv_only(c, cc, "enabled,min_content_length,content_type");
			o->enabled = conv_runtime_flag(c, cc, "enabled");
			uint32_t v;
			if (pb_wrapped_u32(cc, "min_content_length", &v) && v)
				o->min_content_length = v;
			conv_str_list(c, cc, "content_type", &o->content_types, &o->n_content_types,
				      true);
			conv_pop(c, m2);
		}
		conv_pop(c, m);
	} else {
		o->disable_on_etag = pb_bool(p, "disable_on_etag_header");
		o->remove_accept_encoding = pb_bool(p, "remove_accept_encoding_header");
		o->enabled = conv_runtime_flag(c, p, "runtime_enabled");
		uint32_t v;
		if (pb_wrapped_u32(p, "content_length", &v) && v)
			o->min_content_length = v;
		conv_str_list(c, p, "content_type", &o->content_types, &o->n_content_types, true);
	}
	o->choose_first = pb_bool(p, "choose_first");
	cmp_library(c, pb_msg(p, "compressor_library"), o);
	if (o->enabled && o->remove_accept_encoding)
		out->cmp_strip_accept_encoding = true;
	out->n_compressors++;
}

/* A compressor's CompressorPerRoute (a route's, a virtual host's or a
 * route table's typed_per_filter_config), Envoy's
 * CompressorPerRouteFilterConfig: disabled, or overrides. */
const struct arn_cfg_compressor_route *conv_compressor_route(struct conv *c, struct pb p)
{
	struct arn_cfg_compressor_route *o = CONV_NEW(c, struct arn_cfg_compressor_route, 1);
	if (!o)
		return NULL;
	conv_only(c, p, "disabled,overrides");
	o->enable = o->remove_ae = -1;
	if (pb_has(p, "disabled")) {
		/* Envoy's validation: the oneof's bool is const true */
		if (!pb_bool(p, "disabled"))
			conv_err(c, "disabled", "must be true (Envoy: set overrides instead)");
		o->enable = 0;
		return o;
	}
	struct pb ov = pb_msg(p, "overrides");
	if (!ov.m) {
		conv_err(c, "", "set disabled or overrides (Envoy requires one)");
		return o;
	}
	size_t m = conv_push(c, "overrides");
	conv_only(c, ov, "response_direction_config,compressor_library");
	struct pb rs = pb_msg(ov, "response_direction_config");
	if (rs.m) {
		/* its presence turns response compression on, as Envoy */
		o->enable = 1;
		size_t m2 = conv_push(c, "response_direction_config");
		conv_only(c, rs, "remove_accept_encoding_header");
		bool v;
		if (pb_wrapped_bool(rs, "remove_accept_encoding_header", &v))
			o->remove_ae = v;
		conv_pop(c, m2);
	}
	if (pb_has(ov, "compressor_library")) {
		cmp_library(c, pb_msg(ov, "compressor_library"), &o->lib);
		o->has_lib = true;
	}
	conv_pop(c, m);
	return o;
}
