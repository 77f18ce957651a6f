#!/usr/bin/env python3
"""Every QR code image of a signage server decodes, with a real decoder, to exactly its short URL.

The decoder is zxing-cpp (PyPI `zxing-cpp`, pinned in requirements.txt); PNGs are read by Pillow and
SVGs are rasterised here (the `qrcode` crate draws each dark module as a closed path of straight
segments, which this fills as polygons, at 8 px per unit). For every fixture code visible to the demo
keys, and for a code created now, it checks:
  - the PNG (`GET /qr-codes/{id}/image?format=png`) decodes to exactly `short_url`;
  - the inline SVG of the list and the standalone SVG are the same document, and it decodes to
    exactly `short_url`;
  - (the new code) opening the decoded URL, without following redirects, is a 302 to `redirect_url`.

    python qr_decode_check.py --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json

Prints PASS/FAIL lines and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

import zxingcpp
from PIL import Image, ImageDraw

SCALE = 8
failures = 0


def report(ok: bool, what: str) -> None:
    global failures
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: D401 - urllib's hook
        return None


opener = urllib.request.build_opener(NoRedirect)


def request(base: str, path: str, key: dict | None, method: str = "GET", body: dict | None = None):
    headers = {}
    if key is not None:
        headers["Authorization"] = f"Bearer {key['rawKey']}"
        headers["X-Service-Client-Id"] = key["client_id"]
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(base: str, path: str, key: dict) -> dict:
    status, _, body = request(base, path, key)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:200]!r}")
    return json.loads(body)


def walk(base: str, path: str, key: dict) -> list[dict]:
    items, cursor = [], None
    while True:
        sep = "&" if "?" in path else "?"
        page = get_json(base, f"{path}{sep}limit=100" + (f"&cursor={cursor}" if cursor else ""), key)
        items.extend(page["data"])
        if not page.get("has_more"):
            return items
        cursor = page["next_cursor"]


def decode(image: Image.Image) -> list[str]:
    return [r.text for r in zxingcpp.read_barcodes(image) if r.format == zxingcpp.BarcodeFormat.QRCode]


def rasterise_svg(svg: str) -> Image.Image:
    """Fills the SVG's background rect and every subpath of its path as polygons (M/H/V/L, absolute
    or relative, Z), at SCALE px per user unit."""
    box = re.search(r'viewBox="0 0 ([0-9.]+) ([0-9.]+)"', svg)
    if not box:
        raise ValueError("no viewBox")
    w, h = float(box.group(1)), float(box.group(2))
    img = Image.new("L", (int(w * SCALE), int(h * SCALE)), 255)
    draw = ImageDraw.Draw(img)
    for d in re.findall(r'<path[^>]* d="([^"]+)"', svg):
        tokens = re.findall(r"[MmHhVvLlZz]|-?[0-9.]+", d)
        polys, cur, x, y, i, cmd = [], [], 0.0, 0.0, 0, None
        while i < len(tokens):
            t = tokens[i]
            if t.isalpha():
                cmd = t
                i += 1
                if cmd in "Zz":
                    if cur:
                        polys.append(cur)
                    cur = []
                continue
            if cmd in ("M", "m", "L", "l"):
                dx, dy = float(tokens[i]), float(tokens[i + 1])
                i += 2
                x, y = (x + dx, y + dy) if cmd.islower() else (dx, dy)
                if cmd in "Mm":
                    if cur:
                        polys.append(cur)
                    cur = []
                    cmd = "l" if cmd == "m" else "L"  # further pairs are line-tos
            elif cmd in ("H", "h"):
                v = float(t)
                i += 1
                x = x + v if cmd == "h" else v
            elif cmd in ("V", "v"):
                v = float(t)
                i += 1
                y = y + v if cmd == "v" else v
            else:
                raise ValueError(f"unexpected path data {t!r}")
            cur.append((x * SCALE, y * SCALE))
        if cur:
            polys.append(cur)
        for poly in polys:
            if len(poly) >= 3:
                draw.polygon(poly, fill=0)
    return img


def check_code(base: str, key: dict, code: dict, label: str) -> None:
    short = code["short_url"]
    report(short.endswith("/q/" + code["code"]), f"{label}: short_url ends with /q/{{code}}")
    status, headers, png = request(base, code["image_png_url"], key)
    ok = status == 200 and headers.get("Content-Type", headers.get("content-type")) == "image/png"
    report(ok, f"{label}: PNG served")
    if ok:
        got = decode(Image.open(io.BytesIO(png)))
        report(got == [short], f"{label}: PNG decodes to {short} (got {got})")
    status, _, svg = request(base, f"/qr-codes/{code['id']}/image?format=svg", key)
    report(status == 200 and svg.decode() == code["image_svg"], f"{label}: standalone SVG = inline SVG")
    try:
        got = decode(rasterise_svg(code["image_svg"]))
    except ValueError as e:
        got = [f"unreadable SVG: {e}"]
    report(got == [short], f"{label}: SVG decodes to {short} (got {got})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--credentials", required=True)
    args = ap.parse_args()
    base = args.url.rstrip("/")
    keys = {k["name"]: k for k in json.load(open(args.credentials, encoding="utf-8"))["keys"]}

    fixture_codes = 0
    for name in ["northwind-readonly", "harborview-readwrite"]:
        key = keys[name]
        for promo in walk(base, "/promotions", key):
            for code in walk(base, f"/promotions/{promo['id']}/qr-codes", key):
                check_code(base, key, code, f"fixture {code['id']} ({promo['name']} / {code['label']})")
                fixture_codes += 1
    report(fixture_codes == 19, f"the fixtures' 19 QR codes were checked (got {fixture_codes})")

    writer = keys["northwind-readwrite"]
    promo = walk(base, "/promotions", writer)[0]
    status, _, body = request(base, f"/promotions/{promo['id']}/qr-codes", writer, "POST",
                              {"label": "Decoder check", "utm": {"source": "signage", "medium": "qr"}})
    report(status == 201, f"create a QR code on {promo['id']}: {status}")
    if status == 201:
        code = json.loads(body)
        check_code(base, writer, code, f"new {code['id']}")
        got = decode(Image.open(io.BytesIO(request(base, code["image_png_url"], writer)[2])))
        if got:
            status, headers, _ = request(got[0], "", None)
            location = headers.get("Location", headers.get("location"))
            # The sandbox's own landing page is a relative redirect (the phone stays on the host it
            # scanned); resolved against the scanned URL it is the code's redirect_url.
            landed = urllib.parse.urljoin(got[0], location or "")
            report(status == 302 and landed == code["redirect_url"],
                   f"the decoded URL redirects to redirect_url ({status} {location})")
            status, headers, page = request(landed, "", None)
            kind = headers.get("Content-Type", headers.get("content-type", ""))
            report(status == 200 and kind.startswith("text/html"),
                   f"the phone lands on a page, not an error ({status} {kind})")
            after = get_json(base, f"/qr-codes/{code['id']}", writer)
            report(after["scan_count"] == 1, f"the scan was counted ({after['scan_count']})")

    print(f"qr decode: {failures} failure(s)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
