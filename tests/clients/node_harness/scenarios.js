'use strict';
// A customer's suite, written once and registered under vitest, jest and node:test (the spec
// files in vitest/, jest/ and node-test/): what a team integrating with signage checks with the
// harness. Each scenario takes the runner's `signage` handle; `world` scenarios run in one
// file, in order, `webhooks` ones in another, so two workers share the run.
const assert = require('node:assert/strict');

const GROCERS = 'cmp_0m5d4ruo5fepbn59k9ts';
const createdIds = [];

async function createAd(signage, name) {
  const answer = await signage.client('northwind-readwrite').post('/ads', { company_id: GROCERS, name, headline: 'From Node' });
  assert.equal(answer.status, 201, answer.body);
  return answer.json;
}

// A webhook of the Grocers to `receiver` for one event type, its secret trusted.
async function subscribe(signage, receiver, eventType) {
  const hook = await signage.client('northwind-admin').post('/webhooks', { company_id: GROCERS, url: receiver.url(), event_types: [eventType] });
  assert.equal(hook.status, 201, hook.body);
  receiver.trust(hook.json.secret);
  return hook.json;
}

const world = {
  'a test changes the world': async (signage) => {
    const ad = await createAd(signage, 'Left behind');
    createdIds.push(ad.id);
    const moved = await signage.operator.advance({ seconds: 86400 });
    assert.equal(moved.now, '2026-03-03T09:00:00Z');
    assert.ok(moved.events['device.offline'] > 0);
    await signage.operator.addFault({ type: 'status', status: 503 }, { match: { path: '/ads' } });
  },

  'the next test starts from the same world': async (signage) => {
    // The clock, the data and the fault rules of the previous test are gone.
    assert.equal((await signage.operator.clock()).now, '2026-03-02T09:00:00Z');
    assert.deepEqual(await signage.operator.faults(), []);
    const ads = (await signage.client('northwind-readonly').get('/ads?limit=100')).json.data;
    assert.ok(ads.every((ad) => ad.name !== 'Left behind'));
    // And the seeded ids replay: the same write gives the same id as in the previous test.
    const ad = await createAd(signage, 'Left behind');
    assert.deepEqual([ad.id], createdIds);
  },

  'countRequests counts what this test sent': async (signage) => {
    await signage.operator.addFault({ type: 'status', status: 503, retry_after: 2 }, { match: { path: '/ads', method: 'POST' }, times: 2 });
    const client = signage.client('northwind-readwrite');
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const answer = await client.post('/ads', { company_id: GROCERS, name: 'Retried', headline: 'Once' }, { 'Idempotency-Key': 'node-order-7' });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, [503, 503, 201]);
    // The journal outlives restores; the harness counts this test's entries only.
    const mine = { operation_id: 'createAd', idempotency_key: 'node-order-7' };
    assert.equal(await signage.countRequests(mine), 3);
    assert.equal(await signage.countRequests({ ...mine, status: 503, faulted: true }), 2);
    // Every request carried the test's name, journaled as `test_name`.
    const named = await signage.operator.requests({ test_name: signage.testName });
    assert.equal(named.filter((e) => e.operation_id === 'createAd').length, 3);
    // The readiness report of this test alone sees the retries.
    const report = await signage.readiness();
    const retries = report.checks.find((c) => c.id === 'retries_transient_errors');
    assert.equal(retries && retries.status, 'pass', JSON.stringify(retries));
  },
};

const webhooks = {
  'a signed webhook arrives and verifies': async (signage) => {
    const receiver = await signage.receiver();
    await subscribe(signage, receiver, 'ad.created');
    const ad = await createAd(signage, 'Announced');
    const [delivery] = await receiver.waitFor(1, { eventType: 'ad.created' });
    assert.equal(delivery.verified, true, delivery.error);
    assert.equal(delivery.json.data.id, ad.id);
    // The body's timestamp is the frozen sandbox time; the signed header the wall clock.
    assert.equal(delivery.json.timestamp, '2026-03-02T09:00:00Z');
  },

  'the receiver passes every webhook drill': async (signage) => {
    const receiver = await signage.receiver();
    const hook = await subscribe(signage, receiver, 'ad.created');
    // What is not signed with the secret, or signed too long ago or ahead, is refused (400).
    for (const kind of ['bad_signature', 'missing_signature', 'stale_timestamp', 'future_timestamp']) {
      const drill = await signage.operator.drill(hook.id, kind);
      assert.equal(drill.verdict, 'pass', `${kind}: ${JSON.stringify(drill.attempts)}`);
    }
    assert.equal(receiver.deliveries.length, 4);
    assert.ok(receiver.deliveries.every((d) => !d.verified && d.error));
    // Duplicates and deliveries out of order are accepted (204), as are both signatures of a
    // rotation: the new secret trusted, the old one still valid for the grace period.
    for (const kind of ['duplicate', 'out_of_order']) {
      assert.equal((await signage.operator.drill(hook.id, kind)).verdict, 'pass', kind);
    }
    const rotated = await signage.client('northwind-admin').post(`/webhooks/${hook.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.body);
    receiver.trust(rotated.json.secret);
    assert.equal((await signage.operator.drill(hook.id, 'rotation')).verdict, 'pass');
  },

  'drain replaces sleeping': async (signage) => {
    const receiver = await signage.receiver();
    const hook = await subscribe(signage, receiver, 'ad.created');
    await createAd(signage, 'Drained');
    await signage.operator.drain();
    // No wait: once drain returns, the attempt and the receiver's answer are on record.
    assert.deepEqual(receiver.deliveries.map((d) => d.type), ['ad.created']);
    const settled = await signage.operator.deliveries({ status: 'succeeded', webhookId: hook.id });
    assert.deepEqual(settled.map((d) => d.event_type), ['ad.created']);
  },
};

module.exports = { world, webhooks };
