'use strict';
/*
 * What the Node end-to-end tests of the xDS path share, so that each
 * builds a resource and sets a scenario up the same way: the resource type
 * URLs, builders for clusters, endpoint assignments, listeners with an
 * HTTP connection manager and route tables (plain objects as
 * tests/xds/peer/server.js sends them), the assertions, and the steps
 * every scenario starts with (the five initial requests) and repeats (a
 * response ACKed, ackedSender). No npm packages: it loads where server.js cannot.
 *
 *   const x = require('../common/xds_e2e.js');
 */

/* The resource types: Envoy's five, which arion subscribes to as
 * wildcards in ORDER (X3), and Arion's TDS, subscribed on demand. */
const TYPES = {
  secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  cla: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  toolset: 'type.googleapis.com/arion.extensions.mcp.v3.ToolSet', // TDS, subscribed on demand (X4)
};
const ORDER = [TYPES.secret, TYPES.cluster, TYPES.cla, TYPES.listener, TYPES.route];

const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER = { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } };

/* ---- resources --------------------------------------------------------------- */

/* An EDS cluster over ADS; @p extra: more Cluster fields. */
const edsCluster = (name, timeout = '0.25s', extra = {}) => ({
  '@type': TYPES.cluster, name, type: 'EDS', connect_timeout: timeout,
  eds_cluster_config: { eds_config: { ads: {} } }, ...extra,
});
/* A STATIC cluster with one endpoint. */
const staticCluster = (name, ip, port, timeout = '1s') => ({
  '@type': TYPES.cluster, name, type: 'STATIC', connect_timeout: timeout,
  load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: ip, port_value: port } } } }] }] },
});
/* One lb_endpoints entry; @p extra: load_balancing_weight, health_status, ... */
const ep = (ip, port, extra = {}) => ({ endpoint: { address: { socket_address: { address: ip, port_value: port } } }, ...extra });
/* A ClusterLoadAssignment with one locality of @p lbEndpoints (ep()s). */
const cla = (name, lbEndpoints) => ({ '@type': TYPES.cla, cluster_name: name, endpoints: [{ lb_endpoints: lbEndpoints }] });
/* A listener on @p address:@p port whose one filter is an HCM with
 * @p hcmFields (how it finds its routes, and any other field) and the router. */
const listenerHcm = (name, port, hcmFields, { address = '0.0.0.0', statPrefix = name } = {}) => ({
  '@type': TYPES.listener, name,
  address: { socket_address: { address, port_value: port } },
  filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
    '@type': HCM, stat_prefix: statPrefix, ...hcmFields, http_filters: [ROUTER] } }] }],
});
/* A listener whose HCM takes route table @p rds over ADS. */
const listenerRds = (name, port, rds, opts = {}) =>
  listenerHcm(name, port, { rds: { config_source: { ads: {} }, route_config_name: rds } }, opts);
/* A route table sending every path of every host to @p cluster. */
const route = (name, cluster, vhName = 'vh') => ({
  '@type': TYPES.route, name,
  virtual_hosts: [{ name: vhName, domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster } }] }],
});

/* ---- assertions ------------------------------------------------------------------ */

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function assert(cond, msg) { if (!cond) throw new Error(`assertion failed: ${msg}`); }
/* Objects' keys are compared sorted: protobuf maps (initial_resource_versions)
 * have no order on the wire, so the order they decode in means nothing. */
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}
function eq(a, b, msg) {
  const ja = JSON.stringify(canon(a)), jb = JSON.stringify(canon(b));
  if (ja !== jb) throw new Error(`assertion failed: ${msg}: got ${ja}, wanted ${jb}`);
}

/* Poll until @p fn returns a truthy value (arion applies asynchronously). */
async function until(what, fn, ms = 10000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms (last: ${last && last.stack ? last.stack : JSON.stringify(last)})`);
    await sleep(100);
  }
}

/* ---- scenario steps (an AdsServer of tests/xds/peer/server.js) -------------------- */

/* The five initial requests of stream @p n, in any order; the stream. */
async function initial(srv, n = 1) {
  const st = await srv.waitStream(n, 15000);
  for (const t of ORDER) await srv.waitRequest((r) => r.stream === st.id && r.type_url === t, 15000);
  return st;
}

/* The request answering response @p resp (srv.send's), which must be an ACK. */
async function acked(srv, resp) {
  const r = await srv.waitRequest((x) => x.response_nonce === resp.nonce, 10000);
  assert(!r.error_detail, `${resp.type_url} ${resp.nonce} ACKed, not NACKed: ${JSON.stringify(r.error_detail)}`);
  return r;
}

/* Responses sent on @p srv one at a time, each answered before the next:
 * sendAcked(type, resources, removed) sends one (@p type a key of TYPES)
 * and returns its ACK, or throws on a NACK or none within @p timeoutMs;
 * sendNacked(...) the same for a response that must be NACKed (returns the
 * NACK, throws on an ACK).
 * cursor: the seq after the last answer (each wait reads on from it; a
 * script waiting for requests of its own may start there).
 * maxAckMs: the slowest send-to-answer time so far (a script sets it to 0
 * where the part it measures starts). */
function ackedSender(srv, timeoutMs = 20000) {
  const answer = async (type, resources, removed) => {
    const t0 = Date.now();
    const r = srv.send({ type_url: type, resources, removed_resources: removed });
    const q = await srv.waitRequest((x) => x.type_url === TYPES[type] && x.response_nonce === r.nonce,
      timeoutMs, s.cursor);
    s.cursor = q.seq + 1;
    s.maxAckMs = Math.max(s.maxAckMs, Date.now() - t0);
    return q;
  };
  const s = {
    cursor: 0,
    maxAckMs: 0,
    sendAcked: async (type, resources, removed = []) => {
      const ack = await answer(type, resources, removed);
      if (ack.error_detail) throw new Error(`NACK for ${type}: ${JSON.stringify(ack.error_detail)}`);
      return ack;
    },
    sendNacked: async (type, resources, removed = []) => {
      const nack = await answer(type, resources, removed);
      if (!nack.error_detail) throw new Error(`wanted a NACK for ${type}, got an ACK (nonce ${nack.response_nonce})`);
      return nack;
    },
  };
  return s;
}

module.exports = {
  TYPES, ORDER, HCM, ROUTER,
  edsCluster, staticCluster, ep, cla, listenerHcm, listenerRds, route,
  sleep, assert, eq, until, initial, acked, ackedSender,
};
