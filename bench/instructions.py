#!/usr/bin/env python3
"""Instructions per request, by callgrind: the benchmark's headline figure, which does not depend on
the machine (CPU µs do: a bare hyper hello costs 6 µs on one VM and 15 µs on another).

    python3 bench/instructions.py [--requests N] [--warmup N] [--idle S] [--settle S] [--endpoints a,b]
        [--top N] [--keep DIR] [--dump-instr] [--json OUT] [--hello PATH | --no-hello] [--companies N]
        [--world N] [--journal N]
        [NAME=BINARY[:VAR=VALUE,...] | BINARY] ...

Each signage binary named (default `signage=target/release/signage`; a bare BINARY is named by its
file name), and the bare hyper server (`--hello`, default `target/release/examples/hello`, unless
`--no-hello`), runs under `valgrind --tool=callgrind` on a new database in a temp dir, rate limiting
off. After the start, `--settle` seconds pass (default 4: the first background ticks of a start
prepare their statements, a start's cost). Per endpoint: a warm-up of `--warmup` requests on one keep-alive connection (every answer must
be 200, and a tool call must not be an error), then `callgrind_control --zero`, `--requests`
requests on the same connection, `callgrind_control --dump`. The dump's total (user-space
instructions of every thread of the server, one combined profile) minus the server's idle rate over
the same wall time (background ticks: retention, timeline, webhook worker; measured the same way
over `--idle` seconds with no traffic) over the requests is the figure.

`--companies N` gives the demo key's account N companies before any request (the demo world's 2
and N - 2 more, empty: written straight into the database with `sqlite3`, so any build, older ones
included, is measured on the same world). Its answers are the same rows; only the account grows
(issue 48: a request's cost must not grow with it).

`--world N` measures on an N× demo world instead of a new one: before the server starts under
valgrind, the same binary (without valgrind) on a clock frozen at 2026-03-02T09:00:00Z lifts every
plan's screen cap (`POST /_sandbox/plans/{id}/limits`), adds N - 1 copies of every fixture screen
to its company through `POST /devices`, with the same behaviour profile (`POST
/_sandbox/devices/{id}/simulate`) and the same ads (`POST /ads/{id}/assignments`), then advances
the clock 7 days one day at a time (the fleet writes a week of plays, retention runs); the server
measured starts on that database, its clock frozen at the end of the week. `--world 1` is the demo
world built the same way. Give `pop` and `advance` few requests (`--requests 3 --warmup 1`): at
10× each costs hundreds of millions of instructions. `advance` moves the clock a day per request.

`--journal N` fills the demo key's request journal with N entries before the server starts under
valgrind: the same binary (without valgrind) answers N requests of the demo key (`GET /devices`,
`/companies`, `/me`, `/ads`, in turn); both runs keep `sandbox.journal_max_entries` at N (+ M) + 10,000,
so nothing is evicted. `--journal-others M` sends M requests of another integration of the same
account (`northwind-readwrite`) first. Measure `readiness` and `jcount` on it (`--requests 3 --warmup 1`): their
cost must not grow with the journal (issue 48).

Besides the total, each endpoint's **redaction** is the inclusive cost of every call made from
outside `signage::redact` into it (so recursion inside the redactor counts once), per request, and
its share of the request. `--top N` also prints each endpoint's N functions with the most inclusive
instructions per request. The client is this script (Python); its work is not in the server's counts.

Endpoints (demo key `northwind-readonly`; MCP calls use protocol 2025-11-25, after `initialize`):
  health     GET /health                   (hello: the bare server's GET /health)
  companies  GET /companies
  devices    GET /devices?limit=20
  me         GET /me
  ads        GET /ads?limit=20
  events     GET /events?limit=20          (a new database has none yet: measure it on a --world)
  media      GET /media?limit=20
  invoices   GET /invoices?limit=20
  charges    GET /charges?limit=20
  mcp        POST /mcp tools/call list_companies {"limit":4}
  mcpall     POST /mcp tools/call list_companies {}
  mcpdevices POST /mcp tools/call list_devices {"limit":20}
  pop        GET /reports/proof-of-play     (the last 7 days; every company of the account)
  advance    POST /_sandbox/clock/advance {"seconds":86400}  (key `sandbox-operator`)
  readiness  GET /readiness                (the demo key's own report)
  jcount     GET /requests?count=true      (the demo key's journal count)
The default is health,companies,devices,mcp (the issue 33 table). Standard library only; traffic
goes to 127.0.0.1 only; every server started is stopped on exit.
"""

