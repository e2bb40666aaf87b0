'use strict';
/*
 * The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk 1.x)
 * against the gateway in front of two SDK backends (mcp_sdk_backend.js),
 * for tests/http/e2e_mcp_session.sh: the session era's server-to-client
 * side.
 *
 *   node e2e_mcp_session_sdk.js URL CP_DIR
 *
 * The client offers elicitation and sampling and answers them; it holds
 * the GET stream the SDK opens after initialize. It calls a__ask
 * (elicitation through the gateway and back), b__muse (sampling), a__slow
 * (progress relayed, then cancelled), b__grow (the backend's own
 * list_changed), a__later (a tool the backend registers after answering:
 * list_changed on the backend session's GET stream, relayed), asks the control plane for a new ToolSet (CP_DIR/push:
 * list_changed over the GET stream), stays quiet past the session's idle
 * timeout with only the GET stream open, lists again, and ends the
 * session. Prints one JSON line of what it saw.
 */
const fs = require('fs');
const path = require('path');
const req = require('module').createRequire(path.join(__dirname, '../xds/peer/package.json'));
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = req('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema, CreateMessageRequestSchema, ToolListChangedNotificationSchema } =
  req('@modelcontextprotocol/sdk/types.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const out = {};
let changed = 0;
async function waitChanged(n, ms) {
  for (let t = 0; t < ms && changed <= n; t += 50) await sleep(50);
  return changed > n;
}

(async () => {
  const [url, cpDir] = process.argv.slice(2);
  const client = new Client({ name: 'arion-e2e-session', version: '1' },
    { capabilities: { elicitation: {}, sampling: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (r) => {
    out.elicit_message = r.params.message;
    return { action: 'accept', content: { who: 'arion' } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ role: 'assistant', content: { type: 'text', text: 'pong' }, model: 'none' }));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed++; });
  const t = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(t);
  out.session = t.sessionId;
  out.version = t.protocolVersion;
  const names = async () => (await client.listTools()).tools.map((x) => x.name).sort().join(',');
  out.names1 = await names();
  out.ask = (await client.callTool({ name: 'a__ask', arguments: {} })).content[0].text;
  out.muse = (await client.callTool({ name: 'b__muse', arguments: {} })).content[0].text;

  const ac = new AbortController();
  out.progress = 0;
  try {
    await client.callTool({ name: 'a__slow', arguments: {} }, undefined, {
      signal: ac.signal, timeout: 15000,
      onprogress: () => { out.progress++; ac.abort('the test cancels it'); } });
    out.cancel = 'not cancelled';
  } catch (e) {
    out.cancel = ac.signal.aborted ? 'aborted' : String(e);
  }

  let n = changed;
  out.grow = (await client.callTool({ name: 'b__grow', arguments: {} })).content[0].text;
  out.grow_changed = await waitChanged(n, 5000);
  out.names2 = await names();

  /* a tool registered after connect, outside any request: the backend
   * says list_changed on its session's GET stream, which the gateway
   * holds for this client's GET stream */
  await sleep(500); /* b's own GET-stream list_changed for grow's registerTool */
  n = changed;
  out.later = (await client.callTool({ name: 'a__later', arguments: {} })).content[0].text;
  out.later_changed = await waitChanged(n, 5000);
  out.names_late = await names();

  n = changed;
  fs.writeFileSync(path.join(cpDir, 'push'), '');
  out.push_changed = await waitChanged(n, 15000);
  out.names3 = await names();

  await sleep(4500); /* past session_idle_timeout (3 s): the GET stream keeps it */
  out.names4 = await names();
  await t.terminateSession();
  await client.close();
  console.log(JSON.stringify(out));
})().catch((e) => {
  out.error = String((e && e.stack) || e);
  console.log(JSON.stringify(out));
  process.exit(1);
});
