#!/usr/bin/env python3
"""Instructions per request, by callgrind: the benchmark's headline figure, which does not depend on
the machine (CPU µs do: a bare hyper hello costs 6 µs on one VM and 15 µs on another).

    python3 bench/instructions.py [--requests N] [--warmup N] [--endpoints a,b] [--json OUT] \
        NAME=BINARY[:VAR=VALUE,...] ...

Each signage binary named, and the bare hyper server (`target/release/examples/hello`, unless
`--no-hello`), runs under `valgrind --tool=callgrind` on a new database in a temp dir, rate limiting
off. Per endpoint: a warm-up of `--warmup` requests on one keep-alive connection (every answer must
be 200, and a tool call must not be an error), then `callgrind_control --zero`, `--requests`
requests on the same connection, `callgrind_control --dump`. The dump's total (user-space
instructions of every thread of the server) minus the server's idle rate over the same wall time
(background ticks, measured the same way with no traffic) over the requests is the figure.

Endpoints (the issue 33 table): hello, health (`GET /health`), companies (`GET /companies`),
devices (`GET /devices?limit=20`), mcp (`POST /mcp` `tools/call list_companies {"limit":4}`), all
with demo key `northwind-readonly`. Standard library only; traffic goes to 127.0.0.1 only; every
server started is stopped on exit.
"""

import argparse
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELLO = os.path.join(ROOT, "target/release/examples/hello")
MCP_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "list_companies", "arguments": {"limit": 4}},
}
ENDPOINTS = ["health", "companies", "devices", "mcp"]


def demo_key():
    d = json.load(open(os.path.join(ROOT, "fixtures/demo-credentials.json")))
    k = next(k for k in d["keys"] if k["name"] == "northwind-readonly")
    return k["rawKey"], k["client_id"]


