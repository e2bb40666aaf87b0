'use strict';
/*
 * Certificates for the TLS scenarios, made at run time with the openssl
 * command (req, x509) in a directory of the test's own, valid for a day:
 *
 *   ca.crt/.key          the CA both sides trust
 *   server.crt/.key      the control plane: SAN DNS:xds.test, IP:127.0.0.1
 *   client.crt/.key      arion: CN=arion, SAN URI:spiffe://arion.test/arion
 *   other-ca.crt/.key    a CA that signed neither (the wrong-CA case)
 *
 * makePki() returns the paths and the PEM contents. Without the openssl
 * command it throws: a check that cannot run fails, it is not skipped.
 */
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function openssl(dir, args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir, name, cn) {
  openssl(dir, ['req', '-x509', ...EC, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1',
    '-subj', `/CN=${cn}`, '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
}

/* A leaf certificate @p name signed by CA @p ca, with extensions @p ext. */
function makeLeaf(dir, name, ca, cn, ext) {
  openssl(dir, ['req', '-new', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
  fs.writeFileSync(path.join(dir, `${name}.ext`), ext.join('\n') + '\n');
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`,
    '-set_serial', String(Math.floor(Math.random() * 1e9) + 1), '-days', '1', '-out', `${name}.crt`,
    '-extfile', `${name}.ext`]);
}

function makePki(dir) {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch (_) {
    throw new Error('needs the openssl command to make test certificates (apt-get install openssl)');
  }
  fs.mkdirSync(dir, { recursive: true });
  makeCa(dir, 'ca', 'arion test CA');
  makeCa(dir, 'other-ca', 'another CA');
  makeLeaf(dir, 'server', 'ca', 'xds server', ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth', 'subjectAltName=DNS:xds.test,IP:127.0.0.1']);
  makeLeaf(dir, 'client', 'ca', 'arion', ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=clientAuth', 'subjectAltName=URI:spiffe://arion.test/arion']);
  const pki = {};
  for (const n of ['ca', 'other-ca', 'server', 'client']) {
    pki[n] = { crt: path.join(dir, `${n}.crt`), key: path.join(dir, `${n}.key`) };
  }
  pki.read = (f) => fs.readFileSync(f);
  /* What AdsServer.start() takes for the control plane's side. */
  pki.serverTls = (requireClientCert) => ({
    ca: pki.read(pki.ca.crt), cert: pki.read(pki.server.crt), key: pki.read(pki.server.key), requireClientCert,
  });
  return pki;
}

module.exports = { makePki };
