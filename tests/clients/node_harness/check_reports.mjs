// The readiness reports the three runs wrote: each exists, combines both workers' servers
// (two servers, each named by the worker it served and each with journaled requests), states a
// verdict its failures agree with, holds the evidence only the first file's worker produced
// (its retried create), and grades every check as the other runners' reports do: the same
// suite gives the same report under vitest, jest and node:test.
import { readFileSync, existsSync } from 'node:fs';
import { readinessCases } from 'signage-sandbox/harness';

const reports = Object.fromEntries(process.argv.slice(2).map((arg) => arg.split('=')));
let failed = 0;
const check = (ok, line, detail = '') => {
  if (!ok) failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} readiness ${line}${ok || !detail ? '' : `: ${detail}`}`);
};
const property = (xml, name) => (new RegExp(`<property name="${name.replace('.', '\\.')}" value="([^"]*)"`).exec(xml) || [])[1];

const statuses = {};
for (const [runner, file] of Object.entries(reports)) {
  if (!existsSync(file)) {
    check(false, `${runner}: a report at ${file}`, 'none written');
    continue;
  }
  const xml = readFileSync(file, 'utf8');
  const cases = readinessCases(xml);
  statuses[runner] = Object.fromEntries(cases.map((c) => [c.name, c.status]));
  const workers = Number(property(xml, 'workers'));
  const named = [1, 2].map((i) => property(xml, `worker.${i}`) || '');
  const owners = new Set(named.map((w) => w.split(' from ')[1]));
  check(
    workers === 2 && named.every((w) => /^[1-9]\d* requests from \S+$/.test(w)) && owners.size === 2,
    `${runner}: one report from both workers' servers (${named.join('; ')})`,
    `workers=${workers}`,
  );
  const verdict = property(xml, 'verdict');
  const failures = Number((/<testsuites\b[^>]*failures="(\d+)"/.exec(xml) || [])[1]);
  check(
    cases.length >= 10 && ['ready', 'not_ready', 'incomplete'].includes(verdict) && failures === (xml.match(/<failure\b/g) || []).length && (failures === 0) === (verdict === 'ready'),
    `${runner}: ${cases.length} checks, verdict ${verdict}, ${failures} failures`,
    xml.slice(0, 500),
  );
  check(statuses[runner].retries_transient_errors === 'pass', `${runner}: the retried create of one worker counts in the whole run's report`, JSON.stringify(statuses[runner]));
}
const [first, ...others] = Object.keys(statuses);
for (const runner of others) {
  const names = new Set([...Object.keys(statuses[first]), ...Object.keys(statuses[runner])]);
  const differ = [...names].filter((n) => statuses[first][n] !== statuses[runner][n]).map((n) => `${n}: ${statuses[first][n]} vs ${statuses[runner][n]}`);
  check(differ.length === 0, `${runner} grades every check as ${first} does`, differ.join('; '));
}
process.exit(failed ? 1 : 0);
