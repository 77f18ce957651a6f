#!/usr/bin/env python3
"""Builds what a release publishes, from one signage binary already built (no compile here):

    python3 .ci/release.py --binary target/release/signage --out DIR

1. `signage-<version>-x86_64-linux.tar.gz`: the binary, README, LICENSE and signage.toml.example
   in one folder, as a download.
2. `signage_sandbox-<version>-py3-none-linux_x86_64.whl`: the pytest plugin (clients/python/src)
   with the binary in the wheel's `scripts`, so `pip install` copies files and compiles nothing
   (the wheel is tagged `linux_x86_64`, honest for a binary linked against this machine's glibc;
   a registry upload would build it on a manylinux image instead).
3. `signage-sandbox-linux-x64-<version>.tgz` and `signage-sandbox-<version>.tgz`: the npm
   platform-package pattern (esbuild, turbo): the platform package carries the binary and says
   its `os` and `cpu`; the main package (clients/node, plain JavaScript with hand-written types)
   depends on it optionally, names `signage` as its `bin`, exports `binaryPath()` and `start()`
   (a server on a free port, stopped on exit) and the test harness for vitest, jest and
   node:test (`signage-sandbox/vitest`, `/jest`, `/node-test`, `/harness`).

Prints each artifact's size and exits non-zero if anything is missing. Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import re
import stat
import sys
import tarfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Fixed timestamps: the same binary and sources give byte-identical artifacts.
EPOCH = (2026, 1, 1, 0, 0, 0)
MTIME = int(time.mktime(EPOCH + (0, 0, 0)))


def version() -> str:
    m = re.search(r'^version = "([^"]+)"', (REPO / "Cargo.toml").read_text(), re.M)
    if not m:
        raise SystemExit("no version in Cargo.toml")
    return m.group(1)


def add_tar(tar: tarfile.TarFile, name: str, data: bytes, executable: bool = False) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = MTIME
    info.mode = 0o755 if executable else 0o644
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def tarball(binary: bytes, out: Path, v: str) -> Path:
    folder = f"signage-{v}-x86_64-linux"
    path = out / f"{folder}.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        add_tar(tar, f"{folder}/signage", binary, executable=True)
        for name in ("README.md", "LICENSE", "signage.toml.example"):
            add_tar(tar, f"{folder}/{name}", (REPO / name).read_bytes())
    return path


def wheel(binary: bytes, out: Path, v: str) -> Path:
    dist = "signage_sandbox"
    info = f"{dist}-{v}.dist-info"
    pyproject = (REPO / "clients/python/pyproject.toml").read_text()
    summary = re.search(r'^description = "([^"]+)"', pyproject, re.M)
    metadata = "\n".join(
        [
            "Metadata-Version: 2.1",
            "Name: signage-sandbox",
            f"Version: {v}",
            f"Summary: {summary.group(1) if summary else 'signage sandbox'}",
            "License: MIT",
            "Requires-Python: >=3.9",
            "Requires-Dist: pytest>=7",
            "Requires-Dist: standardwebhooks>=1.1",
            "Classifier: Framework :: Pytest",
            "Classifier: Typing :: Typed",
            "Description-Content-Type: text/markdown",
            "",
            (REPO / "clients/python/README.md").read_text(),
        ]
    )
    files: list[tuple[str, bytes, bool]] = []
    src = REPO / "clients/python/src"
    for f in sorted((src / dist).rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files.append((f.relative_to(src).as_posix(), f.read_bytes(), False))
    files.append((f"{dist}-{v}.data/scripts/signage", binary, True))
    files.append((f"{info}/METADATA", metadata.encode(), False))
    files.append(
        (
            f"{info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: signage .ci/release.py\nRoot-Is-Purelib: false\n"
            b"Tag: py3-none-linux_x86_64\n",
            False,
        )
    )
    files.append((f"{info}/entry_points.txt", b"[pytest11]\nsignage = signage_sandbox.plugin\n", False))
    record = []
    for name, data, _ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), False))
    path = out / f"{dist}-{v}-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for name, data, executable in files:
            zi = zipfile.ZipInfo(name, EPOCH)
            zi.compress_type = zipfile.ZIP_DEFLATED
            mode = 0o755 if executable else 0o644
            zi.external_attr = (stat.S_IFREG | mode) << 16
            z.writestr(zi, data)
    return path


def npm_tgz(path: Path, files: dict[str, tuple[bytes, bool]]) -> Path:
    with tarfile.open(path, "w:gz", compresslevel=6) as tar:
        for name, (data, executable) in sorted(files.items()):
            add_tar(tar, f"package/{name}", data, executable)
    return path


NODE_SOURCE = REPO / "clients/node"


def node_package(v: str) -> dict[str, tuple[bytes, bool]]:
    """The main npm package's files, as they are in clients/node (plain JavaScript with
    hand-written .d.ts: nothing to build), its version set to this release's, and the demo
    credentials copied from the fixtures (its harness's clients authenticate with them), and
    the book's page on the harness as its README."""
    files: dict[str, tuple[bytes, bool]] = {}
    for f in sorted(NODE_SOURCE.rglob("*")):
        name = f.relative_to(NODE_SOURCE).as_posix()
        if not f.is_file() or "node_modules" in f.parts or name == "package.json":
            continue
        files[name] = (f.read_bytes(), name.startswith("bin/"))
    manifest = json.loads((NODE_SOURCE / "package.json").read_text())
    manifest["version"] = v
    manifest["optionalDependencies"] = {"signage-sandbox-linux-x64": v}
    files["package.json"] = (json.dumps(manifest, indent=2).encode() + b"\n", False)
    files["demo-credentials.json"] = ((REPO / "fixtures/demo-credentials.json").read_bytes(), False)
    files["LICENSE"] = ((REPO / "LICENSE").read_bytes(), False)
    # Its guide is the book's page, so the two cannot differ.
    files["README.md"] = ((REPO / "docs/src/node-harness.md").read_bytes(), False)
    return files


def npm(binary: bytes, out: Path, v: str) -> list[Path]:
    platform = {
        "name": "signage-sandbox-linux-x64",
        "version": v,
        "description": "The signage binary for Linux x64 (installed by signage-sandbox).",
        "license": "MIT",
        "os": ["linux"],
        "cpu": ["x64"],
        "files": ["bin/signage"],
    }
    return [
        npm_tgz(
            out / f"signage-sandbox-linux-x64-{v}.tgz",
            {
                "package.json": (json.dumps(platform, indent=2).encode() + b"\n", False),
                "bin/signage": (binary, True),
                "LICENSE": ((REPO / "LICENSE").read_bytes(), False),
            },
        ),
        npm_tgz(out / f"signage-sandbox-{v}.tgz", node_package(v)),
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    a = p.parse_args()
    binary = a.binary.read_bytes()
    a.out.mkdir(parents=True, exist_ok=True)
    v = version()
    made = [tarball(binary, a.out, v), wheel(binary, a.out, v), *npm(binary, a.out, v)]
    for path in made:
        print(f"{path.stat().st_size / 1e6:7.1f} MB  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
