#!/usr/bin/env python3
"""Crash test of the signage server: kill -9 during concurrent writes, restart, nothing is lost.

    python3 tests/crash/crash.py <path-to-signage-binary>    (or: bash tests/crash/run.sh <binary>)

One database file in a temporary directory, created with the demo fixtures. Each loop lets worker
threads of two accounts write (token purchases, promotion activations that spend tokens, ads created
and edited, devices created and deleted), records every write the server acknowledged with a 2xx,
kills the server with SIGKILL at a random moment while requests are in flight, and restarts it on
the same file; the next loop writes to that restarted server. Five checks per loop:

  answers    every write answered before the kill got an expected status (no 5xx, no odd body)
  integrity  a copy of the crashed files (database + WAL) opens; PRAGMA integrity_check is `ok` and
             PRAGMA foreign_key_check finds nothing
  durable    in that copy, every write acknowledged in this loop or an earlier one is there (a write
             whose answer the kill cut off may be there or not, but never half: a purchase has its
             charge, an activation its spend)
  ledger     in that copy, for every company: its transactions in id order (= commit order) form an
             unbroken chain from 0 (each balance_after = previous balance_after + amount, never
             below 0), and the cached balance equals the sum of the amounts
  restart    the server restarts on the original files and its API shows the same: every
             acknowledged object, every balance

Standard library only. Everything listens on 127.0.0.1. Settings: CRASH_LOOPS (default 12, at
least 10 must finish), CRASH_SEED (replays the random choices, not the timing), CRASH_BUDGET_SECS
(default 50: no new loop starts after that). Prints `N passed, M failed` last and exits 1 on any
failure.
"""

import ctypes
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOPS = int(os.environ.get("CRASH_LOOPS", "12"))
MIN_LOOPS = 10
BUDGET_SECS = float(os.environ.get("CRASH_BUDGET_SECS", "50"))
SEED = int(os.environ.get("CRASH_SEED", str(random.SystemRandom().randrange(1 << 32))))
WORKERS_PER_ACCOUNT = 3
MAX_REQUESTS_PER_WORKER = 3000  # per loop; the kill comes long before
MIN_ACKS_BEFORE_KILL = 30
ACCOUNTS = ("northwind-readwrite", "harborview-readwrite")
CHECKS = ("answers", "integrity", "durable", "ledger", "restart")
# The answers a write may get while the server is up (the rate limit is off, so no 429).
EXPECTED = {"purchase": {201}, "create ad": {201}, "edit ad": {200},
            "create device": {201, 409},  # 409 once the plan's device limit is reached
            "delete device": {204}, "create promotion": {201},
            "activate": {200, 402},  # 402 when the balance is too low
            "deactivate": {200}}


def load_credentials():
    with open(os.path.join(REPO, "fixtures", "demo-credentials.json"), encoding="utf-8") as f:
        demo = json.load(f)
    keys = {k["name"]: k for k in demo["keys"]}
    accounts = []
    for name in ACCOUNTS:
        key = keys[name]
        companies = [c["id"] for c in demo["companies"] if c["account_id"] == key["account_id"]]
        headers = {"X-API-KEY": key["rawKey"], "X-Service-Client-Id": key["client_id"]}
        accounts.append({"name": name, "headers": headers, "companies": companies})
    return accounts


# ---- the server ----------------------------------------------------------------------------------

def _die_with_parent():
    """Runs in the child before exec: SIGKILL the server if this script dies, even by SIGKILL."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Server:
    live = set()  # every server not yet reaped; main() kills what is left on the way out

    def __init__(self, binary, workdir, db_path):
        self.binary, self.workdir, self.db_path = binary, workdir, db_path
        log_path = os.path.join(workdir, "server.log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
        # Six writers on two keys go past the default rate limit; a 429 would only slow the test.
        env["SIGNAGE_RATE_LIMIT_PER_SECOND"] = "0"
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", "0", "--database", db_path, "--log-level", "warn"],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=self.log, preexec_fn=_die_with_parent)
        Server.live.add(self)
        timer = threading.Timer(10, self.proc.kill)
        timer.start()
        line = self.proc.stdout.readline().decode("utf-8", "replace")
        timer.cancel()
        m = re.match(r"signage listening on http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.kill()
            with open(log_path, encoding="utf-8", errors="replace") as f:
                tail = "".join(f.readlines()[-10:])
            raise RuntimeError(f"server did not start (stdout: {line!r}); its log ends:\n{tail}")
        self.port = int(m.group(1))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        Server.live.discard(self)

    def restart(self):
        return Server(self.binary, self.workdir, self.db_path)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


class Client:
    def __init__(self, port, headers):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        self.headers = dict(headers)

    def call(self, method, path, body=None):
        """(status, json body or None). Raises OSError/HTTPException when the answer is lost."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        try:
            return resp.status, json.loads(raw) if raw else None
        except ValueError:
            return resp.status, None

    def close(self):
        self.conn.close()


