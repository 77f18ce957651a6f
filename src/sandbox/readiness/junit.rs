//! The readiness report as JUnit XML (`signage readiness --format junit`): one test case per
//! check, so a CI system shows the checklist as tests. A failed check is a `<failure>` (required
//! or not: the exit status, not the XML, tells whether CI should stop); a check not observed is
//! `<skipped>`.

use super::{Report, Status};

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

pub fn junit(r: &Report) -> String {
    let failures = r.checks.iter().filter(|c| c.status == Status::Fail).count();
    let skipped = r
        .checks
        .iter()
        .filter(|c| c.status == Status::NotObserved)
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
        match c.status {
            Status::Pass => {}
            Status::Fail => out.push_str(&format!(
                "\n      <failure message=\"{}\">{}</failure>\n    ",
                escape(c.title),
                escape(&body)
            )),
            Status::NotObserved => out.push_str(&format!(
                "\n      <skipped message=\"not observed: {}\"/>\n    ",
                escape(c.rule)
            )),
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
