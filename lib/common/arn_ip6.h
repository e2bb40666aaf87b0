/*
 * IPv6 address text to bytes, for the two places that read one: the
 * control lcore's CIDR ranges (lib/config conv_cidr) and a worker's
 * X-Forwarded-For walk (lib/http). One copy, so a trusted range and the
 * hop it is meant to skip cannot come to be read differently.
 */
#ifndef ARN_IP6_H
#define ARN_IP6_H

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The longest text taken: 45 bytes of address
 * ("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"), '%' and a scope of
 * 10 digits. */
#define ARN_IP6_TEXT_MAX 56

/**
 * Parse @p n bytes at @p s (not NUL-terminated) as one IPv6 address into
 * @p out (16 bytes, network order), as Envoy's
 * Network::Utility::parseInternetAddressNoThrow reads one after IPv4 fails
 * (its parseV6Address: getaddrinfo, AI_NUMERICHOST, AF_INET6): RFC 4291
 * text with "::" and the dotted tail ("::ffff:192.0.2.1", which stays an
 * IPv6 address as in Envoy), then an optional "%scope". The scope is
 * dropped, as CidrRange::isInRange ignores it; only a decimal scope that
 * fits 32 bits is taken, because an interface name would need
 * if_nametoindex, a system call a worker may not make. No brackets, no
 * port, no whitespace. No allocation and no system call: safe on a worker.
 * @return 0, or -EINVAL when the text is no such address.
 */
static inline int arn_ip6_parse(const char *s, size_t n, uint8_t out[16])
{
	char buf[ARN_IP6_TEXT_MAX + 1];
	/* a NUL inside would end inet_pton's text early: not whole */
	if (n == 0 || n > ARN_IP6_TEXT_MAX || memchr(s, 0, n))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	char *pct = memchr(buf, '%', n);
	if (pct) {
		uint64_t v = 0;
		const char *d = pct + 1;
		if (!*d)
			return -EINVAL;
		for (; *d; d++) {
			if (*d < '0' || *d > '9')
				return -EINVAL;
			v = v * 10 + (uint64_t)(*d - '0');
			if (v > UINT32_MAX)
				return -EINVAL;
		}
		*pct = 0;
	}
	return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -EINVAL;
}

#endif
