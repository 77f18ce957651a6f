"""A customer's test suite using the signage-sandbox pytest plugin as documented (no conftest):
a clean world per test, operator helpers and a verifying webhook receiver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from signage_sandbox import Operator, SignageServer, WebhookReceiver

GROCERS = "cmp_0m5d4ruo5fepbn59k9ts"
seen_ids: List[str] = []


def create_ad(world: SignageServer, name: str) -> Dict[str, object]:
    answer = world.client("northwind-readwrite").post(
        "/ads", {"company_id": GROCERS, "name": name, "headline": "From pytest"}
    )
    assert answer.status == 201, answer.json
    body: Dict[str, object] = answer.json
    return body


def subscribe(world: SignageServer, receiver: WebhookReceiver, event_type: str) -> Dict[str, Any]:
    """A webhook of the Grocers to ``receiver`` for one event type, its secret trusted."""
    hook = world.client("northwind-admin").post(
        "/webhooks", {"company_id": GROCERS, "url": receiver.url(), "event_types": [event_type]}
    )
    assert hook.status == 201, hook.json
    receiver.trust(hook.json["secret"])
    body: Dict[str, Any] = hook.json
    return body


def test_a_test_changes_the_world(signage_world: SignageServer, operator: Operator) -> None:
    ad = create_ad(signage_world, "Left behind")
    seen_ids.append(str(ad["id"]))
    moved = operator.advance(seconds=86_400)
    assert moved["now"] == "2026-03-03T09:00:00Z"
    assert moved["events"].get("device.offline", 0) > 0
    operator.add_fault({"type": "status", "status": 503}, {"path": "/ads"})


def test_the_next_test_starts_from_the_same_world(signage_world: SignageServer, operator: Operator) -> None:
    # The clock, the data and the fault rules of the previous test are gone.
    assert operator.clock()["now"] == "2026-03-02T09:00:00Z"
    assert operator.faults() == []
    ads = signage_world.client("northwind-readonly").get("/ads?limit=100").json["data"]
    assert all(ad["name"] != "Left behind" for ad in ads)
    # And the seeded ids replay: the same write gives the same id as in the previous test.
    ad = create_ad(signage_world, "Left behind")
    assert [str(ad["id"])] == seen_ids


def test_faults_fire_as_configured(signage_world: SignageServer, operator: Operator) -> None:
    operator.add_fault({"type": "status", "status": 503, "retry_after": 2}, {"path": "/ads", "method": "GET"}, times=1)
    client = signage_world.client("northwind-readonly")
    first = client.get("/ads")
    assert first.status == 503
    assert first.headers["retry-after"] == "2"
    assert client.get("/ads").status == 200


def test_webhooks_verify_with_the_stock_library(signage_world: SignageServer, webhook_receiver: WebhookReceiver) -> None:
    hook = subscribe(signage_world, webhook_receiver, "ad.created")
    ad = create_ad(signage_world, "Announced")
    [delivery] = webhook_receiver.wait_for(1, "ad.created")
    assert delivery.verified
    assert delivery.json["data"]["id"] == ad["id"]
    # The body's timestamp is the frozen sandbox time; the header the wall clock.
    assert delivery.json["timestamp"] == "2026-03-02T09:00:00Z"


def test_polling_the_operator_is_never_throttled(signage_world: SignageServer, operator: Operator) -> None:
    for _ in range(150):
        assert operator.clock()["mode"] == "frozen"


def test_the_shipped_demo_credentials_match_the_fixtures(signage: SignageServer) -> None:
    fixtures = Path(__file__).resolve().parents[3] / "fixtures" / "demo-credentials.json"
    keys = {k["name"]: k["rawKey"] for k in json.loads(fixtures.read_text())["keys"]}
    assert {name: c.raw_key for name, c in signage.credentials.items()} == keys


def test_drain_replaces_sleeping(
    signage_world: SignageServer, operator: Operator, webhook_receiver: WebhookReceiver
) -> None:
    hook = subscribe(signage_world, webhook_receiver, "ad.created")
    create_ad(signage_world, "Drained")
    operator.drain()
    # No wait: once drain returns, the attempt and the receiver's answer are on record.
    assert [d.type for d in webhook_receiver.deliveries] == ["ad.created"]
    settled = operator.deliveries(status="succeeded", webhook_id=hook["id"])
    assert [d["event_type"] for d in settled] == ["ad.created"]
    assert operator.deliveries(status="pending", webhook_id=hook["id"]) == []


def test_trigger_any_event_type(
    signage_world: SignageServer, operator: Operator, webhook_receiver: WebhookReceiver
) -> None:
    hook = subscribe(signage_world, webhook_receiver, "device.offline")
    device = signage_world.client("northwind-readonly").get(f"/devices?company_id={GROCERS}&limit=1").json["data"][0]
    event = operator.trigger("device.offline", GROCERS, object_id=device["id"])
    assert event["type"] == "device.offline"
    operator.drain()
    [delivery] = webhook_receiver.deliveries
    assert delivery.verified
    assert delivery.type == "device.offline"
    assert delivery.json["data"]["id"] == device["id"]


def test_the_journal_shows_what_the_client_sent(signage_world: SignageServer, operator: Operator) -> None:
    operator.add_fault({"type": "status", "status": 503, "retry_after": 3}, {"path": "/ads", "method": "POST"}, times=2)
    client = signage_world.client("northwind-readwrite")
    statuses = []
    for _ in range(3):
        answer = client.post(
            "/ads",
            {"company_id": GROCERS, "name": "Retried", "headline": "Once"},
            headers={"Idempotency-Key": "pytest-order-7"},
        )
        statuses.append(answer.status)
    assert statuses == [503, 503, 201]
    # The journal outlives restores, so a test filters by what is its own (here, the key).
    mine = {"operation_id": "createAd", "idempotency_key": "pytest-order-7"}
    assert operator.count_requests(**mine) == 3
    assert operator.count_requests(**mine, status=503, faulted=True) == 2
    entries = operator.requests(**mine)
    assert [e["status"] for e in entries] == [201, 503, 503]
    assert all(e["via"] == "rest" for e in entries)
