// The proof-of-play report of a company over a date range: plays per day, per ad and per screen,
// from `GET /reports/proof-of-play`, and the same report as a CSV download (the API answers CSV to
// `Accept: text/csv`). The range is in the view's URL (`?from=…&to=…`), so a report can be shared.

import { api, el, num, plural, sandboxNow } from "./common.js";
import { barList, colours, dayLines } from "./charts.js";
import { field, page, problemBox, scroller } from "./ui.js";
import { fresh } from "./live.js";
import { dateInput } from "./forms.js";

function dateOf(d) {
  return d.toISOString().slice(0, 10);
}

/** The range asked for in the hash (`#/company/x/reports?from=2026-11-01&to=2026-11-28`), or the
 * last 7 days; `to` is inclusive (the API's `to` date includes that whole day). */
function range() {
  const q = new URLSearchParams((location.hash.split("?")[1] || ""));
  const to = q.get("to") || dateOf(sandboxNow());
  const from = q.get("from") || dateOf(new Date(Date.parse(`${to}T00:00:00Z`) - 6 * 86400000));
  return { from, to };
}

export async function reports(companyId) {
  const { from, to } = range();
  const fromInput = dateInput("from", { required: true, value: from });
  const toInput = dateInput("to", { required: true, value: to });
  const answer = el("div", { attrs: { "aria-live": "polite" } });
  const form = el("form", { class: "card range-form", attrs: { "aria-label": "Date range" } },
    el("div", { class: "field-row" }, field("From (UTC)", fromInput), field("To (UTC, included)", toInput)),
    el("div", { class: "row" },
      el("button", { class: "primary", attrs: { type: "submit" }, text: "Show report" }),
      el("button", { attrs: { type: "button", "data-csv": "" }, text: "Download CSV", on: { click: () => download(companyId, fromInput.value, toInput.value, answer) } })),
    answer);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = `#/company/${companyId}/reports?from=${fromInput.value}&to=${toInput.value}`;
  });
  const body = el("div");
  page("Proof-of-play report", el("p", { class: "muted", text: "Every play the screens reported or the simulated fleet played, counted where it started (UTC days)." }), form, body);
  let r;
  try {
    r = await api("GET", `/reports/proof-of-play?company_id=${companyId}&from=${from}&to=${to}`);
  } catch (e) {
    body.replaceChildren(problemBox(e, { from: "From", to: "To" }));
    return;
  }
  const hours = (s) => `${num(Math.round(s / 360) / 10)} h`;
  // What a screen could have played: the hours its store was open in the range (so far), as the
  // report counts them.
  const company = await api("GET", `/companies/${companyId}`).catch(() => null);
  const open = company && typeof r.store_open_seconds === "number" ? r.store_open_seconds : null;
  const perDay = { name: "Plays", key: "plays", values: new Map(r.days.map((d) => [d.date, d.plays])) };
  const adColours = colours(r.ads.map((a) => a.ad_id));
  const table = (head, rows) => scroller(el("table", {},
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { attrs: { scope: "col" }, text: h })))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", { text: c })))))), head[0]);
  body.replaceChildren(
    el("p", { class: "card summary", attrs: { "data-plays": r.plays } },
      el("strong", { text: plural(r.plays, "play") }), ` · ${hours(r.seconds)} on screen · ${r.days.length} days · ${plural(r.devices.length, "screen")}`
        + (open === null ? "" : ` · the stores were open ${hours(open)} of it (${company.timezone})`)),
    dayLines("report-plays-per-day", `Plays per day, ${r.days[0] ? r.days[0].date : from} to ${r.days.length ? r.days[r.days.length - 1].date : to}`,
      [perDay], r.days.map((d) => d.date), { yTitle: "Plays per day" }),
    barList("report-plays-per-ad", "Plays per ad", r.ads.map((a) => ({ label: a.name, value: a.plays, colour: adColours.get(a.ad_id) }))),
    el("h2", { text: "Per ad" }),
    table(["Ad", "Status", "Plays", "Time on screen", "Screens"], r.ads.map((a) => [a.name, a.status, num(a.plays), hours(a.seconds), num(a.devices)])),
    el("h2", { text: "Per screen" }),
    open === null
      ? table(["Screen", "Plays", "Time on screen", "Ads"], r.devices.map((d) => [d.name, num(d.plays), hours(d.seconds), num(d.ads)]))
      : table(["Screen", "Plays", "Time on screen", "Store open", "Ads"],
        r.devices.map((d) => [d.name, num(d.plays), hours(d.seconds), hours(open), num(d.ads)])));
  fresh();
}

/** Fetches the CSV with the credential and hands it to the browser as a download. */
async function download(companyId, from, to, answer) {
  try {
    const text = await api("GET", `/reports/proof-of-play?company_id=${companyId}&from=${from}&to=${to}`, undefined,
      { as: "text", headers: { Accept: "text/csv" } });
    const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    const a = el("a", { attrs: { href: url, download: `proof-of-play-${from}-${to}.csv` }, text: "download" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    const lines = text.trim().split("\r\n").length - 1;
    answer.replaceChildren(el("p", { class: "done", attrs: { role: "status", "data-csv-lines": lines }, text: `CSV downloaded: ${plural(lines, "line")} (one per day, screen and ad).` }));
  } catch (e) {
    answer.replaceChildren(problemBox(e));
  }
}
