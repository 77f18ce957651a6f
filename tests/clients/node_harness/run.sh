#!/usr/bin/env bash
# The Node harness (signage-sandbox/vitest, /jest, /node-test) as a customer uses it: the npm
# artifacts installed into an empty project with this folder's suite, the runners (pinned in
# tests/clients/package.json) linked in, then
#   - tsc --strict over the TypeScript specs and types.ts (the package's hand-written types);
#   - the suite under vitest (forks, 2 workers), jest (--maxWorkers=2) and node:test
#     (`signage-sandbox run -- node --test --test-concurrency=2`), one server per worker each;
#   - check_reports.mjs on the three readiness reports, one per run, combined across workers;
#   - the three test files of the book's page (docs/src/node-harness.md) as written there;
#   - harness_check.mjs: the signature check against the Standard Webhooks test vector, and
#     the combination of reports, from the installed package.
# Prints one PASS/FAIL line per test and check (tests/clients/run.sh tallies them).
#   bash run.sh <artifacts-dir> <node-22-binary>
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
clients="$(dirname "$here")"
repo="$(dirname "$(dirname "$clients")")"
artifacts="$1"
node="$2"
export PATH="$(dirname "$node"):$PATH"

project="$(mktemp -d /tmp/signage-node-harness-XXXXXX)"
trap 'rm -rf "$project"' EXIT
cp -r "$here"/. "$project"/
cd "$project" || exit 1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

t0=$(date +%s%N)
if ! npm install --no-audit --no-fund --loglevel=error \
    "$artifacts"/signage-sandbox-linux-x64-*.tgz "$artifacts"/signage-sandbox-[0-9]*.tgz > install.log 2>&1; then
  cat install.log
  echo "FAIL node-harness: installing the npm artifacts failed"
  exit 1
fi
echo "npm artifacts installed in $(ms "$t0") ms"
# The runners as a customer's devDependencies; linked after the install, which would prune them.
for runner in vitest jest typescript; do
  ln -sfn "$clients/node_modules/$runner" "node_modules/$runner"
done

status=0
# The book's three test files, as the page shows them (type-checked below, run at the end).
"$node" book_examples.mjs "$repo/docs/src/node-harness.md" book || status=1

t0=$(date +%s%N)
if "$node" node_modules/typescript/bin/tsc -p . > tsc.log 2>&1; then
  echo "PASS tsc --strict: the specs, the book's example and types.ts against the package's types ($(ms "$t0") ms)"
else
  echo "FAIL tsc --strict: $(cat tsc.log)"
  status=1
fi

t0=$(date +%s%N)
"$node" node_modules/vitest/vitest.mjs run --reporter=default --reporter=json --outputFile.json=vitest.json
"$node" results.mjs vitest vitest.json || status=1
echo "vitest ran in $(ms "$t0") ms"

t0=$(date +%s%N)
SIGNAGE_SANDBOX_READINESS=reports/jest-readiness.xml \
  "$node" node_modules/jest/bin/jest.js --maxWorkers=2 --json --outputFile=jest.json 2>&1 |
  sed -E 's/^(PASS|FAIL) /jest: \1 /'
"$node" results.mjs jest jest.json || status=1
echo "jest ran in $(ms "$t0") ms"

t0=$(date +%s%N)
set -o pipefail
node_modules/.bin/signage-sandbox run --readiness reports/node-test-readiness.xml -- \
  node --test --test-concurrency=2 --test-reporter=tap 'node-test/*.test.mjs' |
  sed -E 's/^ok [0-9]+ - (.*)/PASS node:test \1/; s/^not ok [0-9]+ - (.*)/FAIL node:test \1/' || status=1
echo "node:test ran in $(ms "$t0") ms"

# The harness's own pieces (signature check, report combination) from the installed package.
node --test --test-reporter=tap harness_check.mjs |
  sed -E 's/^ok [0-9]+ - (.*)/PASS harness \1/; s/^not ok [0-9]+ - (.*)/FAIL harness \1/' || status=1

# The book's examples with the book's configs; the node:test one without the wrapper, so its
# file starts a server of its own.
"$node" node_modules/vitest/vitest.mjs run -c vitest.book.config.mjs --reporter=default --reporter=json --outputFile.json=book-vitest.json
"$node" results.mjs "vitest (book)" book-vitest.json || status=1
"$node" node_modules/jest/bin/jest.js -c jest.book.config.js --json --outputFile=book-jest.json 2>&1 |
  sed -E 's/^(PASS|FAIL) /jest: \1 /'
"$node" results.mjs "jest (book)" book-jest.json || status=1
node --test --test-reporter=tap book/readonly.test.mjs |
  sed -E 's/^ok [0-9]+ - (.*)/PASS node:test (book) \1/; s/^not ok [0-9]+ - (.*)/FAIL node:test (book) \1/' || status=1

"$node" check_reports.mjs vitest=reports/vitest-readiness.xml jest=reports/jest-readiness.xml \
  node:test=reports/node-test-readiness.xml || status=1
exit $status
