#!/usr/bin/env bash
# Property-based checks of the REST API against its own OpenAPI document, with Schemathesis (PyPI,
# pinned in requirements.txt), authenticated as a demo key (X-API-KEY + X-Service-Client-Id).
#
#   bash tests/clients/schemathesis.sh <base_url>        e.g. http://127.0.0.1:8080
#
# Point it at a server you can throw away: it writes (use a fresh `--database :memory:` instance).
# All checks are on; it is bounded by examples per operation and a wall-clock limit. Exits non-zero
# when Schemathesis finds anything. After Schemathesis' own report it prints one line per tested
# operation, `PASS schemathesis: <METHOD> <path>` or `FAIL schemathesis: <METHOD> <path>: <codes>`.
#
# Knobs (environment): ST_KEY (demo key name, default northwind-readwrite), ST_MAX_EXAMPLES (30),
# ST_TIME_LIMIT seconds (420), ST_SEED (fixed, so a CI run is reproducible; set another to explore),
# ST_REPORT_DIR (default tests/clients/results/schemathesis), ST_WORKERS (1).
#
# Failures accepted as by design go in schemathesis-baseline.json (Schemathesis' own --baseline
# format; used only when the file exists, because Schemathesis would otherwise create it from the
# run and so accept everything it found). Record one deliberately with
#   ST_BASELINE_WRITE=1 bash tests/clients/schemathesis.sh <base_url>
# and prune the recorded entries to the ones that are truly by design before committing it.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 <base_url>" >&2
  exit 2
fi
base="${1%/}"

bash "$here/setup.sh" >&2 || exit 1
py="$here/.venv/bin/python"
key_name="${ST_KEY:-northwind-readwrite}"
read -r raw_key client_id < <("$py" - "$here/../../fixtures/demo-credentials.json" "$key_name" <<'EOF'
import json, sys
keys = {k["name"]: k for k in json.load(open(sys.argv[1]))["keys"]}
k = keys[sys.argv[2]]
print(k["rawKey"], k["client_id"])
EOF
)
if [ -z "${raw_key:-}" ]; then
  echo "schemathesis.sh: no demo key named $key_name" >&2
  exit 2
fi

report_dir="${ST_REPORT_DIR:-$here/results/schemathesis}"
rm -rf "$report_dir"
mkdir -p "$report_dir"
# Schemathesis and Hypothesis drop working files into the current directory; keep them in the report dir.
cd "$report_dir" || exit 1

baseline=()
if [ -f "$here/schemathesis-baseline.json" ]; then
  baseline=(--baseline "$here/schemathesis-baseline.json")
  [ "${ST_BASELINE_WRITE:-0}" = 1 ] && baseline+=(--baseline-update)
elif [ "${ST_BASELINE_WRITE:-0}" = 1 ]; then
  baseline=(--baseline "$here/schemathesis-baseline.json")
fi

# schemathesis_hooks.py: generated cursors keep their bound, not a random filter tag (see there).
SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" \
timeout --kill-after=5 "${ST_TIME_LIMIT:-420}" "$here/.venv/bin/schemathesis" \
  --config-file "$here/schemathesis.toml" --no-color \
  run "$base/openapi.json" \
  --url "$base" \
  -H "X-API-KEY: $raw_key" \
  -H "X-Service-Client-Id: $client_id" \
  --max-examples "${ST_MAX_EXAMPLES:-30}" \
  --workers "${ST_WORKERS:-1}" \
  --seed "${ST_SEED:-20261125}" \
  --request-timeout 10 \
  --generation-database none \
  --generation-with-security-parameters false \
  --report junit \
  --report-junit-path "$report_dir/junit.xml" \
  "${baseline[@]}"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "FAIL schemathesis: run: stopped by the ${ST_TIME_LIMIT:-420} s time limit"
  rc=1 # not 124: a caller's own `timeout` would take that for its limit
fi

"$py" - "$report_dir/junit.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError) as e:
    print(f"FAIL schemathesis: report: no JUnit report ({e})")
    sys.exit(0)
for case in root.iter("testcase"):
    problems = case.findall("failure") + case.findall("error")
    if problems:
        codes = sorted({p.get("message") or p.get("type") or "?" for p in problems})
        print(f"FAIL schemathesis: {case.get('name')}: {', '.join(codes)}")
    elif case.find("skipped") is None:
        print(f"PASS schemathesis: {case.get('name')}")
EOF
exit $rc