# ---- the writers ---------------------------------------------------------------------------------

class Book:
    """What the workers were told: acknowledged writes and the values a field may now hold."""

    def __init__(self):
        self.lock = threading.Lock()
        self.purchases = []      # (ttx id, charge id, company id, tokens)
        self.ads = {}            # ad id -> set of headlines it may have (last acked + one in doubt)
        self.devices = {}        # device id -> set of {"present", "deleted"} it may be in
        self.promotions = {}     # promo id -> set of (active, number of spends) it may be in

    def acks(self):
        return len(self.purchases) + len(self.ads) + len(self.devices) + len(self.promotions)

    def merge(self, other):
        self.purchases += other.purchases
        self.ads.update(other.ads)
        self.devices.update(other.devices)
        self.promotions.update(other.promotions)


class Tally:
    """How many writes got which answer, over all workers of a loop: "<op> <status>" -> count."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def add(self, what):
        with self.lock:
            self.counts[what] = self.counts.get(what, 0) + 1


class Worker(threading.Thread):
    def __init__(self, index, loop, port, account, pack_id, book, stop, stats):
        super().__init__(daemon=True)
        self.tag = f"l{loop}w{index}"
        self.rng = random.Random(f"{SEED}-{loop}-{index}")
        self.client = Client(port, account["headers"])
        self.companies = account["companies"]
        self.pack_id = pack_id
        self.book, self.stop, self.stats = book, stop, stats
        self.my_ads, self.my_devices, self.my_promos = [], [], []
        self.landing_hosts = {}
        self.n = 0

    def run(self):
        try:
            for self.n in range(MAX_REQUESTS_PER_WORKER):
                if self.stop.is_set():
                    return
                self.step()
        except (OSError, http.client.HTTPException):
            self.count("lost")  # the server died under this request: its outcome is unknown
        except Exception as e:  # an answer of the wrong shape: reported by the `answers` check
            self.count(f"worker error {type(e).__name__}: {e!r}"[:200])
        finally:
            self.client.close()

    def count(self, what):
        self.stats.add(what)

    def step(self):
        company = self.rng.choice(self.companies)
        ops = [self.purchase, self.create_ad, self.create_device, self.create_promotion]
        if self.my_ads:
            ops += [self.edit_ad] * 3
        if self.my_devices:
            ops.append(self.delete_device)
        if self.my_promos:
            ops += [self.toggle_promotion] * 3
        self.rng.choice(ops)(company)

    def purchase(self, company):
        status, body = self.client.call(
            "POST", f"/token-packs/{self.pack_id}/purchase", {"company_id": company})
        self.count(f"purchase {status}")
        if status == 201:
            t = body["transaction"]
            with self.book.lock:
                self.book.purchases.append((t["id"], body["charge"]["id"], company, t["amount"]))

    def create_ad(self, company):
        headline = f"{self.tag}-{self.n}"
        status, body = self.client.call(
            "POST", "/ads",
            {"company_id": company, "name": f"crash {headline}", "headline": headline})
        self.count(f"create ad {status}")
        if status == 201:
            with self.book.lock:
                self.book.ads[body["id"]] = {headline}
            self.my_ads.append(body["id"])

    def edit_ad(self, _company):
        ad = self.rng.choice(self.my_ads)
        headline = f"{self.tag}-{self.n}"
        with self.book.lock:
            self.book.ads[ad].add(headline)  # in doubt until answered
        status, _ = self.client.call("PATCH", f"/ads/{ad}", {"headline": headline})
        self.count(f"edit ad {status}")
        with self.book.lock:
            if status == 200:
                self.book.ads[ad] = {headline}
            elif status < 500:
                self.book.ads[ad].discard(headline)

    def create_device(self, company):
        status, body = self.client.call(
            "POST", "/devices",
            {"company_id": company, "name": f"crash {self.tag}-{self.n}", "platform": "linux"})
        self.count(f"create device {status}")
        if status == 201:
            with self.book.lock:
                self.book.devices[body["id"]] = {"present"}
            self.my_devices.append(body["id"])

    def delete_device(self, _company):
        dev = self.my_devices.pop(self.rng.randrange(len(self.my_devices)))
        with self.book.lock:
            self.book.devices[dev].add("deleted")
        status, _ = self.client.call("DELETE", f"/devices/{dev}")
        self.count(f"delete device {status}")
        with self.book.lock:
            if status in (200, 204):
                self.book.devices[dev] = {"deleted"}
            elif status < 500:
                self.book.devices[dev].discard("deleted")

    def landing_host(self, company):
        """A host the company's allowed landing domains accept (any when it lists none)."""
        if company not in self.landing_hosts:
            status, body = self.client.call("GET", f"/companies/{company}")
            domains = (body or {}).get("allowed_landing_domains") if status == 200 else None
            self.landing_hosts[company] = f"www.{domains[0]}" if domains else "example.com"
        return self.landing_hosts[company]

    def create_promotion(self, company):
        host = self.landing_host(company)
        now = time.time()
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        status, body = self.client.call("POST", "/promotions", {
            "company_id": company, "name": f"crash {self.tag}-{self.n}", "description": "",
            "landing_url": f"https://{host}/crash", "activation_cost_tokens": 7,
            "starts_at": iso(now - 3600), "ends_at": iso(now + 30 * 86400)})
        self.count(f"create promotion {status}")
        if status == 201:
            with self.book.lock:
                self.book.promotions[body["id"]] = {(False, 0)}
            self.my_promos.append(body["id"])

    def toggle_promotion(self, _company):
        promo = self.rng.choice(self.my_promos)
        with self.book.lock:
            # One state: the owner of a promotion stops at its first lost answer.
            ((was, spends),) = self.book.promotions[promo]
            on = not was
            before, after = (was, spends), (on, spends + 1 if on else spends)
            self.book.promotions[promo] = {before, after}  # in doubt until answered
        verb = "activate" if on else "deactivate"
        status, _ = self.client.call("POST", f"/promotions/{promo}/{verb}")
        self.count(f"{verb} {status}")
        with self.book.lock:
            if status == 200:
                self.book.promotions[promo] = {after}
            elif status < 500:
                self.book.promotions[promo] = {before}


