#!/usr/bin/env python3
"""Instructions per request, measured with callgrind: figures that do not depend on the machine.

    python3 bench/callgrind.py [--requests 2000] [--warmup 200] [--idle 5] [--endpoints health,companies,devices,mcp]
        [--top 0] [--keep DIR] [BINARY]

The release binary (default target/release/signage) runs under `valgrind --tool=callgrind` on a
scratch database, rate limiting off. For each endpoint: WARMUP requests, `callgrind_control --zero`,
REQUESTS requests over one keep-alive connection, `callgrind_control --dump`. Before the endpoints,
an idle window (IDLE seconds, no traffic) gives the rate of the background ticks (retention,
timeline, webhook worker) in instructions per second; that rate times each measured window's length
is subtracted. Counts are user-space instructions of all the server's threads (one combined profile).

Besides the total, each endpoint's **redaction** cost is the inclusive cost of every call made from
outside `signage::redact` into it (so recursion inside the redactor is counted once), and its share
of the request. `--top N` also prints the N functions with the most inclusive instructions per request.
The client is this script (Python, one connection); its own work is not in the server's counts.

Endpoints (the demo key `northwind-readonly`):
  health     GET /health
  companies  GET /companies
  devices    GET /devices?limit=20
  mcp        POST /mcp tools/call list_companies {"limit":4} (protocol 2025-11-25, after initialize)
  mcpall     POST /mcp tools/call list_companies {}
  mcpdevices POST /mcp tools/call list_devices {"limit":20}
"""
import argparse
import glob
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
REDACT = "signage::redact::"


def demo_key():
    with open(os.path.join(ROOT, "fixtures", "demo-credentials.json")) as f:
        d = json.load(f)
    k = next(k for k in d["keys"] if k["name"] == "northwind-readonly")
    return k["rawKey"], k["client_id"]


def freeport():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tool_call(name, arguments):
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": name, "arguments": arguments}},
        separators=(",", ":"),
    )


def endpoints(key, client):
    rest = {"X-API-KEY": key, "X-Service-Client-Id": client}
    mcp = {
        "Authorization": f"Bearer {key}", "X-Service-Client-Id": client,
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    return {
        "health": ("GET /health", "GET", "/health", None, {}),
        "companies": ("GET /companies", "GET", "/companies", None, rest),
        "devices": ("GET /devices?limit=20", "GET", "/devices?limit=20", None, rest),
        "mcp": ("MCP tools/call list_companies {limit:4}", "POST", "/mcp",
                tool_call("list_companies", {"limit": 4}), mcp),
        "mcpall": ("MCP tools/call list_companies {}", "POST", "/mcp",
                   tool_call("list_companies", {}), mcp),
        "mcpdevices": ("MCP tools/call list_devices {limit:20}", "POST", "/mcp",
                       tool_call("list_devices", {"limit": 20}), mcp),
    }


def wait_ready(port, deadline):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            c = http.client.HTTPConnection(HOST, port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def mcp_session(port, headers):
    """initialize + notifications/initialized; the headers to send afterwards."""
    c = http.client.HTTPConnection(HOST, port, timeout=60)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "signage-callgrind", "version": "1"}}}
    c.request("POST", "/mcp", json.dumps(init), headers)
    r = c.getresponse()
    r.read()
    out = dict(headers)
    sid = r.getheader("Mcp-Session-Id")
    if sid:
        out["Mcp-Session-Id"] = sid
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), out)
    c.getresponse().read()
    c.close()
    return out


def run_requests(conn, method, path, body, headers, n, check=False):
    for _ in range(n):
        conn.request(method, path, body, headers)
        r = conn.getresponse()
        data = r.read()
        if check and (r.status != 200 or b'"isError":true' in data or b'"error":{' in data):
            raise SystemExit(f"{method} {path}: HTTP {r.status}: {data[:300]!r}")


def control(*args):
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


def newest_dump(outdir, seen):
    for _ in range(200):
        files = set(glob.glob(os.path.join(outdir, "callgrind.out*"))) - seen
        done = [f for f in files if os.path.getsize(f) > 0]
        if done:
            time.sleep(0.3)
            return max(done, key=os.path.getmtime)
        time.sleep(0.1)
    raise SystemExit("callgrind wrote no dump")


