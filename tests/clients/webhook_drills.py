"""Webhook drills against a receiver that verifies with the official Standard Webhooks library
(PyPI `standardwebhooks`): every drill kind must pass, and the readiness report must then show the
webhook checks as passed. A receiver that checks nothing must fail the signature and timestamp
drills (so the drills can tell the two apart). Prints PASS/FAIL lines; exits 1 on any failure.

    python webhook_drills.py --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json
"""

import argparse
import json
import sys
import threading
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
    """Answers 204 when `standardwebhooks` verifies the delivery with a known secret (a duplicate
    `webhook-id` included: it was processed already), 400 otherwise; `verify=False` accepts all."""

    def __init__(self, verify=True):
        self.secrets = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                ok = not verify
                with receiver.lock:
                    secrets = list(receiver.secrets)
                for secret in secrets:
                    try:
                        Webhook(secret).verify(body, headers)
                        ok = True
                    except WebhookVerificationError:
                        pass
                self.send_response(204 if ok else 400)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--credentials", required=True)
    args = ap.parse_args()
    creds = json.load(open(args.credentials))
    keys = {k["name"]: k for k in creds["keys"]}
    admin, op = keys["northwind-admin"], keys["sandbox-operator"]
    company = next(c["id"] for c in creds["companies"] if c["name"] == "Northwind Grocers")

    def call(method, path, body=None, key=admin, idempotency=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(args.url + path, data=data, method=method)
        req.add_header("x-api-key", key["rawKey"])
        req.add_header("x-service-client-id", key["client_id"])
        if idempotency:
            req.add_header("idempotency-key", idempotency)
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace")

    def hook_to(rx, name):
        status, hook = call("POST", "/webhooks", {
            "company_id": company, "url": f"http://127.0.0.1:{rx.port}/{name}",
            "event_types": ["webhook.test"]}, idempotency=f"drill-hook-{name}")
        check(f"create webhook ({name})", status == 201, f"{status} {hook}")
        with rx.lock:
            rx.secrets.append(hook["secret"])
        return hook["id"]

    def drill(hook, kind):
        status, d = call("POST", f"/_sandbox/webhooks/{hook}/drills", {"kind": kind}, key=op)
        if status != 201:
            return {"verdict": f"HTTP {status}", "detail": d}
        return d

    strict = Receiver(verify=True)
    hook = hook_to(strict, "strict")
    # The report grades every enabled webhook of the account: as an integrator would before going
    # live, switch off the ones this receiver does not stand behind (the fixtures' own, and those
    # the earlier checks made on this server).
    status, listed = call("GET", "/webhooks?limit=100")
    check("list the webhooks", status == 200, str(listed))
    for other in listed["data"]:
        if other["id"] != hook and other["enabled"]:
            status, _ = call("PATCH", f"/webhooks/{other['id']}", {"enabled": False})
            check(f"switch off {other['id']}", status == 200, str(status))
    for kind in ["duplicate", "out_of_order", "bad_signature", "missing_signature",
                 "stale_timestamp", "future_timestamp"]:
        d = drill(hook, kind)
        check(f"{kind} drill passes against the standardwebhooks receiver", d["verdict"] == "pass", str(d))
    status, rotated = call("POST", f"/webhooks/{hook}/rotate-secret", idempotency="drill-rotate")
    check("rotate the secret", status == 200, str(status))
    with strict.lock:
        strict.secrets = [rotated["secret"]]  # the receiver adopted the new secret only
    d = drill(hook, "rotation")
    check("rotation drill passes (two signatures, the new one verifies)", d["verdict"] == "pass", str(d))

    status, report = call("GET", f"/readiness", key=admin)
    check("readiness report", status == 200, str(report))
    by_id = {c["id"]: c for c in report["checks"]}
    for cid in ["webhook_signatures_verified", "webhook_stale_timestamp_rejected",
                "webhook_duplicates_tolerated", "webhook_out_of_order_tolerated",
                "webhook_rotation_accepted", "webhook_responds_fast"]:
        check(f"report: {cid} passes", by_id[cid]["status"] == "pass", str(by_id[cid]))

    # The drills tell a receiver that checks nothing from one that verifies.
    lax = Receiver(verify=False)
    lax_hook = hook_to(lax, "lax")
    for kind in ["bad_signature", "stale_timestamp"]:
        d = drill(lax_hook, kind)
        check(f"{kind} drill fails against a receiver that checks nothing",
              d["verdict"] == "fail" and d["attempts"][0]["status"] == 204, str(d))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a crash is a failed check, reported as such
        check("webhook drills run", False, repr(e))
    print(f"{results['passed']} checks passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
