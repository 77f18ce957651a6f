"""What check_console.py is built from: PASS/FAIL bookkeeping, a REST client with the demo keys, a
server on a free port, polling in the page, and axe-core."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CREDS = json.loads((REPO / "fixtures" / "demo-credentials.json").read_text())
AXE = (HERE / "node_modules" / "axe-core" / "axe.min.js").read_text()

counts = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        counts["passed"] += 1
        print(f"PASS {name}")
    else:
        counts["failed"] += 1
        print(f"FAIL {name}: {detail}")
    sys.stdout.flush()
    return ok


def key(name):
    k = next(k for k in CREDS["keys"] if k["name"] == name)
    return k["rawKey"], k["client_id"]


def company_id(name):
    return next(c["id"] for c in CREDS["companies"] if c["name"] == name)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Rest:
    def __init__(self, base, name=None, raw=None, client=None):
        self.base = base
        self.key, self.client = (raw, client) if raw else key(name)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("X-API-Key", self.key)
        req.add_header("X-Service-Client-Id", self.client)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
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


def follow_once(url):
    """GETs `url` as a phone's browser would, without following the redirect: (status, Location)."""
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Mobile/15E148"})
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, r.headers.get("Location")
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Location")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, log_path=None):
    """The server on a free port; its log goes to `log_path` (a pipe nobody reads would fill up and
    stall the server)."""
    port = free_port()
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    env = dict(os.environ, SIGNAGE_RATE_LIMIT_PER_SECOND="1000", SIGNAGE_RATE_LIMIT_BURST="2000")
    proc = subprocess.Popen(
        [binary, "serve", "--port", str(port), "--database", ":memory:"],
        stdout=subprocess.DEVNULL, stderr=log, env=env,
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


def wait_until(page, expression, seconds):
    """Polls `expression` in the page (page.wait_for_function evaluates a string, which the page's
    CSP refuses; page.evaluate goes through the DevTools protocol)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if page.evaluate(expression):
                return True
        except Exception as e:  # noqa: BLE001 - a page still navigating (a new tab) is asked again
            if "context was destroyed" not in str(e) and "navigat" not in str(e):
                raise
        time.sleep(0.25)
    return False


def axe_check(page, view):
    # Evaluated through the DevTools protocol, so the page's CSP (no inline script) does not apply.
    page.evaluate(AXE)
    # Every rule axe-core has, the ones it leaves off by default included
    # (`label-content-name-mismatch`: a control whose name does not contain its visible text),
    # but WCAG's AAA level (7:1 contrast), which the console does not claim.
    result = page.evaluate(
        "async () => await axe.run(document, {resultTypes: ['violations'], rules: "
        "Object.fromEntries(axe.getRules().filter((r) => !r.tags.includes('wcag2aaa'))"
        ".map((r) => [r.ruleId, {enabled: true}]))})"
    )
    bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
    check(f"{view}: no serious or critical accessibility violations (axe-core)", not bad,
          "; ".join(f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]} {v['nodes'][0].get('failureSummary', '')[:160]}" for v in bad))


def sign_in(page, base, name):
    # Sign out as a person would, once the view has loaded (nothing left in flight to lose its
    # credential halfway).
    page.goto(base + "/console")
    page.wait_for_selector("body[data-auth]")
    if page.get_attribute("body", "data-auth") == "in":
        page.wait_for_selector("#view[data-ready]")
        if page.is_visible("#signout"):
            page.click("#signout")
        else:  # a phone: Sign out is in the menu
            page.click("#menu-toggle")
            page.click("#nav .nav-signout")
    page.wait_for_selector("#key-form", state="visible")
    raw, client = key(name)
    page.fill("#key-input", raw)
    page.fill("#client-input", client)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#view h1")


def open_spans(company, start, end):
    """The spans of [start, end) (aware datetimes) in which the company's stores are open, by its
    `opening_hours` read in its `timezone` with Python's own zone database: the server's rule
    (src/opening_hours.rs) checked against another."""
    zone = ZoneInfo(company["timezone"])
    hours = {d["day"]: d for d in company["opening_hours"]}
    names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    spans = []
    day = start.astimezone(zone).date() - timedelta(days=1)
    while datetime.combine(day, datetime.min.time(), zone) < end:
        h = hours.get(names[day.weekday()])
        if h:
            opens = datetime.combine(day, datetime.strptime(h["opens"], "%H:%M").time(), zone)
            closes = (datetime.combine(day + timedelta(days=1), datetime.min.time(), zone) if h["closes"] == "24:00"
                      else datetime.combine(day, datetime.strptime(h["closes"], "%H:%M").time(), zone))
            a, b = max(opens, start), min(closes, end)
            if a < b:
                spans.append((a, b))
        day += timedelta(days=1)
    return spans


def open_seconds(company, start, end):
    return sum((b - a).total_seconds() for a, b in open_spans(company, start, end))


def until_open(base, company, margin=timedelta(minutes=30)):
    """A screen's player plays only while its store is open, as the company's `store` says (the
    server's rule): when the store is closed at the sandbox clock's now, or closes within `margin`,
    moves the clock to a minute after it next opens. Returns the seconds the clock moved (0 when
    it is open)."""
    reader, operator = Rest(base, "northwind-readonly"), Rest(base, "sandbox-operator")
    at = lambda text: datetime.fromisoformat(text.replace("Z", "+00:00"))
    moved = 0
    for _ in range(3):
        store = reader.call("GET", f"/companies/{company}")[1]["store"]
        now = at(operator.call("GET", "/_sandbox/clock")[1]["now"])
        if store["open"] and (not store["closes_at"] or at(store["closes_at"]) - now > margin):
            return moved
        target = at(store["opens_at"]) if not store["open"] else at(store["closes_at"])
        seconds = int((target - now).total_seconds()) + 60
        status, _ = operator.call("POST", "/_sandbox/clock/advance", {"seconds": seconds})
        if status != 200:
            raise SystemExit(f"POST /_sandbox/clock/advance: {status}")
        moved += seconds
    return moved
