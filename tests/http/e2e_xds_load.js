'use strict';
/*
 * The control plane of tests/http/e2e_xds_load.sh: tests/xds/peer's
 * delta-ADS server, driven on a timeline while wrk runs through Arion.
 *
 *   node e2e_xds_load.js DIR
 *
 * Writes DIR/port once listening, serves the first configuration (listener
 * with RDS "main" -> cluster web (EDS) = [A]), writes DIR/ready when Arion
 * has ACKed all of it, then waits for DIR/go and applies, 1.5 s apart:
 *   1 EDS  web  = [A, B]                 an endpoint added
 *   2 CDS  web2 (EDS) = [B], RDS main -> web2   a route changed
 *   3 EDS  web2 = [A]                    an endpoint replaced (B removed)
 *   4 RDS  main -> web, EDS web = [B]    back, A removed from web
 *   5 LDS  http v2 (stat_prefix ingress2) the listener itself replaced
 *   6 CDS  web2 removed                  a cluster nothing routes to any more
 *   7 RDS  main -> web2 with a regex that does not compile: NACKed, and
 *          traffic goes on with generation 6 (G7, X15); had any of it been
 *          applied, requests would get 503 NC (web2 is gone)
 * and writes DIR/done after Arion answered the last one.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));

const dir = process.argv[2];
const A = { address: '198.18.3.10', port_value: 8080 };
const B = { address: '198.18.3.11', port_value: 8080 };
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

/* resources as the server sends them: {name, version, resource} */
const cluster = (name) => ({ name, version: '1', resource: x.edsCluster(name, '1s', { lb_policy: 'ROUND_ROBIN' }) });
const cla = (name, v, eps) => ({ name, version: v,
  resource: x.cla(name, eps.map((a) => x.ep(a.address, a.port_value))) });
const route = (v, c) => ({ name: 'main', version: v, resource: x.route('main', c, 'all') });
const listenerV = (v, prefix) => ({ name: 'http', version: v,
  resource: x.listenerRds('http', 80, 'main', { address: '198.18.2.2', statPrefix: prefix }) });
const listener = listenerV('1', 'ingress');
const badRoute = { name: 'main', version: '4', resource: {
  '@type': x.TYPES.route, name: 'main',
  virtual_hosts: [{ name: 'all', domains: ['*'],
    routes: [{ match: { safe_regex: { regex: '(' } }, route: { cluster: 'web2' } }] }] } };

const srv = new AdsServer({ log: path.join(dir, 'ads.jsonl') });
const ads = x.ackedSender(srv);
const { sendAcked } = ads;

async function sendNacked(type, resources, want) {
  const nack = await ads.sendNacked(type, resources);
  const msg = nack.error_detail.message;
  if (!msg || !msg.includes(want)) throw new Error(`wanted a NACK naming '${want}' for ${type}, got ${JSON.stringify(nack)}`);
  fs.writeFileSync(path.join(dir, 'nack'), msg);
}

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((x) => x.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [cluster('web')]);
  await sendAcked('cla', [cla('web', '1', [A])]);
  await sendAcked('listener', [listener]);
  await sendAcked('route', [route('1', 'web')]);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  while (!fs.existsSync(path.join(dir, 'go'))) await sleep(50);
  await sleep(1500);
  await sendAcked('cla', [cla('web', '2', [A, B])]);
  fs.appendFileSync(path.join(dir, 'steps'), `1 ${Date.now()}\n`);
  await sleep(1500);
  await sendAcked('cluster', [cluster('web2')]);
  await sendAcked('cla', [cla('web2', '1', [B])]);
  await sendAcked('route', [route('2', 'web2')]);
  fs.appendFileSync(path.join(dir, 'steps'), `2 ${Date.now()}\n`);
  await sleep(1500);
  await sendAcked('cla', [cla('web2', '2', [A])]);
  fs.appendFileSync(path.join(dir, 'steps'), `3 ${Date.now()}\n`);
  await sleep(1500);
  await sendAcked('cla', [cla('web', '3', [B])]);
  await sendAcked('route', [route('3', 'web')]);
  fs.appendFileSync(path.join(dir, 'steps'), `4 ${Date.now()}\n`);
  await sleep(1500);
  await sendAcked('listener', [listenerV('2', 'ingress2')]);
  fs.appendFileSync(path.join(dir, 'steps'), `5 ${Date.now()}\n`);
  await sleep(1500);
  await sendAcked('cluster', [], ['web2']);
  fs.appendFileSync(path.join(dir, 'steps'), `6 ${Date.now()}\n`);
  await sleep(1500);
  await sendNacked('route', [badRoute], 'safe_regex');
  fs.appendFileSync(path.join(dir, 'steps'), `7 ${Date.now()}\n`);
  fs.writeFileSync(path.join(dir, 'done'), '');
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
