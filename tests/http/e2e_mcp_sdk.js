'use strict';
/*
 * The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk 1.x,
 * installed with tests/xds/peer's packages) against the gateway, for
 * tests/http/e2e_mcp.sh:
 *
 *   node e2e_mcp_sdk.js URL
 *
 * connects over Streamable HTTP, lists the tools, calls a__add and
 * b__search and the denied a__secret, lists prompts and gets a__greet,
 * ends the session (DELETE), and
 * prints one JSON line of what it saw.
 */
const path = require('path');
const req = require('module').createRequire(path.join(__dirname, '../xds/peer/package.json'));
const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = req('@modelcontextprotocol/sdk/client/streamableHttp.js');

(async () => {
  const client = new Client({ name: 'arion-e2e-sdk', version: '1' });
  const t = new StreamableHTTPClientTransport(new URL(process.argv[2]));
  await client.connect(t);
  const session = t.sessionId;
  const names = (await client.listTools()).tools.map((x) => x.name).join(',');
  const a = await client.callTool({ name: 'a__add', arguments: { x: 2 } });
  const b = await client.callTool({ name: 'b__search', arguments: { q: 'z' } });
  let denied = 'not refused';
  try {
    await client.callTool({ name: 'a__secret', arguments: {} });
  } catch (e) {
    denied = String(e.code);
  }
  /* prompts, when the gateway offers them (both backends list 'greet') */
  let prompts = '', prompt = '';
  if (client.getServerCapabilities().prompts) {
    prompts = (await client.listPrompts()).prompts.map((x) => x.name).join(',');
    prompt = (await client.getPrompt({ name: 'a__greet' })).messages[0].content.text;
  }
  await t.terminateSession();
  await client.close();
  console.log(JSON.stringify({ version: t.protocolVersion, session, names,
    a: a.content[0].text, b: b.content[0].text, denied, prompts, prompt }));
})().catch((e) => {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exit(1);
});
