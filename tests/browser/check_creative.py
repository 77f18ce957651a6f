"""Creative shown as designed (issue 49, section 4), in a real browser.

Usage: check_creative.py <signage-binary> <results-dir>

Starts the binary on a free port and, over REST, gives screens of their own one ad each: an
uploaded 1920×1080 PNG (made here with Pillow, a red edge round it), a fixture portrait poster, a
fixture landscape poster and a text-only ad. A player at 1920×1080 then shows: the PNG full screen,
edge to edge (its box covers the window, nothing else is on top of it anywhere, the screenshot's
corners are the PNG's red edge); the portrait poster whole, in the branded frame fitted around it
(the brand's colour beside it), its company's tagline on screen once (in the poster, not also in the
frame); the landscape poster full screen with its tagline once; the text-only ad on the branded
slide; the PNG with a promotion's QR code still fills the window, the code alone over it, in the
bottom-right corner, read off a screenshot by zxing-cpp; and the console's Ads view previews the
PNG full screen and the portrait poster framed. Screenshots go to the results directory. Prints PASS/FAIL lines and `N passed, M failed`.
"""

import io
import json
import sys
import urllib.request
from pathlib import Path

import zxingcpp
from PIL import Image, ImageDraw
from playwright.sync_api import sync_playwright

from kit import Rest, check, company_id, counts, key, sign_in, start_server, until_open, wait_until

W, H = 1920, 1080
RED = (220, 20, 20)

# The one slide of `id` on screen, faded in, the one before it gone.
SHOWN = """(id) => { const s = document.querySelectorAll('#stage .slide');
  return s.length === 1 && s[0].dataset.adId === id && !s[0].matches('.entering')
    && getComputedStyle(s[0]).opacity === '1' && (!s[0].querySelector('img') || s[0].querySelector('img').complete); }"""
# The media's box, and what is on top at a grid of points over the window (the media itself, or not).
COVER = """() => { const m = document.querySelector('#stage .slide .media');
  const r = m.getBoundingClientRect();
  const over = [];
  for (let i = 0; i <= 8; i++) for (let j = 0; j <= 8; j++) {
    const x = Math.min(innerWidth - 1, i * innerWidth / 8), y = Math.min(innerHeight - 1, j * innerHeight / 8);
    const top = document.elementFromPoint(x, y);
    if (top !== m) over.push(`${Math.round(x)},${Math.round(y)}: ${top && top.closest('figure.qr') ? 'QR code' : top ? top.tagName + '.' + top.className : 'nothing'}`);
  }
  return { box: [r.left, r.top, r.right, r.bottom], natural: [m.naturalWidth, m.naturalHeight], over }; }"""
# The picture as drawn inside its box (object-fit: contain): [left, top, right, bottom].
DRAWN = """(() => { const m = document.querySelector('#stage img.media'); const b = m.getBoundingClientRect();
  const k = Math.min(b.width / m.naturalWidth, b.height / m.naturalHeight);
  const w = m.naturalWidth * k, h = m.naturalHeight * k, l = b.left + (b.width - w) / 2, t = b.top + (b.height - h) / 2;
  return [l, t, l + w, t + h]; })()"""
# How often `text` is on screen as text the page shows (hidden elements' text is not counted).
VISIBLE_COUNT = """(text) => document.body.innerText.split(text).length - 1"""


