/*
 * tj_apply (tj_config.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arn_proto.h"
#include "arn_sb.h"
#include "tj_config.h"
#include "upb/reflection.h"

void tj_apply(struct arn_config_store *st, const char *type, const char *version, unsigned flags,
	      const char *const *json, const char *const *removed, struct arn_config_result *res)
{
	arn_config_result_free(res);
	size_t n = 0, nr = 0;
	while (json && json[n])
		n++;
	while (removed && removed[nr])
		nr++;
	/* on the heap: a batch may be thousands of resources (the store's
	 * checks are proved linear with them) */
	struct arn_config_resource_in *in = calloc(n ? n : 1, sizeof(*in));
	char(*names)[256] = calloc(n ? n : 1, sizeof(*names));
	assert_true(in && names);
	upb_Arena *a = upb_Arena_New();
	/* the message's full name is the type URL's last segment */
	const upb_MessageDef *md = arn_proto_msgdef(strrchr(type, '/') + 1);
	assert_non_null(md);
	/* a ClusterLoadAssignment names itself by cluster_name */
	const upb_FieldDef *nf = upb_MessageDef_FindFieldByName(
	    md, strcmp(type, ARN_TYPE_URL_CLA) ? "name" : "cluster_name");
	for (size_t i = 0; i < n; i++) {
		struct arn_sb err = ARN_SB_INIT;
		upb_Message *m = arn_proto_from_json(json[i], strlen(json[i]), md, a, &err);
		if (!m)
			fail_msg("bad test JSON: %s\n%s", arn_sb_cstr(&err), json[i]);
		arn_sb_free(&err);
		upb_StringView nm = upb_Message_Get(m, nf).str_val;
		snprintf(names[i], sizeof(names[i]), "%.*s", (int)nm.size, nm.data);
		in[i] = (struct arn_config_resource_in){names[i], version, NULL, 0};
		in[i].bytes = arn_proto_encode(m, md, a, &in[i].len);
	}
	assert_int_equal(arn_config_apply(st, type, in, n, removed, nr, flags, res), 0);
	upb_Arena_Free(a);
	free(in);
	free(names);
}

void tj_assert_decodes(const char *json, size_t len, const char *msg_name, const char *what)
{
	const upb_MessageDef *md = arn_proto_msgdef(msg_name);
	assert_non_null(md);
	upb_Arena *a = upb_Arena_New();
	struct arn_sb err = ARN_SB_INIT;
	if (!arn_proto_from_json(json, len, md, a, &err))
		fail_msg("%s does not decode as %s: %s\n%.*s", what, msg_name, arn_sb_cstr(&err),
			 (int)len, json);
	arn_sb_free(&err);
	upb_Arena_Free(a);
}
