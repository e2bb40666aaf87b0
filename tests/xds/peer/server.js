'use strict';
/*
 * A delta-ADS server for Arion's xDS tests: an independent gRPC and HTTP/2
 * implementation (@grpc/grpc-js) speaking
 * envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources
 * with Envoy's own .proto files (from @grpc/grpc-js-xds, deps/).
 *
 * It logs every request it receives as one JSON line and is driven either
 * programmatically (tests: new AdsServer(), await srv.waitRequest(...),
 * srv.send(...)) or by a scenario file:
 *
 *   node server.js --port 20101 --log requests.jsonl --scenario s.json
 *
 * A scenario is {"steps": [...]} run in order; each step is one of
 *   {"expect": {"type_url": T, "nonce": N, "nack": bool, "timeout_ms": ms}}
 *   {"send": RESPONSE}         (see toResponse() below)
 *   {"sleep_ms": ms}
 *   {"close_stream": {"code": 14, "details": "..."}}
 *   {"stop": true}             (stop listening; the process stays)
 *   {"restart_after_ms": ms}   (stop, wait, listen again on the same port)
 * and the process exits when the steps are done (0) or one fails (1),
 * unless "stay": true.
 *
 * Resources in responses are written as proto3 JSON-ish objects with
 * "@type" (field names as in the .proto; durations as "0.25s" or
 * {seconds, nanos}; nested Any with "@type").
 */
const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const DEPS = path.join(path.dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const INCLUDE = ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => path.join(DEPS, d))
  .concat([path.join(__dirname, '..', '..', '..', 'proto')]); // Arion's own (TDS, the MCP filter)
const METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

const { TYPES } = require(path.join(__dirname, '..', '..', 'common', 'xds_e2e.js'));

const RESOURCE_PROTOS = [
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/extensions/transport_sockets/tls/v3/secret.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/filters/http/basic_auth/v3/basic_auth.proto',
  'envoy/extensions/access_loggers/file/v3/file.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
  'envoy/service/discovery/v3/discovery.proto',
  'arion/extensions/mcp/v3/tool_set.proto',
  'arion/extensions/filters/http/mcp_gateway/v3/mcp_gateway.proto',
];

let rootCache = null;
function resourceRoot() {
  if (rootCache) return rootCache;
  const root = new protobuf.Root();
  root.resolvePath = (origin, target) => {
    if (protobuf.common[target]) return target;
    for (const d of INCLUDE) {
      const p = path.join(d, target);
      if (fs.existsSync(p)) return p;
    }
    return target;
  };
  root.loadSync(RESOURCE_PROTOS, { keepCase: true });
  root.resolveAll();
  rootCache = root;
  return root;
}

function typeOf(url) {
  const name = url.slice(url.lastIndexOf('/') + 1);
  return resourceRoot().lookupType(name);
}

function parseDuration(s) {
  const m = /^(-?\d+)(?:\.(\d{1,9}))?s$/.exec(s);
  if (!m) throw new Error(`bad duration '${s}'`);
  const nanos = m[2] ? Number(m[2].padEnd(9, '0')) : 0;
  return { seconds: Number(m[1]), nanos: m[1].startsWith('-') ? -nanos : nanos };
}

/* JSON-ish object -> plain object protobufjs' fromObject takes, with Any
 * packed and durations parsed. */
function prepare(type, obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === '@type') continue;
    const f = type.fields[k];
    if (!f) throw new Error(`${type.fullName} has no field '${k}'`);
    const conv = (x) => {
      const rt = f.resolvedType;
      if (!(rt instanceof protobuf.Type)) return x;
      if (rt.fullName === '.google.protobuf.Duration' && typeof x === 'string') return parseDuration(x);
      if (rt.fullName === '.google.protobuf.Any' && x && x['@type']) return packAny(x);
      if (rt.fullName.startsWith('.google.protobuf.') && rt.fullName.endsWith('Value') && typeof x !== 'object') return { value: x };
      return typeof x === 'object' && x !== null ? prepare(rt, x) : x;
    };
    if (f.map) out[k] = Object.fromEntries(Object.entries(v).map(([mk, mv]) => [mk, conv(mv)]));
    else if (f.repeated) out[k] = v.map(conv);
    else out[k] = conv(v);
  }
  return out;
}

