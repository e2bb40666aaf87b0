/*
 * Counter names and help texts, from the .def lists, and the readers.
 */
#include <openssl/obj_mac.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>

#include "tls_int.h"

/* arn_tls_names.def spells OpenSSL's NIDs as numbers so that arn_tls.h
 * needs no OpenSSL header; check them against OpenSSL's here. */
_Static_assert(NID_X25519 == 1034 && NID_X448 == 1035 && NID_X9_62_prime256v1 == 415 &&
		   NID_secp384r1 == 715 && NID_secp521r1 == 716,
	       "curve NIDs in arn_tls_names.def");
_Static_assert(NID_rsaEncryption == 6 && NID_rsassaPss == 912 && NID_X9_62_id_ecPublicKey == 408 &&
		   NID_ED25519 == 1087,
	       "signature type NIDs in arn_tls_names.def");
_Static_assert(NID_sha1 == 64 && NID_sha256 == 672 && NID_sha384 == 673 && NID_sha512 == 674 &&
		   NID_md5_sha1 == 114,
	       "digest NIDs in arn_tls_names.def");
_Static_assert(TLS1_VERSION == 0x0301 && TLS1_3_VERSION == 0x0304, "versions");

static const char *const stat_names[ARN_TLS_S_COUNT] = {
#define ARN_TLS_STAT(id, name, help) name,
#include "arn_tls_stats.def"
#undef ARN_TLS_STAT
#define ARN_TLS_CIPHER(id, iana, name) "ssl.ciphers." name,
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name) "ssl.curves." name,
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name) "ssl.versions." name,
#define ARN_TLS_SIGALG(id, type, md, name)
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
#define ARN_TLS_CIPHER(id, iana, name)
#define ARN_TLS_CURVE(id, nid, name)
#define ARN_TLS_VERSION(id, v, name)
#define ARN_TLS_SIGALG(id, type, md, name) "ssl.sigalgs." name,
#include "arn_tls_names.def"
#undef ARN_TLS_CIPHER
#undef ARN_TLS_CURVE
#undef ARN_TLS_VERSION
#undef ARN_TLS_SIGALG
};

static const char *const fixed_help[] = {
#define ARN_TLS_STAT(id, name, help) help,
#include "arn_tls_stats.def"
#undef ARN_TLS_STAT
};

const char *arn_tls_stat_name(enum arn_tls_stat id)
{
	return (unsigned)id < ARN_TLS_S_COUNT ? stat_names[id] : "?";
}

const char *arn_tls_stat_help(enum arn_tls_stat id)
{
	if ((unsigned)id < sizeof(fixed_help) / sizeof(fixed_help[0]))
		return fixed_help[id];
	if (id <= ARN_TLS_S_CIPHER_UNKNOWN)
		return "handshakes that negotiated this cipher suite";
	if (id <= ARN_TLS_S_CURVE_UNKNOWN)
		return "handshakes that negotiated this key exchange group";
	if (id <= ARN_TLS_S_VERSION_UNKNOWN)
		return "handshakes that negotiated this protocol version";
	if (id < ARN_TLS_S_COUNT)
		return "handshakes in which the peer signed with this algorithm";
	return "?";
}

void arn_tls_stats_read(const struct arn_tls_stats *s, uint64_t *out)
{
	for (unsigned i = 0; i < ARN_TLS_S_COUNT; i++)
		out[i] = __atomic_load_n(&s->v[i], __ATOMIC_RELAXED);
}

static const char *const insp_names[] = {
#define ARN_TLS_INSPECTOR_STAT(id, name, help) name,
#include "arn_tls_inspector_stats.def"
#undef ARN_TLS_INSPECTOR_STAT
};
static const char *const insp_help[] = {
#define ARN_TLS_INSPECTOR_STAT(id, name, help) help,
#include "arn_tls_inspector_stats.def"
#undef ARN_TLS_INSPECTOR_STAT
};

const char *arn_tls_inspector_stat_name(enum arn_tls_inspector_stat id)
{
	return (unsigned)id < ARN_TLS_I_COUNT ? insp_names[id] : "?";
}

const char *arn_tls_inspector_stat_help(enum arn_tls_inspector_stat id)
{
	return (unsigned)id < ARN_TLS_I_COUNT ? insp_help[id] : "?";
}

static const char *const w_names[] = {
#define ARN_TLS_WORKER_COUNTER(id, name, help) name,
#include "arn_tls_worker_counters.def"
#undef ARN_TLS_WORKER_COUNTER
};
static const char *const w_help[] = {
#define ARN_TLS_WORKER_COUNTER(id, name, help) help,
#include "arn_tls_worker_counters.def"
#undef ARN_TLS_WORKER_COUNTER
};

const char *arn_tls_worker_counter_name(enum arn_tls_worker_counter id)
{
	return (unsigned)id < ARN_TLS_W_COUNT ? w_names[id] : "?";
}

const char *arn_tls_worker_counter_help(enum arn_tls_worker_counter id)
{
	return (unsigned)id < ARN_TLS_W_COUNT ? w_help[id] : "?";
}

bool arn_tls_worker_counter_is_gauge(enum arn_tls_worker_counter id)
{
	return id == ARN_TLS_W_CONNS_ACTIVE || id == ARN_TLS_W_DEFERRED_NOW;
}
