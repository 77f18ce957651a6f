'use strict';
// The run's settings, for the global setup of any runner: given in code (the runner's config),
// else from the environment, so that a CI job can set them without touching the config.
//   SIGNAGE_SANDBOX_READINESS          write the run's readiness report (JUnit XML) here
//   SIGNAGE_SANDBOX_READINESS_ACCOUNT  the account it grades (default: Northwind, the demo keys')
//   SIGNAGE_SANDBOX_CLOCK              the frozen clock's instant, or `system` (default 2026-03-02T09:00:00Z)
//   SIGNAGE_SANDBOX_SEED               the seed, or `none` (default 7)
//   SIGNAGE_BIN                        another signage binary than the one this package installed
const { DEFAULT_CLOCK, DEFAULT_SEED } = require('./server.js');

function runOptions(given = {}, env = process.env) {
  const clock = given.clock !== undefined ? given.clock : env.SIGNAGE_SANDBOX_CLOCK || DEFAULT_CLOCK;
  const seedText = given.seed !== undefined ? given.seed : env.SIGNAGE_SANDBOX_SEED || DEFAULT_SEED;
  const seed = seedText === null || String(seedText).toLowerCase() === 'none' ? null : Number(seedText);
  if (seed !== null && !Number.isInteger(seed)) throw new TypeError(`signage-sandbox: the seed must be an integer or "none", not ${seedText}`);
  return {
    readiness: given.readiness || env.SIGNAGE_SANDBOX_READINESS || undefined,
    readinessAccount: given.readinessAccount || env.SIGNAGE_SANDBOX_READINESS_ACCOUNT || undefined,
    clock: clock === null || clock === 'system' ? null : clock,
    seed,
    binary: given.binary,
    env: given.env,
  };
}

module.exports = { runOptions };
