'use strict';
/*
 * One scenario per rule (spec/RULES.md), run by e2e.js against the real
 * arion binary. The order of this object fixes each scenario's port block:
 * append new ones at the end.
 */
const { sleep, assert, eq, TYPES } = require('./e2e.js');
const { ORDER, initial } = require('../../common/xds_e2e.js');

function cluster(name, extra = {}) {
  return { '@type': TYPES.cluster, name, type: 'EDS', connect_timeout: '0.25s', lb_policy: 'ROUND_ROBIN', ...extra };
}

function cla(name, port) {
  return {
    '@type': TYPES.cla, cluster_name: name,
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '198.18.0.10', port_value: port } } } }] }],
  };
}

/* An HTTP listener on 198.18.0.2:@p port with inline routes (nothing to warm for). */
function listener(name, port) {
  return {
    '@type': TYPES.listener, name, address: { socket_address: { address: '198.18.0.2', port_value: port } },
    filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: name,
      route_config: { name: `${name}-routes`, virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'api' } }] }] },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
    } }] }],
  };
}

/* The listeners /config_dump shows active, as [name, version]. */
async function activeListeners(ctx) {
  const dump = await ctx.admin('/config_dump');
  if (!dump) return null;
  const ls = dump.configs.find((c) => c['@type'] === 'type.googleapis.com/envoy.admin.v3.ListenersConfigDump');
  return ((ls && ls.dynamic_listeners) || []).filter((l) => l.active_state)
    .map((l) => [l.name, l.active_state.version_info]).sort();
}

const reqsOf = (srv, stream, type) => srv.requests.filter((r) => r.stream === stream && r.type_url === type);

/* arion's side of TLS (e2e.js configYaml) with the test PKI (pki.js):
 * mTLS, SNI xds.test and a SAN matcher the server's certificate meets. */
function tlsOpts(pki, { ca = pki.ca.crt, cert = true, sni = 'xds.test', san = '[{san_type: DNS, matcher: {exact: xds.test}}]' } = {}) {
  return { ca, cert: cert ? pki.client.crt : null, key: cert ? pki.client.key : null, sni, san };
}

/* Arion tried, failed and is trying again: what a refused handshake looks like. */
async function refusedAndRetrying(arion, failRe) {
  const f = await arion.waitLog(failRe, 15000);
  await arion.waitLog(/connecting to cluster xds_cluster .*attempt 2/, 10000, f.index);
  assert(!arion.logged(/connected to cluster/), 'never connected');
}

/* A listener on 198.18.0.2:@p port whose HCM runs the MCP gateway filter
 * on ToolSet @p ts (X14), then the router, with inline routes. */
function mcpListener(name, port, ts, tds = {}) {
  return {
    '@type': TYPES.listener, name, address: { socket_address: { address: '198.18.0.2', port_value: port } },
    filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: name,
      route_config: { name: `${name}-routes`, virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'api' } }] }] },
      http_filters: [
        { name: 'arion.filters.http.mcp_gateway', typed_config: {
          '@type': 'type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3.McpGateway',
          tds: { config_name: ts, config_source: { ads: {}, ...tds } } } },
        { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
      ],
    } }] }],
  };
}

/* A ToolSet with one backend per name in @p backends. */
function toolset(name, backends = ['gh']) {
  return { '@type': TYPES.toolset, name, backends: backends.map((b) => ({ name: b, cluster: `${b}-mcp` })) };
}

/* The ToolSets /config_dump shows, as [name, version]; null without admin. */
async function toolsets(ctx) {
  const dump = await ctx.admin('/config_dump');
  if (!dump) return null;
  const s = dump.configs.find((c) => c['@type'] === 'type.googleapis.com/arion.admin.v3.ToolSetsConfigDump');
  return ((s && s.dynamic_tool_sets) || []).filter((t) => t.tool_set).map((t) => [t.tool_set.name, t.version_info]).sort();
}

/* Listeners /config_dump shows warming, by name. */
async function warmingListeners(ctx) {
  const dump = await ctx.admin('/config_dump');
  if (!dump) return null;
  const ls = dump.configs.find((c) => c['@type'] === 'type.googleapis.com/envoy.admin.v3.ListenersConfigDump');
  return ((ls && ls.dynamic_listeners) || []).filter((l) => l.warming_state).map((l) => l.name).sort();
}

/* Send listeners @p ls (an array of [name, version, resource]) and wait for the ACK. */
async function pushListeners(srv, arion, version, ls, removed = []) {
  const r = srv.send({ type_url: 'listener', system_version_info: version,
    resources: ls.map(([name, v, resource]) => ({ name, version: v, resource })), removed_resources: removed });
  const ack = await srv.waitRequest((x) => x.response_nonce === r.nonce && x.type_url === TYPES.listener);
  assert(!ack.error_detail, `listeners ACKed: ${JSON.stringify(ack.error_detail)}`);
  return r;
}

const tdsReqs = (srv, from = 0) => srv.requests.slice(from).filter((r) => r.type_url === TYPES.toolset);

