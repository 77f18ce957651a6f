#!/usr/bin/env python3
"""Issue 22's attacks at full size, against a real binary (standard library only; 127.0.0.1 only).
Run by hand; the integration tests (tests/api/tenant_*.rs) run smaller versions of each.

Usage: tenant_attacks.py BIN

1. Delays: a read-only key opens 48 connections a second for 12 s, each `GET /companies` with
   `Prefer: delay=30000` (the issue's attack); meanwhile `/health` and another account's
   `/companies` are timed every 250 ms. Prints how many were held, refused (429) and the latencies.
2. Scan flood: 16 connections scan one code for 10 s with the per-address limit off (the default
   limit answers 429 pages instead); prints scans/s, the database's growth and the WAL, and checks
   that the code's count equals the redirects answered.
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


def key_headers(name):
    k = next(k for k in CREDS["keys"] if k["name"] == name)
    return {"X-API-Key": k["rawKey"], "X-Service-Client-Id": k["client_id"]}


def start(binary, work, name, env):
    port = socket.socket()
    port.bind((HOST, 0))
    p = port.getsockname()[1]
    port.close()
    db = os.path.join(work, f"{name}.db")
    proc = subprocess.Popen([binary, "serve", "--port", str(p), "--database", db],
                            stdout=subprocess.DEVNULL, stderr=open(db + ".log", "w"),
                            env=dict(os.environ, SIGNAGE_LOG_LEVEL="warn", **env))
    for _ in range(600):
        try:
            c = http.client.HTTPConnection(HOST, p, timeout=1)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc, p, db
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("did not start")


def timed(port, path, headers):
    t = time.perf_counter()
    c = http.client.HTTPConnection(HOST, port, timeout=60)
    c.request("GET", path, headers=headers)
    status = c.getresponse().status
    c.close()
    return status, (time.perf_counter() - t) * 1000


def delays(binary, work):
    proc, port, _ = start(binary, work, "delays", {})
    try:
        attacker = dict(key_headers("northwind-readonly"), Prefer="delay=30000")
        other = key_headers("harborview-readwrite")
        results = {"held": 0, "refused": 0, "other": 0}
        lock = threading.Lock()
        held = []

        def one():
            c = http.client.HTTPConnection(HOST, port, timeout=40)
            try:
                c.request("GET", "/companies", headers=attacker)
                c.sock.settimeout(2)
                r = c.getresponse()
                r.read()
                kind = "refused" if r.status == 429 else "other"
            except (socket.timeout, TimeoutError):
                kind = "held"
                held.append(c)
            with lock:
                results[kind] += 1

        probes = {"health": [], "other": []}
        stop = threading.Event()

        def probe():
            while not stop.is_set():
                probes["health"].append(timed(port, "/health", {})[1])
                probes["other"].append(timed(port, "/companies", other)[1])
                time.sleep(0.25)

        pt = threading.Thread(target=probe)
        pt.start()
        threads = []
        started = time.time()
        for i in range(48 * 12):
            th = threading.Thread(target=one, daemon=True)
            th.start()
            threads.append(th)
            time.sleep(max(0, started + (i + 1) / 48 - time.time()))
        for th in threads:
            th.join()
        stop.set()
        pt.join()
        for name, xs in probes.items():
            print(f"delays: {name} over {len(xs)} probes: median {statistics.median(xs):.1f} ms, max {max(xs):.1f} ms")
        print(f"delays: attack requests {48 * 12}: {results}")
    finally:
        proc.kill()


def flood(binary, work):
    proc, port, db = start(binary, work, "flood", {"SIGNAGE_SCANS_RATE_LIMIT_PER_MINUTE": "0",
                                                     "SIGNAGE_SANDBOX_SIMULATE_FLEET": "false"})
    try:
        ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        code, before_count = ro.execute("SELECT code, scan_count FROM qr_codes ORDER BY id LIMIT 1").fetchone()

        def used():
            pages = ro.execute("PRAGMA page_count").fetchone()[0] - ro.execute("PRAGMA freelist_count").fetchone()[0]
            return pages * ro.execute("PRAGMA page_size").fetchone()[0]

        size_before = used()
        done = [0]
        lock = threading.Lock()
        end = time.time() + 10

        def worker():
            c = http.client.HTTPConnection(HOST, port, timeout=30)
            n = 0
            while time.time() < end:
                c.request("GET", f"/q/{code}", headers={"User-Agent": "flood"})
                r = c.getresponse()
                r.read()
                n += r.status == 302
            with lock:
                done[0] += n

        threads = [threading.Thread(target=worker) for _ in range(16)]
        for th in threads:
            th.start()
        peak_wal = 0
        while any(th.is_alive() for th in threads):
            peak_wal = max(peak_wal, os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
            time.sleep(0.2)
        time.sleep(3)
        count = ro.execute("SELECT scan_count FROM qr_codes WHERE code = ?", (code,)).fetchone()[0]
        grew = used() - size_before
        wal = os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0
        print(f"flood: {done[0]} scans in 10 s ({done[0] / 10:.0f}/s); database grew {grew / 1024:.1f} KiB "
              f"({grew / max(done[0], 1):.2f} B a scan); WAL peak {peak_wal / 2**20:.1f} MiB, after {wal / 2**20:.1f} MiB; "
              f"count exact: {count - before_count == done[0]}")
    finally:
        proc.kill()


if __name__ == "__main__":
    work = tempfile.mkdtemp(prefix="signage-attacks-")
    delays(sys.argv[1], work)
    flood(sys.argv[1], work)
