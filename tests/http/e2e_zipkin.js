// The peers of tests/http/e2e_zipkin.sh, plain node http servers on
// argv[2]: on port argv[3] a Zipkin collector that records each POST
// (its path, Host, content-type and JSON body, one line each, to argv[4])
// and answers 202 as Zipkin does; on port argv[5] an upstream that
// answers with the B3 headers it got.
'use strict';
const http = require('http');
const fs = require('fs');
const [host, cport, log, uport] =
  [process.argv[2], Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    fs.appendFileSync(log, JSON.stringify({
      method: req.method, path: req.url, host: req.headers.host,
      type: req.headers['content-type'], spans: JSON.parse(body),
    }) + '\n');
    res.writeHead(202);
    res.end();
  });
}).listen(cport, host);
http.createServer((req, res) => {
  const h = (n) => req.headers[n] || '-';
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(`tid=${h('x-b3-traceid')} sid=${h('x-b3-spanid')} pid=${h('x-b3-parentspanid')} ` +
    `s=${h('x-b3-sampled')} b3=${h('b3')}\n`);
}).listen(uport, host);
