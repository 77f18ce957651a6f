'use strict';
// The sandbox operator's controls (`/_sandbox/*`, a key with the `sandbox` scope). The operator
// is never rate limited on these routes, so a harness may call them before every test.
const scope = require('./scope.js');

// `?a=1&b=true` from the filters that are set.
function query(filters) {
  const pairs = Object.entries(filters).filter(([, v]) => v !== undefined && v !== null);
  return pairs.length ? '?' + new URLSearchParams(pairs.map(([k, v]) => [k, String(v)])).toString() : '';
}

// `filters` with the current test's mark as `after`, unless given or not wanted.
function scoped(filters, thisTest) {
  if (thisTest !== false && filters.after === undefined && scope.current.after !== null) {
    return { ...filters, after: scope.current.after };
  }
  return filters;
}

function split({ thisTest, ...filters } = {}) {
  return [filters, thisTest];
}

class Operator {
  constructor(client) {
    this.client = client;
  }

  // Any operator call: the JSON answer, or a SignageError.
  async request(method, path, body) {
    const answer = await this.client.request(method, path, body);
    return answer.raiseForStatus().json;
  }

  clock() {
    return this.request('GET', '/_sandbox/clock');
  }

  advance({ seconds, to, drain, drainTimeoutMs } = {}) {
    if ((seconds === undefined) === (to === undefined)) throw new TypeError('give exactly one of seconds and to');
    const body = seconds !== undefined ? { seconds } : { to };
    if (drain) {
      body.drain = true;
      if (drainTimeoutMs !== undefined) body.drain_timeout_ms = drainTimeoutMs;
    }
    return this.request('POST', '/_sandbox/clock/advance', body);
  }

  drain({ timeoutMs } = {}) {
    return this.request('POST', '/_sandbox/webhooks/drain', timeoutMs === undefined ? {} : { timeout_ms: timeoutMs });
  }

  deliveries({ status, webhookId, eventType, limit = 100 } = {}) {
    return this.walk('/_sandbox/deliveries', { status, webhook_id: webhookId, event_type: eventType, limit });
  }

  trigger(eventType, companyId, { objectId, data } = {}) {
    const body = { type: eventType, company_id: companyId };
    if (objectId !== undefined) body.object_id = objectId;
    if (data !== undefined) body.data = data;
    return this.request('POST', '/_sandbox/events', body);
  }

  drill(webhookId, kind) {
    return this.request('POST', `/_sandbox/webhooks/${encodeURIComponent(webhookId)}/drills`, { kind });
  }

  async sink(name) {
    return (await this.request('GET', `/_sandbox/sink/${encodeURIComponent(name)}`)).data;
  }

  async clearSink(name) {
    await this.request('DELETE', `/_sandbox/sink/${encodeURIComponent(name)}`);
  }

  // A journal mark: pass it as `after` to count only what comes later (taking it adds no entry).
  async mark() {
    return (await this.request('GET', '/requests/mark')).after;
  }

  // Journal entries, newest first, every page walked: inside a test, only those written since
  // it began (`thisTest: false`: the whole journal, which outlives every restore).
  requests(options = {}) {
    const [filters, thisTest] = split(options);
    return this.walk('/_sandbox/requests', { ...scoped(filters, thisTest), limit: 100 });
  }

  // How many journal entries match, in one call, counting this test's only (as requests()).
  async countRequests(options = {}) {
    const [filters, thisTest] = split(options);
    const answer = await this.request('GET', '/_sandbox/requests' + query({ ...scoped(filters, thisTest), count: true }));
    return answer.count;
  }

  // The go-live readiness report of one account (optionally one key's requests): inside a
  // test, graded on this test's requests and drills only (`thisTest: false`: all of them).
  readiness(accountId, { keyId, thisTest } = {}) {
    return this.request('GET', '/_sandbox/readiness' + query(scoped({ account_id: accountId, key_id: keyId }, thisTest)));
  }

  // The report as JUnit XML: a <failure> exactly for each check that keeps the verdict from
  // `ready`. The whole journal by default (what a run's report holds).
  async readinessJunit(accountId, { keyId, thisTest = false } = {}) {
    const filters = scoped({ account_id: accountId, key_id: keyId, format: 'junit' }, thisTest);
    const answer = await this.client.request('GET', '/_sandbox/readiness' + query(filters));
    return answer.raiseForStatus().body;
  }

  addFault(action, { match, times, probability } = {}) {
    const body = { action };
    if (match !== undefined) body.match = match;
    if (times !== undefined) body.times = times;
    if (probability !== undefined) body.probability = probability;
    return this.request('POST', '/_sandbox/faults', body);
  }

  async faults() {
    return (await this.request('GET', '/_sandbox/faults')).data;
  }

  async removeFault(id) {
    await this.request('DELETE', `/_sandbox/faults/${encodeURIComponent(id)}`);
  }

  async clearFaults() {
    await this.request('DELETE', '/_sandbox/faults');
  }

  snapshot(name) {
    return this.request('POST', '/_sandbox/snapshots', { name });
  }

  restore(name) {
    return this.request('POST', `/_sandbox/snapshots/${encodeURIComponent(name)}/restore`);
  }

  async snapshots() {
    return (await this.request('GET', '/_sandbox/snapshots')).data;
  }

  async deleteSnapshot(name) {
    await this.request('DELETE', `/_sandbox/snapshots/${encodeURIComponent(name)}`);
  }

  async walk(path, filters) {
    const rows = [];
    let cursor;
    for (;;) {
      const page = await this.request('GET', path + query({ ...filters, cursor }));
      rows.push(...page.data);
      cursor = page.next_cursor;
      if (!page.has_more || !cursor) return rows;
    }
  }
}

module.exports = { Operator };
