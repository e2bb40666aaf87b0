'use strict';
/*
 * The control plane of bench/xds/run: tests/xds/peer's delta-ADS server
 * (@grpc/grpc-js), serving N clusters and one RouteConfiguration of N routes
 * to a running arion, then changing one cluster, or one route, at a time and
 * timing each change end to end.
 *
 *   node cp.js DIR N ROUNDS
 *
 * DIR/port       written once listening
 * DIR/probe.sh   given by bench/xds/run: `probe.sh PATH WANT` runs in the
 *                client's namespace, prints "ready", then GETs PATH through
 *                Arion in a keep-alive loop and prints "seen <epoch s>" at the
 *                first response whose body starts with WANT
 * DIR/results.jsonl  one line per measured change
 *
 * Configuration: clusters c0..c{N-1}, STATIC, one endpoint each (inline
 * load_assignment): A (198.18.0.20:8080, answers "A") for all but the last,
 * c{N-1} -> B (198.18.0.21:8080, answers "B"). Route i: prefix /r{i}/ ->
 * cluster c{i}, all N in one virtual host of RouteConfiguration "main",
 * which the listener's HCM gets over RDS.
 *
 * A cluster change: c{i} now points at B (only that Cluster is sent, as
 * delta xDS does). A route change: route j now goes to c{N-1} (B); RDS's
 * unit is the RouteConfiguration, so all N routes are sent again, as any
 * control plane must. Each is timed from just before the response (its
 * resources already serialized) is written to the stream to (1) Arion's ACK arriving and (2) the first
 * request through Arion that reaches B.
 */
const fs = require('fs');
const path = require('path');
const { spawn } = require('child_process');
const { performance } = require('perf_hooks');
const { AdsServer, TYPES, encodeResource } = require(path.join(__dirname, '../../tests/xds/peer/server.js'));

const [dir, nArg, roundsArg] = process.argv.slice(2);
const N = Number(nArg || 10000);
const ROUNDS = Number(roundsArg || 5);
const A = { address: '198.18.0.20', port_value: 8080 };
const B = { address: '198.18.0.21', port_value: 8080 };
const now = () => performance.timeOrigin + performance.now(); // ms, sub-ms precision
// CLOCK_MONOTONIC in ms, the probe's time.monotonic(): durations between
// the two processes, whatever the wall clock does meanwhile (a 76 ms step
// once made every serving time of a run negative)
const mono = () => Number(process.hrtime.bigint()) / 1e6;

const cluster = (i, ep, v) => ({ name: `c${i}`, version: v, resource: {
  '@type': 'type.googleapis.com/envoy.config.cluster.v3.Cluster', name: `c${i}`, type: 'STATIC',
  connect_timeout: '1s',
  load_assignment: { cluster_name: `c${i}`,
    endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: ep } } }] }] } } });
const routes = (v, over) => ({ name: 'main', version: v, resource: {
  '@type': 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration', name: 'main',
  virtual_hosts: [{ name: 'all', domains: ['*'],
    routes: Array.from({ length: N }, (_, i) => ({ match: { prefix: `/r${i}/` },
      route: { cluster: over[i] !== undefined ? `c${over[i]}` : `c${i}` } })) }] } });
const listener = { name: 'http', version: '1', resource: {
  '@type': 'type.googleapis.com/envoy.config.listener.v3.Listener', name: 'http',
  address: { socket_address: { address: '198.18.0.2', port_value: 80 } },
  filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: {
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    stat_prefix: 'bench', generate_request_id: false,
    rds: { config_source: { ads: {} }, route_config_name: 'main' },
    http_filters: [{ name: 'envoy.filters.http.router',
      typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
  } }] }] } };

const srv = new AdsServer({});
let cursor = 0;

/* Send one response; resolve with [t_sent, t_ack] (ms since the epoch),
 * t_sent on the monotonic clock (mono()) and the response's nonce (by
 * which bench/xds/run finds Arion's ACK in its capture).
 * The resources are serialized before the clock starts: what is timed is
 * Arion, not protobufjs (which takes 60 to 300 ms for 10,000 routes). */
function encodeAll(resources) {
  return resources.map((x) => ({ name: x.name, version: x.version,
    raw_any: { type_url: x.resource['@type'], value_b64: encodeResource(x.resource) } }));
}

