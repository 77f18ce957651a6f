// vitest's setup file (each test file, in its worker): the worker's server, restored before
// every test, the test's requests named and scoped in the journal.
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, inject } from 'vitest';
import harness from '../harness/shared.js';

const signage = harness.sharedSandbox();

function fullName(task) {
  const names = [];
  for (let t = task; t; t = t.suite) if (t.name && t.type !== 'file') names.unshift(t.name);
  const file = task.file?.filepath ? path.relative(process.cwd(), task.file.filepath) : '';
  return [file, ...names].filter(Boolean).join(' > ');
}

beforeAll(async () => {
  await signage.attach({ owner: `vitest:${process.env.VITEST_POOL_ID || process.pid}`, brokerUrl: inject('signageSandboxBroker') });
});
beforeEach(async (context) => {
  await signage.beginTest(fullName(context.task));
});
afterEach(async () => {
  await signage.endTest();
});
afterAll(async () => {
  // A leased server stays with its worker for the next file; one started here is stopped.
  if (signage.own) await signage.detach();
});
