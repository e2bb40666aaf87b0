/* libFuzzer: arbitrary bytes through the JSON parser (arn_json.h). Must
 * never crash, leak or hang; what it accepts must write back as JSON it
 * accepts again, the same bytes compact and pretty, and survive a mask and
 * redaction. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arn_json.h"
#include "arn_sb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct arn_json *reparse(const struct arn_sb *sb)
{
	if (sb->oom)
		abort();
	struct arn_json *j = arn_json_parse(sb->buf ? sb->buf : "", sb->len);
	if (j == NULL)
		abort(); /* the writer made what the parser refuses */
	return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arn_json *j = arn_json_parse((const char *)data, size);
	if (j == NULL)
		return 0;
	struct arn_sb a = ARN_SB_INIT, b = ARN_SB_INIT, p = ARN_SB_INIT;
	arn_json_write(j, &a, false);
	arn_json_write(j, &p, true);
	struct arn_json *k = reparse(&a);
	arn_json_write(k, &b, false);
	if (a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0)
		abort(); /* not byte for byte */
	arn_json_free(k);
	k = reparse(&p);
	arn_sb_reset(&b);
	arn_json_write(k, &b, false);
	if (a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0)
		abort(); /* pretty is compact plus whitespace */
	arn_json_free(k);
	arn_json_redact(j);
	arn_json_mask(j, "a,b.c, configs.d");
	arn_sb_reset(&b);
	arn_json_write(j, &b, true);
	arn_json_free(reparse(&b));
	arn_sb_free(&a);
	arn_sb_free(&b);
	arn_sb_free(&p);
	arn_json_free(j);
	return 0;
}
