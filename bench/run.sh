#!/usr/bin/env bash
# The signage benchmark: throughput, latency, memory and cold start of the release binary, all in one
# run so the ratios between endpoints are meaningful. See bench/README.md.
#
# Knobs (environment): BENCH_DURATION (s per endpoint, default 10), BENCH_WARMUP (s, default 2),
# BENCH_SETTLE (s of pause after a load before its CPU time is read, default 0.5), BENCH_COLD_RUNS (default 15), BENCH_TX_ROWS (default 1000000), BENCH_TX_DURATION (s per round,
# default 3), BENCH_TX_ROUNDS (default 3),
# BENCH_LOG_LEVEL (server log filter; default: the server's own default), BENCH_SKIP_BUILD=1,
# BENCH_BIN (the signage binary to measure; default target/release/signage, e.g. a copy of an
# earlier build for a before/after comparison), BENCH_SKIP_CALLGRIND=1 (skip the instructions per
# request; BENCH_CALLGRIND_REQUESTS, default 2000), BENCH_SKIP_PEERS=1 (skip json-server and the MCP
# TypeScript SDK server), BENCH_PIN (1: server on CPU 1, wrk on CPU 0 — the default when taskset exists and there are two
# or more CPUs; 0: no pinning), BENCH_SKIP_TX=1 (skip the token-ledger part), BENCH_SKIP_SANDBOX=1 (skip the sandbox and
# webhook part; its knobs are in bench/sandbox.py), BENCH_JOURNAL=0 (servers run with
# `sandbox.journal = false`: the request journal's cost is the difference to a default run).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$ROOT/bench"
TOOLS="$BENCH/tools.py"
LUA="$BENCH/wrk/request.lua"
BIN=${BENCH_BIN:-"$ROOT/target/release/signage"}
SEEDER="$ROOT/target/release/examples/seed_ledger"
HELLO="$ROOT/target/release/examples/hello"
RESULTS_DIR="$BENCH/results"

DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-2}
SETTLE=${BENCH_SETTLE:-0.5}
COLD_RUNS=${BENCH_COLD_RUNS:-15}
TX_ROWS_BIG=${BENCH_TX_ROWS:-1000000}
TX_ROWS_SMALL=1000
TX_DURATION=${BENCH_TX_DURATION:-3}
TX_ROUNDS=${BENCH_TX_ROUNDS:-3}
CONNS=64
THREADS=2
# Pinning: the server on one core, wrk on the other, so they do not take turns on the same core and
# the server's CPU time per request is not inflated by cache and scheduler churn. A pinned server's
# tokio runtime sizes itself to the one CPU it may use (one worker), like the hello server.
if [[ -z "${BENCH_PIN:-}" ]]; then
  if command -v taskset >/dev/null && (($(nproc) >= 2)); then BENCH_PIN=1; else BENCH_PIN=0; fi
fi
SERVER_PIN=()
WRK_PIN=()
if [[ "$BENCH_PIN" == 1 ]]; then
  SERVER_PIN=(taskset -c 1)
  WRK_PIN=(taskset -c 0)
  THREADS=1
fi

SCRIPT_START=$(date +%s)
LOADAVG_START=$(cut -d' ' -f1-3 /proc/loadavg)
WORK=$(mktemp -d /tmp/signage-bench.XXXXXX)
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
SERVER_PIDS=()

cleanup() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  for pid in "${SERVER_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '[bench %3ss] %s\n' "$(($(date +%s) - SCRIPT_START))" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Appends one JSON object (given as key=value pairs; values that parse as JSON stay JSON) to results.
record() {
  python3 - "$RESULTS" "$@" <<'PY'
import json, sys
out, pairs = sys.argv[1], sys.argv[2:]
obj = {}
for p in pairs:
    k, v = p.split("=", 1)
    try:
        obj[k] = json.loads(v)
    except ValueError:
        obj[k] = v
with open(out, "a") as f:
    f.write(json.dumps(obj) + "\n")
PY
}

