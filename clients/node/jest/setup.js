'use strict';
// jest's setup file (each test file, in its worker): the worker's server, restored before
// every test, the test's requests named and scoped in the journal.
const path = require('node:path');
const { sharedSandbox } = require('../harness/shared.js');

const signage = sharedSandbox();

beforeAll(async () => {
  await signage.attach({ owner: `jest:${process.env.JEST_WORKER_ID || process.pid}` });
});
beforeEach(async () => {
  const state = expect.getState();
  const file = state.testPath ? path.relative(process.cwd(), state.testPath) : '';
  await signage.beginTest([file, state.currentTestName].filter(Boolean).join(' > '));
});
afterEach(async () => {
  await signage.endTest();
});
afterAll(async () => {
  if (signage.own) await signage.detach();
});
