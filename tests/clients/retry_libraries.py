"""Real Python retry libraries against the sandbox's faults, graded by `GET /readiness`.

Each library gets a fresh integration (an API client and its key, made by the admin), drives the
same small workload through the library at its defaults or its README's settings (read from the
installed package's source, see SETTINGS below), and then reads its own key's `GET /readiness`:
every retry check must have the status the EXPECTED table says. A library that changed how it
behaves (a new release's defaults) fails here, which is the point: the going-live page's "Retry
libraries" section says what each family gets, and this keeps it true.

The workload (every fault matched on the run's own key, so the runs go side by side):
  1. a list (GET /ads?limit=5) answered 503 three times without Retry-After: back-off;
  2. another list (GET /ads?limit=4) answered 429 with Retry-After: 3 once: 3 s is a wait no
     library makes of its own on a first retry, so a retry 3 s later was told;
  3. a create (POST /ads, Idempotency-Key <run>-1) answered 503 with Retry-After: 3 once;
  4. a create (<run>-2) answered 500 once, no Retry-After;
  5. a create (<run>-3) and a list (GET /ads?limit=3), unfaulted: the job's next requests, which
     show a request given up above as lost.
Every create carries its Idempotency-Key, built once before the library's retry loop.

    python retry_libraries.py --url http://127.0.0.1:PORT --credentials fixtures/demo-credentials.json [--only a,b]

Prints PASS/FAIL per library and check, one timing line per library, and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as metadata
import json
import sys
import threading
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple

import backoff
import httpx
import stamina
import stamina.instrumentation
import tenacity
import urllib3

CHECKS = [
    "retries_transient_errors",
    "retry_after_respected",
    "backs_off_on_5xx",
    "idempotency_keys_on_create",
]
P, F, N = "pass", "fail", "not_observed"

# library run -> check -> the statuses its real behaviour can earn (a jittered back-off may hide
# its trend on a run: pass or not observed, never fail).
EXPECTED: Dict[str, Dict[str, Tuple[str, ...]]] = {
    # Retry(3): GET only, and a status only with Retry-After on 413/429/503 (no status_forcelist).
    "urllib3-defaults": {
        "retries_transient_errors": (F,),  # the 503 list, the POSTs: never retried
        "retry_after_respected": (P,),  # the GET's 429 waited exactly Retry-After
        "backs_off_on_5xx": (N,),  # no 5xx without Retry-After is retried
        "idempotency_keys_on_create": (P,),
    },
    # Retry(total=5, backoff_factor=0.5, status_forcelist=[429, 500, 502, 503, 504],
    # allowed_methods=DEFAULT_ALLOWED_METHODS | {"POST"}): ready.
    "urllib3-ready": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (P,),
        "backs_off_on_5xx": (P,),  # 0, 1, 2 s
        "idempotency_keys_on_create": (P,),
    },
    # tenacity's bare @retry: every exception, no wait, no stop.
    "tenacity-bare": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (F,),  # retried at once
        # A tight loop, judged steady when its three waits lie within 50 ms of each other; a
        # slow first retry in a cold process (a wait of 37 ms beside 1 and 2) can spread them
        # past that, and the report then says not observed. Never pass.
        "backs_off_on_5xx": (F, N),
        "idempotency_keys_on_create": (P,),
    },
    # @retry(wait=wait_random_exponential(multiplier=1, max=60)): full jitter, U(0, 2^n) s.
    "tenacity-random-exponential": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (F,),  # its first wait is under 1 s, never the header's 3
        "backs_off_on_5xx": (P, N),
        "idempotency_keys_on_create": (P,),
    },
    # tenacity retrying 408, 429 and 5xx, waiting Retry-After when given, else 0.5 s * 2^n.
    "tenacity-ready": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (P,),
        "backs_off_on_5xx": (P,),  # 0.5, 1, 2 s
        "idempotency_keys_on_create": (P,),
    },
    # httpx.HTTPTransport(retries=3): connection errors only.
    "httpx-transport": {
        "retries_transient_errors": (F,),
        "retry_after_respected": (N,),
        "backs_off_on_5xx": (N,),
        "idempotency_keys_on_create": (P,),
    },
    # @backoff.on_exception(backoff.expo, httpx.HTTPError): full jitter, U(0, 2^n) s.
    "backoff-expo": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (F,),
        "backs_off_on_5xx": (P, N),
        "idempotency_keys_on_create": (P,),
    },
    # @stamina.retry(on=httpx.HTTPError): 10 attempts, 0.1 s * 2^n plus U(0, 1) s.
    "stamina-defaults": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (F,),
        "backs_off_on_5xx": (P, N),  # a second of jitter over 0.1, 0.2, 0.4 s
        "idempotency_keys_on_create": (P,),
    },
    # stamina with an `on` hook returning Retry-After's seconds, and waits 0.5 s * 2^n + U(0, 0.5).
    "stamina-ready": {
        "retries_transient_errors": (P,),
        "retry_after_respected": (P,),
        "backs_off_on_5xx": (P,),
        "idempotency_keys_on_create": (P,),
    },
}

SETTINGS = {
    "urllib3-defaults": "urllib3.PoolManager() (Retry.DEFAULT = Retry(3))",
    "urllib3-ready": "Retry(total=5, backoff_factor=0.5, status_forcelist=[429,500,502,503,504], allowed_methods=+POST)",
    "tenacity-bare": "@tenacity.retry",
    "tenacity-random-exponential": "@tenacity.retry(wait=wait_random_exponential(multiplier=1, max=60))",
    "tenacity-ready": "@tenacity.retry(retry=<408, 429, 5xx>, wait=<Retry-After, else wait_exponential(multiplier=0.5)>, stop=stop_after_attempt(6))",
    "httpx-transport": "httpx.Client(transport=httpx.HTTPTransport(retries=3))",
    "backoff-expo": "@backoff.on_exception(backoff.expo, httpx.HTTPError)",
    "stamina-defaults": "@stamina.retry(on=httpx.HTTPError)",
    "stamina-ready": "@stamina.retry(on=<hook: Retry-After or True>, wait_initial=0.5, wait_jitter=0.5)",
}

GROCERS = "cmp_0m5d4ruo5fepbn59k9ts"


class Control:
    """The admin's and the operator's calls (plain urllib, never retried)."""

    def __init__(self, base: str, credentials: Dict[str, Any]):
        self.base = base
        keys = {k["name"]: k for k in credentials["keys"]}
        self.admin, self.op = keys["northwind-admin"], keys["sandbox-operator"]
        # Names and keys unique to this run, so a second run against the same server starts fresh.
        self.nonce = f"{time.time_ns() // 1_000_000:x}"

    def call(self, method: str, path: str, key: Dict[str, str], body: Any = None, idem: Optional[str] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("x-api-key", key["rawKey"])
        req.add_header("x-service-client-id", key["client_id"])
        if data is not None:
            req.add_header("content-type", "application/json")
        if idem:
            req.add_header("idempotency-key", idem)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def integration(self, name: str) -> Dict[str, str]:
        """A fresh API client and its key: the unit the report grades."""
        client = self.call("POST", "/api-clients", self.admin, {"name": f"retry {name}"}, idem=f"client-{name}-{self.nonce}")
        key = self.call(
            "POST",
            "/api-keys",
            self.admin,
            {"client_id": client["id"], "name": name, "scopes": ["read", "write"]},
            idem=f"key-{name}-{self.nonce}",
        )
        return {"rawKey": key["rawKey"], "client_id": client["id"], "key_id": key["id"]}

    def fault(self, key_id: str, operation: str, status: int, retry_after: Optional[int], times: int) -> str:
        action: Dict[str, Any] = {"type": "status", "status": status}
        if retry_after is not None:
            action["retry_after"] = retry_after
        rule = self.call("POST", "/_sandbox/faults", self.op, {"match": {"operation_id": operation, "key_id": key_id}, "action": action, "times": times})
        return str(rule["id"])

    def unfault(self, rule_id: str) -> None:
        """A step's fault ends with the step: a library that gave up leaves none to the next."""
        self.call("DELETE", f"/_sandbox/faults/{rule_id}", self.op)

    def readiness(self, key: Dict[str, str]) -> Dict[str, Any]:
        return self.call("GET", "/readiness", key)


