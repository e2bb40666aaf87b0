'use strict';
/*
 * The admin endpoint fed by xDS, end to end (issue 7 with issues 3 and 4,
 * G8): the real arion binary in control-plane-only mode (no dataplane:)
 * against the Node delta-ADS server of tests/xds/peer/server.js, checked
 * through /config_dump, /ready, /clusters, /listeners and /stats.
 *
 *   node e2e_config_admin.js SCENARIO   (ARION_BIN from meson's test env)
 *
 * Ports: the xDS server on 20200 + the scenario's index (this test's range,
 * 20200-20299, below the kernel's ephemeral ports); the admin endpoint on port 0, read from arion's log. Temp
 * files under /tmp/arn-cfgadm-<scenario>-<pid>-*, removed pass or fail.
 * Exit: 0 passed, 1 failed, 77 skipped (no node_modules).
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const { spawn, execFileSync } = require('child_process');

const {
  TYPES, edsCluster, staticCluster, ep, cla, listenerRds, route, sleep, assert, eq, until, initial, acked,
} = require('../common/xds_e2e.js');

let AdsServer;
try {
  ({ AdsServer } = require('../xds/peer/server.js'));
} catch (e) {
  process.stdout.write(`skip: the xDS test server cannot load (${e.message}); run scripts/setup-deps --test\n`);
  process.exit(77);
}

const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/* ---- arion and the admin endpoint --------------------------------------------- */

class Arion {
  constructor(dir, xdsPort) {
    this.cfg = path.join(dir, 'arion.yaml');
    fs.writeFileSync(this.cfg, [
      'envoy_bootstrap:',
      '  node: {id: arn-cfgadm-e2e, cluster: e2e}',
      '  dynamic_resources:',
      '    ads_config:',
      '      api_type: DELTA_GRPC',
      '      grpc_services: [{envoy_grpc: {cluster_name: xds_cluster}}]',
      '    cds_config: {ads: {}, initial_fetch_timeout: 60s}',
      '    lds_config: {ads: {}, initial_fetch_timeout: 60s}',
      '  static_resources:',
      '    clusters:',
      '      - name: xds_cluster',
      '        type: STATIC',
      '        connect_timeout: 0.25s',
      '        typed_extension_protocol_options:',
      '          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:',
      '            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      '            explicit_http_config: {http2_protocol_options: {}}',
      '        load_assignment:',
      '          cluster_name: xds_cluster',
      `          endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: ${xdsPort}}}}}]}]`,
      '  admin:',
      '    address: {socket_address: {address: 127.0.0.1, port_value: 0}}',
      '',
    ].join('\n'));
    this.lines = [];
    this.exited = null;
    this.proc = spawn(process.env.ARION_BIN, ['-c', this.cfg, '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    const onData = (b) => {
      partial += b.toString();
      const parts = partial.split('\n');
      partial = parts.pop();
      this.lines.push(...parts);
    };
    this.proc.stdout.on('data', onData);
    this.proc.stderr.on('data', onData);
    this.proc.on('exit', (code, sig) => { this.exited = { code, sig }; });
  }

  async adminPort() {
    for (let i = 0; i < 100; i++) {
      for (const l of this.lines) {
        const m = /admin listening on 127\.0\.0\.1:(\d+)/.exec(l);
        if (m) return Number(m[1]);
      }
      if (this.exited) throw new Error(`arion exited ${JSON.stringify(this.exited)}`);
      await sleep(100);
    }
    throw new Error('arion did not log its admin port');
  }

  async stop() {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    for (let i = 0; i < 50 && !this.exited; i++) await sleep(100);
    if (!this.exited) this.proc.kill('SIGKILL');
  }
}

function request(port, method, p) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => { req.destroy(new Error(`${method} ${p} timed out`)); });
    req.end();
  });
}

async function getJson(port, p) {
  const r = await request(port, 'GET', p);
  eq(r.status, 200, `GET ${p} status`);
  return JSON.parse(r.body);
}

