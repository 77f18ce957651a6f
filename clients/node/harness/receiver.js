'use strict';
// A webhook receiver on 127.0.0.1 that verifies every delivery (verify.js) and keeps it:
// it answers 204 to a delivery signed with a trusted secret, 400 to any other, so the
// sandbox's webhook drills (bad_signature, stale_timestamp, ...) see a receiver that refuses.
const http = require('node:http');
const { verifyWebhook } = require('./verify.js');

class WebhookReceiver {
  constructor() {
    this.secrets = [];
    this.deliveries = [];
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const delivery = this.verify(req.url || '/', req.headers, Buffer.concat(chunks));
        this.deliveries.push(delivery);
        res.writeHead(delivery.verified ? 204 : 400).end();
      });
    });
    this.port = 0;
  }

  // A receiver listening on a free port of 127.0.0.1.
  static async start() {
    const receiver = new WebhookReceiver();
    await new Promise((resolve, reject) => {
      receiver.server.once('error', reject);
      receiver.server.listen(0, '127.0.0.1', resolve);
    });
    receiver.port = receiver.server.address().port;
    return receiver;
  }

  // The URL to register as a webhook's `url`.
  url(path = '/webhooks') {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  // Accepts deliveries signed with `secret` (`whsec_...`), besides earlier ones.
  trust(secret) {
    this.secrets.push(secret);
  }

  verify(path, headers, body) {
    let error = this.secrets.length ? null : 'no secret trusted yet (call trust())';
    for (const secret of this.secrets) {
      try {
        const json = verifyWebhook(secret, headers, body);
        return delivery(path, headers, body, json, true, null);
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
    }
    let json;
    try {
      json = JSON.parse(body.toString('utf8'));
    } catch {
      json = undefined;
    }
    return delivery(path, headers, body, json, false, error);
  }

  // Waits until `count` verified deliveries (of `eventType`, if given) have arrived and returns
  // them; rejects with what did arrive otherwise.
  async waitFor(count = 1, { eventType, timeoutMs = 10000 } = {}) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const got = this.deliveries.filter((d) => d.verified && (eventType === undefined || d.type === eventType));
      if (got.length >= count) return got;
      if (Date.now() > end) {
        const seen = this.deliveries.map((d) => `${d.type} verified=${d.verified}${d.error ? ` (${d.error})` : ''}`);
        throw new Error(`expected ${count} verified deliveries${eventType ? ` of ${eventType}` : ''} within ${timeoutMs} ms; got [${seen.join(', ')}]`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  clear() {
    this.deliveries.length = 0;
  }

  close() {
    return new Promise((resolve) => {
      this.server.closeAllConnections?.();
      this.server.close(() => resolve());
    });
  }
}

function delivery(path, headers, body, json, verified, error) {
  const type = json && typeof json.type === 'string' ? json.type : '';
  return { path, headers, body: body.toString('utf8'), json, verified, error, id: String(headers['webhook-id'] || ''), type };
}

module.exports = { WebhookReceiver };
