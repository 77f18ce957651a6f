"""Turns one conformance-suite scenario run into a PASS/FAIL line for run.sh.

    python conformance_verdict.py [--untestable-ok] <scenario> <runner exit code> <output dir given to -o>

The runner exits 0 unless a check is FAILURE, but some scenarios give up with only a WARNING
(server-sse-multiple-streams does when the server hands out no Mcp-Session-Id), which would let a
scenario "pass" without testing anything. Here a scenario passes only when the runner exited 0,
its checks.json has at least one SUCCESS, and no check is FAILURE or WARNING (INFO is fine: it is
how the suite notes that the server answered with JSON instead of SSE, which the spec allows).

With `--untestable-ok`, a FAILURE whose message begins "Not testable:" (the pre-release's word for
a check that needs a diagnostic tool only its reference server lists) is counted as untested and
named in the verdict, never as a pass; the runner's exit code is then not used (those checks make
it non-zero), and every other check decides.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    args = sys.argv[1:]
    untestable_ok = args[:1] == ["--untestable-ok"]
    if untestable_ok:
        args = args[1:]
    scenario, rc, out = args[0], int(args[1]), Path(args[2])
    found = sorted(out.glob("*/checks.json"))
    if not found:
        log = (out / "runner.log").read_text(errors="replace") if (out / "runner.log").exists() else ""
        print(f"FAIL conformance {scenario}: no checks.json (runner exit {rc}): {log[-800:]!r}")
        return 1
    checks = json.loads(found[-1].read_text())
    by_status: dict[str, list[dict]] = {}
    for check in checks:
        status = check.get("status", "?")
        if (
            untestable_ok
            and status == "FAILURE"
            and str(check.get("errorMessage", "")).startswith("Not testable:")
        ):
            status = "UNTESTED"
        by_status.setdefault(status, []).append(check)
    if untestable_ok and by_status.get("UNTESTED"):
        rc = 0 if not by_status.get("FAILURE") else rc or 1
    bad = by_status.get("FAILURE", []) + by_status.get("WARNING", [])
    summary = ", ".join(f"{len(v)} {k}" for k, v in sorted(by_status.items()))
    if rc == 0 and not bad and by_status.get("SUCCESS"):
        untested = [c.get("id") for c in by_status.get("UNTESTED", [])]
        note = f"; not testable here: {', '.join(untested)}" if untested else ""
        print(f"PASS conformance {scenario} ({summary}{note})")
        return 0
    reasons = []
    for check in bad:
        detail = check.get("errorMessage") or json.dumps(check.get("details"))[:300]
        reasons.append(f"[{check.get('status')}] {check.get('id')}: {detail}")
    if not reasons:
        reasons.append(f"runner exit {rc}, checks: {summary}")
    print(f"FAIL conformance {scenario}: " + " | ".join(reasons).replace("\n", " ")[:1500])
    return 1


if __name__ == "__main__":
    sys.exit(main())
