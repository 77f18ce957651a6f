#!/usr/bin/env node
'use strict';
// signage-sandbox run [--readiness PATH] [--readiness-account ID] [--clock INSTANT|system]
//                     [--seed N|none] [--bin PATH] -- <command> [args...]
// Runs <command> (a test runner: `node --test`, or any other) with one signage server per
// worker at hand: the workers of signage-sandbox/node-test lease theirs from this process.
// When the command ends, writes the run's readiness report combining every server's
// evidence, stops the servers, and exits with the command's status.
const { spawn } = require('node:child_process');
const { startBroker } = require('../harness/broker.js');
const { runOptions } = require('../harness/options.js');

const USAGE = 'usage: signage-sandbox run [--readiness PATH] [--readiness-account ID] [--clock INSTANT|system] [--seed N|none] [--bin PATH] -- <command> [args...]';

function parse(argv) {
  if (argv[0] !== 'run') return null;
  const given = {};
  const flags = { '--readiness': 'readiness', '--readiness-account': 'readinessAccount', '--clock': 'clock', '--seed': 'seed', '--bin': 'binary' };
  let i = 1;
  for (; i < argv.length && argv[i] !== '--'; i += 2) {
    const key = flags[argv[i]];
    if (!key || i + 1 >= argv.length) return null;
    given[key] = argv[i + 1];
  }
  const command = argv.slice(i + 1);
  return command.length ? { given, command } : null;
}

async function main() {
  const parsed = parse(process.argv.slice(2));
  if (!parsed) {
    console.error(USAGE);
    return 2;
  }
  const broker = await startBroker(runOptions(parsed.given));
  const child = spawn(parsed.command[0], parsed.command.slice(1), { stdio: 'inherit', env: { ...process.env, ...broker.env } });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  const status = await new Promise((resolve) => {
    child.once('error', (err) => {
      console.error(`signage-sandbox: cannot run ${parsed.command[0]}: ${err.message}`);
      resolve(127);
    });
    child.once('exit', (code, signal) => resolve(code === null ? (signal ? 128 : 1) : code));
  });
  const done = await broker.stop();
  if (done.readiness) console.error(`signage-sandbox: readiness report of ${done.workers} worker(s) at ${done.readiness}`);
  return status;
}

main().then(
  (status) => process.exit(status),
  (err) => {
    console.error(`signage-sandbox: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  },
);
