'use strict';
/*
 * What the Node MCP backends made with the official TypeScript SDK's
 * server (@modelcontextprotocol/sdk 1.x from tests/xds/peer) share:
 * loading the SDK, and serving Streamable HTTP with one transport per
 * session, as the SDK's examples do (tests/http/mcp_sdk_backend.js,
 * bench/mcp/backend.js).
 *
 *   const m = require('../common/mcp_sdk_http.js');
 *   const { McpServer } = m.sdk('@modelcontextprotocol/sdk/server/mcp.js');
 *   http.createServer(m.sessionHandler(() => newMcpServer(), console.log));
 */
const path = require('path');
const crypto = require('crypto');

/* require() from tests/xds/peer, where npm installed the SDK. */
const sdk = require('module').createRequire(path.join(__dirname, '../xds/peer/package.json'));
const { StreamableHTTPServerTransport } = sdk('@modelcontextprotocol/sdk/server/streamableHttp.js');

/*
 * An http request handler: a POST without a session id opens a session
 * (a transport, connected to @p newServer()'s McpServer); a request naming
 * a known session goes to its transport; anything else is answered 404
 * "Session not found". @p log (optional) is told "session <id>" when one
 * opens and "delete <id>" when a DELETE ends one.
 */
function sessionHandler(newServer, log = () => {}) {
  const transports = new Map();
  return async (rq, rs) => {
    let body;
    if (rq.method === 'POST') {
      const chunks = [];
      for await (const c of rq) chunks.push(c);
      try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch (e) { body = undefined; }
    }
    const sid = rq.headers['mcp-session-id'];
    let t = sid && transports.get(sid);
    if (rq.method === 'DELETE' && t) log(`delete ${sid}`);
    if (!t) {
      if (sid || rq.method !== 'POST') {
        rs.writeHead(404, { 'content-type': 'application/json' });
        rs.end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
        return;
      }
      t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id) => { transports.set(id, t); log(`session ${id}`); },
      });
      t.onclose = () => { if (t.sessionId) transports.delete(t.sessionId); };
      await newServer().connect(t);
    }
    await t.handleRequest(rq, rs, body);
  };
}

module.exports = { sdk, sessionHandler };
