/*
 * What every converter uses: upb reflection, error paths, and the small
 * Envoy types (Duration, SocketAddress, StringMatcher, RegexMatcher,
 * HeaderValueOption, ConfigSource).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "upb/array.h"

#include "arn_proto.h"
#include "arn_regex.h"
#include "config_int.h"

/* ---- wire format pre-check -------------------------------------------------- */

bool conv_wire_check(const char *buf, size_t len, const upb_MessageDef *m, char *why, size_t whylen)
{
	return arn_proto_wire_check(buf, len, m, true, why, whylen);
}

/* ---- reflection ------------------------------------------------------------ */

const upb_FieldDef *pb_field(struct pb p, const char *name)
{
	const upb_FieldDef *f = upb_MessageDef_FindFieldByName(p.d, name);
	if (f == NULL) {
		/* A programming error: the converter names a field the type lacks. */
		fprintf(stderr, "arion: internal: %s has no field %s\n",
			upb_MessageDef_FullName(p.d), name);
		abort();
	}
	return f;
}

bool pb_has(struct pb p, const char *name)
{
	if (!p.m)
		return false;
	const upb_FieldDef *f = pb_field(p, name);
	if (upb_FieldDef_IsRepeated(f)) {
		upb_MessageValue v = upb_Message_Get(p.m, f);
		if (upb_FieldDef_IsMap(f))
			return v.map_val && upb_Map_Size(v.map_val) > 0;
		return v.array_val && upb_Array_Size(v.array_val) > 0;
	}
	if (upb_FieldDef_HasPresence(f))
		return upb_Message_Has(p.m, f);
	upb_MessageValue v = upb_Message_Get(p.m, f);
	switch (upb_FieldDef_CType(f)) {
	case kUpb_CType_String:
	case kUpb_CType_Bytes:
		return v.str_val.size > 0;
	case kUpb_CType_Bool:
		return v.bool_val;
	case kUpb_CType_Int64:
	case kUpb_CType_UInt64:
		return v.uint64_val != 0;
	case kUpb_CType_Double:
		return v.double_val != 0;
	case kUpb_CType_Float:
		return v.float_val != 0;
	default:
		return v.uint32_val != 0;
	}
}

struct pb pb_msg(struct pb p, const char *name)
{
	struct pb r = {NULL, NULL};
	if (!p.d)
		return r;
	const upb_FieldDef *f = pb_field(p, name);
	r.d = upb_FieldDef_MessageSubDef(f);
	if (p.m && upb_Message_Has(p.m, f))
		r.m = upb_Message_Get(p.m, f).msg_val;
	return r;
}

static upb_MessageValue get(struct pb p, const char *name)
{
	upb_MessageValue v;
	memset(&v, 0, sizeof(v));
	if (!p.m)
		return v;
	return upb_Message_Get(p.m, pb_field(p, name));
}

upb_StringView pb_str(struct pb p, const char *f)
{
	if (!p.m) {
		upb_StringView e = {"", 0};
		return e;
	}
	upb_StringView v = get(p, f).str_val;
	if (v.data == NULL) /* unset strings: never hand NULL to memcmp & co */
		v.data = "";
	return v;
}
bool pb_bool(struct pb p, const char *f)
{
	return get(p, f).bool_val;
}
uint32_t pb_u32(struct pb p, const char *f)
{
	return get(p, f).uint32_val;
}
uint64_t pb_u64(struct pb p, const char *f)
{
	return get(p, f).uint64_val;
}
int32_t pb_i32(struct pb p, const char *f)
{
	return get(p, f).int32_val;
}
int64_t pb_i64(struct pb p, const char *f)
{
	return get(p, f).int64_val;
}

size_t pb_len(struct pb p, const char *f)
{
	if (!p.m)
		return 0;
	const upb_Array *a = get(p, f).array_val;
	return a ? upb_Array_Size(a) : 0;
}

struct pb pb_at(struct pb p, const char *f, size_t i)
{
	const upb_FieldDef *fd = pb_field(p, f);
	struct pb r = {upb_Array_Get(upb_Message_Get(p.m, fd).array_val, i).msg_val,
		       upb_FieldDef_MessageSubDef(fd)};
	return r;
}

upb_StringView pb_str_at(struct pb p, const char *f, size_t i)
{
	upb_StringView v = upb_Array_Get(get(p, f).array_val, i).str_val;
	if (v.data == NULL)
		v.data = "";
	return v;
}

