'use strict';
/*
 * The control plane of bench/churn/run (issue 22): tests/xds/peer's
 * delta-ADS server pushing N configuration changes, each sent once the
 * previous one was ACKed, while wrk runs through Arion.
 *
 *   node cp.js DIR N
 *
 * DIR/port written once listening; DIR/ready once the first configuration
 * is ACKed (listener http on 198.18.2.2:80, RDS main -> cluster web (EDS,
 * connect_timeout 1s) = [A, B]); then, after DIR/go appears, push i of N:
 *   every 100th  LDS: the listener's HCM stat_prefix toggles (ingress /
 *                ingress_b): a filter chain change, which drains
 *   every 10th   CDS: cluster extra<i> (STATIC) added, the previous one removed
 *   otherwise    EDS: web = [A], [B] or [A, B] in turn (endpoints leave:
 *                their pools drain)
 * DIR/progress is rewritten every 100 pushes ("i elapsed_ms"), DIR/done
 * holds "N elapsed_ms max_ack_ms" at the end, DIR/failed the error if any.
 *
 * CHURN_SECONDS=S in the environment (tests/http/e2e_churn_load.sh): EDS
 * pushes only, web = [A] and [B] in turn (each removes the endpoint the
 * last one had), for S seconds or N pushes; DIR/done written then; after
 * DIR/go2 appears, one LDS change (the stat_prefix toggle), DIR/step2
 * once it is ACKed.
 */
const fs = require('fs');
const path = require('path');
const { AdsServer, TYPES, toResponse } = require(path.join(__dirname, '../../tests/xds/peer/server.js'));
const x = require(path.join(__dirname, '../../tests/common/xds_e2e.js'));
const { sleep } = x;

const [dir, nArg] = process.argv.slice(2);
const N = Number(nArg || 10000);
const A = x.ep('198.18.3.10', 8080);
const B = x.ep('198.18.3.11', 8080);
const listener = (v, prefix) => ({ name: 'http', version: String(v),
  resource: x.listenerRds('http', 80, 'main', { address: '198.18.2.2', statPrefix: prefix }) });
const cluster = (name) => ({ name, version: '1', resource: x.edsCluster(name, '1s') });
/* the clusters that come and go: STATIC (no EDS to wait for) */
const extraCluster = (name) => ({ name, version: '1', resource: x.staticCluster(name, '198.18.3.10', 8080) });
const cla = (v, eps) => ({ name: 'web', version: String(v), resource: x.cla('web', eps) });

const srv = new AdsServer({ log: '/dev/null' });
const ads = x.ackedSender(srv, 30000);
const { sendAcked } = ads;

/*
 * protobufjs builds a type's encoder on its first use: the first Cluster
 * took 0.6-1.2 s here (a loaded 2-core machine), the first listener and
 * CLA 0.1-0.2 s, all before a byte was written, which the first short
 * bench run reported as a 1.5 s xDS ACK (a capture showed Arion ACK within
 * milliseconds of the bytes arriving). Each type is encoded once before
 * the server listens, and the slowest ACK counts the churn's pushes only.
 */
function warmUp() {
  let n = 0;
  const nonce = () => `warm${++n}`;
  toResponse({ type_url: 'cluster', resources: [cluster('web'), extraCluster('extra')] }, nonce);
  toResponse({ type_url: 'cla', resources: [cla(0, [A, B])] }, nonce);
  toResponse({ type_url: 'listener', resources: [listener(0, 'ingress')] }, nonce);
  toResponse({ type_url: 'route', resources: [{ name: 'main', version: '1', resource: x.route('main', 'web', 'all') }] }, nonce);
}

(async () => {
  warmUp();
  const port = await srv.start(0);
  fs.writeFileSync(path.join(dir, 'port'), String(port));
  await srv.waitRequest((q) => q.type_url === TYPES.listener, 30000);
  await sendAcked('cluster', [cluster('web')]);
  await sendAcked('cla', [cla(0, [A, B])]);
  await sendAcked('listener', [listener(0, 'ingress')]);
  await sendAcked('route', [{ name: 'main', version: '1', resource: x.route('main', 'web', 'all') }]);
  fs.writeFileSync(path.join(dir, 'ready'), '');
  while (!fs.existsSync(path.join(dir, 'go'))) await sleep(50);
  ads.maxAckMs = 0; /* the pushes under load only */
  const t0 = Date.now();
  const seconds = Number(process.env.CHURN_SECONDS || 0);
  if (seconds > 0) {
    let i = 0;
    while (i < N && Date.now() - t0 < seconds * 1000) {
      i++;
      await sendAcked('cla', [cla(i, i % 2 ? [B] : [A])]);
      if (i % 100 === 0) fs.writeFileSync(path.join(dir, 'progress'), `${i} ${Date.now() - t0}\n`);
    }
    fs.writeFileSync(path.join(dir, 'done'), `${i} ${Date.now() - t0} ${ads.maxAckMs}\n`);
    while (!fs.existsSync(path.join(dir, 'go2'))) await sleep(50);
    await sendAcked('listener', [listener(i + 1, 'ingress_b')]);
    fs.writeFileSync(path.join(dir, 'step2'), '');
    await sleep(600000);
    return;
  }
  let extra = null;
  const sets = [[A], [B], [A, B]];
  for (let i = 1; i <= N; i++) {
    if (i % 100 === 0) {
      await sendAcked('listener', [listener(i, (i / 100) % 2 ? 'ingress_b' : 'ingress')]);
    } else if (i % 10 === 0) {
      const name = `extra${i}`;
      await sendAcked('cluster', [extraCluster(name)], extra ? [extra] : []);
      extra = name;
    } else {
      await sendAcked('cla', [cla(i, sets[i % 3])]);
    }
    if (i % 100 === 0) fs.writeFileSync(path.join(dir, 'progress'), `${i} ${Date.now() - t0}\n`);
  }
  fs.writeFileSync(path.join(dir, 'done'), `${N} ${Date.now() - t0} ${ads.maxAckMs}\n`);
  await sleep(600000);
})().catch((e) => {
  process.stderr.write(`control plane: ${e.stack || e}\n`);
  fs.writeFileSync(path.join(dir, 'failed'), String(e));
  process.exit(1);
});