# ---- the checks ----------------------------------------------------------------------------------

def check_integrity(db):
    problems = []
    result = [r[0] for r in db.execute("PRAGMA integrity_check")]
    if result != ["ok"]:
        problems.append(f"integrity_check: {result[:5]}")
    fk = db.execute("PRAGMA foreign_key_check").fetchall()
    if fk:
        problems.append(f"foreign_key_check: {len(fk)} rows, first {fk[:3]}")
    return problems


def check_durable(db, book):
    problems = []
    for ttx, charge, company, amount in book.purchases:
        row = db.execute("SELECT company_id, kind, amount FROM token_transactions WHERE id = ?",
                         (ttx,)).fetchone()
        if row != (company, "purchase", amount):
            problems.append(f"acknowledged purchase {ttx} is {row}")
        if not db.execute("SELECT 1 FROM charges WHERE id = ?", (charge,)).fetchone():
            problems.append(f"charge {charge} of acknowledged purchase {ttx} is missing")
    for ad, allowed in book.ads.items():
        row = db.execute("SELECT headline FROM ads WHERE id = ?", (ad,)).fetchone()
        if row is None or row[0] not in allowed:
            problems.append(f"ad {ad}: headline {row} not in {sorted(allowed)}")
    for dev, allowed in book.devices.items():
        state = "present" if db.execute("SELECT 1 FROM devices WHERE id = ?", (dev,)).fetchone() \
            else "deleted"
        if state not in allowed:
            problems.append(f"device {dev} is {state}, expected {sorted(allowed)}")
    for promo, allowed in book.promotions.items():
        row = db.execute("SELECT active, (SELECT count(*) FROM token_transactions t "
                         "WHERE t.promotion_id = p.id AND t.kind = 'spend') "
                         "FROM promotions p WHERE id = ?", (promo,)).fetchone()
        state = (bool(row[0]), row[1]) if row else None
        if state not in allowed:
            problems.append(f"promotion {promo}: (active, spends) is {state}, "
                            f"expected one of {sorted(allowed)}")
    return problems