uint32_t pb_u32_at(struct pb p, const char *f, size_t i)
{
	return upb_Array_Get(get(p, f).array_val, i).uint32_val;
}

int32_t pb_i32_at(struct pb p, const char *f, size_t i)
{
	return upb_Array_Get(get(p, f).array_val, i).int32_val;
}

const char *pb_which(struct pb p, const char *oneof)
{
	if (!p.m)
		return NULL;
	const upb_OneofDef *o = upb_MessageDef_FindOneofByName(p.d, oneof);
	if (!o) {
		fprintf(stderr, "arion: internal: %s has no oneof %s\n",
			upb_MessageDef_FullName(p.d), oneof);
		abort();
	}
	const upb_FieldDef *f = upb_Message_WhichOneof(p.m, o);
	return f ? upb_FieldDef_Name(f) : NULL;
}

bool pb_wrapped_u32(struct pb p, const char *f, uint32_t *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_u32(w, "value");
	return true;
}

bool pb_wrapped_u64(struct pb p, const char *f, uint64_t *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_u64(w, "value");
	return true;
}

bool pb_wrapped_bool(struct pb p, const char *f, bool *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = pb_bool(w, "value");
	return true;
}

bool pb_wrapped_double(struct pb p, const char *f, double *out)
{
	struct pb w = pb_msg(p, f);
	if (!w.m)
		return false;
	*out = get(w, "value").double_val;
	return true;
}

/* ---- conversion context ----------------------------------------------------- */

size_t conv_push(struct conv *c, const char *fmt, ...)
{
	size_t mark = c->plen;
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* "[i]" joins directly; a name joins with a dot unless first */
	const char *sep = (buf[0] == '[' || c->plen == 0) ? "" : ".";
	int n = snprintf(c->path + c->plen, sizeof(c->path) - c->plen, "%s%s", sep, buf);
	if (n > 0)
		c->plen = c->plen + (size_t)n < sizeof(c->path) ? c->plen + (size_t)n
								: sizeof(c->path) - 1;
	return mark;
}

void conv_pop(struct conv *c, size_t mark)
{
	c->plen = mark;
	c->path[mark] = 0;
}

static const char *const type_names[ARN_CFG_NTYPES] = {
    "Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment", "Secret",
};

void conv_err_at(struct conv *c, const char *path, const char *msg)
{
	if (c->nerr++ > 0)
		arn_sb_puts(&c->msg, "; ");
	else
		arn_sb_printf(&c->msg, "%s '%s': ", type_names[c->type], c->res);
	if (path && *path)
		arn_sb_printf(&c->msg, "%s: ", path);
	arn_sb_puts(&c->msg, msg);
	arn_sb_printf(&c->detail, "%s\t%s\n", path ? path : "", msg);
}

