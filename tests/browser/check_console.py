"""The console and the browser player, checked in a real browser (Debian's chromium, Playwright).

Usage: check_console.py <signage-binary> <results-dir>

Starts the binary on a free port with a throw-away database, then walks the console as a person
would, checking each view against the REST API: sign in with a demo key, see exactly that key's
companies, count a company's screen tiles, activate a promotion through the dialog and see the
balance change, open /player/{id} and see its heartbeat and playbacks over REST, prove that HTML in
a name renders inert, and check every view for console errors and (axe-core) serious or critical
accessibility violations. Screenshots of each view go to the results directory. Prints one
PASS/FAIL line per check and `N passed, M failed`.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CREDS = json.loads((REPO / "fixtures" / "demo-credentials.json").read_text())
AXE = (HERE / "node_modules" / "axe-core" / "axe.min.js").read_text()

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")
    sys.stdout.flush()


def key(name):
    k = next(k for k in CREDS["keys"] if k["name"] == name)
    return k["rawKey"], k["client_id"]


class Rest:
    def __init__(self, base, name):
        self.base = base
        self.key, self.client = key(name)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("X-API-Key", self.key)
        req.add_header("X-Service-Client-Id", self.client)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None

    def all(self, path):
        rows, cursor = [], None
        sep = "&" if "?" in path else "?"
        while True:
            _, page = self.call("GET", f"{path}{sep}limit=100" + (f"&cursor={cursor}" if cursor else ""))
            rows += page["data"]
            if not page["has_more"]:
                return rows
            cursor = page["next_cursor"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary):
    port = free_port()
    env = dict(os.environ, SIGNAGE_RATE_LIMIT_PER_SECOND="1000", SIGNAGE_RATE_LIMIT_BURST="2000")
    proc = subprocess.Popen(
        [binary, "serve", "--port", str(port), "--database", ":memory:"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(base + "/health", timeout=1) as r:
                if r.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("server did not start")


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    proc, base = start_server(binary)
    try:
        run(base, results)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"{passed} passed, {failed} failed")


def wait_until(page, expression, seconds):
    """Polls `expression` in the page (page.wait_for_function evaluates a string, which the page's
    CSP refuses; page.evaluate goes through the DevTools protocol)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if page.evaluate(expression):
            return True
        time.sleep(0.25)
    return False


def axe_check(page, view):
    # Evaluated through the DevTools protocol, so the page's CSP (no inline script) does not apply.
    page.evaluate(AXE)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
    check(f"{view}: no serious or critical accessibility violations (axe-core)", not bad,
          "; ".join(f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]} {v['nodes'][0].get('failureSummary', '')[:160]}" for v in bad))


