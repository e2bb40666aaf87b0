'use strict';
/*
 * The control plane of tests/http/e2e_churn.sh (issue 22): tests/xds/peer's
 * delta-ADS server, driven step by step by the shell script.
 *
 *   node e2e_churn.js DIR
 *
 * Writes DIR/port once listening, serves the first configuration and
 * writes DIR/ready when Arion has ACKed all of it:
 *   listener http on 198.18.2.2:80, two filter chains with the same routes:
 *     "a"        source_ports [40001]  HCM stat_prefix chain_a
 *     default                          HCM stat_prefix chain_d
 *   RDS main -> cluster web (EDS, connect_timeout 1s) = [A]
 * then, each after the script touches DIR/goN, writes DIR/stepN once ACKed:
 *   1 LDS  only the default chain changes (stat_prefix chain_d2): Envoy's
 *          in-place filter chain update; chain "a"'s connections stay
 *   2 EDS  web = [198.18.2.50, 198.18.2.51]: endpoints on Arion's link that
 *          it never contacted, so every first SYN waits for ARP
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

const dir = process.argv[2];
const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER = { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } };
const hcm = (prefix) => ({ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
  '@type': HCM, stat_prefix: prefix, rds: { config_source: { ads: {} }, route_config_name: 'main' },
  http_filters: [ROUTER] } }] });
const listener = (v, dflt) => ({ name: 'http', version: v, resource: {
  '@type': x.TYPES.listener, name: 'http',
  address: { socket_address: { address: '198.18.2.2', port_value: 80 } },
  filter_chains: [{ name: 'a', filter_chain_match: { source_ports: [40001] }, ...hcm('chain_a') }],
  default_filter_chain: { name: 'd', ...hcm(dflt) } } });
const cla = (v, ips) => ({ name: 'web', version: v,
  resource: x.cla('web', ips.map((ip) => x.ep(ip, 8080))) });

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const { sendAcked } = x.ackedSender(srv);

async function waitFile(name) {
  while (!fs.existsSync(path.join(dir, name))) await sleep(20);
}

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [{ name: 'web', version: '1', resource: x.edsCluster('web', '1s') }]);
  await sendAcked('cla', [cla('1', ['198.18.3.10'])]);
  await sendAcked('listener', [listener('1', 'chain_d')]);
  await sendAcked('route', [{ name: 'main', version: '1', resource: x.route('main', 'web', 'all') }]);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  await waitFile('go1');
  await sendAcked('listener', [listener('2', 'chain_d2')]);
  fs.writeFileSync(path.join(dir, 'step1'), String(Date.now()));
  await waitFile('go2');
  await sendAcked('cla', [cla('2', ['198.18.2.50', '198.18.2.51'])]);
  fs.writeFileSync(path.join(dir, 'step2'), String(Date.now()));
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
