// The npm artifacts as a customer installs them: `npm install` of signage-sandbox and its
// platform package into an empty folder (done by run.sh), then this suite under `node --test`,
// run from that folder so that `signage-sandbox` resolves to the installed copy, never the
// checkout. Two servers at once (two test files' worth of workers) must not collide.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const sandbox = require('signage-sandbox');
const credentials = JSON.parse(readFileSync(process.env.SIGNAGE_CREDENTIALS, 'utf8'));
const readonly = credentials.keys.find((k) => k.name === 'northwind-readonly');

test('the binary comes with the package, outside the checkout', () => {
  delete process.env.SIGNAGE_BIN;
  const bin = sandbox.binaryPath();
  assert.ok(existsSync(bin), bin);
  assert.ok(bin.startsWith(process.cwd()), `${bin} is not the installed copy`);
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8' });
  assert.match(version, /^signage \d+\.\d+\.\d+/);
  const viaNpx = execFileSync('npx', ['--no-install', 'signage', '--version'], { encoding: 'utf8' });
  assert.equal(viaNpx, version);
});

test('start() serves the demo world on a free port, and two servers run side by side', async () => {
  const [a, b] = await Promise.all([sandbox.start(), sandbox.start()]);
  try {
    assert.notEqual(a.url, b.url);
    for (const s of [a, b]) {
      const health = await fetch(`${s.url}/health`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { ok: true, backendAuthMode: 'passthrough' });
      const companies = await fetch(`${s.url}/companies`, {
        headers: { authorization: `Bearer ${readonly.rawKey}`, 'x-service-client-id': readonly.client_id },
      });
      assert.equal(companies.status, 200);
      const body = await companies.json();
      assert.equal(body.object, 'list');
      assert.ok(body.data.length > 0);
      const refused = await fetch(`${s.url}/companies`);
      assert.equal(refused.status, 401);
      assert.match(refused.headers.get('content-type'), /application\/problem\+json/);
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  assert.notEqual(a.process.exitCode ?? a.process.signalCode, null, 'the server stopped');
});
