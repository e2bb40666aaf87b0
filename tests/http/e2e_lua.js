// The upstream of tests/http/e2e_lua.sh: a plain node http server that
// answers 200 with the request's headers as JSON (what Arion sent after
// the Lua script's edits) and two headers of its own, x-secret (the
// response script removes it), x-keep and x-body-bytes (the request
// body's length, answered once it is in). Each request's path goes to the
// log (argv[4]), one line each. A path ending in /early is answered at
// once, before its body is read (the body is read and dropped after);
// one ending in /early-rst too, its connection then reset.
'use strict';
const http = require('http');
const fs = require('fs');
const [host, port, log] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
http.createServer((req, res) => {
  fs.appendFileSync(log, req.url + '\n');
  if (req.url.endsWith('/early-rst')) {
    // the same, 1000 bytes with connection: close, then the socket
    // destroyed with the body unread (the kernel sends RST)
    res.writeHead(200, { 'content-type': 'text/plain', 'connection': 'close',
      'content-length': '1000' });
    res.end('x'.repeat(999) + '\n', () => req.socket.destroy());
    return;
  }
  if (req.url.endsWith('/early')) {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-early': '1' });
    res.end('early\n');
    req.resume();
    return;
  }
  // the answer once the request's body is in (x-body-bytes: its length)
  let n = 0;
  req.on('data', (d) => { n += d.length; });
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-secret': 's3cr3t',
      'x-keep': 'kept', 'x-body-bytes': String(n) });
    res.end(JSON.stringify(req.headers) + '\n');
  });
}).listen(port, host);
