'use strict';
/*
 * End-to-end xDS tests: the real arion binary, in control-plane-only mode
 * (no dataplane: section, so no EAL), against the delta-ADS server of
 * server.js on loopback ports 20100-20199 (this module's range: below the
 * kernel's ephemeral ports, 32768-60999, which outgoing connections and their
 * TIME_WAITs take at random; a fixed port there fails now and then).
 *
 *   node e2e.js SCENARIO     (ARION_BIN, ARION_SRC from meson's test env)
 *
 * Each scenario (scenarios.js) gets its own block of 4 ports, a temp
 * directory, an arion process and a server; all are removed at the end,
 * pass or fail. Assertions use the server's request log (JSON lines, kept in
 * the temp dir and printed on failure) and arion's own state: its log lines
 * and, when the admin endpoint is in the build, GET /xds.
 *
 * Exit: 0 passed, 1 failed, 77 skipped (meson's skip code).
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const { spawn } = require('child_process');
const { AdsServer, TYPES } = require('./server.js');
const { makePki } = require('./pki.js');
const { sleep, assert, eq } = require('../../common/xds_e2e.js');

const SKIP = 77;

class Skip extends Error {}


/*
 * The configuration file. @p tls (every service gets it): {ca, cert, key:
 * file paths (cert/key null: no client certificate), sni, san: a YAML list
 * for default_validation_context.match_typed_subject_alt_names}; the
 * material goes into static_resources.secrets, named by the
 * UpstreamTlsContext (X13). @p extra: lines after envoy_bootstrap:.
 */
function configYaml({ node = { id: 'arion-e2e', cluster: 'edge' }, services, adminPort, nodeFirstOnly, tls, extra }) {
  const lines = ['envoy_bootstrap:', `  node: {id: ${node.id}, cluster: ${node.cluster}}`,
    '  dynamic_resources:', '    ads_config:', '      api_type: DELTA_GRPC', '      grpc_services:'];
  for (const s of services) lines.push(`        - envoy_grpc: {cluster_name: ${s.name}}`);
  if (nodeFirstOnly) lines.push('      set_node_on_first_message_only: true');
  lines.push('  static_resources:');
  if (tls) {
    lines.push('    secrets:', '      - name: xds-ca', `        validation_context: {trusted_ca: {filename: "${tls.ca}"}}`);
    if (tls.cert) {
      lines.push('      - name: xds-client',
        `        tls_certificate: {certificate_chain: {filename: "${tls.cert}"}, private_key: {filename: "${tls.key}"}}`);
    }
  }
  lines.push('    clusters:');
  for (const s of services) {
    lines.push(`      - name: ${s.name}`, '        type: STATIC', '        connect_timeout: 0.25s',
      '        typed_extension_protocol_options:',
      '          envoy.extensions.upstreams.http.v3.HttpProtocolOptions:',
      '            "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      '            explicit_http_config: {http2_protocol_options: {}}',
      '        load_assignment:', `          cluster_name: ${s.name}`, '          endpoints:',
      '            - lb_endpoints:');
    for (const p of s.ports) {
      lines.push(`                - endpoint: {address: {socket_address: {address: "${s.address || '127.0.0.1'}", port_value: ${p}}}}`);
    }
    if (tls) {
      lines.push('        transport_socket:', '          name: envoy.transport_sockets.tls', '          typed_config:',
        '            "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext');
      if (tls.sni) lines.push(`            sni: ${tls.sni}`);
      lines.push('            common_tls_context:');
      if (tls.cert) lines.push('              tls_certificate_sds_secret_configs: [{name: xds-client}]');
      lines.push('              combined_validation_context:', '                validation_context_sds_secret_config: {name: xds-ca}');
      if (tls.san) lines.push(`                default_validation_context: {match_typed_subject_alt_names: ${tls.san}}`);
    }
  }
  if (adminPort) lines.push('  admin:', `    address: {socket_address: {address: 127.0.0.1, port_value: ${adminPort}}}`);
  if (extra) lines.push(...extra);
  return lines.join('\n') + '\n';
}

class Arion {
  constructor(dir, cfgText, { args = [], env = {}, file = 'arion.yaml' } = {}) {
    this.dir = dir;
    this.cfg = path.join(dir, file);
    fs.writeFileSync(this.cfg, cfgText);
    this.lines = [];
    this.waiters = [];
    this.exited = null;
    const bin = process.env.ARION_BIN;
    if (!bin) throw new Error('ARION_BIN is not set (run through meson test)');
    this.t0 = Date.now();
    this.proc = spawn(bin, ['-c', this.cfg, '--log-level', 'info,xds:debug', ...args], {
      env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const onData = (buf) => {
      this.partial = (this.partial || '') + buf.toString();
      const parts = this.partial.split('\n');
      this.partial = parts.pop();
      for (const l of parts) this.lines.push({ t: Date.now(), text: l });
      const ws = this.waiters; this.waiters = []; for (const w of ws) w();
    };
    this.proc.stdout.on('data', onData);
    this.proc.stderr.on('data', onData);
    this.proc.on('exit', (code, sig) => { this.exited = { code, sig }; const ws = this.waiters; this.waiters = []; for (const w of ws) w(); });
  }

  /* First log line matching @p re at index >= @p from. */
  async waitLog(re, timeoutMs = 10000, from = 0) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.lines.findIndex((l, k) => k >= from && re.test(l.text));
      if (i >= 0) return { ...this.lines[i], index: i };
      if (this.exited) throw new Error(`arion exited (${JSON.stringify(this.exited)}) before logging ${re}`);
      if (Date.now() > deadline) throw new Error(`arion did not log ${re} within ${timeoutMs} ms`);
      await new Promise((r) => { const t = setTimeout(r, 100); this.waiters.push(() => { clearTimeout(t); r(); }); });
    }
  }