# ---------------------------------------------------------------------------------------------------
# 1. Build.
command -v python3 >/dev/null || die "python3 is required"
command -v curl >/dev/null || die "curl is required"
if [[ "${BENCH_SKIP_BUILD:-0}" != 1 ]]; then
  log "building release binary, hello server and seeder (cargo build --release)"
  build_start=$(date +%s)
  # Two invocations on purpose: the examples pull in dev-dependency features (hyper's client), and
  # the server under test must be exactly what `cargo build --release` produces.
  (cd "$ROOT" && cargo build --release --quiet) || die "cargo build --release failed"
  (cd "$ROOT" && cargo build --release --quiet --example seed_ledger --example hello) ||
    die "building the examples failed"
  log "build done in $(($(date +%s) - build_start)) s"
fi
[[ -x "$BIN" ]] || die "$BIN missing"
[[ -x "$SEEDER" ]] || die "$SEEDER missing"
[[ -x "$HELLO" ]] || die "$HELLO missing"

# ---------------------------------------------------------------------------------------------------
# 2. Load tool.
if ! command -v wrk >/dev/null; then
  log "installing wrk (apt-get)"
  if ! apt-get install -y -qq wrk >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    apt-get install -y -qq wrk >/dev/null 2>&1 || die "could not install wrk (apt-get install -y wrk)"
  fi
fi

# Demo credentials and company from the fixtures.
read -r KEY CLIENT COMPANY < <(python3 - "$ROOT/fixtures/demo-credentials.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = next(k for k in d["keys"] if k["name"] == "northwind-readonly")
c = next(c for c in d["companies"] if c["name"] == "Northwind Grocers")
print(k["rawKey"], k["client_id"], c["id"])
PY
)
REST_HEADERS=$'X-API-KEY: '"$KEY"$'\nX-Service-Client-Id: '"$CLIENT"
MCP_HEADERS=$'Authorization: Bearer '"$KEY"$'\nX-Service-Client-Id: '"$CLIENT"$'\nContent-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2025-11-25'
MCP_BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_companies","arguments":{"limit":4}}}'

# Servers run from the scratch dir (no ./signage.toml) without inherited SIGNAGE_* settings.
server_env=(env)
while IFS='=' read -r name _; do
  [[ "$name" == SIGNAGE_* ]] && server_env+=(-u "$name")
done < <(env)
if [[ -n "${BENCH_LOG_LEVEL:-}" ]]; then server_env+=("SIGNAGE_LOG=$BENCH_LOG_LEVEL"); fi
# The benchmark measures the server, not the per-key rate limit (50/s by default, which one key under
# wrk would hit at once): rate limiting is off for every server it starts.
server_env+=("SIGNAGE_RATE_LIMIT_PER_SECOND=0")
# Nor the cap on unauthenticated connections from one address (32 by default): `/health` needs no
# credential, so wrk's 64 keep-alive connections from 127.0.0.1 are all unauthenticated, and past the
# cap each new one waits up to the unauthenticated timeout (3 s) and is then answered 503. That is
# the admission rule working (a flood from one address never holds every slot), not the server's speed.
server_env+=("SIGNAGE_MAX_UNAUTHENTICATED_PER_ADDRESS=$CONNS")
if [[ "${BENCH_JOURNAL:-1}" == 0 ]]; then server_env+=("SIGNAGE_JOURNAL=false"); fi

# start_server NAME DBFILE -> sets SERVER_PORT and SERVER_PID (a DBFILE of "hello" starts the bare
# hyper server instead of signage)
start_server() {
  local name=$1 db=$2
  SERVER_PORT=$(python3 "$TOOLS" freeport)
  local cmd=("$BIN" serve --database "$db" --port "$SERVER_PORT")
  [[ "$db" == hello ]] && cmd=("$HELLO" --port "$SERVER_PORT")
  # `exec` all the way down, so SERVER_PID is the server itself (its /proc stat is what we read).
  (cd "$WORK" && exec "${server_env[@]}" "${SERVER_PIN[@]}" "${cmd[@]}" \
    >"$WORK/$name.out" 2>"$WORK/$name.log") &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  if ! python3 "$TOOLS" wait-health "$SERVER_PORT" 30; then
    tail -20 "$WORK/$name.log" >&2 || true
    die "server $name did not become healthy"
  fi
}

stop_server() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# Does the running server's route table have this path? (A missing route and a 404 for a missing
# object look alike on the wire; the OpenAPI document tells them apart.)
has_route() {
  local port=$1 path=$2
  curl -sf "http://127.0.0.1:$port/openapi.json" |
    python3 -c 'import json,sys; sys.exit(0 if sys.argv[1] in json.load(sys.stdin).get("paths", {}) else 1)' "$path"
}

