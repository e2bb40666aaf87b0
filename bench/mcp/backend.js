'use strict';
/*
 * The MCP backend of bench/mcp/run, one tool ("echo"), session era,
 * Streamable HTTP:
 *
 *   node backend.js ADDR PORT sdk|fast
 *
 * sdk   the official TypeScript SDK's server (@modelcontextprotocol/sdk
 *       1.x from tests/xds/peer, served by tests/common/mcp_sdk_http.js as
 *       tests/http/mcp_sdk_backend.js is), one transport per session, its
 *       default answers (tools/call as an event stream): what an agent's
 *       gateway would front in practice;
 * fast  the same protocol written directly on node:http, JSON answers,
 *       nothing validated beyond the session: a backend as cheap as the
 *       load generator's core allows, so that the gateway's own share of
 *       the round trip stands out.
 * Prints "ready" once listening.
 */
const http = require('http');
const path = require('path');
const crypto = require('crypto');

const [addr, port, mode] = process.argv.slice(2);

function sdkHandler() {
  const sdk = require(path.join(__dirname, '../../tests/common/mcp_sdk_http.js'));
  const { McpServer } = sdk.sdk('@modelcontextprotocol/sdk/server/mcp.js');
  const z = sdk.sdk('zod');
  return sdk.sessionHandler(() => {
    const s = new McpServer({ name: 'bench', version: '1' });
    s.registerTool('echo', { description: 'echoes its text', inputSchema: { text: z.string() } },
      async ({ text }) => ({ content: [{ type: 'text', text }] }));
    return s;
  });
}

function fastHandler() {
  const sessions = new Set();
  const send = (rs, status, obj, extra = {}) => {
    const b = obj === undefined ? '' : JSON.stringify(obj);
    rs.writeHead(status, { ...(b ? { 'content-type': 'application/json' } : {}),
      'content-length': Buffer.byteLength(b), ...extra });
    rs.end(b);
  };
  return (rq, rs) => {
    const chunks = [];
    rq.on('data', (c) => chunks.push(c));
    rq.on('end', () => {
      if (rq.method === 'DELETE') { sessions.delete(rq.headers['mcp-session-id']); return send(rs, 200); }
      let m;
      try { m = JSON.parse(Buffer.concat(chunks).toString()); } catch (e) {
        return send(rs, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      if (m.method === 'initialize') {
        const s = crypto.randomUUID();
        sessions.add(s);
        return send(rs, 200, { jsonrpc: '2.0', id: m.id, result: {
          protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
          serverInfo: { name: 'bench-fast', version: '1' } } }, { 'mcp-session-id': s });
      }
      if (!sessions.has(rq.headers['mcp-session-id']))
        return send(rs, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      if (m.id === undefined) return send(rs, 202);
      if (m.method === 'tools/list')
        return send(rs, 200, { jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'echo',
          description: 'echoes its text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] } });
      if (m.method === 'tools/call')
        return send(rs, 200, { jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text',
          text: String((m.params.arguments || {}).text) }] } });
      if (m.method === 'ping') return send(rs, 200, { jsonrpc: '2.0', id: m.id, result: {} });
      return send(rs, 200, { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    });
  };
}

const srv = http.createServer(mode === 'sdk' ? sdkHandler() : fastHandler());
srv.keepAliveTimeout = 120000;
srv.listen(Number(port), addr, () => console.log('ready'));