import argparse
import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HELLO = os.path.join(ROOT, "target/release/examples/hello")
SIGNAGE = os.path.join(ROOT, "target/release/signage")
REDACT = "signage::redact::"
PROTOCOL = "2025-11-25"
# name: (label, method, path, MCP tool call (name, arguments) or None)
ENDPOINTS = {
    "health": ("GET /health", "GET", "/health", None),
    "companies": ("GET /companies", "GET", "/companies", None),
    "devices": ("GET /devices?limit=20", "GET", "/devices?limit=20", None),
    "me": ("GET /me", "GET", "/me", None),
    "ads": ("GET /ads?limit=20", "GET", "/ads?limit=20", None),
    "events": ("GET /events?limit=20", "GET", "/events?limit=20", None),
    "media": ("GET /media?limit=20", "GET", "/media?limit=20", None),
    "invoices": ("GET /invoices?limit=20", "GET", "/invoices?limit=20", None),
    "charges": ("GET /charges?limit=20", "GET", "/charges?limit=20", None),
    "mcp": ("MCP list_companies {limit:4}", "POST", "/mcp", ("list_companies", {"limit": 4})),
    "mcpall": ("MCP list_companies {}", "POST", "/mcp", ("list_companies", {})),
    "mcpdevices": ("MCP list_devices {limit:20}", "POST", "/mcp", ("list_devices", {"limit": 20})),
    "pop": ("GET /reports/proof-of-play (7 days)", "GET", "/reports/proof-of-play", None),
    # The operator's key; each request moves the clock a day on (the world keeps growing by a day).
    "advance": ("POST /_sandbox/clock/advance 24 h", "POST", "/_sandbox/clock/advance", None),
    # The demo key's readiness report and its journal count (issue 48: flat in the journal's size).
    "readiness": ("GET /readiness", "GET", "/readiness", None),
    "jcount": ("GET /requests?count=true", "GET", "/requests?count=true", None),
}
# What `--journal N` sends, in turn, to fill the demo key's journal.
JOURNAL_MIX = ["/devices?limit=20", "/companies", "/me", "/ads?limit=5"]
ADVANCE_BODY = json.dumps({"seconds": 86_400}).encode()
# The instant a `--world` is built at (frozen), a Monday 09:00 UTC; it is then advanced WORLD_DAYS.
WORLD_AT = 1_772_442_000
WORLD_DAYS = 7
DEFAULT_ENDPOINTS = ["health", "companies", "devices", "mcp"]


def demo_key():
    with open(os.path.join(ROOT, "fixtures/demo-credentials.json")) as f:
        d = json.load(f)
    k = next(k for k in d["keys"] if k["name"] == "northwind-readonly")
    return k["rawKey"], k["client_id"]


def demo_keys():
    """Every demo key by name: (raw key, client id, account id)."""
    with open(os.path.join(ROOT, "fixtures/demo-credentials.json")) as f:
        d = json.load(f)
    return {k["name"]: (k["rawKey"], k["client_id"], k.get("account_id")) for k in d["keys"]}


def demo_account():
    with open(os.path.join(ROOT, "fixtures/demo-credentials.json")) as f:
        d = json.load(f)
    return next(k for k in d["keys"] if k["name"] == "northwind-readonly")["account_id"]


def add_companies(db_path, total):
    """Gives the demo key's account `total` companies: copies of one of its own, empty, each with
    its own id and slug (the database's triggers tell the server's caches)."""
    account = demo_account()
    db = sqlite3.connect(db_path, timeout=60)
    try:
        have = db.execute("SELECT count(*) FROM companies WHERE account_id = ?", (account,)).fetchone()[0]
        cols = [r[1] for r in db.execute("PRAGMA table_info(companies)")]
        # Made now (a company made months ago would be renewed, charged and granted its tokens by
        # the next background tick, inside a measurement).
        rest = [c for c in cols if c not in ("id", "slug", "created_at", "updated_at")]
        now = int(time.time())
        with db:
            for i in range(max(0, total - have)):
                # Ids sort after the demo world's: `cmp_` and 20 lowercase letters or digits.
                cid = f"cmp_zzbench{i:013d}"
                db.execute(
                    f"INSERT INTO companies (id, slug, created_at, updated_at, {', '.join(rest)}) "
                    f"SELECT ?, ?, ?, ?, {', '.join(rest)} FROM companies WHERE account_id = ? "
                    f"ORDER BY id LIMIT 1",
                    (cid, f"bench-company-{i}", now, now, account),
                )
        n = db.execute("SELECT count(*) FROM companies WHERE account_id = ?", (account,)).fetchone()[0]
    finally:
        db.close()
    if n != max(total, have):
        raise SystemExit(f"the account has {n} companies, not {total}")


