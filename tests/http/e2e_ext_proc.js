// The external processor of tests/http/e2e_ext_proc.sh: a @grpc/grpc-js
// server of envoy.service.ext_proc.v3.ExternalProcessor with Envoy's own
// .protos (the copy under @grpc/grpc-js-xds/deps), so what Arion's
// hand-made ProcessingRequest carries is read by another implementation,
// and what it answers is encoded by one.
//
//   node e2e_ext_proc.js ADDR PORT LOG
//
// (and on PORT + 1 an HTTP upstream that answers "got <x-user> <x-drop>"
// with the request's x-a lines)
//
// Each ProcessingRequest (as JSON, with :authority and x-tenant) is a line
// of LOG. On a request's headers: a :path under /deny gets an
// immediate_response (403, x-why: denied, a body, details "policy says
// no"); under /fail the stream ends UNAVAILABLE; else a CONTINUE with
// x-user: alice set (OVERWRITE_IF_EXISTS_OR_ADD), x-a: 2 added (the
// deprecated append), x-drop removed, and host: evil (refused by Arion's
// mutation rules, as Envoy's). On a response's headers: x-proc: seen
// set, the upstream's x-secret removed, :status 202. On a request's body
// (BUFFERED): the body upper-cased with " [processed]" after it, and
// x-body-len: its length set. The upstream's answer ends with the body
// it got on /body paths. On a response's body (BUFFERED): " [resp]"
// appended. Under /model: x-ai-eg-model: m2 set with clear_route_cache
// (as Envoy AI Gateway's processor), under /model-keep without it. A
// response head of content-type text/event-stream (the upstream's /sse:
// three events, 100 ms apart) is answered as Envoy AI Gateway answers
// an SSE completion's, mode_override {response_body_mode: STREAMED};
// then each piece of its body comes back upper-cased, the end's (empty)
// as it came.
'use strict';
const fs = require('fs');
const path = require('path');
const nm = path.join(__dirname, '../xds/peer/node_modules');
const grpc = require(path.join(nm, '@grpc/grpc-js'));
const pl = require(path.join(nm, '@grpc/proto-loader'));
const deps = path.join(nm, '@grpc/grpc-js-xds/deps');

const def = pl.loadSync('envoy/service/ext_proc/v3/external_processor.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
  oneofs: true,
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) =>
    path.join(deps, d)),
});
const svc = grpc.loadPackageDefinition(def).envoy.service.ext_proc.v3.ExternalProcessor.service;
const [addr, port, log] = process.argv.slice(2);

function hv(k, v) {
  return { key: k, raw_value: Buffer.from(v) };
}

function process_(call) {
  const md = call.metadata.get('x-tenant');
  let streamed = false;
  call.on('data', (req) => {
    const hs = {};
    const hm = req.request_headers || req.response_headers;
    for (const h of (hm && hm.headers && hm.headers.headers) || [])
      hs[h.key] = (hs[h.key] ? hs[h.key] + ',' : '') +
        Buffer.from(h.raw_value || '', 'base64').toString();
    fs.appendFileSync(log, JSON.stringify({
      kind: req.request,
      headers: hs,
      eos: !!((hm && hm.end_of_stream) || (req.request_body && req.request_body.end_of_stream) ||
        (req.response_body && req.response_body.end_of_stream)),
      body: req.request_body ? Buffer.from(req.request_body.body || '', 'base64').toString()
        : req.response_body ? Buffer.from(req.response_body.body || '', 'base64').toString()
          : undefined,
      tenant: md.length ? String(md[0]) : null,
    }) + '\n');
    if (req.request_body) {
      const b = Buffer.from(req.request_body.body || '', 'base64').toString();
      call.write({
        request_body: {
          response: {
            header_mutation: {
              set_headers: [{ header: hv('x-body-len', String(b.length)),
                append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
            },
            body_mutation: { body: Buffer.from(b.toUpperCase() + ' [processed]') },
          },
        },
      });
      return;
    }
    if (req.response_body && streamed) {
      const b = Buffer.from(req.response_body.body || '', 'base64').toString();
      call.write({ response_body: { response: b.length ?
        { body_mutation: { body: Buffer.from(b.toUpperCase()) } } : {} } });
      return;
    }
    if (req.response_body) {
      const b = Buffer.from(req.response_body.body || '', 'base64').toString();
      call.write({
        response_body: {
          response: { body_mutation: { body: Buffer.from(b.replace(/\n$/, '') + ' [resp]\n') } },
        },
      });
      return;
    }
    if (req.response_headers && (hs['content-type'] || '').startsWith('text/event-stream')) {
      streamed = true;
      call.write({
        response_headers: { response: {} },
        mode_override: { response_body_mode: 'STREAMED' },
      });
      return;
    }
    if (req.response_headers) {
      call.write({
        response_headers: {
          response: {
            header_mutation: {
              set_headers: [
                { header: hv('x-proc', 'seen'), append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
                { header: hv(':status', '202'), append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
              ],
              remove_headers: ['x-secret'],
            },
          },
        },
      });
      return;
    }
    const p = hs[':path'] || '';
    if (p.startsWith('/fail')) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'down' });
      return;
    }
    if (p.startsWith('/deny')) {
      call.write({
        immediate_response: {
          status: { code: 'Forbidden' },
          headers: { set_headers: [{ header: hv('x-why', 'denied'),
            append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }] },
          body: Buffer.from('denied by processor\n'),
          details: 'policy says no',
        },
      });
      return;
    }
    if (p.startsWith('/model')) {
      // as Envoy AI Gateway's: the model header, the route chosen again
      call.write({
        request_headers: {
          response: {
            header_mutation: {
              set_headers: [{ header: hv('x-ai-eg-model', 'm2'),
                append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
            },
            clear_route_cache: !p.startsWith('/model-keep'),
          },
        },
      });
      return;
    }
    call.write({
      request_headers: {
        response: {
          header_mutation: {
            set_headers: [
              { header: hv('x-user', 'alice'), append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
              { header: hv('x-a', '2'), append: { value: true } },
              { header: hv('host', 'evil'), append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
            ],
            remove_headers: ['x-drop'],
          },
        },
      },
    });
  });
  call.on('end', () => call.end());
  call.on('error', () => {});
}

require('http')
  .createServer((q, r) => {
    if (q.url.startsWith('/sse')) {
      // an SSE completion: its events as they are made
      r.writeHead(200, { 'content-type': 'text/event-stream' });
      const ev = ['data: one\n\n', 'data: two\n\n', 'data: [DONE]\n\n'];
      const next = () => {
        r.write(ev.shift());
        if (ev.length) setTimeout(next, 100);
        else r.end();
      };
      q.resume();
      q.on('end', next);
      return;
    }
    const a = q.rawHeaders.filter((_, i, l) => i % 2 === 1 && /^x-a$/i.test(l[i - 1]));
    let body = '';
    q.on('data', (d) => { body += d; });
    q.on('end', () => {
      r.setHeader('x-secret', 's');
      r.end('got ' + (q.headers['x-user'] || '-') + ' ' + (q.headers['x-drop'] || '-') + ' ' +
        a.join('|') + ' ' + q.headers.host +
        (q.url.startsWith('/body') ? ' len=' + (q.headers['content-length'] ||
          q.headers['transfer-encoding']) + ' x-body-len=' +
          q.headers['x-body-len'] + ' body=' + body : '') + '\n');
    });
  })
  .listen(Number(port) + 1, addr);

const s = new grpc.Server();
s.addService(svc, { Process: process_ });
s.bindAsync(`${addr}:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  if (s.start) s.start();
  console.log('listening');
});