class Api:
    """What a customer's code asks of its HTTP layer: a list and a create. Each raises on an
    answer it could not use (after whatever retrying its library did)."""

    def list(self, limit: int) -> int:
        raise NotImplementedError

    def create(self, body: Dict[str, Any], idem: str) -> int:
        raise NotImplementedError


def headers(key: Dict[str, str]) -> Dict[str, str]:
    return {"x-api-key": key["rawKey"], "x-service-client-id": key["client_id"]}


class Urllib3Api(Api):
    def __init__(self, base: str, key: Dict[str, str], retries: Optional[urllib3.Retry]):
        # retries None: the PoolManager's default, Retry.DEFAULT.
        self.http = urllib3.PoolManager() if retries is None else urllib3.PoolManager(retries=retries)
        self.base, self.key = base, key

    def _done(self, r: urllib3.BaseHTTPResponse) -> int:
        if r.status >= 400:
            raise RuntimeError(f"HTTP {r.status}")
        return r.status

    def list(self, limit: int) -> int:
        return self._done(self.http.request("GET", f"{self.base}/ads?limit={limit}", headers=headers(self.key)))

    def create(self, body: Dict[str, Any], idem: str) -> int:
        h = {**headers(self.key), "idempotency-key": idem, "content-type": "application/json"}
        return self._done(self.http.request("POST", f"{self.base}/ads", body=json.dumps(body), headers=h))


