/*
 * Access-log sinks and their per-worker rings (arn_access_log.h).
 */
#include <errno.h>

#include "admin_int.h"
#include "arn_access_log.h"

static unsigned n_workers;

int arn_access_log_set_workers_(unsigned n)
{
	n_workers = n;
	return 0;
}