void conv_err(struct conv *c, const char *field, const char *fmt, ...)
{
	char msg[768], path[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (field && *field)
		snprintf(path, sizeof(path), "%s%s%s", c->path,
			 (c->plen && field[0] != '[') ? "." : "", field);
	else
		snprintf(path, sizeof(path), "%s", c->path);
	conv_err_at(c, path, msg);
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && memcmp(p, name, n) == 0)
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

int conv_only(struct conv *c, struct pb p, const char *allowed)
{
	if (!p.m)
		return 0;
	int n = 0;
	size_t iter = kUpb_Message_Begin;
	const upb_FieldDef *f;
	upb_MessageValue v;
	while (upb_Message_Next(p.m, p.d, NULL, &f, &v, &iter)) {
		const char *name = upb_FieldDef_Name(f);
		if (in_list(allowed, name))
			continue;
		/* deprecated/ignored fields that change nothing Arion does */
		conv_err(c, name, "not supported by Arion (remove it)");
		n++;
	}
	size_t ulen = 0;
	upb_Message_GetUnknown(p.m, &ulen);
	if (ulen) {
		conv_err(c, "",
			 "carries fields unknown to Arion's copy of the Envoy API (%s): "
			 "refused rather than ignored",
			 upb_MessageDef_FullName(p.d));
		n++;
	}
	return n;
}

/* A resource may name the same dependency thousands of times (a route
 * table with 10,000 routes to a few clusters): look names up in a hash
 * index, not by scanning the list (which made a big RouteConfiguration's
 * conversion quadratic). */
static uint32_t dep_hash(uint8_t t, const char *name, size_t len)
{
	uint32_t h = 2166136261u ^ t;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

static uint32_t *dep_slot(struct conv *c, uint8_t t, const char *name, size_t len)
{
	size_t mask = c->dep_idx_cap - 1;
	for (size_t i = dep_hash(t, name, len) & mask;; i = (i + 1) & mask) {
		uint32_t *slot = &c->dep_idx[i];
		if (*slot == 0)
			return slot;
		const struct conv_dep *d = &c->deps[*slot - 1];
		if (d->type == t && strncmp(d->name, name, len) == 0 && d->name[len] == '\0')
			return slot;
	}
}

static int dep_index_grow(struct conv *c)
{
	size_t cap = c->dep_idx_cap ? 2 * c->dep_idx_cap : 16;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	free(c->dep_idx);
	c->dep_idx = idx;
	c->dep_idx_cap = cap;
	for (size_t i = 0; i < c->ndeps; i++) {
		const struct conv_dep *d = &c->deps[i];
		*dep_slot(c, d->type, d->name, strlen(d->name)) = (uint32_t)(i + 1);
	}
	return 0;
}

void conv_deps_index_free(struct conv *c)
{
	free(c->dep_idx);
	c->dep_idx = NULL;
	c->dep_idx_cap = 0;
}

int conv_dep(struct conv *c, enum arn_cfg_type t, const char *name, size_t len, bool warm,
	     uint32_t timeout_ms)
{
	if (2 * (c->ndeps + 1) > c->dep_idx_cap && dep_index_grow(c) != 0)
		return -ENOMEM;
	uint32_t *slot = dep_slot(c, (uint8_t)t, name, len);
	if (*slot) {
		struct conv_dep *d = &c->deps[*slot - 1];
		if (warm && !d->warm) {
			d->warm = true;
			d->timeout_ms = timeout_ms;
		} else if (warm &&
			   (timeout_ms == 0 || (d->timeout_ms && timeout_ms > d->timeout_ms))) {
			d->timeout_ms = timeout_ms;
		}
		return 0;
	}
	if (c->ndeps == c->capdeps) {
		size_t cap = c->capdeps ? 2 * c->capdeps : 8;
		struct conv_dep *nd = realloc(c->deps, cap * sizeof(*nd));
		if (!nd)
			return -ENOMEM;
		c->deps = nd;
		c->capdeps = cap;
	}
	char *s = strndup(name, len);
	if (!s)
		return -ENOMEM;
	c->deps[c->ndeps++] = (struct conv_dep){(uint8_t)t, warm, timeout_ms, s};
	*slot = (uint32_t)c->ndeps;
	return 0;
}

void *conv_alloc(struct conv *c, size_t n)
{
	return arn_pool_alloc(c->pool, n);
}

const char *conv_str(struct conv *c, upb_StringView s)
{
	return arn_pool_strndup(c->pool, s.data, s.size);
}

const char *conv_lstr(struct conv *c, upb_StringView s)
{
	char *r = arn_pool_strndup(c->pool, s.data, s.size);
	if (r)
		for (size_t i = 0; i < s.size; i++)
			r[i] = (char)tolower((unsigned char)r[i]);
	return r;
}

void conv_str_list(struct conv *c, struct pb p, const char *f, const char ***out, size_t *n,
		   bool lower)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	*out = CONV_NEW(c, const char *, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++)
		(*out)[i] =
		    lower ? conv_lstr(c, pb_str_at(p, f, i)) : conv_str(c, pb_str_at(p, f, i));
}

void conv_upgrades(struct conv *c, struct pb p, bool route, struct arn_cfg_upgrade **out, size_t *n)
{
	size_t len = pb_len(p, "upgrade_configs");
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_upgrade, len);
	if (!*out)
		return;
	for (size_t i = 0; i < len; i++) {
		struct pb u = pb_at(p, "upgrade_configs", i);
		size_t m = conv_push(c, "upgrade_configs[%zu]", i);
		conv_only(c, u, route ? "upgrade_type,enabled" : "upgrade_type,enabled,filters");
		if (!route && pb_len(u, "filters") > 0)
			conv_err(c, "filters",
				 "custom upgrade filter chains are not supported by Arion: leave "
				 "filters empty and upgrades run the connection manager's filters");
		upb_StringView t = pb_str(u, "upgrade_type");
		struct arn_cfg_upgrade *e = &(*out)[i];
		e->type = conv_str(c, t);
		e->len = t.size;
		e->enabled = true;
		pb_wrapped_bool(u, "enabled", &e->enabled);
		if (t.size == 0)
			conv_err(c, "upgrade_type", "missing");
		else if (t.size == 7 && strncasecmp(t.data, "CONNECT", 7) == 0)
			conv_err(c, "upgrade_type",
				 "CONNECT is not supported by Arion yet (requests with method "
				 "CONNECT are refused)");
		for (size_t j = 0; j < i && e->type; j++)
			if ((*out)[j].len == t.size && (*out)[j].type &&
			    strncasecmp((*out)[j].type, t.data, t.size) == 0)
				conv_err(c, "upgrade_type", "'%s' appears twice (Envoy refuses it)",
					 e->type);
		conv_pop(c, m);
	}
	*n = len;
}