/* The section of /config_dump whose @type ends in @p name. */
function sectionOf(dump, name) {
  return dump.configs.find((c) => c['@type'] === `type.googleapis.com/envoy.admin.v3.${name}`) || null;
}

/* ---- scenarios --------------------------------------------------------------------- */

const scenarios = {
  /* /ready: 503 until the first Cluster and Listener responses, and while
   * what came with them warms (a listener waiting for its RDS, an EDS
   * cluster for its endpoints); LIVE as warming ends; DRAINING after
   * POST /healthcheck/fail, LIVE again after /healthcheck/ok. */
  async ready_and_warming(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const port = await arion.adminPort();
    await initial(srv);
    let r = await request(port, 'GET', '/ready');
    eq(r.status, 503, '/ready before any response');
    assert(/^INITIALIZING/.test(r.body) && /waiting for the initial xDS fetch/.test(r.body), `/ready says why: ${r.body}`);

    const c1 = srv.send({ type_url: 'cluster', resources: [{ name: 'api', version: 'c1', resource: edsCluster('api') }] });
    await acked(srv, c1);
    r = await request(port, 'GET', '/ready');
    eq(r.status, 503, '/ready after CDS only (LDS not in yet)');

    const l1 = srv.send({ type_url: 'listener', resources: [{ name: 'web', version: 'l1', resource: listenerRds('web', 8080, 'r1') }] });
    await acked(srv, l1);
    r = await request(port, 'GET', '/ready');
    eq(r.status, 503, '/ready while the listener and the cluster warm');
    assert(/Listener 'web'/.test(r.body) && /Cluster 'api'/.test(r.body), `/ready names what warms: ${r.body}`);
    const info = await getJson(port, '/server_info');
    eq(info.state, 'INITIALIZING', '/server_info state');

    let dump = await getJson(port, '/config_dump');
    const ls = sectionOf(dump, 'ListenersConfigDump');
    eq(ls.dynamic_listeners.length, 1, 'one dynamic listener');
    const dl = ls.dynamic_listeners[0];
    eq(dl.name, 'web', 'its name');
    assert(!dl.active_state, 'no active_state while warming');
    eq(dl.warming_state.version_info, 'l1', 'warming_state version');
    eq(dl.warming_state.listener.name, 'web', 'warming_state listener');
    assert(TS.test(dl.warming_state.last_updated), `warming_state last_updated ${dl.warming_state.last_updated}`);
    const cs = sectionOf(dump, 'ClustersConfigDump');
    eq((cs.dynamic_warming_clusters || []).map((c) => [c.version_info, c.cluster.name]), [['c1', 'api']], 'EDS cluster warming');

    const rt = srv.send({ type_url: 'route', resources: [{ name: 'r1', version: 'r1v', resource: route('r1', 'api') }] });
    await acked(srv, rt);
    r = await request(port, 'GET', '/ready');
    eq(r.status, 503, '/ready while the cluster still waits for its endpoints');
    assert(!/Listener 'web'/.test(r.body) && /Cluster 'api'/.test(r.body), `only the cluster left: ${r.body}`);

    const e1 = srv.send({ type_url: 'cla', resources: [{ name: 'api', version: 'e1', resource: cla('api', [ep('198.18.0.10', 80)]) }] });
    await acked(srv, e1);
    r = await until('/ready LIVE once warming ended', async () => { const x = await request(port, 'GET', '/ready'); return x.status === 200 && x; });
    eq(r.body.trim(), 'LIVE', '/ready body');
    dump = await getJson(port, '/config_dump');
    const dl2 = sectionOf(dump, 'ListenersConfigDump').dynamic_listeners[0];
    eq(dl2.active_state.version_info, 'l1', 'listener active now');
    assert(!dl2.warming_state, 'and no longer warming');
    eq(sectionOf(dump, 'ClustersConfigDump').dynamic_active_clusters.map((c) => c.cluster.name), ['api'], 'cluster active now');

    r = await request(port, 'POST', '/healthcheck/fail');
    eq(r.status, 200, 'POST /healthcheck/fail');
    r = await request(port, 'GET', '/ready');
    eq(r.status, 503, '/ready after /healthcheck/fail');
    assert(/^DRAINING/.test(r.body), `DRAINING: ${r.body}`);
    r = await request(port, 'POST', '/healthcheck/ok');
    eq(r.status, 200, 'POST /healthcheck/ok');
    r = await request(port, 'GET', '/ready');
    eq(r.status, 200, '/ready after /healthcheck/ok');
  },

  /* /config_dump reflects what xDS pushed (all five families, versions,
   * last_updated, secrets redacted); a NACKed update shows in error_state
   * with the NACK's reason while the accepted version stays active (G8);
   * /clusters lists the EDS endpoints with weight, health and locality;
   * /listeners the listener; /stats has one source per name. */
  async config_dump_and_nack(ctx) {
    const srv = await ctx.server();
    const arion = ctx.arion();
    const port = await arion.adminPort();
    await initial(srv);

    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=arn-cfgadm', '-keyout', path.join(ctx.dir, 'key.pem'), '-out', path.join(ctx.dir, 'cert.pem')], { stdio: 'ignore' });
    const keyPem = fs.readFileSync(path.join(ctx.dir, 'key.pem'), 'utf8');
    const certPem = fs.readFileSync(path.join(ctx.dir, 'cert.pem'), 'utf8');
    const keyLine = keyPem.split('\n')[1];

    const s1 = srv.send({ type_url: 'secret', resources: [{ name: 'server-cert', version: 's1', resource: {
      '@type': TYPES.secret, name: 'server-cert',
      tls_certificate: { certificate_chain: { inline_string: certPem }, private_key: { inline_string: keyPem } } } }] });
    await acked(srv, s1);
    const c1 = srv.send({ type_url: 'cluster', resources: [
      { name: 'api', version: 'c1', resource: edsCluster('api') },
      { name: 'web', version: 'c1', resource: staticCluster('web', '198.18.0.20', 8081) }] });
    await acked(srv, c1);
    const e1 = srv.send({ type_url: 'cla', resources: [{ name: 'api', version: 'e1', resource: {
      '@type': TYPES.cla, cluster_name: 'api',
      endpoints: [
        { locality: { region: 'eu-west', zone: 'eu-west-1a' }, lb_endpoints: [
          ep('198.18.0.10', 8080, { load_balancing_weight: 3 }),
          ep('198.18.0.11', 8080, { health_status: 'UNHEALTHY' })] },
        { priority: 1, lb_endpoints: [ep('198.18.0.12', 9090)] }] } }] });
    await acked(srv, e1);
    const l1 = srv.send({ type_url: 'listener', resources: [{ name: 'ingress', version: 'l1', resource: listenerRds('ingress', 8080, 'r1') }] });
    await acked(srv, l1);
    const r1 = srv.send({ type_url: 'route', resources: [{ name: 'r1', version: 'r1v', resource: route('r1', 'api') }] });
    await acked(srv, r1);
    await until('/ready LIVE', async () => (await request(port, 'GET', '/ready')).status === 200);

    const raw = await request(port, 'GET', '/config_dump?include_eds');
    eq(raw.status, 200, '/config_dump?include_eds');
    assert(!raw.body.includes(keyLine), 'the private key is not in /config_dump');
    const dump = JSON.parse(raw.body);
    eq(dump.configs.map((c) => c['@type'].replace(/.*\./, '')),
      ['BootstrapConfigDump', 'ClustersConfigDump', 'EndpointsConfigDump', 'ListenersConfigDump', 'RoutesConfigDump', 'SecretsConfigDump', 'ToolSetsConfigDump'],
      "sections in Envoy's order, then Arion's TDS");

    const cs = sectionOf(dump, 'ClustersConfigDump');
    eq(cs.static_clusters.map((c) => c.cluster.name), ['xds_cluster'], 'static_clusters');
    eq(cs.dynamic_active_clusters.map((c) => [c.cluster.name, c.version_info]), [['api', 'c1'], ['web', 'c1']], 'dynamic_active_clusters');
    for (const c of cs.dynamic_active_clusters) {
      assert(TS.test(c.last_updated), `cluster last_updated ${c.last_updated}`);
      eq(c.cluster['@type'], TYPES.cluster, 'cluster @type');
    }

    const es = sectionOf(dump, 'EndpointsConfigDump');
    eq(es.dynamic_endpoint_configs.map((e) => [e.endpoint_config.cluster_name, e.version_info]), [['api', 'e1']], 'dynamic_endpoint_configs');
    eq(es.dynamic_endpoint_configs[0].endpoint_config.endpoints[0].lb_endpoints[0].load_balancing_weight, 3, 'endpoint weight in the dump');
    assert((es.static_endpoint_configs || []).some((e) => e.endpoint_config.cluster_name === 'web'), 'the STATIC cluster web in static_endpoint_configs');

    const ls = sectionOf(dump, 'ListenersConfigDump');
    eq(ls.dynamic_listeners.map((l) => [l.name, l.active_state.version_info]), [['ingress', 'l1']], 'dynamic_listeners');
    assert(TS.test(ls.dynamic_listeners[0].active_state.last_updated), 'listener last_updated');
    eq(ls.dynamic_listeners[0].active_state.listener.filter_chains[0].filters[0].typed_config.rds.route_config_name, 'r1', 'listener content');

    const rs = sectionOf(dump, 'RoutesConfigDump');
    eq(rs.dynamic_route_configs.map((r) => [r.route_config.name, r.version_info]), [['r1', 'r1v']], 'dynamic_route_configs');
    assert(TS.test(rs.dynamic_route_configs[0].last_updated), 'route last_updated');

    const ss = sectionOf(dump, 'SecretsConfigDump');
    eq(ss.dynamic_active_secrets.map((s) => [s.name, s.version_info]), [['server-cert', 's1']], 'dynamic_active_secrets');
    eq(ss.dynamic_active_secrets[0].secret.tls_certificate.private_key.inline_string, '[redacted]', 'private key redacted');
    assert(ss.dynamic_active_secrets[0].secret.tls_certificate.certificate_chain.inline_string.includes(certPem.split('\n')[1]), 'the certificate is shown');

    const plain = await getJson(port, '/config_dump');
    assert(!sectionOf(plain, 'EndpointsConfigDump'), 'no EndpointsConfigDump without ?include_eds');
    const only = await getJson(port, '/config_dump?resource=dynamic_active_clusters&mask=cluster.name,version_info');
    eq(only.configs.map((c) => [c['@type'], c.cluster.name, c.version_info]),
      [['type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster', 'api', 'c1'],
        ['type.googleapis.com/envoy.admin.v3.ClustersConfigDump.DynamicCluster', 'web', 'c1']], '?resource= and ?mask=');

    // NACK (X15): api v2 with connect_timeout 0s; v1 stays active
    const c2 = srv.send({ type_url: 'cluster', resources: [{ name: 'api', version: 'c2', resource: edsCluster('api', '0s') }] });
    const nack = await srv.waitRequest((x) => x.response_nonce === c2.nonce, 10000);
    assert(nack.error_detail && /connect_timeout/.test(nack.error_detail.message), `NACKed: ${JSON.stringify(nack.error_detail)}`);
    // and an application error (X16): a second listener on ingress's port
    const l2 = srv.send({ type_url: 'listener', resources: [{ name: 'clash', version: 'l2', resource: listenerRds('clash', 8080, 'r1') }] });
    const nack2 = await srv.waitRequest((x) => x.response_nonce === l2.nonce, 10000);
    assert(nack2.error_detail && /already used by listener 'ingress'/.test(nack2.error_detail.message), `X16 NACK: ${JSON.stringify(nack2.error_detail)}`);
    const d2 = await getJson(port, '/config_dump');
    const api = sectionOf(d2, 'ClustersConfigDump').dynamic_active_clusters.find((c) => c.cluster && c.cluster.name === 'api');
    eq(api.version_info, 'c1', 'the accepted version stays active');
    eq(api.cluster.connect_timeout, '0.250s', 'with its content');
    assert(api.error_state && /connect_timeout: must be greater than 0s/.test(api.error_state.details), `error_state.details: ${JSON.stringify(api.error_state)}`);
    eq(api.error_state.version_info, 'c2', 'error_state.version_info is the refused version');
    assert(TS.test(api.error_state.last_update_attempt), 'error_state.last_update_attempt');
    eq(api.client_status, 'NACKED', 'client_status');
    const clash = sectionOf(d2, 'ListenersConfigDump').dynamic_listeners.find((l) => l.name === 'clash');
    assert(clash && !clash.active_state && /already used by listener 'ingress'/.test(clash.error_state.details), `listener error_state: ${JSON.stringify(clash)}`);
    const ing = sectionOf(d2, 'ListenersConfigDump').dynamic_listeners.find((l) => l.name === 'ingress');
    assert(!ing.error_state, 'ingress itself has no error');

    // /clusters: the EDS endpoints with weight, health, locality and priority
    const ct = await request(port, 'GET', '/clusters');
    eq(ct.status, 200, '/clusters');
    for (const want of ['api::added_via_api::true', 'xds_cluster::added_via_api::false', 'web::added_via_api::true',
      'api::198.18.0.10:8080::weight::3', 'api::198.18.0.10:8080::health_flags::healthy',
      'api::198.18.0.10:8080::region::eu-west', 'api::198.18.0.10:8080::zone::eu-west-1a',
      'api::198.18.0.10:8080::cx_active::0', 'api::198.18.0.10:8080::rq_active::0',
      'api::198.18.0.11:8080::health_flags::/failed_eds_health', 'api::198.18.0.11:8080::weight::1',
      'api::198.18.0.12:9090::priority::1', 'web::198.18.0.20:8081::health_flags::healthy']) {
      assert(ct.body.split('\n').includes(want), `/clusters has ${want}:\n${ct.body}`);
    }
    const cj = await getJson(port, '/clusters?format=json');
    const capi = cj.cluster_statuses.find((c) => c.name === 'api');
    eq(capi.host_statuses.map((h) => [h.address.socket_address.address, h.weight || 1, h.health_status.eds_health_status]),
      [['198.18.0.10', 3, 'HEALTHY'], ['198.18.0.11', 1, 'UNHEALTHY'], ['198.18.0.12', 1, 'HEALTHY']], '/clusters?format=json hosts');
    eq(capi.added_via_api, true, 'added_via_api');

    const lt = await request(port, 'GET', '/listeners');
    eq(lt.body, 'ingress::0.0.0.0:8080\n', '/listeners');

    // /stats: Envoy's xDS names once each, and the store's config.*
    const st = await request(port, 'GET', '/stats');
    const names = st.body.split('\n').filter(Boolean).map((l) => l.split(':')[0]);
    for (const n of ['control_plane.connected_state', 'cluster_manager.cds.update_success', 'cluster_manager.cds.update_rejected',
      'listener_manager.lds.update_rejected', 'cluster_manager.eds.update_success', 'cluster_manager.rds.update_success',
      'cluster_manager.sds.update_success', 'cluster_manager.cds.update_time', 'config.batches_refused', 'config.listeners_active']) {
      eq(names.filter((x) => x === n).length, 1, `${n} exactly once in /stats`);
    }
    assert(/^control_plane\.connected_state: 1$/m.test(st.body), 'connected_state 1');
    assert(/^cluster_manager\.cds\.update_rejected: [1-9]/m.test(st.body), 'cds update_rejected counted');
    assert(/^config\.batches_refused: [1-9]/m.test(st.body), 'config.batches_refused counted');
    for (const f of ['cluster_manager.eds', 'cluster_manager.rds', 'cluster_manager.sds', 'listener_manager.lds']) {
      assert(new RegExp(`^${f.replace(/\./g, '\\.')}\\.update_success: [1-9]`, 'm').test(st.body), `${f}.update_success counted`);
    }
    const ut = /^cluster_manager\.cds\.update_time: (\d+)$/m.exec(st.body);
    assert(ut && Math.abs(Number(ut[1]) - Date.now()) < 60000, `cds update_time is wall-clock ms: ${ut && ut[1]}`);
    const dup = names.filter((n, i) => names.indexOf(n) !== i);
    eq(dup, [], 'no stat name twice');
    const prom = await request(port, 'GET', '/stats/prometheus');
    const types = prom.body.split('\n').filter((l) => l.startsWith('# TYPE '));
    eq(types.filter((l, i) => types.indexOf(l) !== i), [], 'no Prometheus family twice');
  },
};

