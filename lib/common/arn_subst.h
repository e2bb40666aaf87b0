/*
 * Header values' command operators (%NAME%, %NAME(arg)%, %NAME(arg):N%),
 * read as Envoy's SubstitutionFormatParser::parse reads them: one grammar
 * and one list of operators (arn_subst_ops.def) for the conversion, which
 * refuses what Arion would not substitute, and for the HTTP layer, which
 * substitutes (lib/http: http_subst), so that a value the conversion let
 * through is substituted as it was checked.
 */
#ifndef ARN_SUBST_H
#define ARN_SUBST_H

#include <stdbool.h>
#include <stddef.h>

/* Envoy's CommandSyntaxChecker flags */
#define ARN_SUBST_COMMAND_ONLY 0u
#define ARN_SUBST_PARAMS_REQUIRED 1u
#define ARN_SUBST_PARAMS_OPTIONAL 2u
#define ARN_SUBST_LENGTH_ALLOWED 4u

/** The operators Arion substitutes (0: none of them). */
enum arn_subst_op {
	ARN_SUBST_NONE = 0,
#define ARN_SUBST_OP(name, syntax) ARN_SUBST_##name,
#include "arn_subst_ops.def"
	ARN_SUBST_N
};

/** One operator as written: pointers into the value. */
struct arn_subst_tok {
	size_t len; /* the whole %...%, both % included */
	const char *cmd;
	size_t cmd_len;
	const char *arg; /* between ( and ), or NULL */
	size_t arg_len;
	bool has_len; /* :N given */
	size_t max_len;
};

/**
 * The operator at @p v (@p v[0] is '%', not followed by another: "%%" is
 * a literal %), as Envoy's commandWithArgsRegex takes it:
 * %COMMAND(SUBCOMMAND):LENGTH%, COMMAND of A-Z, 0-9 and _, SUBCOMMAND up
 * to the first ) after which the rest matches, LENGTH decimal.
 * @return 0 with @p t set, or -1: no operator there (Envoy: "Couldn't find
 * valid command").
 */
int arn_subst_token(const char *v, size_t n, struct arn_subst_tok *t);

/** The operator Arion substitutes named @p cmd (@p len bytes), or ARN_SUBST_NONE. */
enum arn_subst_op arn_subst_lookup(const char *cmd, size_t len);

/**
 * Check the header value @p v (@p n bytes) as Envoy's HeaderParser does
 * when it builds its formatter (SubstitutionFormatParser::parse and
 * CommandSyntaxChecker::verifySyntax), and that Arion substitutes every
 * operator in it. On error a message (Envoy's text where Envoy refuses
 * the value too; "not supported by Arion" for an operator Envoy knows
 * and Arion has not built) goes into @p err (@p cap bytes, NUL-ended).
 * @return 0, or -EINVAL.
 */
int arn_subst_check(const char *v, size_t n, char *err, size_t cap);

/**
 * %REQ()%'s argument @p a (@p n bytes) split as Envoy's
 * parseSubcommandHeaders splits it: the header, and the one to read when
 * it is absent after '?' (@p alt_len 0: none).
 */
static inline void arn_subst_req_names(const char *a, size_t n, size_t *main_len, const char **alt,
				       size_t *alt_len)
{
	size_t i = 0;
	while (i < n && a[i] != '?')
		i++;
	*main_len = i;
	*alt = i < n ? a + i + 1 : a + n;
	*alt_len = i < n ? n - i - 1 : 0;
}

#endif
