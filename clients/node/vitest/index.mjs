// signage-sandbox/vitest: one signage server per vitest worker, started by a global setup, the
// same fresh world before every test, and the run's readiness report as JUnit.
//
//   // vitest.config.ts
//   import { defineConfig } from 'vitest/config';
//   import { signageSandbox } from 'signage-sandbox/vitest';
//   export default defineConfig({ test: { ...signageSandbox({ readiness: 'readiness.xml' }) } });
//
//   // a test
//   import { signage } from 'signage-sandbox/vitest';
import { fileURLToPath } from 'node:url';
import harness from '../harness/shared.js';

// The test file's sandbox: `client(key)`, `operator`, `receiver()`, `countRequests()`, ...
export const signage = harness.sharedSandbox();

// The config to spread into `test`: the global setup (a broker starting one server per worker,
// writing the report at the end) and the setup file (restore and journal scope per test).
export function signageSandbox(options = {}) {
  return {
    globalSetup: [fileURLToPath(new URL('./global-setup.mjs', import.meta.url))],
    setupFiles: [fileURLToPath(new URL('./setup.mjs', import.meta.url))],
    provide: { signageSandboxOptions: JSON.stringify(options) },
  };
}
