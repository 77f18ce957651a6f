"""The console and the browser player, checked in a real browser (Debian's chromium, Playwright).

Usage: check_console.py <signage-binary> <results-dir>

Starts the binary on a free port with a throw-away database, on the running clock with the
simulated fleet, then uses the console and the player as a presenter would, checking each against
the REST API: sign in; exactly the key's companies; no Sandbox link without the `sandbox` scope; fleet
tiles from a constant number of requests; activation through the dialog; the events feed with names;
HTML in a name inert; the player (sign-in box hidden, ads rotating, a video playing, heartbeats and
plays over REST, its QR code read from a screenshot by zxing-cpp and followed like a phone, the scan
visible in the console); "+1 day" on the running clock; every chart drawn with data; honest status
under an injected 503, 429 and a revoked key; then every view at 1440 and 390 px without console
errors or serious/critical axe-core violations. Screenshots of every view go to the results
directory. Prints one PASS/FAIL line per check and `N passed, M failed`.
"""

import io
import re
import sys
import time
from pathlib import Path

import zxingcpp
from PIL import Image
from playwright.sync_api import sync_playwright

from kit import (Rest, axe_check, check, company_id, counts, follow_once, key, sign_in, start_server,
                 until_open, wait_until)
from status_checks import honest_status
from demo_checks import ads_assign, feed_after_burst, fleet_requests, start_playing, terminal_qr, watch_feed
from story import story

VIEWS = ["companies", "overview", "fleet", "ads", "promotions", "reports", "tokens", "billing", "media", "webhooks", "events", "readiness"]
WIDE = 1440


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    terminal_qr(binary, results)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        story(binary, browser, results)
        browser.close()
    proc, base = start_server(binary, results / "server.log")
    try:
        run(base, results)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"{counts['passed']} passed, {counts['failed']} failed")


def view_url(base, cid, view):
    if view == "companies":
        return f"{base}/console#/companies"
    if view in ("events", "readiness"):
        return f"{base}/console#/{view}"
    if view == "overview":
        return f"{base}/console#/company/{cid}"
    return f"{base}/console#/company/{cid}/{view}"


