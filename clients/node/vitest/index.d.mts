import type { RunOptions, Sandbox } from '../harness/index.js';

/** The test file's sandbox: its worker's server, restored before each test. */
export const signage: Sandbox;

/** The config to spread into vitest's `test`: a global setup starting one server per worker
 * and writing the run's readiness report, and a setup file restoring the world per test. */
export function signageSandbox(options?: RunOptions): {
  globalSetup: string[];
  setupFiles: string[];
  provide: { signageSandboxOptions: string };
};
