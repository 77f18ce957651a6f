"""The REST API through the client openapi-python-client generates from /openapi.json.

Checked by `mypy --strict` (no casts, no ignores), then run against a live sandbox:
    python python_check.py --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json
Prints one PASS/FAIL line per check; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import io
import json
import struct
import sys
import zlib
from collections.abc import Callable
from http import HTTPStatus

from signage_client import AuthenticatedClient
from signage_client.api.companies import list_companies
from signage_client.api.devices import create_device, get_device, list_devices, update_device
from signage_client.api.media import download_media, upload_media
from signage_client.api.promotions import get_qr_code_image, list_promotion_qr_codes, list_promotions
from signage_client.models import (
    CompanyList,
    Device,
    DeviceCreate,
    DeviceList,
    DevicePlatform,
    DeviceUpdate,
    Media,
    Problem,
    PromotionList,
    PromotionsFormat,
    QrCodeList,
    UploadMediaFilesBody,
)
from signage_client.types import UNSET, File, Unset

failures = 0


def check(name: str, fn: Callable[[], str]) -> None:
    global failures
    try:
        print(f"PASS python-client {name}: {fn()}")
    except Exception as e:  # a failed check is reported, the others still run
        failures += 1
        print(f"FAIL python-client {name}: {type(e).__name__}: {e}")


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80\x20\x20" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--credentials", required=True)
    args = parser.parse_args()
    with open(args.credentials) as f:
        demo = json.load(f)
    key = next(k for k in demo["keys"] if k["name"] == "northwind-admin")
    # The README's set-up: the key as the bearer token, the client id as a fixed header.
    client = AuthenticatedClient(
        base_url=args.url,
        token=key["rawKey"],
        headers={"X-Service-Client-Id": key["client_id"]},
    )
    state: dict[str, str] = {}

    def companies() -> str:
        page = list_companies.sync(client=client)
        assert isinstance(page, CompanyList), page
        assert page.data, "no companies"
        state["company"] = page.data[0].id
        return f"{len(page.data)} companies, first {page.data[0].name}"

    def device_pages() -> str:
        seen: list[str] = []
        cursor: str | Unset = UNSET
        while True:
            page = list_devices.sync(client=client, limit=3, cursor=cursor)
            assert isinstance(page, DeviceList), page
            seen.extend(d.id for d in page.data)
            if not page.has_more:
                break
            assert isinstance(page.next_cursor, str)
            cursor = page.next_cursor
        assert len(seen) == len(set(seen)) > 3, seen
        return f"{len(seen)} devices over {(len(seen) + 2) // 3} pages"

    def create() -> str:
        body = DeviceCreate(company_id=state["company"], name="Generated client screen", platform=DevicePlatform.ANDROID)
        r = create_device.sync_detailed(client=client, body=body)
        assert r.status_code == HTTPStatus.CREATED, r.content
        assert isinstance(r.parsed, Device)
        state["device"] = r.parsed.id
        return r.parsed.id

    def etag_if_match() -> str:
        r = get_device.sync_detailed(state["device"], client=client)
        etag = r.headers["etag"]
        changed = update_device.sync_detailed(
            state["device"], client=client, body=DeviceUpdate(name="Renamed"), if_match=etag
        )
        assert changed.status_code == HTTPStatus.OK, changed.content
        stale = update_device.sync_detailed(
            state["device"], client=client, body=DeviceUpdate(name="Again"), if_match=etag
        )
        assert stale.status_code == HTTPStatus.PRECONDITION_FAILED, stale.content
        assert isinstance(stale.parsed, Problem)
        return f"{etag} accepted once, then 412 {stale.parsed.type_}"

    def upload() -> str:
        data = png(4, 3)
        form = UploadMediaFilesBody(file=File(payload=io.BytesIO(data), file_name="g.png", mime_type="image/png"))
        r = upload_media.sync_detailed(client=client, body=form, company_id=state["company"], filename="g.png")
        assert r.status_code == HTTPStatus.CREATED, r.content
        assert isinstance(r.parsed, Media)
        got = download_media.sync_detailed(r.parsed.id, client=client)
        assert isinstance(got.parsed, File), got.status_code
        assert got.parsed.payload.read() == data
        return f"{r.parsed.id}, {r.parsed.width}x{r.parsed.height}, downloaded byte for byte"

    def qr_image() -> str:
        promos = list_promotions.sync(client=client)
        assert isinstance(promos, PromotionList)
        for promo in promos.data:
            codes = list_promotion_qr_codes.sync(promo.id, client=client)
            assert isinstance(codes, QrCodeList)
            if codes.data:
                r = get_qr_code_image.sync_detailed(codes.data[0].id, client=client, format_=PromotionsFormat.PNG)
                assert isinstance(r.parsed, File), r.status_code
                head = r.parsed.payload.read(8)
                assert head == b"\x89PNG\r\n\x1a\n", head
                return f"PNG of {codes.data[0].id}"
        raise AssertionError("no QR code in the demo world")

    def not_found() -> str:
        r = get_device.sync_detailed("dev_doesnotexist", client=client)
        assert r.status_code == HTTPStatus.NOT_FOUND
        assert isinstance(r.parsed, Problem), r.parsed
        return f"{r.parsed.status} {r.parsed.type_}: {r.parsed.detail}"

    for name, fn in [
        ("list companies", companies),
        ("walk device pages", device_pages),
        ("create a device", create),
        ("ETag and If-Match", etag_if_match),
        ("upload and download media", upload),
        ("QR image", qr_image),
        ("404 as a typed problem", not_found),
    ]:
        check(name, fn)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
