'use strict';
// One server per worker, started by the test run's global setup: the broker runs in the
// runner's main process, where the global setup and teardown run, and hands each worker its own
// server on a free port, started on the worker's first test. A worker is named by its runner
// (VITEST_POOL_ID, JEST_WORKER_ID), so every test file of one worker gets the same server;
// node:test runs each file in a process of its own, which leases a server and gives it back
// when the file ends, so files run one after another on a worker reuse it. At teardown the
// broker writes one readiness report combining every server's evidence, then stops them.
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { SignageServer } = require('./server.js');
const { combineReadiness } = require('./combine.js');
const { send } = require('./http.js');

const BROKER_ENV = 'SIGNAGE_SANDBOX_BROKER';
const CLEAN_SNAPSHOT = 'signage-node-clean';

function alive(owner) {
  const m = /^pid:(\d+)$/.exec(owner);
  if (!m) return true;
  try {
    process.kill(Number(m[1]), 0);
    return true;
  } catch {
    return false;
  }
}

function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'));
      } catch {
        resolve({});
      }
    });
  });
}

async function startBroker({ readiness, readinessAccount, ...serverOptions } = {}) {
  const slots = []; // { server: Promise<SignageServer>, owner: string | null, owners: Set<string> }

  async function launch() {
    const server = new SignageServer(serverOptions);
    await server.start();
    // The fresh world every test of this worker starts from.
    await server.operator.snapshot(CLEAN_SNAPSHOT);
    return server;
  }

  function lease(owner) {
    let slot = slots.find((s) => s.owner === owner);
    if (!slot) {
      slot = slots.find((s) => s.owner === null || !alive(s.owner));
      if (slot) {
        slot.owner = owner;
      } else {
        slot = { server: launch(), owner, owners: new Set() };
        slots.push(slot);
      }
    }
    slot.owners.add(owner);
    return slot.server;
  }

  const broker = http.createServer(async (req, res) => {
    const body = await readBody(req);
    const owner = typeof body.owner === 'string' && body.owner ? body.owner : null;
    if (req.method !== 'POST' || !owner || !['/lease', '/release'].includes(req.url || '')) {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"POST /lease or /release with {owner}"}');
      return;
    }
    if (req.url === '/release') {
      for (const s of slots) if (s.owner === owner) s.owner = null;
      res.writeHead(204).end();
      return;
    }
    try {
      const server = await lease(owner);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: server.url, snapshot: CLEAN_SNAPSHOT, worker: slots.findIndex((s) => s.owner === owner) + 1 }));
    } catch (err) {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err && err.message) }));
    }
  });
  await new Promise((resolve) => broker.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${broker.address().port}`;

  // Writes the run's readiness report (when a path was given) and stops every server.
  async function stop() {
    const servers = (await Promise.allSettled(slots.map((s) => s.server)))
      .map((r, i) => (r.status === 'fulfilled' ? { server: r.value, slot: slots[i] } : null))
      .filter(Boolean);
    let written = null;
    try {
      if (readiness && servers.length) {
        const account = readinessAccount || servers[0].server.credentials['northwind-admin'].accountId;
        const reports = [];
        const workers = {};
        for (const [i, { server, slot }] of servers.entries()) {
          reports.push(await server.operator.readinessJunit(account, { thisTest: false }));
          const journaled = await server.operator.countRequests({ thisTest: false });
          workers[String(i + 1)] = `${journaled} requests from ${[...slot.owners].join(' ')}`;
        }
        fs.mkdirSync(path.dirname(path.resolve(readiness)), { recursive: true });
        fs.writeFileSync(readiness, combineReadiness(reports, workers));
        written = path.resolve(readiness);
      }
    } finally {
      await Promise.all(servers.map(({ server }) => server.stop()));
      broker.closeAllConnections?.();
      await new Promise((resolve) => broker.close(() => resolve()));
    }
    return { readiness: written, workers: servers.length };
  }

  return { url, env: { [BROKER_ENV]: url }, stop, servers: () => slots.length };
}

// Asks the broker at `brokerUrl` for the server of `owner`: { url, snapshot, worker }.
async function leaseServer(brokerUrl, owner) {
  const answer = await send('POST', `${brokerUrl}/lease`, { body: { owner } });
  if (answer.status !== 200) throw new Error(`the signage broker could not start a server: ${answer.body}`);
  return answer.json;
}

async function releaseServer(brokerUrl, owner) {
  await send('POST', `${brokerUrl}/release`, { body: { owner } });
}

module.exports = { startBroker, leaseServer, releaseServer, BROKER_ENV, CLEAN_SNAPSHOT };
