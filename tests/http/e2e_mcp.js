'use strict';
/*
 * The control plane of tests/http/e2e_mcp.sh: tests/xds/peer's delta-ADS
 * server with two MCP backends' clusters ('ma', 'mb'), a listener on :80
 * whose HCM carries the MCP gateway filter (ToolSet 'tools'), a second on
 * :81 with ToolSet 'tools2' (the same backends, names prefixed only on
 * collision, 'add' kept for x-team: ops; issue 20 item 6), and both
 * ToolSets once Arion subscribes to them (on demand, X4/X14).
 *
 *   node e2e_mcp.js DIR
 *
 * Writes DIR/port once listening and DIR/ready once everything is ACKed.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

const dir = process.argv[2];
/* a listener on @p port whose HCM serves ToolSet @p tds on /mcp */
function mcpListener(name, port, tds) {
  const l = x.listenerHcm(name, port, { route_config: { virtual_hosts: [{ name: 'all', domains: ['*'],
    routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'not mcp' } } }] }] } },
  { statPrefix: name });
  l.filter_chains[0].filters[0].typed_config.http_filters.unshift({ name: 'arion.filters.http.mcp_gateway',
    typed_config: { '@type': 'type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3.McpGateway',
      tds: { config_name: tds } } });
  return l;
}
const lis = mcpListener('mcp', 80, 'tools');
const hcm = lis.filter_chains[0].filters[0].typed_config;
hcm.access_log = [{ name: 'envoy.access_loggers.file', typed_config: {
  '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
  path: path.join(dir, 'access.log'),
  log_format: { text_format_source: { inline_string: '%RESPONSE_CODE% tool=%MCP_TOOL% backend=%MCP_BACKEND%\n' } } } }];
const toolset = { '@type': x.TYPES.toolset, name: 'tools',
  backends: [{ name: 'a', cluster: 'ma', timeout: '5s' }, { name: 'b', cluster: 'mb', timeout: '5s' }],
  tool_filter: { deny: [{ name: { exact: 'secret' } }] } };
/* Both backends list 'secret': a__secret and b__secret, the others as
 * they are; a's 'add' only for clients sending x-team: ops. */
const lis2 = mcpListener('mcp2', 81, 'tools2');
const toolset2 = { '@type': x.TYPES.toolset, name: 'tools2',
  backends: [{ name: 'a', cluster: 'ma', timeout: '5s' }, { name: 'b', cluster: 'mb', timeout: '5s' }],
  prefix_mode: 'ON_COLLISION',
  access_rules: [{ tools: [{ name: { exact: 'add' }, backend: 'a' }],
    principals: [{ header: { name: 'x-team', string_match: { exact: 'ops' } } }] }] };

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const { sendAcked } = x.ackedSender(srv);

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [
    { name: 'ma', version: '1', resource: x.staticCluster('ma', '198.18.3.10', 9001) },
    { name: 'mb', version: '1', resource: x.staticCluster('mb', '198.18.3.11', 9001) }]);
  const r = srv.send({ type_url: 'listener', resources: [{ name: 'mcp', version: '1', resource: lis },
    { name: 'mcp2', version: '1', resource: lis2 }], removed_resources: [] });
  /* the listeners warm until their ToolSets arrive: Arion asks for them by name */
  for (const n of ['tools', 'tools2'])
    await srv.waitRequest((q) => q.type_url === TYPES.toolset &&
      (q.resource_names_subscribe || []).includes(n), 20000);
  await sendAcked('toolset', [{ name: 'tools', version: '1', resource: toolset },
    { name: 'tools2', version: '1', resource: toolset2 }]);
  await srv.waitRequest((q) => q.type_url === TYPES.listener && q.response_nonce === r.nonce, 20000);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