def run(base, results):
    writer = Rest(base, "northwind-readwrite")
    operator = Rest(base, "sandbox-operator")
    grocers = company_id("Northwind Grocers")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": WIDE, "height": 900})
        page = context.new_page()
        errors = []
        page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

        def no_errors(view):
            check(f"{view}: no console errors", not errors, " | ".join(errors[:5]))
            errors.clear()

        # The page itself: headers a browser enforces.
        resp = page.goto(base + "/console")
        csp = resp.headers.get("content-security-policy", "")
        check("console is served with a strict CSP",
              "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, csp)
        check("console sends X-Content-Type-Options: nosniff", resp.headers.get("x-content-type-options") == "nosniff")

        # Sign in with a demo key: exactly its companies, and no Sandbox link (no `sandbox` scope).
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
        check("companies show each company's logo", page.eval_on_selector_all("article.company svg.logo-mark", "e => e.length") == len(expected))
        print(f"INFO sign-in to companies rendered in {(time.perf_counter() - t0) * 1000:.0f} ms")
        check("a key without the sandbox scope sees no Sandbox link",
              page.eval_on_selector_all("#nav a", "els => els.map(a => a.textContent)").count("Sandbox") == 0
              and page.eval_on_selector_all("#nav a", "els => els.length") > 0)
        page.goto(base + "/console#/sandbox")
        page.wait_for_selector("#view h1")
        check("…and typing #/sandbox shows why, not three 403 boxes",
              "sandbox scope" in page.inner_text("#view") and "403" not in page.inner_text("#view"), page.inner_text("#view")[:200])
        page.reload()
        page.wait_for_selector("#view h1")
        interactive = page.evaluate("performance.getEntriesByName('signage:interactive').map(e => e.startTime)[0] ?? null")
        check("the console marks when its first view is interactive", interactive is not None)
        no_errors("sign-in")

        # The fleet: one tile per screen, from a constant number of requests (no per-screen call).
        devices = writer.all(f"/devices?company_id={grocers}")
        calls = []

        def record(request):
            calls.append(request.url)

        page.on("request", record)
        page.goto(f"{base}/console#/company/{grocers}/fleet")
        page.wait_for_selector("button.tile")
        tiles = page.eval_on_selector_all("button.tile", "els => els.map(e => e.dataset.deviceId)")
        check("fleet view: one tile per screen of the company", sorted(tiles) == sorted(d["id"] for d in devices),
              f"{len(tiles)} tiles for {len(devices)} devices")
        calls.clear()
        page.wait_for_timeout(5600)
        per_screen = [u for u in calls if "/diagnostics" in u]
        api_calls = [u for u in calls if "/console" not in u and "/media/" not in u]
        check("fleet refresh: no request per screen, a constant few",
              not per_screen and 0 < len(api_calls) <= 8, f"{len(api_calls)} calls: {api_calls[:12]}")
        page.remove_listener("request", record)
        page.click("button.tile")
        page.wait_for_selector("#dialog[open] h3")
        check("a tile opens the screen's diagnostics", "Recent playback errors" in page.inner_text("#dialog"))
        page.click("#dialog-cancel")
        fleet_requests(page, base, [grocers, company_id("Northwind Pharmacy")])
        no_errors("fleet")

        # Activate a promotion through the dialog; the balance changes, over REST too.
        before = writer.call("GET", f"/tokens/balance?company_id={grocers}")[1]["balance"]
        starts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
        ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 14 * 86400))
        status, candidate = writer.call("POST", "/promotions", {
            "company_id": grocers, "name": "Browser check offer", "description": "Made by the browser test.",
            "landing_url": "https://www.northwind-grocers.example/promotions/browser-check",
            "activation_cost_tokens": 40, "starts_at": starts, "ends_at": ends})
        check("a promotion to activate is created over REST", status == 201, str(candidate))
        page.goto(f"{base}/console#/company/{grocers}/promotions")
        page.wait_for_selector(f"article[data-promotion-id='{candidate['id']}'] button")
        page.click(f"article[data-promotion-id='{candidate['id']}'] button")
        page.wait_for_selector("#dialog[open]")
        shown_after = page.get_attribute("[data-balance-after]", "data-balance-after")
        check("the activation dialog shows the cost and the balance after",
              shown_after == str(before - 40) and "40 tokens" in page.inner_text("#dialog"), f"{shown_after} vs {before} - 40")
        page.click("#dialog-ok")
        # The console's own status line for this promotion (another promotion's card may say
        # "activated" already, e.g. an ended one that "cannot be activated again").
        page.wait_for_selector("text=Browser check offer activated")
        after = writer.call("GET", f"/tokens/balance?company_id={grocers}")[1]["balance"]
        check("activating through the console spends the tokens (checked over REST)", after == before - 40, f"{before} -> {after}")
        check("the console warns that QR links point at a loopback address",
              "Phones cannot scan" in page.inner_text("#notices"), page.inner_text("#notices"))
        no_errors("promotions")

        # The events feed: names, not ids; the door.
        page.goto(f"{base}/console#/events")
        page.wait_for_selector("ol.feed li")
        feed = page.inner_text("ol.feed")
        key_name = writer.call("GET", "/me")[1]["name"]
        check("events feed lists the activation by the key's name and the promotion's name, via REST",
              "promotion.activated" in feed and "Browser check offer" in feed and f"by {key_name}" in feed and "rest" in feed, feed[:400])
        check("events feed shows no raw key ids", "key_" not in feed, feed[:400])
        page.select_option("#event-filter", "sandbox")
        check("events feed filters by kind", all(v == "sandbox" for v in page.eval_on_selector_all("ol.feed li", "els => els.map(e => e.dataset.via)")))
        page.select_option("#event-filter", "ads")
        check("events feed: an empty state, not a blank page (no ad has changed yet)",
              page.is_visible("p.empty") and "No events of this kind yet" in page.inner_text("p.empty") and page.is_hidden("ol.feed"),
              page.inner_text("#view")[:300])
        page.select_option("#event-filter", "all")
        no_errors("events")

        # HTML in a name is inert.
        screen = next(d for d in devices if d["name"] == "Entrance Screen 1")
        target = next(d for d in devices if d["name"] == "Staff Room Screen")
        evil = '<img src=x onerror="window.__pwned=1">Lobby'
        status, body = writer.call("PATCH", f"/devices/{target['id']}", {"name": evil})
        check("planting HTML in a device name (REST)", status == 200, str(body))
        page.goto(f"{base}/console#/company/{grocers}/fleet")
        page.wait_for_selector(f"button.tile[data-device-id='{target['id']}'] h3")
        text = page.inner_text(f"button.tile[data-device-id='{target['id']}'] h3")
        pwned = page.evaluate("window.__pwned === 1")
        injected = page.eval_on_selector_all("img[src='x']", "els => els.length")
        check("HTML from the API renders as text, inert", text == evil and not pwned and injected == 0,
              f"text={text!r} pwned={pwned} injected={injected}")
        errors.clear()

        # The player plays while its store is open: at night the clock moves on to the opening.
        opened = until_open(base, grocers)
        player(page, base, writer, screen, grocers, results)
        no_errors("player")

        # A player without a credential asks for one, clearly; once given, the box goes.
        start_playing(browser, base, screen)
        ads_assign(page, base, writer, grocers)
        no_errors("ads")
        feed = watch_feed(browser, base)

        # The operator: "+1 day" on the running clock moves it ahead, and it keeps running.
        sign_in(page, base, "sandbox-operator")
        page.wait_for_selector("[data-now]")
        clock = operator.call("GET", "/_sandbox/clock")[1]
        check("the default clock is running (system), moved only to the store's opening", clock["mode"] == "system"
              and clock["offset_seconds"] == opened, f"{clock} (moved {opened} s)")
        links = page.eval_on_selector_all("#nav a", "els => els.map(a => a.textContent)")
        check("an operator sees the Sandbox link, and no links to views its scope cannot open (Companies, Events)",
              "Sandbox" in links and "Companies" not in links and "Events" not in links, str(links))
        page.click("text=+1 hour")
        page.wait_for_selector("text=Advanced one hour")
        hour = operator.call("GET", "/_sandbox/clock")[1]
        check("+1 hour works on the running clock: GET /_sandbox/clock shows the offset",
              3599 <= hour["offset_seconds"] < 86400 and hour["mode"] == "system"
              and page.get_attribute("[data-now]", "data-offset") == str(hour["offset_seconds"]), str(hour))
        page.click("text=+1 day")
        page.wait_for_selector("text=Advanced one day")
        moved = operator.call("GET", "/_sandbox/clock")[1]
        shown_now = page.get_attribute("[data-now]", "data-now")
        check("+1 day works on the running clock: a day ahead, shown",
              moved["offset_seconds"] >= 86400 + 3599 and shown_now[:13] == moved["now"][:13], f"{moved} shown {shown_now}")
        time.sleep(1.2)
        later = operator.call("GET", "/_sandbox/clock")[1]
        check("…and the clock keeps running from there", later["now"] > moved["now"] and later["mode"] == "system", f"{moved} -> {later}")
        check("the header shows the sandbox time, a day ahead", "+1 d" in page.inner_text("#sandbox-time"), page.inner_text("#sandbox-time"))
        page.fill("#snapshot-name", "browser-check")
        page.click("text=Save snapshot")
        try:
            page.wait_for_selector("#view li:has-text('browser-check')", timeout=15000)
            listed = True
        except Exception:  # noqa: BLE001 - reported below with what the page shows
            listed = False
        check("a snapshot saved from the sandbox view is listed", listed, page.inner_text("body")[:400])
        no_errors("sandbox")

        feed_after_burst(feed, base, writer, grocers, results)
        charts(page, base, grocers)
        honest_status(page, base, browser, grocers, results)
        errors.clear()
        sweep(browser, base, grocers, screen, results, errors)
        browser.close()


