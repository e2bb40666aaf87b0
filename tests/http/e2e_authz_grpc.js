// The gRPC authorization service of tests/http/e2e_authz_grpc.sh: a
// @grpc/grpc-js server of envoy.service.auth.v3.Authorization with Envoy's
// own .protos (the copy under @grpc/grpc-js-xds/deps), so what Arion's
// hand-made CheckRequest carries is read by another implementation.
//
//   node e2e_authz_grpc.js ADDR PORT LOG
//
// (and on PORT + 1 an HTTP upstream that answers the body it received)
//
// Each CheckRequest (as JSON, with the call's metadata and :authority)
// is a line of LOG.
// By the request's path: /echo/allow OK (x-test: from-grpc set upstream,
// x-route removed, x-resp: r1 on the response), /echo/deny
// PERMISSION_DENIED (401, www-authenticate, a body), /echo/fail the call
// fails UNAVAILABLE, anything else OK with nothing.
'use strict';
const fs = require('fs');
const path = require('path');
const nm = path.join(__dirname, '../xds/peer/node_modules');
const grpc = require(path.join(nm, '@grpc/grpc-js'));
const pl = require(path.join(nm, '@grpc/proto-loader'));
const deps = path.join(nm, '@grpc/grpc-js-xds/deps');

const def = pl.loadSync('envoy/service/auth/v3/external_auth.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  bytes: String,
  includeDirs: ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) =>
    path.join(deps, d)),
});
const svc = grpc.loadPackageDefinition(def).envoy.service.auth.v3.Authorization.service;
const [addr, port, log] = process.argv.slice(2);

const hv = (key, value) => ({ header: { key, value } });

function check(call, cb) {
  const req = call.request;
  fs.appendFileSync(
    log,
    JSON.stringify({ req, md: call.metadata.getMap(), authority: call.getHost() }) + '\n');
  const p = (((req.attributes || {}).request || {}).http || {}).path || '';
  if (p.startsWith('/echo/allow')) {
    return cb(null, {
      status: { code: 0 },
      ok_response: {
        headers: [{ ...hv('x-test', 'from-grpc'), append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }],
        headers_to_remove: ['x-route'],
        response_headers_to_add: [hv('x-resp', 'r1')],
      },
    });
  }
  if (p.startsWith('/echo/deny')) {
    return cb(null, {
      status: { code: 7 },
      denied_response: {
        status: { code: 'Unauthorized' },
        headers: [hv('www-authenticate', 'Bearer realm="grpc"')],
        body: 'denied by the grpc service\n',
      },
    });
  }
  if (p.startsWith('/echo/fail')) return cb({ code: grpc.status.UNAVAILABLE, details: 'down' });
  return cb(null, { status: { code: 0 } });
}

// PORT + 1: an HTTP/1.1 upstream that answers the body it received
// ("got <body>"), for the body that waited for the check.
require('http')
  .createServer((q, r) => {
    const parts = [];
    q.on('data', (d) => parts.push(d));
    q.on('end', () => r.end('got ' + Buffer.concat(parts).toString() + '\n'));
  })
  .listen(Number(port) + 1, addr);

const s = new grpc.Server();
s.addService(svc, { Check: check });
s.bindAsync(`${addr}:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  if (s.start) s.start();
  console.log('listening');
});