  logged(re) { return this.lines.some((l) => re.test(l.text)); }

  /* The exit code, once arion has exited by itself (within @p timeoutMs). */
  async waitExit(timeoutMs = 10000) {
    const deadline = Date.now() + timeoutMs;
    while (!this.exited) {
      if (Date.now() > deadline) throw new Error(`arion still runs after ${timeoutMs} ms`);
      await sleep(50);
    }
    return this.exited.code;
  }

  async stop() {
    if (this.exited) return;
    this.proc.kill('SIGTERM');
    for (let i = 0; i < 50 && !this.exited; i++) await sleep(100);
    if (!this.exited) this.proc.kill('SIGKILL');
    for (let i = 0; i < 20 && !this.exited; i++) await sleep(50);
  }
}

/* GET @p p (JSON) from the admin endpoint, or null when the build has no admin server. */
function adminGet(port, p) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { try { resolve(res.statusCode === 200 ? JSON.parse(body) : null); } catch (_) { resolve(null); } });
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => { req.destroy(); resolve(null); });
  });
}

/* The environment a scenario gets. */
class Ctx {
  constructor(name, index) {
    this.name = name;
    this.base = 20100 + 4 * index;
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `arn-xds-${name}-${process.pid}-`));
    this.servers = [];
    this.arions = [];
  }

  port(i) { return this.base + i; }

  /* Test certificates (pki.js), made once per scenario in its directory. */
  pki() {
    if (!this._pki) this._pki = makePki(path.join(this.dir, 'pki'));
    return this._pki;
  }

  /* @p tls: AdsServer.start()'s TLS options (null: plaintext). */
  async server(portIndex = 0, tls = null) {
    const s = new AdsServer({ log: path.join(this.dir, `requests-${portIndex}.jsonl`) });
    await s.start(this.port(portIndex), '127.0.0.1', tls);
    this.servers.push(s);
    return s;
  }

  arion(opts = {}) {
    const services = opts.services || [{ name: 'xds_cluster', ports: [this.port(0)] }];
    const cfg = configYaml({ services, adminPort: opts.noAdmin ? null : this.port(3), node: opts.node,
      nodeFirstOnly: opts.nodeFirstOnly, tls: opts.tls, extra: opts.extra });
    const a = new Arion(this.dir, cfg, { args: opts.args, env: opts.env, file: opts.file });
    this.arions.push(a);
    return a;
  }

  /* arion's state from GET /xds; null only when the build has no admin server. */
  async xds() {
    return this.admin('/xds');
  }

  async admin(p) {
    const st = await adminGet(this.port(3), p);
    if (!st && this.arions.some((a) => a.logged(/admin listening on/))) {
      throw new Error(`the admin endpoint is up but GET ${p} gave no JSON`);
    }
    return st;
  }

  async cleanup(failed) {
    for (const a of this.arions) await a.stop();
    for (const s of this.servers) s.stop();
    if (failed) {
      for (const f of fs.readdirSync(this.dir)) {
        if (!fs.statSync(path.join(this.dir, f)).isFile()) continue;
        process.stdout.write(`---- ${f}\n${fs.readFileSync(path.join(this.dir, f), 'utf8')}\n`);
      }
      for (const a of this.arions) process.stdout.write(`---- arion log\n${a.lines.map((l) => l.text).join('\n')}\n`);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function main() {
  const scenarios = require('./scenarios.js');
  const names = Object.keys(scenarios);
  const name = process.argv[2];
  if (!name || !scenarios[name]) {
    process.stderr.write(`usage: node e2e.js SCENARIO\nscenarios: ${names.join(' ')}\n`);
    process.exit(2);
  }
  const ctx = new Ctx(name, names.indexOf(name));
  const watchdog = setTimeout(() => { process.stdout.write('FAIL: scenario timed out\n'); ctx.cleanup(true).finally(() => process.exit(1)); }, 90000);
  let rc = 0;
  try {
    await scenarios[name](ctx);
    process.stdout.write(`ok ${name}\n1 passed, 0 failed\n`);
  } catch (e) {
    if (e instanceof Skip) {
      process.stdout.write(`skip ${name}: ${e.message}\n`);
      rc = SKIP;
    } else {
      process.stdout.write(`FAIL ${name}: ${e.stack || e}\n`);
      rc = 1;
    }
  }
  await ctx.cleanup(rc === 1 || !!process.env.E2E_VERBOSE); // E2E_VERBOSE=1: show the logs anyway
  clearTimeout(watchdog);
  process.exit(rc);
}

module.exports = { Skip, sleep, assert, eq, TYPES, configYaml };

if (require.main === module) {
  process.on('unhandledRejection', (e) => { process.stdout.write(`FAIL: unhandled ${e && e.stack}\n`); process.exit(1); });
  main();
}
