"""The pytest plugin (registered through the ``pytest11`` entry point on install).

Fixtures:

- ``signage`` (session): one ``signage serve`` process on a free port, frozen and seeded by default;
  a snapshot of its fresh world is taken once.
- ``signage_world`` (function): restores that snapshot before the test — database, clock, seeded
  ids and secrets, fault rules — and returns the server: every test starts from the same world.
- ``operator`` (function): the operator's helpers on a clean world (clock, advance, faults,
  snapshots).
- ``webhook_receiver`` (function): a local receiver verifying with ``standardwebhooks``.

Every test is scoped in the journal: each request of a :class:`Client` carries
``Signage-Test-Name: <node id>``, and a journal mark is taken as the test begins, so
``operator.count_requests()``, ``requests()`` and ``readiness()`` count that test's own requests
(the journal outlives every restore).

Options (command line or ``[pytest]`` ini): ``--signage-bin`` / ``signage_bin`` (else
``$SIGNAGE_BIN``, else the binary installed with this package, else ``signage`` on PATH), ``--signage-clock`` / ``signage_clock`` (an RFC 3339
instant, or ``system``), ``--signage-seed`` / ``signage_seed`` (an integer, or ``none``),
``--signage-readiness`` / ``signage_readiness`` (a path: the session's readiness report is
written there as JUnit XML when the session ends; under pytest-xdist, one server per worker and
one report combining all of their evidence) with ``--signage-readiness-account`` /
``signage_readiness_account`` (the account graded; default the demo account of Northwind).
"""

from __future__ import annotations

from typing import Iterator, Optional

import pytest

from pathlib import Path

from . import scope
from .combine import combine
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
    group.addoption("--signage-readiness", default=None, help="write the session's readiness report (JUnit XML) to this path")
    group.addoption("--signage-readiness-account", default=None, help="the account it grades (default: the demo account of Northwind)")
    parser.addini("signage_readiness", "write the session's readiness report (JUnit XML) here", default="")
    parser.addini("signage_readiness_account", "the account the readiness report grades", default="")


def _setting(config: pytest.Config, name: str) -> str:
    value = config.getoption(f"--signage-{name}")
    if value is None:
        value = config.getini(f"signage_{name.replace('-', '_')}")
    return str(value or "")


#: The session's server once it runs: a test that begins takes its mark there.
_running: Optional[SignageServer] = None


def _take_mark(server: SignageServer) -> None:
    scope.current.after = server.operator.mark()


def pytest_runtest_setup(item: pytest.Item) -> None:
    scope.begin(item.nodeid)
    if _running is not None:
        _take_mark(_running)


def pytest_runtest_teardown(item: pytest.Item) -> None:
    scope.end()


def _worker_id(config: pytest.Config) -> Optional[str]:
    """The pytest-xdist worker this process is (``gw0``…), or ``None`` outside xdist's workers."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["workerid"])


def _parts_dir(path: str) -> Path:
    """Where xdist's workers leave their reports for the controller to combine."""
    return Path(path + ".parts")


def _write_readiness(config: pytest.Config, server: SignageServer) -> None:
    """The whole session's report as JUnit XML, where the options say (on `:memory:`, the
    ``signage readiness`` command has no file to read: the plugin asks the server). Under
    pytest-xdist a worker leaves its own report beside it, and the controller writes the
    combination of all of them there when the session ends ([`combine`])."""
    path = _setting(config, "readiness")
    if not path:
        return
    account = _setting(config, "readiness-account") or server.credentials["northwind-admin"].account_id
    xml = server.operator.readiness_junit(account, this_test=False)
    worker = _worker_id(config)
    target = Path(path) if worker is None else _parts_dir(path) / f"{worker}.xml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(xml)


def pytest_configure(config: pytest.Config) -> None:
    # The controller of an xdist run clears what an earlier run's workers left.
    path = _setting(config, "readiness")
    if path and _worker_id(config) is None:
        for old in _parts_dir(path).glob("*.xml"):
            old.unlink()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On xdist's controller, once every worker has finished: one report from all of theirs."""
    config = session.config
    path = _setting(config, "readiness")
    if not path or _worker_id(config) is not None:
        return
    parts = sorted(_parts_dir(path).glob("*.xml"))
    if not parts:
        return
    Path(path).write_text(combine([p.read_text() for p in parts]))


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
    global _running
    try:
        server.operator.snapshot(CLEAN_SNAPSHOT)
        _running = server
        if scope.current.name is not None:
            _take_mark(server)
        yield server
        _write_readiness(config, server)
    finally:
        _running = None
        server.stop()


@pytest.fixture
def signage_world(signage: SignageServer) -> SignageServer:
    """The session's sandbox, restored to its fresh world for this test."""
    signage.operator.restore(CLEAN_SNAPSHOT)
    # The test's own requests come after the restore.
    _take_mark(signage)
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
