/* lib/proto: the def pool, Any unpacking, JSON both ways. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "arn_proto.h"
#include "envoy/config/cluster/v3/cluster.upb.h"
#include "google/protobuf/any.upb.h"

static void test_pool_has_envoy_and_arion_types(void **state)
{
	(void)state;
	assert_int_equal(arn_proto_init(), 0);
	assert_non_null(arn_proto_msgdef("envoy.config.cluster.v3.Cluster"));
	assert_non_null(arn_proto_msgdef("envoy.service.discovery.v3.DeltaDiscoveryResponse"));
	/* Arion's own protos (proto/) are in the same pool. */
	assert_non_null(arn_proto_msgdef("envoy.extensions.upstreams.http.v3.HttpProtocolOptions"));
	assert_non_null(arn_proto_msgdef("envoy.extensions.filters.network.echo.v3.Echo"));
	const char url[] = "type.googleapis.com/envoy.config.listener.v3.Listener";
	assert_ptr_equal(arn_proto_msgdef_by_url(url, strlen(url)),
			 arn_proto_msgdef("envoy.config.listener.v3.Listener"));
	assert_null(arn_proto_msgdef_by_url("type.googleapis.com/no.Such", 26));
}

static void test_json_round_trip_and_any_unpack(void **state)
{
	(void)state;
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT, out = ARN_SB_INIT;
	const upb_MessageDef *cd = arn_proto_msgdef("envoy.config.cluster.v3.Cluster");
	const char *j = "{\"name\":\"api\",\"type\":\"EDS\",\"connectTimeout\":\"0.25s\"}";
	upb_Message *c = arn_proto_from_json(j, strlen(j), cd, a, &err);
	assert_non_null(c);
	assert_int_equal(arn_proto_to_json(c, cd, &out), 0);
	assert_non_null(strstr(arn_sb_cstr(&out), "\"connect_timeout\":\"0.250s\""));

	/* Pack it into an Any and unpack with and without an expected type. */
	size_t len;
	char *bytes = arn_proto_encode(c, cd, a, &len);
	assert_non_null(bytes);
	google_protobuf_Any *any = google_protobuf_Any_new(a);
	google_protobuf_Any_set_type_url(
		any, upb_StringView_FromString("type.googleapis.com/envoy.config.cluster.v3.Cluster"));
	google_protobuf_Any_set_value(any, upb_StringView_FromDataAndSize(bytes, len));
	const upb_MessageDef *got = NULL;
	upb_Message *c2 = arn_proto_any_unpack((upb_Message *)any, NULL, &got, a, &err);
	assert_non_null(c2);
	assert_ptr_equal(got, cd);
	assert_true(arn_sv_eq(envoy_config_cluster_v3_Cluster_name((void *)c2), "api"));
	assert_null(arn_proto_any_unpack((upb_Message *)any,
					 arn_proto_msgdef("envoy.config.listener.v3.Listener"), NULL,
					 a, &err));
	assert_non_null(strstr(arn_sb_cstr(&err), "where envoy.config.listener.v3.Listener was "
						 "expected"));
	arn_sb_free(&err);
	arn_sb_free(&out);
	upb_Arena_Free(a);
}

/* upb 1.51's JSON encoder leaks when an Any inside cannot be encoded; the
 * wrapper refuses such messages up front (LeakSanitizer would catch a leak
 * here in the ASan build). */
static void test_to_json_refuses_bad_any_without_leaking(void **state)
{
	(void)state;
	upb_Arena *a = upb_Arena_New();
	const upb_MessageDef *cd = arn_proto_msgdef("envoy.config.cluster.v3.Cluster");
	envoy_config_cluster_v3_Cluster *c = envoy_config_cluster_v3_Cluster_new(a);
	envoy_config_cluster_v3_Cluster_set_name(c, upb_StringView_FromString("x"));
	struct google_protobuf_Any *any = NULL;
	any = google_protobuf_Any_new(a);
	google_protobuf_Any_set_type_url(any, upb_StringView_FromString("type.googleapis.com/no.Such"));
	envoy_config_cluster_v3_Cluster_typed_extension_protocol_options_set(
		c, upb_StringView_FromString("k"), any, a);
	struct arn_sb out = ARN_SB_INIT;
	assert_int_equal(arn_proto_to_json((upb_Message *)c, cd, &out), -EINVAL);
	assert_int_equal(out.len, 0);
	/* A known type with undecodable bytes, too. */
	google_protobuf_Any_set_type_url(
		any, upb_StringView_FromString("type.googleapis.com/envoy.config.cluster.v3.Cluster"));
	google_protobuf_Any_set_value(any, upb_StringView_FromDataAndSize("\xff\xff\xff", 3));
	assert_int_equal(arn_proto_to_json((upb_Message *)c, cd, &out), -EINVAL);
	arn_sb_free(&out);
	upb_Arena_Free(a);
}

/* libupb.so.29 aborts the process on a map entry with an unknown field;
 * arn_proto_decode must refuse such bytes before upb sees them. */
static void test_decode_refuses_what_would_abort_upb(void **state)
{
	(void)state;
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	const upb_MessageDef *cd = arn_proto_msgdef("envoy.config.cluster.v3.Cluster");
	/* typed_extension_protocol_options (36) entry {key "k", field 3 = 1} */
	static const char map3[] = {(char)0xa2, 0x02, 0x05, 0x0a, 0x01, 'k', 0x18, 0x01};
	assert_null(arn_proto_decode(map3, sizeof(map3), cd, a, &err));
	assert_non_null(strstr(arn_sb_cstr(&err), "field number 3 is unknown"));
	char why[256];
	assert_false(arn_proto_wire_check(map3, sizeof(map3), cd, false, why, sizeof(why)));

	/* An unknown field of an ordinary message: skipped when lenient (a newer
	 * peer's envelope), refused when strict (Arion's rule for resources). */
	static const char unk[] = {(char)0xb8, (char)0xf0, 0x03, 0x01, 0x0a, 0x01, 'x'};
	arn_sb_free(&err);
	upb_Message *c = arn_proto_decode(unk, sizeof(unk), cd, a, &err);
	assert_non_null(c);
	assert_true(arn_sv_eq(envoy_config_cluster_v3_Cluster_name((void *)c), "x"));
	assert_false(arn_proto_wire_check(unk, sizeof(unk), cd, true, why, sizeof(why)));
	assert_non_null(strstr(why, "field number 7943 is unknown"));
	/* Empty input (NULL, 0) is a message with every field at its default. */
	assert_true(arn_proto_wire_check(NULL, 0, cd, true, why, sizeof(why)));
	assert_non_null(arn_proto_decode(NULL, 0, cd, a, &err));
	/* Groups never appear in the Envoy API. */
	static const char grp[] = {0x0b, 0x0c};
	assert_false(arn_proto_wire_check(grp, sizeof(grp), cd, false, why, sizeof(why)));
	arn_sb_free(&err);
	upb_Arena_Free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_has_envoy_and_arion_types),
		cmocka_unit_test(test_json_round_trip_and_any_unpack),
		cmocka_unit_test(test_to_json_refuses_bad_any_without_leaking),
		cmocka_unit_test(test_decode_refuses_what_would_abort_upb),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
