/**
 * @file
 * The PROXY protocol header (HAProxy's proxy-protocol.txt, v1 and v2), as
 * Envoy's listener filter envoy.filters.listener.proxy_protocol reads it:
 * a resumable parser over a peer's first bytes, in the style of arn_h1.h.
 *
 * Contract:
 *  - Bytes may arrive in any pieces, one at a time, across mbufs: call
 *    arn_pp_parse() with each new run. Nothing is copied out of the runs
 *    but the fixed parts the parser needs (the v1 field being read, at most
 *    45 bytes; v2's 16-byte preamble and its 12 or 36 address bytes) into
 *    struct arn_pp itself: the caller may drop every byte the parser took
 *    as soon as the call returns (the listener filter consumes them from
 *    TCP's queue at once, so a header pins no mbuf).
 *  - It never reads past the header: the return value says how many bytes
 *    of the run the header took; the rest is the connection's.
 *  - Returns: >= 0, the header ended after that many bytes of @p buf
 *    (arn_pp_result() then holds what it said); ARN_AGAIN, all of @p buf
 *    was taken and the header is not complete; ARN_PP_ERROR, the header is
 *    refused (arn_pp_error() says why, a distinct enum arn_pp_err for each
 *    reason) and the parser refuses further input.
 *  - ARN_PP_E_NOT_PROXY comes as soon as a byte differs from both
 *    signatures ("PROXY " and v2's 12 bytes), having taken nothing of
 *    that run's bytes at or after it: with allow_requests_without_proxy_protocol
 *    the caller then goes on as if there were no filter, its bytes intact
 *    in TCP's queue (Envoy's SkipFilter). arn_pp_fed() is 0 when the
 *    first byte decided it.
 *
 * Rules (Envoy's proxy_protocol.cc, stricter where the spec is):
 *  - v1: "PROXY" SP ("TCP4"|"TCP6") SP src SP dst SP sport SP dport CRLF,
 *    or "PROXY" SP "UNKNOWN" [anything but CR/LF] CRLF, at most 107 bytes
 *    with the CRLF. Fields separated by exactly one space; addresses as
 *    inet_pton() reads them (dotted quads without leading zeros, RFC 4291
 *    text for TCP6); ports 0..65535 in decimal, no sign, no leading zero.
 *  - v2: the 12-byte signature, version 2; command LOCAL (the addresses
 *    and TLVs are skipped, whatever the family) or PROXY with family
 *    AF_INET (12 address bytes) or AF_INET6 (36) and transport STREAM or
 *    DGRAM (AF_UNSPEC and AF_UNIX with PROXY are refused, as Envoy); the
 *    length at least the family's address bytes, at most 65,535; the TLVs
 *    after the addresses walked and each bounded by the length.
 *  - PROXY addresses must be unicast (not 0.0.0.0, 255.255.255.255,
 *    224.0.0.0/4, :: or ff00::/8), as Envoy checks.
 */
#ifndef ARN_PROXY_PROTO_H
#define ARN_PROXY_PROTO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef ARN_AGAIN
#define ARN_AGAIN (-EAGAIN)
#endif
/** arn_pp_parse(): the header is refused, arn_pp_error() says why. */
#define ARN_PP_ERROR (-EPROTO)

/** v1's longest line, CRLF included (the spec's 107). */
#define ARN_PP_V1_MAX 107
/** v2's fixed part: signature, ver/cmd, fam/proto, length. */
#define ARN_PP_V2_HDR 16
/** The longest v2 header: 16 + 65,535. */
#define ARN_PP_V2_MAX (ARN_PP_V2_HDR + 65535)

enum arn_pp_err {
	ARN_PP_E_NONE = 0,
#define ARN_PP_ERR(id, name, what) ARN_PP_E_##id,
#include "arn_proxy_proto_err.def"
#undef ARN_PP_ERR
	ARN_PP_E_COUNT,
};