# run_wrk OUTFILE PORT PATH SECONDS CONNS THREADS [METHOD BODY HEADERS]; prints the BENCH_RESULT JSON
run_wrk() {
  local out=$1 port=$2 path=$3 secs=$4 conns=$5 threads=$6 method=${7:-GET} body=${8:-} headers=${9:-}
  BENCH_METHOD=$method BENCH_BODY=$body BENCH_HEADERS=$headers \
    "${WRK_PIN[@]}" wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 5s -s "$LUA" "http://127.0.0.1:$port$path" >"$out" 2>&1 ||
    { cat "$out" >&2; die "wrk failed on $path"; }
  grep '^BENCH_RESULT ' "$out" | tail -1 | sed 's/^BENCH_RESULT //'
}

# load_test KEY LABEL PORT PID PATH [METHOD BODY HEADERS]: warm-up, then measured run with RSS
# sampling and the server's CPU time (utime + stime from /proc/PID/stat, all threads) over the run.
load_test() {
  local key=$1 label=$2 port=$3 pid=$4 path=$5 method=${6:-GET} body=${7:-} headers=${8:-}
  log "load: $label (${WARMUP}s warm-up + ${DURATION}s, $CONNS connections, $THREADS threads)"
  run_wrk "$WORK/wrk-$key-warm.txt" "$port" "$path" "$WARMUP" "$CONNS" "$THREADS" "$method" "$body" "$headers" >/dev/null
  sleep "$SETTLE"
  python3 "$TOOLS" rss "$pid" "$DURATION" >"$WORK/rss-$key.json" &
  local sampler=$!
  local res cpu0 cpu1
  cpu0=$(python3 "$TOOLS" cputime "$pid")
  res=$(run_wrk "$WORK/wrk-$key.txt" "$port" "$path" "$DURATION" "$CONNS" "$THREADS" "$method" "$body" "$headers")
  # Work a burst leaves for later (the journal writes its file when the traffic pauses) is charged
  # to the burst: the CPU time is read after a pause.
  sleep "$SETTLE"
  cpu1=$(python3 "$TOOLS" cputime "$pid")
  wait "$sampler" || true
  record kind=load key="$key" label="$label" status=ok "wrk=$res" "rss=$(cat "$WORK/rss-$key.json")" \
    "cpu_s=$(python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))' "$cpu0" "$cpu1")"
}

load_skip() {
  log "load: $2: $3"
  record kind=load key="$1" label="$2" "status=$3"
}

# ---------------------------------------------------------------------------------------------------
# 3. The headline: instructions per request by callgrind (they do not depend on the machine).
if [[ "${BENCH_SKIP_CALLGRIND:-0}" == 1 ]]; then
  log "instructions: skipped (BENCH_SKIP_CALLGRIND=1)"
else
  if ! command -v valgrind >/dev/null; then
    log "installing valgrind (apt-get)"
    apt-get install -y -qq valgrind >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 || true; apt-get install -y -qq valgrind >/dev/null 2>&1; } || true
  fi
  if command -v valgrind >/dev/null; then
    log "instructions: callgrind, ${BENCH_CALLGRIND_REQUESTS:-2000} keep-alive requests per endpoint (a few minutes)"
    if (cd "$WORK" && python3 "$BENCH/instructions.py" --requests "${BENCH_CALLGRIND_REQUESTS:-2000}" \
      --json "$WORK/instructions.json" "signage=$BIN" >"$WORK/instructions.txt" 2>"$WORK/instructions.log"); then
      record kind=instructions "data=$(cat "$WORK/instructions.json")"
    else
      tail -5 "$WORK/instructions.log" >&2
      record kind=instructions 'data={"error": "callgrind run failed"}'
    fi
  else
    record kind=instructions 'data={"error": "valgrind not available"}'
  fi
fi

# 3a. Cold start: exec -> first 200 from /health on a new database (fixtures loaded), median of N.
log "cold start: $COLD_RUNS starts on new databases"
mkdir -p "$WORK/cold"
cold=$(cd "$WORK" && "${server_env[@]}" python3 "$TOOLS" coldstart "$BIN" "$WORK/cold" "$COLD_RUNS") ||
  die "cold start failed: $cold"
