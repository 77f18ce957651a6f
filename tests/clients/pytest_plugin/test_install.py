"""One install brings everything: the wheel of signage-sandbox carries the signage binary, and the
plugin finds it beside the interpreter with no SIGNAGE_BIN and nothing on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from signage_sandbox.server import SignageServer, find_binary


def test_the_binary_comes_with_the_package() -> None:
    assert "SIGNAGE_BIN" not in os.environ, "run without SIGNAGE_BIN: the wheel's binary is under test"
    assert shutil.which("signage") is None, "nothing named signage may be on PATH for this test"
    found = Path(find_binary())
    assert found.parent == Path(sysconfig.get_path("scripts")).resolve() or found.is_relative_to(
        Path(sys.prefix).resolve()
    ), found
    version = subprocess.run([str(found), "--help"], capture_output=True, text=True, timeout=30)
    assert "serve" in version.stdout


def test_the_session_server_runs_that_binary(signage: SignageServer) -> None:
    assert Path(signage.binary).resolve() == Path(find_binary()).resolve()
