#!/usr/bin/env bash
# The console and player in a real browser: Debian's chromium, driven by Playwright for Python (pinned,
# pointed at /usr/bin/chromium; no browser download), with axe-core from npm for accessibility; then
# the MCP App preview card in a test host page (check_mcp_app.py); then billing and dates as a
# presenter moves time (check_presenter.py); then creative shown as designed, full screen or framed
# (check_creative.py); then the one-time reveal page of a secret rotated through MCP
# (check_reveal.py); then the demo's finish: a fresh QR code on Enter, dates, the first view of
# Fleet, uploaded MP4s (check_polish.py).
#
#   bash tests/browser/run.sh <path-to-signage-binary>
#
# Installs chromium with apt-get when missing, a venv with requirements.txt and axe-core with npm,
# then runs check_console.py, which starts its own server on a free port. Prints PASS/FAIL lines and
# `N passed, M failed`; screenshots of every view go to tests/browser/results/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:?usage: $0 <path-to-signage-binary>}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing chromium (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  (apt-get update -q && apt-get install -y -q chromium) >/tmp/signage-apt-chromium.log 2>&1 ||
    { tail -20 /tmp/signage-apt-chromium.log; echo "0 passed, 1 failed"; exit 1; }
fi
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
# Installed again when package.json pins another axe-core than the one installed.
wanted_axe=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"]["axe-core"])' "$here/package.json")
installed_axe=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$here/node_modules/axe-core/package.json" 2>/dev/null || true)
if [ ! -f "$here/node_modules/axe-core/axe.min.js" ] || [ "$wanted_axe" != "$installed_axe" ]; then
  (cd "$here" && npm install --no-audit --no-fund --silent)
fi
rm -rf "$here/results"
mkdir -p "$here/results"
timeout 600 "$venv/bin/python" "$here/check_console.py" "$bin" "$here/results" 2>&1 | tee "$here/results/run.log"
timeout 300 "$venv/bin/python" "$here/check_mcp_app.py" "$bin" "$here/results" 2>&1 | tee "$here/results/mcp-app.log"
timeout 300 "$venv/bin/python" "$here/check_presenter.py" "$bin" "$here/results" 2>&1 | tee "$here/results/presenter.log"
timeout 300 "$venv/bin/python" "$here/check_creative.py" "$bin" "$here/results" 2>&1 | tee "$here/results/creative.log"
timeout 300 "$venv/bin/python" "$here/check_reveal.py" "$bin" "$here/results" 2>&1 | tee "$here/results/reveal.log"
timeout 300 "$venv/bin/python" "$here/check_polish.py" "$bin" "$here/results" 2>&1 | tee "$here/results/polish.log"
grep -q ", 0 failed$" "$here/results/run.log" && grep -q ", 0 failed$" "$here/results/mcp-app.log" &&
  grep -q ", 0 failed$" "$here/results/presenter.log" && grep -q ", 0 failed$" "$here/results/creative.log" &&
  grep -q ", 0 failed$" "$here/results/reveal.log" && grep -q ", 0 failed$" "$here/results/polish.log"
