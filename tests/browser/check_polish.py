"""A demo that reads like a product (issue 49, sections 4 and 5), in a real browser (Debian's chromium,
Playwright).

Usage: check_polish.py <signage-binary> <results-dir>

- `signage demo`: Enter prints a fresh QR code for the phone (read by zxing-cpp), which signs a phone
  in; the same link a second time says what to do, truthfully.
- Signing in by a link lands on the view without a frame around the page.
- The first view of Fleet: the screens the demo opens as players say what they play.
- Date and time fields are written as the console writes times ("2026-12-07 10:00"), in the zone
  their label names, not in the browser's locale ("12/07/2026, 10:00 AM").
- An uploaded MP4 shows its width, height and length, as the fixture video does; a file that only
  starts like an MP4 is refused, saying so.

Screenshots go to the results directory. Prints one PASS/FAIL line per check and `N passed, M failed`.
"""

import os
import queue
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from playwright.sync_api import sync_playwright

from demo_checks import read_terminal_qr
from kit import (REPO, Rest, axe_check, check, company_id, counts, free_port, open_spans, sign_in, start_server,
                 wait_until)

IPHONE_13 = {
    "viewport": {"width": 390, "height": 844}, "device_scale_factor": 3, "is_mobile": True, "has_touch": True,
    "user_agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
}
BANNER_SCREENS = ["Entrance Screen 1", "Checkout Screen 1"]


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    results.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        fresh_qr_on_enter(binary, browser, results)
        proc, base = start_server(binary, results / "polish-server.log")
        try:
            link_lands_without_a_frame(browser, base, results)
            fleet_first_view(browser, base, results)
            date_fields(browser, base, results)
            mp4_upload(browser, base, results)
        finally:
            proc.terminate()
            proc.wait(10)
        browser.close()
    print(f"{counts['passed']} passed, {counts['failed']} failed")


def output_lines(proc):
    """A queue of `proc`'s output lines, read by a thread (a read never blocks a check)."""
    q = queue.Queue()

    def pump():
        for line in proc.stdout:
            q.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return q


def read_banner(lines_in, lines, seconds=60):
    """Lines of `signage demo`'s output up to the next "Ctrl-C to stop" (`seconds` at most)."""
    out = []
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            line = lines_in.get(timeout=max(0.1, deadline - time.time()))
        except queue.Empty:
            break
        out.append(line)
        if "Ctrl-C to stop" in line:
            break
    lines += out
    return out


