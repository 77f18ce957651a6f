// Drives the signage MCP server with the TypeScript SDK's v2 client (npm @modelcontextprotocol/client,
// pinned in package.json), which implements protocol 2026-07-28: confirmation by elicitation as the
// multi round-trip (the call answers `input_required`, the client's own driver runs the registered
// `elicitation/create` handler and retries with `inputResponses` and the echoed `requestState`), and
// on 2025-11-25 the server-to-client `elicitation/create` on the call's event stream. Also the new
// two-step writes of issue 30 through that client: a promotion, its QR code, an ad for it, confirmed
// by the person; and a stale preview, which applies nothing and carries a fresh one.
//
// Each check prints `PASS <name>` or `FAIL <name>: <why>`; run.sh counts them. Exit code 1 on any failure.
//
//   node mcp_ts_v2_check.mjs --url http://127.0.0.1:PORT/mcp

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const here = dirname(fileURLToPath(import.meta.url));
const creds = Object.fromEntries(
  JSON.parse(readFileSync(join(here, '..', '..', 'fixtures', 'demo-credentials.json'), 'utf8')).keys.map((k) => [
    k.name,
    k,
  ]),
);
const urlIndex = process.argv.indexOf('--url');
if (urlIndex < 0 || !process.argv[urlIndex + 1]) {
  console.error('usage: node mcp_ts_v2_check.mjs --url <mcp url>');
  process.exit(2);
}
const url = new URL(process.argv[urlIndex + 1]);
const label = 'typescript client v2';

let passed = 0;
let failed = 0;
function ok(name, detail) {
  passed += 1;
  const shown = detail ? ` (${String(detail).replace(/\s+/g, ' ').slice(0, 240)})` : '';
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
    ok(name, await Promise.race([body(), timeout]));
  } catch (e) {
    fail(name, e instanceof Error ? e.stack || e.message : e);
  } finally {
    clearTimeout(timer);
  }
}
function resultText(r) {
  return (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/// A client of the key, for an era (`legacy` 2025-11-25 or `modern` 2026-07-28), answering every
/// question with `action`; `wire` records the body of each POST.
async function connect(era, action, asked, wire) {
  const key = creds['northwind-readwrite'];
  const headers = { Authorization: `Bearer ${key.rawKey}`, 'X-Service-Client-Id': key.client_id };
  const recording = async (input, init) => {
    if (init && typeof init.body === 'string') {
      try {
        wire.push(JSON.parse(init.body));
      } catch {
        /* not JSON */
      }
    }
    return fetch(input, init);
  };
  const options = { capabilities: { elicitation: { form: {} } } };
  if (era === 'modern') options.versionNegotiation = { mode: { pin: '2026-07-28' } };
  const client = new Client({ name: 'signage-v2-check', version: '1.0.0' }, options);
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(request.params.message);
    return action === 'accept' ? { action, content: {} } : { action };
  });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: recording });
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}
async function callOk(client, name, args) {
  const r = await call(client, name, args);
  assert(!r.isError, `${name}: ${resultText(r).slice(0, 400)}`);
  return r.structuredContent;
}

async function roundTrip(era, action) {
  const asked = [];
  const wire = [];
  const client = await connect(era, action, asked, wire);
  try {
    const ads = await callOk(client, 'list_ads', { limit: 1 });
    const ad = ads.data[0];
    const newName = `v2 ${era} ${action} ${Date.now() % 100000}`;
    const preview = await callOk(client, 'prepare_ad_change', { ad_id: ad.id, changes: { name: newName } });
    wire.length = 0;
    const done = await call(client, 'confirm_change', { confirmation_id: preview.confirmation_id });
    const after = (await callOk(client, 'get_ad', { ad_id: ad.id })).name;
    assert(asked.length === 1, `the user was asked ${asked.length} times`);
    assert(asked[0].includes(ad.id) && asked[0].includes(newName), `the question does not name the change: ${asked[0]}`);
    assert(asked[0].includes(preview.summary), `the question is not the preview's summary: ${asked[0]}`);
    const confirms = wire.filter((m) => m.method === 'tools/call' && m.params?.name === 'confirm_change');
    if (era === 'modern') {
      assert(confirms.length === 2, `expected the call and one retry, saw ${confirms.length}`);
      const [first, second] = confirms;
      assert(!first.params.requestState && !first.params.inputResponses, JSON.stringify(first.params));
      assert(typeof second.params.requestState === 'string' && second.params.requestState, 'no echoed requestState');
      assert(second.params.inputResponses?.confirm_change?.action === action, JSON.stringify(second.params.inputResponses));
      assert(first.id !== second.id, 'the retry reused the request id');
    } else {
      assert(confirms.length === 1, `expected one call, saw ${confirms.length}`);
      const answers = wire.filter((m) => m.result && m.id !== undefined && !m.method);
      assert(answers.length === 1 && answers[0].result.action === action, JSON.stringify(answers));
    }
    if (action === 'accept') {
      assert(!done.isError && done.structuredContent.status === 'applied', resultText(done));
      assert(after === newName, `after accept the ad is named ${after}`);
    } else {
      assert(done.isError, `${action} ran the change`);
      assert(after === ad.name, `after ${action} the ad is named ${after}`);
      assert(resultText(done).includes('nothing was applied'), resultText(done));
    }
    return `${era === 'modern' ? 'input_required round trip' : 'elicitation/create'}, asked once, ${action}`;
  } finally {
    await client.close();
  }
}

