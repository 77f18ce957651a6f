'use strict';
// The signage sandbox for Node test suites: the binary of this platform's package, and a
// server on a free port of 127.0.0.1 that stops with the process.
const { spawn } = require('node:child_process');
const path = require('node:path');

const PLATFORM_PACKAGE = 'signage-sandbox-linux-x64';

function binaryPath() {
  if (process.env.SIGNAGE_BIN) return process.env.SIGNAGE_BIN;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`signage-sandbox has a binary for linux x64 only (this is ${process.platform} ${process.arch}); set SIGNAGE_BIN`);
  }
  return path.join(path.dirname(require.resolve(`${PLATFORM_PACKAGE}/package.json`)), 'bin', 'signage');
}

// Starts `signage serve --port 0` (an in-memory world unless `database` is given) and resolves
// with { url, stop } once the server prints where it listens.
function start({ database = ':memory:', args = [], env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(binaryPath(), ['serve', '--port', '0', '--database', database, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const stop = () => new Promise((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
    process.once('exit', () => child.kill('SIGTERM'));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\/\/\S+?)(?:\s|$)/);
      if (m) resolve({ url: m[1], stop, process: child });
    });
    child.stderr.resume();
    child.once('exit', (code) => reject(new Error(`signage exited (${code}) before listening: ${out}`)));
    child.once('error', reject);
  });
}

module.exports = { binaryPath, start };
