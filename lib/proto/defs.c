/*
 * The one descriptor pool: every protobuf type Arion knows, loaded once by
 * arn_proto_init(), and message definitions found in it by name or by type
 * URL. Everything else in lib/proto stands on this.
 */
#include <errno.h>
#include <string.h>

#include "upb/reflection.h"

#include "arn_log.h"
#include "arn_proto.h"

/* Generated at build time by proto/tools/gen_defs_list.py. */
extern const _upb_DefPool_Init *const arn_proto_grpc_defs[];
extern const _upb_DefPool_Init *const arn_proto_own_defs[];

static upb_DefPool *pool;

int arn_proto_init(void)
{
	if (pool != NULL)
		return 0;
	upb_DefPool *p = upb_DefPool_New();
	if (p == NULL)
		return -ENOMEM;
	const _upb_DefPool_Init *const *lists[] = {arn_proto_grpc_defs, arn_proto_own_defs};
	for (size_t l = 0; l < 2; l++) {
		for (const _upb_DefPool_Init *const *d = lists[l]; *d != NULL; d++) {
			if (!_upb_DefPool_LoadDefInit(p, *d)) {
				ARN_ERR(MAIN, "protobuf descriptor %s failed to load",
					(*d)->filename);
				upb_DefPool_Free(p);
				return -EINVAL;
			}
		}
	}
	/* a newer field (newer.c) the main pool knows would be read as
	 * unknown bytes that are never there: the table must shrink when
	 * gRPC's copy of the API grows */
	for (size_t i = 0; i < arn_proto_n_newer_fields; i++) {
		const struct arn_proto_newer *nf = &arn_proto_newer_fields[i];
		const upb_MessageDef *m = upb_DefPool_FindMessageByName(p, nf->msg);
		if (!m || upb_MessageDef_FindFieldByNumber(m, nf->num)) {
			ARN_ERR(MAIN, "newer Envoy field %s.%s = %u: %s", nf->msg, nf->name,
				nf->num, m ? "known to this API copy" : "its message is unknown");
			upb_DefPool_Free(p);
			return -EINVAL;
		}
	}
	pool = p;
	return 0;
}

const upb_DefPool *arn_proto_pool(void)
{
	return pool;
}

const upb_MessageDef *arn_proto_msgdef(const char *full_name)
{
	return pool ? upb_DefPool_FindMessageByName(pool, full_name) : NULL;
}

const upb_MessageDef *arn_proto_msgdef_by_url(const char *url, size_t len)
{
	if (len == 0)
		return NULL; /* an Any without a type URL has NULL data: no memrchr */
	const char *slash = memrchr(url, '/', len);
	const char *name = slash ? slash + 1 : url;
	size_t n = len - (size_t)(name - url);
	if (pool == NULL || n == 0)
		return NULL;
	return upb_DefPool_FindMessageByNameWithSize(pool, name, n);
}
