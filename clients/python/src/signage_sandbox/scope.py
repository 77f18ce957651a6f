"""What the current test is, for the journal: its name (sent as ``Signage-Test-Name`` by every
:class:`~signage_sandbox.Client`) and the journal mark taken when it began (``after``), so that
:meth:`Operator.requests`, :meth:`Operator.count_requests` and :meth:`Operator.readiness` count
this test's requests by default, although the journal outlives every restore.

The plugin sets both around each test; outside pytest they stay unset and nothing is scoped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

#: The header a test's requests are tagged with (journaled as ``test_name``, filterable).
TEST_NAME_HEADER = "Signage-Test-Name"


@dataclass
class TestScope:
    """The running test: its node id and the journal mark taken as it began."""

    __test__ = False  # not a test class, whatever pytest collects

    name: Optional[str] = None
    after: Optional[str] = None


current = TestScope()


def begin(name: Optional[str]) -> None:
    """A test begins: its name is known, its mark not yet."""
    current.name = name
    current.after = None


def end() -> None:
    current.name = None
    current.after = None
