"""A webhook receiver on 127.0.0.1 that verifies every delivery with the official Standard Webhooks
library (`standardwebhooks`), unpatched.

The sandbox signs `webhook-timestamp` with the wall clock by default (`webhooks.timestamps =
"wall"`), so the library's ±5 minute check passes even on a frozen sandbox.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Delivery:
    """One delivery as received: its headers (lower-case names), raw body and verdict."""

    path: str
    headers: Dict[str, str]
    body: bytes
    verified: bool
    error: Optional[str]

    @property
    def id(self) -> str:
        """``webhook-id``: the event id, the same on every attempt (deduplicate by it)."""
        return self.headers.get("webhook-id", "")

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def type(self) -> str:
        kind = self.json.get("type", "")
        return kind if isinstance(kind, str) else ""


class WebhookReceiver:
    """Keeps every delivery; answers 204 when it verifies with one of :attr:`secrets`, else 400.

    Give it the secret the sandbox returned when the webhook was created (:meth:`trust`).
    """

    def __init__(self) -> None:
        self._secrets: List[str] = []
        self._deliveries: List[Delivery] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                length = int(self.headers.get("content-length", "0") or "0")
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                delivery = receiver._verify(self.path, headers, body)
                with receiver._lock:
                    receiver._deliveries.append(delivery)
                self.send_response(204 if delivery.verified else 400)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str = "/webhooks") -> str:
        """The URL to register as a webhook's ``url``."""
        return f"http://127.0.0.1:{self.port}{path}"

    def trust(self, secret: str) -> None:
        """Accepts deliveries signed with ``secret`` (``whsec_...``), besides earlier ones."""
        with self._lock:
            self._secrets.append(secret)

    def _verify(self, path: str, headers: Dict[str, str], body: bytes) -> Delivery:
        with self._lock:
            secrets = list(self._secrets)
        error: Optional[str] = "no secret trusted yet (call trust())" if not secrets else None
        for secret in secrets:
            try:
                Webhook(secret).verify(body, headers)
                return Delivery(path, headers, body, True, None)
            except WebhookVerificationError as err:
                error = str(err)
        return Delivery(path, headers, body, False, error)

    @property
    def deliveries(self) -> List[Delivery]:
        """Every delivery so far, in arrival order (verified or not)."""
        with self._lock:
            return list(self._deliveries)

    def wait_for(self, count: int = 1, event_type: Optional[str] = None, timeout: float = 10.0) -> List[Delivery]:
        """Waits until ``count`` verified deliveries (of ``event_type``, if given) have arrived and
        returns them; raises :class:`AssertionError` with what did arrive otherwise."""
        end = time.monotonic() + timeout
        while True:
            got = [
                d
                for d in self.deliveries
                if d.verified and (event_type is None or d.type == event_type)
            ]
            if len(got) >= count:
                return got
            if time.monotonic() > end:
                seen = [(d.type, d.verified, d.error) for d in self.deliveries]
                raise AssertionError(
                    f"expected {count} verified deliveries"
                    f"{' of ' + event_type if event_type else ''} within {timeout} s; got {seen}"
                )
            time.sleep(0.02)

    def clear(self) -> None:
        with self._lock:
            self._deliveries.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