class HttpxApi(Api):
    """httpx, each call wrapped by `wrap` (a retry decorator), raising on 4xx/5xx."""

    def __init__(self, base: str, key: Dict[str, str], wrap: Callable[[Callable[..., int]], Callable[..., int]], transport: Optional[httpx.HTTPTransport] = None):
        self.client = httpx.Client(base_url=base, headers=headers(key), transport=transport, timeout=10)

        @wrap
        def list_ads(limit: int) -> int:
            r = self.client.get("/ads", params={"limit": limit})
            r.raise_for_status()
            return r.status_code

        @wrap
        def create_ad(body: Dict[str, Any], idem: str) -> int:
            r = self.client.post("/ads", json=body, headers={"idempotency-key": idem})
            r.raise_for_status()
            return r.status_code

        self.list = list_ads  # type: ignore[method-assign]
        self.create = create_ad  # type: ignore[method-assign]


def retry_after_or_true(exc: Exception) -> "bool | float":
    """stamina's backoff hook: the header's seconds when the answer has one, else retry 429 and
    5xx (and transport errors) with the exponential back-off."""
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        if status not in (408, 429) and status < 500:
            return False
        after = exc.response.headers.get("retry-after", "")
        return float(after) if after.isdigit() else True
    return isinstance(exc, httpx.TransportError)


def wait_retry_after_or(fallback: Callable[[tenacity.RetryCallState], float]) -> Callable[[tenacity.RetryCallState], float]:
    """A tenacity wait: the header's seconds when the failed answer has one, else `fallback`."""

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, httpx.HTTPStatusError):
            after = exc.response.headers.get("retry-after", "")
            if after.isdigit():
                return float(after)
        return fallback(state)

    return wait


def make_api(name: str, base: str, key: Dict[str, str]) -> Api:
    if name == "urllib3-defaults":
        return Urllib3Api(base, key, None)
    if name == "urllib3-ready":
        ready = urllib3.Retry(
            total=5,
            backoff_factor=0.5,
            status_forcelist=[429, 500, 502, 503, 504],
            # Only because every POST this client sends carries an Idempotency-Key.
            allowed_methods=urllib3.Retry.DEFAULT_ALLOWED_METHODS | {"POST"},
        )
        return Urllib3Api(base, key, ready)
    if name == "tenacity-bare":
        return HttpxApi(base, key, tenacity.retry)
    if name == "tenacity-random-exponential":
        return HttpxApi(base, key, tenacity.retry(wait=tenacity.wait_random_exponential(multiplier=1, max=60)))
    if name == "tenacity-ready":
        ready = tenacity.retry(
            retry=tenacity.retry_if_exception(lambda e: retry_after_or_true(e) is not False),
            wait=wait_retry_after_or(tenacity.wait_exponential(multiplier=0.5, max=30)),
            stop=tenacity.stop_after_attempt(6),
        )
        return HttpxApi(base, key, ready)
    if name == "httpx-transport":
        return HttpxApi(base, key, lambda f: f, transport=httpx.HTTPTransport(retries=3))
    if name == "backoff-expo":
        return HttpxApi(base, key, backoff.on_exception(backoff.expo, httpx.HTTPError))
    if name == "stamina-defaults":
        return HttpxApi(base, key, stamina.retry(on=httpx.HTTPError))
    if name == "stamina-ready":
        return HttpxApi(base, key, stamina.retry(on=retry_after_or_true, wait_initial=0.5, wait_jitter=0.5))
    raise ValueError(name)