/** What a complete header said. */
struct arn_pp_result {
	uint8_t version; /* 1 or 2 */
	/* true: LOCAL (v2) or UNKNOWN (v1): the connection's own addresses
	 * stay (Envoy); the fields below are zero */
	bool local;
	uint8_t family; /* 4 or 6 (v1 TCP4/TCP6, v2 AF_INET/AF_INET6) */
	uint16_t src_port, dst_port;
	uint32_t src4, dst4;	    /* family 4: host order */
	uint8_t src6[16], dst6[16]; /* family 6: network order */
	uint32_t header_len;	    /* every byte of the header, v2's TLVs included */
	uint32_t tlv_bytes;	    /* v2: the length beyond the addresses */
	uint32_t n_tlvs;	    /* v2 PROXY: the TLVs walked */
};

/** The parser's state: no pointer into the caller's bytes is kept. */
struct arn_pp {
	uint32_t fed; /* bytes taken so far */
	uint8_t state;
	uint8_t err;	   /* enum arn_pp_err */
	uint8_t field;	   /* v1: the field being read */
	uint8_t flen;	   /* v1: bytes of buf; v2: bytes of the 3-byte TLV head */
	char buf[48];	   /* v1: the field; v2: preamble, then addresses */
	uint32_t remain;   /* v2: bytes left of the addresses / TLVs */
	uint32_t tlv_left; /* v2: bytes left of the current TLV's value */
	struct arn_pp_result r;
};

/** Start (or restart) @p p for a new connection. */
void arn_pp_init(struct arn_pp *p);

/**
 * Feed the next @p len bytes of the connection (borrowed for the call).
 * @return bytes of @p buf the header took, the header complete; ARN_AGAIN
 * (all taken, more needed); ARN_PP_ERROR (arn_pp_error(p) says why).
 */
ssize_t arn_pp_parse(struct arn_pp *p, const void *buf, size_t len);

/** Why the header was refused (ARN_PP_E_NONE before an error). */
static inline enum arn_pp_err arn_pp_error(const struct arn_pp *p)
{
	return (enum arn_pp_err)p->err;
}

/** Bytes taken so far (the whole header's once complete). */
static inline uint32_t arn_pp_fed(const struct arn_pp *p)
{
	return p->fed;
}

/** The version as soon as its signature is complete (1 after "PROXY ",
 * 2 after v2's 12 bytes), 0 before: from then on every byte taken is the
 * header's, whatever follows. */
static inline unsigned arn_pp_version(const struct arn_pp *p)
{
	return p->r.version;
}

/** The header's contents once arn_pp_parse() returned >= 0, else NULL. */
const struct arn_pp_result *arn_pp_result(const struct arn_pp *p);

/** The counter name of @p e ("v1_bad_port"), or "none". */
const char *arn_pp_err_name(enum arn_pp_err e);

/* ---- the writer (the header Arion sends upstream) -------------------------- */

/** The longest header arn_pp_write() writes: v1's
 * "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n" (56);
 * v2's with IPv4 addresses is 28, its LOCAL 16. */
#define ARN_PP_WRITE_MAX 56

/** The addresses a header says (IPv4, host order): the downstream's
 * remote (src) and local (dst) address and port, as Envoy's
 * ProxyProtocolFilterState holds them. */
struct arn_pp_addrs {
	uint32_t src, dst;
	uint16_t sport, dport;
};

/**
 * Write a PROXY header as Envoy's upstream proxy_protocol transport socket
 * does (source/extensions/common/proxy_protocol/proxy_protocol_header.cc):
 * v1 "PROXY TCP4 <src> <dst> <sport> <dport>\r\n"; v2 the signature,
 * 0x21 (version 2, PROXY), 0x11 (AF_INET, STREAM), length 12 and the
 * addresses. @p a NULL: there is no downstream (a health check): v2 writes
 * LOCAL (0x20, family 0, length 0), v1 "PROXY UNKNOWN\r\n" (Envoy's v1
 * writes the upstream connection's own addresses instead: its callers
 * pass them). No TLV is written.
 * @p out must hold ARN_PP_WRITE_MAX bytes (owned by the caller).
 * @return bytes written, or 0 when @p version is neither 1 nor 2.
 */
size_t arn_pp_write(uint8_t *out, unsigned version, const struct arn_pp_addrs *a);

#endif