class Api:
    """One keep-alive connection to a server, JSON in and out."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection(HOST, port, timeout=600)
        self.keys = demo_keys()

    def call(self, key_name, method, path, body=None, want=(200, 201)):
        key, client, _ = self.keys[key_name]
        headers = {"X-API-KEY": key, "X-Service-Client-Id": client}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        raw = r.read()
        if r.status not in want:
            raise SystemExit(f"world: {method} {path}: HTTP {r.status}: {raw[:300]!r}")
        return json.loads(raw) if raw[:1] in (b"{", b"[") else None


def build_world(binary, db_path, factor, work):
    """An N× demo world in `db_path`, built by `binary` itself (no valgrind) through the API and the
    sandbox controls, on a clock frozen at WORLD_AT: every plan's screen cap lifted
    (`POST /_sandbox/plans/{id}/limits`), N - 1 copies of every fixture screen (`POST /devices`,
    same company, same behaviour profile through `POST /_sandbox/devices/{id}/simulate`, the same
    ads through `POST /ads/{id}/assignments`), then WORLD_DAYS days advanced, so that the fleet
    wrote a week of plays (and retention ran) as it does. Reads of the fixture rows go to the
    database file; every write goes through the API, so each build keeps its own derived tables."""
    port = freeport()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
    env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
    env["SIGNAGE_CLOCK"] = rfc3339(WORLD_AT)
    log = open(os.path.join(work, "world.log"), "w")
    proc = subprocess.Popen([binary, "serve", "--database", db_path, "--port", str(port)],
                            cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=log)
    t0 = time.monotonic()
    try:
        if not wait_health(port, 120):
            raise SystemExit("world: the server never became healthy")
        api = Api(port)
        # The history is written when the timeline settles after the load.
        api.call("sandbox-operator", "POST", "/_sandbox/clock/advance", {"seconds": 0})
        db = sqlite3.connect(db_path, timeout=60)
        try:
            plans = [r[0] for r in db.execute("SELECT DISTINCT plan_id FROM companies")]
            screens = db.execute(
                "SELECT d.id, d.company_id, d.name, d.platform, c.account_id, s.profile "
                "FROM devices d JOIN companies c ON c.id = d.company_id "
                "LEFT JOIN device_simulations s ON s.device_id = d.id ORDER BY d.id").fetchall()
            assigned = db.execute("SELECT device_id, ad_id FROM ad_assignments "
                                  "ORDER BY ad_id, device_id").fetchall()
        finally:
            db.close()
        writer = {}
        for name, (_, _, account) in api.keys.items():
            if name.endswith("-readwrite"):
                writer[account] = name
        for plan in plans:
            api.call("sandbox-operator", "POST", f"/_sandbox/plans/{plan}/limits",
                     {"max_devices": 1_000_000})
        copies = {}
        for device, company, name, platform, account, profile in screens:
            key = writer.get(account)
            if key is None:
                continue
            for k in range(1, factor):
                made = api.call(key, "POST", "/devices",
                                {"company_id": company, "name": f"{name} ({k + 1})", "platform": platform})
                copies.setdefault(device, []).append((made["id"], key))
                if profile and profile != "never_seen":
                    api.call("sandbox-operator", "POST", f"/_sandbox/devices/{made['id']}/simulate",
                             {"profile": profile})
        by_ad = {}
        for device, ad in assigned:
            for new, key in copies.get(device, []):
                by_ad.setdefault((ad, key), []).append(new)
        for (ad, key), devices in by_ad.items():
            for i in range(0, len(devices), 100):
                api.call(key, "POST", f"/ads/{ad}/assignments",
                         {"assign_device_ids": devices[i:i + 100]})
        for _ in range(WORLD_DAYS):
            api.call("sandbox-operator", "POST", "/_sandbox/clock/advance", {"seconds": 86_400})
        api.conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    db = sqlite3.connect(db_path, timeout=60)
    try:
        n = db.execute("SELECT count(*) FROM devices").fetchone()[0]
        plays = db.execute("SELECT count(*) FROM playbacks").fetchone()[0]
    finally:
        db.close()
    print(f"  world {factor}x: {n} screens, {plays} play rows, built in "
          f"{time.monotonic() - t0:.0f} s", file=sys.stderr)


def fill_journal(binary, db_path, entries, env_extra, work, others=0):
    """`others` requests of another integration of the demo account (`northwind-readwrite`), then
    `entries` requests of the demo key, answered by `binary` (no valgrind) on `db_path`: its
    journal holds them when the measured server starts on the same database."""
    port = freeport()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
    env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
    env.update(env_extra)
    log = open(os.path.join(work, "journal.log"), "w")
    proc = subprocess.Popen([binary, "serve", "--database", db_path, "--port", str(port)],
                            cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=log)
    t0 = time.monotonic()
    key, client = demo_key()
    headers = {"X-API-KEY": key, "X-Service-Client-Id": client}
    try:
        if not wait_health(port, 120):
            raise SystemExit("journal: the server never became healthy")
        conn = http.client.HTTPConnection(HOST, port, timeout=120)
        other_key, other_client, _ = demo_keys()["northwind-readwrite"]
        other = {"X-API-KEY": other_key, "X-Service-Client-Id": other_client}
        for i in range(others):
            conn.request("GET", JOURNAL_MIX[i % len(JOURNAL_MIX)], headers=other)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit(f"journal: HTTP {r.status}")
        for i in range(entries):
            conn.request("GET", JOURNAL_MIX[i % len(JOURNAL_MIX)], headers=headers)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise SystemExit(f"journal: HTTP {r.status}")
        conn.request("GET", "/requests?count=true", headers=headers)
        r = conn.getresponse()
        n = json.loads(r.read())["count"]
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print(f"  journal: {n} entries of the demo key (and {others} of another integration) in "
          f"{time.monotonic() - t0:.0f} s", file=sys.stderr)


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


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


def mcp_headers(key, client):
    return {
        "Authorization": "Bearer " + key,
        "X-Service-Client-Id": client,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
    }


def request_for(endpoint, key, client, session):
    """(method, path, headers, body) of one endpoint's request."""
    if endpoint == "hello":
        return "GET", "/health", {}, None
    _, method, path, call = ENDPOINTS[endpoint]
    if endpoint == "advance":
        op_key, op_client, _ = demo_keys()["sandbox-operator"]
        headers = {"X-API-KEY": op_key, "X-Service-Client-Id": op_client,
                   "Content-Type": "application/json"}
        return method, path, headers, ADVANCE_BODY
    if call is None:
        headers = {"X-API-KEY": key, "X-Service-Client-Id": client} if path != "/health" else {}
        return method, path, headers, None
    headers = mcp_headers(key, client)
    if session:
        headers["Mcp-Session-Id"] = session
    name, arguments = call
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}
    return method, path, headers, json.dumps(body, separators=(",", ":")).encode()


