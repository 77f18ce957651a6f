// One PASS/FAIL line per test from a runner's JSON results (vitest's json reporter and jest's
// --json share the format), for run.sh's tally.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [runner, file] = process.argv.slice(2);
let results;
try {
  results = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`FAIL ${runner}: no results at ${file} (${err.message})`);
  process.exit(1);
}
let failed = 0;
for (const suite of results.testResults) {
  const name = path.relative(process.cwd(), suite.name);
  if (!suite.assertionResults.length) {
    failed++;
    console.log(`FAIL ${runner} ${name}: ${suite.message || 'ran no test'}`);
  }
  for (const t of suite.assertionResults) {
    if (t.status === 'passed') console.log(`PASS ${runner} ${name} > ${t.title}`);
    else {
      failed++;
      console.log(`FAIL ${runner} ${name} > ${t.title}: ${(t.failureMessages || []).join('\n').slice(0, 1500)}`);
    }
  }
}
process.exit(failed ? 1 : 0);
