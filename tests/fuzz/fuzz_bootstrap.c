/* libFuzzer: arbitrary bytes as a configuration file, through YAML ->
 * schema-checked JSON -> Bootstrap -> rules. Must never crash, leak or hang. */
#include <stddef.h>
#include <stdint.h>

#include "arn_bootstrap.h"
#include "arn_sb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arn_sb err = ARN_SB_INIT;
	struct arn_bootstrap *b = NULL;
	if (arn_bootstrap_load_buf("fuzz.yaml", (const char *)data, size, NULL, &b, &err) == 0) {
		struct arn_sb s = ARN_SB_INIT;
		arn_bootstrap_summary(b, &s);
		arn_sb_free(&s);
	}
	arn_bootstrap_free(b);
	arn_sb_free(&err);
	return 0;
}
