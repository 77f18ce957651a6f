"""One readiness report from several: under pytest-xdist each worker runs its own server, so each
server's journal holds part of the session's evidence. Each worker's JUnit report is kept, and
the controller combines them check by check, judging all of the evidence together:

- ``fail`` if any worker saw the misbehaviour (evidence of it anywhere is evidence);
- else ``pass`` if any worker saw the behaviour;
- else ``not_observed``.

The verdict follows as the server states it: ``not_ready`` when a required check fails,
``incomplete`` when one is not observed, else ``ready``. Each check's ``<testcase>`` is copied
from a worker whose status it has (the server wrote it: its advice, rule and evidence), so this
module renders nothing of its own but the counts.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Dict, List, Tuple

#: Status order: the combined status is the first one any worker has.
STRENGTH = ("fail", "pass", "not_observed")


def status_of(case: ET.Element) -> str:
    """A ``<testcase>``'s status as the server's JUnit states it."""
    failure = case.find("failure")
    if failure is not None:
        return "fail" if failure.get("type") == "fail" else "not_observed"
    skipped = case.find("skipped")
    if skipped is not None:
        return "fail" if skipped.get("message", "").startswith("failed") else "not_observed"
    return "pass"


def combine(reports: List[str]) -> str:
    """The JUnit XML of one report from several (each a worker's ``readiness_junit``)."""
    if not reports:
        raise ValueError("no report to combine")
    roots = [ET.fromstring(r) for r in reports]
    order: List[str] = []
    chosen: Dict[str, Tuple[int, ET.Element]] = {}
    for root in roots:
        for case in root.iter("testcase"):
            name = case.get("name", "")
            rank = STRENGTH.index(status_of(case))
            if name not in chosen:
                order.append(name)
            if name not in chosen or rank < chosen[name][0]:
                chosen[name] = (rank, case)
    cases = [chosen[n][1] for n in order]
    required = [c for c in cases if c.get("classname") == "readiness.required"]
    failures = sum(1 for c in required if status_of(c) != "pass")
    skipped = sum(1 for c in cases if c.get("classname") != "readiness.required" and status_of(c) != "pass")
    if any(status_of(c) == "fail" for c in required):
        verdict = "not_ready"
    elif failures:
        verdict = "incomplete"
    else:
        verdict = "ready"
    first = roots[0]
    suite = first.find("testsuite")
    out = ET.Element("testsuites", {"name": first.get("name", "signage readiness"), "tests": str(len(cases)),
                                    "failures": str(failures), "skipped": str(skipped)})
    combined = ET.SubElement(out, "testsuite", {
        "name": suite.get("name", "readiness") if suite is not None else "readiness",
        "tests": str(len(cases)),
        "failures": str(failures),
        "skipped": str(skipped),
        "timestamp": suite.get("timestamp", "") if suite is not None else "",
    })
    properties = ET.SubElement(combined, "properties")
    ET.SubElement(properties, "property", {"name": "verdict", "value": verdict})
    ET.SubElement(properties, "property", {"name": "workers", "value": str(len(reports))})
    combined.extend(cases)
    ET.indent(out, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(out, encoding="unicode") + "\n"