void conv_refs(struct conv *c, struct arn_cfg_ref *r, upb_StringView s)
{
	r->name = conv_str(c, s);
	r->len = s.size;
	r->hash = arn_cfg_hash(s.data, s.size);
}

void *conv_obj_new(struct conv *c, size_t size, enum arn_cfg_type t, upb_StringView name)
{
	struct arn_cfg_obj *o = conv_alloc(c, size);
	if (!o)
		return NULL;
	o->refs = 1;
	o->type = (uint8_t)t;
	o->name = conv_str(c, name);
	o->name_len = name.size;
	o->hash = arn_cfg_hash(name.data, name.size);
	o->pool = c->pool;
	o->reclaim = c->reclaim;
	return o;
}

int conv_read_file(struct conv *c, const char *field, const char *path, size_t max, char **buf,
		   size_t *len)
{
	*buf = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat sb;
	int rc = 0;
	if (fd < 0) {
		rc = -errno;
		conv_err(c, field, "cannot open '%s': %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		conv_err(c, field, "'%s' is not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if ((size_t)sb.st_size > max) {
		conv_err(c, field, "'%s' is larger than %zu bytes", path, max);
		close(fd);
		return -EFBIG;
	}
	*buf = malloc((size_t)sb.st_size + 1);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	while (*len < (size_t)sb.st_size) {
		ssize_t n = read(fd, *buf + *len, (size_t)sb.st_size - *len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		*len += (size_t)n;
	}
	(*buf)[*len] = 0;
	close(fd);
	return 0;
}

/* ---- small Envoy types ------------------------------------------------------- */

bool conv_duration(struct conv *c, struct pb p, const char *f, uint32_t *out, bool must_be_positive)
{
	struct pb d = pb_msg(p, f);
	if (!d.m)
		return false;
	int64_t s = pb_i64(d, "seconds");
	int32_t ns = pb_i32(d, "nanos");
	if (s < 0 || ns < 0 || ns > 999999999) {
		conv_err(c, f, "must be a non-negative duration");
		return false;
	}
	if (must_be_positive && s == 0 && ns == 0) {
		conv_err(c, f, "must be greater than 0s");
		return false;
	}
	uint64_t ms = (uint64_t)s * 1000u + ((uint64_t)ns + 999999u) / 1000000u;
	*out = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	return true;
}

int conv_socket_address(struct conv *c, struct pb addr, const char *f, uint32_t *ip, uint16_t *port,
			bool allow_any)
{
	size_t m0 = conv_push(c, "%s", f);
	int rc = 0;
	const char *which = pb_which(addr, "address");
	if (!addr.m || !which) {
		conv_err(c, "", "missing: give socket_address {address, port_value}");
		conv_pop(c, m0);
		return -EINVAL;
	}
	if (strcmp(which, "socket_address") != 0) {
		conv_err(c, which, "only socket_address is supported (IPv4 over Arion's stack)");
		conv_pop(c, m0);
		return -EINVAL;
	}
	struct pb sa = pb_msg(addr, "socket_address");
	size_t m1 = conv_push(c, "socket_address");
	if (conv_only(c, sa, "address,port_value,protocol,ipv4_compat"))
		rc = -EINVAL;
	if (pb_i32(sa, "protocol") != 0) {
		conv_err(c, "protocol", "only TCP is supported");
		rc = -EINVAL;
	}
	upb_StringView a = pb_str(sa, "address");
	char buf[64];
	struct in_addr in;
	if (a.size == 0 || a.size >= sizeof(buf)) {
		conv_err(c, "address", "missing or too long: an IPv4 address is required");
		rc = -EINVAL;
	} else {
		memcpy(buf, a.data, a.size);
		buf[a.size] = 0;
		if (inet_pton(AF_INET, buf, &in) == 1) {
			*ip = ntohl(in.s_addr);
			if (*ip == 0 && !allow_any) {
				conv_err(c, "address", "0.0.0.0 is not an endpoint address");
				rc = -EINVAL;
			}
		} else if (strchr(buf, ':')) {
			if (allow_any && strcmp(buf, "::") == 0) {
				*ip = 0; /* Envoy's "::" listens on every address, IPv4 included */
			} else {
				conv_err(
				    c, "address",
				    "'%s': IPv6 is not supported by Arion's data plane (IPv4 only)",
				    buf);
				rc = -EINVAL;
			}
		} else {
			conv_err(c, "address",
				 "'%s' is not an IPv4 address (hostnames need a DNS cluster type, "
				 "which Arion does not support)",
				 buf);
			rc = -EINVAL;
		}
	}
	if (strcmp(pb_which(sa, "port_specifier") ? pb_which(sa, "port_specifier") : "",
		   "named_port") == 0) {
		conv_err(c, "named_port", "not supported: use port_value");
		rc = -EINVAL;
	}
	uint32_t pv = pb_u32(sa, "port_value");
	if (pv > 65535) {
		conv_err(c, "port_value", "%u is not a TCP port", pv);
		rc = -EINVAL;
	} else if (pv == 0) {
		conv_err(c, "port_value", "missing: a port from 1 to 65535 is required");
		rc = -EINVAL;
	}
	*port = (uint16_t)pv;
	conv_pop(c, m1);
	conv_pop(c, m0);
	return rc;
}

static void regex_free_cb(void *re)
{
	arn_regex_free(re);
}

const struct arn_regex *conv_regex(struct conv *c, struct pb rm)
{
	if (conv_only(c, rm, "google_re2,regex"))
		return NULL;
	struct pb re2 = pb_msg(rm, "google_re2");
	if (re2.m && pb_has(re2, "max_program_size")) {
		/* accepted: Arion enforces its own fixed program-size limit */
	}
	upb_StringView r = pb_str(rm, "regex");
	if (r.size == 0) {
		conv_err(c, "regex", "missing: an empty regex");
		return NULL;
	}
	char err[256];
	struct arn_regex *re = arn_regex_compile(r.data, r.size, err, sizeof(err));
	if (!re) {
		conv_err(c, "regex", "'%.*s': %s", (int)(r.size > 200 ? 200 : r.size), r.data, err);
		return NULL;
	}
	if (arn_pool_on_free(c->pool, regex_free_cb, re) != 0)
		return NULL;
	return re;
}

int conv_string_matcher(struct conv *c, struct pb sm, struct arn_cfg_str_match *out)
{
	if (conv_only(c, sm, "exact,prefix,suffix,safe_regex,contains,ignore_case"))
		return -EINVAL;
	const char *w = pb_which(sm, "match_pattern");
	out->ignore_case = pb_bool(sm, "ignore_case");
	if (!w) {
		conv_err(c, "",
			 "no match pattern: set exact, prefix, suffix, contains or safe_regex");
		return -EINVAL;
	}
	if (strcmp(w, "safe_regex") == 0) {
		size_t m = conv_push(c, "safe_regex");
		out->kind = ARN_CFG_STR_REGEX;
		out->re = conv_regex(c, pb_msg(sm, "safe_regex"));
		conv_pop(c, m);
		if (out->ignore_case) {
			conv_err(c, "ignore_case",
				 "has no effect on safe_regex (write (?i) in the regex)");
			return -EINVAL;
		}
		return out->re ? 0 : -EINVAL;
	}
	upb_StringView s = pb_str(sm, w);
	out->kind = strcmp(w, "exact") == 0	 ? ARN_CFG_STR_EXACT
		    : strcmp(w, "prefix") == 0	 ? ARN_CFG_STR_PREFIX
		    : strcmp(w, "suffix") == 0	 ? ARN_CFG_STR_SUFFIX
		    : strcmp(w, "contains") == 0 ? ARN_CFG_STR_CONTAINS
						 : 255;
	if (out->kind == 255) {
		conv_err(c, w, "not supported");
		return -EINVAL;
	}
	if (s.size == 0 && out->kind != ARN_CFG_STR_EXACT) {
		conv_err(c, w, "must not be empty");
		return -EINVAL;
	}
	out->s = out->ignore_case ? conv_lstr(c, s) : conv_str(c, s);
	out->len = s.size;
	return 0;
}

struct pb conv_any(struct conv *c, struct pb any, const char *full_name)
{
	struct pb r = {NULL, arn_proto_msgdef(full_name)};
	if (!any.m) {
		conv_err(c, "", "missing typed_config (%s)", full_name);
		return r;
	}
	struct arn_sb err = ARN_SB_INIT;
	upb_Message *m = arn_proto_any_unpack(any.m, r.d, NULL, c->arena, &err);
	if (!m)
		conv_err(c, "", "%s", arn_sb_cstr(&err));
	arn_sb_free(&err);
	r.m = m;
	return r;
}

uint32_t conv_fetch_timeout(struct conv *c, struct pb cs)
{
	uint32_t ms = c->default_fetch_ms;
	if (cs.m && pb_has(cs, "initial_fetch_timeout")) {
		uint32_t v = 0;
		if (conv_duration(c, cs, "initial_fetch_timeout", &v, false))
			ms = v; /* 0: wait forever, as Envoy */
	}
	return ms;
}

static int header_add_list(struct conv *c, struct pb p, const char *f,
			   struct arn_cfg_header_add **out, size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return 0;
	*out = CONV_NEW(c, struct arn_cfg_header_add, len);
	if (!*out)
		return -ENOMEM;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		struct pb hvo = pb_at(p, f, i);
		size_t m = conv_push(c, "%s[%zu]", f, i);
		conv_only(c, hvo, "header,append,append_action,keep_empty_value");
		struct pb hv = pb_msg(hvo, "header");
		struct arn_cfg_header_add *h = &(*out)[i];
		if (!hv.m) {
			conv_err(c, "header", "missing");
		} else {
			size_t m2 = conv_push(c, "header");
			conv_only(c, hv, "key,value");
			conv_pop(c, m2);
			upb_StringView k = pb_str(hv, "key");
			if (k.size == 0)
				conv_err(c, "header.key", "missing");
			for (size_t j = 0; j < k.size; j++)
				if (k.data[j] <= ' ' || k.data[j] == ':' || k.data[j] == 127) {
					if (j == 0 && k.data[0] == ':')
						conv_err(c, "header.key",
							 "pseudo-headers (%.*s) cannot be added",
							 (int)k.size, k.data);
					else
						conv_err(c, "header.key",
							 "not a valid header name");
					break;
				}
			upb_StringView v = pb_str(hv, "value");
			for (size_t j = 0; j < v.size; j++)
				if (v.data[j] == '\r' || v.data[j] == '\n' || v.data[j] == 0) {
					conv_err(c, "header.value", "contains CR, LF or NUL");
					break;
				}
			h->key = conv_lstr(c, k);
			h->key_len = k.size;
			h->value = conv_str(c, v);
			h->value_len = v.size;
		}
		bool append;
		bool has_append = pb_wrapped_bool(hvo, "append", &append);
		int32_t action = pb_i32(hvo, "append_action");
		if (has_append && action != 0)
			conv_err(c, "append", "set either append or append_action, not both");
		if (has_append)
			h->append = append ? ARN_CFG_APPEND_IF_EXISTS_OR_ADD
					   : ARN_CFG_OVERWRITE_IF_EXISTS_OR_ADD;
		else if (action >= 0 && action <= 2)
			h->append = (uint8_t)action;
		else
			conv_err(c, "append_action", "unknown value %d", action);
		h->keep_empty_value = pb_bool(hvo, "keep_empty_value");
		conv_pop(c, m);
	}
	return 0;
}

static void header_remove_list(struct conv *c, struct pb p, const char *f, struct arn_cfg_ref **out,
			       size_t *n)
{
	size_t len = pb_len(p, f);
	if (!len)
		return;
	*out = CONV_NEW(c, struct arn_cfg_ref, len);
	if (!*out)
		return;
	*n = len;
	for (size_t i = 0; i < len; i++) {
		upb_StringView s = pb_str_at(p, f, i);
		if (s.size == 0 || s.data[0] == ':') {
			size_t m = conv_push(c, "%s[%zu]", f, i);
			conv_err(c, "", "'%.*s' cannot be removed", (int)s.size, s.data);
			conv_pop(c, m);
		}
		(*out)[i].name = conv_lstr(c, s);
		(*out)[i].len = s.size;
	}
}

void conv_header_ops(struct conv *c, struct pb p, struct arn_cfg_header_ops *ops)
{
	header_add_list(c, p, "request_headers_to_add", &ops->req_add, &ops->n_req_add);
	header_add_list(c, p, "response_headers_to_add", &ops->resp_add, &ops->n_resp_add);
	header_remove_list(c, p, "request_headers_to_remove", &ops->req_remove, &ops->n_req_remove);
	header_remove_list(c, p, "response_headers_to_remove", &ops->resp_remove,
			   &ops->n_resp_remove);
}
