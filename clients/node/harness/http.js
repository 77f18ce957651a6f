'use strict';
// A small HTTP client for the signage API (node:http only, so it behaves the same inside
// jest's sandbox, vitest's workers and node:test): one demo key per client.
const http = require('node:http');
const { randomUUID } = require('node:crypto');
const scope = require('./scope.js');

const agent = new http.Agent({ keepAlive: true });
const TEST_NAME_HEADER_LOWER = scope.TEST_NAME_HEADER.toLowerCase();

class SignageError extends Error {
  constructor(answer) {
    const detail = answer.json !== undefined ? JSON.stringify(answer.json) : answer.body.slice(0, 500);
    super(`HTTP ${answer.status}: ${detail}`);
    this.name = 'SignageError';
    this.answer = answer;
    const code = answer.json && typeof answer.json === 'object' ? answer.json.code : undefined;
    this.code = typeof code === 'string' ? code : undefined;
  }
}

function toAnswer(status, headers, body) {
  let json;
  if (body && String(headers['content-type'] || '').includes('json')) {
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
  }
  const answer = { status, headers, body, json, ok: status >= 200 && status < 300 };
  // Not enumerable: an answer prints (and compares) as its data.
  Object.defineProperty(answer, 'raiseForStatus', {
    value() {
      if (!answer.ok) throw new SignageError(answer);
      return answer;
    },
  });
  return answer;
}

// Sends one request; resolves with an Answer whatever the status (see raiseForStatus()).
function send(method, url, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const all = { ...headers };
    if (data !== undefined) {
      all['content-type'] = all['content-type'] || 'application/json';
      all['content-length'] = String(data.length);
    }
    const req = http.request(url, { method, headers: all, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(toAnswer(res.statusCode || 0, res.headers, Buffer.concat(chunks).toString('utf8'))));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (data !== undefined) req.write(data);
    req.end();
  });
}

class Client {
  // Calls the API at `baseUrl` as one credential (or none, for public routes). Inside a test,
  // every request carries `Signage-Test-Name: <the test's name>`.
  constructor(baseUrl, credential = null) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.credential = credential;
  }

  request(method, path, body, headers = {}) {
    const all = {};
    if (this.credential) {
      all['x-api-key'] = this.credential.rawKey;
      all['x-service-client-id'] = this.credential.clientId;
    }
    if (scope.current.name) {
      // The journal tags the request with the test that sent it (`test_name`); header values
      // are Latin-1, so anything else in a test's name is replaced.
      all[TEST_NAME_HEADER_LOWER] = scope.current.name.slice(0, 200).replace(/[^\x20-\x7e]/g, '?');
    }
    const given = Object.keys(headers).map((h) => h.toLowerCase());
    if (method === 'POST' && !given.includes('idempotency-key') && !path.startsWith('/_sandbox/')) {
      // A ready client sends a fresh key with every create (the readiness report's
      // `idempotency_keys_on_create`); this client does not retry, so each key is used once.
      all['idempotency-key'] = `node-${randomUUID()}`;
    }
    for (const [name, value] of Object.entries(headers)) all[name.toLowerCase()] = value;
    return send(method, this.baseUrl + path, { headers: all, body });
  }

  get(path, headers) {
    return this.request('GET', path, undefined, headers);
  }

  post(path, body, headers) {
    return this.request('POST', path, body, headers);
  }

  patch(path, body, headers) {
    return this.request('PATCH', path, body, headers);
  }

  delete(path, headers) {
    return this.request('DELETE', path, undefined, headers);
  }
}


module.exports = { Client, SignageError, send };
