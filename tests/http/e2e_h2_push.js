'use strict';
/*
 * The control plane of e2e_h2_push.sh: tests/xds/peer's delta-ADS server
 * pushing route and cluster changes, each once the previous one was
 * ACKed, while h2load runs HTTP/2 through Arion.
 *
 *   node e2e_h2_push.js DIR
 *
 * DIR/port once listening; DIR/ready once the first configuration is
 * ACKed (listener http on 198.18.2.2:80, RDS main -> web (EDS: A and B),
 * cluster web2 (STATIC: B)); after DIR/go appears, push i, until DIR/stop
 * appears:
 *   i % 3 == 0  RDS: main sends every path to web, then web2, in turn
 *   i % 3 == 1  CDS: cluster extra<i> added, the previous one removed
 *   i % 3 == 2  EDS: web = [A], [B] or [A, B] in turn
 * DIR/done holds "pushes elapsed_ms max_ack_ms", DIR/failed the error.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES } = require(path.join(__dirname, '../xds/peer/server.js'));
const x = require(path.join(__dirname, '../common/xds_e2e.js'));
const { sleep } = x;

const [dir] = process.argv.slice(2);
const A = x.ep('198.18.3.10', 8080);
const B = x.ep('198.18.3.11', 8080);
const srv = new AdsServer({ log: '/dev/null' });
const ads = x.ackedSender(srv, 30000);
const { sendAcked } = ads;

const route = (v, cluster) => ({ name: 'main', version: String(v), resource: x.route('main', cluster, 'all') });
const cla = (v, eps) => ({ name: 'web', version: String(v), resource: x.cla('web', eps) });

(async () => {
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [
    { name: 'web', version: '1', resource: x.edsCluster('web', '1s') },
    { name: 'web2', version: '1', resource: x.staticCluster('web2', '198.18.3.11', 8080) },
  ]);
  await sendAcked('cla', [cla(0, [A, B])]);
  await sendAcked('listener', [{ name: 'http', version: '1',
    resource: x.listenerRds('http', 80, 'main', { address: '198.18.2.2', statPrefix: 'h2' }) }]);
  await sendAcked('route', [route(0, 'web')]);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  while (!fs.existsSync(path.join(dir, 'go'))) await sleep(50);
  ads.maxAckMs = 0;
  const t0 = Date.now();
  const sets = [[A], [B], [A, B]];
  let extra = null;
  let i = 0;
  while (!fs.existsSync(path.join(dir, 'stop'))) {
    i++;
    if (i % 3 === 0) {
      await sendAcked('route', [route(i, (i / 3) % 2 ? 'web2' : 'web')]);
    } else if (i % 3 === 1) {
      const name = `extra${i}`;
      await sendAcked('cluster', [{ name, version: '1', resource: x.staticCluster(name, '198.18.3.10', 8080) }],
        extra ? [extra] : []);
      extra = name;
    } else {
      await sendAcked('cla', [cla(i, sets[i % 3])]);
    }
    await sleep(20); /* a push every few tens of ms: many within one h2load run */
  }
  fs.writeFileSync(path.join(dir, 'done'), `${i} ${Date.now() - t0} ${ads.maxAckMs}\n`);
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
