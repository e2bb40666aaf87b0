/*
 * A cluster's transport_socket_matches and the endpoints' metadata that
 * chooses among them (Envoy's TransportSocketMatcherImpl as on its main
 * branch: the legacy metadata matching; its newer transport_socket_matcher
 * field is absent from the API Arion is built with). Envoy's resolve()
 * tries the endpoint's envoy.transport_socket_match metadata against every
 * match, then (in versions with LocalityLbEndpoints.metadata) its
 * locality's: gRPC 1.51's API has no locality metadata, so a resource with
 * it is refused as an unknown field and the endpoint's is the only one.
 */
#include <string.h>

#include "upb/map.h"

#include "arn_proto.h"
#include "config_int.h"

#define TSM_FILTER "envoy.transport_socket_match"

/*
 * One google.protobuf.Value @p vm of key @p key into @p o. In a match
 * (@p in_match) a list or struct is refused naming the key: Envoy would
 * compare them whole, which Arion does not model; in an endpoint's
 * metadata such a value is kept as ARN_CFG_TSM_OTHER, which equals none
 * of a match's (scalar) values, as Envoy's comparison would find.
 */
static void tsm_value(struct conv *c, upb_StringView key, const upb_Message *vm, bool in_match,
		      struct arn_cfg_tsm_kv *o)
{
	if (key.size > ARN_CFG_TSM_STR_MAX)
		conv_err(c, "", "a key of %zu bytes: at most %d", key.size, ARN_CFG_TSM_STR_MAX);
	o->key = conv_str(c, key);
	o->key_len = (uint16_t)key.size;
	o->kind = ARN_CFG_TSM_NULL; /* a Value with no kind set: Envoy's NULL_VALUE */
	if (!vm)
		return;
	struct pb v = {vm, arn_proto_msgdef("google.protobuf.Value")};
	const char *k = pb_which(v, "kind");
	if (!k || strcmp(k, "null_value") == 0) {
		o->kind = ARN_CFG_TSM_NULL;
	} else if (strcmp(k, "number_value") == 0) {
		o->kind = ARN_CFG_TSM_NUMBER;
		o->num = upb_Message_Get(vm, pb_field(v, "number_value")).double_val;
	} else if (strcmp(k, "bool_value") == 0) {
		o->kind = ARN_CFG_TSM_BOOL;
		o->b = pb_bool(v, "bool_value");
	} else if (strcmp(k, "string_value") == 0) {
		upb_StringView s = pb_str(v, "string_value");
		if (s.size > ARN_CFG_TSM_STR_MAX)
			conv_err(c, "", "'%.*s': a value of %zu bytes: at most %d", (int)o->key_len,
				 key.data, s.size, ARN_CFG_TSM_STR_MAX);
		o->kind = ARN_CFG_TSM_STRING;
		o->str = conv_str(c, s);
		o->str_len = (uint16_t)s.size;
	} else if (in_match) {
		conv_err(c, "", "'%.*s': a %s is not supported (string, number, bool or null are)",
			 key.size > 64 ? 64 : (int)key.size, key.data,
			 strcmp(k, "list_value") == 0 ? "list" : "struct");
	} else {
		o->kind = ARN_CFG_TSM_OTHER;
	}
}

/* The fields of Struct @p st (a message, or NULL) into *@p out, at most
 * ARN_CFG_TSM_FIELDS_MAX; @return how many. */
static uint8_t tsm_fields(struct conv *c, const upb_Message *st, bool in_match,
			  const struct arn_cfg_tsm_kv **out)
{
	*out = NULL;
	if (!st)
		return 0;
	struct pb s = {st, arn_proto_msgdef("google.protobuf.Struct")};
	const upb_Map *f = upb_Message_Get(st, pb_field(s, "fields")).map_val;
	size_t n = f ? upb_Map_Size(f) : 0;
	if (n > ARN_CFG_TSM_FIELDS_MAX) {
		conv_err(c, "", "%zu fields: at most %d", n, ARN_CFG_TSM_FIELDS_MAX);
		return 0;
	}
	if (!n)
		return 0;
	struct arn_cfg_tsm_kv *kv = CONV_NEW(c, struct arn_cfg_tsm_kv, n);
	if (!kv)
		return 0;
	size_t i = 0, it = kUpb_Map_Begin;
	while (i < n && upb_MapIterator_Next(f, &it)) {
		tsm_value(c, upb_MapIterator_Key(f, it).str_val,
			  upb_MapIterator_Value(f, it).msg_val, in_match, &kv[i]);
		i++;
	}
	*out = kv;
	return (uint8_t)i;
}

