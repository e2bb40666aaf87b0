/*
 * Arion's `dataplane:` section (docs/configuration.md): ports, lcores, mbuf
 * pools and TCP limits. Everything has a default except the ports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_int.h"
#include "y2j.h"

#define DP_MAX_PORTS 32
#define DP_MAX_LCORES 128
#define DP_MBUF_HEADROOM 128 /* RTE_PKTMBUF_HEADROOM; lib/net asserts they agree */

void arn_dataplane_defaults(struct arn_dataplane *dp)
{
	dp->control_lcore = -1;
	dp->mbufs_per_socket = 16383; /* 2^n - 1: what rte_mempool sizes best */
	dp->mbuf_cache_size = 256;
	dp->mbuf_data_room = 2048 + 128; /* RTE_MBUF_DEFAULT_BUF_SIZE */
	dp->tcp_max_connections = 16384;
	dp->tcp_rcvbuf = 256 * 1024;
	dp->tcp_rcvbuf_max = 4u << 20;
	dp->tcp_reo_max_ms = 0; /* RFC 8985's reordering window, as Linux */
	dp->tcp_sndbuf = 256 * 1024;
	dp->tcp_sndbuf_max = 4u << 20; /* as Linux's tcp_wmem[2]: docs/tcp.md, "Send-buffer autotuning" */
	dp->http_max_client_connections = 16384;
	dp->http_max_upstream_connections = 8192;
	dp->http_max_requests_in_flight = 1024;
	dp->http_kept_body_mbufs = 2048;
}

void arn_dataplane_free(struct arn_dataplane *dp)
{
	for (size_t i = 0; i < dp->n_eal_args; i++)
		free(dp->eal_args[i]);
	free(dp->eal_args);
	free(dp->worker_lcores);
	for (size_t i = 0; i < dp->n_ports; i++) {
		free(dp->ports[i].name);
		free(dp->ports[i].device);
		free(dp->ports[i].routes);
	}
	free(dp->ports);
	memset(dp, 0, sizeof(*dp));
}

struct dp_parse {
	struct arn_bs_ctx *c;
	char path[256];
	int errors;
};

