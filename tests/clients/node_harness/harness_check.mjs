// The harness's own pieces, from the installed package, under node:test: the signature check
// against the test vector the Standard Webhooks libraries publish, and the combination of
// readiness reports (the suites check both again end to end).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { combineReadiness, readinessCases, verifyWebhook } from 'signage-sandbox/harness';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const BODY = '{"test": 2432232314}';
const SIGNED = {
  'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  'webhook-timestamp': '1614265330',
  'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const AT = 1614265330 * 1000;

test('verifyWebhook accepts the Standard Webhooks test vector', () => {
  assert.deepEqual(verifyWebhook(SECRET, SIGNED, BODY, { now: AT }), { test: 2432232314 });
  assert.deepEqual(verifyWebhook(SECRET, SIGNED, Buffer.from(BODY), { now: AT + 299_000 }), { test: 2432232314 });
  // Several signatures (a rotation's): one that matches is enough.
  const both = { ...SIGNED, 'webhook-signature': `v1,b3RoZXI= ${SIGNED['webhook-signature']}` };
  assert.deepEqual(verifyWebhook(SECRET, both, BODY, { now: AT }), { test: 2432232314 });
});

test('verifyWebhook refuses a changed body, another secret, a stale or future timestamp, missing headers', () => {
  const refuses = (secret, headers, body, now, message) =>
    assert.throws(() => verifyWebhook(secret, headers, body, { now }), (err) => err.name === 'WebhookVerificationError' && message.test(err.message));
  refuses(SECRET, SIGNED, '{"test": 2432232315}', AT, /no matching signature/);
  refuses('whsec_' + Buffer.from('another key of 24 bytes!').toString('base64'), SIGNED, BODY, AT, /no matching signature/);
  refuses(SECRET, SIGNED, BODY, AT + 301_000, /too old/);
  refuses(SECRET, SIGNED, BODY, AT - 301_000, /too new/);
  refuses(SECRET, { ...SIGNED, 'webhook-signature': undefined }, BODY, AT, /missing/);
  refuses(SECRET, { ...SIGNED, 'webhook-signature': 'v2,' + SIGNED['webhook-signature'].slice(3) }, BODY, AT, /no matching signature/);
});

const report = (cases) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="signage readiness" tests="${cases.length}">
  <testsuite name="readiness acct_x" tests="${cases.length}" timestamp="2026-03-02T09:00:00Z">
${cases.join('\n')}
  </testsuite>
</testsuites>`;
const pass = (name, kind = 'required') => `<testcase classname="readiness.${kind}" name="${name}"/>`;
const fail = (name) => `<testcase classname="readiness.required" name="${name}"><failure type="fail" message="failed">x</failure></testcase>`;
const unseen = (name) => `<testcase classname="readiness.required" name="${name}"><failure type="not_observed" message="not observed">x</failure></testcase>`;

test('combineReadiness: a failure anywhere fails, else a pass anywhere passes', () => {
  const a = report([pass('a'), unseen('b'), unseen('c'), fail('d')]);
  const b = report([unseen('a'), pass('b'), unseen('c'), pass('d')]);
  const combined = combineReadiness([a, b], { 1: '3 requests', 2: '4 requests' });
  const status = Object.fromEntries(readinessCases(combined).map((c) => [c.name, c.status]));
  assert.deepEqual(status, { a: 'pass', b: 'pass', c: 'not_observed', d: 'fail' });
  assert.match(combined, /<property name="verdict" value="not_ready"\/>/);
  assert.match(combined, /<property name="workers" value="2"\/><property name="worker\.1" value="3 requests"\/>/);
  assert.match(combined, /<testsuites name="signage readiness" tests="4" failures="2" skipped="0">/);
});

test('combineReadiness: the verdict is incomplete while a required check is unseen, ready when all pass', () => {
  assert.match(combineReadiness([report([pass('a'), unseen('b')]), report([pass('a')])]), /value="incomplete"/);
  assert.match(combineReadiness([report([pass('a'), unseen('b')]), report([unseen('a'), pass('b')])]), /value="ready"/);
  assert.throws(() => combineReadiness([]), /no report/);
});
