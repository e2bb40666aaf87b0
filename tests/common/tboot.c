/*
 * Bootstraps from strings (tboot.h).
 */
#include "tboot.h"

void tboot_reset(struct tboot *t)
{
	arn_bootstrap_free(t->bs);
	t->bs = NULL;
	arn_sb_free(&t->err);
}

int tboot_load(struct tboot *t, const char *yaml, const struct arn_bootstrap_overrides *ov)
{
	tboot_reset(t);
	return arn_bootstrap_load_buf("t.yaml", yaml, strlen(yaml), ov, &t->bs, &t->err);
}

struct arn_bootstrap *tboot_must_load(const char *yaml, const struct arn_bootstrap_overrides *ov)
{
	struct tboot t = {NULL, ARN_SB_INIT};
	TBOOT_ASSERT_OK(tboot_load(&t, yaml, ov), &t);
	struct arn_bootstrap *b = t.bs;
	t.bs = NULL;
	tboot_reset(&t);
	return b;
}