record kind=cold "data=$cold"
log "cold start: $cold"

# 3b. The ceiling: the bare hyper server, same load.
start_server hello hello
HELLO_PID=$SERVER_PID
log "server hello: pid $HELLO_PID on 127.0.0.1:$SERVER_PORT"
load_test hello "hello (bare hyper)" "$SERVER_PORT" "$HELLO_PID" /health
stop_server "$HELLO_PID"

# 3c. Load on a fresh database.
start_server main "$WORK/main.db"
MAIN_PORT=$SERVER_PORT
MAIN_PID=$SERVER_PID
log "server main: pid $MAIN_PID on 127.0.0.1:$MAIN_PORT"
rss_idle=$(python3 "$TOOLS" rss "$MAIN_PID" 0.01)
record kind=idle "rss=$rss_idle"

load_test health "GET /health" "$MAIN_PORT" "$MAIN_PID" /health

code=$(python3 "$TOOLS" status "$MAIN_PORT" /companies "$REST_HEADERS")
if [[ "$code" == 200 ]]; then
  load_test companies "GET /companies" "$MAIN_PORT" "$MAIN_PID" /companies GET "" "$REST_HEADERS"
elif [[ "$code" == 404 ]] && ! has_route "$MAIN_PORT" /companies; then
  load_skip companies "GET /companies" "n/a (404)"
else
  load_skip companies "GET /companies" "error (HTTP $code)"
fi

code=$(python3 "$TOOLS" status "$MAIN_PORT" '/devices?limit=20' "$REST_HEADERS")
if [[ "$code" == 200 ]]; then
  load_test devices "GET /devices?limit=20" "$MAIN_PORT" "$MAIN_PID" '/devices?limit=20' GET "" "$REST_HEADERS"
elif [[ "$code" == 404 ]] && ! has_route "$MAIN_PORT" /devices; then
  load_skip devices "GET /devices?limit=20" "n/a (404)"
else
  load_skip devices "GET /devices?limit=20" "error (HTTP $code)"
fi

mcp_label="POST /mcp tools/call list_companies"
set +e
session=$(python3 "$TOOLS" mcp-init "$MAIN_PORT" "$MCP_HEADERS" 2>"$WORK/mcp-init.err")
rc=$?
set -e
if [[ $rc == 2 ]]; then
  load_skip mcp "$mcp_label" "n/a (404)"
elif [[ $rc != 0 ]]; then
  load_skip mcp "$mcp_label" "error (initialize: $(head -c 200 "$WORK/mcp-init.err" | tr '\n' ' '))"
else
  headers=$MCP_HEADERS
  [[ -n "$session" ]] && headers+=$'\nMcp-Session-Id: '"$session"
  check=$(python3 "$TOOLS" mcp-check "$MAIN_PORT" "$headers" "$MCP_BODY")
  if python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])["ok"] else 1)' "$check"; then
    load_test mcp "$mcp_label" "$MAIN_PORT" "$MAIN_PID" /mcp POST "$MCP_BODY" "$headers"
  else
    load_skip mcp "$mcp_label" "error ($(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("HTTP", d["status"], d["detail"][:150])' "$check"))"
  fi
fi
record kind=final "rss=$(python3 "$TOOLS" rss "$MAIN_PID" 0.01)"
# The peers serve signage's own rows (written before the server stops).
PEERS_DB="$WORK/peers-db.json"
python3 "$BENCH/peers/db.py" "$MAIN_PORT" "$PEERS_DB" >/dev/null 2>&1 || PEERS_DB=""
stop_server "$MAIN_PID"

# 3d. The peers under the same load: json-server (REST) and the official MCP TypeScript SDK's
# server (bench/peers), pinned like signage. Their CPU per request beside signage's is the ratio.
PEERS="$BENCH/peers"
# start_peer NAME CMD... -> sets SERVER_PORT and SERVER_PID (the command gets --port PORT appended)
start_peer() {
  local name=$1
  shift
  SERVER_PORT=$(python3 "$TOOLS" freeport)
  (cd "$WORK" && exec "${SERVER_PIN[@]}" "$@" --port "$SERVER_PORT" >"$WORK/$name.out" 2>"$WORK/$name.log") &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  python3 "$TOOLS" wait-health "$SERVER_PORT" 30 || { tail -5 "$WORK/$name.log" >&2; return 1; }
}
if [[ "${BENCH_SKIP_PEERS:-0}" == 1 ]]; then
  log "peers: skipped (BENCH_SKIP_PEERS=1)"
