"""Starting and stopping one `signage serve` process, and what a test needs of it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional

from .http import Client, Credential
from .operator import Operator

_LISTENING = re.compile(r"signage listening on (http://[^\s]+)")


class SignageStartError(RuntimeError):
    """The binary could not be found, or stopped before it was listening."""


def installed_binary() -> Optional[str]:
    """The signage binary this package's wheel installed beside the running interpreter's scripts
    (the venv's ``bin/``), found even when that directory is not on ``PATH``."""
    scripts = sysconfig.get_path("scripts")
    for name in ("signage", "signage.exe"):
        path = Path(scripts) / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def find_binary(explicit: Optional[str] = None) -> str:
    """The signage binary: ``explicit`` (``--signage-bin``), else ``$SIGNAGE_BIN``, else the one
    installed with this package, else ``signage`` on ``PATH``."""
    candidate = (
        explicit
        or os.environ.get("SIGNAGE_BIN")
        or installed_binary()
        or shutil.which("signage")
    )
    if not candidate:
        raise SignageStartError(
            "no signage binary: install this package from its wheel (it carries one), set"
            " SIGNAGE_BIN, pass --signage-bin, or put `signage` on PATH"
        )
    path = Path(candidate)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise SignageStartError(f"{candidate} is not an executable file")
    return str(path.resolve())


def load_credentials(path: Optional[str] = None) -> Dict[str, Credential]:
    """The demo credentials by name: from ``path``, else the copy shipped with this package."""
    if path:
        text = Path(path).read_text()
    else:
        text = resources.files("signage_sandbox").joinpath("demo_credentials.json").read_text()
    data = json.loads(text)
    return {
        k["name"]: Credential(
            name=k["name"],
            raw_key=k["rawKey"],
            client_id=k["client_id"],
            scopes=tuple(k.get("scopes", [])),
            key_id=k.get("key_id", ""),
            account_id=k.get("account_id", ""),
        )
        for k in data["keys"]
    }


class SignageServer:
    """One sandbox process on 127.0.0.1 (port 0), on a throw-away database.

    ``clock`` freezes the sandbox clock at an RFC 3339 instant (``None``: the system clock); ``seed``
    makes ids and secrets repeat from run to run. ``env`` adds ``SIGNAGE_*`` settings.
    """

    def __init__(
        self,
        binary: Optional[str] = None,
        clock: Optional[str] = "2026-03-02T09:00:00Z",
        seed: Optional[int] = 7,
        env: Optional[Dict[str, str]] = None,
        credentials: Optional[str] = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.binary = find_binary(binary)
        self.clock = clock
        self.seed = seed
        self.env = dict(env or {})
        self.credentials = load_credentials(credentials)
        self.start_timeout = start_timeout
        self.base_url = ""
        self._process: Optional[subprocess.Popen[str]] = None
        self._workdir: Optional[tempfile.TemporaryDirectory[str]] = None
        self._log: List[str] = []

    def start(self) -> "SignageServer":
        """Starts the process and waits for its listening line."""
        args = [self.binary, "serve", "--port", "0", "--database", ":memory:"]
        if self.clock:
            args += ["--clock", self.clock]
        if self.seed is not None:
            args += ["--seed", str(self.seed)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNAGE_")}
        env.update(self.env)
        # Its own empty directory: no stray ./signage.toml is read.
        self._workdir = tempfile.TemporaryDirectory(prefix="signage-pytest-")
        self._process = subprocess.Popen(
            args,
            cwd=self._workdir.name,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found: List[str] = []
        ready = threading.Event()

        def read() -> None:
            proc = self._process
            if proc is None or proc.stdout is None:
                return
            for line in proc.stdout:
                self._log.append(line.rstrip("\n"))
                del self._log[:-200]
                match = _LISTENING.search(line)
                if match and not found:
                    found.append(match.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(self.start_timeout)
        if not found:
            self.stop()
            tail = "\n".join(self._log[-20:])
            raise SignageStartError(f"signage did not start listening:\n{tail}")
        self.base_url = found[0].rstrip("/")
        return self

    def stop(self) -> None:
        """SIGTERM (the server removes its throw-away database), then SIGKILL after 5 s."""
        proc, self._process = self._process, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> "SignageServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def log(self) -> List[str]:
        """The server's last output lines."""
        return list(self._log)

    def client(self, key: Optional[str] = None) -> Client:
        """A client authenticated as the demo key ``key`` (``None``: unauthenticated)."""
        if key is None:
            return Client(self.base_url)
        try:
            credential = self.credentials[key]
        except KeyError:
            raise KeyError(f"no demo key {key!r}; known: {sorted(self.credentials)}") from None
        return Client(self.base_url, credential)

    @property
    def operator(self) -> Operator:
        """The sandbox operator's helpers (demo key ``sandbox-operator``)."""
        return Operator(self.client("sandbox-operator"))

    def wait_healthy(self, timeout: float = 10.0) -> None:
        """Polls ``/health`` until it answers 200 (it never shifts a seeded sandbox's ids)."""
        end = time.monotonic() + timeout
        while True:
            if self.client().get("/health").status == 200:
                return
            if time.monotonic() > end:
                raise SignageStartError("/health did not answer 200")
            time.sleep(0.05)
