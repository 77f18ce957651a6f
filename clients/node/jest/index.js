'use strict';
// signage-sandbox/jest: one signage server per jest worker, started by a global setup, the
// same fresh world before every test, and the run's readiness report as JUnit.
//
//   // jest.config.js
//   module.exports = { preset: 'signage-sandbox' };      // or spread signageSandbox({...})
//
//   // a test
//   const { signage } = require('signage-sandbox/jest');
const { sharedSandbox } = require('../harness/shared.js');

const files = {
  globalSetup: require.resolve('./global-setup.js'),
  globalTeardown: require.resolve('./global-teardown.js'),
  setupFilesAfterEnv: [require.resolve('./setup.js')],
};

// The config to spread into jest's: the global setup and teardown, and the setup file. The
// options go to the global setup through the environment (SIGNAGE_SANDBOX_*).
function signageSandbox(options = {}) {
  if (options.readiness) process.env.SIGNAGE_SANDBOX_READINESS = options.readiness;
  if (options.readinessAccount) process.env.SIGNAGE_SANDBOX_READINESS_ACCOUNT = options.readinessAccount;
  if (options.clock !== undefined) process.env.SIGNAGE_SANDBOX_CLOCK = options.clock === null ? 'system' : options.clock;
  if (options.seed !== undefined) process.env.SIGNAGE_SANDBOX_SEED = options.seed === null ? 'none' : String(options.seed);
  return { ...files, setupFilesAfterEnv: [...files.setupFilesAfterEnv] };
}

module.exports = { signage: sharedSandbox(), signageSandbox, files };