def freeport():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_health(port, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection(HOST, port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def requests_for(endpoint, key, client, session):
    """(method, path, headers, body) of one endpoint's request."""
    rest = {"X-API-KEY": key, "X-Service-Client-Id": client}
    if endpoint in ("hello", "health"):
        return "GET", "/health", {}, None
    if endpoint == "companies":
        return "GET", "/companies", rest, None
    if endpoint == "devices":
        return "GET", "/devices?limit=20", rest, None
    if endpoint == "mcp":
        h = {
            "Authorization": "Bearer " + key,
            "X-Service-Client-Id": client,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        if session:
            h["Mcp-Session-Id"] = session
        return "POST", "/mcp", h, json.dumps(MCP_CALL).encode()
    raise ValueError(endpoint)


def mcp_session(port, key, client):
    h = {
        "Authorization": "Bearer " + key,
        "X-Service-Client-Id": client,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "signage-bench", "version": "1"},
        },
    }
    c = http.client.HTTPConnection(HOST, port, timeout=60)
    c.request("POST", "/mcp", body=json.dumps(init).encode(), headers=h)
    r = c.getresponse()
    r.read()
    session = r.getheader("Mcp-Session-Id") or ""
    if session:
        h["Mcp-Session-Id"] = session
    c.request(
        "POST",
        "/mcp",
        body=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        headers=h,
    )
    c.getresponse().read()
    c.close()
    return session


def check(endpoint, status, body):
    if status != 200:
        raise SystemExit(f"{endpoint}: HTTP {status}: {body[:300]!r}")
    if endpoint == "mcp":
        text = body.decode()
        if not text.lstrip().startswith("{"):
            text = next(l[5:] for l in text.splitlines() if l.startswith("data:"))
        msg = json.loads(text)
        if "result" not in msg or msg["result"].get("isError"):
            raise SystemExit(f"mcp: not a result: {body[:300]!r}")


def send(conn, req, n, endpoint):
    method, path, headers, body = req
    for _ in range(n):
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        check(endpoint, r.status, data)


class Server:
    """One server under callgrind."""

    def __init__(self, name, binary, env_extra, work, hello=False):
        self.name = name
        self.port = freeport()
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.out = os.path.join(self.dir, "cg.out")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
        env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
        env.update(env_extra)
        cmd = [binary, "--port", str(self.port)] if hello else [
            binary, "serve", "--database", os.path.join(self.dir, "db.sqlite"), "--port", str(self.port)]
        self.proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}"] + cmd,
            cwd=self.dir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "log"), "w"),
        )
        if not wait_health(self.port, 300):
            self.stop()
            raise SystemExit(f"{name}: server under valgrind never became healthy")

    def control(self, flag):
        subprocess.run(
            ["callgrind_control", flag, str(self.proc.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def measure(self, action, keep=None):
        """Instructions of every thread while `action` runs, and the wall time it took (the dump is
        moved to `keep` when given, for `callgrind_annotate`)."""
        before = set(glob.glob(self.out + "*"))
        self.control("--zero")
        t0 = time.monotonic()
        action()
        elapsed = time.monotonic() - t0
        self.control("--dump")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            new = sorted(set(glob.glob(self.out + "*")) - before, key=os.path.getmtime)
            if new:
                total = read_total(new[-1])
                if total is not None:
                    if keep:
                        shutil.move(new[-1], keep)
                    else:
                        os.remove(new[-1])
                    return total, elapsed
            time.sleep(0.1)
        raise SystemExit(f"{self.name}: no callgrind dump")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def read_total(path):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def run_server(name, binary, env_extra, endpoints, args, work, hello=False):
    key, client = demo_key()
    server = Server(name, binary, env_extra, work, hello=hello)
    results = {}
    try:
        session = "" if hello or "mcp" not in endpoints else mcp_session(server.port, key, client)
        raw = {}
        for ep in endpoints:
            req = requests_for(ep, key, client, session)
            conn = http.client.HTTPConnection(HOST, server.port, timeout=120)
            send(conn, req, args.warmup, ep)
            keep = os.path.join(args.keep, f"{name}-{ep}.callgrind") if args.keep else None
            total, elapsed = server.measure(lambda: send(conn, req, args.requests, ep), keep)
            conn.close()
            raw[ep] = (total, elapsed)
            print(f"  {name} {ep}: {total} instructions in {elapsed:.1f} s", file=sys.stderr)
        idle, idle_s = server.measure(lambda: time.sleep(args.idle))
        rate = idle / idle_s
        for ep, (total, elapsed) in raw.items():
            results[ep] = {
                "per_request": (total - rate * elapsed) / args.requests,
                "total": total,
                "seconds": elapsed,
                "idle_per_s": rate,
            }
    finally:
        server.stop()
    return results


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("servers", nargs="+", help="NAME=BINARY[:VAR=VALUE,...]")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--idle", type=float, default=5.0, help="seconds of idle measurement")
    p.add_argument("--endpoints", default=",".join(ENDPOINTS))
    p.add_argument("--no-hello", action="store_true")
    p.add_argument("--json", help="write the figures here as JSON")
    p.add_argument("--keep", help="keep each endpoint's callgrind dump in this directory")
    args = p.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        raise SystemExit("valgrind is required (apt-get install -y valgrind)")
    endpoints = [e for e in args.endpoints.split(",") if e]
    work = tempfile.mkdtemp(prefix="signage-callgrind.")
    table = {}
    try:
        if not args.no_hello:
            print("hello (bare hyper) under callgrind", file=sys.stderr)
            table["hello"] = run_server("hello", HELLO, {}, ["hello"], args, work, hello=True)["hello"]
        for spec in args.servers:
            name, _, rest = spec.partition("=")
            binary, _, envs = rest.partition(":")
            env_extra = dict(e.split("=", 1) for e in envs.split(",") if e)
            print(f"{name} ({binary}) under callgrind", file=sys.stderr)
            table[name] = run_server(name, binary, env_extra, endpoints, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names = [s.partition("=")[0] for s in args.servers]
    print(f"\nthousands of instructions per request ({args.requests} keep-alive requests after "
          f"{args.warmup}, idle rate subtracted)\n")
    head = "| build | " + ("hello | " if "hello" in table else "") + " | ".join(endpoints) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for n in names:
        cells = []
        if "hello" in table:
            cells.append(f"{table['hello']['per_request'] / 1000:.1f}")
        cells += [f"{table[n][e]['per_request'] / 1000:.1f}" for e in endpoints]
        print(f"| {n} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"requests": args.requests, "warmup": args.warmup, "servers": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
