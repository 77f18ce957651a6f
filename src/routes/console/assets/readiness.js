// The readiness view of the console: the report of GET /readiness as a checklist, each check with
// its rule, advice and evidence; request ids link to the journal entry (GET /requests/{id}), shown
// with its problem body and advice. Values are inserted as text only.

import { api, el, when } from "./common.js";

const MARK = { pass: "✓ pass", fail: "✗ fail", not_observed: "… not observed" };
const VERDICT = {
  ready: "Ready to go live",
  not_ready: "Not ready: a required check fails",
  incomplete: "Incomplete: a required check was not observed yet",
};

function evidenceLink(id) {
  return id.startsWith("req_")
    ? el("a", { attrs: { href: `#/requests/${encodeURIComponent(id)}` }, text: id })
    : el("code", { text: id });
}

export async function readinessView(page) {
  const r = await api("GET", "/readiness");
  const items = r.checks.map((c) => el("li", { class: `check ${c.status}`, attrs: { "data-check": c.id, "data-status": c.status } },
    el("strong", { text: `${MARK[c.status] || c.status} ` }),
    el("span", { text: c.title }),
    el("span", { class: "badge", text: c.required ? "required" : "recommended" }),
    el("p", { class: "muted", text: c.rule }),
    c.advice ? el("p", { text: c.advice }) : null,
    c.evidence.length ? el("p", {}, "Evidence: ", ...c.evidence.flatMap((id, i) => (i ? [", ", evidenceLink(id)] : [evidenceLink(id)]))) : null));
  page("Readiness",
    el("p", { attrs: { "data-verdict": r.verdict } }, el("strong", { text: VERDICT[r.verdict] || r.verdict }),
      ` · ${r.client_id ? `API client ${r.client_id} (key ${r.key_id})` : r.key_id ? `key ${r.key_id}` : `account ${r.account_id}`} · ${when(r.generated_at)}`),
    el("p", { class: "muted", text: "Graded from the request journal and the webhook drills. Run the drills with POST /_sandbox/webhooks/{id}/drills; CI gates on `signage readiness`. This console's own requests are an integration of their own, not graded here (GET /readiness?console=true)." }),
    el("ul", { class: "checklist" }, ...items));
}

export async function requestView(page, id) {
  const e = await api("GET", `/requests/${encodeURIComponent(id)}`);
  const row = (k, v) => (v === null || v === undefined || v === "" ? null
    : el("tr", {}, el("th", { attrs: { scope: "row" }, text: k }), el("td", { text: typeof v === "string" ? v : JSON.stringify(v) })));
  page(`Request ${e.request_id}`,
    el("p", { attrs: { "data-status": String(e.status) } }, el("strong", { text: `${e.method} ${e.route || ""} → ${e.status}` }), ` · ${when(e.at)}`),
    el("p", { text: e.advice }),
    el("table", {}, el("tbody", {},
      row("operation", e.operation_id), row("via", e.tool ? `${e.via} (${e.tool})` : e.via), row("key", e.key_id),
      row("client", e.client_id), row("problem code", e.problem_code), row("fault", e.fault),
      row("Idempotency-Key", e.idempotency_key), row("replayed", e.idempotent_replayed ? "yes" : null),
      row("Retry-After", e.retry_after), row("duration (ms)", e.duration_ms), row("query", e.query), row("body", e.body))),
    e.problem ? el("pre", { text: JSON.stringify(e.problem, null, 2) }) : null,
    el("p", {}, el("a", { attrs: { href: "#/readiness" }, text: "Back to the readiness report" })));
}