def workload(control: Control, api: Api, key: Dict[str, str], run: str) -> List[str]:
    """The same job for every library; what each step ended as (a status, or the error)."""
    steps: List[Tuple[str, Optional[Tuple[str, int, Optional[int], int]], Callable[[], int]]] = [
        ("list after 503 x3", ("listAds", 503, None, 3), lambda: api.list(5)),
        ("list after 429 Retry-After 3", ("listAds", 429, 3, 1), lambda: api.list(4)),
        ("create after 503 Retry-After 3", ("createAd", 503, 3, 1), lambda: api.create(ad(run, 1), f"{run}-1")),
        ("create after 500", ("createAd", 500, None, 1), lambda: api.create(ad(run, 2), f"{run}-2")),
        ("next create", None, lambda: api.create(ad(run, 3), f"{run}-3")),
        ("next list", None, lambda: api.list(3)),
    ]
    outcome = []
    for label, fault, step in steps:
        rule = control.fault(key["key_id"], *fault) if fault else None
        try:
            outcome.append(f"{label}: {step()}")
        except Exception as e:  # the job gives the request up and goes on, as a batch job does
            outcome.append(f"{label}: gave up ({type(e).__name__}: {str(e)[:70]})")
        if rule:
            control.unfault(rule)
    return outcome


def ad(run: str, n: int) -> Dict[str, Any]:
    return {"company_id": GROCERS, "name": f"{run} order {n}", "headline": "Fresh today"}


def backoff_waits(journal: List[Dict[str, Any]]) -> List[int]:
    """The waits of step 1's retries as the server saw them (ms, from an answer to the next
    attempt's start): what `backs_off_on_5xx` judged. The journal lists newest first."""
    attempts = [e for e in reversed(journal) if e["operation_id"] == "listAds" and (e["query"] or {}).get("limit") == "5"]

    def ms(at: str) -> float:
        return datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000

    return [
        round(ms(b["at"]) - ms(a["at"]) - (a["duration_ms"] or 0))
        for a, b in zip(attempts, attempts[1:])
        if a["status"] >= 500
    ]


def run_library(control: Control, name: str, out: Dict[str, Any]) -> None:
    started = time.monotonic()
    try:
        key = control.integration(name)
        api = make_api(name, control.base, key)
        steps = workload(control, api, key, f"{name}-{control.nonce}")
        report = control.readiness(key)
        seconds = time.monotonic() - started
        journal = control.call("GET", "/requests?limit=60", key)["data"]
        out[name] = {"steps": steps, "report": report, "seconds": seconds, "waits": backoff_waits(journal)}
    except Exception as e:  # reported as this library's failure, the others still run
        out[name] = {"error": f"{type(e).__name__}: {e}", "seconds": time.monotonic() - started}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--credentials", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--limit-seconds", type=float, default=15.0, help="longest a library's run may take")
    args = ap.parse_args()
    control = Control(args.url.rstrip("/"), json.load(open(args.credentials)))
    # stamina logs each retry it schedules; its waits are what this checks, not its log lines.
    stamina.instrumentation.set_on_retry_hooks([])
    names = [n for n in EXPECTED if not args.only or n in args.only.split(",")]
    print("versions: " + ", ".join(f"{p} {metadata.version(p)}" for p in ("urllib3", "tenacity", "httpx", "httpcore", "backoff", "stamina")))
    results: Dict[str, Any] = {}
    # Side by side: each run has its own integration and its faults match only its key.
    threads = [threading.Thread(target=run_library, args=(control, n, results)) for n in names]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    passed = failed = 0
    for name in names:
        r = results[name]
        verdict = r.get("report", {}).get("verdict", "-")
        print(f"\n-- {name}: {SETTINGS[name]} ({r['seconds']:.1f} s, verdict {verdict})")
        if "error" in r:
            print(f"FAIL {name}: the run broke: {r['error']}")
            failed += 1
            continue
        for s in r["steps"]:
            print(f"   {s}")
        print(f"   waits after the list's 503s (ms, as journaled): {r['waits']}")
        checks = {c["id"]: c for c in r["report"]["checks"]}
        for check in CHECKS:
            got, want = checks[check]["status"], EXPECTED[name][check]
            if got in want:
                passed += 1
                print(f"PASS {name} {check}: {got}")
            else:
                failed += 1
                print(f"FAIL {name} {check}: {got}, expected {' or '.join(want)}: {checks[check]['advice']} evidence {checks[check]['evidence']}")
        if r["seconds"] < args.limit_seconds:
            passed += 1
            print(f"PASS {name} ran in {r['seconds']:.1f} s (limit {args.limit_seconds:.0f} s)")
        else:
            failed += 1
            print(f"FAIL {name} ran in {r['seconds']:.1f} s, over the {args.limit_seconds:.0f} s limit")
    print(f"\nretry libraries (python): {len(names)} runs side by side in {time.monotonic() - started:.1f} s")
    print(f"{passed} checks passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
