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
   its `os` and `cpu`; the main package depends on it optionally, names `signage` as its `bin`
   and exports `binaryPath()` and `start()` (a server on a free port, stopped on exit).

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


MAIN_JS = """'use strict';
// The signage sandbox for Node test suites: the binary of this platform's package, and a
// server on a free port of 127.0.0.1 that stops with the process.
const { spawn } = require('node:child_process');
const path = require('node:path');

const PLATFORM_PACKAGE = 'signage-sandbox-linux-x64';

function binaryPath() {
  if (process.env.SIGNAGE_BIN) return process.env.SIGNAGE_BIN;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`signage-sandbox has a binary for linux x64 only (this is ${process.platform} ${process.arch}); set SIGNAGE_BIN`);
  }
  return path.join(path.dirname(require.resolve(`${PLATFORM_PACKAGE}/package.json`)), 'bin', 'signage');
}

// Starts `signage serve --port 0` (an in-memory world unless `database` is given) and resolves
// with { url, stop } once the server prints where it listens.
function start({ database = ':memory:', args = [], env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(binaryPath(), ['serve', '--port', '0', '--database', database, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const stop = () => new Promise((done) => {
      if (child.exitCode !== null) return done();
      child.once('exit', () => done());
      child.kill('SIGTERM');
    });
    process.once('exit', () => child.kill('SIGTERM'));
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (http:\\/\\/\\S+?)(?:\\s|$)/);
      if (m) resolve({ url: m[1], stop, process: child });
    });
    child.stderr.resume();
    child.once('exit', (code) => reject(new Error(`signage exited (${code}) before listening: ${out}`)));
    child.once('error', reject);
  });
}

module.exports = { binaryPath, start };
"""

MAIN_BIN = """#!/usr/bin/env node
'use strict';
const { spawnSync } = require('node:child_process');
const { binaryPath } = require('../index.js');
const r = spawnSync(binaryPath(), process.argv.slice(2), { stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
"""


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
    main = {
        "name": "signage-sandbox",
        "version": v,
        "description": "The signage sandbox for Node test suites: the binary, and a server on a free port.",
        "license": "MIT",
        "main": "index.js",
        "bin": {"signage": "bin/signage.js"},
        "optionalDependencies": {"signage-sandbox-linux-x64": v},
        "engines": {"node": ">=18"},
    }
    readme = (
        b"# signage-sandbox\n\nThe signage sandbox for Node test suites: `require('signage-sandbox')`"
        b" gives `binaryPath()` and `start()`; `npx signage` runs the binary.\n"
    )
    return [
        npm_tgz(
            out / f"signage-sandbox-linux-x64-{v}.tgz",
            {
                "package.json": (json.dumps(platform, indent=2).encode() + b"\n", False),
                "bin/signage": (binary, True),
                "LICENSE": ((REPO / "LICENSE").read_bytes(), False),
            },
        ),
        npm_tgz(
            out / f"signage-sandbox-{v}.tgz",
            {
                "package.json": (json.dumps(main, indent=2).encode() + b"\n", False),
                "index.js": (MAIN_JS.encode(), False),
                "bin/signage.js": (MAIN_BIN.encode(), True),
                "README.md": (readme, False),
                "LICENSE": ((REPO / "LICENSE").read_bytes(), False),
            },
        ),
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