def png_1920x1080():
    """A designed full-screen creative: a red edge (to tell edge to edge in a screenshot), words inside."""
    img = Image.new("RGB", (W, H), (30, 110, 60))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, W - 1, H - 1], outline=RED, width=12)
    draw.text((W // 2 - 200, H // 2), "Designed for 1920 x 1080", fill=(255, 255, 255))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def upload(base, company, data):
    raw, client = key("northwind-readwrite")
    req = urllib.request.Request(f"{base}/media?company_id={company}&filename=full-screen.png", data=data, method="POST",
                                 headers={"X-API-Key": raw, "X-Service-Client-Id": client, "Content-Type": "image/png"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, json.loads(r.read())


def screen_with(writer, grocers, name, ad_fields):
    """A screen of its own with one ad on air: (device id, ad id)."""
    _, device = writer.call("POST", "/devices", {"company_id": grocers, "name": name, "platform": "android"})
    status, ad = writer.call("POST", "/ads", {"company_id": grocers, "name": name, "status": "active", **ad_fields})
    assigned, _ = writer.call("POST", f"/ads/{ad.get('id')}/devices", {"device_id": device.get("id")})
    check(f"{name}: a screen with the ad, over REST", status == 201 and assigned in (200, 201), f"{status} {ad}")
    return device.get("id"), ad.get("id")


def show(page, base, device, ad, name, results):
    # The player plays while its store is open: at night the clock moves on to the opening.
    until_open(base, company_id("Northwind Grocers"))
    page.goto(f"{base}/player/{device}?slot=30")
    shown = wait_until(page, f"({SHOWN})('{ad}')", 20)
    check(f"{name}: the player shows it", shown, page.inner_text("body")[:200])
    shot = results / f"creative-{name.lower().replace(' ', '-')}.png"
    page.screenshot(path=str(shot))
    return Image.open(shot).convert("RGB")


def main():
    binary, results = sys.argv[1], Path(sys.argv[2])
    results.mkdir(parents=True, exist_ok=True)
    proc, base = start_server(binary, results / "creative-server.log")
    try:
        writer = Rest(base, "northwind-readwrite")
        grocers = company_id("Northwind Grocers")
        tagline = writer.call("GET", f"/companies/{grocers}/branding")[1]["tagline"]
        primary = writer.call("GET", f"/companies/{grocers}/branding")[1]["colors"]["primary"]
        status, media = upload(base, grocers, png_1920x1080())
        check("a 1920×1080 PNG uploads with its size", status == 201 and (media["width"], media["height"]) == (W, H), str(media))
        posters = [m for m in writer.all(f"/media?company_id={grocers}") if m["content_type"] == "image/svg+xml"]
        portrait = next(m for m in posters if m["height"] > m["width"])
        landscape = next(m for m in posters if (m["width"], m["height"]) == (W, H))

        full = screen_with(writer, grocers, "Full screen", {"headline": "Designed edge to edge", "media_id": media["id"]})
        framed = screen_with(writer, grocers, "Portrait poster", {"headline": "A portrait poster", "media_id": portrait["id"]})
        wide = screen_with(writer, grocers, "Landscape poster", {"headline": "A landscape poster", "media_id": landscape["id"]})
        text = screen_with(writer, grocers, "Text only", {"headline": "Words alone, on the brand"})
        promotion = next(a["promotion_id"] for a in writer.all(f"/ads?company_id={grocers}") if a["on_air"] and a["promotion_id"])
        short = writer.call("GET", f"/promotions/{promotion}/qr-codes")[1]["data"][0]["short_url"]
        with_qr = screen_with(writer, grocers, "Full screen with QR", {"headline": "Designed, with a QR code",
                                                                       "media_id": media["id"], "promotion_id": promotion})

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_context(viewport={"width": W, "height": H}).new_page()
            sign_in(page, base, "northwind-readwrite")

            shot = show(page, base, *full, "Full screen", results)
            cover = page.evaluate(COVER)
            left, top, right, bottom = cover["box"]
            check("full screen: the PNG's box covers the 1920×1080 window (within 1 px)",
                  left <= 1 and top <= 1 and right >= W - 1 and bottom >= H - 1 and cover["natural"] == [W, H], str(cover))
            check("full screen: nothing lies over the creative (no frame, headline or box)", not cover["over"], str(cover["over"][:6]))
            corners = [shot.getpixel(p) for p in ((3, 3), (W - 4, 3), (3, H - 4), (W - 4, H - 4))]
            check("full screen: the screenshot's four corners are the PNG's own red edge",
                  all(abs(c[0] - RED[0]) < 30 and c[1] < 60 and c[2] < 60 for c in corners), str(corners))
            check("full screen: the headline is not drawn over it (it is the picture's alternative text)",
                  page.locator("#stage .headline").count() == 0
                  and page.get_attribute("#stage img.media", "alt") == "Designed edge to edge")

            shot = show(page, base, *framed, "Portrait poster", results)
            svg = writer_bytes(base, portrait["id"])
            on_screen = page.evaluate(f"({VISIBLE_COUNT})({tagline!r})") + svg.count(tagline)
            check("portrait poster: the company's tagline is on screen once (the poster's own)",
                  on_screen == 1 and svg.count(tagline) == 1, f"{on_screen} times; tagline {tagline!r}")
            check("portrait poster: the branded frame stays, logo and name", page.is_visible("#frame svg.logo-mark")
                  and "Northwind Grocers" in page.inner_text("#frame"))
            box = page.evaluate(DRAWN)
            rgb = tuple(int(primary[i:i + 2], 16) for i in (1, 3, 5))
            # Halfway between the window's left edge and the poster: the brand, not a black bar.
            beside = shot.getpixel((int(box[0]) // 2, H // 2))
            check("portrait poster: whole, with the brand's colour fitted around it",
                  box[1] >= 0 and box[3] <= H and all(abs(a - b) < 8 for a, b in zip(beside, rgb)), f"{box} beside {beside} vs {rgb}")

            show(page, base, *wide, "Landscape poster", results)
            cover = page.evaluate(COVER)
            svg = writer_bytes(base, landscape["id"])
            on_screen = page.evaluate(f"({VISIBLE_COUNT})({tagline!r})") + svg.count(tagline)
            check("landscape poster: full screen, its tagline on screen once",
                  not cover["over"] and cover["box"][0] <= 1 and cover["box"][2] >= W - 1 and on_screen == 1,
                  f"{cover}; tagline {on_screen} times")

            show(page, base, *text, "Text only", results)
            check("text only: the branded slide (frame, tagline and headline)",
                  page.is_visible("#frame-tagline") and page.is_visible("#stage .headline")
                  and page.inner_text("#stage .headline") == "Words alone, on the brand")

            shot = show(page, base, *with_qr, "Full screen with QR", results)
            cover = page.evaluate(COVER)
            qr = page.evaluate("(() => { const r = document.querySelector('#stage figure.qr').getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })()")
            corner = qr[0] > W / 2 and qr[1] > H / 2
            others = [o for o in cover["over"] if not o.endswith(": QR code")]
            decoded = [r.text for r in zxingcpp.read_barcodes(shot) if r.format == zxingcpp.BarcodeFormat.QRCode]
            check("full screen with a QR code: the creative fills the window, the QR code alone over it, in the bottom-right corner",
                  cover["box"][0] <= 1 and cover["box"][2] >= W - 1 and not others and corner, f"{cover}; QR at {qr}")
            check("full screen with a QR code: a phone reads the promotion's short link off a screenshot", decoded == [short],
                  f"{decoded} vs {short}")

            # The console's Ads view previews each ad as a 16:9 screen frames it.
            page.goto(f"{base}/console#/company/{grocers}/ads")
            page.wait_for_selector(f"#view[data-ready] article[data-ad-id='{full[1]}'] .screen img.media")
            card = page.locator(f"article[data-ad-id='{full[1]}'] .screen")
            check("console preview: the 1920×1080 PNG fills its 16:9 screen, no headline over it",
                  card.get_attribute("data-fit") == "full" and card.locator(".screen-headline").count() == 0)
            card.screenshot(path=str(results / "creative-preview-full.png"))
            poster = page.locator(f"article[data-ad-id='{framed[1]}'] .screen")
            check("console preview: the portrait poster is framed, whole",
                  poster.get_attribute("data-fit") == "framed"
                  and poster.locator("img.media").evaluate("m => getComputedStyle(m).objectFit") == "contain")
            poster.screenshot(path=str(results / "creative-preview-portrait.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"{counts['passed']} passed, {counts['failed']} failed")


def writer_bytes(base, media_id):
    raw, client = key("northwind-readwrite")
    req = urllib.request.Request(f"{base}/media/{media_id}/content", headers={"X-API-Key": raw, "X-Service-Client-Id": client})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


if __name__ == "__main__":
    main()
