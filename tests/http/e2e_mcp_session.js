'use strict';
/*
 * The control plane of tests/http/e2e_mcp_session.sh: tests/xds/peer's
 * delta-ADS server with two SDK-made MCP backends' clusters ('sa', 'sb'),
 * a listener on :80 whose HCM carries the MCP gateway filter (ToolSet
 * 'tools', session_idle_timeout 3 s; an access log naming each request's
 * tool and backend in DIR/access.log), and the ToolSet once Arion
 * subscribes to it (X4/X14).
 *
 *   node e2e_mcp_session.js DIR
 *
 * Writes DIR/port once listening and DIR/ready once everything is ACKed.
 * When DIR/push appears, pushes the ToolSet's second version (the tool
 * 'hidden' denied) and writes DIR/pushed once it is ACKed.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

const dir = process.argv[2];
const lis = x.listenerHcm('mcp', 80, { route_config: { virtual_hosts: [{ name: 'all', domains: ['*'],
  routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'not mcp' } } }] }] } },
{ statPrefix: 'mcp' });
const hcm = lis.filter_chains[0].filters[0].typed_config;
hcm.http_filters.unshift({ name: 'arion.filters.http.mcp_gateway', typed_config: {
  '@type': 'type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3.McpGateway',
  tds: { config_name: 'tools' }, session_idle_timeout: '3s' } });
/* each request's tool and backend, whichever worker served its client */
hcm.access_log = [{ name: 'envoy.access_loggers.file', typed_config: {
  '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog',
  path: path.join(dir, 'access.log'),
  log_format: { text_format_source: { inline_string: '%REQ(:METHOD)% %RESPONSE_CODE% tool=%MCP_TOOL% backend=%MCP_BACKEND%\n' } } } }];
const toolset = (deny) => ({ '@type': x.TYPES.toolset, name: 'tools',
  backends: [{ name: 'a', cluster: 'sa', timeout: '30s' }, { name: 'b', cluster: 'sb', timeout: '30s' }],
  tool_filter: { deny: deny.map((n) => ({ name: { exact: n } })) } });
/* :82, mTLS (DIR/pki, made by e2e_mcp_session.sh): ToolSet 'tools3' gives
 * a's 'muse' only to a client certificate with a DNS SAN under .ops.test */
const rd = (f) => fs.readFileSync(path.join(dir, 'pki', f), 'utf8');
const lis3 = x.listenerHcm('mcp3', 82, { route_config: { virtual_hosts: [{ name: 'all', domains: ['*'],
  routes: [{ match: { prefix: '/' }, direct_response: { status: 200, body: { inline_string: 'not mcp' } } }] }] } },
{ statPrefix: 'mcp3' });
lis3.filter_chains[0].filters[0].typed_config.http_filters.unshift({ name: 'arion.filters.http.mcp_gateway',
  typed_config: { '@type': 'type.googleapis.com/arion.extensions.filters.http.mcp_gateway.v3.McpGateway',
    tds: { config_name: 'tools3' } } });
lis3.filter_chains[0].transport_socket = { name: 'envoy.transport_sockets.tls', typed_config: {
  '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  require_client_certificate: true,
  common_tls_context: {
    tls_certificate_sds_secret_configs: [{ name: 'mcp-cert', sds_config: { ads: {} } }],
    validation_context_sds_secret_config: { name: 'mcp-ca', sds_config: { ads: {} } } } } };
const secrets = [{ name: 'mcp-cert', version: '1', resource: { '@type': x.TYPES.secret, name: 'mcp-cert',
  tls_certificate: { certificate_chain: { inline_string: rd('srv.pem') },
    private_key: { inline_string: rd('srv.key') } } } },
{ name: 'mcp-ca', version: '1', resource: { '@type': x.TYPES.secret, name: 'mcp-ca',
  validation_context: { trusted_ca: { inline_string: rd('cca.pem') } } } }];
const toolset3 = { '@type': x.TYPES.toolset, name: 'tools3',
  backends: [{ name: 'a', cluster: 'sa', timeout: '30s' }, { name: 'b', cluster: 'sb', timeout: '30s' }],
  access_rules: [{ tools: [{ name: { exact: 'muse' }, backend: 'a' }],
    principals: [{ client_cert_san: { suffix: '.ops.test' } }] }] };

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const { sendAcked } = x.ackedSender(srv);

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('secret', secrets);
  await sendAcked('cluster', [
    { name: 'sa', version: '1', resource: x.staticCluster('sa', '198.18.3.10', 9002) },
    { name: 'sb', version: '1', resource: x.staticCluster('sb', '198.18.3.11', 9002) }]);
  const r = srv.send({ type_url: 'listener', resources: [{ name: 'mcp', version: '1', resource: lis },
    { name: 'mcp3', version: '1', resource: lis3 }],
    removed_resources: [] });
  for (const n of ['tools', 'tools3'])
    await srv.waitRequest((q) => q.type_url === TYPES.toolset &&
      (q.resource_names_subscribe || []).includes(n), 20000);
  await sendAcked('toolset', [{ name: 'tools', version: '1', resource: toolset([]) },
    { name: 'tools3', version: '1', resource: toolset3 }]);
  await srv.waitRequest((q) => q.type_url === TYPES.listener && q.response_nonce === r.nonce, 20000);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  for (;;) {
    if (fs.existsSync(path.join(dir, 'push'))) {
      fs.unlinkSync(path.join(dir, 'push'));
      await sendAcked('toolset', [{ name: 'tools', version: '2', resource: toolset(['hidden']) }]);
      fs.writeFileSync(path.join(dir, 'pushed'), '');
    }
    await sleep(100);
  }
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
