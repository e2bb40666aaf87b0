// Peers for tests/http/e2e_h2_upstream.sh (upstream HTTP/2, issue 19):
//
//   node e2e_h2_upstream.js server ADDR H2PORT GRPCPORT MIXPORT [TLSPORT CERT KEY]
//     H2PORT: node's http2 module, h2c (prior knowledge):
//       /echo...    "<method> <path> <te> <content-length> <body bytes> <sha256>"
//       /trailers   a body, then the trailer x-trailer: yes
//       /echo-trailers  the request's body back, then the request's
//                   trailers back as the response's (x-none: 1 if none)
//       /big?n=N    N bytes of a repeating pattern (flow control)
//       /delay?ms=M answers after M ms
//       /reset      RST_STREAM (INTERNAL_ERROR) before any response
//       /refuse     RST_STREAM REFUSED_STREAM before any response
//     GRPCPORT: @grpc/grpc-js, service test.Echo with raw-bytes messages:
//       Unary (echo "u:" + msg; "fail" answers NOT_FOUND "nope"),
//       ServerStream (5 messages), ClientStream (joins them), Bidi (echo each)
//   node e2e_h2_upstream.js client HOST:PORT
//     the four calls through Arion; one line each, for the shell to check
//   node e2e_h2_upstream.js trailers HOST:PORT
//     h2c POST /echo-trailers with body "hello" and the trailers x-sum: 5,
//     x-trace: t1; prints "<status> <body> <response trailers>"
'use strict';
const path = require('path');
const http2 = require('http2');
const crypto = require('crypto');
const grpc = require(path.join(__dirname, '../xds/peer/node_modules/@grpc/grpc-js'));

const id = (b) => b;
const m = (name, req, res) => ({
  path: `/test.Echo/${name}`,
  requestStream: req,
  responseStream: res,
  requestSerialize: id,
  requestDeserialize: id,
  responseSerialize: id,
  responseDeserialize: id,
});
const svc = {
  Unary: m('Unary', false, false),
  ServerStream: m('ServerStream', false, true),
  ClientStream: m('ClientStream', true, false),
  Bidi: m('Bidi', true, true),
};

function server(addr, h2port, grpcport, mixport, tls) {
  const h = http2.createServer();
  h.on('stream', (s, hdr) => {
    s.on('error', () => {}); // a reset (ours or Arion's) is no crash
    const p = hdr[':path'];
    const q = new URL(p, 'http://x');
    if (q.pathname === '/reset') return s.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    if (q.pathname === '/refuse') return s.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    const chunks = [];
    let got = null; // the request's trailers
    s.on('trailers', (t) => {
      got = {};
      for (const k of Object.keys(t)) got[k] = t[k];
    });
    s.on('data', (c) => chunks.push(c));
    s.on('end', () => {
      const body = Buffer.concat(chunks);
      if (q.pathname === '/echo-trailers') {
        s.respond({ ':status': 200 }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers(got || { 'x-none': '1' }));
        return s.end(body);
      }
      if (q.pathname === '/big') {
        const n = Number(q.searchParams.get('n'));
        s.respond({ ':status': 200, 'content-type': 'application/octet-stream' });
        const blk = Buffer.alloc(16384, 'abcdefghijklmnopqrstuvwxyz0123456789');
        let left = n;
        const pump = () => {
          while (left > 0) {
            const k = Math.min(left, blk.length);
            left -= k;
            if (!s.write(blk.subarray(0, k))) return s.once('drain', pump);
          }
          s.end();
        };
        return pump();
      }
      if (q.pathname === '/trailers') {
        s.respond({ ':status': 200 }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'x-trailer': 'yes' }));
        return s.end('with trailers\n');
      }
      const answer = () => {
        if (s.destroyed) return;
        s.respond({ ':status': 200, 'x-upstream-proto': 'h2' });
        s.end(`${hdr[':method']} ${p} ${hdr.te || '-'} ${hdr['content-length'] || '-'} ` +
          `${body.length} ${crypto.createHash('sha256').update(body).digest('hex')}\n`);
      };
      if (q.pathname === '/delay') return setTimeout(answer, Number(q.searchParams.get('ms')));
      answer();
    });
  });
  h.on('sessionError', () => {});
  h.listen(h2port, addr);

  // MIXPORT (the fourth argument): HTTP/1.1 and h2c on one port, told
  // apart by the client preface, answering "<protocol> <path>"
  const mixed = (req, res) => res.end(`${req.httpVersion} ${req.url}\n`);
  const h1s = require('http').createServer(mixed);
  const h2s = http2.createServer(mixed);
  require('net')
    .createServer((sock) => {
      sock.once('data', (buf) => {
        if (buf.subarray(0, 3).toString() !== 'PRI') {
          sock.pause();
          sock.unshift(buf);
          h1s.emit('connection', sock);
          return sock.resume();
        }
        // nghttp2 in node reads the socket's handle, not what was
        // unshifted: hand it a stream that replays the first bytes
        const { Duplex } = require('stream');
        const d = new Duplex({
          read() {},
          write(c, e, cb) {
            sock.write(c, cb);
          },
          final(cb) {
            sock.end();
            cb();
          },
        });
        d.push(buf);
        sock.on('data', (c) => d.push(c));
        sock.on('end', () => d.push(null));
        sock.on('error', () => d.destroy());
        h2s.emit('connection', d);
      });
    })
    .listen(mixport, addr);

  // TLSPORT (the fifth argument, with CERT and KEY): HTTP/2 or HTTP/1.1
  // over TLS as ALPN chooses, answering "<protocol> <alpn> <path>"
  if (tls) {
    const fs = require('fs');
    http2
      .createSecureServer({ cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key),
        allowHTTP1: true },
        (req, res) => res.end(`${req.httpVersion} ${req.socket.alpnProtocol} ${req.url}\n`))
      .listen(tls.port, addr);
  }

  const g = new grpc.Server();
  g.addService(svc, {
    Unary: (call, cb) => {
      const s = call.request.toString();
      if (s === 'fail') return cb({ code: grpc.status.NOT_FOUND, details: 'nope' });
      cb(null, Buffer.from('u:' + s));
    },
    ServerStream: (call) => {
      for (let i = 0; i < 5; i++) call.write(Buffer.from(`s${i}:` + call.request.toString()));
      call.end();
    },
    ClientStream: (call, cb) => {
      const got = [];
      call.on('data', (d) => got.push(d.toString()));
      call.on('end', () => cb(null, Buffer.from('c:' + got.join(','))));
    },
    Bidi: (call) => {
      call.on('data', (d) => call.write(Buffer.from('b:' + d.toString())));
      call.on('end', () => call.end());
    },
  });
  g.bindAsync(`${addr}:${grpcport}`, grpc.ServerCredentials.createInsecure(), (err) => {
    if (err) {
      console.error(err);
      process.exit(1);
    }
    console.log('ready');
  });
}

