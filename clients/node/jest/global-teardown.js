'use strict';
// jest's global teardown: the run's readiness report, then every server stopped.
module.exports = async function globalTeardown() {
  const running = globalThis[Symbol.for('signage-sandbox.broker')];
  if (!running) return;
  delete globalThis[Symbol.for('signage-sandbox.broker')];
  const done = await running.stop();
  if (done.readiness) console.log(`signage-sandbox: readiness report of ${done.workers} worker(s) at ${done.readiness}`);
};
