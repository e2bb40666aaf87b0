'use strict';
/*
 * An MCP backend made with the official TypeScript SDK's server
 * (@modelcontextprotocol/sdk 1.x, Streamable HTTP, stateful sessions), for
 * tests/http/e2e_mcp_session.sh:
 *
 *   node mcp_sdk_backend.js ADDR PORT NAME
 *
 * Tools (NAME is in every answer, so the test sees which backend served):
 *   ask    asks the client for a name (elicitation/create, on the call's
 *          stream) and answers "NAME:hello <name>"
 *   muse   asks the client's model (sampling/createMessage) and answers
 *          "NAME:<its text>"
 *   slow   sends a progress notification, then waits until cancelled (or
 *          20 s); prints "cancelled slow <requestId>" when cancelled
 *   grow   registers the tool "extra" and says notifications/tools/list_changed
 *          on the call's stream
 *   flood  asks the client 20 times at once (each for 3 s at most) and
 *          answers "NAME:flood <n> refused", n the requests the gateway
 *          refused for the session's limit of unanswered ones
 *   later  answers "NAME:later", then (200 ms on, outside any request)
 *          registers the tool "late": the SDK's server says
 *          notifications/tools/list_changed on the session's GET stream only
 *   hidden a tool the test's second ToolSet hides
 * Prints "ready" once listening, and one line per session opened or ended.
 */
const http = require('http');
const path = require('path');
const m = require(path.join(__dirname, '../common/mcp_sdk_http.js'));
const { McpServer } = m.sdk('@modelcontextprotocol/sdk/server/mcp.js');
const { ElicitResultSchema, CreateMessageResultSchema } = m.sdk('@modelcontextprotocol/sdk/types.js');

const [addr, port, name] = process.argv.slice(2);

function newServer() {
  const s = new McpServer({ name: `backend-${name}`, version: '1' });
  const text = (t) => ({ content: [{ type: 'text', text: `${name}:${t}` }] });
  s.registerTool('ask', { description: 'asks the client' }, async (extra) => {
    const r = await extra.sendRequest({ method: 'elicitation/create', params: {
      message: 'your name?',
      requestedSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] } } },
    ElicitResultSchema);
    return text(`hello ${r.action === 'accept' ? r.content.who : r.action}`);
  });
  s.registerTool('muse', { description: 'asks the client model' }, async (extra) => {
    const r = await extra.sendRequest({ method: 'sampling/createMessage', params: {
      messages: [{ role: 'user', content: { type: 'text', text: 'a word' } }], maxTokens: 5 } },
    CreateMessageResultSchema);
    return text(r.content.text);
  });
  s.registerTool('slow', { description: 'waits until cancelled' }, async (extra) => {
    const token = extra._meta && extra._meta.progressToken;
    if (token !== undefined)
      await extra.sendNotification({ method: 'notifications/progress',
        params: { progressToken: token, progress: 1, total: 2 } });
    await new Promise((resolve) => {
      const t = setTimeout(resolve, 20000);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(t);
        console.log(`cancelled slow ${extra.requestId}`);
        resolve();
      });
    });
    return text('slow done');
  });
  s.registerTool('grow', { description: 'adds a tool' }, async (extra) => {
    if (!s.extraAdded) {
      s.extraAdded = true;
      s.registerTool('extra', { description: 'added by grow' }, async () => text('extra'));
    }
    await extra.sendNotification({ method: 'notifications/tools/list_changed' });
    return text('grown');
  });
  s.registerTool('flood', { description: 'asks the client 20 times at once' }, async (extra) => {
    const asks = [];
    for (let i = 0; i < 20; i++)
      asks.push(extra.sendRequest({ method: 'elicitation/create', params: { message: `flood ${i}`,
        requestedSchema: { type: 'object', properties: {} } } }, ElicitResultSchema, { timeout: 3000 }));
    const r = await Promise.allSettled(asks);
    const refused = r.filter((x) => x.status === 'rejected' && /maximum/.test(String(x.reason))).length;
    return text(`flood ${refused} refused`);
  });
  s.registerTool('later', { description: 'registers a tool after answering' }, async () => {
    /* registerTool on the connected server: the SDK says list_changed on
     * the session's GET stream, outside any request */
    setTimeout(() => {
      if (s.lateAdded) return;
      s.lateAdded = true;
      s.registerTool('late', { description: 'registered after connect' }, async () => text('late'));
    }, 200);
    return text('later');
  });
  s.registerTool('hidden', { description: 'hidden by the second ToolSet' }, async () => text('hidden'));
  return s;
}

const srv = http.createServer(m.sessionHandler(newServer, console.log));
srv.listen(Number(port), addr, () => console.log('ready'));
