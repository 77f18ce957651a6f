// signage-sandbox/node-test: for `node --test`. Importing it in a test file gives the file a
// signage server, restored before every test, the test's requests named and scoped in the
// journal. Run under `signage-sandbox run -- node --test ...`, the files lease one server per
// worker from it and it writes the run's readiness report; run alone, a file starts its own.
import path from 'node:path';
import { after, afterEach, before, beforeEach } from 'node:test';
import harness from '../harness/shared.js';

export const signage = harness.sharedSandbox();

before(async () => {
  await signage.attach({ owner: `pid:${process.pid}` });
});
beforeEach(async (t) => {
  const file = t.filePath ? path.relative(process.cwd(), t.filePath) : '';
  await signage.beginTest([file, t.fullName || t.name].filter(Boolean).join(' > '));
});
afterEach(async () => {
  await signage.endTest();
});
after(async () => {
  await signage.detach();
});
