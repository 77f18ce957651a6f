'use strict';
// What a test sees: its worker's sandbox, restored to the same fresh world before each test,
// with the test's requests scoped in the journal. The runner integrations (vitest, jest,
// node-test) call attach() once per test file, beginTest()/endTest() around each test and
// detach() at the end of the file.
const scope = require('./scope.js');
const { SignageServer, loadCredentials, clientFor } = require('./server.js');
const { Operator } = require('./operator.js');
const { WebhookReceiver } = require('./receiver.js');
const { leaseServer, releaseServer, BROKER_ENV, CLEAN_SNAPSHOT } = require('./broker.js');

class Sandbox {
  constructor() {
    this.url = '';
    this.worker = 0;
    this.credentials = loadCredentials();
    this.receivers = [];
    this.own = null;
    this.lease = null;
    this.snapshotName = CLEAN_SNAPSHOT;
  }

  // The worker's server: leased from the run's broker (its global setup ran), or else started
  // for this process alone (stopped when it exits; no combined readiness report then).
  async attach({ owner = `pid:${process.pid}`, brokerUrl = process.env[BROKER_ENV], serverOptions } = {}) {
    if (this.url) return this;
    if (brokerUrl) {
      const leased = await leaseServer(brokerUrl, owner);
      this.lease = { brokerUrl, owner };
      this.url = leased.url;
      this.worker = leased.worker;
    } else {
      this.own = await new SignageServer(serverOptions).start();
      await this.own.operator.snapshot(CLEAN_SNAPSHOT);
      this.url = this.own.url;
      this.worker = 1;
    }
    return this;
  }

  // Gives the server back (node:test: the next file of this worker takes it) or stops it.
  async detach() {
    await this.closeReceivers();
    if (this.lease) await releaseServer(this.lease.brokerUrl, this.lease.owner);
    if (this.own) await this.own.stop();
    this.lease = null;
    this.own = null;
    this.url = '';
  }

  // Before each test: the fresh world back (database, clock, seeded ids and secrets, fault
  // rules), then a journal mark, so the test counts only its own requests.
  async beginTest(name) {
    if (!this.url) throw new Error('signage-sandbox: no server attached (is the runner integration set up?)');
    scope.begin(name);
    await this.operator.restore(this.snapshotName);
    scope.current.after = await this.operator.mark();
  }

  async endTest() {
    await this.closeReceivers();
    scope.end();
  }

  async closeReceivers() {
    const open = this.receivers.splice(0);
    await Promise.all(open.map((r) => r.close()));
  }

  // The name the current test's requests carry (`Signage-Test-Name`), or null outside a test.
  get testName() {
    return scope.current.name;
  }

  client(key) {
    return clientFor(this.url, this.credentials, key);
  }

  get operator() {
    return new Operator(this.client('sandbox-operator'));
  }

  // A verifying webhook receiver on a free port, closed when the test ends.
  async receiver() {
    const receiver = await WebhookReceiver.start();
    this.receivers.push(receiver);
    return receiver;
  }

  // How many journal entries of this test match the filters of GET /_sandbox/requests.
  countRequests(filters = {}) {
    return this.operator.countRequests(filters);
  }

  // This test's readiness report for an account (default: Northwind, the demo keys' account).
  readiness(accountId = this.credentials['northwind-admin'].accountId, options = {}) {
    return this.operator.readiness(accountId, options);
  }
}

module.exports = { Sandbox };
