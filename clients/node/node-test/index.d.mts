import type { Sandbox } from '../harness/index.js';

/** The test file's sandbox: its worker's server, restored before each test. */
export const signage: Sandbox;
