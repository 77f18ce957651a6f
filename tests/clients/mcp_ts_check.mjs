// Drives the signage MCP server with the official TypeScript SDK client (npm
// @modelcontextprotocol/sdk, pinned in package.json): Client + StreamableHTTPClientTransport,
// the two credentials passed as requestInit headers. SDK 1.x speaks the initialize handshake
// (protocol 2025-11-25) with an Mcp-Session-Id.
//
// Each check prints `PASS <name>` or `FAIL <name>: <why>`; run.sh counts them. Exit code 1 on any failure.
//
//   node mcp_ts_check.mjs --url http://127.0.0.1:PORT/mcp

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
const creds = Object.fromEntries(
  JSON.parse(readFileSync(join(here, '..', '..', 'fixtures', 'demo-credentials.json'), 'utf8')).keys.map((k) => [
    k.name,
    k,
  ]),
);

const urlIndex = process.argv.indexOf('--url');
if (urlIndex < 0 || !process.argv[urlIndex + 1]) {
  console.error('usage: node mcp_ts_check.mjs --url <mcp url>');
  process.exit(2);
}
const url = new URL(process.argv[urlIndex + 1]);

const AREAS = {
  companies: ['company', 'companies'],
  branding: ['branding', 'brand'],
  devices: ['device', 'devices'],
  ads: ['ad', 'ads'],
  promotions: ['promotion', 'promotions'],
  plans: ['plan', 'plans'],
  tokens: ['token', 'tokens'],
  invoices: ['invoice', 'invoices'],
  media: ['media'],
  webhooks: ['webhook', 'webhooks'],
};
const WRITE_VERBS = new Set([
  'prepare', 'confirm', 'activate', 'deactivate', 'create', 'update', 'delete', 'set', 'assign', 'unassign',
  'cancel', 'rotate', 'revoke',
]);

let passed = 0;
let failed = 0;
const label = 'typescript sdk';

function ok(name, detail) {
  passed += 1;
  const shown = detail ? ` (${String(detail).replace(/\s+/g, ' ').slice(0, 200)})` : '';
  console.log(`PASS ${label}: ${name}${shown}`);
}
function fail(name, why) {
  failed += 1;
  console.log(`FAIL ${label}: ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 600)}`);
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}
async function check(name, body) {
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out after 90 s')), 90_000);
    });
    const detail = await Promise.race([body(), timeout]);
    ok(name, detail);
    return true;
  } catch (e) {
    fail(name, e instanceof Error ? e.message : e);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function words(name) {
  return name.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
}
function isWriteTool(tool) {
  if (tool.annotations && tool.annotations.readOnlyHint === false) return true;
  return WRITE_VERBS.has(words(tool.name)[0]);
}
function text(result) {
  const parts = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text);
  if (result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}

function headersFor(keyName, clientId) {
  if (!keyName) return {};
  const key = creds[keyName];
  return { Authorization: `Bearer ${key.rawKey}`, 'X-Service-Client-Id': clientId ?? key.client_id };
}

async function connect(keyName, clientId) {
  const client = new Client({ name: 'signage-client-check', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: headersFor(keyName, clientId) } });
  await client.connect(transport);
  return { client, transport };
}