def mcp_session(port, key, client):
    """initialize + notifications/initialized; the session id the server gave, or ""."""
    h = mcp_headers(key, client)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
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


def check(endpoint, path, status, body):
    if status != 200:
        raise SystemExit(f"{endpoint}: HTTP {status}: {body[:300]!r}")
    if path == "/mcp":
        text = body.decode()
        if not text.lstrip().startswith("{"):
            text = next(l[5:] for l in text.splitlines() if l.startswith("data:"))
        msg = json.loads(text)
        if "result" not in msg or msg["result"].get("isError"):
            raise SystemExit(f"{endpoint}: not a result: {body[:300]!r}")


def send(conn, req, n, endpoint):
    method, path, headers, body = req
    for _ in range(n):
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        check(endpoint, path, r.status, data)


class Profile:
    """One callgrind dump: the total, each function's inclusive cost of the calls into it from other
    functions, and the inclusive cost of the calls from outside `signage::redact` into it."""

    def __init__(self, path):
        self.total = None
        self.inclusive = {}
        self.redaction = 0
        names = {}

        def name(field):
            # Function names are compressed: "(12) name" defines id 12, "(12)" refers to it.
            m = re.match(r"\((\d+)\)(?: (.*))?", field)
            if not m:
                return field
            if m.group(2) is not None:
                names[m.group(1)] = m.group(2)
            return names.get(m.group(1), field)

        fn = cfn = ""
        call = False
        positions = 1
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("positions:"):
                    positions = len(line.split()) - 1
                elif line.startswith("fn="):
                    fn = name(line[3:].rstrip("\n"))
                elif line.startswith("cfn="):
                    cfn = name(line[4:].rstrip("\n"))
                elif line.startswith("calls="):
                    call = True
                elif call and (line[:1].isdigit() or line[:1] in "+-*" or line.startswith("0x")):
                    # The cost line after `calls=` is the call's inclusive cost.
                    call = False
                    parts = line.split()
                    cost = int(parts[positions]) if len(parts) > positions else 0
                    if cfn != fn:
                        self.inclusive[cfn] = self.inclusive.get(cfn, 0) + cost
                    if cfn.startswith(REDACT) and not fn.startswith(REDACT):
                        self.redaction += cost
                elif line.startswith(("summary:", "totals:")):
                    self.total = max(self.total or 0, int(line.split()[1]))