def check_ledger(db):
    """(company -> balance, problems): each company's ledger in commit order, and its links."""
    balances, problems = {}, []
    for kind, link in (("purchase", "charge_id"), ("spend", "promotion_id")):
        orphans = db.execute(f"SELECT id FROM token_transactions WHERE kind = ? AND {link} IS NULL",
                             (kind,)).fetchall()
        if orphans:  # a half-applied write, whether or not its answer arrived
            problems.append(f"{kind} without {link}: {[o[0] for o in orphans[:5]]}")
    for (company,) in db.execute("SELECT id FROM companies ORDER BY id").fetchall():
        running, breaks = 0, []
        for ttx, amount, after in db.execute(
                "SELECT id, amount, balance_after FROM token_transactions WHERE company_id = ? "
                "ORDER BY id", (company,)):
            if running + amount != after or after < 0:
                breaks.append(f"{company}: {ttx} says {running} + {amount} = {after}")
            running = after
        cached = db.execute("SELECT balance FROM token_balances WHERE company_id = ?",
                            (company,)).fetchone()
        (total,) = db.execute("SELECT coalesce(sum(amount), 0) FROM token_transactions "
                              "WHERE company_id = ?", (company,)).fetchone()
        cached = cached[0] if cached else 0
        if not cached == total == running:
            breaks.append(f"{company}: balance {cached}, sum {total}, chain ends at {running}")
        problems += breaks[:5]
        balances[company] = cached
    return balances, problems


def check_restart(client, book, balances):
    problems = []
    status, _ = client.call("GET", "/health")
    if status != 200:
        return [f"/health after restart: {status}"]
    for ad, allowed in book.ads.items():
        status, body = client.call("GET", f"/ads/{ad}")
        if status != 200 or body["headline"] not in allowed:
            problems.append(f"GET /ads/{ad}: {status}, expected one of {sorted(allowed)}")
    for dev, allowed in book.devices.items():
        status, _ = client.call("GET", f"/devices/{dev}")
        state = {200: "present", 404: "deleted"}.get(status, str(status))
        if state not in allowed:
            problems.append(f"GET /devices/{dev}: {status}, expected {sorted(allowed)}")
    for promo, allowed in book.promotions.items():
        status, body = client.call("GET", f"/promotions/{promo}")
        if status != 200 or body["active"] not in {active for active, _ in allowed}:
            problems.append(f"GET /promotions/{promo}: {status}, expected one of {sorted(allowed)}")
    for company, balance in balances.items():
        status, body = client.call("GET", f"/tokens/balance?company_id={company}")
        if status != 200 or body["balance"] != balance:
            problems.append(
                f"GET /tokens/balance {company}: {status} {body}, database says {balance}")
    return problems


# ---- one loop ------------------------------------------------------------------------------------

