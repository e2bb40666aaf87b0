/*
 * A libFuzzer flag that a target sets by default, from its
 * LLVMFuzzerInitialize: libFuzzer reads the argument vector that function
 * leaves, so a flag put there counts as if given on the command line, and
 * one the command line does give wins.
 *
 * The targets that start a TCP worker for every input (fuzz_tcp,
 * fuzz_net_input, and hcm_harness.h's four) run tens to a few hundred
 * inputs a second, each touching tens of thousands of coverage features;
 * libFuzzer's entropic schedule (its default) then costs more than the
 * run itself. With -entropic=0, measured on this machine over 40 s each,
 * from the seed corpus: fuzz_tcp ran 7,438 inputs against 2,495 and
 * reached more coverage (9,895 edges against 9,770), fuzz_net_input ran
 * 4,239 against 2,360 (8,857 edges against 8,816).
 */
#ifndef ARN_FUZZ_FLAGS_H
#define ARN_FUZZ_FLAGS_H

#include <string.h>

/* Put @p flag ("-name=value") first among the arguments, unless they set
 * -name already. The new vector is static: call once. */
static inline void fuzz_default_flag(int *argc, char ***argv, char *flag)
{
	static char *args[64];
	size_t name = strcspn(flag, "=") + 1;
	for (int i = 0; i < *argc; i++)
		if (strncmp((*argv)[i], flag, name) == 0)
			return;
	if (*argc < 1 || *argc > 62)
		return;
	args[0] = (*argv)[0];
	args[1] = flag;
	for (int i = 1; i < *argc; i++)
		args[i + 1] = (*argv)[i];
	args[*argc + 1] = NULL;
	*argc += 1;
	*argv = args;
}

#endif
