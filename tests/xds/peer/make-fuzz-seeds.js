'use strict';
/* Writes the seed corpus of fuzz_xds_response (tests/xds/corpus/): a few
 * DeltaDiscoveryResponses in wire format. node make-fuzz-seeds.js DIR */
const fs = require('fs');
const path = require('path');
const { TYPES, toResponse, resourceRoot } = require('./server.js');

const dir = process.argv[2] || path.join(__dirname, '..', 'corpus', 'fuzz_xds_response');
fs.mkdirSync(dir, { recursive: true });
const R = resourceRoot().lookupType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
let n = 0;
const nonce = () => `n${++n}`;
const cluster = (name, extra = {}) => ({ '@type': TYPES.cluster, name, type: 'EDS', connect_timeout: '0.25s', ...extra });
const seeds = {
  clusters: { type_url: 'cluster', system_version_info: 'v1', resources: [
    { name: 'api', version: '1', resource: cluster('api') },
    { name: 'web', version: '2', resource: cluster('web', { connect_timeout: '0s' }) }] },
  removal: { type_url: 'cluster', removed_resources: ['api', 'web'] },
  duplicate: { type_url: 'cluster', resources: [{ name: 'a', version: '1', resource: cluster('a') }], removed_resources: ['a'] },
  cla: { type_url: 'cla', resources: [{ name: 'api', version: '3', resource: { '@type': TYPES.cla, cluster_name: 'api',
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '198.18.0.10', port_value: 80 } } } }] }] } }] },
  listener: { type_url: 'listener', resources: [{ name: 'http', version: '1', resource: { '@type': TYPES.listener, name: 'http',
    address: { socket_address: { address: '0.0.0.0', port_value: 80 } },
    filter_chains: [{ filters: [{ name: 'hcm', typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'http', rds: { config_source: { ads: {} }, route_config_name: 'main' },
      http_filters: [{ name: 'router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }] } }] }] } }] },
  route: { type_url: 'route', resources: [{ name: 'main', version: '1', resource: { '@type': TYPES.route, name: 'main',
    virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'api' } }] }] } }] },
  ondemand: { type_url: 'type.googleapis.com/envoy.config.core.v3.Node', resources: [
    { name: 'n1', version: '1', resource: { '@type': 'type.googleapis.com/envoy.config.core.v3.Node', id: 'n1' } },
    { name: 'n2', version: '1', resource: { '@type': 'type.googleapis.com/envoy.config.core.v3.Node', id: 'n2' } }] },
  // Resource.ttl, a heartbeat (no body), and a ttl that refuses the response
  ttl: { type_url: 'cluster', resources: [{ name: 'api', version: '1', ttl: '1.5s', resource: cluster('api') },
    { name: 'web', version: '1', ttl: '2s' }] },
  ttl_negative: { type_url: 'cluster', resources: [{ name: 'api', version: '1', ttl: '-1s', resource: cluster('api') }] },
};
for (const [name, r] of Object.entries(seeds)) {
  const msg = toResponse(r, nonce);
  fs.writeFileSync(path.join(dir, `${name}.bin`), R.encode(R.fromObject(msg)).finish());
}
process.stdout.write(`${Object.keys(seeds).length} seeds in ${dir}\n`);
