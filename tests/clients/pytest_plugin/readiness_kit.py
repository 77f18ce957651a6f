"""What the readiness scenarios of the customer suite share: clients that retry as real ones do
(jittered, seeded), webhook receivers that get verification right or wrong in one way each, and
the report's accessors. Written against the plugin's public API only."""

from __future__ import annotations

import hashlib
import hmac
import base64
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Set

from signage_sandbox import Answer, Client, Operator, SignageServer

GROCERS = "cmp_0m5d4ruo5fepbn59k9ts"
PHARMACY = "cmp_0m5d4ruo6ao6qd5rc9dx"


def account(world: SignageServer) -> str:
    """The demo account of Northwind, from the credential the plugin ships."""
    return world.credentials["northwind-admin"].account_id


def report(world: SignageServer, operator: Operator) -> Dict[str, Any]:
    """This test's report of the demo account (the plugin scopes it to the test)."""
    return operator.readiness(account(world))


def check(rep: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    for c in rep["checks"]:
        if c["id"] == check_id:
            found: Dict[str, Any] = c
            return found
    raise AssertionError(f"no check {check_id} in {rep}")


def status(rep: Dict[str, Any], check_id: str) -> str:
    s: str = check(rep, check_id)["status"]
    return s


def evidence(rep: Dict[str, Any], check_id: str) -> Set[str]:
    return set(check(rep, check_id)["evidence"])


def rid(answer: Answer) -> str:
    return answer.headers["request-id"]


def ad(name: str) -> Dict[str, Any]:
    return {"company_id": GROCERS, "name": name, "headline": "Fresh today"}


def fail_creates(operator: Operator, status_code: int, retry_after: Optional[int], times: int) -> None:
    action: Dict[str, Any] = {"type": "status", "status": status_code}
    if retry_after is not None:
        action["retry_after"] = retry_after
    operator.add_fault(action, {"operation_id": "createAd"}, times=times)


Wait = Callable[[random.Random, int, Answer], float]


def full_jitter(base: float) -> Wait:
    """AWS "full jitter": random(0, base · 2^n) seconds."""
    return lambda rng, n, _answer: rng.uniform(0, base * 2**n)


def constant(seconds: float) -> Wait:
    return lambda _rng, _n, _answer: seconds


def retry_after_then_jitter(base: float) -> Wait:
    """`Retry-After` when the answer has one (and a little jitter), else full jitter."""

    def wait(rng: random.Random, n: int, answer: Answer) -> float:
        header = answer.headers.get("retry-after")
        if header is not None:
            return float(header) + 0.02 + rng.uniform(0, 0.1)
        return rng.uniform(0, base * 2**n)

    return wait


def create_with_retries(
    client: Client, body: Dict[str, Any], key: Optional[str], wait: Wait, seed: int, tries: int = 8
) -> List[Answer]:
    """Creates an ad, retrying 5xx and 429 with `wait` until an answer below 500; every answer."""
    rng = random.Random(seed)
    answers: List[Answer] = []
    for n in range(tries):
        headers = {"Idempotency-Key": key} if key else {}
        answer = client.post("/ads", body, headers=headers)
        answers.append(answer)
        if answer.status < 500 and answer.status != 429:
            break
        time.sleep(wait(rng, n, answer))
    return answers


def mcp_call(client: Client, tool: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
    """One MCP tool call over the `/mcp` endpoint, as an assistant's client sends it."""
    answer = client.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert answer.status == 200, answer.body[:300]
    result: Dict[str, Any] = answer.json
    return result


class Receiver:
    """A webhook receiver verifying by one policy: ``careful`` (signature with a secret it knows,
    timestamp within 5 minutes either way), ``careless`` (accepts anything), ``skips_missing``
    (accepts a delivery without a signature header), ``past_only`` (refuses old timestamps, not
    future ones), ``refuses_all``, or ``slow`` (careful, after `delay` seconds)."""

    def __init__(self, policy: str, delay: float = 0.0) -> None:
        self.policy = policy
        self.delay = delay
        self.secrets: List[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                length = int(self.headers.get("content-length", "0") or "0")
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(204 if receiver.accepts(headers, body) else 401)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def trust(self, secret: str) -> None:
        self.secrets.append(secret)

    def accepts(self, headers: Dict[str, str], body: bytes) -> bool:
        if self.policy == "careless":
            return True
        if self.policy == "refuses_all":
            return False
        if self.policy == "skips_missing" and "webhook-signature" not in headers:
            return True
        try:
            ts = int(headers.get("webhook-timestamp", ""))
        except ValueError:
            return False
        skew = time.time() - ts
        if skew > 300 or (self.policy != "past_only" and skew < -300):
            return False
        signed = f"{headers.get('webhook-id', '')}.{ts}.".encode() + body
        for secret in self.secrets:
            key = base64.b64decode(secret.removeprefix("whsec_"))
            expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            for sig in headers.get("webhook-signature", "").split(" "):
                if hmac.compare_digest(sig.removeprefix("v1,"), expected):
                    return True
        return False

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def hook_to(world: SignageServer, receiver: Any, company: str = GROCERS) -> str:
    """A webhook of `company` to `receiver` (anything with ``url()`` and ``trust()``)."""
    hook = world.client("northwind-admin").post(
        "/webhooks",
        {"company_id": company, "url": receiver.url(), "event_types": ["webhook.test"]},
        headers={"Idempotency-Key": f"hook-{receiver.url()}"},
    )
    assert hook.status == 201, hook.json
    receiver.trust(hook.json["secret"])
    hook_id: str = hook.json["id"]
    return hook_id


PLAIN_DRILLS = ["duplicate", "out_of_order", "bad_signature", "missing_signature", "stale_timestamp", "future_timestamp"]


def drill_every_kind(world: SignageServer, operator: Operator, hook: str, receiver: Any = None) -> Dict[str, Dict[str, Any]]:
    """Every drill kind against `hook`, rotating its secret before the rotation drill when no
    rotation is in progress (the receiver, if any, learns the new secret)."""
    drills = {kind: operator.drill(hook, kind) for kind in PLAIN_DRILLS}
    answer = operator.client.post(f"/_sandbox/webhooks/{hook}/drills", {"kind": "rotation"})
    if answer.status == 409:
        assert answer.json["code"] == "no_rotation_in_progress"
        rotated = world.client("northwind-admin").post(
            f"/webhooks/{hook}/rotate-secret", headers={"Idempotency-Key": f"rotate-{hook}"}
        )
        assert 200 <= rotated.status < 300, rotated.json
        if receiver is not None:
            receiver.trust(rotated.json["secret"])
        answer = operator.client.post(f"/_sandbox/webhooks/{hook}/drills", {"kind": "rotation"})
    assert answer.status == 201, answer.json
    drills["rotation"] = answer.json
    return drills


def demo_sink_hook(world: SignageServer) -> str:
    """The demo world's enabled webhook of the Grocers: it delivers to the built-in sink."""
    hooks = world.client("northwind-admin").get(f"/webhooks?company_id={GROCERS}&limit=100").json["data"]
    found = [h for h in hooks if h["enabled"] and "/_sandbox/sink/" in h["url"]]
    assert found, hooks
    hook_id: str = found[0]["id"]
    return hook_id


def dump(value: Any) -> str:
    return json.dumps(value)[:2000]
