// A header-injecting reverse proxy for the conformance suite, which has no option to send
// extra headers. It listens on 127.0.0.1 only, for the length of one test run, and forwards
// every request to the signage server with `Authorization: Bearer <key>` and
// `X-Service-Client-Id: <client id>` set. Everything else passes through untouched:
// method, path, body, and in particular the Host and Origin headers exactly as the suite
// sent them, so the server's own DNS-rebinding check (Host/Origin) is what the suite tests.
// Bodies stream in both directions without buffering, so SSE events arrive as they are sent.
//
//   node auth-proxy.mjs --upstream http://127.0.0.1:PORT --key-file <json> --key northwind-readwrite
//   -> prints `proxy listening on http://127.0.0.1:PORT` on stdout once ready.

import http from 'node:http';
import { readFileSync } from 'node:fs';

function arg(name) {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || !process.argv[i + 1]) {
    console.error(`auth-proxy: missing --${name}`);
    process.exit(2);
  }
  return process.argv[i + 1];
}

const upstream = new URL(arg('upstream'));
const keyName = arg('key');
const key = JSON.parse(readFileSync(arg('key-file'), 'utf8')).keys.find((k) => k.name === keyName);
if (!key) {
  console.error(`auth-proxy: no key named ${keyName}`);
  process.exit(2);
}

// Framing headers are the proxy's own business on each hop; Node sets them for its side.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection']);
const INJECTED = new Set(['authorization', 'x-service-client-id']);

function forwardedRequestHeaders(rawHeaders) {
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const lower = rawHeaders[i].toLowerCase();
    if (HOP_BY_HOP.has(lower) || INJECTED.has(lower)) continue;
    out.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  out.push('Authorization', `Bearer ${key.rawKey}`, 'X-Service-Client-Id', key.client_id);
  return out;
}

function forwardedResponseHeaders(rawHeaders) {
  const out = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!HOP_BY_HOP.has(rawHeaders[i].toLowerCase())) out.push(rawHeaders[i], rawHeaders[i + 1]);
  }
  return out;
}

const server = http.createServer((req, res) => {
  const upstreamReq = http.request({
    host: upstream.hostname,
    port: upstream.port,
    method: req.method,
    path: req.url,
    headers: forwardedRequestHeaders(req.rawHeaders),
    setHost: false, // the client's own Host header is in the list above, unchanged
    agent: false,
  });
  upstreamReq.on('response', (upstreamRes) => {
    res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, forwardedResponseHeaders(upstreamRes.rawHeaders));
    res.flushHeaders();
    upstreamRes.on('data', (chunk) => res.write(chunk));
    upstreamRes.on('end', () => res.end());
    upstreamRes.on('error', () => res.destroy());
  });
  upstreamReq.on('error', (e) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`auth-proxy: upstream error: ${e.message}\n`);
    } else {
      res.destroy();
    }
  });
  // A client that goes away (e.g. cancels an SSE reader) closes the upstream stream too.
  res.on('close', () => {
    if (!res.writableFinished) upstreamReq.destroy();
  });
  req.pipe(upstreamReq);
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  console.log(`proxy listening on http://127.0.0.1:${port} -> ${upstream.origin} as ${keyName}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
