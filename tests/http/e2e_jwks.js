// The JWKS server of tests/http/e2e_jwks.sh: HTTPS on ADDR:PORT (CERT,
// KEY), an ES256 key made at start. Writes DIR/tok (a token of issuer
// https://iss.test, audience a1, signed with the key), DIR/tok_other (the
// same claims signed with another key), DIR/tok2 to tok5 (issuers
// https://iss2.test to iss5), then DIR/ready. Serves /jwks.json (with any
// query: the key's JWKS, 300 ms late so that requests overlap), /slow.json (the
// same, 1 s late),
// /big.json (the same JWKS padded to 65537 bytes) and /500 (a 500); each
// request is a line "METHOD PATH HOST" in DIR/fetches.log.
'use strict';
const fs = require('fs');
const https = require('https');
const crypto = require('crypto');
const [addr, port, cert, key, dir] = process.argv.slice(2);

const b64u = (b) => Buffer.from(b).toString('base64url');
const mk = () => crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const k = mk();
const other = mk();
const jwk = Object.assign(k.publicKey.export({ format: 'jwk' }), { kid: 'k1', alg: 'ES256', use: 'sig' });
const jwks = JSON.stringify({ keys: [jwk] });

function token(priv, iss) {
	const h = b64u(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid: 'k1' }));
	const exp = Math.floor(Date.now() / 1000) + 3600;
	const p = b64u(JSON.stringify({ iss, aud: 'a1', sub: 'alice', exp }));
	const sig = crypto.sign('sha256', Buffer.from(h + '.' + p), { key: priv, dsaEncoding: 'ieee-p1363' });
	return h + '.' + p + '.' + b64u(sig);
}

const srv = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
	fs.appendFileSync(dir + '/fetches.log', `${req.method} ${req.url} ${req.headers.host}\n`);
	if (req.url.startsWith('/jwks.json')) {
		setTimeout(() => {
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(jwks);
		}, 300);
	} else if (req.url === '/slow.json') {
		setTimeout(() => {
			res.writeHead(200, { 'content-type': 'application/json' });
			res.end(jwks);
		}, 1000);
	} else if (req.url === '/big.json') {
		res.writeHead(200, { 'content-type': 'application/json' });
		res.end(jwks + ' '.repeat(65537 - jwks.length));
	} else {
		res.writeHead(500);
		res.end('no');
	}
});
srv.listen(Number(port), addr, () => {
	fs.writeFileSync(dir + '/tok', token(k.privateKey, 'https://iss.test'));
	fs.writeFileSync(dir + '/tok_other', token(other.privateKey, 'https://iss.test'));
	fs.writeFileSync(dir + '/tok2', token(k.privateKey, 'https://iss2.test'));
	fs.writeFileSync(dir + '/tok3', token(k.privateKey, 'https://iss3.test'));
	fs.writeFileSync(dir + '/tok4', token(k.privateKey, 'https://iss4.test'));
	fs.writeFileSync(dir + '/tok5', token(k.privateKey, 'https://iss5.test'));
	fs.writeFileSync(dir + '/ready', '1');
});