def run(base, results):
    writer = Rest(base, "northwind-readwrite")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

        def settle(view):
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(results / f"{view}.png"), full_page=True)
            check(f"{view}: no console errors", not errors, " | ".join(errors[:5]))
            errors.clear()

        # The page itself: headers a browser enforces.
        resp = page.goto(base + "/console")
        csp = resp.headers.get("content-security-policy", "")
        check("console is served with a strict CSP",
              "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, csp)
        check("console sends X-Content-Type-Options: nosniff", resp.headers.get("x-content-type-options") == "nosniff")
        settle("signin")
        axe_check(page, "signin")

        # Sign in with a demo key: exactly its companies.
        raw, client = key("northwind-readwrite")
        page.fill("#key-input", raw)
        page.fill("#client-input", client)
        t0 = time.perf_counter()
        page.click("#key-form button[type=submit]")
        page.wait_for_selector("article.company")
        check("sign-in: the key is kept in sessionStorage, not in the URL or a cookie",
              "signage.credential" in page.evaluate("Object.keys(sessionStorage)")
              and raw not in page.url and not context.cookies(), page.url)
        expected = {c["id"] for c in writer.all("/companies")}
        shown = set(page.eval_on_selector_all("article.company", "els => els.map(e => e.dataset.companyId)"))
        check("companies view shows exactly the key's companies", shown == expected, f"{shown} vs {expected}")
        print(f"INFO sign-in to companies rendered in {(time.perf_counter() - t0) * 1000:.0f} ms")
        settle("companies")
        axe_check(page, "companies")

        # First view interactive: a reload of the companies view, timed by the browser.
        page.reload()
        page.wait_for_selector("article.company")
        interactive = page.evaluate("performance.getEntriesByName('signage:interactive').map(e => e.startTime)[0] ?? null")
        print(f"INFO first view interactive {interactive:.0f} ms after navigation" if interactive is not None else "INFO no interactive mark")
        check("the console marks when its first view is interactive", interactive is not None)
        errors.clear()

        # The fleet of one company: one tile per screen.
        company = next(c for c in writer.all("/companies") if c["name"] == "Northwind Grocers")
        devices = writer.all(f"/devices?company_id={company['id']}")
        page.goto(f"{base}/console#/company/{company['id']}/fleet")
        page.wait_for_selector("button.tile")
        tiles = page.eval_on_selector_all("button.tile", "els => els.map(e => e.dataset.deviceId)")
        check("fleet view: one tile per screen of the company", sorted(tiles) == sorted(d["id"] for d in devices),
              f"{len(tiles)} tiles for {len(devices)} devices")
        page.click("button.tile")
        page.wait_for_selector("#dialog[open]")
        check("a tile opens the screen's diagnostics", "Recent playback errors" in page.inner_text("#dialog"))
        page.click("#dialog-cancel")
        settle("fleet")
        axe_check(page, "fleet")

        # Activate a promotion through the dialog; the balance changes, over REST too.
        before = writer.call("GET", f"/tokens/balance?company_id={company['id']}")[1]["balance"]
        # A promotion made for this check (the fixtures' own are active or over), running from now on.
        starts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
        ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 14 * 86400))
        status, candidate = writer.call("POST", "/promotions", {
            "company_id": company["id"], "name": "Browser check offer", "description": "Made by the browser test.",
            "landing_url": "https://www.northwind-grocers.example/promotions/browser-check",
            "activation_cost_tokens": 40, "starts_at": starts, "ends_at": ends})
        check("a promotion to activate is created over REST", status == 201, json.dumps(candidate))
        promos = writer.all(f"/promotions?company_id={company['id']}")
        page.goto(f"{base}/console#/company/{company['id']}/promotions")
        page.wait_for_selector("article[data-promotion-id]")
        if candidate is None:
            check("promotions: a promotion that can be activated exists", False, json.dumps([(p["name"], p["state"], p["active"]) for p in promos]))
        else:
            page.click(f"article[data-promotion-id='{candidate['id']}'] button")
            page.wait_for_selector("#dialog[open]")
            shown_after = page.get_attribute("[data-balance-after]", "data-balance-after")
            check("the activation dialog shows the cost and the balance after",
                  shown_after == str(before - candidate["activation_cost_tokens"]) and f"{candidate['activation_cost_tokens']} tokens" in page.inner_text("#dialog"),
                  f"{shown_after} vs {before} - {candidate['activation_cost_tokens']}")
            page.click("#dialog-ok")
            page.wait_for_selector("text=activated")
            after = writer.call("GET", f"/tokens/balance?company_id={company['id']}")[1]["balance"]
            check("activating through the console spends the tokens (checked over REST)",
                  after == before - candidate["activation_cost_tokens"], f"{before} -> {after}")
            state = writer.call("GET", f"/promotions/{candidate['id']}")[1]
            check("the promotion is active over REST", state["active"] is True, json.dumps(state))
        settle("promotions")
        axe_check(page, "promotions")

        for view in ("tokens", "billing", "media", "webhooks"):
            page.goto(f"{base}/console#/company/{company['id']}/{view}")
            page.wait_for_selector("#view h1")
            page.wait_for_load_state("networkidle")
            check(f"{view} view renders", page.inner_text("#view h1").strip() != "Something went wrong", page.inner_text("#view"))
            settle(view)
            axe_check(page, view)
        page.goto(f"{base}/console#/company/{company['id']}/tokens")
        page.wait_for_selector("svg.chart")
        check("tokens view draws the ledger as an SVG line",
              page.eval_on_selector_all("svg.chart path.line", "els => els.length") == 1)
        errors.clear()

        # The events feed shows what just happened, by whom and through which door.
        page.goto(f"{base}/console#/events")
        page.wait_for_selector("#view ol li")
        feed = page.inner_text("#view ol")
        check("events feed lists the activation made through the console, via REST",
              "promotion.activated" in feed and "rest" in feed, feed[:300])
        settle("events")
        axe_check(page, "events")

        # HTML in a name is inert.
        target = devices[0]
        evil = '<img src=x onerror="window.__pwned=1">Lobby'
        status, body = writer.call("PATCH", f"/devices/{target['id']}", {"name": evil})
        check("planting HTML in a device name (REST)", status == 200, json.dumps(body))
        page.goto(f"{base}/console#/company/{company['id']}/fleet")
        page.wait_for_selector(f"button.tile[data-device-id='{target['id']}'] h3")
        text = page.inner_text(f"button.tile[data-device-id='{target['id']}'] h3")
        pwned = page.evaluate("window.__pwned === 1")
        injected = page.eval_on_selector_all("img[src='x']", "els => els.length")
        check("HTML from the API renders as text, inert", text == evil and not pwned and injected == 0,
              f"text={text!r} pwned={pwned} injected={injected}")
        errors.clear()

        # The player: a browser tab as a real screen.
        online = next(d for d in devices if d["status"] == "online" and d["id"] != target["id"])
        ads = writer.call("GET", f"/devices/{online['id']}/ads")[1]["data"]
        active = [a for a in ads if a["status"] == "active"]
        resp = page.goto(f"{base}/player/{online['id']}?slot=1")
        check("player is served with the same CSP", "script-src 'self'" in resp.headers.get("content-security-policy", ""))
        check("the player starts and heartbeats", wait_until(page, "Number(document.body.dataset.heartbeats || 0) >= 1", 15),
              page.inner_text("body")[:300])
        dev = writer.call("GET", f"/devices/{online['id']}")[1]
        check("the player sent a heartbeat (checked over REST)", dev["app_version"] == "browser-player-1.0", json.dumps(dev))
        if active:
            check("the player reports a play", wait_until(page, "Number(document.body.dataset.playbacks || 0) >= 1", 20),
                  page.evaluate("document.body.dataset.lastError || ''"))
            status, plays = writer.call("GET", f"/devices/{online['id']}/playbacks?limit=50")
            mine = [p for p in (plays or {}).get("data", []) if p.get("duration_seconds") == 1]
            check("the player reported proof-of-play (checked over REST)", status == 200 and len(mine) >= 1, f"{status} {plays}")
        else:
            check("the device has an active ad to play", False, json.dumps(ads))
        settle("player")
        axe_check(page, "player")

        # A player without a credential asks for one, clearly.
        fresh = browser.new_context().new_page()
        fresh.goto(f"{base}/player/{online['id']}")
        fresh.wait_for_selector("#key-form:not([hidden])")
        check("a player without a credential asks for one", "needs a credential" in fresh.inner_text("body"))

        # The operator's view of the sandbox.
        page.evaluate("sessionStorage.clear()")
        page.goto(base + "/console")
        raw, client = key("sandbox-operator")
        page.fill("#key-input", raw)
        page.fill("#client-input", client)
        page.click("#key-form button[type=submit]")
        page.wait_for_selector("#view h1")
        page.goto(base + "/console#/sandbox")
        page.wait_for_selector("[data-now]")
        now = page.get_attribute("[data-now]", "data-now")
        check("sandbox view shows the clock", bool(now), now)
        page.fill("#snapshot-name", "browser-check")
        page.click("text=Save snapshot")
        page.wait_for_selector("text=Snapshot saved.")
        listed = page.inner_text("#view")
        check("a snapshot saved from the sandbox view is listed", "browser-check" in listed, listed[:300])
        settle("sandbox")
        axe_check(page, "sandbox")
        browser.close()


if __name__ == "__main__":
    main()