def run_loop(loop, server, accounts, pack_id, rng, history):
    """Write, kill -9, check, restart. Returns ({check: problems}, the restarted server or None)."""
    books, stop, stats = [Book() for _ in accounts], threading.Event(), Tally()
    workers = [
        Worker(len(accounts) * j + i, loop, server.port, acct, pack_id, books[i], stop, stats)
        for j in range(WORKERS_PER_ACCOUNT) for i, acct in enumerate(accounts)]
    acks = lambda: sum(b.acks() for b in books)  # noqa: E731
    started = time.monotonic()
    for w in workers:
        w.start()
    while acks() < MIN_ACKS_BEFORE_KILL and time.monotonic() - started < 5 \
            and any(w.is_alive() for w in workers):
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.6))
    busy = sum(w.is_alive() for w in workers)
    server.kill()  # SIGKILL, mid-flight
    killed_after = time.monotonic() - started
    stop.set()
    for w in workers:
        w.join(timeout=10)

    problems = {c: [] for c in CHECKS}
    for what, n in sorted(stats.counts.items()):
        op, _, status = what.rpartition(" ")
        if what == "lost" or (op in EXPECTED and int(status) in EXPECTED[op]):
            continue
        problems["answers"].append(f"{what}: {n} times")
    if acks() == 0:
        problems["durable"].append("no write was acknowledged before the kill: nothing was tested")
    if busy == 0:
        problems["durable"].append("every worker had finished before the kill: raise the bounds")

    # Check a copy, so that the server (not this script) is what recovers the original files.
    copy = os.path.join(server.workdir, "copy.db")
    for suffix in ("", "-wal"):
        if os.path.exists(server.db_path + suffix):
            shutil.copyfile(server.db_path + suffix, copy + suffix)
    db = sqlite3.connect(copy)
    try:
        problems["integrity"] += check_integrity(db)
        for book in books:
            history.merge(book)  # every loop re-checks what earlier loops were told
        problems["durable"] += check_durable(db, history)
        balances, problems["ledger"] = check_ledger(db)
    finally:
        db.close()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(copy + suffix):
                os.remove(copy + suffix)

    # Restart on the crashed files; the next loop writes to this server and kills it again.
    restarted = None
    try:
        restarted = server.restart()
        for account, book in zip(accounts, books):  # each account sees only its own objects
            client = Client(restarted.port, account["headers"])
            try:
                problems["restart"] += check_restart(client, book, {
                    c: b for c, b in balances.items() if c in account["companies"]})
            finally:
                client.close()
    except (RuntimeError, OSError, http.client.HTTPException) as e:
        problems["restart"].append(f"{type(e).__name__}: {e}")

    lost = stats.counts.get("lost", 0)
    writes = sum(v for k, v in stats.counts.items() if k != "lost")
    print(f"loop {loop}: kill -9 after {killed_after:.2f} s with {busy} workers busy; "
          f"{writes} answered writes, {acks()} objects acknowledged, {lost} answers lost; "
          + ", ".join(f"{c} {'ok' if not problems[c] else 'FAILED'}" for c in CHECKS), flush=True)
    return problems, restarted


def cheapest_pack(server, account):
    client = Client(server.port, account["headers"])
    try:
        status, body = client.call("GET", "/token-packs")
    finally:
        client.close()
    if status != 200 or not body["data"]:
        raise RuntimeError(f"GET /token-packs: {status} {body}")
    return min(body["data"], key=lambda p: p["tokens"])["id"]


def main():
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print(f"usage: {sys.argv[0]} <path-to-signage-binary>", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    binary = os.path.abspath(sys.argv[1])
    # SIGTERM/SIGINT unwind through the `finally` blocks: servers stopped, temp dir removed.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    rng = random.Random(SEED)
    accounts = load_credentials()
    started = time.monotonic()
    passed = failed = 0
    print(f"crash test: seed {SEED} (CRASH_SEED={SEED} replays the random choices), "
          f"{LOOPS} loops", flush=True)
    parent = os.environ.get("CRASH_TMPDIR")  # run.sh passes one it removes even if this dies hard
    with tempfile.TemporaryDirectory(prefix="signage-crash-", dir=parent) as work:
        try:
            # A new database: the server loads the demo fixtures.
            server = Server(binary, work, os.path.join(work, "crash.db"))
            pack_id = cheapest_pack(server, accounts[0])
            history = Book()
            loops_done = 0
            for loop in range(1, LOOPS + 1):
                if time.monotonic() - started > BUDGET_SECS:
                    print(f"time budget of {BUDGET_SECS:.0f} s used up after {loops_done} loops")
                    break
                if server is None:  # the restart failed (reported); try once more for this loop
                    server = Server(binary, work, os.path.join(work, "crash.db"))
                problems, server = run_loop(loop, server, accounts, pack_id, rng, history)
                loops_done += 1
                for check in CHECKS:
                    if problems[check]:
                        failed += 1
                        print(f"FAIL loop {loop} {check}:")
                        for p in problems[check][:10]:
                            print(f"  {p}")
                    else:
                        passed += 1
            if loops_done < MIN_LOOPS:
                failed += 1
                print(f"FAIL only {loops_done} loops ran, at least {MIN_LOOPS} are required")
        except Exception as e:  # a broken harness is a failure, never a pass
            failed += 1
            print(f"FAIL the crash test itself: {type(e).__name__}: {e}")
        finally:
            for live in list(Server.live):
                live.stop()
    print(f"total {time.monotonic() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
