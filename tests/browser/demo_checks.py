"""What a presenter does beyond the views themselves, checked in the browser: `signage demo`'s
terminal QR code read by a real decoder; a player started by typing the key ("Start playing");
the Ads view's assign and unassign against REST; the fleet's refresh costing the same few requests
whatever the number of screens; the events feed after a burst (no gap, the clock's events labelled
`sandbox`, bursts grouped)."""

import os
import subprocess
import time

import zxingcpp
from PIL import Image

from kit import Rest, check, key, wait_until


def read_terminal_qr(lines, image_path):
    """The texts of the QR code that `lines` (a banner, from "Scan to open the console" to "Ctrl-C
    to stop") draw in half blocks, drawn as a terminal shows it (light on dark) into `image_path`
    and read by zxing-cpp."""
    start = next((i for i, l in enumerate(lines) if "Scan to open the console" in l), None)
    rows = []
    for line in lines[start + 1:] if start is not None else []:
        if "Ctrl-C to stop" in line:
            break
        if line.strip():
            rows.append(line)
    scale = 6
    width = max((len(r) for r in rows), default=0)
    image = Image.new("L", (width * scale + 48, len(rows) * 2 * scale + 48), 0)
    pixels = image.load()
    for r, row in enumerate(rows):
        for c, ch in enumerate(row.ljust(width)):
            for half, lit in ((0, ch in "█▀"), (1, ch in "█▄")):
                if lit:
                    for dy in range(scale):
                        for dx in range(scale):
                            pixels[24 + c * scale + dx, 24 + (2 * r + half) * scale + dy] = 255
    image.save(image_path)
    return [x.text for x in zxingcpp.read_barcodes(image) if x.format == zxingcpp.BarcodeFormat.QRCode]


