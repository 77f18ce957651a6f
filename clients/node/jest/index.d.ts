import type { RunOptions, Sandbox } from '../harness/index.js';

/** The test file's sandbox: its worker's server, restored before each test. */
export const signage: Sandbox;

export interface JestFiles {
  globalSetup: string;
  globalTeardown: string;
  setupFilesAfterEnv: string[];
}

/** The config to spread into jest's (what `preset: 'signage-sandbox'` gives, with options). */
export function signageSandbox(options?: RunOptions): JestFiles;
export const files: JestFiles;
