/*
 * ioctls on a kernel network interface, for the ports that have one:
 * port.c's ethtool queries and TAP queue lengths, vpkt.c's MTU, MAC and
 * link state. Apart from both, which call it, so that neither calls up
 * into the other.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net_int.h"

/* (net_int.h) */
int net_if_ioctl(const char *ifn, unsigned long req, struct ifreq *ifr)
{
	memset(ifr->ifr_name, 0, sizeof(ifr->ifr_name));
	memcpy(ifr->ifr_name, ifn, strnlen(ifn, sizeof(ifr->ifr_name) - 1));
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	int rc = ioctl(s, req, ifr) == 0 ? 0 : -errno;
	close(s);
	return rc;
}
