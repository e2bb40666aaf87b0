'use strict';
/*
 * The control plane of bench/mcp/run: tests/xds/peer's delta-ADS server
 * giving a running arion two clusters, one per MCP backend of the run
 * ('sdk' -> 198.18.0.20:9001, 'fast' -> 198.18.0.20:9002), a listener on
 * 198.18.0.2:80 whose HCM (stat_prefix "mcp") carries the MCP gateway
 * filter, and the ToolSet 'bench' of both backends (prefix ALWAYS, so
 * the tool "echo" is "sdk__echo" and "fast__echo") once Arion asks for
 * it (on demand, X4/X14).
 *
 *   node cp.js DIR
 *
 * Writes DIR/port once listening and DIR/ready once everything is ACKed
 * (DIR/failed on an error).
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../../tests/xds/peer/server.js'));
const x = require(path.join(__dirname, '../../tests/common/xds_e2e.js'));
const { sleep } = x;

const dir = process.argv[2];
const lis = x.listenerHcm('mcp', 80, { generate_request_id: false, route_config: { virtual_hosts: [{
  name: 'all', domains: ['*'],
  routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'not mcp' } } }] }] } },
{ address: '198.18.0.2', statPrefix: 'mcp' });
const hcm = lis.filter_chains[0].filters[0].typed_config;
hcm.http_filters.unshift({ name: 'arion.filters.http.mcp_gateway', typed_config: {
  '@type': 'type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3.McpGateway',
  tds: { config_name: 'bench' } } });
const toolset = { '@type': x.TYPES.toolset, name: 'bench', prefix_mode: 'ALWAYS',
  backends: [{ name: 'sdk', cluster: 'sdk', timeout: '10s' }, { name: 'fast', cluster: 'fast', timeout: '10s' }] };
const cluster = (name, port) => {
  const c = x.staticCluster(name, '198.18.0.20', port);
  /* the load is tens of concurrent calls: keep the breakers out of it */
  c.circuit_breakers = { thresholds: [{ max_connections: 4096, max_pending_requests: 4096, max_requests: 4096 }] };
  return c;
};

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const { sendAcked } = x.ackedSender(srv);

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [
    { name: 'sdk', version: '1', resource: cluster('sdk', 9001) },
    { name: 'fast', version: '1', resource: cluster('fast', 9002) }]);
  const r = srv.send({ type_url: 'listener', resources: [{ name: 'mcp', version: '1', resource: lis }],
    removed_resources: [] });
  await srv.waitRequest((q) => q.type_url === TYPES.toolset &&
    (q.resource_names_subscribe || []).includes('bench'), 20000);
  await sendAcked('toolset', [{ name: 'bench', version: '1', resource: toolset }]);
  await srv.waitRequest((q) => q.type_url === TYPES.listener && q.response_nonce === r.nonce, 20000);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  await sleep(1e9);
})().catch((e) => {
  process.stderr.write(`bench/mcp/cp.js: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