def player(page, base, writer, screen, grocers, results):
    """The player as a screen: sign-in box hidden, ads rotating, a video playing, its QR code
    readable by a phone's decoder and counted when followed."""
    # A journal mark: what the player (and this check's own reads) send from here on.
    mark = writer.call("GET", "/requests/mark")[1]["after"]
    resp = page.goto(f"{base}/player/{screen['id']}?slot=3")
    check("player is served with the same CSP", "script-src 'self'" in resp.headers.get("content-security-policy", ""))
    check("the player starts and heartbeats", wait_until(page, "Number(document.body.dataset.heartbeats || 0) >= 1", 15),
          page.inner_text("body")[:300])
    check("the sign-in box is hidden once a credential exists", page.is_hidden("#key-form") and page.is_visible("#stage"))
    check("the company's branding frames the screen", page.is_visible("#frame svg.logo-mark") and "Northwind Grocers" in page.inner_text("#frame"))
    active = [a for a in writer.call("GET", f"/devices/{screen['id']}/ads")[1]["data"] if a["status"] == "active"]
    kinds = {}
    video_ok = False
    qr_ok = None
    seen = set()
    deadline = time.time() + 3 * len(active) * 3 + 10
    media_types = set()
    while time.time() < deadline and not (len(seen) >= 2 and video_ok and qr_ok and "image/jpeg" in media_types):
        ad = page.evaluate("document.getElementById('stage').dataset.adId || ''")
        kind = page.evaluate("document.getElementById('stage').dataset.kind || ''")
        media_types.add(page.evaluate("document.getElementById('stage').dataset.media || ''"))
        if "image/jpeg" in media_types and not (results / f"player-photo-{WIDE}.png").exists():
            page.screenshot(path=str(results / f"player-photo-{WIDE}.png"))
        if ad:
            seen.add(ad)
            kinds[ad] = kind
        if kind == "video" and not video_ok:
            t1 = page.evaluate("(document.querySelector('#stage video') || {}).currentTime ?? -1")
            time.sleep(0.8)
            state = page.evaluate("(() => { const v = document.querySelector('#stage video'); return v ? [v.currentTime, v.muted, v.paused, v.playsInline] : null })()")
            video_ok = bool(state) and state[0] > t1 >= 0 and state[1] and not state[2] and state[3]
            if not video_ok:
                print(f"INFO video state {t1} -> {state}")
        if kind == "video" and not qr_ok and page.query_selector("#stage figure.qr img") and page.evaluate("document.getElementById('stage').children.length === 1 && !document.querySelector('#stage .entering')"):
            qr_ok = qr_scan(page, writer, results)
        time.sleep(0.3)
    check("two ads rotate on the player", len(seen) >= 2, str(seen))
    fade = page.evaluate("(() => { const s = document.querySelector('#stage .slide'); return s ? getComputedStyle(s).transitionDuration : null; })()")
    check("one ad crossfades into the next (0.8 s)", fade == "0.8s", str(fade))
    poster_beside_qr(page.context.browser, base, writer, grocers, results)
    check("a video ad plays: muted, inline, currentTime advances", video_ok, str(kinds))
    check("the screen plays the fixture photo ad (JPEG) and video ad (MP4)", {"image/jpeg", "video/mp4"} <= media_types, str(media_types))
    check("the player showed a QR code while a video played, and it was read", bool(qr_ok))
    check("the player heartbeats whenever the ad changes", int(page.evaluate("document.body.dataset.heartbeats || 0")) >= 1 + int(page.evaluate("document.body.dataset.adChanges || 0")))
    dev = writer.call("GET", f"/devices/{screen['id']}")[1]
    # The ad may have changed since the loop's last look (its heartbeat named the new one).
    on_screen = seen | {page.evaluate("document.getElementById('stage').dataset.adId || ''")}
    check("the player's heartbeat names the ad on screen (REST)", dev["app_version"] == "browser-player-1.0" and dev["current_ad_id"] in on_screen, str(dev))
    check("the player reports plays", wait_until(page, "Number(document.body.dataset.playbacks || 0) >= 1", 10))
    status, plays = writer.call("GET", f"/devices/{screen['id']}/playbacks?source=player&limit=50")
    check("the player reported proof-of-play (checked over REST)", status == 200 and len(plays["data"]) >= 1, str(plays)[:300])
    # The product passes its own report: every play posted with its own Idempotency-Key, and the
    # player's traffic (a playlist read every 10 s, not at every ad) fails no readiness check.
    status, posted = writer.call("GET", f"/requests?operation_id=recordDevicePlayback&after={mark}&limit=100")
    posted = posted["data"] if status == 200 else []
    keys = [p["idempotency_key"] for p in posted]
    check("the player's proof-of-play posts each carry their own Idempotency-Key (journal)",
          bool(posted) and all(keys) and len(set(keys)) == len(keys), str(posted)[:300])
    status, ready = writer.call("GET", f"/readiness?after={mark}")
    failed = [c["id"] for c in ready["checks"] if c["status"] == "fail"] if status == 200 else ["no report"]
    check("with the player running, its key's readiness is not red because of the product",
          status == 200 and ready["verdict"] != "not_ready" and not failed, f"{ready.get('verdict')} {failed}")
    page.screenshot(path=str(results / f"player-{WIDE}.png"))
    axe_check(page, f"player at {WIDE} px")
    if qr_ok:
        # The scan in the console (this tab holds the credential).
        code, before = qr_ok
        page.goto(f"{base}/console#/company/{grocers}/promotions")
        page.wait_for_selector(f"[data-qr-id='{code['id']}'] [data-scan-count]")
        shown_count = int(page.get_attribute(f"[data-qr-id='{code['id']}'] [data-scan-count]", "data-scan-count"))
        check("…the scan is visible in the console's promotions view", shown_count >= before + 1, f"{before} -> {shown_count}")


