/*
 * The official MCP TypeScript SDK 2.x client (@modelcontextprotocol/client,
 * installed with tests/xds/peer's packages) against the gateway, for
 * tests/http/e2e_mcp26.sh:
 *
 *   node e2e_mcp26_sdk.mjs URL
 *
 * negotiates the era (versionNegotiation 'auto': server/discover first),
 * walks every tools/list page, calls a__add and b__search and the denied
 * a__secret, lists and gets prompts and lists and reads resources
 * across both backends, and prints one JSON line of what it saw.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const req = createRequire(path.join(here, '../xds/peer/package.json'));
const { Client, StreamableHTTPClientTransport } = await import(req.resolve('@modelcontextprotocol/client'));

try {
  const client = new Client({ name: 'arion-e2e-sdk2', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
  const version = client.getNegotiatedProtocolVersion();
  const caps = client.getServerCapabilities();
  const names = [];
  let cursor, pages = 0;
  do {
    const r = await client.listTools(cursor ? { cursor } : undefined);
    names.push(...r.tools.map((x) => x.name));
    cursor = r.nextCursor;
    pages++;
  } while (cursor && pages < 20);
  const a = await client.callTool({ name: 'a__add', arguments: { x: 2 } });
  const b = await client.callTool({ name: 'b__search', arguments: { q: 'z' } });
  let denied = 'not refused';
  try {
    const d = await client.callTool({ name: 'a__secret', arguments: {} });
    denied = JSON.stringify(d);
  } catch (e) {
    denied = String(e.code);
  }
  /* prompts and resources: merged (prompt names prefixed), routed */
  const prompts = (await client.listPrompts()).prompts.map((x) => x.name).join(',');
  const prompt = (await client.getPrompt({ name: 'b__greet' })).messages[0].content.text;
  const resources = (await client.listResources()).resources.map((x) => x.uri).join(',');
  const resource = (await client.readResource({ uri: 'mem://a/doc' })).contents[0].text;
  const templates = (await client.listResourceTemplates()).resourceTemplates.length;
  let noResource = 'not refused';
  try {
    await client.readResource({ uri: 'mem://nobody/doc' });
  } catch (e) {
    noResource = String(e.code);
  }
  await client.close();
  console.log(JSON.stringify({ version, tools: Boolean(caps && caps.tools), names: names.join(','), pages,
    a: a.content[0].text, b: b.content[0].text, denied, prompts, prompt, resources, resource, templates,
    noResource }));
} catch (e) {
  console.log(JSON.stringify({ error: String((e && e.stack) || e) }));
  process.exit(1);
}
