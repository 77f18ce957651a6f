"""The ten-line example of the README (the repository's front door and the package's README show
the same one) runs as written, twice in one session: a customer who copies it gets a passing test
whatever ran before it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict

_REPO = Path(__file__).resolve().parents[3]


def _example(readme: Path) -> str:
    blocks = re.findall(r"```python\n(def test_a_new_ad_is_announced.*?)```", readme.read_text(), re.S)
    assert blocks, f"{readme} shows no ten-line example"
    return str(blocks[0])


_FRONT_DOOR = _example(_REPO / "README.md")
assert _FRONT_DOOR == _example(_REPO / "clients" / "python" / "README.md"), (
    "README.md and clients/python/README.md show different examples"
)

# The example, defined twice under two names, so the suite runs it twice.
for _run in ("first", "second"):
    _scope: Dict[str, Any] = {}
    exec(compile(_FRONT_DOOR, "README.md", "exec"), _scope)
    globals()[f"test_readme_example_{_run}_run"] = _scope["test_a_new_ad_is_announced"]
