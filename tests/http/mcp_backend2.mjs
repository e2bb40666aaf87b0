/*
 * An MCP backend built with the official TypeScript SDK 2.x
 * (@modelcontextprotocol/server, installed with tests/xds/peer's packages),
 * for tests/http/e2e_mcp26.sh:
 *
 *   node mcp_backend2.mjs ADDR PORT NAME TOOL[,TOOL...] MODE PAGE
 *
 * MODE 'dual': the SDK's default handler, 2026-07-28 statelessly and the
 * 2025 era through its stateless fallback; 'modern': 2026-07-28 only
 * (legacy: 'reject', so initialize is refused). PAGE: tools per
 * tools/list page (0: all on one). tools/call answers the text
 * "NAME:TOOL:ARGUMENTS" (the arguments as sorted JSON); a prompt 'greet'
 * ("NAME:prompt:greet") and a resource mem://NAME/doc
 * ("NAME:resource:URI"). Prints "ready"
 * once listening, then one line per request: the method, and the
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers it carried.
 */
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const req = createRequire(path.join(here, '../xds/peer/package.json'));
const { Server, createMcpHandler } = await import(req.resolve('@modelcontextprotocol/server'));

const [addr, port, name, toolsArg, mode = 'dual', pageArg = '0'] = process.argv.slice(2);
const tools = toolsArg.split(',');
const page = Number(pageArg) || tools.length;

const sorted = (v) => (v && typeof v === 'object' && !Array.isArray(v)
  ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);

const handler = createMcpHandler(() => {
  const s = new Server({ name, version: '1' }, { capabilities: { tools: { listChanged: true },
    prompts: {}, resources: {} } });
  /* one prompt and one resource each, named after the backend */
  s.setRequestHandler('prompts/list', () => ({ prompts: [{ name: 'greet', description: `${name}'s greet` }] }));
  s.setRequestHandler('prompts/get', (r) => ({ messages: [{ role: 'user',
    content: { type: 'text', text: `${name}:prompt:${r.params.name}` } }] }));
  s.setRequestHandler('resources/list', () => ({ resources: [{ uri: `mem://${name}/doc`, name: 'doc' }] }));
  s.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: [] }));
  s.setRequestHandler('resources/read', (r) => ({ contents: [{ uri: r.params.uri,
    text: `${name}:resource:${r.params.uri}` }] }));
  s.setRequestHandler('tools/list', (r) => {
    const at = r.params?.cursor ? Number(r.params.cursor.slice(1)) : 0;
    const out = { tools: tools.slice(at, at + page).map((t) => ({ name: t, description: `${name}'s ${t}`,
      inputSchema: { type: 'object' } })) };
    if (at + page < tools.length)
      out.nextCursor = `p${at + page}`;
    return out;
  });
  s.setRequestHandler('tools/call', (r) => ({ content: [{ type: 'text',
    text: `${name}:${r.params.name}:${JSON.stringify(sorted(r.params.arguments ?? {}))}` }] }));
  return s;
}, mode === 'modern' ? { legacy: 'reject' } : {});

http.createServer(async (q, res) => {
  const chunks = [];
  for await (const c of q)
    chunks.push(c);
  const body = Buffer.concat(chunks);
  let method = '-';
  try {
    method = JSON.parse(body.toString()).method;
  } catch { /* not JSON: the handler says so */ }
  console.log(`rq ${method} pv=${q.headers['mcp-protocol-version'] ?? '-'} ` +
    `method=${q.headers['mcp-method'] ?? '-'} name=${q.headers['mcp-name'] ?? '-'} ` +
    `session=${q.headers['mcp-session-id'] ? 'yes' : 'no'}`);
  const r = new Request(`http://${addr}:${port}${q.url}`, { method: q.method, headers: q.headers,
    body: body.length ? body : undefined });
  const out = await handler.fetch(r);
  const h = {};
  out.headers.forEach((v, k) => { h[k] = v; });
  res.writeHead(out.status, h);
  if (!out.body) {
    res.end();
    return;
  }
  for await (const c of out.body)
    res.write(c);
  res.end();
}).listen(Number(port), addr, () => console.log('ready'));
