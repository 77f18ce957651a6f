//! The readiness report as JUnit XML (`signage readiness --format junit`, `GET /readiness?format=
//! junit`): one test case per check, so a CI system shows the checklist as tests. The XML and the
//! exit status agree: a `<failure>` is exactly a check that keeps the verdict from `ready` (a
//! required check that failed, or was not observed), so the suite has no failure exactly when
//! the exit status is 0. A recommended check that failed is `<skipped>` with its finding (it never
//! changes the verdict), and so is a recommended check not observed.

use super::report::{Check, Report, Status};
use crate::markup::escape;

pub fn junit(r: &Report) -> String {
    let blocking = |c: &&Check| c.required && c.status != Status::Pass;
    let failures = r.checks.iter().filter(blocking).count();
    let skipped = r
        .checks
        .iter()
        .filter(|c| !c.required && c.status != Status::Pass)
        .count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"signage readiness\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n  <testsuite name=\"readiness {}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" timestamp=\"{}\">\n    <properties><property name=\"verdict\" value=\"{}\"/></properties>\n",
        r.checks.len(),
        escape(&r.account_id),
        r.checks.len(),
        escape(&r.generated_at),
        r.verdict,
    );
    for c in &r.checks {
        let kind = if c.required {
            "required"
        } else {
            "recommended"
        };
        out.push_str(&format!(
            "    <testcase classname=\"readiness.{kind}\" name=\"{}\">",
            c.id
        ));
        let body = format!(
            "{}\nRule: {}\nEvidence: {}",
            c.advice,
            c.rule,
            c.evidence.join(", ")
        );
        match (c.status, c.required) {
            (Status::Pass, _) => {}
            (Status::Fail, true) => out.push_str(&format!(
                "\n      <failure type=\"fail\" message=\"{}\">{}</failure>\n    ",
                escape(c.title),
                escape(&body)
            )),
            (Status::NotObserved, true) => out.push_str(&format!(
                "\n      <failure type=\"not_observed\" message=\"not observed (required): {}\">{}</failure>\n    ",
                escape(c.title),
                escape(&body)
            )),
            (Status::Fail, false) => out.push_str(&format!(
                "\n      <skipped message=\"failed, recommended only (the verdict does not depend on it): {}\"/>\n      <system-out>{}</system-out>\n    ",
                escape(&c.advice),
                escape(&body)
            )),
            (Status::NotObserved, false) => out.push_str(&format!(
                "\n      <skipped message=\"not observed (recommended): {}\"/>\n    ",
                escape(&c.advice)
            )),
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::report::{Check, Report, Status};
    use super::junit;

    fn report(checks: &[(bool, Status)]) -> Report {
        let checks: Vec<Check> = checks
            .iter()
            .enumerate()
            .map(|(i, &(required, status))| Check {
                id: ["a", "b", "c", "d", "e", "f"][i],
                title: "T",
                status,
                required,
                rule: "R",
                evidence: Vec::new(),
                advice: String::new(),
            })
            .collect();
        let verdict = if checks
            .iter()
            .any(|c| c.required && c.status == Status::Fail)
        {
            "not_ready"
        } else if checks
            .iter()
            .any(|c| c.required && c.status == Status::NotObserved)
        {
            "incomplete"
        } else {
            "ready"
        };
        Report {
            object: "readiness_report",
            account_id: "acct_1".into(),
            company_id: None,
            key_id: None,
            client_id: None,
            console: false,
            after: None,
            generated_at: "2026-03-02T09:00:00Z".into(),
            verdict,
            checks,
        }
    }

    /// The XML has a failure exactly when the exit status is not 0 (the verdict is not `ready`),
    /// for every mix of required and recommended checks in every status.
    #[test]
    fn junit_failures_agree_with_the_verdict() {
        let statuses = [Status::Pass, Status::Fail, Status::NotObserved];
        for a in statuses {
            for b in statuses {
                for c in statuses {
                    let r = report(&[(true, a), (true, b), (false, c)]);
                    let xml = junit(&r);
                    let failures = xml.matches("<failure ").count();
                    assert_eq!(failures == 0, r.verdict == "ready", "{xml}");
                    assert!(xml.contains(&format!("failures=\"{failures}\"")));
                    // A recommended check is never a failure.
                    assert!(!xml.contains("name=\"c\">\n      <failure"), "{xml}");
                }
            }
        }
    }
}