def terminal_qr(binary, results):
    """`signage demo` prints the console URL and a QR code of it in half blocks; the QR code, drawn
    as a terminal shows it (light on dark), is read by zxing-cpp."""
    env = dict(os.environ, SIGNAGE_LOG_LEVEL="warn")
    proc = subprocess.Popen([binary, "demo", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, text=True)
    lines = []
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if "Ctrl-C to stop" in line:
                break
    finally:
        proc.terminate()
        proc.wait(10)
    (results / "demo-output.txt").write_text("\n".join(lines) + "\n")
    console = next((l.split()[1] for l in lines if l.strip().startswith("Console ")), None)
    players = [l.split()[1] for l in lines if l.strip().startswith("Player ")]
    check("signage demo prints a sign-in link for the console and two for players",
          bool(console) and "/console#signin=" in console and len(players) == 2 and all("#signin=" in p for p in players),
          "\n".join(lines[:12]))
    check("signage demo bound to loopback warns that phones cannot reach it",
          any("WARNING" in l and "phones cannot" in l for l in lines))
    decoded = read_terminal_qr(lines, results / "demo-terminal-qr.png")
    base = console.split("/console")[0] if console else ""
    check("signage demo's terminal QR code, read by zxing-cpp, is a sign-in link of its own for the console",
          console is not None and len(decoded) == 1 and decoded[0].startswith(f"{base}/console#signin=") and decoded[0] != console,
          f"{decoded} vs {console}")


def start_playing(browser, base, screen):
    """A tab with no credential: typing the key and "Start playing" hides the box for good."""
    page = browser.new_context(viewport={"width": 1440, "height": 800}).new_page()
    page.goto(f"{base}/player/{screen['id']}?slot=2")
    page.wait_for_selector("#key-form:not([hidden])")
    check("a player without a credential asks for one", "needs a credential" in page.inner_text("body")
          and page.is_visible("#key-form"))
    raw, client = key("northwind-readwrite")
    page.fill("#key-input", raw)
    page.fill("#client-input", client)
    page.click("#key-form button[type=submit]")
    started = wait_until(page, "Boolean(document.getElementById('stage').dataset.adId)", 15)
    page.wait_for_timeout(2500)
    check("after Start playing the sign-in box is gone and the ads play",
          started and page.is_hidden("#key-form") and page.is_visible("#stage")
          and page.evaluate("document.elementFromPoint(innerWidth / 2, innerHeight / 2).closest('#key-form') === null"),
          page.inner_text("body")[:200])
    page.context.close()


def ads_assign(page, base, writer, grocers):
    """The Ads view assigns and unassigns through the same REST calls any client makes."""
    page.goto(f"{base}/console#/company/{grocers}/ads")
    page.wait_for_selector("#view[data-ready] article.ad-card select")
    card = page.query_selector("article.ad-card:has(select)")
    ad_id = card.get_attribute("data-ad-id")
    device_id = card.eval_on_selector("select", "s => s.value")
    card.query_selector("button:text-is('Assign')").click()
    page.wait_for_selector(f"article.ad-card[data-ad-id='{ad_id}'] button[aria-label^='Unassign']")
    ad = writer.call("GET", f"/ads/{ad_id}")[1]
    check("Ads view: Assign puts the ad on the screen (REST)", device_id in ad["device_ids"], str(ad.get("device_ids")))
    shown = page.inner_text("#view [role=status]")
    check("…and says so", "assigned to" in shown, shown)
    name = writer.call("GET", f"/devices/{device_id}")[1]["name"]
    page.click(f"article.ad-card[data-ad-id='{ad_id}'] button[aria-label='Unassign {ad['name']} from {name}']")
    page.wait_for_selector("#view [role=status]:has-text('taken off')")
    ad = writer.call("GET", f"/ads/{ad_id}")[1]
    check("Ads view: Unassign takes it off again (REST)", device_id not in ad["device_ids"], str(ad.get("device_ids")))


def fleet_requests(page, base, companies):
    """Requests per fleet refresh, for companies with different numbers of screens: the same."""
    per_refresh = {}
    for cid in companies:
        calls = []

        def record(request):
            calls.append(request.url)

        page.goto(f"{base}/console#/company/{cid}/fleet")
        page.wait_for_selector("#view[data-ready] button.tile")
        page.wait_for_load_state("networkidle")
        screens = page.eval_on_selector_all("button.tile", "e => e.length")
        # Each tile's picture, marked; after two refreshes a tile still showing the same ad has the
        # same picture (a video in it plays on instead of starting over).
        before = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('button.tile')].map(t => {
            t.querySelector('.screen').dataset.kept = '1'; return [t.dataset.deviceId, t.textContent]; }))""")
        page.on("request", record)
        page.wait_for_timeout(10600)
        page.remove_listener("request", record)
        after = page.evaluate("""() => [...document.querySelectorAll('button.tile')].map(t => [t.dataset.deviceId, t.textContent,
            t.querySelector('.screen').dataset.kept === '1', [...t.querySelectorAll('video')].every(v => !v.paused)])""")
        same = [(k, playing) for d, text, k, playing in after if before.get(d, "").split("Playing:")[-1] == text.split("Playing:")[-1]]
        check(f"fleet of {screens} screens: a tile showing the same ad keeps its picture across refreshes (a video plays on)",
              same and all(k and playing for k, playing in same), f"{len(same)} unchanged tiles: {same}")
        # Requests to the service (a video's blob: URL is the browser's own memory).
        api = [u for u in calls if u.startswith(base) and "/console" not in u and "/content" not in u]
        lists = [u for u in api if "/devices?company_id=" in u]
        per_refresh[cid] = (screens, len(api) / max(1, len(lists)), len(lists))
        check(f"fleet of {screens} screens: every refresh is the same few list requests, none per screen",
              lists and not [u for u in api if "/devices/" in u] and len(api) % len(lists) == 0 and len(api) / len(lists) <= 4,
              f"{len(api)} requests in {len(lists)} refreshes: {api[:10]}")
    sizes = {s for s, _, _ in per_refresh.values()}
    costs = {c for _, c, _ in per_refresh.values()}
    check("fleets of different sizes cost the same number of requests per refresh",
          len(sizes) > 1 and len(costs) == 1, str(per_refresh))
    print(f"INFO fleet requests per refresh (screens, requests, refreshes): {per_refresh}")


def document_ok(page):
    return page.evaluate("document.body.dataset.connection") == "ok"


def watch_feed(browser, base):
    """A tab on the events feed, signed in with the demo key, kept open across the operator's burst."""
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(base + "/console")
    raw, client = key("northwind-readwrite")
    page.fill("#key-input", raw)
    page.fill("#client-input", client)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#view h1")
    page.goto(base + "/console#/events")
    page.wait_for_selector("#view[data-ready='#/events'] [data-loaded]")
    return page


