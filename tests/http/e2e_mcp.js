'use strict';
/*
 * The control plane of tests/http/e2e_mcp.sh: tests/xds/peer's delta-ADS
 * server with two MCP backends' clusters ('ma', 'mb'), a listener on :80
 * whose HCM carries the MCP gateway filter (ToolSet 'tools'), a second on
 * :81 with ToolSet 'tools2' (the same backends, names prefixed only on
 * collision, 'add' kept for x-team: ops; issue 20 item 6), a third on
 * :82, mTLS (DIR/pki, made by e2e_mcp.sh), with ToolSet 'tools3' whose
 * access rules match the client certificate's SANs, and the ToolSets
 * once Arion subscribes to them (on demand, X4/X14).
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

/* tools3: a's 'add' for a DNS SAN under .ops.test, b's 'search' for the
 * URI SAN spiffe://arion.test/ops (client_cert_san). Only when DIR/pki
 * has the certificates: e2e_mcp.sh makes them, e2e_mcp26.sh (which uses
 * this control plane too) does not, and gets :80 and :81 alone. */
const mtls = fs.existsSync(path.join(dir, 'pki', 'srv.pem'));
const rd = (f) => fs.readFileSync(path.join(dir, 'pki', f), 'utf8');
const lis3 = mcpListener('mcp3', 82, 'tools3');
lis3.filter_chains[0].transport_socket = { name: 'envoy.transport_sockets.tls', typed_config: {
  '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  require_client_certificate: true,
  common_tls_context: {
    tls_certificate_sds_secret_configs: [{ name: 'mcp-cert', sds_config: { ads: {} } }],
    validation_context_sds_secret_config: { name: 'mcp-ca', sds_config: { ads: {} } } } } };
const secrets = !mtls ? [] : [{ name: 'mcp-cert', version: '1', resource: { '@type': x.TYPES.secret, name: 'mcp-cert',
  tls_certificate: { certificate_chain: { inline_string: rd('srv.pem') },
    private_key: { inline_string: rd('srv.key') } } } },
{ name: 'mcp-ca', version: '1', resource: { '@type': x.TYPES.secret, name: 'mcp-ca',
  validation_context: { trusted_ca: { inline_string: rd('cca.pem') } } } }];
const toolset3 = { '@type': x.TYPES.toolset, name: 'tools3',
  backends: [{ name: 'a', cluster: 'ma', timeout: '5s' }, { name: 'b', cluster: 'mb', timeout: '5s' }],
  prefix_mode: 'ON_COLLISION',
  access_rules: [{ tools: [{ name: { exact: 'add' }, backend: 'a' }],
    principals: [{ client_cert_san: { suffix: '.ops.test' } }] },
  { tools: [{ name: { exact: 'search' }, backend: 'b' }],
    principals: [{ client_cert_san: { exact: 'spiffe://arion.test/ops' } }] }] };

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const { sendAcked } = x.ackedSender(srv);

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  if (mtls)
    await sendAcked('secret', secrets);
  await sendAcked('cluster', [
    { name: 'ma', version: '1', resource: x.staticCluster('ma', '198.18.3.10', 9001) },
    { name: 'mb', version: '1', resource: x.staticCluster('mb', '198.18.3.11', 9001) }]);
  const lisList = [{ name: 'mcp', version: '1', resource: lis },
    { name: 'mcp2', version: '1', resource: lis2 }];
  const tsList = [{ name: 'tools', version: '1', resource: toolset },
    { name: 'tools2', version: '1', resource: toolset2 }];
  if (mtls) {
    lisList.push({ name: 'mcp3', version: '1', resource: lis3 });
    tsList.push({ name: 'tools3', version: '1', resource: toolset3 });
  }
  const r = srv.send({ type_url: 'listener', resources: lisList, removed_resources: [] });
  /* the listeners warm until their ToolSets arrive: Arion asks for them by name */
  for (const t of tsList)
    await srv.waitRequest((q) => q.type_url === TYPES.toolset &&
      (q.resource_names_subscribe || []).includes(t.name), 20000);
  await sendAcked('toolset', tsList);
  await srv.waitRequest((q) => q.type_url === TYPES.listener && q.response_nonce === r.nonce, 20000);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
