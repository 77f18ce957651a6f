"""A customer's suite of the readiness report (issue 29), through the plugin's defaults: a
seeded, frozen sandbox restored before each test, the report scoped to the test. Each row of the
issue's table and each bullet of its sections is a scenario written as a real client behaves:
jittered sleeps with several seeds, real retries, threads for workers.

A check passes only on evidence of the behaviour, fails only on evidence of the misbehaviour,
else is ``not_observed`` (never a verdict by accident)."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from typing import Any, Dict, List

import pytest
from signage_sandbox import Operator, SignageServer, WebhookReceiver

from readiness_kit import (
    GROCERS,
    PHARMACY,
    Receiver,
    account,
    ad,
    check,
    constant,
    create_with_retries,
    demo_sink_hook,
    drill_every_kind,
    dump,
    evidence,
    fail_creates,
    full_jitter,
    hook_to,
    mcp_call,
    report,
    retry_after_then_jitter,
    rid,
    status,
)

# --- §1: what it got wrong -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_full_jitter_backoff_passes_every_seed(signage_world: SignageServer, operator: Operator, seed: int) -> None:
    fail_creates(operator, 500, None, 5)
    answers = create_with_retries(
        signage_world.client("northwind-readwrite"), ad(f"Jitter {seed}"), f"jitter-{seed}", full_jitter(0.1), seed
    )
    assert [a.status for a in answers] == [500, 500, 500, 500, 500, 201]
    rep = report(signage_world, operator)
    assert status(rep, "backs_off_on_5xx") == "pass", dump(rep)
    assert status(rep, "idempotency_keys_on_create") == "pass"


def test_a_constant_150_ms_between_five_5xx_retries_fails(signage_world: SignageServer, operator: Operator) -> None:
    fail_creates(operator, 503, None, 5)
    answers = create_with_retries(signage_world.client("northwind-readwrite"), ad("Constant"), "constant-1", constant(0.15), 0)
    assert len(answers) == 6
    rep = report(signage_world, operator)
    assert status(rep, "backs_off_on_5xx") == "fail", dump(rep)
    assert {rid(a) for a in answers} <= evidence(rep, "backs_off_on_5xx")


def test_two_workers_on_one_key_a_second_create_is_not_a_retry(signage_world: SignageServer, operator: Operator) -> None:
    fail_creates(operator, 503, 3, 1)
    client = signage_world.client("northwind-readwrite")
    results: Dict[str, Any] = {}

    def worker_a() -> None:
        results["a"] = create_with_retries(client, ad("Worker A"), "worker-a-1", retry_after_then_jitter(0.2), 7)

    def worker_b() -> None:
        time.sleep(0.05)
        results["b"] = client.post("/ads", ad("Worker B"), headers={"Idempotency-Key": "worker-b-1"})

    threads = [threading.Thread(target=worker_a), threading.Thread(target=worker_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"][0].status == 503 and results["a"][-1].status == 201
    assert results["b"].status == 201
    rep = report(signage_world, operator)
    assert status(rep, "retry_after_respected") == "pass", dump(rep)
    assert status(rep, "idempotency_keys_on_create") == "pass", dump(rep)
    assert rid(results["b"]) not in evidence(rep, "retry_after_respected")


def test_a_retry_on_another_key_of_the_same_client_fails_both(signage_world: SignageServer, operator: Operator) -> None:
    one, two = signage_world.credentials["northwind-readwrite"], signage_world.credentials["northwind-grocers-write"]
    assert one.client_id == two.client_id
    fail_creates(operator, 503, 3, 1)
    body = ad("Failover")
    first = signage_world.client("northwind-readwrite").post("/ads", body, headers={"Idempotency-Key": "failover-1"})
    assert first.status == 503
    second = signage_world.client("northwind-grocers-write").post("/ads", body, headers={"Idempotency-Key": "failover-2"})
    assert second.status == 201
    rep = report(signage_world, operator)
    for c in ("retry_after_respected", "idempotency_keys_on_create"):
        assert status(rep, c) == "fail", dump(rep)
        assert evidence(rep, c) == {rid(first), rid(second)}


def test_a_timeout_then_a_rebuilt_request_creates_twice_and_fails(signage_world: SignageServer, operator: Operator) -> None:
    operator.add_fault({"type": "delay", "delay_ms": 1500}, {"operation_id": "createAd"}, times=1)
    cred = signage_world.credentials["northwind-readwrite"]

    def post(key: str, timeout: float) -> int:
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        body = f'{{"company_id": "{GROCERS}", "name": "Flash sale", "headline": "Flash sale, sent {stamp}"}}'
        req = urllib.request.Request(signage_world.base_url + "/ads", data=body.encode(), method="POST")
        for k, v in (("X-API-Key", cred.raw_key), ("X-Service-Client-Id", cred.client_id),
                     ("Content-Type", "application/json"), ("Idempotency-Key", key)):
            req.add_header(k, v)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status)

    with pytest.raises((socket.timeout, TimeoutError, urllib.error.URLError)):
        post("flash-1", 0.4)
    time.sleep(1.3)
    assert post("flash-2", 10) == 201
    ads = signage_world.client("northwind-readonly").get("/ads?q=Flash&limit=10").json["data"]
    assert len([a for a in ads if a["name"] == "Flash sale"]) == 2, "the timed-out write applied"
    rep = report(signage_world, operator)
    assert status(rep, "idempotency_keys_on_create") == "fail", dump(rep)
    assert len(evidence(rep, "idempotency_keys_on_create")) == 2


def test_a_latest_five_widget_is_not_a_failed_walk(signage_world: SignageServer, operator: Operator) -> None:
    for _ in range(3):
        page = signage_world.client("northwind-readonly").get("/ads?limit=5").json
        assert page["has_more"] is True
        time.sleep(0.2)
    rep = report(signage_world, operator)
    assert status(rep, "pagination_walked") in ("pass", "not_observed"), dump(rep)


def test_an_assistants_single_list_ads_call_is_not_a_failed_walk(signage_world: SignageServer, operator: Operator) -> None:
    out = mcp_call(signage_world.client("northwind-readonly"), "list_ads", {"limit": 3})
    assert out["result"]["structuredContent"]["has_more"] is True, dump(out)
    rep = report(signage_world, operator)
    assert status(rep, "pagination_walked") in ("pass", "not_observed"), dump(rep)


def test_a_walk_that_drops_its_filter_is_refused_and_fails(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readonly")
    page = client.get(f"/ads?company_id={GROCERS}&limit=5").json
    dropped = client.get(f"/ads?limit=5&cursor={page['next_cursor']}")
    assert dropped.status == 400 and dropped.json["code"] == "cursor_mismatch", dropped.json
    rep = report(signage_world, operator)
    assert status(rep, "pagination_walked") == "fail", dump(rep)
    assert rid(dropped) in evidence(rep, "pagination_walked")


def test_a_walk_that_follows_two_cursors_and_stops_fails(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readonly")
    url, ids = "/ads?limit=3", []
    for _ in range(3):
        answer = client.get(url)
        ids.append(rid(answer))
        assert answer.json["has_more"] is True
        url = f"/ads?limit=3&cursor={answer.json['next_cursor']}"
    rep = report(signage_world, operator)
    assert status(rep, "pagination_walked") == "fail", dump(rep)
    assert evidence(rep, "pagination_walked") == set(ids)


def test_a_walk_to_the_end_passes(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readonly")
    url = "/devices?limit=4"
    while True:
        page = client.get(url).json
        if not page["has_more"]:
            break
        url = f"/devices?limit=4&cursor={page['next_cursor']}"
    assert status(report(signage_world, operator), "pagination_walked") == "pass"


def test_a_one_time_export_of_34_screens_is_not_polling(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readwrite")
    devices = client.get("/devices?limit=100").json["data"]
    ids = [d["id"] for d in devices]
    for n in range(len(ids), 34):
        made = client.post("/devices", {"company_id": PHARMACY, "name": f"Aisle {n}", "platform": "android"},
                           headers={"Idempotency-Key": f"screen-{n}"})
        ids.append(made.json["id"])
    for device in ids:
        assert client.get(f"/devices/{device}/ads").status == 200
    rep = report(signage_world, operator)
    assert status(rep, "polling_reasonable") == "pass", dump(rep)


def test_polling_the_same_query_fails(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readonly")
    for _ in range(31):
        client.get("/promotions?limit=10")
    assert status(report(signage_world, operator), "polling_reasonable") == "fail"


def test_if_match_star_on_every_patch_fails(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readwrite")
    for a in client.get("/ads?limit=2").json["data"]:
        assert client.patch(f"/ads/{a['id']}", {"headline": "Any version"}, headers={"If-Match": "*"}).status == 200
    rep = report(signage_world, operator)
    assert status(rep, "conditional_updates") == "fail", dump(rep)
    assert check(rep, "conditional_updates")["required"] is False


# --- §2: every webhook, every way a receiver can be fooled ------------------------------------


def test_every_enabled_webhook_is_graded(signage_world: SignageServer, operator: Operator) -> None:
    first, second = Receiver("careful"), Receiver("careful")
    try:
        a, b = hook_to(signage_world, first), hook_to(signage_world, second)
        drill_every_kind(signage_world, operator, a, first)
        drill_every_kind(signage_world, operator, demo_sink_hook(signage_world), None)
        rep = report(signage_world, operator)
        assert status(rep, "webhook_signatures_verified") == "not_observed", dump(rep)
        assert evidence(rep, "webhook_signatures_verified") == {b}
        drill_every_kind(signage_world, operator, b, second)
        rep = report(signage_world, operator)
        for c in rep["checks"]:
            if c["id"].startswith("webhook_"):
                assert c["status"] == "pass", dump(c)
    finally:
        first.close()
        second.close()


def test_drills_of_a_deleted_webhook_are_ignored(signage_world: SignageServer, operator: Operator) -> None:
    careless = Receiver("careless")
    try:
        hook = hook_to(signage_world, careless)
        failed = operator.drill(hook, "bad_signature")
        assert failed["verdict"] == "fail"
        admin = signage_world.client("northwind-admin")
        etag = admin.get(f"/webhooks/{hook}").headers["etag"]
        assert admin.delete(f"/webhooks/{hook}", headers={"If-Match": etag}).status == 204
        rep = report(signage_world, operator)
        assert status(rep, "webhook_signatures_verified") != "fail", dump(rep)
        assert failed["id"] not in evidence(rep, "webhook_signatures_verified")
    finally:
        careless.close()


def test_a_receiver_that_skips_verification_without_a_signature_fails(signage_world: SignageServer, operator: Operator) -> None:
    lax = Receiver("skips_missing")
    try:
        hook = hook_to(signage_world, lax)
        assert operator.drill(hook, "bad_signature")["verdict"] == "pass"
        missing = operator.drill(hook, "missing_signature")
        assert missing["verdict"] == "fail"
        rep = report(signage_world, operator)
        assert status(rep, "webhook_signatures_verified") == "fail"
        assert evidence(rep, "webhook_signatures_verified") == {missing["id"]}
    finally:
        lax.close()


def test_a_receiver_that_accepts_a_future_timestamp_fails(signage_world: SignageServer, operator: Operator) -> None:
    past_only = Receiver("past_only")
    try:
        hook = hook_to(signage_world, past_only)
        assert operator.drill(hook, "stale_timestamp")["verdict"] == "pass"
        future = operator.drill(hook, "future_timestamp")
        assert future["verdict"] == "fail"
        assert status(report(signage_world, operator), "webhook_stale_timestamp_rejected") == "fail"
    finally:
        past_only.close()


def test_speed_is_judged_apart_from_correctness(signage_world: SignageServer, operator: Operator) -> None:
    refuses, slow = Receiver("refuses_all"), Receiver("slow", delay=5.3)
    try:
        fast_hook = hook_to(signage_world, refuses)
        assert operator.drill(fast_hook, "duplicate")["verdict"] == "fail"
        operator.drill(demo_sink_hook(signage_world), "duplicate")
        rep = report(signage_world, operator)
        assert status(rep, "webhook_duplicates_tolerated") == "fail"
        assert status(rep, "webhook_responds_fast") == "pass", dump(rep)
        slow_hook = hook_to(signage_world, slow)
        late = operator.drill(slow_hook, "bad_signature")
        assert late["verdict"] == "pass" and late["attempts"][0]["latency_ms"] > 5000
        rep = report(signage_world, operator)
        assert status(rep, "webhook_responds_fast") == "fail"
        assert evidence(rep, "webhook_responds_fast") == {late["id"]}
    finally:
        refuses.close()
        slow.close()


def test_the_builtin_sink_answers_like_a_careful_receiver(signage_world: SignageServer, operator: Operator) -> None:
    drills = drill_every_kind(signage_world, operator, demo_sink_hook(signage_world))
    for kind, d in drills.items():
        assert d["verdict"] == "pass", dump(d)
    for kind in ("bad_signature", "missing_signature", "stale_timestamp", "future_timestamp"):
        assert drills[kind]["attempts"][0]["status"] == 400, kind
    rep = report(signage_world, operator)
    for c in rep["checks"]:
        if c["id"].startswith("webhook_"):
            assert c["status"] == "pass", dump(c)


def test_a_receiver_verifying_with_the_stock_library_passes_every_drill(
    signage_world: SignageServer, operator: Operator, webhook_receiver: WebhookReceiver
) -> None:
    hook = hook_to(signage_world, webhook_receiver)
    drills = drill_every_kind(signage_world, operator, hook, webhook_receiver)
    assert {k: d["verdict"] for k, d in drills.items()} == {k: "pass" for k in drills}


# --- §3: restores and the plugin -------------------------------------------------------------

drill_ids: List[str] = []
advances: List[Dict[str, Any]] = []


@pytest.mark.parametrize("run", ["first", "second"])
def test_a_drill_in_each_of_two_tests_after_restores(signage_world: SignageServer, operator: Operator, run: str) -> None:
    receiver = Receiver("careful")
    try:
        hook = hook_to(signage_world, receiver)
        drill = operator.drill(hook, "duplicate")
        assert drill["verdict"] == "pass"
        assert drill["id"] not in drill_ids
        drill_ids.append(drill["id"])
    finally:
        receiver.close()


@pytest.mark.parametrize("run", ["first", "second"])
def test_the_journal_example_counts_this_tests_requests(signage_world: SignageServer, operator: Operator, run: str) -> None:
    """The plugin README's journal example, run twice: it counts each run's own requests."""
    operator.add_fault({"type": "status", "status": 503, "retry_after": 3}, {"path": "/ads", "method": "POST"}, times=2)
    create_with_retries(signage_world.client("northwind-readwrite"), ad("Order 7"), "order-7", retry_after_then_jitter(0.1), 1)
    mine = {"operation_id": "createAd", "idempotency_key": "order-7"}
    assert operator.count_requests(**mine) == 3
    assert operator.count_requests(**mine, status=503, faulted=True) == 2
    assert operator.count_requests(this_test=False, **mine) >= 3


def test_requests_are_tagged_with_the_test_that_sent_them(signage_world: SignageServer, operator: Operator, request: pytest.FixtureRequest) -> None:
    signage_world.client("northwind-readonly").get("/devices?limit=1")
    tagged = operator.requests(test_name=request.node.nodeid, operation_id="listDevices")
    assert len(tagged) == 1 and tagged[0]["test_name"] == request.node.nodeid


def test_junit_and_the_verdict_agree(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readwrite")
    ad_id = client.get("/ads?limit=1").json["data"][0]["id"]
    client.patch(f"/ads/{ad_id}", {"headline": "Blind"})
    rep = report(signage_world, operator)
    xml = operator.readiness_junit(account(signage_world), this_test=True)
    blocking = [c for c in rep["checks"] if c["required"] and c["status"] != "pass"]
    assert xml.count("<failure ") == len(blocking)
    assert 'name="conditional_updates">\n      <skipped message="failed, recommended only' in xml


def _faulted(server: SignageServer, noise: bool) -> List[int]:
    op = server.operator
    op.add_fault({"type": "status", "status": 503}, {"operation_id": "listAds"}, probability=0.5)
    client = server.client("northwind-readonly")
    hit = []
    for i in range(20):
        if noise:
            assert client.get("/ads", headers={"Prefer": "code=503"}).headers.get("signage-fault") == "prefer"
            assert client.get("/ads?colour=red").status == 422
        if client.get("/ads").status == 503:
            hit.append(i)
    return hit


def test_prefer_faults_and_refused_requests_draw_nothing(signage: SignageServer) -> None:
    runs = []
    for noise in (False, True):
        with SignageServer(binary=signage.binary, seed=42) as server:
            runs.append(_faulted(server, noise))
    assert runs[0] == runs[1] and 0 < len(runs[0]) < 20


@pytest.mark.parametrize("run", ["first", "second", "third"])
def test_the_advance_answers_alike_after_each_restore(signage_world: SignageServer, operator: Operator, run: str) -> None:
    signage_world.client("northwind-readwrite").post("/ads", ad("Left behind"), headers={"Idempotency-Key": "left"})
    advances.append(operator.advance(seconds=86_400))
    assert all(a == advances[0] for a in advances)


# --- §4: no outsider changes a verdict or a journal -------------------------------------------


def test_an_outsider_cannot_change_a_verdict(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readonly")
    url = "/devices?limit=5"
    while True:
        page = client.get(url).json
        if not page["has_more"]:
            break
        url = f"/devices?limit=5&cursor={page['next_cursor']}"
    before = report(signage_world, operator)
    victim = signage_world.credentials["northwind-readonly"]
    forged = f"sgn_test_{victim.key_id.removeprefix('key_')}_{'C' * 32}"
    anonymous = signage_world.client()
    for n in range(100):
        headers = {"X-Service-Client-Id": victim.client_id}
        if n % 2:
            headers["X-API-Key"] = forged
        assert anonymous.post("/ads", {"name": "x" * 20_000}, headers=headers).status == 401
    after = report(signage_world, operator)
    assert [(c["id"], c["status"]) for c in after["checks"]] == [(c["id"], c["status"]) for c in before["checks"]]
    assert after["verdict"] == before["verdict"]
    assert all(c["id"] != "authenticates_every_request" for c in after["checks"])


# --- §5: nothing secret in the journal --------------------------------------------------------


def test_no_secret_form_shows_in_the_journal(signage_world: SignageServer, operator: Operator) -> None:
    admin = signage_world.client("northwind-admin")
    raw = admin.post("/api-keys", {"client_id": signage_world.credentials["northwind-admin"].client_id,
                                   "name": "canary", "scopes": ["read", "write"]},
                     headers={"Idempotency-Key": "canary"}).json["rawKey"]
    from signage_sandbox import Client, Credential

    mine = Client(signage_world.base_url, Credential("canary", raw, signage_world.credentials["northwind-admin"].client_id))
    assert mine.get(f"/devices?{raw}=1").status == 422
    assert mine.post("/ads", {**ad("Canary"), raw: "1"}).status == 422
    assert mine.post("/ads", ad("Keyed"), headers={"Idempotency-Key": raw}).status == 201
    mcp_call(admin, raw, {})
    password = "Typed-Into-Username-3e8a"
    assert signage_world.client().post("/auth/login", {"username": password, "password": "no"}).status == 401
    url_pw = "UrlCanaryPw-9f1b"
    assert mine.post("/webhooks", {"company_id": GROCERS, "url": f"https://u:{url_pw}@hooks.example.com/x",
                                   "event_types": ["ad.created"]}).status == 422
    seen = dump(operator.requests(this_test=False))
    for e in operator.requests(status="4xx"):
        if e["account_id"]:
            seen += dump(admin.get(f"/requests/{e['request_id']}").json)
            seen += dump(mcp_call(admin, "explain_request", {"request_id": e["request_id"]}))
    for canary in (raw, raw.rsplit("_", 1)[-1], password, url_pw):
        assert canary not in seen, canary
    assert operator.count_requests(idempotency_key=raw) == 1


# --- §6: the product passes its own report ----------------------------------------------------


def test_every_problem_carries_a_code(signage_world: SignageServer, operator: Operator) -> None:
    client = signage_world.client("northwind-readwrite")
    created = client.post("/ads", ad("Coded"), headers={"Idempotency-Key": "coded"}).json
    answers = {
        404: client.get("/ads/ad_doesnotexist0000000000"),
        409: client.post("/ads", ad("Other"), headers={"Idempotency-Key": "coded"}),
        412: client.patch(f"/ads/{created['id']}", {"headline": "Stale"}, headers={"If-Match": '"v0"'}),
        422: client.post("/ads", {"name": ""}),
    }
    for code, answer in answers.items():
        assert answer.status == code and isinstance(answer.json.get("code"), str), dump(answer.json)
    operator.add_fault({"type": "status", "status": 503}, {"operation_id": "listAds"}, times=1)
    injected = client.get("/ads").json
    assert injected["type"] == "/problems/injected-fault" and injected["code"] == "injected_fault"


def test_the_plugins_credential_exposes_its_key_id(signage: SignageServer) -> None:
    cred = signage.credentials["northwind-readwrite"]
    me = signage.client("northwind-readwrite").get("/me").json
    assert (cred.key_id, cred.account_id) == (me["key_id"], me["account_id"]), me


# --- Issue 31 §4 and §6: sinks belong to accounts, company admins see their company ---------


def test_a_sink_keeps_only_what_a_tenants_webhook_signed(signage_world: SignageServer, operator: Operator) -> None:
    anonymous = signage_world.client()
    # A sink observes the world, as the journal does: earlier tests' deliveries are still there.
    before = operator.sink("northwind-grocers")
    for n in range(101):
        junk = anonymous.post("/_sandbox/sink/northwind-grocers", {"n": n},
                              headers={"webhook-id": f"evt_{n}", "webhook-timestamp": str(int(time.time())),
                                       "webhook-signature": "v1,AAAA"})
        assert junk.status == 400 and junk.json["code"] == "signature_mismatch"
    assert operator.sink("northwind-grocers") == before
    assert signage_world.client("harborview-readwrite").get("/_sandbox/sink/northwind-grocers").json["data"] == []


def test_a_company_scoped_admin_reads_its_companys_report(signage_world: SignageServer, operator: Operator) -> None:
    admin = signage_world.client("northwind-admin")
    made = admin.post("/api-keys", {"client_id": signage_world.credentials["northwind-admin"].client_id,
                                    "name": "Grocers admin", "scopes": ["admin"], "companyScope": GROCERS},
                      headers={"Idempotency-Key": "grocers-admin"}).json
    from signage_sandbox import Client, Credential

    grocers_admin = Client(signage_world.base_url,
                           Credential("grocers-admin", made["rawKey"], signage_world.credentials["northwind-admin"].client_id))
    careless = signage_world.client("northwind-readwrite").get("/ads?limit=2")
    rep = grocers_admin.get("/readiness").json
    assert rep["company_id"] == GROCERS
    assert all(rid(careless) not in c["evidence"] for c in rep["checks"])
    wide = signage_world.credentials["northwind-readwrite"].key_id
    assert grocers_admin.get(f"/api-keys/{wide}").status == 404
    assert grocers_admin.get(f"/readiness?key_id={wide}").status == 404