void conv_tsm_endpoint(struct conv *c, const upb_Map *filter_metadata, struct arn_cfg_endpoint *ep)
{
	upb_MessageValue v;
	if (!filter_metadata ||
	    !upb_Map_Get(filter_metadata,
			 (upb_MessageValue){.str_val = {TSM_FILTER, sizeof(TSM_FILTER) - 1}}, &v))
		return;
	size_t m = conv_push(c, "metadata.filter_metadata[" TSM_FILTER "]");
	ep->n_tsm = tsm_fields(c, v.msg_val, false, &ep->tsm);
	conv_pop(c, m);
}

/* (after the cluster's transport_socket and HTTP protocol options) */
void conv_tsm_cluster(struct conv *c, struct pb cl, struct arn_cfg_cluster *out)
{
	out->ts_default = (struct arn_cfg_ts_match){.cluster = out,
						    .name = "default",
						    .is_default = true,
						    .tls = out->upstream_tls,
						    .pp_version = out->upstream_pp};
	size_t n = pb_len(cl, "transport_socket_matches");
	out->plain_h1 = !out->http.upstream && !out->upstream_tls && !out->upstream_pp && !n;
	if (!n)
		return;
	if (n > ARN_CFG_TSM_MAX) {
		conv_err(c, "transport_socket_matches", "%zu matches: at most %d", n,
			 ARN_CFG_TSM_MAX);
		return;
	}
	out->ts_matches = CONV_NEW(c, struct arn_cfg_ts_match, n);
	if (!out->ts_matches)
		return;
	out->n_ts_matches = n;
	for (size_t i = 0; i < n; i++) {
		struct pb tm = pb_at(cl, "transport_socket_matches", i);
		struct arn_cfg_ts_match *o = &out->ts_matches[i];
		size_t m = conv_push(c, "transport_socket_matches[%zu]", i);
		conv_only(c, tm, "name,match,transport_socket");
		o->cluster = out;
		upb_StringView name = pb_str(tm, "name");
		if (!name.size)
			conv_err(c, "name",
				 "missing (Envoy requires one: it names the match's stats)");
		else if (name.size > ARN_CFG_TSM_STR_MAX)
			conv_err(c, "name", "%zu bytes: at most %d", name.size,
				 ARN_CFG_TSM_STR_MAX);
		o->name = conv_str(c, name);
		struct pb st = pb_msg(tm, "match");
		if (st.m) {
			size_t m2 = conv_push(c, "match");
			o->n_kv = tsm_fields(c, st.m, true, &o->kv);
			conv_pop(c, m2);
		}
		/* Envoy requires a transport_socket (its factory lookup fails
		 * on an empty one); raw_buffer says plain text */
		struct pb ts = pb_msg(tm, "transport_socket");
		if (!ts.m)
			conv_err(c, "transport_socket", "missing");
		else
			o->tls = conv_upstream_ts(c, ts, &o->pp_version);
		conv_pop(c, m);
	}
}

static bool tsm_eq(const struct arn_cfg_tsm_kv *a, const struct arn_cfg_tsm_kv *b)
{
	if (a->kind != b->kind || a->kind == ARN_CFG_TSM_OTHER)
		return false;
	switch (a->kind) {
	case ARN_CFG_TSM_NUMBER:
		return a->num == b->num;
	case ARN_CFG_TSM_BOOL:
		return a->b == b->b;
	case ARN_CFG_TSM_STRING:
		return a->str_len == b->str_len && memcmp(a->str, b->str, a->str_len) == 0;
	default:
		return true; /* null */
	}
}

/* Envoy's Config::Metadata::metadataLabelMatch (list_as_any false): every
 * field of the match is in the endpoint's metadata with an equal value. */
static bool tsm_match(const struct arn_cfg_ts_match *m, const struct arn_cfg_endpoint *ep)
{
	for (size_t i = 0; i < m->n_kv; i++) {
		const struct arn_cfg_tsm_kv *want = &m->kv[i];
		bool found = false;
		for (size_t j = 0; j < ep->n_tsm && !found; j++) {
			const struct arn_cfg_tsm_kv *have = &ep->tsm[j];
			if (have->key_len == want->key_len &&
			    memcmp(have->key, want->key, want->key_len) == 0) {
				if (!tsm_eq(want, have))
					return false;
				found = true;
			}
		}
		if (!found)
			return false;
	}
	return true;
}

const struct arn_cfg_ts_match *arn_cfg_tsm_resolve(const struct arn_cfg_cluster *c,
						   const struct arn_cfg_endpoint *ep)
{
	for (size_t i = 0; i < c->n_ts_matches; i++)
		if (tsm_match(&c->ts_matches[i], ep))
			return &c->ts_matches[i];
	return &c->ts_default;
}
