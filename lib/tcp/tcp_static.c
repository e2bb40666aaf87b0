/*
 * TEMPORARY (until lib/config models listeners and filter chains): echo
 * listeners from the bootstrap's static_resources, so that the stack can be
 * run end to end before HTTP exists. A listener qualifies when it has one
 * filter chain whose only filter is envoy.filters.network.echo (by the type
 * URL of its typed_config, or by name when typed_config is absent) and a
 * TCP socket_address with an IPv4 literal. Replace with lib/config's model:
 * delete this file and call arn_tcp_listen() from the config module's
 * per-worker listener set-up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "arn_bootstrap.h"
#include "arn_log.h"
#include "arn_proto.h"
#include "envoy/config/bootstrap/v3/bootstrap.upb.h"
#include "envoy/config/core/v3/address.upb.h"
#include "envoy/config/listener/v3/listener.upb.h"
#include "envoy/config/listener/v3/listener_components.upb.h"
#include "tcp_int.h"

#include <rte_pause.h>

#define ECHO_MAX 16
#define ECHO_TYPE "envoy.extensions.filters.network.echo.v3.Echo"

static struct {
	uint32_t addr;
	uint16_t port;
	char name[64];
} echo_lsn[ECHO_MAX];
static unsigned n_echo;
static bool echo_loaded;

static bool sv_eq(upb_StringView v, const char *s)
{
	return v.size == strlen(s) && memcmp(v.data, s, v.size) == 0;
}

static bool is_echo_filter(const envoy_config_listener_v3_Filter *f)
{
	if (envoy_config_listener_v3_Filter_has_typed_config(f))
		return sv_eq(
		    arn_proto_any_type_name(
			(const upb_Message *)envoy_config_listener_v3_Filter_typed_config(f)),
		    ECHO_TYPE);
	return sv_eq(envoy_config_listener_v3_Filter_name(f), "envoy.filters.network.echo");
}

static int load_table(const struct arn_bootstrap *b)
{
	n_echo = 0;
	if (b == NULL || b->pb == NULL)
		return 0;
	const envoy_config_bootstrap_v3_Bootstrap_StaticResources *sr =
	    envoy_config_bootstrap_v3_Bootstrap_static_resources(b->pb);
	if (sr == NULL)
		return 0;
	size_t nl = 0;
	const envoy_config_listener_v3_Listener *const *ls =
	    envoy_config_bootstrap_v3_Bootstrap_StaticResources_listeners(sr, &nl);
	for (size_t i = 0; i < nl; i++) {
		upb_StringView name = envoy_config_listener_v3_Listener_name(ls[i]);
		size_t nfc = 0;
		const envoy_config_listener_v3_FilterChain *const *fcs =
		    envoy_config_listener_v3_Listener_filter_chains(ls[i], &nfc);
		if (nfc != 1)
			continue;
		size_t nf = 0;
		const envoy_config_listener_v3_Filter *const *fs =
		    envoy_config_listener_v3_FilterChain_filters(fcs[0], &nf);
		if (nf != 1 || !is_echo_filter(fs[0])) {
			ARN_DEBUG(TCP, "listener %.*s: not an echo listener, left to lib/config",
				  (int)name.size, name.data);
			continue;
		}
		const struct envoy_config_core_v3_Address *a =
		    envoy_config_listener_v3_Listener_address(ls[i]);
		const envoy_config_core_v3_SocketAddress *sa =
		    a ? envoy_config_core_v3_Address_socket_address(a) : NULL;
		char ip[INET_ADDRSTRLEN] = "";
		struct in_addr in;
		if (sa) {
			upb_StringView av = envoy_config_core_v3_SocketAddress_address(sa);
			if (av.size < sizeof(ip)) {
				memcpy(ip, av.data, av.size);
				ip[av.size] = 0;
			}
		}
		uint32_t port = sa ? envoy_config_core_v3_SocketAddress_port_value(sa) : 0;
		if (sa == NULL || envoy_config_core_v3_SocketAddress_protocol(sa) != 0 ||
		    inet_pton(AF_INET, ip, &in) != 1 || port == 0 || port > 65535) {
			ARN_ERR(TCP,
				"listener %.*s: an echo listener needs address.socket_address with "
				"an IPv4 address and a TCP port_value",
				(int)name.size, name.data);
			return -EINVAL;
		}
		if (n_echo == ECHO_MAX) {
			ARN_ERR(TCP, "listener %.*s: more than %d echo listeners", (int)name.size,
				name.data, ECHO_MAX);
			return -EINVAL;
		}
		echo_lsn[n_echo].addr = ntohl(in.s_addr);
		echo_lsn[n_echo].port = (uint16_t)port;
		snprintf(echo_lsn[n_echo].name, sizeof(echo_lsn[0].name), "%.*s",
			 (int)RTE_MIN(name.size, (size_t)63), name.data);
		ARN_INFO(TCP, "listener %s: echo on %s:%u", echo_lsn[n_echo].name, ip,
			 (unsigned)port);
		n_echo++;
	}
	return (int)n_echo;
}

int arn_tcp_static_echo_load(const struct arn_bootstrap *b)
{
	int rc = load_table(b);
	if (rc < 0)
		n_echo = 0;
	__atomic_store_n(&echo_loaded, true, __ATOMIC_RELEASE);
	return rc;
}

/*
 * Called by every worker from arn_tcp_worker_init: the first one loads the
 * table, the others wait for it (start-up only). lib/net passes the
 * bootstrap's own dataplane section (app->bootstrap->dp, borrowed for the
 * data plane's life, arn_net.h), so the bootstrap is the structure around
 * it. Nothing is done when a test (or lib/config) loaded the table
 * explicitly first, or when @p conf is NULL.
 */
void tcp_static_echo_autoload(const struct arn_dataplane *conf);
void tcp_static_echo_autoload(const struct arn_dataplane *conf)
{
	static int state; /* 0 not loaded, 1 loading, 2 done */
	if (__atomic_load_n(&echo_loaded, __ATOMIC_ACQUIRE) || conf == NULL)
		return;
	int expect = 0;
	if (__atomic_compare_exchange_n(&state, &expect, 1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		const struct arn_bootstrap *b = container_of(conf, struct arn_bootstrap, dp);
		arn_tcp_static_echo_load(b);
		__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
		rte_pause();
}

int tcp_static_echo_worker_init(struct arn_lcore *lc);
int tcp_static_echo_worker_init(struct arn_lcore *lc)
{
	for (unsigned i = 0; i < n_echo; i++) {
		int err = 0;
		/* 0.0.0.0 in the config means every local address, as in Envoy */
		if (arn_tcp_listen(lc, echo_lsn[i].addr, echo_lsn[i].port, &arn_tcp_echo_ops, NULL,
				   NULL, &err) == NULL) {
			ARN_ERR(TCP, "listener %s: cannot listen: %s", echo_lsn[i].name,
				strerror(-err));
			return err;
		}
	}
	return 0;
}
