"""The demo as a presenter tells it, end to end, in a real browser:

`signage demo` starts; its one link signs the console in (the demo key with the operator's controls,
no key pasted, the link works once); the console registers a screen, creates a promotion with its
QR code, activates it, makes an ad of it for that screen; the screen's player opens from the Fleet
view signed in and shows the ad; its QR code is read from a screenshot; a phone (390 px) opens it
and lands on the promotion's branded page; the console's count moves without a reload ("just
scanned"). Then a media upload by drag and drop (the storage line moves), an ad of it made in the
console on the player within 2 s, the proof-of-play report
with its CSV; then the presenter moves time (+1 day, +1 week, +1 month from the Sandbox view) and
opens the month's new invoice; an ended promotion without Activate, and the terminal holding the
banner and nothing else."""

import io
import os
import re
import subprocess
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import zxingcpp
from PIL import Image

from kit import Rest, axe_check, check, company_id, free_port, until_open, wait_until

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"


def start_demo(binary, results):
    """`signage demo` on a free loopback port; its banner, and the process (its log to a file)."""
    port = free_port()
    env = dict(os.environ, SIGNAGE_RATE_LIMIT_PER_SECOND="1000", SIGNAGE_RATE_LIMIT_BURST="2000")
    env.pop("SIGNAGE_LOG_LEVEL", None)
    out = open(results / "story-demo-stdout.txt", "w")
    err = open(results / "story-demo-stderr.txt", "w")
    proc = subprocess.Popen([binary, "demo", "--listen", f"127.0.0.1:{port}"], stdout=out, stderr=err,
                            stdin=subprocess.PIPE, env=env, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        text = (results / "story-demo-stdout.txt").read_text()
        if "Press Enter" in text:
            return proc, base, text
        time.sleep(0.1)
    raise SystemExit("signage demo printed no banner")


def story(binary, browser, results):
    proc, base, banner = start_demo(binary, results)
    try:
        run(browser, base, banner, proc, results)
    finally:
        proc.terminate()
        proc.wait(10)
    err = (results / "story-demo-stderr.txt").read_text()
    out = (results / "story-demo-stdout.txt").read_text()
    noisy = [line for line in (out + err).splitlines() if " INFO " in line or "request" in line.lower() and "GET /" in line]
    check("demo: the terminal keeps to the banner and warnings (no request log)", not noisy, "\n".join(noisy[:5]))


def run(browser, base, banner, proc, results):
    writer = Rest(base, "northwind-readwrite")
    grocers = company_id("Northwind Grocers")
    console_link = next((line.split()[1] for line in banner.splitlines() if line.strip().startswith("Console ")), "")
    check("demo: the banner prints one sign-in link for the console", re.match(r"^http://127\.0\.0\.1:\d+/console#signin=[0-9a-f]{64}$", console_link) is not None, banner[:600])
    check("demo: the banner holds no operator key to paste", "sandbox-operator" not in banner, banner[:600])

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(console_link)
    page.wait_for_selector("body[data-auth='in']", timeout=15000)
    page.wait_for_selector("#view[data-ready] h1")
    print(f"INFO signed in by the link in {(time.perf_counter() - t0) * 1000:.0f} ms")
    check("story: the link signs the console in, with no key typed", page.get_attribute("body", "data-auth") == "in")
    check("story: the link left the address bar", "signin" not in page.url, page.url)
    links = page.eval_on_selector_all("#nav a", "els => els.map(a => a.textContent)")
    check("story: the demo console holds the operator's controls (Sandbox) beside the company views",
          "Sandbox" in links and "Companies" in links, str(links))
    # The link works once: a second tab cannot reuse it.
    other = context.new_page()
    other.goto(console_link)
    other.wait_for_selector("#signin-error:not([hidden])", timeout=15000)
    check("story: the sign-in link works once (a second use is refused, in words)",
          "did not work" in other.inner_text("#signin-error") and "already used" in other.inner_text("#signin-error"),
          other.inner_text("#signin-error"))
    other.close()
    page.screenshot(path=str(results / "story-signed-in-1440.png"))

    # Register a screen for the story.
    page.goto(f"{base}/console#/company/{grocers}/fleet")
    page.wait_for_selector("#view[data-ready] button.tile")
    page.click("text=Register a screen")
    page.fill("form.form-card input[name=name]", "Story Screen")
    page.fill("form.form-card input[name=location]", "Amsterdam Centraal store, demo table")
    page.click("form.form-card button[type=submit]")
    page.wait_for_selector("text=Story Screen is registered")
    screens = [d for d in writer.all(f"/devices?company_id={grocers}") if d["name"] == "Story Screen"]
    check("story: the console registers a screen (REST)", len(screens) == 1, str(screens))
    screen_id = screens[0]["id"] if screens else None

    # A promotion with its QR code, made in the console.
    page.goto(f"{base}/console#/company/{grocers}/promotions")
    page.wait_for_selector("#view[data-ready] article[data-promotion-id]")
    page.click("text=New promotion")
    # A mistake first: said in words, on the field, without the code markup of the API's text.
    page.fill("form.form-card input[name=name]", "Story Cheese Week")
    page.fill("form.form-card input[name=ends_at]", "2020-01-01T00:00")
    page.click("form.form-card button[type=submit]")
    page.wait_for_selector("form.form-card .field-error", timeout=15000)
    said = page.inner_text("form.form-card")
    check("story: a refused form says why in words, on the field (no backticks, no raw code)",
          "`" not in said and page.get_attribute("form.form-card input[name=ends_at]", "aria-invalid") == "true"
          and "Ends" in page.inner_text("form.form-card .problem"), said[-300:])
    page.fill("form.form-card input[name=ends_at]", time.strftime("%Y-%m-%dT%H:00", time.gmtime(time.time() + 14 * 86400)))
    page.fill("form.form-card input[name=description]", "15% off every cheese at the counter.")
    page.fill("form.form-card input[name=discount_percent]", "15")
    page.fill("form.form-card input[name=activation_cost_tokens]", "30")
    page.fill("form.form-card input[name=label]", "Counter screen")
    page.screenshot(path=str(results / "story-new-promotion-1440.png"), full_page=True)
    axe_check(page, "new promotion form at 1440 px")
    page.click("form.form-card button[type=submit]")
    page.wait_for_selector("article[data-promotion-id] h2:text-is('Story Cheese Week')", timeout=15000)
    made = [p for p in writer.all(f"/promotions?company_id={grocers}") if p["name"] == "Story Cheese Week"]
    promotion = made[0] if made else {}
    codes = writer.call("GET", f"/promotions/{promotion.get('id')}/qr-codes")[1]["data"] if made else []
    check("story: the console creates the promotion and its QR code (REST)",
          len(made) == 1 and promotion["landing_url"] is None and len(codes) == 1 and codes[0]["label"] == "Counter screen", str(made)[:300])
    check("…whose QR code lands on the sandbox's landing page", bool(codes) and "/l/" in codes[0]["target_url"], str(codes)[:200])
    card = f"article[data-promotion-id='{promotion.get('id')}']"
    page.click(f"{card} button:text-is('Activate')")
    page.wait_for_selector("#dialog[open]")
    page.click("#dialog-ok")
    page.wait_for_selector(f"{card}[data-state='active']", timeout=15000)
    check("story: activated in the console (REST)", writer.call("GET", f"/promotions/{promotion.get('id')}")[1]["state"] == "active")

    # An expired promotion offers no Activate, and says why.
    ended = page.query_selector("article[data-state='expired']")
    check("story: an ended promotion offers no Activate, and its dates can be changed instead",
          ended is not None and not ended.query_selector("button:text-is('Activate')") and ended.query_selector("button:text-is('Change dates')") is not None)

    # An ad of it, on the story's screen, with the produce photo.
    page.goto(f"{base}/console#/company/{grocers}/ads")
    page.wait_for_selector("#view[data-ready] article.ad-card")
    page.click("text=New ad")
    page.fill("form.form-card input[name=name]", "Story cheese - counter")
    page.fill("form.form-card input[name=headline]", "15% off every cheese this week")
    media_id = next(m["id"] for m in writer.all(f"/media?company_id={grocers}") if m["filename"] == "produce-aisle.jpg")
    page.select_option("form.form-card select[name=media_id]", media_id)
    page.select_option("form.form-card select[name=promotion_id]", promotion.get("id"))
    page.fill("form.form-card input[name=duration_seconds]", "6")
    page.check(f"form.form-card input[name=screen][value='{screen_id}']")
    page.click("form.form-card button[type=submit]")
    page.wait_for_selector("text=Story cheese - counter is created", timeout=15000)
    ads = [a for a in writer.all(f"/ads?company_id={grocers}") if a["name"] == "Story cheese - counter"]
    check("story: the console creates the ad and puts it on the screen (REST)",
          len(ads) == 1 and ads[0]["device_ids"] == [screen_id] and ads[0]["on_air"] and ads[0]["media_id"] == media_id, str(ads)[:300])
    ad_id = ads[0]["id"] if ads else ""

    # The screen's player, opened from the Fleet view: a new tab, signed in by a one-use link. It
    # plays while its store is open: at night the clock moves on to the opening.
    until_open(base, grocers)
    page.goto(f"{base}/console#/company/{grocers}/fleet")
    page.wait_for_selector(f"#view[data-ready] [data-open-player='{screen_id}']")
    with context.expect_page() as opened:
        page.click(f"[data-open-player='{screen_id}']")
    player = opened.value
    player.set_viewport_size({"width": 1440, "height": 900})
    player.wait_for_url(re.compile(r".*/player/.*"), timeout=15000)
    shown = wait_until(player, f"document.getElementById('stage').dataset.adId === '{ad_id}' && document.getElementById('stage').children.length === 1 && !document.querySelector('#stage .entering')", 30)
    check("story: the player opens from the console signed in (no key asked) and plays the new ad",
          shown and player.is_hidden("#key-form"), player.inner_text("body")[:200])
    player.wait_for_timeout(900)
    shot = player.screenshot(path=str(results / "story-player-1440.png"))
    decoded = [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(shot))) if r.format == zxingcpp.BarcodeFormat.QRCode]
    short = codes[0]["short_url"] if codes else None
    check("story: the QR code on the player, read from a screenshot, is the promotion's short link", decoded == [short], f"{decoded} vs {short}")

    # The phone: opens the link, lands on the promotion's page; the console's count moves.
    page.goto(f"{base}/console#/company/{grocers}/promotions")
    count = f"[data-qr-id='{codes[0]['id'] if codes else ''}'] [data-scan-count]"
    page.wait_for_selector(f"#view[data-ready] {count}")
    before = int(page.get_attribute(count, "data-scan-count"))
    phone = browser.new_context(viewport={"width": 390, "height": 844}, user_agent=IPHONE, is_mobile=True, has_touch=True)
    mobile = phone.new_page()
    resp = mobile.goto(decoded[0] if decoded else f"{base}/q/none")
    html = mobile.content()
    check("story: the phone lands on the promotion's branded page (the sandbox serves it)",
          resp is not None and resp.status == 200 and "/l/" in mobile.url and "Story Cheese Week" in html
          and "Northwind Grocers" in html and "15% off" in html and "On now" in html, f"{mobile.url} {html[:300]}")
    overflow = mobile.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    check("story: the landing page fits a phone (390 px)", overflow <= 1, f"{overflow} px too wide")
    mobile.screenshot(path=str(results / "landing-390.png"), full_page=True)
    landing_url = mobile.url
    phone.close()
    moved = wait_until(page, f"Number(document.querySelector(\"{count}\").dataset.scanCount) >= {before + 1}", 10)
    check("story: the console shows the scan without a reload: the count moves, 'just scanned'",
          moved and page.is_visible(f"[data-qr-id='{codes[0]['id'] if codes else ''}'] .just") and "Scanned just now" in page.inner_text("[data-live-scan]"),
          page.inner_text("#view")[:300])
    page.screenshot(path=str(results / "story-scanned-1440.png"))
    # The landing page at desktop width too, checked by axe (its own CSP allows the checker in via a
    # context that bypasses it).
    desk = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    landing = desk.new_page()
    landing.goto(landing_url)
    landing.screenshot(path=str(results / "landing-1440.png"), full_page=True)
    axe_check(landing, "landing page at 1440 px")
    phone2 = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    landing2 = phone2.new_page()
    landing2.goto(landing_url)
    axe_check(landing2, "landing page at 390 px")
    desk.close()
    phone2.close()

    # Media by drag and drop, with the storage line.
    page.goto(f"{base}/console#/company/{grocers}/media")
    page.wait_for_selector("#view[data-ready] [data-drop]")
    used = int(page.get_attribute(".storage", "data-used"))
    png = (Image.new("RGB", (640, 360), (31, 111, 235)))
    buf = io.BytesIO()
    png.save(buf, "PNG")
    data = list(buf.getvalue())
    page.evaluate("""(bytes) => {
        const file = new File([new Uint8Array(bytes)], 'story-drop.png', { type: 'image/png' });
        const dt = new DataTransfer();
        dt.items.add(file);
        const zone = document.querySelector('[data-drop]');
        for (const type of ['dragenter', 'dragover', 'drop']) zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }""", data)
    page.wait_for_selector("[data-uploaded]", timeout=15000)
    page.wait_for_selector(f".storage:not([data-used='{used}'])", timeout=15000)
    after_used = int(page.get_attribute(".storage", "data-used"))
    usage = writer.call("GET", f"/media/usage?company_id={grocers}")[1]
    check("story: a file dropped on the Media view is uploaded; the storage line is the library's real size",
          after_used == used + len(data) and usage["used_bytes"] == after_used, f"{used} + {len(data)} -> {after_used} ({usage})")

    # An ad of the picture just uploaded, made in the console for the story's screen: on its player
    # within 2 s of the console saying it is made (the assignment moves the screen's ETag).
    page.goto(f"{base}/console#/company/{grocers}/ads")
    page.wait_for_selector("#view[data-ready] article.ad-card")
    page.click("text=New ad")
    page.fill("form.form-card input[name=name]", "Story drop - counter")
    page.fill("form.form-card input[name=headline]", "Dropped in, on screen")
    dropped = next((m["id"] for m in writer.all(f"/media?company_id={grocers}") if m["filename"] == "story-drop.png"), "")
    page.select_option("form.form-card select[name=media_id]", dropped)
    page.check(f"form.form-card input[name=screen][value='{screen_id}']")
    page.click("form.form-card button[type=submit]")
    page.wait_for_selector("text=Story drop - counter is created", timeout=15000)
    made = time.time()
    drop_ad = next((a["id"] for a in writer.all(f"/ads?company_id={grocers}") if a["name"] == "Story drop - counter"), "")
    on_screen = wait_until(player, f"document.getElementById('stage').dataset.adId === '{drop_ad}'", 10)
    waited = time.time() - made
    check("story: an ad of the uploaded picture, made in the console, is on the player within 2 s",
          bool(dropped) and on_screen and waited < 2, f"{dropped} {drop_ad}: shown {on_screen} after {waited:.1f} s")
    player.wait_for_timeout(900)
    player.screenshot(path=str(results / "story-uploaded-on-player-1440.png"))
    print(f"  measured: an ad of uploaded media, made in the console, on the player {waited:.2f} s after 'created'")

    # The proof-of-play report: a range, and its CSV.
    # A range that ended yesterday: nothing moves while the report is read and downloaded.
    today = time.strftime("%Y-%m-%d", time.gmtime())
    yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86400))
    week = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 7 * 86400))
    page.goto(f"{base}/console#/company/{grocers}/reports?from={week}&to={yesterday}")
    page.wait_for_selector("#view[data-ready] [data-plays]")
    check("story: the report's range is in its URL and its form", page.input_value("input[name=from]") == week
          and page.input_value("input[name=to]") == yesterday and today not in page.inner_text("figcaption"), page.inner_text("#view")[:200])
    plays = int(page.get_attribute("[data-plays]", "data-plays"))
    with page.expect_download() as dl:
        page.click("[data-csv]")
    with open(dl.value.path(), encoding="utf-8", newline="") as f:
        csv = f.read()
    rows = [line.split(",") for line in csv.strip().split("\r\n")[1:]]
    check("story: the report downloads as CSV, whose plays add up to the report's",
          csv.startswith("date,company_id,device_id,device_name,ad_id,ad_name,plays,seconds") and sum(int(r[6]) for r in rows) == plays,
          f"{plays} vs {sum(int(r[6]) for r in rows) if rows else 0}")
    page.screenshot(path=str(results / "story-report-1440.png"), full_page=True)

    # The presenter moves time: +1 day, +1 week, +1 month from the Sandbox view, the clock and the
    # screen's plays moving with each jump; then a month's invoice opened as a document.
    operator = Rest(base, "sandbox-operator")
    page.goto(f"{base}/console#/sandbox")
    jumps = [("+1 day", "one day", timedelta(days=1)), ("+1 week", "one week", timedelta(days=7)), ("+1 month", "one month", None)]
    for button, label, span in jumps:
        page.wait_for_selector(f"#view[data-ready] button:text-is('{button}')")
        before = clock_now(operator)
        page.click(f"#view button:text-is('{button}')")
        done = wait_until(page, f"(document.querySelector('#view [role=status]') || {{}}).textContent?.startsWith('Advanced {label}')", 90)
        after = clock_now(operator)
        if span is None:
            month_on = before.month % 12 + 1
            moved = after.month == month_on and after.day == before.day and after - before < timedelta(days=32)
        else:
            moved = span <= after - before < span + timedelta(minutes=5)
        check(f"story: '{button}' moves the sandbox clock by {label}", done and moved, f"{before} -> {after}")
    page.screenshot(path=str(results / "story-sandbox-after-jumps-1440.png"), full_page=True)
    invoices = writer.all(f"/invoices?company_id={grocers}")
    newest = max(invoices, key=lambda i: i["period_start"]) if invoices else None
    check("story: the month's jump billed the month (a new open invoice)", newest is not None and newest["status"] == "open"
          and len(invoices) >= 4, str([(i["number"], i["status"]) for i in invoices]))
    if newest:
        detail = writer.call("GET", f"/invoices/{newest['id']}")[1]
        page.goto(f"{base}/console#/company/{grocers}/billing")
        page.wait_for_selector(f"#view[data-ready] a:text-is('{newest['number']}')")
        page.click(f"#view a:text-is('{newest['number']}')")
        page.wait_for_selector(f"#view[data-ready] article.invoice[data-invoice='{newest['id']}']")
        total = page.get_attribute("#view tr[data-total]", "data-total")
        check("story: the invoice opens in the console, its total the API's",
              page.inner_text("#view h1") == f"Invoice {newest['number']}" and total == str(detail["total_cents"]),
              f"{page.inner_text('#view h1')} {total} vs {detail['total_cents']}")
        page.screenshot(path=str(results / "story-invoice-1440.png"), full_page=True)

    # Enter in the terminal: fresh links.
    proc.stdin.write("\n")
    proc.stdin.flush()
    fresh = wait_for_text(proc, results, 2)
    check("demo: Enter prints fresh sign-in links", fresh, "")
    context.close()


def clock_now(rest):
    """The sandbox clock's now, as the operator's API says it."""
    status, body = rest.call("GET", "/_sandbox/clock")
    if status != 200:
        raise SystemExit(f"GET /_sandbox/clock: {status} {body}")
    return datetime.fromisoformat(body["now"].replace("Z", "+00:00")).astimezone(timezone.utc)


def wait_for_text(proc, results, occurrences):
    deadline = time.time() + 10
    while time.time() < deadline:
        text = (results / "story-demo-stdout.txt").read_text()
        if text.count("Console   ") >= occurrences:
            return True
        time.sleep(0.2)
    return False


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()