class Server:
    """One server under callgrind."""

    def __init__(self, name, binary, env_extra, work, args, hello=False):
        self.name = name
        self.port = freeport()
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.out = os.path.join(self.dir, "cg.out")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
        env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
        self.db = os.path.join(self.dir, "db.sqlite")
        if args.world and not hello:
            build_world(binary, self.db, args.world, self.dir)
            env["SIGNAGE_CLOCK"] = rfc3339(WORLD_AT + WORLD_DAYS * 86_400)
        env.update(env_extra)
        if args.journal and not hello:
            env["SIGNAGE_JOURNAL_MAX_ENTRIES"] = str(args.journal + args.journal_others + 10_000)
            fill_journal(binary, self.db, args.journal, {k: v for k, v in env.items()
                                                         if k.startswith("SIGNAGE_")}, self.dir,
                         others=args.journal_others)
        cmd = [binary, "--port", str(self.port)] if hello else [
            binary, "serve", "--database", os.path.join(self.dir, "db.sqlite"), "--port", str(self.port)]
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}",
                    "--dump-instr=" + ("yes" if args.dump_instr else "no")]
        self.proc = subprocess.Popen(
            valgrind + cmd,
            cwd=self.dir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "log"), "w"),
        )
        if not wait_health(self.port, 300):
            self.stop()
            raise SystemExit(f"{name}: server under valgrind never became healthy")
        # The first few background ticks after a start prepare their statements on the pooled
        # connections (about 1 M instructions a tick, where a later one costs 0.07 M): they belong
        # to the start, not to the requests of whichever window they fall in.
        time.sleep(args.settle)

    def control(self, flag):
        subprocess.run(
            ["callgrind_control", flag, str(self.proc.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def measure(self, action, keep=None):
        """The profile of every thread while `action` runs, and the wall time it took (the dump is
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
                profile = Profile(new[-1])
                if profile.total is not None:
                    if keep:
                        shutil.move(new[-1], keep)
                    else:
                        os.remove(new[-1])
                    return profile, elapsed
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


def run_server(name, binary, env_extra, endpoints, args, work, hello=False):
    key, client = demo_key()
    server = Server(name, binary, env_extra, work, args, hello=hello)
    results = {}
    try:
        mcp = not hello and any(ENDPOINTS[e][2] == "/mcp" for e in endpoints)
        if args.companies and not hello:
            add_companies(server.db, args.companies)
            # What the next background ticks do with the new companies is the world's making.
            time.sleep(args.settle)
        session = mcp_session(server.port, key, client) if mcp else ""
        raw = {}
        for ep in endpoints:
            req = request_for(ep, key, client, session)
            # A 24 h advance of a 100x world runs for minutes under valgrind.
            conn = http.client.HTTPConnection(HOST, server.port, timeout=3600 if args.world else 120)
            send(conn, req, args.warmup, ep)
            keep = os.path.join(args.keep, f"{name}-{ep}.callgrind") if args.keep else None
            profile, elapsed = server.measure(lambda: send(conn, req, args.requests, ep), keep)
            conn.close()
            raw[ep] = (profile, elapsed)
            print(f"  {name} {ep}: {profile.total} instructions in {elapsed:.1f} s", file=sys.stderr)
        idle, idle_s = server.measure(lambda: time.sleep(args.idle))
        rate = idle.total / idle_s
        for ep, (profile, elapsed) in raw.items():
            per = (profile.total - rate * elapsed) / args.requests
            redaction = profile.redaction / args.requests
            results[ep] = {
                "per_request": per,
                "redaction_per_request": redaction,
                "redaction_share": redaction / per if per > 0 else 0.0,
                "total": profile.total,
                "seconds": elapsed,
                "idle_per_s": rate,
            }
            if args.top:
                top = sorted(profile.inclusive.items(), key=lambda kv: -kv[1])[: args.top]
                results[ep]["top"] = [[fn, cost / args.requests] for fn, cost in top]
    finally:
        server.stop()
    return results


def parse_server(spec):
    """NAME=BINARY[:VAR=VALUE,...], or a bare BINARY named by its file name."""
    if "=" not in spec.split(":", 1)[0]:
        return os.path.basename(spec), spec, {}
    name, _, rest = spec.partition("=")
    binary, _, envs = rest.partition(":")
    return name, binary, dict(e.split("=", 1) for e in envs.split(",") if e)


def print_tables(table, servers, endpoints, args):
    names = [s[0] for s in servers]
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
    print("\nof which redaction (calls from outside signage::redact into it): thousands of "
          "instructions per request, and share of the request\n")
    head = "| build | " + " | ".join(endpoints) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for n in names:
        cells = [f"{table[n][e]['redaction_per_request'] / 1000:.1f} "
                 f"({100 * table[n][e]['redaction_share']:.1f} %)" for e in endpoints]
        print(f"| {n} | " + " | ".join(cells) + " |")
    if args.top:
        for n in names:
            for e in endpoints:
                print(f"\n{n} {ENDPOINTS[e][0]}: top {args.top} functions, inclusive instructions per request")
                for fn, cost in table[n][e]["top"]:
                    print(f"  {cost:>12,.0f}  {fn[:150]}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("servers", nargs="*", help="NAME=BINARY[:VAR=VALUE,...] or BINARY "
                   "(default: signage=target/release/signage)")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--idle", type=float, default=5.0, help="seconds of idle measurement")
    p.add_argument("--settle", type=float, default=4.0,
                   help="seconds to wait after the start, before the first warm-up")
    p.add_argument("--endpoints", default=",".join(DEFAULT_ENDPOINTS),
                   help="comma-separated, of: " + ", ".join(ENDPOINTS))
    p.add_argument("--top", type=int, default=0, help="print each endpoint's N costliest functions")
    p.add_argument("--hello", default=HELLO, help="the bare hyper server binary")
    p.add_argument("--no-hello", action="store_true")
    p.add_argument("--json", help="write the figures here as JSON")
    p.add_argument("--companies", type=int, default=0,
                   help="give the demo key's account this many companies before measuring")
    p.add_argument("--world", type=int, default=0,
                   help="measure on an N-times demo world built through the API first (1: the demo "
                        "world the same way); the clock is frozen")
    p.add_argument("--journal", type=int, default=0,
                   help="fill the demo key's request journal with this many entries first")
    p.add_argument("--journal-others", type=int, default=0,
                   help="with --journal: first this many entries of another integration of the "
                        "demo account (northwind-readwrite)")
    p.add_argument("--keep", help="keep each endpoint's callgrind dump in this directory")
    p.add_argument("--dump-instr", action="store_true",
                   help="kept dumps carry instruction addresses (callgrind_annotate --auto=yes)")
    args = p.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        raise SystemExit("valgrind is required (apt-get install -y valgrind)")
    endpoints = [e for e in args.endpoints.split(",") if e]
    unknown = [e for e in endpoints if e not in ENDPOINTS]
    if unknown:
        raise SystemExit(f"unknown endpoint {', '.join(unknown)}; known: {', '.join(ENDPOINTS)}")
    servers = [parse_server(s) for s in args.servers or ["signage=" + SIGNAGE]]
    if len({s[0] for s in servers}) != len(servers) or any(s[0] == "hello" for s in servers):
        raise SystemExit("each build needs its own name, and not `hello`")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="signage-callgrind.")
    table = {}
    try:
        if not args.no_hello:
            print(f"hello ({args.hello}, bare hyper) under callgrind", file=sys.stderr)
            table["hello"] = run_server("hello", args.hello, {}, ["hello"], args, work, hello=True)["hello"]
        for name, binary, env_extra in servers:
            print(f"{name} ({binary}) under callgrind", file=sys.stderr)
            table[name] = run_server(name, binary, env_extra, endpoints, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_tables(table, servers, endpoints, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"requests": args.requests, "warmup": args.warmup, "servers": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
