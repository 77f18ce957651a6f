// The test files the book's page on the harness shows (docs/src/node-harness.md), written out as
// they are there: each code block whose first line is `// <name>.test.<ext>` becomes that file.
//   node book_examples.mjs <page> <out-dir>
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [page, out] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
const written = [];
for (const m of readFileSync(page, 'utf8').matchAll(/^```\w+\n\/\/ ([\w-]+\.test\.(?:ts|js|mjs))\n([\s\S]*?)^```$/gm)) {
  writeFileSync(path.join(out, m[1]), m[2]);
  written.push(m[1]);
}
console.log(`the book's test files: ${written.join(', ')}`);
process.exit(written.length === 3 ? 0 : 1);