elif [[ -z "$PEERS_DB" ]] || ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "peers: skipped (node, npm or the peers' data missing)"
  load_skip peer_companies "json-server GET /companies" "n/a (node or npm missing)"
else
  if [[ ! -d "$PEERS/node_modules" ]]; then
    log "peers: npm ci (json-server, @modelcontextprotocol/sdk; pinned)"
    (cd "$PEERS" && npm ci --no-audit --no-fund --silent >/dev/null 2>&1) || log "peers: npm ci failed"
  fi
  if [[ -d "$PEERS/node_modules" ]]; then
    if start_peer json-server node "$PEERS/node_modules/json-server/lib/cli/bin.js" --host 127.0.0.1 --quiet "$PEERS_DB"; then
      load_test peer_companies "json-server GET /companies" "$SERVER_PORT" "$SERVER_PID" /companies
      load_test peer_devices "json-server GET /devices?_limit=20" "$SERVER_PORT" "$SERVER_PID" '/devices?_limit=20'
      stop_server "$SERVER_PID"
    fi
    if start_peer mcp-sdk node "$PEERS/mcp_server.mjs" --db "$PEERS_DB"; then
      peer_headers=$'Content-Type: application/json\nAccept: application/json, text/event-stream\nMCP-Protocol-Version: 2025-11-25'
      session=$(python3 "$TOOLS" mcp-init "$SERVER_PORT" "$peer_headers" 2>/dev/null) || session=""
      [[ -n "$session" ]] && peer_headers+=$'\nMcp-Session-Id: '"$session"
      load_test peer_mcp "MCP TypeScript SDK tools/call list_companies" "$SERVER_PORT" "$SERVER_PID" /mcp POST "$MCP_BODY" "$peer_headers"
      stop_server "$SERVER_PID"
    fi
  fi
fi


# ---------------------------------------------------------------------------------------------------
# 4. Token transactions: a 1M-row ledger against a 1k-row ledger, one company each.
ledger_bench() {
  TX_PATH="/tokens/transactions?company_id=$COMPANY&limit=20"
  for rows in "$TX_ROWS_BIG" "$TX_ROWS_SMALL"; do
    db="$WORK/ledger-$rows.db"
    log "ledger: migrate + seed $rows rows"
    (cd "$WORK" && "${server_env[@]}" "$BIN" migrate --database "$db" >/dev/null) || die "migrate failed"
    "$SEEDER" --database "$db" --company "$COMPANY" --rows "$rows" >&2 || die "seeding failed"
  done
  record kind=seed "rows_big=$TX_ROWS_BIG" "rows_small=$TX_ROWS_SMALL"

  start_server big "$WORK/ledger-$TX_ROWS_BIG.db"
  BIG_PORT=$SERVER_PORT BIG_PID=$SERVER_PID
  start_server small "$WORK/ledger-$TX_ROWS_SMALL.db"
  SMALL_PORT=$SERVER_PORT SMALL_PID=$SERVER_PID

  code=$(python3 "$TOOLS" status "$BIG_PORT" "$TX_PATH" "$REST_HEADERS")
  if [[ "$code" == 404 ]] && ! has_route "$BIG_PORT" /tokens/transactions; then
    log "tokens: GET /tokens/transactions: n/a (404)"
    record kind=tx status="n/a (404)"
  elif [[ "$code" != 200 ]]; then
    log "tokens: GET /tokens/transactions: HTTP $code"
    record kind=tx status="error (HTTP $code)"
  else
    # The deep page: follow next_cursor (100 rows a hop) to the middle of each ledger, time-boxed.
    declare -A deep
    for side in big small; do
      if [[ $side == big ]]; then port=$BIG_PORT rows=$TX_ROWS_BIG; else port=$SMALL_PORT rows=$TX_ROWS_SMALL; fi
      hops=$((rows / 2 / 100))
      ((hops < 1)) && hops=1
      log "tokens: walking $hops pages of 100 into the $rows-row ledger"
      walked=$(python3 "$TOOLS" walk "$port" "/tokens/transactions?company_id=$COMPANY&limit=100" "$REST_HEADERS" "$hops" 20) ||
        die "cursor walk failed: $walked"
      deep[$side]=$walked
    done
    # Short runs alternating between the two ledgers, so a burst of load from elsewhere on the machine
    # hits both sides; the report takes the median over the rounds.
    for page in first deep; do
      declare -A tx_path=()
      declare -A tx_depth=()
      for side in big small; do
        if [[ $side == big ]]; then port=$BIG_PORT; else port=$SMALL_PORT; fi
        tx_path[$side]=$TX_PATH
        tx_depth[$side]=0
        if [[ $page == deep ]]; then
          cursor=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["cursor"])' "${deep[$side]}")
          tx_depth[$side]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["rows_skipped"])' "${deep[$side]}")
          tx_path[$side]="$TX_PATH&cursor=$cursor"
          code=$(python3 "$TOOLS" status "$port" "${tx_path[$side]}" "$REST_HEADERS")
          [[ "$code" == 200 ]] || die "deep page returned HTTP $code"
        fi
        run_wrk "$WORK/wrk-tx-warm.txt" "$port" "${tx_path[$side]}" 1 1 1 GET "" "$REST_HEADERS" >/dev/null
      done
      # Page time is latency on one keep-alive connection: with 64 connections p50 is queueing.
      log "tokens: $page page (depth ${tx_depth[big]} / ${tx_depth[small]}): $TX_ROUNDS rounds of ${TX_DURATION}s per ledger, 1 connection"
      for round in $(seq 1 "$TX_ROUNDS"); do
        for side in big small; do
          if [[ $side == big ]]; then port=$BIG_PORT pid=$BIG_PID rows=$TX_ROWS_BIG; else port=$SMALL_PORT pid=$SMALL_PID rows=$TX_ROWS_SMALL; fi
          res=$(run_wrk "$WORK/wrk-tx.txt" "$port" "${tx_path[$side]}" "$TX_DURATION" 1 1 GET "" "$REST_HEADERS")
          rss=$(python3 "$TOOLS" rss "$pid" 0.01)
          record kind=tx status=ok page="$page" rows="$rows" depth="${tx_depth[$side]}" round="$round" "wrk=$res" "rss=$rss"
        done
      done
    done
  fi
  stop_server "$BIG_PID"
  stop_server "$SMALL_PID"
}