def feed_after_burst(page, base, writer, grocers, results):
    """After "+1 day" and a burst of more than a page of changes while the feed could not poll (an
    injected 503 on GET /events): every event the key may see is in the feed (the poll walked the
    cursor back), the clock's are labelled `sandbox` by the sandbox's own names, bursts are grouped."""
    operator = Rest(base, "sandbox-operator")
    status, fault = operator.call("POST", "/_sandbox/faults", {
        "match": {"method": "GET", "path": "/events"}, "action": {"type": "status", "status": 503}})
    check("a 503 fault on GET /events holds the feed's polls back", status == 201, str(fault))
    wait_until(page, "document.body.dataset.connection === 'lost'", 10)
    ad = writer.all(f"/ads?company_id={grocers}")[0]
    for i in range(120):
        writer.call("PATCH", f"/ads/{ad['id']}", {"headline": f"Burst {i}"})
    writer.call("PATCH", f"/ads/{ad['id']}", {"headline": ad["headline"]})
    operator.call("DELETE", f"/_sandbox/faults/{fault['id']}")
    total = len(writer.all("/events"))
    caught_up = wait_until(page, f"Number(document.querySelector('[data-loaded]').dataset.loaded) >= {total}", 15)
    loaded = page.get_attribute("[data-loaded]", "data-loaded")
    updates = page.eval_on_selector_all("ol.feed li[data-type='ad.updated']", "els => els.reduce((n, e) => n + Number(e.dataset.count || 1), 0)")
    check("events feed: no gap after a burst of more than a page (the poll walks the cursor back)",
          caught_up and int(loaded) >= total and updates >= 121 and document_ok(page),
          f"{loaded} loaded, {total} over REST, {updates} ad.updated events shown")
    loaded, rows = page.evaluate("""() => [Number(document.querySelector('[data-loaded]').dataset.loaded),
        [...document.querySelectorAll('ol.feed li')].map(e => [e.dataset.via, e.textContent, Number(e.dataset.count || 1)])]""")
    shown = sum(n for _, _, n in rows)
    check("…every loaded event is on a line (grouped lines counted)", shown == loaded, f"{shown} vs {loaded}")
    sandbox = [t for v, t, _ in rows if v == "sandbox"]
    check("…what the clock brought is labelled sandbox, by the sandbox, not by the operator's key",
          sandbox and all(any(who in t for who in ("simulated fleet", "simulated scans", "sandbox clock")) for t in sandbox)
          and not any("sandbox-operator" in t for t in sandbox), str(sandbox[:3]))
    repeated = page.eval_on_selector_all("ol.feed li.grouped[data-type='ad.updated']", "els => els.map(e => [e.dataset.count, e.textContent])")
    check("…and the same edit repeated on one ad is one line, counted", any(int(c) >= 50 and f"{c} × ad.updated" in t for c, t in repeated), str(repeated[:3]))
    grouped = page.eval_on_selector_all("ol.feed li.grouped", "els => els.map(e => e.dataset.types)")
    check("…and bursts of scans, heartbeats and plays are grouped into single lines",
          any("qr_code.scanned" in g for g in grouped) and any("device.heartbeat" in g or "device.playback_recorded" in g for g in grouped),
          str(grouped[:6]))
    page.screenshot(path=str(results / "events-after-burst-1440.png"))
    page.context.close()