# A poster with its promotion's QR code fully on screen (one slide, faded in).
POSTER_WITH_QR_SHOWN = """(() => { const s = document.querySelectorAll('#stage .slide');
  return s.length === 1 && s[0].matches('.poster.with-qr') && !s[0].matches('.entering') && getComputedStyle(s[0]).opacity === '1'; })()"""
# The poster as drawn (object-fit: contain, so the picture inside its box) and the QR card: apart.
QR_BESIDE_POSTER = """(() => { const img = document.querySelector('#stage .slide img.media.poster');
  const qr = document.querySelector('#stage .slide figure.qr').getBoundingClientRect();
  const box = img.getBoundingClientRect();
  const scale = Math.min(box.width / img.naturalWidth, box.height / img.naturalHeight);
  const w = img.naturalWidth * scale, h = img.naturalHeight * scale;
  const left = box.left + (box.width - w) / 2, top = box.top + (box.height - h) / 2;
  return qr.left >= left + w - 1 || qr.top >= top + h - 1 || qr.right <= left + 1; })()"""


def poster_beside_qr(browser, base, writer, grocers, results):
    """A screen that shows a poster with its promotion's QR code: the code stands beside the
    poster (landscape), covering none of its words."""
    media = {m["id"]: m for m in writer.all(f"/media?company_id={grocers}")}
    target = None
    for d in writer.all(f"/devices?company_id={grocers}"):
        ads = writer.call("GET", f"/devices/{d['id']}/ads?limit=100")[1]["data"]
        if d["orientation"] == "landscape" and any(a["on_air"] and a["promotion_id"] and media.get(a["media_id"], {}).get("content_type") == "image/svg+xml" for a in ads):
            target = d
            break
    if not check("a landscape screen shows a poster with a QR code", target is not None):
        return
    page = browser.new_context(viewport={"width": WIDE, "height": 900}).new_page()
    raw, client = key("northwind-readwrite")
    page.goto(f"{base}/console")
    page.fill("#key-input", raw)
    page.fill("#client-input", client)
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#view h1")
    page.goto(f"{base}/player/{target['id']}?slot=2")
    shown = wait_until(page, POSTER_WITH_QR_SHOWN, 60)
    if shown:
        page.screenshot(path=str(results / f"player-poster-{WIDE}.png"))
    check("a poster's QR code stands beside it, covering none of its words", shown and page.evaluate(QR_BESIDE_POSTER),
          f"{target['name']}: shown {shown}")
    page.context.close()


