#!/usr/bin/env python3
"""The attacks of issues 22 and 31 at full size, against a real binary (standard library only;
127.0.0.1 only). Run by hand, once before and once after a change; the integration tests
(tests/api/tenant_*.rs, tests/api/edge_*.rs) run smaller versions of each.

Usage: tenant_attacks.py BIN [--json OUT] [--only NAME,NAME]

Each attack runs on a fresh server with its own database. While it runs, another tenant (demo key
`harborview-readwrite`, another account) times `GET /devices?limit=20`, each on a new connection
(a client of another tenant does not share the attacker's connections): first for QUIET seconds
with no attack, then during the attack. Printed per attack: that tenant's p50/p99 quiet and under
attack (with the count of probes and of failed ones), the server's resident memory (VmRSS: before
the attack and its peak during it, sampled every 100 ms), and the disk the server's files grew by
(database, WAL, journal). The attacker connects from 127.0.0.2 (another client on this machine)
unless the attack says otherwise.

Attacks (issue 31 unless said):
- slow_body: 600 connections without a credential, each `POST /devices` declaring a 100,000-byte
  body and sending it at one byte every 2 s; a connection the server closes is opened again.
- slow_body_same_address: the same from 127.0.0.1, the other tenant's own address.
- slow_body_keyed (issue 47): the same 600 slow bodies sent with a valid read-only key of another
  account (`northwind-readonly`, `POST /auth/sign-in-links`), so every connection authenticates.
- slow_headers: 600 connections sending a request head at one byte every 2 s.
- delay_keys: an admin mints 40 read keys; each holds 8 `Prefer: delay=30000` requests; then
  the other tenant asks for its own `Prefer: delay=1000` (printed: its status).
- tools_list: 8 connections list the MCP tools (`X-MCP-Schemas: full`) as fast as they are
  answered, for 20 s (default rate limit on); printed: listings answered, bytes sent.
- uploads: 8 connections upload 5 MiB media (raw PNG bytes) as fast as they are answered, 20 s.
- hanging_receivers: one account (two companies) points 30 webhooks at receivers that accept and
  never answer, and edits ads for 20 s; the other tenant's own webhook delivery latency is timed
  (its receiver answers at once), quiet and under attack, next to its GET latency.
- forged_auth (issue 29 item 4): 13,000 requests with a forged key carrying the other tenant's
  key id and 4 KiB bodies; printed: how many were answered 401 and 429.
- delays (issue 22): a read-only key opens 48 delayed requests a second for 12 s.
- flood (issue 22): 16 connections scan one code for 10 s with the per-address scan limit off.
"""

import http.client
import json
import os
import selectors
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
ATTACKER = "127.0.0.2"
HERE = os.path.dirname(os.path.abspath(__file__))
CREDS = json.load(open(os.path.join(HERE, "..", "fixtures", "demo-credentials.json")))
QUIET = float(os.environ.get("ATTACK_QUIET_SECS", "8"))
ATTACK = float(os.environ.get("ATTACK_SECS", "20"))
PROBE_PATH = "/devices?limit=20"


def key(name):
    return next(k for k in CREDS["keys"] if k["name"] == name)


def key_headers(name):
    k = key(name)
    return {"X-API-Key": k["rawKey"], "X-Service-Client-Id": k["client_id"]}


def company(name):
    return next(c["id"] for c in CREDS["companies"] if c["name"] == name)


VICTIM = key_headers("harborview-readwrite")


