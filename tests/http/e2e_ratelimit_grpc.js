// The rate limit service of tests/http/e2e_ratelimit_grpc.sh: a
// @grpc/grpc-js server of envoy.service.ratelimit.v3.RateLimitService
// with Envoy's own .protos (the copy under @grpc/grpc-js-xds/deps), so
// what Arion's hand-made RateLimitRequest carries is read by another
// implementation, and what it answers is encoded by one.
//
//   node e2e_ratelimit_grpc.js ADDR PORT LOG
//
// (and on PORT + 1 an HTTP upstream that answers "got <x-rls-req>")
//
// Each RateLimitRequest (as JSON, with :authority) is a line of LOG. A
// descriptor with the key "fail": UNAVAILABLE. Else a fixed window of 2
// requests per (domain, descriptors): OK with x-rls-req: ok upstream,
// x-rls: ok on the response and each descriptor's status (2 a MINUTE,
// what is left, 60 s to reset); past it OVER_LIMIT with raw_body
// "over the limit" and x-rls: over.
'use strict';
const fs = require('fs');
const path = require('path');
const nm = path.join(__dirname, '../xds/peer/node_modules');
const grpc = require(path.join(nm, '@grpc/grpc-js'));
const pl = require(path.join(nm, '@grpc/proto-loader'));
const deps = path.join(nm, '@grpc/grpc-js-xds/deps');

const def = pl.loadSync('envoy/service/ratelimit/v3/rls.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) =>
    path.join(deps, d)),
});
const svc = grpc.loadPackageDefinition(def).envoy.service.ratelimit.v3.RateLimitService.service;
const [addr, port, log] = process.argv.slice(2);
const seen = new Map();

function shouldRateLimit(call, cb) {
  const req = call.request;
  fs.appendFileSync(log, JSON.stringify({ req, authority: call.getHost() }) + '\n');
  const ds = req.descriptors || [];
  if (ds.some((d) => (d.entries || []).some((e) => e.key === 'fail')))
    return cb({ code: grpc.status.UNAVAILABLE, details: 'down' });
  const k = JSON.stringify([req.domain, ds]);
  const n = (seen.get(k) || 0) + 1;
  seen.set(k, n);
  const statuses = ds.map(() => ({
    code: n > 2 ? 'OVER_LIMIT' : 'OK',
    current_limit: { requests_per_unit: 2, unit: 'MINUTE' },
    limit_remaining: Math.max(0, 2 - n),
    duration_until_reset: { seconds: 60 },
  }));
  if (n > 2)
    return cb(null, {
      overall_code: 'OVER_LIMIT',
      statuses,
      response_headers_to_add: [{ key: 'x-rls', value: 'over' }],
      raw_body: Buffer.from('over the limit\n'),
    });
  return cb(null, {
    overall_code: 'OK',
    statuses,
    response_headers_to_add: [{ key: 'x-rls', value: 'ok' }],
    request_headers_to_add: [{ key: 'x-rls-req', value: 'ok' }],
  });
}

require('http')
  .createServer((q, r) => r.end('got ' + (q.headers['x-rls-req'] || '-') + '\n'))
  .listen(Number(port) + 1, addr);

const s = new grpc.Server();
s.addService(svc, { ShouldRateLimit: shouldRateLimit });
s.bindAsync(`${addr}:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  if (s.start) s.start();
  console.log('listening');
});
