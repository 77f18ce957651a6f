"""Runs the customer suite (test_customer_suite.py) through the installed plugin, and mypy --strict on
the package; prints one PASS/FAIL line per test and check (tests/clients/run.sh tallies them).

    python run_suite.py <path-to-clients/python>   (in a venv where the signage-sandbox wheel is installed)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mypy import api as mypy_api


class Report:
    # Each line starts a line of its own: pytest's progress dots share the terminal line.
    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or (report.when != "call" and report.failed):
            if report.passed:
                print(f"\nPASS pytest {report.nodeid}", flush=True)
            elif report.failed:
                print(f"\nFAIL pytest {report.nodeid} ({report.when}): {report.longreprtext[-1500:]}", flush=True)


def main() -> int:
    package = Path(sys.argv[1]).resolve()
    here = Path(__file__).resolve().parent
    status = 0
    # The package, and a customer's suite written against its types, are mypy --strict clean.
    for name, target in [
        ("signage_sandbox", package / "src"),
        ("the customer suite", here / "test_customer_suite.py"),
        ("the readiness suite", here / "test_readiness_suite.py"),
    ]:
        out, err, code = mypy_api.run(["--strict", "--config-file", str(package / "pyproject.toml"), str(target)])
        if code == 0:
            print(f"PASS mypy --strict {name}")
        else:
            status = 1
            print(f"FAIL mypy --strict {name}: {out}{err}")
    # The plugin is found through its entry point, as after `pip install ./clients/python`.
    # The session's readiness report, written by the plugin when the session ends.
    xml_path = Path(sys.argv[2]) if len(sys.argv) > 2 else here / "readiness.xml"
    xml_path.unlink(missing_ok=True)
    code = pytest.main(
        [
            str(here / "test_customer_suite.py"),
            str(here / "test_install.py"),
            str(here / "test_readme_example.py"),
            str(here / "test_readiness_suite.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--signage-readiness={xml_path}",
        ],
        plugins=[Report()],
    )
    status |= readiness_xml(xml_path)
    status |= xdist_run(here, xml_path)
    return 1 if status != 0 or code != 0 else 0


def statuses(path: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    from signage_sandbox.combine import status_of

    return {c.get("name", ""): status_of(c) for c in ET.parse(path).getroot().iter("testcase")}


def xdist_run(here: Path, single: Path) -> int:
    """The same suite under pytest-xdist (`-n 2`: a server per worker): every test passes, and the
    session's one report, combined from both workers, says what the single server's said, check
    by check (before, the last worker to finish wrote its half over the other's)."""
    combined = single.with_name(single.stem + ".xdist.xml")
    combined.unlink(missing_ok=True)
    code = pytest.main(
        [
            str(here / "test_customer_suite.py"),
            str(here / "test_readme_example.py"),
            str(here / "test_readiness_suite.py"),
            "-q",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            f"--signage-readiness={combined}",
        ],
    )
    if code != 0:
        print(f"FAIL pytest xdist -n 2: the suite did not pass under two workers (exit {code})")
        return 1
    if not combined.exists():
        print("FAIL pytest xdist -n 2: no combined readiness report")
        return 1
    import xml.etree.ElementTree as ET

    root = ET.parse(combined).getroot()
    workers = root.find(".//property[@name='workers']")
    verdict = root.find(".//property[@name='verdict']")
    one, two = statuses(single), statuses(combined)
    single_verdict = ET.parse(single).getroot().find(".//property[@name='verdict']")
    if workers is None or workers.get("value") != "2":
        print(f"FAIL pytest xdist -n 2: the report combines {workers.get('value') if workers is not None else 0} workers' reports, not 2")
        return 1
    differ = {k: (one.get(k), two.get(k)) for k in one.keys() | two.keys() if one.get(k) != two.get(k)}
    if differ or verdict is None or single_verdict is None or verdict.get("value") != single_verdict.get("value"):
        print(f"FAIL pytest xdist -n 2: the combined report differs from one server's: {differ}")
        return 1
    print(f"PASS pytest xdist -n 2: one report from both workers, verdict {verdict.get('value')}, every check as one server saw it")
    return 0


def readiness_xml(path: Path) -> int:
    """The plugin wrote the session's report as JUnit XML, and its failures agree with its verdict
    (a `<failure>` exactly for each check that keeps it from `ready`)."""
    import xml.etree.ElementTree as ET

    if not path.exists():
        print(f"FAIL pytest readiness.xml: the plugin wrote no report at {path}")
        return 1
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    verdict = suite.find("properties/property[@name='verdict']").get("value") if suite is not None else None
    failures = int(root.get("failures", "-1"))
    cases = root.findall(".//testcase")
    if suite is None or verdict not in ("ready", "not_ready", "incomplete") or len(cases) < 10:
        print(f"FAIL pytest readiness.xml: not a readiness report: {path.read_text()[:500]}")
        return 1
    if (failures == 0) != (verdict == "ready") or failures != len(root.findall(".//failure")):
        print(f"FAIL pytest readiness.xml: {failures} failures and verdict {verdict} disagree")
        return 1
    print(f"PASS pytest readiness.xml: written at the end of the session, verdict {verdict}, {failures} failures, {len(cases)} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
