'use strict';
// jest's global setup (main process): the broker that starts each worker's server. Workers
// find it through the environment, which jest's workers inherit.
const { startBroker, BROKER_ENV } = require('../harness/broker.js');
const { runOptions } = require('../harness/options.js');

module.exports = async function globalSetup() {
  const running = await startBroker(runOptions());
  globalThis[Symbol.for('signage-sandbox.broker')] = running;
  process.env[BROKER_ENV] = running.url;
};