module.exports = {
  /* X1, X3, X7: one stream, wildcards in order, node in the first request. */
  async x3_subscription_order(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion({ args: ['--service-node', 'cli-node'] });
    await initial(srv);
    await sleep(300);
    eq(srv.streams.length, 1, 'one DeltaAggregatedResources stream (X1)');
    const first = srv.requests.slice(0, 5);
    eq(first.map((r) => r.type_url), ORDER, 'X3 order');
    for (const r of first) {
      eq(r.resource_names_subscribe, [], `${r.type_url}: wildcard (empty subscribe)`);
      eq(r.response_nonce, '', 'no nonce in a first request');
      assert(!r.error_detail, 'no error_detail in a first request');
    }
    for (const r of first) assert(r.node, `X7: node in ${r.type_url} (Envoy's delta client repeats it)`);
    eq(first[0].node && first[0].node.id, 'cli-node', 'X7: --service-node wins');
    eq(first[0].node && first[0].node.cluster, 'edge', 'X7: node.cluster');
    eq(srv.requests.length, 5, 'nothing but the five subscriptions');
    await arion.waitLog(/connected to cluster xds_cluster \(127\.0\.0\.1:\d+\)/);
    const st = await ctx.xds();
    if (st) eq(st.connection.state, 'CONNECTED', '/xds connection state');
  },

  /* G1: ACK = next request echoes the nonce, no error_detail. */
  async g1_ack_after_good_config(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    const resp = srv.send({ type_url: 'cluster', system_version_info: 'v1',
      resources: [{ name: 'api', version: '1', resource: cluster('api') }, { name: 'web', version: '1', resource: cluster('web') }] });
    const ack = await srv.waitRequest((r) => r.type_url === TYPES.cluster && r.response_nonce === resp.nonce);
    assert(!ack.error_detail, 'ACK has no error_detail');
    eq(ack.resource_names_subscribe, [], 'an ACK changes no subscription');
    await arion.waitLog(new RegExp(`ACK Cluster nonce ${resp.nonce} version 'v1' \\(2 updated`));
    const st = await ctx.xds();
    if (st) {
      const c = st.types.find((t) => t.type_url === TYPES.cluster);
      eq(c.last_acked_nonce, resp.nonce, '/xds last_acked_nonce');
      eq(c.resources.map((r) => [r.name, r.version]), [['api', '1'], ['web', '1']], '/xds held versions');
    }
  },

  /* X15 (and G1/G7/D5): any resource failing decoding or conversion NACKs the
   * whole response; the previous version stays in force. */
  async x15_nack_whole_response(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const st1 = await initial(srv);
    const r1 = srv.send({ type_url: 'cluster', system_version_info: 'v1',
      resources: [{ name: 'api', version: '1', resource: cluster('api') }] });
    await srv.waitRequest((r) => r.response_nonce === r1.nonce);
    // v2: api updated fine, payments undecodable -> nothing applied
    const r2 = srv.send({ type_url: 'cluster', system_version_info: 'v2', resources: [
      { name: 'api', version: '2', resource: cluster('api', { connect_timeout: '1s' }) },
      { name: 'payments', version: '2', raw_any: { type_url: TYPES.cluster, value_b64: Buffer.from([0x0a, 0xff, 0xff, 0x01]).toString('base64') } },
    ] });
    const nack = await srv.waitRequest((r) => r.response_nonce === r2.nonce);
    assert(nack.error_detail, 'NACK carries error_detail');
    assert(/'payments'/.test(nack.error_detail.message), `NACK names payments: ${nack.error_detail.message}`);
    assert(!/'api'/.test(nack.error_detail.message), 'NACK does not blame api');
    await arion.waitLog(new RegExp(`\\[warning\\]\\[xds\\] NACK Cluster nonce ${r2.nonce}: .*'payments'`));
    // conversion failure (connect_timeout must be > 0), as in xds-frame-by-frame.txt
    const r3 = srv.send({ type_url: 'cluster', system_version_info: 'v3', resources: [
      { name: 'api', version: '3', resource: cluster('api', { connect_timeout: '2s' }) },
      { name: 'payments', version: '3', resource: cluster('payments', { connect_timeout: '0s' }) },
    ] });
    const n3 = await srv.waitRequest((r) => r.response_nonce === r3.nonce);
    assert(n3.error_detail && /payments.*connect_timeout/.test(n3.error_detail.message),
      `conversion failure NACKed naming payments: ${JSON.stringify(n3.error_detail)}`);
    assert(!/'api'/.test(n3.error_detail.message), 'the conversion NACK does not blame api');
    // previous version in force: what arion reports holding on a new stream
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    const c = reqsOf(srv, st2.id, TYPES.cluster)[0];
    eq(c.initial_resource_versions, { api: '1' }, 'X15/D5: only v1 held after the NACKs');
    const st = await ctx.xds();
    if (st) {
      const t = st.types.find((x) => x.type_url === TYPES.cluster);
      eq(t.resources.map((r) => [r.name, r.version]), [['api', '1']], '/xds held versions');
      assert(t.nacks >= 1 && /payments/.test(t.last_error), '/xds last_error');
    }
  },

  /* X16: application failures are NACKed naming each resource; the rest apply. */
  async x16_nack_names_each_failed_resource(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    await arion.waitLog(/connected to cluster/);
    // xds_cluster is static: xDS cannot replace it (an application error)
    const r1 = srv.send({ type_url: 'cluster', system_version_info: 'v1', resources: [
      { name: 'api', version: '1', resource: cluster('api') },
      { name: 'xds_cluster', version: '1', resource: cluster('xds_cluster') },
      { name: 'web', version: '1', resource: cluster('web') },
    ] });
    const nack = await srv.waitRequest((r) => r.response_nonce === r1.nonce);
    assert(nack.error_detail, 'NACK');
    const m = nack.error_detail.message;
    assert(/'xds_cluster'/.test(m), `names xds_cluster: ${m}`);
    assert(!/'api'/.test(m) && !/'web'/.test(m), `does not name the applied ones: ${m}`);
    await arion.waitLog(/NACK Cluster nonce .*xds_cluster/);
  },

  /* G3: removal through removed_resources. */
  async g3_removal(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const st1 = await initial(srv);
    const r1 = srv.send({ type_url: 'cla', system_version_info: 'e1', resources: [
      { name: 'api', version: '1', resource: cla('api', 8080) }, { name: 'web', version: '1', resource: cla('web', 8081) }] });
    await srv.waitRequest((r) => r.response_nonce === r1.nonce && !r.error_detail);
    const r2 = srv.send({ type_url: 'cla', system_version_info: 'e2', removed_resources: ['web'] });
    await srv.waitRequest((r) => r.response_nonce === r2.nonce && !r.error_detail);
    await arion.waitLog(new RegExp(`ACK ClusterLoadAssignment nonce ${r2.nonce} .*0 updated, 1 removed`));
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    eq(reqsOf(srv, st2.id, TYPES.cla)[0].initial_resource_versions, { api: '1' }, 'web is gone (G3, D6)');
  },

  /* X18, X5, D1, D7: the server dies; arion retries with backoff 1 s, 2 s,
   * 4 s (each jittered 20% either way, inside 1 s to 20 s) and, on the new stream, sends
   * initial_resource_versions for what it held. */
  async x18_reconnect_backoff(ctx) {
    let srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    const r1 = srv.send({ type_url: 'cluster', system_version_info: 'v1', resources: [
      { name: 'api', version: '7', resource: cluster('api') }, { name: 'web', version: '3', resource: cluster('web') }] });
    await srv.waitRequest((r) => r.response_nonce === r1.nonce);
    const r2 = srv.send({ type_url: 'listener', system_version_info: 'l1', resources: [
      { name: 'bad', version: '1', raw_any: { type_url: TYPES.cluster, value_b64: '' } }] });
    await srv.waitRequest((r) => r.response_nonce === r2.nonce && r.error_detail);
    const from = arion.lines.length;
    const tDead = Date.now();
    srv.stop();
    await sleep(4500);
    srv = await ctx.server(0);
    const st = await srv.waitStream(1, 12000);
    const dt = st.t - tDead;
    // attempts at ~1 s, ~3 s (2.6..3.6), ~7 s (5.8..8.4): the one after the restart at 4.5 s
    assert(dt >= 5000 && dt <= 10000, `reconnected ${dt} ms after the server died (expected 5.8..8.4 s, tolerance 5..10 s)`);
    const delays = arion.lines.slice(from).map((l) => /retrying in (\d+) ms/.exec(l.text)).filter(Boolean).map((m) => Number(m[1]));
    assert(delays.length >= 3, `three retries logged: ${delays}`);
    assert(delays[0] >= 1000 && delays[0] <= 1200, `first delay ~1 s, never under: ${delays}`);
    assert(delays[1] >= 1600 && delays[1] <= 2400, `second delay ~2 s: ${delays}`);
    assert(delays[2] >= 3200 && delays[2] <= 4800, `third delay ~4 s: ${delays}`);
    await initial(srv, 1);
    const reqs = srv.requests.slice(0, 5);
    eq(reqs.map((r) => r.type_url), ORDER, 'X3 order again');
    eq(reqs[1].initial_resource_versions, { api: '7', web: '3' }, 'X5: what was held');
    eq(reqs[3].initial_resource_versions, {}, 'D5: a NACKed listener is not held');
    for (const r of reqs) {
      eq(r.response_nonce, '', 'D1: no nonce from the old stream');
      eq(r.resource_names_unsubscribe, [], 'D7: nothing to unsubscribe');
    }
    assert(reqs[0].node && reqs[0].node.id === 'arion-e2e', 'X7: node on the new stream');
  },

  /* X9: several grpc_services: the first has nothing listening; after 10 s
   * without a connection arion tries the second. */
  async x9_cycle_to_second_grpc_service(ctx) {
    const srv = await ctx.server(1);
    const t0 = Date.now();
    const arion = ctx.arion({ services: [
      { name: 'xds_dead', ports: [ctx.port(0), ctx.port(2)] },
      { name: 'xds_live', ports: [ctx.port(1)] },
    ] });
    const st = await srv.waitStream(1, 20000);
    const dt = st.t - t0;
    assert(dt >= 9000 && dt <= 15000, `second grpc_service reached after ${dt} ms (expected ~10 s)`);
    await initial(srv, 1);
    await arion.waitLog(/trying cluster xds_live \(X9\)/);
    // endpoints of xds_dead were used round-robin
    assert(arion.logged(new RegExp(`xds_dead \\(127\\.0\\.0\\.1:${ctx.port(0)}\\)`)) &&
      arion.logged(new RegExp(`xds_dead \\(127\\.0\\.0\\.1:${ctx.port(2)}\\)`)), 'both endpoints of xds_dead tried');
    await arion.waitLog(/connected to cluster xds_live/);
  },

  /* X6: a response over 10 MiB is refused by the gRPC decoder; one under it is not. */
  async x6_response_over_10mib_refused(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    const big = srv.send({ type_url: 'cluster', system_version_info: 'v1', pad_bytes: 9 << 20,
      resources: [{ name: 'api', version: '1', resource: cluster('api') }] });
    await srv.waitRequest((r) => r.response_nonce === big.nonce && !r.error_detail, 15000);
    const huge = srv.send({ type_url: 'cluster', system_version_info: 'v2', pad_bytes: 11 << 20,
      resources: [{ name: 'web', version: '1', resource: cluster('web') }] });
    await arion.waitLog(/failed: gRPC status 8: .*(larger than max|message larger)/i, 15000);
    const st2 = await initial(srv, 2);
    assert(!srv.requests.some((r) => r.response_nonce === huge.nonce), 'the oversize response is never answered');
    eq(reqsOf(srv, st2.id, TYPES.cluster)[0].initial_resource_versions, { api: '1' }, 'nothing of it applied');
  },

  /* xds-frame-by-frame.txt "Both sides talk at once": the server pushes two
   * updates without waiting; arion answers both in order, the first one
   * (stale for the server) first, the latest last; nothing is lost. */
  async stale_nonce(ctx) {
    const srv = await ctx.server();
    ctx.arion();
    const st1 = await initial(srv);
    const a = srv.send({ type_url: 'cla', system_version_info: 'v7', resources: [{ name: 'users', version: '7', resource: cla('users', 8080) }] });
    const b = srv.send({ type_url: 'cla', system_version_info: 'v8', resources: [{ name: 'users', version: '8', resource: cla('users', 8081) }] });
    await srv.waitRequest((r) => r.response_nonce === b.nonce);
    await sleep(300);
    const answers = reqsOf(srv, st1.id, TYPES.cla).filter((r) => r.response_nonce);
    eq(answers.map((r) => r.response_nonce), [a.nonce, b.nonce], 'answers in order');
    eq(answers.map((r) => r.stale), [true, false], 'the first answer is stale for the server, the last is current');
    assert(answers.every((r) => !r.error_detail), 'both ACKed');
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    eq(reqsOf(srv, st2.id, TYPES.cla)[0].initial_resource_versions, { users: '8' }, 'the latest version held');
  },

  /* D3 and D2 end to end: a wrong Any type and a name twice are NACKed. */
  async d2_d3_protocol_errors(ctx) {
    const srv = await ctx.server();
    ctx.arion();
    await initial(srv);
    const r1 = srv.send({ type_url: 'cluster', resources: [{ name: 'l', version: '1', resource: { '@type': TYPES.listener, name: 'l' } }] });
    const n1 = await srv.waitRequest((r) => r.response_nonce === r1.nonce);
    assert(n1.error_detail && /D3/.test(n1.error_detail.message), `D3 NACK: ${JSON.stringify(n1.error_detail)}`);
    const r2 = srv.send({ type_url: 'cluster', resources: [{ name: 'a', version: '1', resource: cluster('a') }], removed_resources: ['a'] });
    const n2 = await srv.waitRequest((r) => r.response_nonce === r2.nonce);
    assert(n2.error_detail && /D2/.test(n2.error_detail.message), `D2 NACK: ${JSON.stringify(n2.error_detail)}`);
  },

  /* TLS to the control plane: mTLS with the transport_socket of the xDS
   * cluster (secrets by name from static_resources.secrets); the server
   * sees arion's certificate, configuration arrives and is ACKed. */
  async tls_mtls_config_arrives(ctx) {
    const pki = ctx.pki();
    const srv = await ctx.server(0, pki.serverTls(true));
    const arion = ctx.arion({ tls: tlsOpts(pki) });
    const st = await initial(srv);
    eq(st.security, 'ssl', 'the stream runs over TLS');
    eq(st.peer_cn, 'arion', 'arion presented its client certificate');
    const resp = srv.send({ type_url: 'cluster', system_version_info: 'v1', resources: [{ name: 'api', version: '1', resource: cluster('api') }] });
    const ack = await srv.waitRequest((r) => r.type_url === TYPES.cluster && r.response_nonce === resp.nonce);
    assert(!ack.error_detail, 'ACK (no error_detail)');
    await arion.waitLog(/connected to cluster xds_cluster \(127\.0\.0\.1:\d+\) over mTLS/);
    await arion.waitLog(new RegExp(`ACK Cluster nonce ${resp.nonce} version 'v1' \\(1 updated`));
    const x = await ctx.xds();
    if (x) {
      eq(x.connection.channel, 'mTLS', '/xds connection.channel');
      eq(x.connection.servers[0].sni, 'xds.test', '/xds servers[0].sni');
    }
  },

  /* UpstreamTlsContext.sni goes out as SNI, and only then. A bare TLS
   * server records what arrives. (Without sni, gRPC 1.51 sends the
   * endpoint's IP address where Envoy sends nothing: docs/configuration.md.) */
  async tls_sni_sent(ctx) {
    const tls = require('tls');
    const pki = ctx.pki();
    const seen = [];
    const probe = tls.createServer({ cert: pki.read(pki.server.crt), key: pki.read(pki.server.key), ALPNProtocols: ['h2'] },
      (sock) => { seen.push(sock.servername); sock.destroy(); });
    await new Promise((r) => probe.listen(ctx.port(0), '127.0.0.1', r));
    ctx.servers.push({ stop: () => probe.close() });
    const withSni = ctx.arion({ tls: tlsOpts(pki, { cert: false }), noAdmin: true, file: 'sni.yaml' });
    for (let i = 0; i < 100 && seen.length === 0; i++) await sleep(100);
    await withSni.stop();
    eq(seen[0], 'xds.test', 'SNI from UpstreamTlsContext.sni');
    const n = seen.length;
    ctx.arion({ tls: tlsOpts(pki, { cert: false, sni: null }), noAdmin: true, file: 'nosni.yaml' });
    for (let i = 0; i < 100 && seen.length === n; i++) await sleep(100);
    assert(seen.length > n, 'the second arion reached the probe');
    assert(seen[n] !== 'xds.test', `without sni, not the name either (got ${seen[n]})`);
  },

  /* A control plane whose certificate the configured CA did not sign is
   * refused: no stream, nothing applied, a log line that says why. */
  async tls_wrong_ca_refused(ctx) {
    const pki = ctx.pki();
    const srv = await ctx.server(0, pki.serverTls(true));
    const arion = ctx.arion({ tls: tlsOpts(pki, { ca: pki['other-ca'].crt }) });
    await refusedAndRetrying(arion, /stream to cluster xds_cluster \(127\.0\.0\.1:\d+\) failed: .*certificate verify failed/i);
    eq(srv.streams.length, 0, 'no stream reached the control plane');
    const x = await ctx.xds();
    if (x) {
      assert(x.connection.state !== 'CONNECTED', `/xds state ${x.connection.state}`);
      assert(x.types.every((t) => t.responses === 0), 'no configuration received');
    }
  },

  /* The CA signed it, but no SAN matches the cluster's matchers: refused,
   * naming the certificate's SANs and the matchers. */
  async tls_san_mismatch_refused(ctx) {
    const pki = ctx.pki();
    const srv = await ctx.server(0, pki.serverTls(true));
    const arion = ctx.arion({ tls: tlsOpts(pki, { san: '[{san_type: DNS, matcher: {exact: other.test}}]' }) });
    await refusedAndRetrying(arion, /failed: .*the control plane's certificate \(SANs: DNS:xds\.test, IP:127\.0\.0\.1\) matches none of the SAN matchers \(DNS exact 'other\.test'\)/);
    eq(srv.streams.length, 0, 'no stream reached the control plane');
  },

  /* A control plane that requires a client certificate refuses arion
   * without one; the same arion reaches one that does not require it. */
  async tls_client_without_cert_refused(ctx) {
    const pki = ctx.pki();
    const srv = await ctx.server(0, pki.serverTls(true));
    const arion = ctx.arion({ tls: tlsOpts(pki, { cert: false }), noAdmin: true });
    await arion.waitLog(/connecting to cluster xds_cluster \(127\.0\.0\.1:\d+\) over TLS, attempt 1/);
    await refusedAndRetrying(arion, /stream to cluster xds_cluster \(127\.0\.0\.1:\d+\) failed: gRPC status 14/);
    eq(srv.streams.length, 0, 'the control plane let no stream in');
    await arion.stop();
    const srv2 = await ctx.server(1, pki.serverTls(false));
    ctx.arion({ tls: tlsOpts(pki, { cert: false }), noAdmin: true, file: 'arion2.yaml',
      services: [{ name: 'xds_cluster', ports: [ctx.port(1)] }] });
    const st = await initial(srv2);
    eq(st.peer_cn, undefined, 'no client certificate');
  },

  /* Plaintext to a control plane that is not on loopback is refused at
   * start, in --mode validate and in serve, naming the cluster and what to
   * do; `xds: {allow_plaintext: true}` lets it through with a warning. */
  async plaintext_remote_refused(ctx) {
    const svc = [{ name: 'xds_remote', address: '198.18.0.1', ports: [18000] }];
    for (const mode of ['validate', 'serve']) {
      const a = ctx.arion({ services: svc, noAdmin: true, args: mode === 'validate' ? ['--mode', 'validate'] : [], file: `${mode}.yaml` });
      eq(await a.waitExit(), 1, `${mode}: exit 1 (configuration invalid)`);
      assert(a.logged(/clusters\[0\]: xDS cluster 'xds_remote' would reach its control plane at 198\.18\.0\.1:18000 in plaintext/),
        `${mode}: the error names the cluster and the address`);
      assert(a.logged(/envoy\.transport_sockets\.tls/) && a.logged(/set `xds: \{allow_plaintext: true\}`/), `${mode}: and says what to do`);
      assert(!a.logged(/connecting to cluster/), `${mode}: nothing was attempted`);
    }
    const ok = ctx.arion({ services: svc, noAdmin: true, args: ['--mode', 'validate'], extra: ['xds: {allow_plaintext: true}'], file: 'allowed.yaml' });
    eq(await ok.waitExit(), 0, 'allowed explicitly');
    assert(ok.logged(/reaches 198\.18\.0\.1:18000 in plaintext \(xds\.allow_plaintext\)/), 'with a warning');
    const lo = ctx.arion({ noAdmin: true, args: ['--mode', 'validate'], file: 'loopback.yaml' });
    eq(await lo.waitExit(), 0, 'plaintext on loopback needs nothing');
    assert(!lo.logged(/in plaintext/), 'and warns about nothing');
  },

  /* X18: the jitter differs between processes. Two arions started together
   * against a control plane that is down retry on X18's schedule (1 s, then
   * 2 s, 4 s, 8 s, each 20 % either way, never under 1 s), and not in
   * lockstep, not even the first retry: libc's random(), unseeded, gave
   * every process the same delays (1000, 1961, 3514, ...), and a jitter
   * that only shortened left every first retry at exactly 1 s. */
  async x18_jitter_differs_between_processes(ctx) {
    const a = ctx.arion({ noAdmin: true, file: 'a.yaml' });
    const b = ctx.arion({ noAdmin: true, file: 'b.yaml' });
    const delays = async (arion) => {
      let from = 0;
      const out = [];
      while (out.length < 4) {
        const l = await arion.waitLog(/retrying in (\d+) ms \(X18\)/, 15000, from);
        out.push(Number(/retrying in (\d+) ms/.exec(l.text)[1]));
        from = l.index + 1;
      }
      return out;
    };
    const [da, db] = await Promise.all([delays(a), delays(b)]);
    for (const d of [da, db]) {
      assert(d[0] >= 1000 && d[0] <= 1200, `first ~1 s, never under: ${d}`);
      assert(d[1] >= 1600 && d[1] <= 2400, `second ~2 s: ${d}`);
      assert(d[2] >= 3200 && d[2] <= 4800, `third ~4 s: ${d}`);
      assert(d[3] >= 6400 && d[3] <= 9600, `fourth ~8 s: ${d}`);
    }
    // four jittered delays drawn from 201, 801, 1601 and 3201 values: equal only with a shared seed
    assert(JSON.stringify(da) !== JSON.stringify(db), `the two processes retry in lockstep: ${da} / ${db}`);
  },

  /* D5, the sequence go-control-plane showed: snapshot A holds listeners
   * holder and gone-l; snapshot B drops gone-l and adds conflict, on
   * holder's address: the removal applies, conflict fails, the response is
   * NACKed (X16). The control plane rolls back to A and restarts. Arion's
   * reconnect must not claim gone-l (it was removed), so the control plane
   * sends it again; claiming it, Arion would never get it back. */
  async d5_removed_in_partial_nack_comes_back(ctx) {
    const A = { version: 'A', listener: [
      { name: 'gone-l', version: 'A', resource: listener('gone-l', 81) },
      { name: 'holder', version: 'A', resource: listener('holder', 80) }] };
    const B = { version: 'B', listener: [
      { name: 'conflict', version: 'B', resource: listener('conflict', 80) },
      { name: 'holder', version: 'A', resource: listener('holder', 80) }] };
    let srv = await ctx.server();
    srv.setSnapshot(A);
    const arion = ctx.arion();
    const st1 = await initial(srv);
    await srv.waitRequest((r) => r.stream === st1.id && r.type_url === TYPES.listener && r.response_nonce && !r.error_detail);
    await arion.waitLog(/ACK Listener nonce \S+ version 'A' \(2 updated, 0 removed\)/);
    const from = srv.requests.length;
    srv.setSnapshot(B);
    const nack = await srv.waitRequest((r) => r.type_url === TYPES.listener && r.response_nonce, 10000, from);
    const sentB = srv.responses[srv.responses.length - 1];
    eq([sentB.resources, sentB.removed], [['conflict'], ['gone-l']], 'B as a delta: conflict added, gone-l removed');
    assert(nack.error_detail, 'B is NACKed');
    const m = nack.error_detail.message;
    assert(/X16/.test(m) && /'conflict'/.test(m) && /already used by listener 'holder'/.test(m), `the NACK names conflict and why: ${m}`);
    assert(!/gone-l/.test(m), `the removal is not blamed: ${m}`);
    let x = await ctx.xds();
    if (x) {
      const l = x.types.find((t) => t.type_url === TYPES.listener);
      eq(l.resources.map((r) => [r.name, r.version]), [['holder', 'A']], 'D5: /xds holds holder only (gone-l removed, conflict never held)');
      eq(await activeListeners(ctx), [['holder', 'A']], '/config_dump: gone-l is gone, conflict never took effect');
    }
    // roll back to A and restart the control plane
    srv.stop();
    srv = await ctx.server(0);
    srv.setSnapshot(A);
    const st2 = await initial(srv);
    const first = reqsOf(srv, st2.id, TYPES.listener)[0];
    eq(first.initial_resource_versions, { holder: 'A' }, 'D5: the reconnect claims exactly what is held');
    const back = await srv.waitRequest((r) => r.type_url === TYPES.listener && r.response_nonce && !r.error_detail, 10000);
    const sentA = srv.responses.find((r) => r.nonce === back.response_nonce);
    eq([sentA.resources, sentA.removed], [['gone-l'], []], 'the control plane sends gone-l again');
    await arion.waitLog(new RegExp(`ACK Listener nonce ${back.response_nonce} version 'A' \\(1 updated, 0 removed\\)`));
    x = await ctx.xds();
    if (x) {
      const l = x.types.find((t) => t.type_url === TYPES.listener);
      eq(l.resources.map((r) => [r.name, r.version]), [['gone-l', 'A'], ['holder', 'A']], '/xds: gone-l is back');
      eq(await activeListeners(ctx), [['gone-l', 'A'], ['holder', 'A']], '/config_dump: gone-l is back');
    }
  },

  /* Resource TTLs, as Envoy has them: arion says it honours them
   * (client_features); a resource sent with a ttl is removed when it passes
   * (as if the control plane had removed it); heartbeats (no body, the
   * version held, a ttl) keep one alive without an update; a resource sent
   * without a ttl stays. Envoy's statistics count each expiry as an update
   * and its version becomes the empty one; the reconnect claims neither. */
  async ttl_expiry_and_heartbeats(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const st1 = await initial(srv);
    const cf = srv.requests[0].node && srv.requests[0].node.client_features;
    assert(cf && cf.includes('xds.config.supports-resource-ttl'), `client_features: ${JSON.stringify(cf)}`);
    const r1 = srv.send({ type_url: 'cluster', system_version_info: 'v1', resources: [
      { name: 'short', version: '1', ttl: '1s', resource: cluster('short') },
      { name: 'beat', version: '1', ttl: '2s', resource: cluster('beat') },
      { name: 'long', version: '1', resource: cluster('long') }] });
    await srv.waitRequest((r) => r.response_nonce === r1.nonce && !r.error_detail);
    const tAck = Date.now();
    // heartbeats for beat every 500 ms for 3.5 s: well past its 2 s TTL
    let tBeat = 0;
    for (let i = 0; i < 7; i++) {
      await sleep(500);
      const hb = srv.send({ type_url: 'cluster', system_version_info: 'v1', resources: [{ name: 'beat', version: '1', ttl: '2s' }] });
      await srv.waitRequest((r) => r.response_nonce === hb.nonce);
      const a = srv.requests.find((r) => r.response_nonce === hb.nonce);
      assert(!a.error_detail, `heartbeat ACKed: ${JSON.stringify(a.error_detail)}`);
      await arion.waitLog(new RegExp(`ACK Cluster nonce ${hb.nonce} version 'v1' \\(0 updated, 0 removed, 1 heartbeat\\)`));
      tBeat = Date.now();
    }
    const short = await arion.waitLog(/Cluster 'short': TTL passed without a refresh from the control plane; removed as if the control plane had removed it/, 5000);
    assert(short.t - tAck >= 900, `short expired ${short.t - tAck} ms after the ACK (TTL 1 s)`);
    assert(!arion.logged(/'beat': TTL passed/), 'heartbeats kept beat');
    let x = await ctx.xds();
    if (x) {
      const c = x.types.find((t) => t.type_url === TYPES.cluster);
      eq(c.resources.map((r) => r.name), ['beat', 'long'], '/xds: short is gone, beat and long held');
      const beat = c.resources.find((r) => r.name === 'beat');
      assert(beat.ttl_ms > 0 && beat.ttl_ms <= 2000, `/xds: beat's TTL left: ${beat.ttl_ms}`);
      assert(!('ttl_ms' in c.resources.find((r) => r.name === 'long')), 'long has no TTL');
    }
    // no more heartbeats: beat goes 2 s after the last one
    const gone = await arion.waitLog(/Cluster 'beat': TTL passed/, 8000);
    assert(gone.t - tBeat >= 1500, `beat expired ${gone.t - tBeat} ms after the last heartbeat (TTL 2 s)`);
    x = await ctx.xds();
    if (x) {
      const c = x.types.find((t) => t.type_url === TYPES.cluster);
      eq(c.resources.map((r) => [r.name, r.version]), [['long', '1']], '/xds: only long is held');
      eq([c.ttl_expiries, c.ttl_expired, c.ttl_running], [2, 2, 0], '/xds: two expiries, two resources');
      const stats = await ctx.admin('/stats?format=json');
      const stat = (n) => { const e = stats.stats.find((v) => v.name === n); return e ? e.value : undefined; };
      // one response and seven heartbeat responses, plus two expiries (Envoy counts those as updates)
      eq(stat('cluster_manager.cds.update_attempt'), 10, 'cds.update_attempt');
      eq(stat('cluster_manager.cds.update_success'), 10, 'cds.update_success');
      eq(stat('cluster_manager.cds.version'), 0, "cds.version: an expiry's version_info is empty");
      eq(stat('xds.type.Cluster.ttl_expired'), 2, 'xds.type.Cluster.ttl_expired');
    }
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    eq(reqsOf(srv, st2.id, TYPES.cluster)[0].initial_resource_versions, { long: '1' }, 'expired resources are not claimed (D6)');
  },

  /* X2, X4, X14, G6 (TDS end to end): no ToolSet is asked for until a
   * listener's MCP gateway filter names one; then exactly that name is
   * subscribed, the listener warms until it arrives, the ToolSet is ACKed
   * and shown in /config_dump; when the listener goes, the name is
   * unsubscribed and the ToolSet forgotten. */
  async x4_x14_tds_subscribed_on_demand(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    await sleep(500);
    eq(tdsReqs(srv).length, 0, 'X4: no TDS request before anything references a ToolSet');
    const from = srv.requests.length;
    srv.send({ type_url: 'listener', system_version_info: 'l1', resources: [{ name: 'mcp', version: '1', resource: mcpListener('mcp', 8080, 'tools') }] });
    const sub = await srv.waitRequest((r) => r.type_url === TYPES.toolset, 10000, from);
    eq(sub.resource_names_subscribe, ['tools'], 'X4/X14: the ToolSet the filter names, by name');
    eq(sub.resource_names_unsubscribe, [], 'nothing unsubscribed');
    eq(sub.response_nonce, '', 'a first TDS request answers no nonce');
    await arion.waitLog(/on-demand type type\.googleapis\.com\/arion\.extensions\.mcp\.v3\.ToolSet: first reference, subscribing by name \(X4\)/);
    const w = await warmingListeners(ctx);
    if (w) eq(w, ['mcp'], 'G6: the listener warms until its ToolSet arrives');
    const r = srv.send({ type_url: 'toolset', system_version_info: 't1', resources: [{ name: 'tools', version: '1', resource: toolset('tools', ['gh', 'jira']) }] });
    const ack = await srv.waitRequest((x) => x.response_nonce === r.nonce);
    assert(!ack.error_detail, `ToolSet ACKed: ${JSON.stringify(ack.error_detail)}`);
    await arion.waitLog(new RegExp(`ACK ToolSet nonce ${r.nonce} version 't1' \\(1 updated`));
    if (w) {
      eq(await toolsets(ctx), [['tools', '1']], '/config_dump: the ToolSet');
      eq(await activeListeners(ctx), [['mcp', '1']], 'the listener is warm');
      eq(await warmingListeners(ctx), [], 'nothing warming');
    }
    const from2 = srv.requests.length;
    await pushListeners(srv, arion, 'l2', [], ['mcp']);
    const unsub = await srv.waitRequest((x) => x.type_url === TYPES.toolset && x.resource_names_unsubscribe.length > 0, 10000, from2);
    eq([unsub.resource_names_subscribe, unsub.resource_names_unsubscribe], [[], ['tools']], 'X4: the last reference gone, unsubscribed');
    await arion.waitLog(/ToolSet 'tools': nothing references it any more; forgotten \(X4\)/);
    if (w) eq(await toolsets(ctx), [], '/config_dump: the ToolSet is forgotten');
  },

  /* G4 with TDS: subscriptions change by difference; a reconnect resends
   * the whole explicit set (D7) with what is held (X5). */
  async g4_tds_subscriptions_change_by_difference(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const st1 = await initial(srv);
    let from = srv.requests.length;
    await pushListeners(srv, arion, 'l1', [['a', '1', mcpListener('a', 8080, 'ts-a')], ['b', '1', mcpListener('b', 8081, 'ts-b')]]);
    const first = await srv.waitRequest((r) => r.type_url === TYPES.toolset, 10000, from);
    eq(first.resource_names_subscribe, ['ts-a', 'ts-b'], 'both names, in one request');
    const r1 = srv.send({ type_url: 'toolset', system_version_info: 't1', resources: [
      { name: 'ts-a', version: '1', resource: toolset('ts-a') }, { name: 'ts-b', version: '1', resource: toolset('ts-b') }] });
    await srv.waitRequest((x) => x.response_nonce === r1.nonce && !x.error_detail);
    from = srv.requests.length;
    await pushListeners(srv, arion, 'l2', [['a', '2', mcpListener('a', 8080, 'ts-c')]]);
    const chg = await srv.waitRequest((r) => r.type_url === TYPES.toolset && !r.response_nonce, 10000, from);
    // make before break: listener a's new version warms on ts-c while the
    // old one serves on ts-a, so ts-a stays subscribed until the switch
    eq([chg.resource_names_subscribe, chg.resource_names_unsubscribe], [['ts-c'], []], 'G4: only the name added');
    await sleep(300);
    eq(tdsReqs(srv, from).length, 1, 'one request for the change');
    const w = await warmingListeners(ctx);
    if (w) eq(w, ['a'], 'a warms on ts-c');
    from = srv.requests.length;
    const r2 = srv.send({ type_url: 'toolset', system_version_info: 't2', resources: [{ name: 'ts-c', version: '1', resource: toolset('ts-c') }] });
    const un = await srv.waitRequest((r) => r.type_url === TYPES.toolset && r.resource_names_unsubscribe.length > 0, 10000, from);
    eq([un.resource_names_subscribe, un.resource_names_unsubscribe], [[], ['ts-a']], 'G4: only the name dropped, once a serves on ts-c');
    assert(un.response_nonce === r2.nonce || srv.requests.slice(from).some((x) => x.response_nonce === r2.nonce && !x.error_detail), 'ts-c ACKed');
    if (w) eq(await toolsets(ctx), [['ts-b', '1'], ['ts-c', '1']], 'ts-a forgotten');
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    const again = await srv.waitRequest((r) => r.stream === st2.id && r.type_url === TYPES.toolset, 10000);
    eq(again.resource_names_subscribe, ['ts-b', 'ts-c'], 'D7: the whole explicit set on the new stream');
    eq(again.resource_names_unsubscribe, [], 'D7: nothing to unsubscribe');
    eq(again.initial_resource_versions, { 'ts-b': '1', 'ts-c': '1' }, 'X5/D6: what is held, ts-a no longer');
  },

  /* D4 with TDS: ToolSets not subscribed to are ignored (not applied, not
   * claimed on reconnect). */
  async d4_tds_unrequested_ignored(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const st1 = await initial(srv);
    const from = srv.requests.length;
    await pushListeners(srv, arion, 'l1', [['mcp', '1', mcpListener('mcp', 8080, 'tools')]]);
    await srv.waitRequest((r) => r.type_url === TYPES.toolset, 10000, from);
    const r = srv.send({ type_url: 'toolset', system_version_info: 't1', resources: [
      { name: 'tools', version: '1', resource: toolset('tools') }, { name: 'other', version: '7', resource: toolset('other') }] });
    const ack = await srv.waitRequest((x) => x.response_nonce === r.nonce);
    assert(!ack.error_detail, 'ACKed: an unrequested resource is no error');
    await arion.waitLog(/ToolSet nonce \S+: ignored 1 resources not subscribed to \(D4\)/);
    const t = await toolsets(ctx);
    if (t) eq(t, [['tools', '1']], 'D4: other was not applied');
    srv.closeStream();
    const st2 = await initial(srv, st1.id + 1);
    const again = await srv.waitRequest((x) => x.stream === st2.id && x.type_url === TYPES.toolset, 10000);
    eq(again.initial_resource_versions, { tools: '1' }, 'D4/D6: other is not claimed');
  },

  /* D8 with TDS: interest changes between two requests are merged. In one
   * Listener response, listener b moves from ts-c to ts-d and a new
   * listener c names ts-c: ts-c is unreferenced and referenced again
   * before the next request, so the request subscribes ts-d and
   * unsubscribes nothing, and ts-c keeps serving without a resend. */
  async d8_tds_interest_changes_merge(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    let from = srv.requests.length;
    await pushListeners(srv, arion, 'l1', [['a', '1', mcpListener('a', 8080, 'ts-a')], ['b', '1', mcpListener('b', 8081, 'ts-c')]]);
    await srv.waitRequest((r) => r.type_url === TYPES.toolset, 10000, from);
    const r1 = srv.send({ type_url: 'toolset', system_version_info: 't1', resources: [
      { name: 'ts-a', version: '1', resource: toolset('ts-a') }, { name: 'ts-c', version: '1', resource: toolset('ts-c') }] });
    await srv.waitRequest((x) => x.response_nonce === r1.nonce && !x.error_detail);
    from = srv.requests.length;
    await pushListeners(srv, arion, 'l2', [['b', '2', mcpListener('b', 8081, 'ts-d')], ['c', '1', mcpListener('c', 8082, 'ts-c')]]);
    const chg = await srv.waitRequest((r) => r.type_url === TYPES.toolset && !r.response_nonce, 10000, from);
    eq([chg.resource_names_subscribe, chg.resource_names_unsubscribe], [['ts-d'], []], 'D8: remove-add of ts-c merged away');
    await sleep(300);
    eq(tdsReqs(srv, from).length, 1, 'one TDS request');
    assert(!arion.logged(/ToolSet 'ts-c': nothing references it/), 'ts-c was never forgotten');
    const t = await toolsets(ctx);
    if (t) {
      eq(t, [['ts-a', '1'], ['ts-c', '1']], 'ts-c still held');
      eq(await activeListeners(ctx), [['a', '1'], ['b', '1'], ['c', '1']], 'c is active at once: its ToolSet is there; b serves on ts-c meanwhile');
      eq(await warmingListeners(ctx), ['b'], 'b\'s version 2 warms on ts-d');
    }
  },

  /* X15 with TDS: a bad ToolSet is NACKed naming it and the field; the
   * version before it keeps serving (G7). */
  async x15_tds_bad_toolset_nacked_naming_field(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    const from = srv.requests.length;
    await pushListeners(srv, arion, 'l1', [['mcp', '1', mcpListener('mcp', 8080, 'tools')]]);
    await srv.waitRequest((r) => r.type_url === TYPES.toolset, 10000, from);
    const r1 = srv.send({ type_url: 'toolset', system_version_info: 't1', resources: [{ name: 'tools', version: '1', resource: toolset('tools') }] });
    await srv.waitRequest((x) => x.response_nonce === r1.nonce && !x.error_detail);
    const bad = toolset('tools', ['gh', 'gh']);
    const r2 = srv.send({ type_url: 'toolset', system_version_info: 't2', resources: [{ name: 'tools', version: '2', resource: bad }] });
    const nack = await srv.waitRequest((x) => x.response_nonce === r2.nonce);
    assert(nack.error_detail, 'NACK');
    const m = nack.error_detail.message;
    assert(/ToolSet 'tools': backends\[1\]\.name: 'gh' is also backends\[0\]'s name/.test(m), `names the ToolSet and the field: ${m}`);
    await arion.waitLog(new RegExp(`NACK ToolSet nonce ${r2.nonce}: .*backends\\[1\\]\\.name`));
    const r3 = srv.send({ type_url: 'toolset', system_version_info: 't3', resources: [{ name: 'tools', version: '3',
      resource: { ...toolset('tools'), tool_filter: { allow: [{ name: { safe_regex: { regex: 'get_(' } } }] } } }] });
    const n3 = await srv.waitRequest((x) => x.response_nonce === r3.nonce);
    assert(n3.error_detail && /ToolSet 'tools': tool_filter\.allow\[0\]\.name\.safe_regex\.regex: 'get_\('/.test(n3.error_detail.message),
      `a bad regex named: ${JSON.stringify(n3.error_detail)}`);
    const dump = await ctx.admin('/config_dump');
    if (dump) {
      const s = dump.configs.find((c) => c['@type'] === 'type.googleapis.com/arion.admin.v3.ToolSetsConfigDump');
      const t = s.dynamic_tool_sets[0];
      eq(t.version_info, '1', 'G7: version 1 keeps serving');
      assert(t.error_state && /safe_regex/.test(t.error_state.details), `error_state: ${JSON.stringify(t.error_state)}`);
      eq(t.client_status, 'NACKED', 'client_status');
    }
  },
  /* Envoy Gateway's listener over ADS, as its translator encodes it: a
   * security filter with HttpFilter.disabled, turned on for a route by
   * FilterConfig { config: {} } (an Any with neither type URL nor value),
   * a RouteConfiguration-level typed_per_filter_config, and its listener
   * settings (fields newer than gRPC 1.51's API copy: lib/proto/newer.c).
   * ACKed, and /config_dump shows them as Envoy would. */
  async eg_filters_disabled_per_route(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    await initial(srv);
    const FC = 'type.googleapis.com/envoy.config.route.v3.FilterConfig';
    const BA = 'envoy.filters.http.basic_auth/securitypolicy/default/policy-1';
    const l = listener('eg', 8080);
    const hcm = l.filter_chains[0].filters[0].typed_config;
    hcm.common_http_protocol_options = { headers_with_underscores_action: 'REJECT_REQUEST' };
    hcm.path_with_escaped_slashes_action = 'UNESCAPE_AND_REDIRECT';
    hcm.merge_slashes = true;
    hcm.http_filters.unshift({ name: BA, disabled: true, typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth',
      users: { inline_string: 'user1:{SHA}tESsBmE/yNY3lb6a0L6vVQEZNqw=\n' } } });
    hcm.route_config.typed_per_filter_config = { other: { '@type': FC, disabled: true } };
    hcm.route_config.virtual_hosts[0].routes[0].typed_per_filter_config = { [BA]: { '@type': FC, config: {} } };
    await pushListeners(srv, arion, 'l1', [['eg', '1', l]]);
    const dump = await ctx.admin('/config_dump');
    if (dump) {
      const ls = dump.configs.find((c) => c['@type'] === 'type.googleapis.com/envoy.admin.v3.ListenersConfigDump');
      const d = ls.dynamic_listeners.find((x) => x.name === 'eg');
      assert(d && d.active_state, `eg is active: ${JSON.stringify(d)}`);
      const h = d.active_state.listener.filter_chains[0].filters[0].typed_config;
      eq(h.http_filters[0].disabled, true, 'HttpFilter.disabled in the dump');
      eq(h.common_http_protocol_options.headers_with_underscores_action, 'REJECT_REQUEST', 'underscores');
      eq(h.path_with_escaped_slashes_action, 'UNESCAPE_AND_REDIRECT', 'escaped slashes');
      eq(h.route_config.typed_per_filter_config.other, { '@type': FC, disabled: true }, 'the table level');
      eq(h.route_config.virtual_hosts[0].routes[0].typed_per_filter_config[BA], { '@type': FC, config: {} },
        'the route turns the filter on with an empty config');
    }
  },
};