def qr_scan(page, writer, results):
    """Reads the QR code off a screenshot, follows it as a phone; (code, scans before) or None."""
    shot = page.screenshot(path=str(results / "player-qr.png"))
    decoded = [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(shot))) if r.format == zxingcpp.BarcodeFormat.QRCode]
    shown = page.get_attribute("#stage figure.qr", "data-short-url")
    ad = writer.call("GET", f"/ads/{page.evaluate('document.getElementById(`stage`).dataset.adId')}")[1]
    codes = writer.call("GET", f"/promotions/{ad['promotion_id']}/qr-codes")[1]["data"]
    code = codes[0]
    if not check("zxing-cpp reads the player's QR code from a screenshot: the promotion's short URL",
                 decoded == [code["short_url"]] and shown == code["short_url"], f"{decoded} vs {code['short_url']} (shown {shown})"):
        return None
    before = writer.call("GET", f"/qr-codes/{code['id']}")[1]["scan_count"]
    status, location = follow_once(decoded[0])
    check("following the short URL (as a phone) redirects to the landing page", status in (301, 302, 303, 307, 308) and location, f"{status} {location}")
    after = writer.call("GET", f"/qr-codes/{code['id']}")[1]["scan_count"]
    check("…and counts a scan (REST)", after >= before + 1, f"{before} -> {after}")
    return code, before


