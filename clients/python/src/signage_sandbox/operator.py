"""The sandbox operator's controls (`/_sandbox/*`, a key with the `sandbox` scope).

The operator is never rate limited on these routes, so a harness may call them before every test.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union
from urllib.parse import urlencode

from . import scope
from .http import Answer, Client

Filter = Union[str, int, bool, None]


def _query(filters: Dict[str, Filter]) -> str:
    """``?a=1&b=true`` from the filters that are set (booleans as ``true``/``false``)."""
    pairs = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in filters.items() if v is not None]
    return "?" + urlencode(pairs) if pairs else ""


def _given(**members: Any) -> Dict[str, Any]:
    """The members of a request body that were given (an omitted one is not sent as ``null``)."""
    return {k: v for k, v in members.items() if v is not None}


class Operator:
    """Clock, faults and snapshots of one sandbox, as its operator."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Any operator call; the JSON answer, or :class:`signage_sandbox.SignageError`."""
        answer: Answer = self.client.request(method, path, body).raise_for_status()
        return answer.json

    # The clock.
    def clock(self) -> Dict[str, Any]:
        """``{"now", "mode", "started_at"}``."""
        result: Dict[str, Any] = self.request("GET", "/_sandbox/clock")
        return result

    def advance(
        self,
        seconds: Optional[int] = None,
        to: Optional[str] = None,
        drain: bool = False,
        drain_timeout_ms: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Moves the clock by ``seconds`` or to the RFC 3339 instant ``to``, running what falls due
        on the way; answers the transitions and events it produced. ``drain=True`` also sends every
        webhook delivery due at each stop and waits until each attempt is recorded."""
        if (seconds is None) == (to is None):
            raise ValueError("give exactly one of seconds and to")
        body: Dict[str, Any] = {"seconds": seconds} if seconds is not None else {"to": to}
        if drain:
            body["drain"] = True
            if drain_timeout_ms is not None:
                body["drain_timeout_ms"] = drain_timeout_ms
        result: Dict[str, Any] = self.request("POST", "/_sandbox/clock/advance", body)
        return result

    # Webhook deliveries: wait for them, list them, cause them.
    def drain(self, timeout_ms: Optional[int] = None) -> Dict[str, Any]:
        """Sends every webhook delivery due now and returns once each attempt's outcome is
        recorded: call it after a write instead of sleeping. A wait longer than ``timeout_ms``
        (default 10000) raises :class:`SignageError` with code ``drain_timeout``."""
        body: Dict[str, Any] = {} if timeout_ms is None else {"timeout_ms": timeout_ms}
        result: Dict[str, Any] = self.request("POST", "/_sandbox/webhooks/drain", body)
        return result

    def deliveries(
        self,
        status: Optional[str] = None,
        webhook_id: Optional[str] = None,
        event_type: Optional[str] = None,
        limit: int = 100,
    ) -> List[Dict[str, Any]]:
        """Every delivery across webhooks, newest first, walking every page; ``status`` is
        ``pending``, ``succeeded`` or ``failed``."""
        filters: Dict[str, Filter] = {
            "status": status,
            "webhook_id": webhook_id,
            "event_type": event_type,
            "limit": limit,
        }
        return self._walk("/_sandbox/deliveries", filters)

    def trigger(
        self,
        event_type: str,
        company_id: str,
        object_id: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Emits one event of any catalogued type (``device.offline``, ``invoice.overdue``...),
        built from the current state as the real transition builds it, recorded and delivered
        like any event; answers the event with its queued deliveries."""
        body = {"type": event_type, "company_id": company_id, **_given(object_id=object_id, data=data)}
        result: Dict[str, Any] = self.request("POST", "/_sandbox/events", body)
        return result

    def drill(self, webhook_id: str, kind: str) -> Dict[str, Any]:
        """Runs a webhook drill (``duplicate``, ``out_of_order``, ``bad_signature``,
        ``missing_signature``, ``stale_timestamp``, ``future_timestamp`` or ``rotation``) against
        the webhook's receiver; answers its verdict."""
        result: Dict[str, Any] = self.request("POST", f"/_sandbox/webhooks/{webhook_id}/drills", {"kind": kind})
        return result

    def sink(self, name: str) -> List[Dict[str, Any]]:
        """What the built-in receiver ``/_sandbox/sink/{name}`` kept (for every account: the
        operator's view), newest first; it keeps only deliveries a webhook pointing at it signed."""
        result: List[Dict[str, Any]] = self.request("GET", f"/_sandbox/sink/{name}")["data"]
        return result

    def clear_sink(self, name: str) -> None:
        self.request("DELETE", f"/_sandbox/sink/{name}")

    # The request journal: what clients sent and how each was answered.
    def mark(self) -> str:
        """A journal mark: pass it as ``after`` to count only what comes later (taking it adds
        no entry). The plugin takes one as each test begins."""
        answer: Dict[str, Any] = self.request("GET", "/requests/mark")
        after: str = answer["after"]
        return after

    def _scoped(self, filters: Dict[str, Filter], this_test: Filter) -> Dict[str, Filter]:
        """``filters`` with the current test's mark as ``after``, unless given or not wanted."""
        if this_test is not False and "after" not in filters and scope.current.after is not None:
            return {**filters, "after": scope.current.after}
        return filters

    def requests(self, **filters: Filter) -> List[Dict[str, Any]]:
        """Journal entries, newest first, every page walked: inside a test, only those written
        since it began (``this_test=False``: the whole journal, which outlives every restore).
        Filters as ``GET /_sandbox/requests`` takes them: ``operation_id``, ``key_id``,
        ``status`` (``503`` or ``5xx``), ``idempotency_key``, ``via``, ``tool``, ``faulted``,
        ``since``, ``until``, ``account_id``, ``test_name``, ``after``."""
        this_test = filters.pop("this_test", True)
        return self._walk("/_sandbox/requests", {**self._scoped(filters, this_test), "limit": 100})

    def count_requests(self, **filters: Filter) -> int:
        """How many journal entries match, in one call, counting this test's only (as
        :meth:`requests`): e.g. ``count_requests(operation_id="createAd",
        idempotency_key="order-7", status=503, faulted=True) == 2``, however often the suite ran
        before."""
        this_test = filters.pop("this_test", True)
        query = _query({**self._scoped(filters, this_test), "count": True})
        answer: Dict[str, Any] = self.request("GET", "/_sandbox/requests" + query)
        count: int = answer["count"]
        return count

    def readiness(
        self, account_id: str, key_id: Optional[str] = None, *, this_test: bool = True
    ) -> Dict[str, Any]:
        """The go-live readiness report of one account (optionally one key's requests): inside a
        test, graded on this test's requests and drills only (``this_test=False``: all of them)."""
        filters = self._scoped({"account_id": account_id, "key_id": key_id}, this_test)
        result: Dict[str, Any] = self.request("GET", "/_sandbox/readiness" + _query(filters))
        return result

    def readiness_junit(self, account_id: str, key_id: Optional[str] = None, *, this_test: bool = False) -> str:
        """The report as JUnit XML: a ``<failure>`` exactly for each check that keeps the verdict
        from ``ready``. The whole journal by default (what a session's ``readiness.xml`` holds)."""
        filters = self._scoped({"account_id": account_id, "key_id": key_id, "format": "junit"}, this_test)
        answer = self.client.request("GET", "/_sandbox/readiness" + _query(filters)).raise_for_status()
        return answer.body.decode()

    def _walk(self, path: str, filters: Dict[str, Filter]) -> List[Dict[str, Any]]:
        rows: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            page: Dict[str, Any] = self.request("GET", path + _query({**filters, "cursor": cursor}))
            rows.extend(page["data"])
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return rows

    # Faults.
    def add_fault(
        self,
        action: Dict[str, Any],
        match: Optional[Dict[str, Any]] = None,
        times: Optional[int] = None,
        probability: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Adds a fault rule, e.g. ``add_fault({"type": "status", "status": 503}, {"path": "/ads"},
        times=1)``; returns it (its ``id`` deletes it)."""
        body = {"action": action, **_given(match=match, times=times, probability=probability)}
        result: Dict[str, Any] = self.request("POST", "/_sandbox/faults", body)
        return result

    def faults(self) -> List[Dict[str, Any]]:
        result: List[Dict[str, Any]] = self.request("GET", "/_sandbox/faults")["data"]
        return result

    def remove_fault(self, fault_id: str) -> None:
        self.request("DELETE", f"/_sandbox/faults/{fault_id}")

    def clear_faults(self) -> None:
        self.request("DELETE", "/_sandbox/faults")

    # Snapshots: the whole world (database, clock, generator, faults).
    def snapshot(self, name: str) -> Dict[str, Any]:
        result: Dict[str, Any] = self.request("POST", "/_sandbox/snapshots", {"name": name})
        return result

    def restore(self, name: str) -> Dict[str, Any]:
        result: Dict[str, Any] = self.request("POST", f"/_sandbox/snapshots/{name}/restore")
        return result

    def snapshots(self) -> List[Dict[str, Any]]:
        result: List[Dict[str, Any]] = self.request("GET", "/_sandbox/snapshots")["data"]
        return result

    def delete_snapshot(self, name: str) -> None:
        self.request("DELETE", f"/_sandbox/snapshots/{name}")
