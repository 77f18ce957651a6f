"""The sandbox operator's controls (`/_sandbox/*`, a key with the `sandbox` scope).

The operator is never rate limited on these routes, so a harness may call them before every test.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .http import Answer, Client


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

    def advance(self, seconds: Optional[int] = None, to: Optional[str] = None) -> Dict[str, Any]:
        """Moves a frozen clock by ``seconds`` or to the RFC 3339 instant ``to``, running what falls
        due on the way; answers the transitions and events it produced."""
        if (seconds is None) == (to is None):
            raise ValueError("give exactly one of seconds and to")
        body: Dict[str, Any] = {"seconds": seconds} if seconds is not None else {"to": to}
        result: Dict[str, Any] = self.request("POST", "/_sandbox/clock/advance", body)
        return result

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
        body: Dict[str, Any] = {"action": action}
        if match is not None:
            body["match"] = match
        if times is not None:
            body["times"] = times
        if probability is not None:
            body["probability"] = probability
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