def charts(page, base, grocers):
    """Every chart drawn, with data (after the operator's +1 day the fleet has a day of plays)."""
    sign_in(page, base, "northwind-readwrite")
    expected = {
        "overview": ["fleet-health", "plays-per-day", "plays-per-ad", "plays-per-screen", "revenue", "scans-per-day", "scans-by-class"],
        "fleet": ["fleet-health", "sparkline"],
        "ads": ["ad-plays"],
        "promotions": ["scans-per-day", "scans-by-class"],
        "reports": ["report-plays-per-day", "report-plays-per-ad"],
        "tokens": ["token-balance"],
        "billing": ["revenue"],
    }
    for view, names in expected.items():
        page.goto(view_url(base, grocers, view))
        for name in names:
            page.wait_for_selector(f"#view [data-chart='{name}']")
        page.wait_for_load_state("networkidle")
        drawn = page.eval_on_selector_all("#view [data-chart]", "els => els.map(e => [e.dataset.chart, Number(e.dataset.points)])")
        for name in names:
            points = max((p for n, p in drawn if n == name), default=0)
            check(f"{view}: chart {name} renders with data", points > 0, str(drawn[:8]))
        sizes = page.eval_on_selector_all("svg.chart text", "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
        check(f"{view}: chart labels at least 11 px", all(s >= 11 for s in sizes), str(sorted(set(sizes))[:5]))
        titled = page.eval_on_selector_all("#view figure[data-chart]:not(:has(svg.spark))", "els => els.filter(f => f.querySelector('svg.chart') && f.dataset.chart !== 'fleet-health').map(f => [f.dataset.chart, f.querySelectorAll('text.axis-title').length])")
        check(f"{view}: every chart with axes labels them", all(n >= 1 for _, n in titled), str(titled))
    check("a company's pages show its logo in the header", page.is_visible("#brand-logo svg.logo-mark")
          and page.inner_text("#brand") == "Northwind Grocers", page.inner_text("#brand"))
    page.goto(view_url(base, grocers, "media"))
    page.wait_for_selector("#view[data-ready] figure[data-kind='video'] video")
    thumb = wait_until(page, "(() => { const v = document.querySelector(\"figure[data-kind='video'] video\"); return v.readyState >= 2 && v.videoWidth > 0; })()", 10)
    check("media: a video shows a thumbnail (its first frame decoded)", thumb)


# Visible text drawn smaller than 11 px: its computed size times the scale of any SVG it is in (a
# chart squeezed into a phone shrinks its labels with it).
SMALL_TEXT = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n;
  while ((n = walk.nextNode())) {
    const e = n.parentElement;
    if (!e || !n.textContent.trim() || !e.getClientRects().length) continue;
    let size = parseFloat(getComputedStyle(e).fontSize);
    const root = e.closest('svg');
    if (root && root.viewBox.baseVal && root.viewBox.baseVal.width) {
      size *= root.getBoundingClientRect().width / root.viewBox.baseVal.width;
    }
    if (size < 10.95) out.push([e.tagName, Math.round(size * 10) / 10, n.textContent.slice(0, 30)]);
  }
  return out;
}"""


def sweep(browser, base, grocers, screen, results, errors):
    """Every view at desktop and phone width: screenshot, axe-core, no console errors."""
    for width, height in ((WIDE, 900), (390, 844)):
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.goto(base + "/console")
        page.wait_for_selector("#key-form")
        page.screenshot(path=str(results / f"signin-{width}.png"), full_page=True)
        axe_check(page, f"signin at {width} px")
        sign_in(page, base, "northwind-readwrite")
        for view in VIEWS:
            url = view_url(base, grocers, view)
            page.goto(url)
            page.wait_for_selector(f"#view[data-ready='#{url.split('#', 1)[1]}'] h1")
            page.wait_for_load_state("networkidle")
            title = page.inner_text("#view h1").strip()
            check(f"{view} at {width} px renders", title not in ("Something went wrong", "Not available to this credential"), page.inner_text("#view")[:200])
            if width < 500:
                overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                check(f"{view} at {width} px: nothing wider than the screen", overflow <= 1, f"{overflow} px too wide")
            if view == "webhooks" and width >= 1000:
                page.click("button:text-is('Deliveries')")
                page.wait_for_selector("#view table [data-delivery-id], #view p.muted:has-text('No deliveries yet')")
                rows = page.eval_on_selector_all("#view [data-delivery-id]", "els => els.map(e => e.textContent)")
                check("webhooks: deliveries show when each was made and last tried", bool(rows) and all(re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", r) for r in rows), str(rows[:2]))
                check("webhooks: the sandbox's receiver is named, not 127.0.0.1:0", "127.0.0.1:0" not in page.inner_text("#view"), page.inner_text("#view")[:200])
            if view in ("events", "readiness"):
                tabs = page.eval_on_selector_all("#nav a", "els => els.map(a => a.textContent)")
                check(f"{view} at {width} px keeps the company's context (its tabs)", "Fleet" in tabs and "Promotions" in tabs, str(tabs))
            if view == "events":
                loaded = int(page.get_attribute("[data-loaded]", "data-loaded"))
                check(f"events at {width} px: a new tab reads past the last burst (more than one page)", loaded > 100, str(loaded))
            small = page.evaluate(SMALL_TEXT)
            check(f"{view} at {width} px: no text under 11 px as drawn (chart labels included)", not small, str(small[:5]))
            page.screenshot(path=str(results / f"{view}-{width}.png"), full_page=True)
            axe_check(page, f"{view} at {width} px")
            check(f"{view} at {width} px: no console errors", not errors, " | ".join(errors[:5]))
            errors.clear()
        if width >= 1000:
            tops = page.eval_on_selector_all("#nav a", "els => [...new Set(els.map(a => Math.round(a.getBoundingClientRect().top)))]")
            bar = page.evaluate("document.querySelector('header.top .bar').getBoundingClientRect().height")
            check(f"{width} px: the header does not wrap (one bar, one row of tabs)", len(tops) == 1 and bar <= 60, f"tab rows at {tops}, bar {bar} px")
        if width < 500:
            header = page.evaluate("document.querySelector('header.top').getBoundingClientRect().height")
            check("phone: the header is one row", header <= 64, f"{header} px")
            check("phone: Sign out waits in the menu", page.is_hidden("#signout") and page.is_hidden("#nav .nav-signout"))
            page.click("#menu-toggle")
            check("phone: the Menu button opens the views, and Sign out with them",
                  page.is_visible("#nav a") and page.is_visible("#nav .nav-signout") and page.get_attribute("#menu-toggle", "aria-expanded") == "true")
            page.screenshot(path=str(results / "menu-open-390.png"))
        if width < 500:
            # A player with no credential on a phone: the sign-in box fits the screen.
            bare = browser.new_context(viewport={"width": width, "height": height}).new_page()
            bare.goto(f"{base}/player/{screen['id']}")
            bare.wait_for_selector("#key-form:not([hidden])")
            inside = bare.evaluate("(() => { const r = [...document.querySelectorAll('#key-form input, #key-form button')].map(e => e.getBoundingClientRect()); return r.every(b => b.left >= 0 && b.right <= innerWidth); })()")
            bare.screenshot(path=str(results / f"player-signin-{width}.png"))
            check(f"player sign-in at {width} px: every input fits the screen", inside)
            axe_check(bare, f"player sign-in at {width} px")
            bare.context.close()
        page.goto(f"{base}/player/{screen['id']}?slot=3")
        wait_until(page, "Boolean(document.getElementById('stage').dataset.adId)", 15)
        page.wait_for_timeout(500)
        page.screenshot(path=str(results / f"player-{width}.png"))
        axe_check(page, f"player at {width} px")
        sign_in(page, base, "sandbox-operator")
        page.wait_for_selector("[data-now]")
        if width < 500:
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            check(f"sandbox at {width} px: nothing wider than the screen", overflow <= 1, f"{overflow} px too wide")
        page.screenshot(path=str(results / f"sandbox-{width}.png"), full_page=True)
        axe_check(page, f"sandbox at {width} px")
        check(f"sandbox at {width} px: no console errors", not errors, " | ".join(errors[:5]))
        errors.clear()
        context.close()


if __name__ == "__main__":
    main()
