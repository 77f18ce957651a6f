#!/usr/bin/env python3
"""Interleaved A/B: what one change costs per request, measured so that background load falls on
both sides alike.

    python3 bench/ab.py [--slices 10] [--secs 2] [--settle 0.5] [--baseline NAME] [--endpoints companies,devices,mcp] \
        NAME=BINARY[:ENV=VALUE,...] ...

Every server named starts at once, all pinned to CPU 1 (the bare hyper server too, as `hello`,
when target/release/examples/hello exists); wrk, pinned to CPU 0, hits them in turn for SECS-second
slices, SLICES rounds per endpoint (every other round in reverse order). For each slice it reads the server's CPU time (utime + stime,
all threads, /proc/PID/stat) before and, after a SETTLE-second pause (so work a burst leaves for
later, such as the journal writing its file when the traffic pauses, is charged to it), after, and
divides by the requests wrk completed; it prints
the median per server and endpoint, and the multiple of hello. Shared machines drift by 2x within
minutes; side by side in the same minute, two servers see the same drift.

Example, the request journal's cost within one build (with the paired slice differences):

    python3 bench/ab.py --baseline off \
        on=target/release/signage off=target/release/signage:SIGNAGE_JOURNAL=false

Servers run on scratch databases in a temp dir with rate limiting off; all are stopped on exit.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "bench", "wrk", "request.lua")
HELLO = os.path.join(ROOT, "target", "release", "examples", "hello")
MCP_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    '"params":{"name":"list_companies","arguments":{}}}'
)


def demo_key():
    with open(os.path.join(ROOT, "fixtures", "demo-credentials.json")) as f:
        d = json.load(f)
    k = next(k for k in d["keys"] if k["name"] == "northwind-readonly")
    return k["rawKey"], k["client_id"]


def endpoints(names, key, client):
    rest = f"X-API-KEY: {key}\nX-Service-Client-Id: {client}"
    mcp = (
        f"Authorization: Bearer {key}\nX-Service-Client-Id: {client}\n"
        "Content-Type: application/json\nAccept: application/json, text/event-stream\n"
        "MCP-Protocol-Version: 2025-11-25"
    )
    table = {
        "companies": ("/companies", "GET", "", rest),
        "devices": ("/devices?limit=20", "GET", "", rest),
        "mcp": ("/mcp", "POST", MCP_BODY, mcp),
    }
    return [(n, *table[n]) for n in names]


def cpu_ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(port, path, method, body, headers, secs):
    env = dict(os.environ, BENCH_METHOD=method, BENCH_BODY=body, BENCH_HEADERS=headers)
    out = subprocess.run(
        ["taskset", "-c", "0", "wrk", "-t1", "-c32", f"-d{secs}s", "-s", LUA,
         f"http://127.0.0.1:{port}{path}"],
        env=env, capture_output=True, text=True, check=False,
    ).stdout
    m = re.search(r"BENCH_RESULT (\{.*\})", out)
    if not m:
        return 0, 0
    r = json.loads(m.group(1))
    return r["requests"], r["err_status"]


def wait_ready(port, deadline=30.0):
    start = time.time()
    while time.time() - start < deadline:
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                            f"http://127.0.0.1:{port}/health"], capture_output=True, text=True)
        if r.stdout.strip() == "200":
            return True
        time.sleep(0.1)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slices", type=int, default=10)
    ap.add_argument("--secs", type=int, default=2)
    ap.add_argument("--settle", type=float, default=0.5)
    ap.add_argument("--endpoints", default="companies,devices,mcp")
    ap.add_argument("--baseline", help="also print every other server's paired difference to this one")
    ap.add_argument("servers", nargs="+", help="NAME=BINARY[:ENV=VALUE,...]")
    args = ap.parse_args()
    key, client = demo_key()
    scratch = tempfile.mkdtemp(prefix="signage-ab-")
    tick = os.sysconf("SC_CLK_TCK")
    servers = []
    try:
        specs = list(args.servers)
        if os.path.exists(HELLO):
            specs.append(f"hello={HELLO}")
        for i, spec in enumerate(specs):
            name, rest = spec.split("=", 1)
            binary, _, envs = rest.partition(":")
            env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
            env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
            for kv in filter(None, envs.split(",")):
                k, v = kv.split("=", 1)
                env[k] = v
            port = 19400 + i
            if name == "hello":
                cmd = [binary, "--port", str(port)]
            else:
                cmd = [binary, "serve", "--port", str(port), "--database",
                       os.path.join(scratch, f"{name}.db")]
            log = open(os.path.join(scratch, f"{name}.log"), "w")
            p = subprocess.Popen(["taskset", "-c", "1", *cmd], env=env, cwd=scratch,
                                 stdout=log, stderr=log)
            servers.append((name, port, p))
        for name, port, _ in servers:
            if not wait_ready(port):
                sys.exit(f"{name} did not answer /health on {port}")
        results = {}
        diffs = {}
        for ep, path, method, body, headers in endpoints(args.endpoints.split(","), key, client):
            for name, port, p in servers:
                target = ("/health", "GET", "", "") if name == "hello" else (path, method, body, headers)
                wrk(port, *target, 1)  # warm-up
            time.sleep(args.settle)
            per = {name: [] for name, _, _ in servers}
            errors = {name: 0 for name, _, _ in servers}
            for round_ in range(args.slices):
                # Every other round in reverse order: no server always follows the same one.
                for name, port, p in servers if round_ % 2 == 0 else servers[::-1]:
                    target = ("/health", "GET", "", "") if name == "hello" else (path, method, body, headers)
                    c0 = cpu_ticks(p.pid)
                    n, bad = wrk(port, *target, args.secs)
                    time.sleep(args.settle)
                    c1 = cpu_ticks(p.pid)
                    errors[name] += bad
                    if n:
                        per[name].append((c1 - c0) / tick * 1e6 / n)
            results[ep] = {n: round(statistics.median(v), 1) for n, v in per.items() if v}
            if args.baseline in per:
                # Slices of two servers follow each other within seconds: their difference sees
                # the same drift, so the differences' median and quartiles are the measurement
                # and its spread.
                for name, v in per.items():
                    if name in ("hello", args.baseline) or len(v) != len(per[args.baseline]):
                        continue
                    d = sorted(a - b for a, b in zip(v, per[args.baseline]))
                    q = statistics.quantiles(d, n=4) if len(d) >= 2 else [d[0]] * 3
                    diffs.setdefault(ep, {})[name] = {
                        "median": round(statistics.median(d), 1),
                        "q1": round(q[0], 1), "q3": round(q[2], 1),
                    }
                    print(f"{ep}: {name} - {args.baseline} = {statistics.median(d):+.1f} µs "
                          f"(quartiles {q[0]:+.1f} .. {q[2]:+.1f}, {len(d)} pairs)", flush=True)
            bad = {n: e for n, e in errors.items() if e}
            hello = results[ep].get("hello")
            line = ", ".join(
                f"{n} {v} µs" + (f" ({v / hello:.2f}× hello)" if hello and n != "hello" else "")
                for n, v in results[ep].items()
            )
            print(f"{ep}: {line}" + (f"  non-2xx: {bad}" if bad else ""), flush=True)
        print(json.dumps({"results": results, "paired": diffs, "load": os.getloadavg()[0],
                          "slices": args.slices, "secs": args.secs}))
    finally:
        for _, _, p in servers:
            p.kill()
            p.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