async function newWrites() {
  const asked = [];
  const wire = [];
  const client = await connect('modern', 'accept', asked, wire);
  try {
    const companies = await callOk(client, 'list_companies', {});
    const grocers = companies.data.find((c) => c.name === 'Northwind Grocers');
    const confirm = async (preview) => {
      const done = await callOk(client, 'confirm_change', { confirmation_id: preview.confirmation_id });
      assert(done.status === 'applied', JSON.stringify(done).slice(0, 300));
      return done.result;
    };
    const promo = await confirm(
      await callOk(client, 'prepare_promotion_creation', {
        company_id: grocers.id,
        name: `v2 spring ${Date.now() % 100000}`,
        description: 'Made by the v2 client',
        landing_url: 'https://www.northwind-grocers.example/v2',
        activation_cost_tokens: 10,
        starts_at: '2026-01-01T00:00:00Z',
        ends_at: '2031-01-01T00:00:00Z',
      }),
    );
    const qrPreview = await callOk(client, 'prepare_qr_code_creation', { promotion_id: promo.id, label: 'Door' });
    assert(qrPreview.summary.includes(promo.name) && qrPreview.summary.includes('Northwind Grocers'), qrPreview.summary);
    const qr = await confirm(qrPreview);
    const ad = await confirm(
      await callOk(client, 'prepare_ad_creation', {
        company_id: grocers.id,
        name: 'v2 ad',
        headline: 'Spring is here',
        promotion_id: promo.id,
      }),
    );
    assert(asked.length === 3, `asked ${asked.length} times for 3 confirmations`);
    // A stale preview: the ad changes on the side; nothing is applied and a fresh preview comes back.
    const stale = await callOk(client, 'prepare_ad_change', { ad_id: ad.id, changes: { headline: 'Stale' } });
    await confirm(await callOk(client, 'prepare_ad_change', { ad_id: ad.id, changes: { name: 'v2 ad (renamed)' } }));
    const refused = await call(client, 'confirm_change', { confirmation_id: stale.confirmation_id });
    const error = refused.structuredContent?.error;
    assert(refused.isError && error?.code === 'stale_preview', resultText(refused));
    const fresh = refused.structuredContent.preview;
    assert(fresh?.object === 'pending_change' && fresh.current.name === 'v2 ad (renamed)', JSON.stringify(fresh).slice(0, 300));
    await confirm(fresh);
    return `promotion ${promo.id}, QR code ${qr.id}, ad ${ad.id}; a stale preview gave a fresh one`;
  } finally {
    await client.close();
  }
}

async function main() {
  for (const era of ['modern', 'legacy']) {
    for (const action of ['accept', 'decline', 'cancel']) {
      const name =
        era === 'modern'
          ? `2026-07-28 input_required: confirm_change asks the user, ${action}`
          : `2025-11-25 elicitation/create: confirm_change asks the user, ${action}`;
      await check(name, () => roundTrip(era, action));
    }
  }
  await check('new two-step writes (promotion, QR code, ad) confirmed by the person; a stale preview', newWrites);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed || !passed ? 1 : 0);
}

main().catch((e) => {
  fail('harness', e instanceof Error ? e.stack || e.message : e);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(1);
});
