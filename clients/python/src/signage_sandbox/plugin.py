"""The pytest plugin (registered through the ``pytest11`` entry point on install).

Fixtures:

- ``signage`` (session): one ``signage serve`` process on a free port, frozen and seeded by default;
  a snapshot of its fresh world is taken once.
- ``signage_world`` (function): restores that snapshot before the test — database, clock, seeded
  ids and secrets, fault rules — and returns the server: every test starts from the same world.
- ``operator`` (function): the operator's helpers on a clean world (clock, advance, faults,
  snapshots).
- ``webhook_receiver`` (function): a local receiver verifying with ``standardwebhooks``.

Options (command line or ``[pytest]`` ini): ``--signage-bin`` / ``signage_bin`` (else
``$SIGNAGE_BIN``, else the binary installed with this package, else ``signage`` on PATH), ``--signage-clock`` / ``signage_clock`` (an RFC 3339
instant, or ``system``), ``--signage-seed`` / ``signage_seed`` (an integer, or ``none``).
"""

from __future__ import annotations

from typing import Iterator, Optional

import pytest

from .operator import Operator
from .receiver import WebhookReceiver
from .server import SignageServer

CLEAN_SNAPSHOT = "signage-pytest-clean"
DEFAULT_CLOCK = "2026-03-02T09:00:00Z"
DEFAULT_SEED = "7"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("signage", "signage sandbox")
    group.addoption("--signage-bin", default=None, help="the signage binary (else $SIGNAGE_BIN, else the one installed with this package, else PATH)")
    group.addoption("--signage-clock", default=None, help=f"frozen clock instant, or `system` (default {DEFAULT_CLOCK})")
    group.addoption("--signage-seed", default=None, help=f"seed, or `none` (default {DEFAULT_SEED})")
    parser.addini("signage_bin", "the signage binary", default="")
    parser.addini("signage_clock", "frozen clock instant, or `system`", default=DEFAULT_CLOCK)
    parser.addini("signage_seed", "seed, or `none`", default=DEFAULT_SEED)


def _setting(config: pytest.Config, name: str) -> str:
    value = config.getoption(f"--signage-{name}")
    if value is None:
        value = config.getini(f"signage_{name}")
    return str(value or "")


@pytest.fixture(scope="session")
def signage(request: pytest.FixtureRequest) -> Iterator[SignageServer]:
    """The session's sandbox, started once; its fresh world is saved as a snapshot."""
    config = request.config
    clock: Optional[str] = _setting(config, "clock") or DEFAULT_CLOCK
    if clock == "system":
        clock = None
    seed_text = _setting(config, "seed") or DEFAULT_SEED
    seed = None if seed_text.lower() == "none" else int(seed_text)
    server = SignageServer(binary=_setting(config, "bin") or None, clock=clock, seed=seed)
    server.start()
    try:
        server.operator.snapshot(CLEAN_SNAPSHOT)
        yield server
    finally:
        server.stop()


@pytest.fixture
def signage_world(signage: SignageServer) -> SignageServer:
    """The session's sandbox, restored to its fresh world for this test."""
    signage.operator.restore(CLEAN_SNAPSHOT)
    return signage


@pytest.fixture
def operator(signage_world: SignageServer) -> Operator:
    """The operator's helpers, on a clean world."""
    return signage_world.operator


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A receiver on 127.0.0.1 that verifies deliveries with ``standardwebhooks``."""
    receiver = WebhookReceiver()
    try:
        yield receiver
    finally:
        receiver.close()