if [[ "${BENCH_SKIP_TX:-0}" == 1 ]]; then
  log "tokens: skipped (BENCH_SKIP_TX=1)"
  record kind=tx status="skipped (BENCH_SKIP_TX=1)"
else
  ledger_bench
fi

# ---------------------------------------------------------------------------------------------------
# 5. The sandbox (snapshot restore, a 24 h clock advance, the idle tick) and webhook delivery.
if [[ "${BENCH_SKIP_SANDBOX:-0}" == 1 ]]; then
  log "sandbox: skipped (BENCH_SKIP_SANDBOX=1)"
  record kind=sandbox 'data={"skipped": true}'
else
  log "sandbox: snapshot restore, advance 24 h, idle tick, webhook delivery"
  mkdir -p "$WORK/sandbox"
  python3 "$BENCH/sandbox.py" "$BIN" "$WORK/sandbox" "$WORK/sandbox.json" || die "sandbox bench failed"
  record kind=sandbox "data=$(cat "$WORK/sandbox.json")"
fi

# ---------------------------------------------------------------------------------------------------
# 5. Report.
mkdir -p "$RESULTS_DIR"
record kind=meta "elapsed_s=$(($(date +%s) - SCRIPT_START))" \
  "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "branch=$(git -C "$ROOT" rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)" \
  "bin=${BENCH_BIN:-target/release/signage}" \
  "nproc=$(nproc)" "loadavg_start=$LOADAVG_START" "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" \
  "wrk=$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)" \
  "duration=$DURATION" "warmup=$WARMUP" "conns=$CONNS" "threads=$THREADS" \
  "tx_duration=$TX_DURATION" "tx_rounds=$TX_ROUNDS" "log_level=${BENCH_LOG_LEVEL:-default}" "pin=$BENCH_PIN" "journal=${BENCH_JOURNAL:-1}"
python3 "$TOOLS" report "$RESULTS" "$RESULTS_DIR/latest.md"
cp "$RESULTS" "$RESULTS_DIR/latest.jsonl"
cat "$RESULTS_DIR/latest.md"