def fresh_qr_on_enter(binary, browser, results):
    port = free_port()
    env = dict(os.environ, SIGNAGE_LOG_LEVEL="warn")
    proc = subprocess.Popen([binary, "demo", "--listen", f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.PIPE, env=env, text=True)
    base = f"http://127.0.0.1:{port}"
    lines = []
    try:
        lines_in = output_lines(proc)
        first = read_banner(lines_in, lines)
        proc.stdin.write("\n")
        proc.stdin.flush()
        again = read_banner(lines_in, lines, 15)
        (results / "polish-demo-output.txt").write_text("\n".join(lines) + "\n")
        before = read_terminal_qr(first, results / "polish-terminal-qr-1.png")
        after = read_terminal_qr(again, results / "polish-terminal-qr-2.png")
        check("demo: Enter prints a fresh QR code for the phone, a sign-in link of its own",
              len(before) == 1 and len(after) == 1 and after[0] != before[0]
              and after[0].startswith(f"{base}/console#signin="), f"{before} then {after}")
        check("demo: the banner says Enter prints a fresh QR code",
              any("Press Enter for fresh sign-in links and a fresh QR code" in l for l in again), "\n".join(again[-3:]))
        if not after:
            return
        # The fresh code signs a phone in; the same link again says what to do about it.
        phone = browser.new_context(**IPHONE_13)
        page = phone.new_page()
        page.goto(after[0])
        page.wait_for_selector("body[data-auth=in] #view[data-ready]", timeout=20000)
        check("phone: the fresh QR code's link signs the console in", page.get_attribute("body", "data-auth") == "in")
        page.screenshot(path=str(results / "polish-phone-signed-in-390.png"))
        phone.close()
        phone = browser.new_context(**IPHONE_13)
        page = phone.new_page()
        page.goto(after[0])
        page.wait_for_selector("#signin-error:not([hidden])")
        said = page.inner_text("#signin-error")
        check("phone: a used link says Enter in the demo's terminal prints a fresh QR code to scan",
              "This sign-in link did not work" in said and "Enter in the terminal running signage demo prints fresh links "
              "and a fresh QR code to scan" in said and "`" not in said, said)
        page.screenshot(path=str(results / "polish-phone-used-link-390.png"), full_page=True)
        axe_check(page, "phone: used sign-in link")
        phone.close()
    finally:
        proc.terminate()
        proc.wait(10)


def link_lands_without_a_frame(browser, base, results):
    writer = Rest(base, "northwind-readwrite")
    status, link = writer.call("POST", "/auth/sign-in-links", {"path": "/console"})
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(base + link["path"])
    page.wait_for_selector("body[data-auth=in] #view[data-ready]")
    page.wait_for_timeout(300)
    focus = page.evaluate("""() => {
      const a = document.activeElement, s = getComputedStyle(a);
      return { id: a.id, style: s.outlineStyle, width: s.outlineWidth };
    }""")
    check("sign-in by a link: the view has the focus (for a screen reader) without a frame around it",
          status == 201 and focus["id"] == "main" and (focus["style"] == "none" or focus["width"] == "0px"), focus)
    page.screenshot(path=str(results / "polish-signed-in-by-link-1440.png"))
    # A control reached by the keyboard still shows where it is.
    page.keyboard.press("Tab")
    ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    check("sign-in by a link: the keyboard's focus on a control is still drawn", ring not in ("none", ""), ring)
    context.close()


def fleet_first_view(browser, base, results):
    grocers = company_id("Northwind Grocers")
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    sign_in(page, base, "northwind-readonly")
    page.goto(f"{base}/console#/company/{grocers}/fleet")
    page.wait_for_selector("#view[data-ready] .tile")
    tiles = page.eval_on_selector_all(".tile", """ts => ts.map(t => ({
      name: t.querySelector('h3').textContent, status: t.querySelector('.status').textContent,
      playing: Boolean(t.querySelector('[data-playing]')), text: t.innerText }))""")
    banner = [t for t in tiles if t["name"] in BANNER_SCREENS]
    # The screens play while the store is open (its opening hours, in its time zone); at night they
    # are on and say when it opens.
    company = Rest(base, "northwind-readonly").call("GET", f"/companies/{grocers}")[1]
    now = datetime.now(timezone.utc)
    if open_spans(company, now, now + timedelta(seconds=1)):
        check("fleet, first view: the screens the demo opens are online and say what they play",
              len(banner) == 2 and all(t["status"] == "online" and t["playing"] and "Nothing playing" not in t["text"]
                                       and "Playing: " in t["text"] for t in banner), banner)
    else:
        check("fleet, first view (the store closed now): the screens the demo opens are on and say when it opens",
              len(banner) == 2 and all(t["status"].startswith("closed · opens") and "Playing: " not in t["text"]
                                       for t in banner), banner)
    page.screenshot(path=str(results / "polish-fleet-first-view-1440.png"))
    context.close()


def date_fields(browser, base, results):
    grocers = company_id("Northwind Grocers")
    context = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US")
    page = context.new_page()
    sign_in(page, base, "northwind-readwrite")
    page.goto(f"{base}/console#/company/{grocers}/promotions")
    page.wait_for_selector("#view[data-ready]")
    page.click("#view button:text-is('New promotion')")
    page.wait_for_selector("form.form-card input[name=starts_at]")
    fields = page.eval_on_selector_all("form.form-card input[name=starts_at], form.form-card input[name=ends_at]", """is => is.map(i => ({
      type: i.type, value: i.value, label: i.closest('label') ? i.closest('label').innerText : document.querySelector(`label[for='${i.id}']`)?.innerText }))""")
    # The header ticks every second, in the zone of the company in view.
    wait_until(page, "/\\d{2}:\\d{2} CES?T/.test(document.querySelector('#sandbox-time').textContent)", 3)
    header = page.inner_text("#sandbox-time time")
    check("promotion form: starts and ends are written as the header's time is (2026-12-07 10:00), in Europe/Amsterdam",
          len(fields) == 2 and all(f["type"] == "text" and re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", f["value"])
                                   and "Europe/Amsterdam" in (f["label"] or "") for f in fields)
          and re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} CES?T", header.strip()), f"{fields} beside {header!r}")
    page.screenshot(path=str(results / "polish-promotion-form-dates-1440.png"), full_page=True)
    # A promotion made with them starts at the wall time typed, in Amsterdam.
    page.fill("form.form-card input[name=name]", "Polish Week")
    page.fill("form.form-card input[name=starts_at]", "2030-03-30 09:00")
    page.fill("form.form-card input[name=ends_at]", "2030-04-06 18:30")
    page.click("form.form-card button[type=submit]")
    promo, deadline = None, time.time() + 15
    while promo is None and time.time() < deadline:
        rows = Rest(base, "northwind-readonly").all(f"/promotions?company_id={grocers}")
        promo = next((p for p in rows if p["name"] == "Polish Week"), None)
        time.sleep(0.3)
    made = page.inner_text("#view")[:300]
    check("promotion form: the typed wall times are read in Europe/Amsterdam (CET, then CEST after 31 March 2030)",
          promo is not None and promo["starts_at"] == "2030-03-30T08:00:00Z" and promo["ends_at"] == "2030-04-06T16:30:00Z",
          f"{made} {promo and (promo['starts_at'], promo['ends_at'])}")
    # The report's days too.
    page.goto(f"{base}/console#/company/{grocers}/reports")
    page.wait_for_selector("#view[data-ready] input[name=from]")
    days = page.eval_on_selector_all("input[name=from], input[name=to]", "is => is.map(i => [i.type, i.value])")
    check("report form: its days are written 2026-12-07, not in the browser's locale",
          len(days) == 2 and all(t == "text" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) for t, v in days), days)
    page.screenshot(path=str(results / "polish-report-form-dates-1440.png"))
    axe_check(page, "report form")
    context.close()