function encodeResource(obj) {
  const url = obj['@type'];
  if (!url) throw new Error('resource without @type');
  const t = typeOf(url);
  const plain = prepare(t, obj);
  return Buffer.from(t.encode(t.fromObject(plain)).finish());
}

function packAny(obj) {
  return { type_url: obj['@type'], value: encodeResource(obj) };
}

/*
 * A response: {type_url (or short: cluster, listener, ...), nonce, system_version_info,
 *   resources: [{name, version, resource: {...@type...} | null, raw_any: {type_url, value_b64},
 *     ttl: "2s"}] (a resource without a body but with the version held is a heartbeat),
 *   removed_resources: [...], pad_bytes: N (grows system_version_info, for X6)}
 */
function toResponse(r, autoNonce) {
  const type_url = TYPES[r.type_url] || r.type_url;
  const resources = (r.resources || []).map((x) => {
    const res = { name: x.name, version: x.version || '' };
    if (x.ttl) res.ttl = typeof x.ttl === 'string' ? parseDuration(x.ttl) : x.ttl;
    if (x.raw_any) res.resource = { type_url: x.raw_any.type_url, value: Buffer.from(x.raw_any.value_b64 || '', 'base64') };
    else if (x.resource) res.resource = packAny(x.resource);
    return res;
  });
  let sv = r.system_version_info || '';
  if (r.pad_bytes) sv += 'x'.repeat(r.pad_bytes);
  return {
    type_url,
    nonce: r.nonce || autoNonce(),
    system_version_info: sv,
    resources,
    removed_resources: r.removed_resources || [],
  };
}

function loadService() {
  const def = protoLoader.loadSync('envoy/service/discovery/v3/ads.proto', {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: INCLUDE,
  });
  return grpc.loadPackageDefinition(def).envoy.service.discovery.v3.AggregatedDiscoveryService.service;
}

function summarize(req) {
  const o = {
    type_url: req.type_url,
    response_nonce: req.response_nonce,
    resource_names_subscribe: req.resource_names_subscribe || [],
    resource_names_unsubscribe: req.resource_names_unsubscribe || [],
    initial_resource_versions: req.initial_resource_versions || {},
  };
  if (req.error_detail) o.error_detail = { code: req.error_detail.code, message: req.error_detail.message };
  if (req.node) {
    o.node = { id: req.node.id, cluster: req.node.cluster, user_agent_name: req.node.user_agent_name,
      client_features: req.node.client_features || [] };
  }
  return o;
}

class AdsServer {
  constructor(opts = {}) {
    this.logFile = opts.log || null;
    this.requests = [];
    this.responses = []; // what send() sent: {stream, type_url, nonce, resources (names), removed}
    this.streams = [];
    this.waiters = [];
    this.nonceSeq = 0;
    this.server = null;
    this.port = null;
    this.service = loadService();
    this.onRequest = opts.onRequest || null;
    this.t0 = Date.now();
  }

  log(obj) {
    if (this.logFile) fs.appendFileSync(this.logFile, JSON.stringify(obj) + '\n');
  }

  nextNonce() { return `n${++this.nonceSeq}`; }

  get stream() {
    const live = this.streams.filter((s) => !s.ended);
    return live[live.length - 1] || null;
  }

