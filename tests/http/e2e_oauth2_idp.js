// The identity provider's token endpoint for tests/http/e2e_oauth2.sh: a
// plain node http server. POST /oauth/token with Envoy's form body:
// code "good" and the expected client (BASIC_AUTH, as Envoy Gateway
// writes it) answer tokens; code "garbage" answers bytes that are no
// JSON; anything else 400. Each request is logged (method, path,
// authorization, body) to argv[4]. A GET is the application behind the
// filter: it answers its path and the Authorization it got.
'use strict';
const http = require('http');
const fs = require('fs');
const [host, port, log] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const basic = 'Basic ' + Buffer.from('arion-client:client-s3cret').toString('base64');
http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    if (req.method === 'GET') { // the application behind the filter
      res.writeHead(200); res.end('app ' + req.url + ' auth=' + (req.headers.authorization || '') + '\n');
      return;
    }
    fs.appendFileSync(log, JSON.stringify({ method: req.method, url: req.url,
      host: req.headers.host, auth: req.headers.authorization || '',
      ct: req.headers['content-type'] || '', body }) + '\n');
    const p = new URLSearchParams(body);
    if (req.method !== 'POST' || req.url !== '/oauth/token' || req.headers.authorization !== basic) {
      res.writeHead(401); res.end('no'); return;
    }
    if (p.get('code') === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"access_token": '); return;
    }
    if (p.get('grant_type') !== 'authorization_code' || p.get('code') !== 'good' ||
        p.get('redirect_uri') !== 'http://198.18.2.2/oauth2/callback') {
      res.writeHead(400); res.end('bad request'); return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: 'at-' + Date.now(), token_type: 'Bearer',
      id_token: 'e30.eyJzdWIiOiJ1c2VyIn0.sig', expires_in: 300, scope: 'openid email' }));
  });
}).listen(port, host, () => console.log('listening'));
