// The OTLP collector of tests/http/e2e_otel.sh: a @grpc/grpc-js server of
// opentelemetry.proto.collector.trace.v1.TraceService (and LogsService,
// and Envoy's AccessLogService from tests/http/als_proto) read from
// OpenTelemetry's .protos (tests/http/otel_proto), so the spans Arion's
// hand-made ExportTraceServiceRequest carries are decoded by another
// implementation.
//
//   node e2e_otel.js ADDR PORT LOG
//
// Each span is a line of LOG (JSON: ids in hex, name, kind, times,
// attributes, the resource's service.name, the export's span count).
// On PORT + 1 an HTTP upstream answers "tp=<traceparent> ts=<tracestate>
// rid=<x-request-id> op=<x-envoy-decorator-operation>" ('-' for an absent one); on PORT + 2 a TCP server
// accepts and never answers (a collector that hangs).
'use strict';
const fs = require('fs');
const path = require('path');
const nm = path.join(__dirname, '../xds/peer/node_modules');
const grpc = require(path.join(nm, '@grpc/grpc-js'));
const pl = require(path.join(nm, '@grpc/proto-loader'));

const def = pl.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: false,
  oneofs: true,
  includeDirs: [path.join(__dirname, 'otel_proto')],
});
const svc = grpc.loadPackageDefinition(def).opentelemetry.proto.collector.trace.v1
  .TraceService.service;
const [addr, port, log] = process.argv.slice(2);

function attrs(l) {
  const o = {};
  for (const kv of l || []) o[kv.key] = kv.value ? kv.value[kv.value.value] : null;
  return o;
}

function exportSpans(call, cb) {
  const req = call.request;
  let n = 0;
  for (const rs of req.resource_spans || [])
    for (const ss of rs.scope_spans || []) n += (ss.spans || []).length;
  for (const rs of req.resource_spans || []) {
    const res = attrs(rs.resource && rs.resource.attributes);
    for (const ss of rs.scope_spans || [])
      for (const s of ss.spans || [])
        fs.appendFileSync(log, JSON.stringify({
          trace_id: Buffer.from(s.trace_id || []).toString('hex'),
          span_id: Buffer.from(s.span_id || []).toString('hex'),
          parent: Buffer.from(s.parent_span_id || []).toString('hex'),
          trace_state: s.trace_state || '',
          name: s.name,
          kind: s.kind,
          start: s.start_time_unix_nano,
          end: s.end_time_unix_nano,
          attrs: attrs(s.attributes),
          service: res['service.name'],
          batch: n,
          ct: call.metadata.get('content-type').map(String),
          tenant: call.metadata.get('x-tenant').map(String),
        }) + '\n');
  }
  cb(null, {});
}

require('http')
  .createServer((q, r) => {
    const h = q.headers;
    r.end('tp=' + (h.traceparent || '-') + ' ts=' + (h.tracestate || '-') + ' rid=' +
      (h['x-request-id'] || '-') + ' op=' + (h['x-envoy-decorator-operation'] || '-') + '\n');
  })
  .listen(Number(port) + 1, addr);

const held = [];
require('net').createServer((c) => held.push(c)).listen(Number(port) + 2, addr);

// LogsService/Export: each record of an OpenTelemetry access log is a
// line of LOG.logs (JSON: time, body, attributes, the resource's, the
// export's record count).
const ldef = pl.loadSync('opentelemetry/proto/collector/logs/v1/logs_service.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: false,
  oneofs: true,
  includeDirs: [path.join(__dirname, 'otel_proto')],
});
const lsvc = grpc.loadPackageDefinition(ldef).opentelemetry.proto.collector.logs.v1
  .LogsService.service;

function exportLogs(call, cb) {
  const req = call.request;
  let n = 0;
  for (const rl of req.resource_logs || [])
    for (const sl of rl.scope_logs || []) n += (sl.log_records || []).length;
  for (const rl of req.resource_logs || []) {
    const res = attrs(rl.resource && rl.resource.attributes);
    for (const sl of rl.scope_logs || [])
      for (const r of sl.log_records || [])
        fs.appendFileSync(log + '.logs', JSON.stringify({
          time: r.time_unix_nano,
          body: r.body ? r.body[r.body.value] : null,
          attrs: attrs(r.attributes),
          trace_id: Buffer.from(r.trace_id || []).toString('hex'),
          span_id: Buffer.from(r.span_id || []).toString('hex'),
          res,
          batch: n,
        }) + '\n');
  }
  cb(null, {});
}

// AccessLogService/StreamAccessLogs (Envoy's ALS, a client-streaming
// call): each message is a line of LOG.als (JSON: the stream's number,
// its identifier if it has one, and its entries as proto-loader decodes
// them); the answer comes when the client ends the stream.
const adef = pl.loadSync('envoy/service/accesslog/v3/als.proto', {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: true,
  includeDirs: [path.join(__dirname, 'als_proto')],
});
const asvc = grpc.loadPackageDefinition(adef).envoy.service.accesslog.v3.AccessLogService
  .service;

let streams = 0;
function streamAccessLogs(call, cb) {
  const stream = ++streams;
  call.on('data', (m) =>
    fs.appendFileSync(log + '.als', JSON.stringify(Object.assign({ stream }, m)) + '\n'));
  call.on('end', () => cb(null, {}));
}

const s = new grpc.Server();
s.addService(svc, { Export: exportSpans });
s.addService(lsvc, { Export: exportLogs });
s.addService(asvc, { StreamAccessLogs: streamAccessLogs });
s.bindAsync(`${addr}:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  if (s.start) s.start();
  console.log('listening');
});
