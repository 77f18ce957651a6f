// A company's webhooks and their deliveries: where each delivers (the sandbox's built-in receiver
// said as such, not as its `127.0.0.1:0` address), which events, and each delivery with its times
// and attempts.

import { all, api, el, plural, when } from "./common.js";
import { page, problemBox, scroller } from "./ui.js";
import { fresh } from "./live.js";

/** A webhook's URL for people: the sandbox's own receiver (`http://127.0.0.1:0/_sandbox/sink/…`,
 * port 0 meaning "this sandbox") by its name. */
export function destination(url) {
  try {
    const u = new URL(url);
    if (u.host === "127.0.0.1:0" && u.pathname.startsWith("/_sandbox/sink/")) {
      return el("span", {}, "This sandbox's receiver ", el("code", { text: u.pathname }));
    }
  } catch (_) {
    /* shown as it is */
  }
  return el("code", { text: url });
}

export async function webhooks(companyId) {
  const rows = await all(`/webhooks?company_id=${companyId}`);
  const log = el("div");
  const table = el("table", {},
    el("thead", {}, el("tr", {}, ...["Delivers to", "Events", "Enabled", "Secret", ""].map((h) => el("th", { attrs: { scope: "col" }, text: h })))),
    el("tbody", {}, ...rows.map((w) => el("tr", {},
      el("td", {}, destination(w.url)), el("td", { text: w.event_types.join(", ") }), el("td", { text: w.enabled ? "yes" : "no" }),
      el("td", { class: "nowrap", text: `…${w.secret_last4}` }),
      el("td", {}, el("button", { attrs: { type: "button", "aria-label": `Deliveries of the webhook to ${w.url}` }, text: "Deliveries", on: { click: () => deliveries(w, log) } }))))));
  page("Webhooks", scroller(table, "Webhooks"), log);
  fresh();
}

async function deliveries(w, box) {
  try {
    const rows = await api("GET", `/webhooks/${w.id}/deliveries?limit=20`);
    const last = (d) => (d.attempts.length ? d.attempts[d.attempts.length - 1] : null);
    box.replaceChildren(el("h2", {}, "Deliveries to ", destination(w.url)),
      rows.data.length ? scroller(el("table", {},
        el("thead", {}, el("tr", {}, ...["Event", "Status", "Created", "Last attempt", "Attempts", "Next attempt"].map((h) => el("th", { attrs: { scope: "col" }, text: h })))),
        el("tbody", {}, ...rows.data.map((d) => el("tr", { attrs: { "data-delivery-id": d.id } },
          el("td", { text: d.event_type }), el("td", {}, el("span", { class: `badge ${d.status}`, text: d.status })),
          el("td", { text: when(d.created_at) }),
          el("td", { text: last(d) ? `${when(last(d).at)} · ${last(d).http_status ?? last(d).error ?? "no answer"} · ${last(d).latency_ms} ms` : "—" }),
          el("td", { text: plural(d.attempts.length, "attempt") }),
          el("td", { text: d.next_attempt_at ? when(d.next_attempt_at) : "—" }))))), "Deliveries")
        : el("p", { class: "muted", text: "No deliveries yet." }));
  } catch (e) {
    box.replaceChildren(problemBox(e));
  }
}