class Server:
    def __init__(self, binary, work, name, env=None):
        s = socket.socket()
        s.bind((HOST, 0))
        self.port = s.getsockname()[1]
        s.close()
        self.db = os.path.join(work, f"{name}.db")
        self.dir = work
        self.name = name
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", str(self.port), "--database", self.db],
            stdout=subprocess.DEVNULL, stderr=open(self.db + ".log", "w"),
            env=dict(os.environ, SIGNAGE_LOG_LEVEL="warn", **(env or {})))
        for _ in range(600):
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=1)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("did not start")
        self.rss_peak = 0
        self._sampling = None

    def rss_kib(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def disk(self):
        total = 0
        for f in os.listdir(self.dir):
            if f.startswith(self.name + ".db") and not f.endswith(".log"):
                p = os.path.join(self.dir, f)
                if os.path.isfile(p):
                    total += os.path.getsize(p)
                elif os.path.isdir(p):
                    for root, _, files in os.walk(p):
                        total += sum(os.path.getsize(os.path.join(root, x)) for x in files)
        return total

    def sample_rss(self):
        """Samples VmRSS every 100 ms until stop_rss(); returns the peak (KiB)."""
        self.rss_peak = self.rss_kib()
        stop = threading.Event()

        def run():
            while not stop.is_set():
                self.rss_peak = max(self.rss_peak, self.rss_kib())
                time.sleep(0.1)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._sampling = (stop, t)

    def stop_rss(self):
        stop, t = self._sampling
        stop.set()
        t.join()
        return self.rss_peak

    def url(self):
        return f"http://{HOST}:{self.port}"

    def request(self, method, path, headers=None, body=None, timeout=30):
        c = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, data
        finally:
            c.close()

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Prober:
    """The other tenant: `threads` loops of GET PROBE_PATH on a new connection each, paced so
    that together they stay under the default rate limit (50 a second)."""

    def __init__(self, server, threads=4, pause=0.16, path=PROBE_PATH):
        self.server, self.threads, self.pause, self.path = server, threads, pause, path

    def run(self, seconds):
        lat, failed = [], []
        lock = threading.Lock()
        end = time.time() + seconds

        def loop():
            while time.time() < end:
                t = time.perf_counter()
                try:
                    status, _ = self.server.request("GET", self.path, VICTIM, timeout=60)
                    ms = (time.perf_counter() - t) * 1000
                    with lock:
                        (lat if status == 200 else failed).append(ms if status == 200 else status)
                except OSError as e:
                    with lock:
                        failed.append(type(e).__name__)
                time.sleep(self.pause)

        ts = [threading.Thread(target=loop, daemon=True) for _ in range(self.threads)]
        for t in ts:
            t.start()
        return ts, lat, failed


def measure(server, attack, settle=2.0):
    """Quiet probes, then the attack (a function started on its own thread that runs until the
    event is set and returns a dict of its own figures) with probes from `settle` s in."""
    ts, quiet, quiet_failed = Prober(server).run(QUIET)
    for t in ts:
        t.join()
    rss_quiet = server.rss_kib()
    disk_before = server.disk()
    server.sample_rss()
    stop = threading.Event()
    figures = {}

    def attacker():
        figures.update(attack(stop) or {})

    at = threading.Thread(target=attacker, daemon=True)
    at.start()
    time.sleep(settle)
    ts, busy, busy_failed = Prober(server).run(ATTACK - settle)
    time.sleep(ATTACK - settle)
    stop.set()
    for t in ts:
        t.join(70)
    at.join(90)
    rss_peak = server.stop_rss()
    time.sleep(1)
    return {
        "quiet_p50_ms": pct(quiet, 50), "quiet_p99_ms": pct(quiet, 99), "quiet_n": len(quiet),
        "quiet_failed": len(quiet_failed),
        "attack_p50_ms": pct(busy, 50), "attack_p99_ms": pct(busy, 99), "attack_n": len(busy),
        "attack_failed": len(busy_failed),
        "attack_failures": sorted({str(x) for x in busy_failed})[:5],
        "rss_quiet_mib": rss_quiet / 1024, "rss_peak_mib": rss_peak / 1024,
        "disk_grew_kib": (server.disk() - disk_before) / 1024,
        **figures,
    }


# ---------------------------------------------------------------- slow connections (item 1)

def slow_attack(server, head, trickle, source, conns=600, every=2.0):
    """`conns` connections from `source`, each sending `head` at once and then one byte of
    `trickle` every `every` seconds; a connection the server closes (or answers) is replaced at
    the next tick. Returns the attack function."""

    def attack(stop):
        sel = selectors.DefaultSelector()
        live = {}
        opened = closed = answered = 0

        def open_one():
            nonlocal opened
            s = socket.socket()
            s.settimeout(2)
            try:
                s.bind((source, 0))
                s.connect((HOST, server.port))
                if head:
                    s.sendall(head)
            except OSError:
                s.close()
                return
            s.setblocking(False)
            live[s] = 0
            sel.register(s, selectors.EVENT_READ)
            opened += 1

        def drop(s):
            nonlocal closed
            sel.unregister(s)
            live.pop(s, None)
            s.close()
            closed += 1

        while not stop.is_set() and len(live) < conns:
            open_one()
        next_tick = time.time() + every
        while not stop.is_set():
            for k, _ in sel.select(timeout=max(0, min(0.2, next_tick - time.time()))):
                s = k.fileobj
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if data:
                    answered += 1
                drop(s)
            if time.time() >= next_tick:
                next_tick += every
                for s in list(live):
                    i = live[s]
                    try:
                        s.send(trickle[i % len(trickle):i % len(trickle) + 1])
                        live[s] = i + 1
                    except OSError:
                        drop(s)
                while len(live) < conns and not stop.is_set():
                    open_one()
        by_server = closed
        for s in list(live):
            drop(s)
        return {"connections_opened": opened, "closed_by_server": by_server, "answered": answered}

    return attack


def slow_body(binary, work, source=ATTACKER, name="slow_body"):
    server = Server(binary, work, name)
    try:
        head = (f"POST /devices HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode()
        return measure(server, slow_attack(server, head, b"x" * 100000, source))
    finally:
        server.kill()


def slow_body_keyed(binary, work):
    server = Server(binary, work, "slow_body_keyed")
    try:
        head = (f"POST /auth/sign-in-links HTTP/1.1\r\nHost: {HOST}:{server.port}\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in key_headers("northwind-readonly").items())
                + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode()
        return measure(server, slow_attack(server, head, b"x" * 100000, ATTACKER))
    finally:
        server.kill()


def slow_body_same_address(binary, work):
    return slow_body(binary, work, source=HOST, name="slow_body_same_address")


def slow_headers(binary, work):
    server = Server(binary, work, "slow_headers")
    try:
        head = f"GET {PROBE_PATH} HTTP/1.1\r\n".encode()
        return measure(server, slow_attack(server, head, b"X-Pad: " + b"a" * 8000, ATTACKER))
    finally:
        server.kill()


# ---------------------------------------------------------------- fairness (item 2)

def delay_keys(binary, work):
    server = Server(binary, work, "delay_keys")
    try:
        admin = key("northwind-admin")
        keys = []
        for i in range(40):
            status, body = server.request("POST", "/api-keys", dict(key_headers("northwind-admin"), **{
                "Content-Type": "application/json"}), json.dumps(
                {"client_id": admin["client_id"], "name": f"minted {i}", "scopes": ["read"]}))
            if status == 201:
                k = json.loads(body)
                keys.append({"X-API-Key": k["rawKey"], "X-Service-Client-Id": admin["client_id"]})
        figures = {"keys_minted": len(keys)}

        def attack(stop):
            held, refused, other = [], 0, 0
            lock = threading.Lock()

            def one(h):
                nonlocal refused, other
                c = http.client.HTTPConnection(HOST, server.port, timeout=40)
                try:
                    c.request("GET", "/companies", headers=dict(h, Prefer="delay=30000"))
                    c.sock.settimeout(1.5)
                    r = c.getresponse()
                    r.read()
                    with lock:
                        if r.status == 429:
                            refused += 1
                        else:
                            other += 1
                except (socket.timeout, TimeoutError):
                    with lock:
                        held.append(c)
                except OSError:
                    with lock:
                        other += 1

            ts = [threading.Thread(target=one, args=(h,), daemon=True) for h in keys for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            # The other account's own delayed request, while the attacker holds what it could.
            t0 = time.perf_counter()
            try:
                status, _ = server.request("GET", "/companies", dict(VICTIM, Prefer="delay=1000"), timeout=10)
            except OSError as e:
                status = type(e).__name__
            took = (time.perf_counter() - t0) * 1000
            stop.wait()
            for c in held:
                c.close()
            return {"held": len(held), "refused_429": refused, "other": other,
                    "victim_delay_status": status, "victim_delay_ms": round(took)}

        out = measure(server, attack, settle=4.0)
        out.update(figures)
        return out
    finally:
        server.kill()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25", "X-MCP-Schemas": "full"}


def tools_list(binary, work):
    server = Server(binary, work, "tools_list")
    try:
        k = key("northwind-readonly")
        headers = dict(MCP_HEADERS, Authorization=f"Bearer {k['rawKey']}",
                       **{"X-Service-Client-Id": k["client_id"]})
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})

        def attack(stop):
            counts = {"listings": 0, "limited": 0, "bytes": 0, "other": 0}
            lock = threading.Lock()

            def loop():
                c = http.client.HTTPConnection(HOST, server.port, timeout=30)
                while not stop.is_set():
                    try:
                        c.request("POST", "/mcp", body=body, headers=headers)
                        r = c.getresponse()
                        data = r.read()
                    except OSError:
                        c.close()
                        c = http.client.HTTPConnection(HOST, server.port, timeout=30)
                        continue
                    with lock:
                        counts["bytes"] += len(data)
                        if r.status == 429 or b'"rate_limited"' in data[:2000] or b"rate limit" in data[:2000]:
                            counts["limited"] += 1
                        elif r.status == 200 and b'"tools"' in data:
                            counts["listings"] += 1
                        else:
                            counts["other"] += 1

            ts = [threading.Thread(target=loop, daemon=True) for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            counts["mib_sent"] = round(counts.pop("bytes") / 2**20, 1)
            return counts

        return measure(server, attack)
    finally:
        server.kill()


def png(size):
    head = (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + (64).to_bytes(4, "big")
            + (64).to_bytes(4, "big") + b"\x08\x06\x00\x00\x00")
    return head + b"\x00" * (size - len(head))


def uploads(binary, work):
    server = Server(binary, work, "uploads", {"SIGNAGE_MEDIA_QUOTA_BYTES_PER_COMPANY": str(2**40)})
    try:
        data = png(5 * 2**20)
        headers = dict(key_headers("northwind-readwrite"), **{"Content-Type": "image/png"})
        path = f"/media?company_id={company('Northwind Grocers')}&filename=big.png"

        def attack(stop):
            counts = {}
            lock = threading.Lock()

            def loop():
                while not stop.is_set():
                    try:
                        status, _ = server.request("POST", path, headers, data, timeout=60)
                    except OSError as e:
                        status = type(e).__name__
                    with lock:
                        counts[str(status)] = counts.get(str(status), 0) + 1

            ts = [threading.Thread(target=loop, daemon=True) for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return {"upload_statuses": counts}

        return measure(server, attack)
    finally:
        server.kill()


class FastReceiver:
    """An HTTP receiver that answers 204 at once and records when each delivery arrived."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.arrived = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        buf = b""
        c.settimeout(10)
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = c.recv(65536)
                    if not d:
                        return
                    buf += d
                head, rest = buf.split(b"\r\n\r\n", 1)
                n = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                while len(rest) < n:
                    d = c.recv(65536)
                    if not d:
                        return
                    rest += d
                body, buf = rest[:n], rest[n:]
                self.arrived.append((time.perf_counter(), body))
                c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        except OSError:
            pass
        finally:
            c.close()


class HangingReceiver:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.held = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
                self.held.append(c)
            except OSError:
                return


def hanging_receivers(binary, work):
    server = Server(binary, work, "hanging_receivers", {"SIGNAGE_SANDBOX_SIMULATE_FLEET": "false"})
    try:
        ro = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True, check_same_thread=False)
        grocers, pharmacy = company("Northwind Grocers"), company("Northwind Pharmacy")
        hotels = company("Harborview Hotels")

        def an_ad(cmp):
            return ro.execute("SELECT id FROM ads WHERE company_id = ? ORDER BY id LIMIT 1", (cmp,)).fetchone()[0]

        fast = FastReceiver()
        hang = HangingReceiver()
        jh = dict(key_headers("harborview-admin"), **{"Content-Type": "application/json"})
        status, body = server.request("POST", "/webhooks", jh, json.dumps(
            {"company_id": hotels, "url": f"http://{HOST}:{fast.port}/hook", "event_types": ["ad.updated"]}))
        assert status == 201, body
        nh = dict(key_headers("northwind-admin"), **{"Content-Type": "application/json"})
        made = 0
        for cmp in (grocers, pharmacy):
            for i in range(15):
                status, body = server.request("POST", "/webhooks", nh, json.dumps(
                    {"company_id": cmp, "url": f"http://{HOST}:{hang.port}/h{i}", "event_types": ["ad.updated"]}))
                made += status == 201
        victim_ad = an_ad(hotels)
        vh = dict(key_headers("harborview-readwrite"), **{"Content-Type": "application/json"})

        def deliveries(seconds, stop=None):
            lats = []
            end = time.time() + seconds
            i = 0
            while time.time() < end and not (stop and stop.is_set()):
                before = len(fast.arrived)
                t = time.perf_counter()
                i += 1
                server.request("PATCH", f"/ads/{victim_ad}", vh, json.dumps({"headline": f"Sea view {i}"}))
                while len(fast.arrived) <= before and time.perf_counter() - t < 15:
                    time.sleep(0.002)
                if len(fast.arrived) > before:
                    lats.append((fast.arrived[before][0] - t) * 1000)
                time.sleep(0.2)
            return lats

        quiet_deliveries = deliveries(QUIET / 2)
        ah = dict(key_headers("northwind-readwrite"), **{"Content-Type": "application/json"})
        ads = [an_ad(grocers), an_ad(pharmacy)]

        def attack(stop):
            n = 0
            while not stop.is_set() and n < 40:
                for ad in ads:
                    server.request("PATCH", f"/ads/{ad}", ah, json.dumps({"headline": f"Hang {n}"}))
                n += 1
                time.sleep(0.05)
            time.sleep(1)
            lats = deliveries(ATTACK - 6, stop)
            stop.wait()
            return {"attacker_edits": 2 * n, "webhooks_made": made, "receivers_held": len(hang.held),
                    "victim_delivery_quiet_p50_ms": round(pct(quiet_deliveries, 50), 1),
                    "victim_delivery_quiet_p99_ms": round(pct(quiet_deliveries, 99), 1),
                    "victim_delivery_attack_p50_ms": round(pct(lats, 50), 1),
                    "victim_delivery_attack_p99_ms": round(pct(lats, 99), 1),
                    "victim_deliveries": len(lats)}

        return measure(server, attack)
    finally:
        server.kill()


# ---------------------------------------------------------------- failed authentication (29 §4)

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def checksum(body):
    """The key format's checksum (src/auth/keys.rs): CRC-32 as 6 base-62 digits."""
    import zlib
    n = zlib.crc32(body.encode()) & 0xFFFFFFFF
    out = ""
    for _ in range(6):
        out = BASE62[n % 62] + out
        n //= 62
    return out


def forged_auth(binary, work):
    server = Server(binary, work, "forged_auth")
    try:
        victim = key("harborview-readwrite")
        # The victim's key id with a forged secret and a valid checksum.
        raw = victim["rawKey"]
        body_part = raw[:len("sgn_test_") + 17] + "Z" * 32
        forged = body_part + checksum(body_part)
        headers = {"X-API-Key": forged, "X-Service-Client-Id": victim["client_id"],
                   "Content-Type": "application/json"}
        body = json.dumps({"name": "x" * 4096})

        def attack(stop):
            counts = {}
            lock = threading.Lock()
            sent = [0]

            def loop():
                c = None
                while not stop.is_set():
                    with lock:
                        if sent[0] >= 13000:
                            return
                        sent[0] += 1
                    try:
                        if c is None:
                            c = http.client.HTTPConnection(HOST, server.port, timeout=10,
                                                           source_address=(ATTACKER, 0))
                        c.request("POST", "/devices", body=body, headers=headers)
                        r = c.getresponse()
                        r.read()
                        status = r.status
                        if r.getheader("connection", "").lower() == "close":
                            c.close()
                            c = None
                    except OSError as e:
                        status = type(e).__name__
                        c = None
                    with lock:
                        counts[str(status)] = counts.get(str(status), 0) + 1

            ts = [threading.Thread(target=loop, daemon=True) for _ in range(8)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return {"forged_statuses": counts}

        return measure(server, attack)
    finally:
        server.kill()


# ---------------------------------------------------------------- issue 22

def delays(binary, work):
    server = Server(binary, work, "delays")
    try:
        attacker = dict(key_headers("northwind-readonly"), Prefer="delay=30000")

        def attack(stop):
            results = {"held": 0, "refused": 0, "other": 0}
            lock = threading.Lock()
            held = []

            def one():
                c = http.client.HTTPConnection(HOST, server.port, timeout=40)
                try:
                    c.request("GET", "/companies", headers=attacker)
                    c.sock.settimeout(2)
                    r = c.getresponse()
                    r.read()
                    kind = "refused" if r.status == 429 else "other"
                except (socket.timeout, TimeoutError):
                    kind = "held"
                    held.append(c)
                except OSError:
                    kind = "other"
                with lock:
                    results[kind] += 1

            threads = []
            started = time.time()
            for i in range(48 * 12):
                if stop.is_set():
                    break
                th = threading.Thread(target=one, daemon=True)
                th.start()
                threads.append(th)
                time.sleep(max(0, started + (i + 1) / 48 - time.time()))
            for th in threads:
                th.join()
            stop.wait()
            for c in held:
                c.close()
            return results

        return measure(server, attack)
    finally:
        server.kill()


def flood(binary, work):
    server = Server(binary, work, "flood", {"SIGNAGE_SCANS_RATE_LIMIT_PER_MINUTE": "0",
                                            "SIGNAGE_SANDBOX_SIMULATE_FLEET": "false"})
    try:
        ro = sqlite3.connect(f"file:{server.db}?mode=ro", uri=True, check_same_thread=False)
        code, before_count = ro.execute("SELECT code, scan_count FROM qr_codes ORDER BY id LIMIT 1").fetchone()

        def attack(stop):
            done = [0]
            lock = threading.Lock()
            end = time.time() + 10

            def worker():
                c = http.client.HTTPConnection(HOST, server.port, timeout=30, source_address=(ATTACKER, 0))
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
                wal = server.db + "-wal"
                peak_wal = max(peak_wal, os.path.getsize(wal) if os.path.exists(wal) else 0)
                time.sleep(0.2)
            time.sleep(3)
            count = ro.execute("SELECT scan_count FROM qr_codes WHERE code = ?", (code,)).fetchone()[0]
            stop.wait()
            return {"scans": done[0], "scans_per_s": round(done[0] / 10), "wal_peak_mib": round(peak_wal / 2**20, 1),
                    "count_exact": count - before_count == done[0]}

        return measure(server, attack)
    finally:
        server.kill()


ATTACKS = [slow_body, slow_body_keyed, slow_body_same_address, slow_headers, delay_keys, tools_list, uploads,
           hanging_receivers, forged_auth, delays, flood]


def fmt(x):
    return "n/a" if x != x else f"{x:.1f}"


if __name__ == "__main__":
    args = sys.argv[1:]
    binary = os.path.abspath(args[0])
    out = None
    only = None
    if "--json" in args:
        out = args[args.index("--json") + 1]
    if "--only" in args:
        only = args[args.index("--only") + 1].split(",")
    work = tempfile.mkdtemp(prefix="signage-attacks-")
    results = {}
    for attack in ATTACKS:
        if only and attack.__name__ not in only:
            continue
        t = time.time()
        r = attack(binary, work)
        results[attack.__name__] = r
        extra = {k: v for k, v in r.items() if not k.startswith(("quiet_", "attack_p", "attack_n", "rss_", "disk_"))}
        print(f"{attack.__name__}: other tenant p50/p99 quiet {fmt(r['quiet_p50_ms'])}/{fmt(r['quiet_p99_ms'])} ms "
              f"(n={r['quiet_n']}), under attack {fmt(r['attack_p50_ms'])}/{fmt(r['attack_p99_ms'])} ms "
              f"(n={r['attack_n']}, failed {r['attack_failed']}); RSS {r['rss_quiet_mib']:.0f} -> peak "
              f"{r['rss_peak_mib']:.0f} MiB; disk +{r['disk_grew_kib']:.0f} KiB; {json.dumps(extra)} "
              f"[{time.time() - t:.0f} s]", flush=True)
    if out:
        json.dump(results, open(out, "w"), indent=1)
    # The uploads attack alone leaves gigabytes: nothing stays behind.
    import shutil
    shutil.rmtree(work, ignore_errors=True)