def mp4_upload(browser, base, results):
    grocers = company_id("Northwind Grocers")
    video = (REPO / "fixtures" / "media" / "store-loop.mp4").read_bytes()
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    sign_in(page, base, "northwind-readwrite")
    page.goto(f"{base}/console#/company/{grocers}/media")
    page.wait_for_selector("#view[data-ready] #media-files", state="attached")
    page.set_input_files("#media-files", files=[{"name": "uploaded-loop.mp4", "mimeType": "video/mp4", "buffer": video}])
    page.wait_for_selector("[data-uploaded]", timeout=20000)
    wait_until(page, "[...document.querySelectorAll('figcaption')].some(f => f.textContent.startsWith('uploaded-loop.mp4'))", 10)
    caption = page.evaluate("[...document.querySelectorAll('figcaption')].map(f => f.textContent).find(t => t.startsWith('uploaded-loop.mp4')) || ''")
    check("media: an uploaded MP4 shows its size and length, as the fixture video does (1280×720 · 12 s)",
          caption.endswith("1280×720 · 12 s"), caption)
    page.screenshot(path=str(results / "polish-media-mp4-1440.png"))
    # Bytes that only start like an MP4: refused, saying why.
    page.set_input_files("#media-files", files=[{"name": "broken.mp4", "mimeType": "video/mp4", "buffer": video[:4000]}])
    wait_until(page, "document.querySelector('#view .problem') !== null || document.querySelectorAll('[data-uploaded]').length > 1", 20)
    said = page.inner_text("#view .problem") if page.query_selector("#view .problem") else "(stored)"
    check("media: a cut MP4 is refused, saying it is not a valid video/mp4 file",
          "not a valid video/mp4 file" in said, said)
    page.screenshot(path=str(results / "polish-media-broken-mp4-1440.png"))
    context.close()


if __name__ == "__main__":
    main()