def parse(path):
    """(total Ir, {function: inclusive Ir of calls into it from elsewhere...}, redaction Ir,
    {function: self Ir}) of one callgrind dump."""
    names = {}

    def name(field):
        m = re.match(r"\((\d+)\)(?: (.*))?", field)
        if not m:
            return field
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), field)

    total = 0
    fn = ""
    cfn = ""
    pending_call = False
    inclusive = {}
    self_cost = {}
    redaction = 0
    positions = 1
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith("fn="):
                fn = name(line[3:])
            elif line.startswith("cfn="):
                cfn = name(line[4:])
            elif line.startswith("calls="):
                pending_call = True
            elif line[:1].isdigit() or line[:1] in "+-*" or line.startswith("0x"):
                parts = line.split()
                cost = int(parts[positions]) if len(parts) > positions else 0
                if pending_call:
                    pending_call = False
                    if cfn != fn:
                        inclusive[cfn] = inclusive.get(cfn, 0) + cost
                    if cfn.startswith(REDACT) and not fn.startswith(REDACT):
                        redaction += cost
                else:
                    self_cost[fn] = self_cost.get(fn, 0) + cost
            elif line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total, inclusive, redaction, self_cost


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(ROOT, "target", "release", "signage"))
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--idle", type=float, default=5.0)
    ap.add_argument("--endpoints", default="health,companies,devices,mcp")
    ap.add_argument("--top", type=int, default=0)
    ap.add_argument("--keep", help="keep the dumps in this directory")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    key, client = demo_key()
    table = endpoints(key, client)
    work = tempfile.mkdtemp(prefix="signage-callgrind.")
    outdir = args.keep or work
    os.makedirs(outdir, exist_ok=True)
    port = freeport()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
    env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
    cmd = ["valgrind", "--tool=callgrind", "--dump-instr=" + ("yes" if os.environ.get("CALLGRIND_INSTR") else "no"),
           f"--callgrind-out-file={outdir}/callgrind.out.%p",
           args.binary, "serve", "--database", os.path.join(work, "bench.db"), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(work, "valgrind.log"), "w"))
    rows = []
    try:
        if not wait_ready(port, 600):
            raise SystemExit("the server did not become healthy under valgrind")
        pid = str(proc.pid)
        seen = set(glob.glob(os.path.join(outdir, "callgrind.out*")))
        # The background ticks' rate, with no traffic at all.
        control("--zero", pid)
        t0 = time.monotonic()
        time.sleep(args.idle)
        control(f"--dump=idle", pid)
        idle_secs = time.monotonic() - t0
        dump = newest_dump(outdir, seen)
        seen.add(dump)
        idle_rate = parse(dump)[0] / idle_secs
        for name in args.endpoints.split(","):
            label, method, path, body, headers = table[name]
            if path == "/mcp":
                headers = mcp_session(port, headers)
            conn = http.client.HTTPConnection(HOST, port, timeout=120)
            run_requests(conn, method, path, body, headers, args.warmup, check=True)
            control("--zero", pid)
            t0 = time.monotonic()
            run_requests(conn, method, path, body, headers, args.requests)
            control(f"--dump={name}", pid)
            secs = time.monotonic() - t0
            conn.close()
            dump = newest_dump(outdir, seen)
            seen.add(dump)
            total, inclusive, redaction, _ = parse(dump)
            per = (total - idle_rate * secs) / args.requests
            red = redaction / args.requests
            rows.append({"endpoint": name, "label": label, "instructions": round(per),
                         "redaction": round(red), "redaction_share": red / per if per else 0.0,
                         "requests": args.requests, "seconds": round(secs, 1),
                         "idle_per_second": round(idle_rate)})
            if args.top:
                print(f"\n{label}: top {args.top} functions, inclusive instructions per request")
                for fn, cost in sorted(inclusive.items(), key=lambda kv: -kv[1])[: args.top]:
                    print(f"  {cost / args.requests:>12,.0f}  {fn[:150]}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{os.path.basename(args.binary)}: instructions per request (callgrind, {args.requests} keep-alive requests after {args.warmup}, idle {rows[0]['idle_per_second'] if rows else 0:,}/s subtracted)\n")
    print("| endpoint | thousands of instructions | of which redaction | redaction share |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['instructions'] / 1000:.1f} | {r['redaction'] / 1000:.1f} | {100 * r['redaction_share']:.1f} % |")
    for r in rows:
        print("CALLGRIND_RESULT " + json.dumps(r))


if __name__ == "__main__":
    main()