function client(target) {
  const C = grpc.makeGenericClientConstructor(svc, 'Echo');
  const c = new C(target, grpc.credentials.createInsecure());
  const dl = () => ({ deadline: Date.now() + 10000 });
  const st = (e) => (e ? `${e.code} ${e.details}` : '0');
  const unary = (msg) =>
    new Promise((res) =>
      c.Unary(Buffer.from(msg), dl(), (e, r) => res(`unary ${st(e)} ${r ? r.toString() : '-'}`)));
  const sstream = () =>
    new Promise((res) => {
      const got = [];
      const call = c.ServerStream(Buffer.from('x'), dl());
      call.on('data', (d) => got.push(d.toString()));
      call.on('error', (e) => res(`server-stream ${st(e)} ${got.join(',')}`));
      call.on('status', (s) => {
        if (s.code === 0) res(`server-stream 0 ${got.join(',')}`);
      });
    });
  const cstream = () =>
    new Promise((res) => {
      const call = c.ClientStream(dl(), (e, r) =>
        res(`client-stream ${st(e)} ${r ? r.toString() : '-'}`));
      for (const w of ['a', 'b', 'c', 'd']) call.write(Buffer.from(w));
      call.end();
    });
  const bidi = () =>
    new Promise((res) => {
      const got = [];
      const call = c.Bidi(dl());
      let i = 0;
      const next = () => {
        if (i === 3) return call.end();
        call.write(Buffer.from(`m${i++}`));
      };
      // one message at a time: each answer comes back before the next goes
      call.on('data', (d) => {
        got.push(d.toString());
        next();
      });
      call.on('error', (e) => res(`bidi ${st(e)} ${got.join(',')}`));
      call.on('status', (s) => {
        if (s.code === 0) res(`bidi 0 ${got.join(',')}`);
      });
      next();
    });
  (async () => {
    console.log(await unary('hello'));
    console.log(await unary('fail'));
    console.log(await sstream());
    console.log(await cstream());
    console.log(await bidi());
    c.close();
    process.exit(0);
  })();
}

// h2c request trailers through Arion, and the upstream's echo of them
function trailers(target) {
  const c = http2.connect(`http://${target}`);
  c.on('error', (e) => {
    console.log(`error ${e.message}`);
    process.exit(1);
  });
  const r = c.request({ ':method': 'POST', ':path': '/echo-trailers' }, { waitForTrailers: true });
  r.on('wantTrailers', () => r.sendTrailers({ 'x-sum': '5', 'x-trace': 't1' }));
  let status = 0;
  let tr = '-';
  const body = [];
  r.on('response', (h) => (status = h[':status']));
  r.on('trailers', (t) => (tr = Object.keys(t).map((k) => `${k}=${t[k]}`).join(';')));
  r.on('data', (d) => body.push(d));
  r.on('end', () => {
    console.log(`${status} ${Buffer.concat(body).toString()} ${tr}`);
    c.close();
  });
  r.end('hello');
}

const [mode, ...a] = process.argv.slice(2);
if (mode === 'trailers') trailers(a[0]);
else if (mode === 'server')
  server(a[0], Number(a[1]), Number(a[2]), Number(a[3]),
    a[4] ? { port: Number(a[4]), cert: a[5], key: a[6] } : null);
else client(a[0]);
