"""A small HTTP client for the signage API (standard library only): one demo key per client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

from . import scope


@dataclass(frozen=True)
class Credential:
    """A demo API key: what the two credential headers carry, and the ids the journal and the
    readiness report name it by (``key_id``, ``account_id``)."""

    name: str
    raw_key: str
    client_id: str
    scopes: tuple[str, ...] = ()
    key_id: str = ""
    account_id: str = ""


@dataclass
class Answer:
    """One HTTP answer: status, headers (lower-case names) and the body, decoded when JSON."""

    status: int
    headers: Dict[str, str]
    body: bytes
    json: Any = field(default=None)

    def raise_for_status(self) -> "Answer":
        """The answer itself when 2xx; else :class:`SignageError` with the problem body."""
        if not 200 <= self.status < 300:
            raise SignageError(self)
        return self


class SignageError(Exception):
    """A non-2xx answer (RFC 9457 problem body in ``answer.json`` when there is one)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        detail = answer.json if answer.json is not None else answer.body[:500].decode("utf-8", "replace")
        super().__init__(f"HTTP {answer.status}: {detail}")

    @property
    def code(self) -> Optional[str]:
        """The problem's ``code`` (``snapshot_exists``, ``clock_not_frozen``, ...), if any."""
        body = self.answer.json
        if isinstance(body, dict):
            code = body.get("code")
            return code if isinstance(code, str) else None
        return None


class Client:
    """Calls the API at ``base_url`` as one credential (or none, for public routes). Inside a
    test, every request carries ``Signage-Test-Name: <the test's node id>``."""

    def __init__(self, base_url: str, credential: Optional[Credential] = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.credential = credential
        self.timeout = timeout

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Answer:
        """Sends one request; never raises for an HTTP status (see :meth:`Answer.raise_for_status`)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if self.credential is not None:
            req.add_header("X-API-Key", self.credential.raw_key)
            req.add_header("X-Service-Client-Id", self.credential.client_id)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if scope.current.name:
            # The journal tags the request with the test that sent it (`test_name`).
            req.add_header(scope.TEST_NAME_HEADER, scope.current.name[:200])
        given = {name.lower() for name in (headers or {})}
        if method == "POST" and "idempotency-key" not in given and not path.startswith("/_sandbox/"):
            # A ready client sends a fresh key with every create (the readiness report's
            # `idempotency_keys_on_create`); this client does not retry, so each key is used once.
            req.add_header("Idempotency-Key", f"pytest-{uuid.uuid4()}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return _answer(resp.status, dict(resp.headers.items()), resp.read())
        except urllib.error.HTTPError as err:
            return _answer(err.code, dict(err.headers.items()), err.read())

    def get(self, path: str, headers: Optional[Mapping[str, str]] = None) -> Answer:
        return self.request("GET", path, None, headers)

    def post(self, path: str, body: Any = None, headers: Optional[Mapping[str, str]] = None) -> Answer:
        return self.request("POST", path, body, headers)

    def patch(self, path: str, body: Any = None, headers: Optional[Mapping[str, str]] = None) -> Answer:
        return self.request("PATCH", path, body, headers)

    def delete(self, path: str, headers: Optional[Mapping[str, str]] = None) -> Answer:
        return self.request("DELETE", path, None, headers)


def _answer(status: int, headers: Dict[str, str], body: bytes) -> Answer:
    lower = {k.lower(): v for k, v in headers.items()}
    decoded: Any = None
    if body and "json" in lower.get("content-type", ""):
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
    return Answer(status=status, headers=lower, body=body, json=decoded)
