// The benchmark's MCP peer: the official MCP TypeScript SDK's server (npm @modelcontextprotocol/sdk,
// pinned in package.json) over Streamable HTTP, with one tool answering what signage's
// `list_companies` answers: the companies of db.json (written by bench/peers/db.py from signage's
// own answers), newest first, `limit` of them, as JSON text and structuredContent. Sessions as the
// SDK's own example keeps them (one transport per Mcp-Session-Id). No authentication, no
// redaction, no database: what the SDK itself costs per call is what it measures.
//
//   node mcp_server.mjs --port PORT --db db.json

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const port = Number(arg('--port'));
const companies = JSON.parse(readFileSync(arg('--db'), 'utf8')).companies;

function server() {
  const s = new McpServer({ name: 'bench-peer', version: '1.0.0' });
  s.registerTool(
    'list_companies',
    {
      description: 'List the companies, newest first.',
      inputSchema: { limit: z.number().int().min(1).max(100).optional() },
    },
    async ({ limit }) => {
      const data = companies.slice(0, limit ?? 20);
      const page = { object: 'list', data, has_more: companies.length > data.length, next_cursor: null };
      return { content: [{ type: 'text', text: JSON.stringify(page) }], structuredContent: page };
    },
  );
  return s;
}

const transports = new Map();

http
  .createServer(async (req, res) => {
    if (req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = raw ? JSON.parse(raw) : undefined;
    const id = req.headers['mcp-session-id'];
    let transport = id ? transports.get(id) : undefined;
    if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sid) => transports.set(sid, transport),
      });
      await server().connect(transport);
    }
    if (!transport) {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"no session"}');
      return;
    }
    await transport.handleRequest(req, res, body);
  })
  .listen(port, '127.0.0.1', () => console.log(`peer mcp listening on http://127.0.0.1:${port}`));
