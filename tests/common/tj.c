/*
 * The JSON builders of tj.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tj.h"

#define TJ_NBUF 16
#define TJ_BUFSZ 4096

static char tj_bufs[TJ_NBUF][TJ_BUFSZ];
static unsigned tj_n;

static char *tj_next(void)
{
	return tj_bufs[tj_n++ % TJ_NBUF];
}

const char *tj_cluster_static(const char *name, const char *ip, unsigned port)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"type\":\"STATIC\",\"connect_timeout\":\"0.25s\","
		 "\"load_assignment\":{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":[{"
		 "\"endpoint\":{\"address\":{\"socket_address\":{\"address\":\"%s\",\"port_value\":"
		 "%u}}}}]}]}}",
		 name, name, ip, port);
	return b;
}

const char *tj_cluster_eds(const char *name, const char *timeout)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"type\":\"EDS\",\"connect_timeout\":\"%s\","
		 "\"eds_cluster_config\":{\"eds_config\":{\"ads\":{}}}}",
		 name, timeout);
	return b;
}

const char *tj_cla(const char *name, const char *ip, unsigned port)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"cluster_name\":\"%s\",\"endpoints\":[{\"lb_endpoints\":[{\"endpoint\":{"
		 "\"address\":{\"socket_address\":{\"address\":\"%s\",\"port_value\":%u}}}}]}]}",
		 name, ip, port);
	return b;
}

const char *tj_listener_hcm(const char *name, unsigned port, const char *hcm_fields)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":%u}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" TJ_HCM_AT ",\"stat_prefix\":\"in\",%s,"
		 "\"http_filters\":[" TJ_ROUTER "]}}]}]}",
		 name, port, hcm_fields);
	return b;
}

const char *tj_listener_mcp(const char *name, unsigned port, const char *toolset, const char *extra)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":%u}},\"filter_chains\":[{\"filters\":[{\"name\":\"hcm\","
		 "\"typed_config\":{" TJ_HCM_AT
		 ",\"stat_prefix\":\"in\",\"route_config\":{\"name\":"
		 "\"r\"},\"http_filters\":[{\"name\":\"arion.filters.http.mcp_gateway\","
		 "\"typed_config\":{\"@type\":\"type.googleapis.com/arion.extensions.filters.http."
		 "mcp_gateway.v3.McpGateway\",\"tds\":{\"config_name\":\"%s\"}%s%s}}," TJ_ROUTER
		 "]}}]}]}",
		 name, port, toolset, extra && *extra ? "," : "", extra ? extra : "");
	return b;
}

const char *tj_listener_rds(const char *name, unsigned port, const char *rds)
{
	char f[TJ_BUFSZ];
	snprintf(f, sizeof(f),
		 "\"rds\":{\"config_source\":{\"ads\":{}},\"route_config_name\":\"%s\"}", rds);
	return tj_listener_hcm(name, port, f);
}

const char *tj_listener_inline(const char *name, unsigned port, const char *route_name)
{
	char f[TJ_BUFSZ];
	snprintf(f, sizeof(f),
		 "\"route_config\":{\"name\":\"%s\",\"virtual_hosts\":[{\"name\":\"vh\","
		 "\"domains\":[\"*\"],\"routes\":[{\"match\":{\"prefix\":\"/\"},"
		 "\"direct_response\":{\"status\":200}}]}]}",
		 route_name);
	return tj_listener_hcm(name, port, f);
}

const char *tj_listener_tls(const char *name, unsigned port, const char *tls_fields)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"address\":{\"socket_address\":{\"address\":\"0.0.0.0\","
		 "\"port_value\":%u}},\"filter_chains\":[{\"filters\":[{\"name\":"
		 "\"envoy.filters.network.echo\"}],\"transport_socket\":{\"name\":\"tls\","
		 "\"typed_config\":{" TJ_DTC_AT ",%s}}}]}",
		 name, port, tls_fields);
	return b;
}

const char *tj_route(const char *name, const char *cluster)
{
	char *b = tj_next();
	snprintf(b, TJ_BUFSZ,
		 "{\"name\":\"%s\",\"virtual_hosts\":[{\"name\":\"vh\",\"domains\":[\"*\"],"
		 "\"routes\":[{\"match\":{\"prefix\":\"/\"},\"route\":{\"cluster\":\"%s\"}}]}]}",
		 name, cluster);
	return b;
}

char *tj_secret_tls(const char *name, const char *cert_json, const char *key_json)
{
	static const char fmt[] =
	    "{\"name\":\"%s\",\"tls_certificate\":{\"certificate_chain\":{\"inline_string\":"
	    "\"%s\"},\"private_key\":{\"inline_string\":\"%s\"}}}";
	size_t n = sizeof(fmt) + strlen(name) + strlen(cert_json) + strlen(key_json);
	char *b = malloc(n);
	if (b)
		snprintf(b, n, fmt, name, cert_json, key_json);
	return b;
}
