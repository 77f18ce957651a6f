"""Webhook deliveries checked by the official Standard Webhooks verifier (PyPI `standardwebhooks`).

A receiver on 127.0.0.1 verifies every delivery it gets with `Webhook(secret).verify(body, headers)`
(signature and timestamp tolerance); a scripted run makes deliveries of several event types, a
test event, and a secret rotation (during its grace period a delivery carries two signatures, and
the verifier must accept it with either secret). Prints PASS/FAIL lines; exits 1 on any failure.

The verifier is used as shipped, unpatched: it accepts timestamps within 5 minutes of the wall clock
and has no setting. With `--frozen-at` (the server started with `--clock` at that instant) the run
checks what makes that work: the `webhook-timestamp` header is transport, on the wall clock, while
each body's `timestamp` is the event's sandbox time.

    python webhook_verify.py --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json \
        [--frozen-at 2026-03-02T09:00:00Z]
"""

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        results["passed"] += 1
        print(f"PASS {name}")
    else:
        results["failed"] += 1
        print(f"FAIL {name}: {detail}")


class Receiver:
    def __init__(self):
        self.secrets = []  # every secret a delivery may be signed with; each one is tried
        self.deliveries = []  # (headers, body, verified_with, error)
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                verified, error = [], None
                with receiver.lock:
                    secrets = list(receiver.secrets)
                for secret in secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        verified.append(secret)
                    except WebhookVerificationError as e:
                        error = str(e)
                with receiver.lock:
                    receiver.deliveries.append((headers, body, verified, error))
                self.send_response(204 if verified else 400)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n, timeout=30.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if len(self.deliveries) >= n:
                    return list(self.deliveries)
            time.sleep(0.02)
        with self.lock:
            return list(self.deliveries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--credentials", required=True)
    ap.add_argument("--frozen-at", help="the instant the server's clock is frozen at (RFC 3339)")
    args = ap.parse_args()
    creds = json.load(open(args.credentials))
    keys = {k["name"]: k for k in creds["keys"]}
    admin = keys["northwind-admin"]
    company = next(c["id"] for c in creds["companies"] if c["name"] == "Northwind Grocers")

    def call(method, path, body=None, key=admin):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(args.url + path, data=data, method=method)
        req.add_header("x-api-key", key["rawKey"])
        req.add_header("x-service-client-id", key["client_id"])
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    rx = Receiver()
    types = ["ad.created", "ad.updated", "ad.deleted", "tokens.purchased", "branding.updated"]
    status, hook = call("POST", "/webhooks", {
        "company_id": company,
        "url": f"http://127.0.0.1:{rx.port}/standardwebhooks",
        "event_types": types,
    })
    check("create webhook", status == 201, f"{status} {hook}")
    if status != 201:
        return
    first_secret = hook["secret"]
    with rx.lock:
        rx.secrets = [first_secret]

    writer = keys["northwind-readwrite"]
    status, ad = call("POST", "/ads", {"company_id": company, "name": "Verifier", "headline": "Signed"}, writer)
    check("create ad", status == 201, f"{status} {ad}")
    if status == 201:
        call("PATCH", f"/ads/{ad['id']}", {"headline": "Signed again"}, writer)
        call("DELETE", f"/ads/{ad['id']}", None, writer)
    packs = call("GET", "/token-packs", None, writer)[1]
    pack = packs["data"][0]["id"]
    status, _ = call("POST", f"/token-packs/{pack}/purchase", {"company_id": company}, writer)
    check("purchase tokens", status == 201, str(status))
    call("PATCH", f"/companies/{company}/branding", {"corner_radius_px": 7}, writer)
    status, d = call("POST", f"/webhooks/{hook['id']}/test")
    check("test event", status == 200 and d["status"] == "succeeded", f"{status} {d}")

    got = rx.wait_for(6)
    seen = sorted(json.loads(b)["type"] for _, b, _, _ in got)
    check("every scripted event type arrived", seen == sorted(types + ["webhook.test"]), str(seen))

    # Rotation: the new secret is returned once; the old one still signs during the grace period.
    status, rotated = call("POST", f"/webhooks/{hook['id']}/rotate-secret")
    check("rotate secret", status == 200 and rotated["secret"] != first_secret, str(status))
    new_secret = rotated["secret"]
    with rx.lock:
        rx.secrets = [first_secret, new_secret]
    call("POST", f"/webhooks/{hook['id']}/test")
    got = rx.wait_for(7)
    last = got[-1]
    check("a rotation's delivery carries two signatures",
          len(last[0].get("webhook-signature", "").split(" ")) == 2, last[0].get("webhook-signature"))
    check("the verifier accepts it with the new and with the old secret",
          sorted(last[2]) == sorted([first_secret, new_secret]), str(last[3]))

    for headers, body, verified, error in got:
        kind = json.loads(body)["type"]
        check(f"standardwebhooks verifies {kind} ({headers.get('webhook-id')})", bool(verified), str(error))

    if args.frozen_at:
        # A frozen sandbox: the body carries the sandbox instant, the header the wall clock.
        stamps = sorted({json.loads(b)["timestamp"] for _, b, _, _ in got})
        check("bodies carry the frozen sandbox time", stamps == [args.frozen_at], str(stamps))
        skew = [abs(int(h["webhook-timestamp"]) - time.time()) for h, _, _, _ in got]
        check("headers carry the wall clock", max(skew) < 120, str(skew))

    # The verifier is real: a changed body or a stale timestamp is refused.
    headers, body = got[0][0], got[0][1]
    try:
        Webhook(first_secret).verify(body.replace(b'"type"', b'"typo"'), headers)
        check("a tampered body is refused", False, "verified")
    except WebhookVerificationError:
        check("a tampered body is refused", True)
    stale = dict(headers, **{"webhook-timestamp": str(int(headers["webhook-timestamp"]) - 3600)})
    try:
        Webhook(first_secret).verify(body, stale)
        check("a stale timestamp is refused", False, "verified")
    except WebhookVerificationError:
        check("a stale timestamp is refused", True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash is a failed check, reported as such
        check("webhook verifier run", False, repr(e))
    print(f"{results['passed']} checks passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
