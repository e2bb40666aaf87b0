'use strict';
/*
 * The control plane of tests/http/e2e_tls_sds.sh: tests/xds/peer's
 * delta-ADS server with a TLS listener whose certificate is Secret 'cert'
 * over ADS (SDS).
 *
 *   node e2e_tls_sds.js DIR
 *
 * Reads DIR/c1.pem, c1.key, c2.pem, c2.key; writes DIR/port once
 * listening, serves Secret 'cert' = c1, cluster 'a' (STATIC, nginx A) and
 * listener 'tls' (:443, DownstreamTlsContext with 'cert'), writes DIR/ready
 * when Arion has ACKed them, waits for DIR/go, replaces Secret 'cert' with
 * c2 and writes DIR/rotated once that is ACKed.
 *
 * Then (issue 18: no request fails while a new TLS context is made) it
 * waits for DIR/go2 and pushes Secret 'ca' (the test CA, ACKed), then back
 * to back a brand-new cluster 'tlsup' with an UpstreamTlsContext (the TLS
 * nginx on 198.18.3.10:8443, verified against 'ca') and a brand-new
 * listener 'tls2' (:8443, a new TLS chain with 'cert') routing to it; it
 * writes DIR/added once both are ACKed.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

const dir = process.argv[2];
const rd = (f) => fs.readFileSync(path.join(dir, f), 'utf8');
const secret = (v, n) => ({ name: 'cert', version: v, resource: {
  '@type': x.TYPES.secret, name: 'cert',
  tls_certificate: { certificate_chain: { inline_string: rd(`c${n}.pem`) },
    private_key: { inline_string: rd(`c${n}.key`) } } } });
const lis = x.listenerHcm('tls', 443, { route_config: { virtual_hosts: [{ name: 'all', domains: ['*'],
  routes: [{ match: { prefix: '/' }, route: { cluster: 'a' } }] }] } }, { statPrefix: 'sds' });
lis.filter_chains[0].transport_socket = { name: 'envoy.transport_sockets.tls', typed_config: {
  '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  common_tls_context: { tls_certificate_sds_secret_configs: [{ name: 'cert', sds_config: { ads: {} } }] } } };

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const ads = x.ackedSender(srv);
const { sendAcked } = ads;

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('secret', [secret('1', 1)]);
  await sendAcked('cluster', [{ name: 'a', version: '1', resource: x.staticCluster('a', '198.18.3.10', 8080) }]);
  await sendAcked('listener', [{ name: 'tls', version: '1', resource: lis }]);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  while (!fs.existsSync(path.join(dir, 'go'))) await sleep(50);
  await sendAcked('secret', [secret('2', 2)]);
  fs.writeFileSync(path.join(dir, 'rotated'), '');
  while (!fs.existsSync(path.join(dir, 'go2'))) await sleep(50);
  await sendAcked('secret', [{ name: 'ca', version: '1', resource: { '@type': x.TYPES.secret, name: 'ca',
    validation_context: { trusted_ca: { inline_string: rd('ca.pem') } } } }]);
  const up = x.staticCluster('tlsup', '198.18.3.10', 8443);
  up.transport_socket = { name: 'envoy.transport_sockets.tls', typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
    sni: 'a.test', common_tls_context: { validation_context_sds_secret_config: { name: 'ca', sds_config: { ads: {} } } } } };
  const l2 = x.listenerHcm('tls2', 8443, { route_config: { virtual_hosts: [{ name: 'all', domains: ['*'],
    routes: [{ match: { prefix: '/' }, route: { cluster: 'tlsup' } }] }] } }, { statPrefix: 'sds2' });
  l2.filter_chains[0].transport_socket = lis.filter_chains[0].transport_socket;
  /* back to back, not waiting for the first ACK: Arion applies both in
   * one pass of its control loop, so the listener and the cluster are
   * used the moment they are published */
  const rs = [srv.send({ type_url: 'cluster', resources: [{ name: 'tlsup', version: '1', resource: up }], removed_resources: [] }),
    srv.send({ type_url: 'listener', resources: [{ name: 'tls2', version: '1', resource: l2 }], removed_resources: [] })];
  for (const r of rs) {
    const ack = await srv.waitRequest((q) => q.response_nonce === r.nonce, 20000, ads.cursor);
    if (ack.error_detail) throw new Error(`NACK: ${JSON.stringify(ack.error_detail)}`);
  }
  fs.writeFileSync(path.join(dir, 'added'), '');
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