async function listAllTools(client) {
  const tools = [];
  let cursor;
  for (let page = 0; page < 20; page += 1) {
    const result = await client.listTools(cursor ? { cursor } : {});
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

async function main() {
  let session;
  const connected = await check('connect with northwind-readwrite (initialize handshake)', async () => {
    session = await connect('northwind-readwrite');
    assert(session.transport.sessionId, 'the server handed out no Mcp-Session-Id');
    return `protocol ${session.transport.protocolVersion}, server ${JSON.stringify(session.client.getServerVersion())}`;
  });
  if (connected) {
    const { client } = session;
    await check('listTools covers every area and has service_health_check', async () => {
      const tools = await listAllTools(client);
      const names = tools.map((t) => t.name).sort();
      assert(names.includes('service_health_check'), `service_health_check missing: ${names}`);
      const missing = Object.entries(AREAS)
        .filter(([, ws]) => !names.some((n) => words(n).some((w) => ws.includes(w))))
        .map(([area]) => area);
      assert(missing.length === 0, `no tool for ${missing}; tools: ${names}`);
      for (const needed of ['prepare_ad_change', 'confirm_change']) {
        assert(names.includes(needed), `${needed} missing for a read/write key`);
      }
      return `${names.length} tools`;
    });
    await check('callTool service_health_check', async () => {
      const result = await client.callTool({ name: 'service_health_check', arguments: {} });
      assert(!result.isError, `isError: ${text(result).slice(0, 300)}`);
      assert(/"ok"\s*:\s*true/.test(text(result)), `health result does not say ok: ${text(result).slice(0, 300)}`);
      return text(result).slice(0, 100);
    });
    await check('callTool list_companies', async () => {
      const result = await client.callTool({ name: 'list_companies', arguments: {} });
      const t = text(result);
      assert(!result.isError, `isError: ${t.slice(0, 300)}`);
      for (const name of ['Northwind Grocers', 'Northwind Pharmacy']) assert(t.includes(name), `${name} missing: ${t.slice(0, 300)}`);
      for (const name of ['Harborview Hotels', 'Bluefin']) assert(!t.includes(name), `${name} must be invisible`);
      return 'Northwind Grocers and Northwind Pharmacy';
    });
    await check('callTool get_api_key_permissions', async () => {
      const result = await client.callTool({ name: 'get_api_key_permissions', arguments: {} });
      const t = text(result);
      assert(!result.isError, `isError: ${t.slice(0, 300)}`);
      assert(t.includes('write'), `scopes of the readwrite key not shown: ${t.slice(0, 300)}`);
      assert(!t.includes(creds['northwind-readwrite'].rawKey), 'the raw key appears in the result (must be redacted)');
      return t.slice(0, 120);
    });
    await check('listPrompts and getPrompt with arguments', async () => {
      const listed = await client.listPrompts();
      const names = listed.prompts.map((p) => p.name);
      const first = {
        triage_offline_screens: 'get_fleet_health',
        activate_promotion_safely: 'get_promotion',
        monthly_token_billing_report: 'get_token_summary',
      };
      for (const name of Object.keys(first)) assert(names.includes(name), `${name} missing: ${names}`);
      for (const p of listed.prompts) assert(p.description, `prompt ${p.name} has no description`);
      const idsIn = (result, prefix) => {
        const found = text(result).match(new RegExp(`"(${prefix}[A-Za-z0-9]+)"`));
        assert(found, `no ${prefix} id in ${text(result).slice(0, 200)}`);
        return found[1];
      };
      const company = idsIn(await client.callTool({ name: 'list_companies', arguments: {} }), 'cmp_');
      const promotion = idsIn(await client.callTool({ name: 'list_promotions', arguments: {} }), 'promo_');
      for (const [name, tool] of Object.entries(first)) {
        const args = name === 'activate_promotion_safely' ? { promotion_id: promotion } : { company_id: company };
        const got = await client.getPrompt({ name, arguments: args });
        const t = got.messages.map((m) => m.content.text).join('\n');
        assert(t.includes(Object.values(args)[0]), `${name}: argument not in the text`);
        assert(t.includes(tool), `${name}: ${tool} not named`);
      }
      let refused = false;
      try {
        await client.getPrompt({ name: 'triage_offline_screens', arguments: {} });
      } catch (e) {
        refused = e.code === -32602;
      }
      assert(refused, 'getPrompt without its required argument was not refused with -32602');
      return `${names.length} prompts`;
    });
    await check('new two-step writes: an SVG given inline, and a stale preview (the SDK validates both results)', async () => {
      // callTool validates structuredContent against the tool's outputSchema, error results too.
      const companies = await client.callTool({ name: 'list_companies', arguments: {} });
      const grocers = companies.structuredContent.data.find((c) => c.name === 'Northwind Grocers');
      const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>';
      const preview = await client.callTool({
        name: 'prepare_media_upload',
        arguments: { company_id: grocers.id, filename: 'square.svg', content_type: 'image/svg+xml', content: svg, encoding: 'utf-8' },
      });
      assert(!preview.isError, text(preview).slice(0, 300));
      const done = await client.callTool({ name: 'confirm_change', arguments: { confirmation_id: preview.structuredContent.confirmation_id } });
      assert(!done.isError && done.structuredContent.result.size_bytes === svg.length, text(done).slice(0, 300));
      const ads = await client.callTool({ name: 'list_ads', arguments: { limit: 1 } });
      const ad = ads.structuredContent.data[0];
      const stale = await client.callTool({ name: 'prepare_ad_change', arguments: { ad_id: ad.id, changes: { headline: `TS ${Date.now() % 100000}` } } });
      const side = await client.callTool({ name: 'prepare_ad_change', arguments: { ad_id: ad.id, changes: { duration_seconds: 9 } } });
      await client.callTool({ name: 'confirm_change', arguments: { confirmation_id: side.structuredContent.confirmation_id } });
      const refused = await client.callTool({ name: 'confirm_change', arguments: { confirmation_id: stale.structuredContent.confirmation_id } });
      assert(refused.isError && refused.structuredContent.error.code === 'stale_preview', text(refused).slice(0, 300));
      assert(refused.structuredContent.preview.object === 'pending_change', 'no fresh preview');
      await client.callTool({ name: 'cancel_change', arguments: { confirmation_id: refused.structuredContent.preview.confirmation_id } });
      return `media ${done.structuredContent.result.id}; stale_preview with a fresh preview`;
    });
    await check('close (DELETE of the session)', async () => {
      await session.transport.terminateSession();
      await session.client.close();
    });
  }

  await check('northwind-readonly sees no write tools', async () => {
    const { client } = await connect('northwind-readonly');
    try {
      const tools = await listAllTools(client);
      const writes = tools.filter(isWriteTool).map((t) => t.name);
      assert(tools.some((t) => t.name === 'service_health_check'), 'service_health_check missing');
      assert(writes.length === 0, `a read-only key is offered write tools: ${writes}`);
      return `${tools.length} tools`;
    } finally {
      await client.close();
    }
  });

  for (const [name, keyName, clientId] of [
    ['no credentials: refused', null, undefined],
    ["another client's X-Service-Client-Id: refused", 'northwind-readwrite', creds['northwind-readonly'].client_id],
  ]) {
    await check(name, async () => {
      let connectedAnyway = false;
      try {
        const { client } = await connect(keyName, clientId);
        connectedAnyway = true;
        await client.close();
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        assert(e && (e.code === 401 || e.code === 403), `refused, but not with HTTP 401/403 (code ${e && e.code}): ${message}`);
        return `HTTP ${e.code}`;
      }
      assert(!connectedAnyway, 'connected without valid credentials');
      return '';
    });
  }

  process.exit(failed > 0 || passed === 0 ? 1 : 0);
}

main().catch((e) => {
  fail('harness', e instanceof Error ? e.stack : e);
  process.exit(1);
});
