// The upstream of tests/http/e2e_cresp.sh: a plain node http server.
// /missing answers a 404 HTML page, gzip-encoded and chunked; /busy a 503
// with a body of its own; /big a 404 whose 8 MB body it writes slowly
// (the custom response must not wait for it); anything else 200 with its
// path. Each request is counted in the log (argv[4]), one line each.
'use strict';
const http = require('http');
const zlib = require('zlib');
const fs = require('fs');
const [host, port, log] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
http.createServer((req, res) => {
  fs.appendFileSync(log, req.url + '\n');
  if (req.url === '/missing') {
    res.writeHead(404, { 'content-type': 'text/html', 'content-encoding': 'gzip',
      'x-upstream': 'node' });
    res.end(zlib.gzipSync('<html><body>upstream 404 page</body></html>'));
  } else if (req.url === '/busy') {
    res.writeHead(503, { 'content-type': 'text/plain', 'x-upstream': 'node' });
    res.end('upstream busy\n');
  } else if (req.url === '/big') {
    res.writeHead(404, { 'content-length': String(8 << 20) });
    let sent = 0;
    const more = () => {
      if (sent >= 8 << 20 || res.destroyed) return;
      sent += 65536;
      res.write(Buffer.alloc(65536, 0x78));
      setTimeout(more, 50);
    };
    more();
  } else {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok ' + req.url + '\n');
  }
}).listen(port, host);
