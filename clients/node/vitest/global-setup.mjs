// vitest's global setup (main process): the broker that starts each worker's server, and at
// teardown the run's readiness report.
import broker from '../harness/broker.js';
import options from '../harness/options.js';

export default async function setup(project) {
  const given = JSON.parse(project.config.provide?.signageSandboxOptions || '{}');
  const running = await broker.startBroker(options.runOptions(given));
  project.provide('signageSandboxBroker', running.url);
  return async () => {
    const done = await running.stop();
    if (done.readiness) console.log(`signage-sandbox: readiness report of ${done.workers} worker(s) at ${done.readiness}`);
  };
}