static void err(struct dp_parse *p, const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void err(struct dp_parse *p, const char *sub, const char *fmt, ...)
{
	char path[400], msg[512];
	snprintf(path, sizeof(path), "%s%s%s", p->path, sub && *sub ? "." : "", sub ? sub : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	arn_bs_report(p->c, p->c->err, path, msg);
	p->errors++;
}

static yaml_node_t *get(struct dp_parse *p, int idx)
{
	return yaml_document_get_node(p->c->doc, idx);
}

/* Is the key of @p q already a key of an earlier pair of @p map? Reports it. */
static bool dup_key(struct dp_parse *p, yaml_node_t *map, yaml_node_pair_t *q)
{
	yaml_node_t *k = get(p, q->key);
	if (k->type != YAML_SCALAR_NODE)
		return false;
	for (yaml_node_pair_t *r = map->data.mapping.pairs.start; r < q; r++) {
		yaml_node_t *k2 = get(p, r->key);
		if (k2->type == YAML_SCALAR_NODE &&
		    !strcmp(arn_y2j_scalar(k), arn_y2j_scalar(k2))) {
			char path[400], msg[128];
			snprintf(path, sizeof(path), "%s.%s", p->path, arn_y2j_scalar(k));
			snprintf(msg, sizeof(msg), "'%s' is set twice (also at line %zu)",
				 arn_y2j_scalar(k), k2->start_mark.line + 1);
			arn_sb_printf(p->c->err, "%s:%zu:%zu: %s: %s\n", p->c->file,
				      k->start_mark.line + 1, k->start_mark.column + 1, path, msg);
			p->errors++;
			return true;
		}
	}
	return false;
}

static bool u32(struct dp_parse *p, yaml_node_t *v, const char *key, uint32_t lo, uint32_t hi,
		uint32_t *out)
{
	const char *s = v->type == YAML_SCALAR_NODE ? arn_y2j_scalar(v) : NULL;
	char *end;
	errno = 0;
	unsigned long long x = s && *s && *s != '-' ? strtoull(s, &end, 10) : 0;
	if (s == NULL || !*s || *s == '-' || *end || errno || x < lo || x > hi) {
		err(p, key, "expected an integer from %u to %u, got '%s'", lo, hi,
		    s ? s : "(not a scalar)");
		return false;
	}
	*out = (uint32_t)x;
	return true;
}

static bool ipv4(struct dp_parse *p, yaml_node_t *v, const char *key, bool with_prefix,
		 uint32_t *addr, uint8_t *plen)
{
	const char *s = v->type == YAML_SCALAR_NODE ? arn_y2j_scalar(v) : "";
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", s);
	char *slash = strchr(buf, '/');
	long prefix = 32;
	if (slash) {
		*slash = '\0';
		char *end;
		prefix = strtol(slash + 1, &end, 10);
		if (!with_prefix || *end || end == slash + 1 || prefix < 1 || prefix > 32) {
			err(p, key, "'%s': %s", s,
			    with_prefix ? "the prefix length must be 1 to 32"
					: "write an address without a prefix");
			return false;
		}
	} else if (with_prefix) {
		err(p, key, "'%s': write address/prefix, such as 198.18.0.2/24", s);
		return false;
	}
	struct in_addr in;
	if (inet_pton(AF_INET, buf, &in) != 1) {
		err(p, key, "'%s' is not an IPv4 address", s);
		return false;
	}
	*addr = ntohl(in.s_addr);
	if (plen)
		*plen = (uint8_t)prefix;
	return true;
}

static bool is_pci_addr(const char *s)
{
	/* [DDDD:]BB:DD.F */
	unsigned d, b, dev, f;
	char tail;
	if (sscanf(s, "%4x:%2x:%2x.%1x%c", &d, &b, &dev, &f, &tail) == 4 && strlen(s) == 12)
		return true;
	if (sscanf(s, "%2x:%2x.%1x%c", &b, &dev, &f, &tail) == 3 && strlen(s) == 7)
		return true;
	return false;
}

static void port(struct dp_parse *p, yaml_node_t *n, size_t i, struct arn_dp_port *pt)
{
	pt->mtu = 1500;
	pt->rx_descriptors = 1024;
	pt->tx_descriptors = 1024;
	if (n->type != YAML_MAPPING_NODE) {
		err(p, NULL, "a port is a mapping with device: and ipv4:");
		return;
	}
	bool ip_given = false;
	for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top;
	     q++) {
		yaml_node_t *k = get(p, q->key), *v = get(p, q->value);
		const char *kt = k->type == YAML_SCALAR_NODE ? arn_y2j_scalar(k) : "";
		uint32_t x;
		if (dup_key(p, n, q))
			continue;
		if (!strcmp(kt, "name") && v->type == YAML_SCALAR_NODE) {
			free(pt->name);
			pt->name = strdup(arn_y2j_scalar(v));
		} else if (!strcmp(kt, "device") && v->type == YAML_SCALAR_NODE) {
			const char *d = arn_y2j_scalar(v);
			pt->is_pci = is_pci_addr(d);
			if (!pt->is_pci && strncmp(d, "net_", 4) != 0 &&
			    strncmp(d, "arn_af_packet,", 14) != 0) {
				err(p, "device",
				    "'%s' is neither a PCI address (0000:03:00.0) nor a virtual "
				    "device (net_tap0,iface=arn0, net_af_packet0,iface=veth0, "
				    "net_af_xdp0,iface=veth0 or Arion's own "
				    "arn_af_packet,iface=veth0)",
				    d);
			}
			free(pt->device);
			pt->device = strdup(d);
		} else if (!strcmp(kt, "ipv4")) {
			ip_given = true; /* a bad one has its own error, not "missing" too */
			ipv4(p, v, "ipv4", true, &pt->ipv4, &pt->prefix_len);
		} else if (!strcmp(kt, "gateway")) {
			ipv4(p, v, "gateway", false, &pt->gateway, NULL);
		} else if (!strcmp(kt, "routes")) {
			if (v->type != YAML_SEQUENCE_NODE) {
				err(p, "routes",
				    "expected a list of prefixes, such as [16.0.0.0/16]");
				continue;
			}
			size_t nr =
			    (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			free(pt->routes);
			pt->routes = calloc(nr + 1, sizeof(*pt->routes));
			pt->n_routes = 0;
			for (size_t r = 0; r < nr; r++) {
				char sub[32];
				uint32_t a;
				uint8_t l;
				snprintf(sub, sizeof(sub), "routes[%zu]", r);
				if (!ipv4(p, get(p, v->data.sequence.items.start[r]), sub, true, &a,
					  &l))
					continue;
				uint32_t mask = l == 32 ? ~0u : ~((1u << (32 - l)) - 1);
				if (a & ~mask) {
					err(p, sub, "host bits are set; write the network address");
					continue;
				}
				pt->routes[pt->n_routes++] = (struct arn_dp_route){a, l};
			}
		} else if (!strcmp(kt, "mtu")) {
			if (u32(p, v, "mtu", 68, 9000, &x))
				pt->mtu = (uint16_t)x;
		} else if (!strcmp(kt, "rx_descriptors")) {
			if (u32(p, v, "rx_descriptors", 64, 32768, &x))
				pt->rx_descriptors = (uint16_t)x;
		} else if (!strcmp(kt, "tx_descriptors")) {
			if (u32(p, v, "tx_descriptors", 64, 32768, &x))
				pt->tx_descriptors = (uint16_t)x;
		} else {
			err(p, kt,
			    "unknown port key '%s' (name, device, ipv4, gateway, routes, mtu, "
			    "rx_descriptors, tx_descriptors)",
			    kt);
		}
	}
	if (pt->device == NULL)
		err(p, NULL, "device: is missing (a PCI address or a vdev string)");
	if (!ip_given)
		err(p, NULL, "ipv4: is missing (this port's address/prefix, e.g. 198.18.0.2/24)");
	if (pt->gateway && pt->prefix_len) {
		uint32_t mask = pt->prefix_len == 32 ? ~0u : ~((1u << (32 - pt->prefix_len)) - 1);
		if ((pt->gateway & mask) != (pt->ipv4 & mask))
			err(p, "gateway", "the gateway is not on this port's subnet");
	}
	if (pt->n_routes && !pt->gateway)
		err(p, "routes", "routes go through a gateway: set gateway: too");
	if (pt->name == NULL) {
		char nm[32];
		snprintf(nm, sizeof(nm), "port%zu", i);
		pt->name = strdup(nm);
	}
}

/* A name from @p names (NULL-terminated); its index goes to @p out. */
static bool choice(struct dp_parse *p, yaml_node_t *v, const char *key, const char *const *names,
		   uint32_t *out)
{
	const char *s = v->type == YAML_SCALAR_NODE ? arn_y2j_scalar(v) : NULL;
	char all[128] = "";
	for (uint32_t i = 0; names[i]; i++) {
		if (s && !strcmp(s, names[i])) {
			*out = i;
			return true;
		}
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? ", " : "",
			 names[i]);
	}
	err(p, key, "expected one of %s, got '%s'", all, s ? s : "(not a scalar)");
	return false;
}

/* A mapping of integer keys (lo..hi) and, where @p names[i] is set, keys
 * whose value is one of those names. */
static void section(struct dp_parse *p, yaml_node_t *n, const char *name, const char *const *keys,
		    uint32_t *const *outs, const uint32_t *lo, const uint32_t *hi,
		    const char *const *const *names)
{
	size_t base = strlen(p->path);
	snprintf(p->path + base, sizeof(p->path) - base, ".%s", name);
	if (n->type != YAML_MAPPING_NODE) {
		err(p, NULL, "expected a mapping");
	} else {
		for (yaml_node_pair_t *q = n->data.mapping.pairs.start;
		     q < n->data.mapping.pairs.top; q++) {
			yaml_node_t *k = get(p, q->key), *v = get(p, q->value);
			const char *kt = k->type == YAML_SCALAR_NODE ? arn_y2j_scalar(k) : "";
			size_t i;
			if (dup_key(p, n, q))
				continue;
			for (i = 0; keys[i]; i++)
				if (!strcmp(keys[i], kt))
					break;
			if (keys[i] == NULL) {
				char all[256] = "";
				for (size_t j = 0; keys[j]; j++)
					snprintf(all + strlen(all), sizeof(all) - strlen(all),
						 "%s%s", j ? ", " : "", keys[j]);
				err(p, kt, "unknown key '%s' (%s)", kt, all);
				continue;
			}
			if (names && names[i])
				choice(p, v, kt, names[i], outs[i]);
			else
				u32(p, v, kt, lo[i], hi[i], outs[i]);
		}
	}
	p->path[base] = '\0';
}

int arn_dataplane_parse(struct arn_bs_ctx *c, yaml_node_t *node, struct arn_dataplane *dp)
{
	struct dp_parse p = {.c = c};
	snprintf(p.path, sizeof(p.path), "dataplane");
	arn_dataplane_defaults(dp);
	dp->present = true;
	if (node->type != YAML_MAPPING_NODE) {
		err(&p, NULL, "expected a mapping (ports, worker_lcores, ...)");
		return p.errors;
	}
	for (yaml_node_pair_t *q = node->data.mapping.pairs.start; q < node->data.mapping.pairs.top;
	     q++) {
		yaml_node_t *k = get(&p, q->key), *v = get(&p, q->value);
		const char *kt = k->type == YAML_SCALAR_NODE ? arn_y2j_scalar(k) : "";
		if (dup_key(&p, node, q))
			continue;
		if (!strcmp(kt, "eal_args")) {
			if (v->type != YAML_SEQUENCE_NODE) {
				err(&p, kt, "expected a list of strings");
				continue;
			}
			size_t n =
			    (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			dp->eal_args = calloc(n + 1, sizeof(char *));
			for (size_t i = 0; i < n; i++) {
				yaml_node_t *e = get(&p, v->data.sequence.items.start[i]);
				if (e->type != YAML_SCALAR_NODE) {
					err(&p, kt, "item %zu is not a string", i);
					continue;
				}
				dp->eal_args[dp->n_eal_args++] = strdup(arn_y2j_scalar(e));
			}
		} else if (!strcmp(kt, "control_lcore")) {
			uint32_t x;
			if (u32(&p, v, kt, 0, DP_MAX_LCORES - 1, &x))
				dp->control_lcore = (int)x;
		} else if (!strcmp(kt, "worker_lcores")) {
			if (v->type != YAML_SEQUENCE_NODE) {
				err(&p, kt, "expected a list of lcore ids, such as [1, 2]");
				continue;
			}
			size_t n =
			    (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			dp->worker_lcores = calloc(n + 1, sizeof(unsigned));
			for (size_t i = 0; i < n; i++) {
				uint32_t x;
				char sub[64];
				snprintf(sub, sizeof(sub), "worker_lcores[%zu]", i);
				if (!u32(&p, get(&p, v->data.sequence.items.start[i]), sub, 0,
					 DP_MAX_LCORES - 1, &x))
					continue;
				for (size_t j = 0; j < dp->n_workers; j++)
					if (dp->worker_lcores[j] == x)
						err(&p, sub, "lcore %u is listed twice", x);
				dp->worker_lcores[dp->n_workers++] = x;
			}
		} else if (!strcmp(kt, "ports")) {
			if (v->type != YAML_SEQUENCE_NODE) {
				err(&p, kt, "expected a list of ports");
				continue;
			}
			size_t n =
			    (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
			if (n > DP_MAX_PORTS) {
				err(&p, kt, "at most %d ports", DP_MAX_PORTS);
				continue;
			}
			dp->ports = calloc(n + 1, sizeof(*dp->ports));
			for (size_t i = 0; i < n; i++) {
				size_t base = strlen(p.path);
				snprintf(p.path + base, sizeof(p.path) - base, ".ports[%zu]", i);
				port(&p, get(&p, v->data.sequence.items.start[i]), i,
				     &dp->ports[i]);
				p.path[base] = '\0';
				dp->n_ports++;
			}
			for (size_t i = 0; i < dp->n_ports; i++)
				for (size_t j = 0; j < i; j++)
					if (dp->ports[i].device && dp->ports[j].device &&
					    !strcmp(dp->ports[i].device, dp->ports[j].device)) {
						char sub[64];
						snprintf(sub, sizeof(sub), "ports[%zu].device", i);
						err(&p, sub, "the same device as ports[%zu]", j);
					}
		} else if (!strcmp(kt, "mbuf_pool")) {
			uint32_t room = dp->mbuf_data_room;
			static const char *const keys[] = {"mbufs_per_socket", "cache_size",
							   "data_room_size", NULL};
			uint32_t *const outs[] = {&dp->mbufs_per_socket, &dp->mbuf_cache_size,
						  &room};
			static const uint32_t lo[] = {1023, 0, 1024}, hi[] = {16777215, 512, 65535};
			section(&p, v, kt, keys, outs, lo, hi, NULL);
			dp->mbuf_data_room = (uint16_t)room;
		} else if (!strcmp(kt, "tcp")) {
			static const char *const keys[] = {"max_connections_per_worker",
							   "rcvbuf",
							   "sndbuf",
							   "congestion_control",
							   "rcvbuf_max",
							   "reordering_window_max_ms",
							   "sndbuf_max",
							   NULL};
			uint32_t *const outs[] = {&dp->tcp_max_connections, &dp->tcp_rcvbuf,
						  &dp->tcp_sndbuf,	    &dp->tcp_cc,
						  &dp->tcp_rcvbuf_max,	    &dp->tcp_reo_max_ms,
						  &dp->tcp_sndbuf_max};
			/* reordering_window_max_ms: at most the RTO's floor
			 * (200 ms), which must come only after RACK had its
			 * chance */
			static const uint32_t lo[] = {16, 4096, 4096, 0, 0, 0, 0},
					      hi[] = {4194304,	1u << 30, 1u << 30, 0,
						      1u << 30, 200,	  1u << 30};
			/* in ARN_DP_TCP_CC_* order */
			static const char *const cc[] = {"cubic", "newreno", "bbr", NULL};
			static const char *const *const names[] = {NULL, NULL, NULL, cc,
								   NULL, NULL, NULL};
			section(&p, v, kt, keys, outs, lo, hi, names);
		} else if (!strcmp(kt, "http")) {
			static const char *const keys[] = {
			    "max_client_connections", "max_upstream_connections",
			    "max_requests_in_flight", "kept_body_mbufs", NULL};
			uint32_t *const outs[] = {
			    &dp->http_max_client_connections, &dp->http_max_upstream_connections,
			    &dp->http_max_requests_in_flight, &dp->http_kept_body_mbufs};
			static const uint32_t lo[] = {16, 16, 4, 16},
					      hi[] = {1048576, 1048576, 1048576, 16777215};
			section(&p, v, kt, keys, outs, lo, hi, NULL);
		} else {
			err(&p, kt,
			    "unknown key '%s' (eal_args, control_lcore, worker_lcores, ports, "
			    "mbuf_pool, tcp, http)",
			    kt);
		}
	}
	/* What lib/net would refuse once the EAL is up, said here with the
	 * file's line: a frame of the port's MTU must fit one mbuf after
	 * DPDK's headroom (RTE_PKTMBUF_HEADROOM, 128 in Debian's build). */
	for (size_t i = 0; i < dp->n_ports; i++) {
		uint32_t frame = dp->ports[i].mtu + 14u + 4u + 4u; /* Ethernet, FCS, VLAN */
		if (frame > (uint32_t)dp->mbuf_data_room - DP_MBUF_HEADROOM) {
			char sub[64];
			snprintf(sub, sizeof(sub), "ports[%zu].mtu", i);
			err(&p, sub,
			    "mtu %u needs frames of %u bytes but mbufs hold %u after their "
			    "headroom: lower the mtu or raise mbuf_pool.data_room_size to %u",
			    dp->ports[i].mtu, frame, dp->mbuf_data_room - DP_MBUF_HEADROOM,
			    frame + DP_MBUF_HEADROOM);
		}
	}
	if (dp->control_lcore >= 0)
		for (size_t i = 0; i < dp->n_workers; i++)
			if (dp->worker_lcores[i] == (unsigned)dp->control_lcore)
				err(&p, "worker_lcores",
				    "lcore %d is the control lcore; workers need lcores of their "
				    "own",
				    dp->control_lcore);
	return p.errors;
}

/*
 * Arion's `xds:` section: how the xDS client may reach its control plane.
 * Beside dataplane: rather than in it, because a file without dataplane:
 * runs the control plane only, and that is where this setting matters most.
 */
int arn_xds_section_parse(struct arn_bs_ctx *c, yaml_node_t *node, struct arn_bootstrap_xds *x)
{
	struct dp_parse p = {.c = c};
	snprintf(p.path, sizeof(p.path), "xds");
	x->present = true;
	if (node->type != YAML_MAPPING_NODE) {
		err(&p, NULL, "expected a mapping, such as {allow_plaintext: true}");
		return p.errors;
	}
	for (yaml_node_pair_t *q = node->data.mapping.pairs.start; q < node->data.mapping.pairs.top;
	     q++) {
		yaml_node_t *k = get(&p, q->key), *v = get(&p, q->value);
		const char *kt = k->type == YAML_SCALAR_NODE ? arn_y2j_scalar(k) : "";
		if (dup_key(&p, node, q))
			continue;
		if (!strcmp(kt, "allow_plaintext")) {
			const char *s = v->type == YAML_SCALAR_NODE ? arn_y2j_scalar(v) : "";
			if (!strcmp(s, "true"))
				x->allow_plaintext = true;
			else if (!strcmp(s, "false"))
				x->allow_plaintext = false;
			else
				err(&p, kt, "expected true or false, got '%s'", s);
		} else {
			err(&p, kt, "unknown key '%s' (allow_plaintext)", kt);
		}
	}
	return p.errors;
}