  handler(call) {
    const s = { id: this.streams.length + 1, call, ended: false, sent: [], peer: call.getPeer(), t: Date.now() };
    // Over TLS: the client certificate's subject CN (mTLS), as the server saw it.
    const auth = typeof call.getAuthContext === 'function' ? call.getAuthContext() : null;
    const pc = auth && auth.sslPeerCertificate;
    if (auth && auth.transportSecurityType) s.security = auth.transportSecurityType;
    if (pc && pc.subject) s.peer_cn = pc.subject.CN;
    this.streams.push(s);
    this.log({ t: Date.now(), event: 'stream', stream: s.id, peer: s.peer, security: s.security, peer_cn: s.peer_cn });
    call.sendMetadata(new grpc.Metadata());
    call.on('data', (req) => {
      const e = { t: Date.now(), stream: s.id, seq: this.requests.length, ...summarize(req) };
      // Stale: the nonce answered is not the last one this stream sent for the type.
      const last = [...s.sent].reverse().find((x) => x.type_url === req.type_url);
      e.stale = !!(req.response_nonce && last && last.nonce !== req.response_nonce);
      this.requests.push(e);
      this.log(e);
      this.wake();
      this.snapRequest(e, s);
      if (this.onRequest) this.onRequest(e, s);
    });
    const end = (why) => {
      if (s.ended) return;
      s.ended = true;
      this.log({ t: Date.now(), event: 'stream_end', stream: s.id, why });
      this.wake();
    };
    call.on('end', () => { end('client half-close'); try { call.end(); } catch (_) { /* closed */ } });
    call.on('cancelled', () => end('cancelled'));
    call.on('error', (err) => end(`error ${err.code}`));
    call.on('close', () => end('closed'));
  }

