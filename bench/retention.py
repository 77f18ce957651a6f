#!/usr/bin/env python3
"""Issue 22 item 6: the database stays bounded under endless mixed load (standard library only;
127.0.0.1 only). Run once by hand; it is not part of bench/run.sh (it takes minutes).

Usage: retention.py BIN [OPERATIONS] [WORKERS]

Starts BIN (`signage serve`) on a fresh database file with rate limits off, then sends OPERATIONS
(default 1,000,000) requests from WORKERS (default 8) keep-alive connections, mixed:
  40 % public scans of two QR codes (GET /q/{code}),
  25 % device renames (PATCH /devices/{id}: an event, an audit entry),
  25 % heartbeats with a fresh Idempotency-Key (POST /devices/{id}/heartbeat: an idempotency record,
       an audit entry),
  10 % reads (GET /devices?limit=20), timed.
Every tenth of the run it prints the database file, its write-ahead log, the request journal's own
file (`<db>.requests`, with its log), the server's RSS, the row counts of the
growing tables and the median and p99 read latency of the last tenth. The retention bounds are the
server's (defaults, or SIGNAGE_RETENTION_* in the environment): the file stops growing once each
table reaches its bound per owner.
"""

import http.client
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))
CREDS = json.load(open(os.path.join(HERE, "..", "fixtures", "demo-credentials.json")))
TABLES = ["events", "audit_log", "idempotency_keys", "qr_scans", "qr_scan_counts",
          "webhook_deliveries", "playbacks", "playback_days"]


def key_headers(name):
    k = next(k for k in CREDS["keys"] if k["name"] == name)
    return {"X-API-Key": k["rawKey"], "X-Service-Client-Id": k["client_id"]}


def freeport():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def size(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def main():
    binary = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    work = tempfile.mkdtemp(prefix="signage-retention-")
    db = os.path.join(work, "bench.db")
    port = freeport()
    env = dict(os.environ, SIGNAGE_RATE_LIMIT_PER_SECOND="0", SIGNAGE_SCANS_RATE_LIMIT_PER_MINUTE="0",
               SIGNAGE_LOG_LEVEL="warn")
    proc = subprocess.Popen([binary, "serve", "--port", str(port), "--database", db],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"), env=env)
    try:
        deadline = time.time() + 30
        while True:
            try:
                c = http.client.HTTPConnection(HOST, port, timeout=1)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        codes = [r[0] for r in ro.execute("SELECT code FROM qr_codes ORDER BY id LIMIT 2")]
        devices = [r[0] for r in ro.execute(
            "SELECT d.id FROM devices d JOIN companies c ON c.id = d.company_id "
            "WHERE c.account_id = (SELECT account_id FROM api_clients WHERE id = ?) ORDER BY d.id LIMIT 8",
            (key_headers("northwind-readwrite")["X-Service-Client-Id"],))]
        writer = key_headers("northwind-readwrite")
        lock = threading.Lock()
        state = {"next": 0, "reads": [], "errors": 0}
        tenth = max(total // 10, 1)

        def report(done, started):
            with lock:
                reads, state["reads"] = state["reads"], []
            counts = {t: ro.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
            p50 = statistics.median(reads) * 1000 if reads else 0
            p99 = sorted(reads)[int(len(reads) * 0.99)] * 1000 if reads else 0
            rate = done / max(time.time() - started, 1e-9)
            journal = size(db + ".requests") + size(db + ".requests-wal")
            rss = 0
            try:
                with open(f"/proc/{proc.pid}/status") as f:
                    rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) // 1024
            except (OSError, StopIteration):
                pass
            print(f"{done:>9} ops  {rate:7.0f}/s  db {size(db) / 2**20:7.1f} MiB  wal {size(db + '-wal') / 2**20:6.1f} MiB"
                  f"  journal {journal / 2**20:6.1f} MiB  rss {rss} MiB"
                  f"  read p50 {p50:5.2f} ms p99 {p99:6.2f} ms  " + " ".join(f"{t}={n}" for t, n in counts.items()),
                  flush=True)

        def worker(index):
            conn = http.client.HTTPConnection(HOST, port, timeout=60)
            while True:
                with lock:
                    n = state["next"]
                    if n >= total:
                        return
                    state["next"] += 1
                kind = n % 20
                device = devices[n % len(devices)]
                if kind < 8:
                    method, path, headers, body = "GET", f"/q/{codes[n % 2]}", {"User-Agent": "bench"}, None
                elif kind < 13:
                    method, path, headers, body = "PATCH", f"/devices/{device}", writer, {"name": f"Screen {n % 97}"}
                elif kind < 18:
                    method, path = "POST", f"/devices/{device}/heartbeat"
                    headers, body = dict(writer, **{"Idempotency-Key": f"b{index}-{n}"}), {}
                else:
                    method, path, headers, body = "GET", "/devices?limit=20", writer, None
                data = json.dumps(body).encode() if body is not None else None
                h = dict(headers)
                if data is not None:
                    h["Content-Type"] = "application/json"
                t = time.perf_counter()
                try:
                    conn.request(method, path, body=data, headers=h)
                    resp = conn.getresponse()
                    resp.read()
                    ok = resp.status < 500 and resp.status != 429
                except (OSError, http.client.HTTPException):
                    conn = http.client.HTTPConnection(HOST, port, timeout=60)
                    ok = False
                took = time.perf_counter() - t
                with lock:
                    if not ok:
                        state["errors"] += 1
                    if kind >= 18:
                        state["reads"].append(took)

        started = time.time()
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(workers)]
        for th in threads:
            th.start()
        mark = tenth
        while any(th.is_alive() for th in threads):
            time.sleep(0.5)
            if state["next"] >= mark:
                report(state["next"], started)
                mark += tenth
        # A few ticks after the load: the last pruning batches and the WAL checkpoint.
        time.sleep(5)
        report(total, started)
        print(f"errors: {state['errors']}, elapsed {time.time() - started:.0f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
