'use strict';
// Verifying a delivery as the Standard Webhooks specification says (what the official
// libraries do), with node:crypto only: `webhook-signature` holds space-separated `v1,<base64>`
// signatures, each an HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the
// base64 decoding of the secret after `whsec_`; `webhook-timestamp` (Unix seconds) must be
// within the tolerance of now, which refuses a replayed delivery.
const crypto = require('node:crypto');

const TOLERANCE_SECONDS = 5 * 60;

class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

function header(headers, name) {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

// Throws WebhookVerificationError unless `body` (the raw bytes, a Buffer or string) carries a
// valid signature of `secret` (`whsec_...`); returns the parsed JSON body otherwise.
function verifyWebhook(secret, headers, body, { toleranceSeconds = TOLERANCE_SECONDS, now = Date.now() } = {}) {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('missing required headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('invalid timestamp');
  const skew = Math.floor(now / 1000) - Number(timestamp);
  if (skew > toleranceSeconds) throw new WebhookVerificationError('message timestamp too old');
  if (skew < -toleranceSeconds) throw new WebhookVerificationError('message timestamp too new');
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const expected = crypto
    .createHmac('sha256', key)
    .update(`${id}.${timestamp}.`)
    .update(raw)
    .digest();
  for (const versioned of signatures.split(' ')) {
    const [version, signature] = versioned.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    const given = Buffer.from(signature, 'base64');
    if (given.length === expected.length && crypto.timingSafeEqual(given, expected)) {
      return JSON.parse(raw.toString('utf8'));
    }
  }
  throw new WebhookVerificationError('no matching signature found');
}

module.exports = { verifyWebhook, WebhookVerificationError, TOLERANCE_SECONDS };