/* @p raw: encodeAll()'s. */
async function pushRaw(type, raw) {
  const m0 = mono();
  const t0 = now();
  const r = srv.send({ type_url: type, resources: raw });
  const ack = await srv.waitRequest((x) => x.type_url === TYPES[type] && x.response_nonce === r.nonce,
    120000, cursor);
  const t1 = now();
  cursor = ack.seq + 1;
  if (ack.error_detail) throw new Error(`NACK for ${type}: ${JSON.stringify(ack.error_detail)}`);
  return [t0, t1, m0, r.nonce];
}

async function push(type, resources) {
  return pushRaw(type, encodeAll(resources));
}

/* Start a probe for PATH that waits for body WANT; resolves when it is
 * ready (@p warm: once it had an answer on its keep-alive connection). */
function probe(p, want, warm) {
  return new Promise((resolve, reject) => {
    const ch = spawn(path.join(dir, 'probe.sh'), warm ? [p, want, 'warm'] : [p, want],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let readyDone = false;
    const seen = new Promise((res, rej) => {
      ch.stdout.on('data', (d) => {
        buf += d;
        if (!readyDone && buf.includes('ready')) { readyDone = true; resolve({ seen, ch }); }
        const m = buf.match(/seen [0-9.]+ mono ([0-9.]+)/);
        if (m) res(Number(m[1]) * 1000);
      });
      ch.on('exit', (code) => { if (!/seen/.test(buf)) rej(new Error(`probe ${p} exited ${code}: ${buf}`)); });
    });
    seen.catch(() => {});
    ch.on('error', reject);
    setTimeout(() => { if (!readyDone) reject(new Error(`probe ${p} not ready`)); }, 30000);
  });
}

function record(o) {
  fs.appendFileSync(path.join(dir, 'results.jsonl'), JSON.stringify(o) + '\n');
  process.stderr.write(`[xds] ${JSON.stringify(o)}\n`);
}

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((x) => x.type_url === TYPES.cluster, 60000);
  // The initial configuration: N clusters, the listener, N routes.
  // Everything is encoded, and the probe is already knocking, before the
  // clock starts: the time is Arion's, from the first byte of the clusters
  // to the first request answered through it, not protobufjs's (about a
  // second for 10,000 clusters and routes here) or Python's start-up.
  const all = encodeAll(Array.from({ length: N }, (_, i) => cluster(i, i === N - 1 ? B : A, '1')));
  const over = {};
  let rv = 1;
  const lraw = encodeAll([listener]);
  const rraw = encodeAll([routes(String(rv), over)]);
  const pr = await probe(`/r${N - 1}/`, 'B');
  const ti = mono();
  const [c0, c1] = await pushRaw('cluster', all);
  await srv.waitRequest((x) => x.type_url === TYPES.listener, 60000);
  const [l0, l1] = await pushRaw('listener', lraw);
  await srv.waitRequest((x) => x.type_url === TYPES.route, 60000, 0);
  const [r0, r1] = await pushRaw('route', rraw);
  const seen = await pr.seen;
  record({ what: 'initial', n: N, cds_ack_ms: c1 - c0, lds_ack_ms: l1 - l0, rds_ack_ms: r1 - r0,
    serving_ms: seen - ti });

  const settle = () => new Promise((r) => setTimeout(r, 1000));
  for (let k = 0; k < ROUNDS; k++) {
    // one cluster among N: c{i} -> B; each change starts from a quiet
    // second, so that one does not wait for the last one's aftermath
    await settle();
    const i = Math.floor(N / 2) + k;
    const p1 = await probe(`/r${i}/`, 'B', true);
    const [t0, t1, m0, nonce] = await push('cluster', [cluster(i, B, String(k + 2))]);
    const ts = await p1.seen;
    record({ what: 'cluster', n: N, index: i, ack_ms: t1 - t0, serving_ms: ts - m0, t0, nonce });
    // one route among N: route j -> c{N-1} (B)
    await settle();
    const j = Math.floor(N / 3) + k;
    const p2 = await probe(`/r${j}/`, 'B', true);
    over[j] = N - 1;
    rv += 1;
    const [u0, u1, n0, unonce] = await push('route', [routes(String(rv), over)]);
    const us = await p2.seen;
    record({ what: 'route', n: N, index: j, ack_ms: u1 - u0, serving_ms: us - n0, t0: u0,
      nonce: unonce });
  }
  fs.writeFileSync(path.join(dir, 'done'), '');
  process.exit(0);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