  wake() {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  /*
   * Listen on @p host:@p port; plaintext, or TLS when @p tls is
   * {ca, cert, key} (PEM strings or Buffers) with requireClientCert: the
   * client must present a certificate signed by ca (mTLS).
   */
  start(port, host = '127.0.0.1', tls = null) {
    if (tls) this.tls = tls;
    else if (tls === null && this.tls) tls = this.tls; // a restart keeps its credentials
    return new Promise((resolve, reject) => {
      const server = new grpc.Server({ 'grpc.max_send_message_length': -1, 'grpc.max_receive_message_length': -1 });
      server.addService(this.service, { DeltaAggregatedResources: (call) => this.handler(call) });
      const creds = tls
        ? grpc.ServerCredentials.createSsl(Buffer.from(tls.ca), [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
          !!tls.requireClientCert)
        : grpc.ServerCredentials.createInsecure();
      server.bindAsync(`${host}:${port}`, creds, (err, p) => {
        if (err) return reject(err);
        this.server = server;
        this.port = p;
        this.log({ t: Date.now(), event: 'listening', port: p });
        resolve(p);
      });
    });
  }

  /* Stop listening and drop every stream at once (the control plane dies). */
  stop() {
    if (!this.server) return;
    this.server.forceShutdown();
    this.server = null;
    for (const s of this.streams) s.ended = true;
    this.log({ t: Date.now(), event: 'stopped' });
    this.wake();
  }

  /* Send a response on the newest live stream (or @p stream). Returns it. */
  send(r, stream) {
    const s = stream || this.stream;
    if (!s) throw new Error('no live stream to send on');
    const resp = toResponse(r, () => this.nextNonce());
    s.sent.push({ type_url: resp.type_url, nonce: resp.nonce });
    const summary = { stream: s.id, type_url: resp.type_url, nonce: resp.nonce,
      resources: resp.resources.map((x) => x.name), removed: resp.removed_resources };
    this.responses.push(summary);
    this.log({ t: Date.now(), event: 'response', ...summary, bytes: resp.system_version_info.length });
    s.call.write(resp);
    return resp;
  }

  closeStream(code = grpc.status.UNAVAILABLE, details = 'closed by the test server') {
    const s = this.stream;
    if (!s) return;
    s.ended = true;
    s.call.emit('error', { code, details });
    try { s.call.destroy({ code, details }); } catch (_) { /* gone */ }
  }

  /*
   * Serve @p snap the way go-control-plane's delta server serves a snapshot
   * cache: {version, listener: [{name, version, resource, ttl}], cluster:
   * [...], ...} (keys as in TYPES). Per stream and type the server keeps
   * what it believes the client holds: the first request's
   * initial_resource_versions, then every response it *sends*, ACKed or
   * NACKed alike. Each request is a watch; while one is open and the
   * snapshot differs from that belief, the server sends the difference
   * (new or changed resources, removals of names the snapshot lacks) and
   * waits for the next request. Wildcard subscriptions only (the five
   * types). setSnapshot() may come before or after the streams open.
   */
  setSnapshot(snap) {
    this.snap = snap;
    this.log({ t: Date.now(), event: 'snapshot', version: snap.version });
    for (const s of this.streams.filter((x) => !x.ended)) {
      for (const t of Object.keys(s.snap || {})) this.snapRespond(s, t);
    }
  }

  snapRequest(e, s) {
    s.snap = s.snap || {};
    let st = s.snap[e.type_url];
    if (!st) st = s.snap[e.type_url] = { known: new Map(Object.entries(e.initial_resource_versions || {})) };
    st.watching = true;
    this.snapRespond(s, e.type_url);
  }

  snapRespond(s, typeUrl) {
    const st = s.snap && s.snap[typeUrl];
    if (!this.snap || !st || !st.watching || s.ended) return;
    const key = Object.keys(TYPES).find((k) => TYPES[k] === typeUrl);
    const want = this.snap[key] || [];
    const changed = want.filter((r) => st.known.get(r.name) !== r.version);
    const names = new Set(want.map((r) => r.name));
    const removed = [...st.known.keys()].filter((n) => !names.has(n)).sort();
    if (changed.length === 0 && removed.length === 0) return;
    st.watching = false;
    for (const r of changed) st.known.set(r.name, r.version);
    for (const n of removed) st.known.delete(n);
    this.send({ type_url: typeUrl, system_version_info: this.snap.version || '', resources: changed, removed_resources: removed }, s);
  }

  /* Wait for a request matching @p pred among those at index >= @p from. */
  async waitRequest(pred, timeoutMs = 10000, from = 0) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.requests.slice(from).find(pred);
      if (r) return r;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching request within ${timeoutMs} ms; got:\n${this.requests.map((x) => JSON.stringify(x)).join('\n')}`);
      await new Promise((res) => { const t = setTimeout(res, Math.min(left, 200)); this.waiters.push(() => { clearTimeout(t); res(); }); });
    }
  }

  async waitStream(n, timeoutMs = 10000) {
    const deadline = Date.now() + timeoutMs;
    while (this.streams.length < n) {
      if (Date.now() > deadline) throw new Error(`stream ${n} did not open within ${timeoutMs} ms`);
      await new Promise((res) => setTimeout(res, 20));
    }
    return this.streams[n - 1];
  }
}

async function runScenario(srv, steps) {
  let cursor = 0;
  for (const st of steps) {
    if (st.expect) {
      const e = st.expect;
      const t = TYPES[e.type_url] || e.type_url;
      const r = await srv.waitRequest((x) => (!t || x.type_url === t) &&
        (e.nonce === undefined || x.response_nonce === e.nonce) &&
        (e.nack === undefined || !!x.error_detail === e.nack), e.timeout_ms || 10000, cursor);
      cursor = r.seq + 1;
    } else if (st.send) srv.send(st.send);
    else if (st.sleep_ms) await new Promise((r) => setTimeout(r, st.sleep_ms));
    else if (st.close_stream) srv.closeStream(st.close_stream.code, st.close_stream.details);
    else if (st.stop) srv.stop();
    else if (st.restart_after_ms) {
      const p = srv.port;
      srv.stop();
      await new Promise((r) => setTimeout(r, st.restart_after_ms));
      await srv.start(p);
    } else throw new Error(`unknown step ${JSON.stringify(st)}`);
  }
}

module.exports = { AdsServer, TYPES, runScenario, encodeResource, toResponse, resourceRoot, grpc };

if (require.main === module) {
  const args = process.argv.slice(2);
  const opt = (n, d) => { const i = args.indexOf(`--${n}`); return i >= 0 ? args[i + 1] : d; };
  const srv = new AdsServer({ log: opt('log', null) });
  const scen = opt('scenario', null) ? JSON.parse(fs.readFileSync(opt('scenario'), 'utf8')) : { steps: [], stay: true };
  srv.start(Number(opt('port', '50051'))).then(async (p) => {
    process.stderr.write(`delta-ADS test server on 127.0.0.1:${p}\n`);
    try {
      await runScenario(srv, scen.steps || []);
    } catch (e) {
      process.stderr.write(`scenario failed: ${e.message}\n`);
      process.exit(1);
    }
    if (!scen.stay) { srv.stop(); process.exit(0); }
  }, (e) => { process.stderr.write(`cannot listen: ${e.message}\n`); process.exit(1); });
}