/* ---- the runner -------------------------------------------------------------------- */

async function main() {
  const names = Object.keys(scenarios);
  const name = process.argv[2];
  if (!scenarios[name]) {
    process.stderr.write(`usage: node e2e_config_admin.js SCENARIO\nscenarios: ${names.join(' ')}\n`);
    process.exit(2);
  }
  if (!process.env.ARION_BIN) {
    process.stderr.write('ARION_BIN is not set (run through meson test)\n');
    process.exit(2);
  }
  const ctx = {
    dir: fs.mkdtempSync(path.join(os.tmpdir(), `arn-cfgadm-${name}-${process.pid}-`)),
    port: 20200 + names.indexOf(name),
    servers: [],
    arions: [],
    async server() {
      const s = new AdsServer({ log: path.join(this.dir, 'requests.jsonl') });
      await s.start(this.port);
      this.servers.push(s);
      return s;
    },
    arion() {
      const a = new Arion(this.dir, this.port);
      this.arions.push(a);
      return a;
    },
  };
  let rc = 0;
  const watchdog = setTimeout(() => { process.stdout.write('FAIL: scenario timed out\n'); rc = 1; finish(); }, 100000);
  async function finish() {
    clearTimeout(watchdog);
    for (const a of ctx.arions) {
      await a.stop();
      // a clean stop (store, admin views and deferred frees torn down in
      // order) exits 0; a sanitizer finding at exit does not
      if (!rc && (!a.exited || a.exited.code !== 0)) {
        process.stdout.write(`FAIL: arion did not exit cleanly on SIGTERM: ${JSON.stringify(a.exited)}\n`);
        rc = 1;
      }
    }
    for (const s of ctx.servers) s.stop();
    if (rc) {
      for (const f of fs.readdirSync(ctx.dir).filter((x) => x.endsWith('.jsonl'))) {
        process.stdout.write(`---- ${f}\n${fs.readFileSync(path.join(ctx.dir, f), 'utf8')}\n`);
      }
      for (const a of ctx.arions) process.stdout.write(`---- arion log\n${a.lines.join('\n')}\n`);
    }
    fs.rmSync(ctx.dir, { recursive: true, force: true });
    process.exit(rc);
  }
  try {
    await scenarios[name](ctx);
    process.stdout.write(`ok ${name}\n`);
  } catch (e) {
    process.stdout.write(`FAIL ${name}: ${e.stack || e}\n`);
    rc = 1;
  }
  await finish();
}

process.on('unhandledRejection', (e) => { process.stdout.write(`FAIL: unhandled ${e && e.stack}\n`); process.exit(1); });
main();
