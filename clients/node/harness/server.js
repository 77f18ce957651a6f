'use strict';
// Starting and stopping one `signage serve` process, and what a test needs of it.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { binaryPath } = require('../index.js');
const { Client } = require('./http.js');
const { Operator } = require('./operator.js');

const DEFAULT_CLOCK = '2026-03-02T09:00:00Z';
const DEFAULT_SEED = 7;
const LISTENING = /signage listening on (http:\/\/\S+)/;

class SignageStartError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SignageStartError';
  }
}

// The demo credentials by name: from `file`, else the copy shipped with this package (made
// from the repository's fixtures/demo-credentials.json when the package is built).
function loadCredentials(file) {
  const candidates = file ? [file] : [path.join(__dirname, '..', 'demo-credentials.json'), path.join(__dirname, '..', '..', '..', 'fixtures', 'demo-credentials.json')];
  const found = candidates.find((f) => fs.existsSync(f));
  if (!found) throw new SignageStartError(`no demo credentials at ${candidates.join(' or ')}`);
  const data = JSON.parse(fs.readFileSync(found, 'utf8'));
  const out = {};
  for (const k of data.keys) {
    out[k.name] = {
      name: k.name,
      rawKey: k.rawKey,
      clientId: k.client_id,
      scopes: k.scopes || [],
      keyId: k.key_id || '',
      accountId: k.account_id || '',
    };
  }
  return out;
}

// A client of `baseUrl` authenticated as the demo key `key` (undefined: unauthenticated).
function clientFor(baseUrl, credentials, key) {
  if (key === undefined) return new Client(baseUrl);
  const credential = credentials[key];
  if (!credential) throw new Error(`no demo key ${JSON.stringify(key)}; known: ${Object.keys(credentials).sort().join(', ')}`);
  return new Client(baseUrl, credential);
}

// Every server this process started and has not seen exit. They are stopped when the process
// exits, and also when it is stopped by a signal, which skips 'exit' handlers: a runner whose
// main process gets SIGINT or SIGTERM without stopping its workers (jest does) would otherwise
// leave its servers running. After stopping them the signal takes its course: if nothing else
// listens for it, it is raised again, and its default action ends the process as it would have.
const live = new Set();
let hooked = false;

function stopAll() {
  for (const child of live) child.kill('SIGTERM');
}

function track(child) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (hooked) return;
  hooked = true;
  process.once('exit', stopAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(signal, () => {
      stopAll();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

// One sandbox process on 127.0.0.1 (port 0), on a throw-away in-memory database, frozen at
// `clock` (null: the system clock) and seeded with `seed` (null: ids and secrets from the OS).
class SignageServer {
  constructor({ binary, clock = DEFAULT_CLOCK, seed = DEFAULT_SEED, env = {}, credentials, startTimeoutMs = 30000 } = {}) {
    this.binary = binary || binaryPath();
    this.clock = clock;
    this.seed = seed;
    this.env = env;
    this.credentials = loadCredentials(credentials);
    this.startTimeoutMs = startTimeoutMs;
    this.url = '';
    this.log = [];
    this.process = null;
    this.workdir = null;
  }

  // Starts the process and resolves once it prints its listening line.
  async start() {
    const args = ['serve', '--port', '0', '--database', ':memory:'];
    if (this.clock) args.push('--clock', this.clock);
    if (this.seed !== null && this.seed !== undefined) args.push('--seed', String(this.seed));
    // The server reads no SIGNAGE_* variable of the test run's environment, only `env`.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SIGNAGE_')));
    Object.assign(env, this.env);
    // Its own empty directory: no stray ./signage.toml is read.
    this.workdir = fs.mkdtempSync(path.join(os.tmpdir(), 'signage-node-'));
    const child = spawn(this.binary, args, { cwd: this.workdir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.process = child;
    track(child);
    const url = await new Promise((resolve, reject) => {
      let pending = '';
      const timer = setTimeout(() => reject(new SignageStartError(`signage did not start listening within ${this.startTimeoutMs} ms:\n${this.log.join('\n')}`)), this.startTimeoutMs);
      const onLine = (chunk) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() || '';
        for (const line of lines) {
          this.log.push(line);
          if (this.log.length > 200) this.log.shift();
          const m = line.match(LISTENING);
          if (m) {
            clearTimeout(timer);
            resolve(m[1].replace(/\/$/, ''));
          }
        }
      };
      child.stdout.setEncoding('utf8').on('data', onLine);
      child.stderr.setEncoding('utf8').on('data', onLine);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new SignageStartError(`cannot run ${this.binary}: ${err.message}`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new SignageStartError(`signage exited (${code}) before listening:\n${this.log.join('\n')}`));
      });
    }).catch(async (err) => {
      await this.stop();
      throw err;
    });
    this.url = url;
    return this;
  }

  // SIGTERM (the server removes its throw-away database), then SIGKILL after 5 s.
  async stop() {
    const child = this.process;
    this.process = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      });
    }
    if (this.workdir) {
      fs.rmSync(this.workdir, { recursive: true, force: true });
      this.workdir = null;
    }
  }

  client(key) {
    return clientFor(this.url, this.credentials, key);
  }

  // The sandbox operator's helpers (demo key `sandbox-operator`).
  get operator() {
    return new Operator(this.client('sandbox-operator'));
  }
}

module.exports = { SignageServer, SignageStartError, loadCredentials, clientFor, DEFAULT_CLOCK, DEFAULT_SEED };
