// A company at a glance: its logo and facts, fleet health, proof of play per ad and per screen over
// the last 7 days, and QR scans per day per promotion over the last 30 days, as charts.

import { all, api, el, logo, sandboxNow } from "./common.js";
import { barList, dayLines, lastDays, stack } from "./charts.js";
import { link, page } from "./ui.js";
import { fresh } from "./live.js";

export async function dashboard(id) {
  const [c, b] = await Promise.all([api("GET", `/companies/${id}`), api("GET", `/companies/${id}/branding`)]);
  const charts = el("div", { class: "charts" });
  page(c.name,
    el("div", { class: "company-head" }, logo(c.name, b.colors, 56), el("p", { text: b.tagline })),
    el("dl", { class: "facts" },
      el("dt", { text: "Industry" }), el("dd", { text: c.industry }),
      el("dt", { text: "Country" }), el("dd", { text: c.country }),
      el("dt", { text: "Fonts" }), el("dd", { text: `${b.fonts.heading} / ${b.fonts.body}` }),
      el("dt", { text: "Logos" }), el("dd", {}, ...b.logos.map((l) => el("span", { class: "badge", text: `${l.variant} ${l.format} ${l.width}×${l.height}` })))),
    el("p", {}, "Views: ", link(`#/company/${id}/fleet`, "fleet"), " · ", link(`#/company/${id}/ads`, "ads"), " · ",
      link(`#/company/${id}/promotions`, "promotions"), " · ", link(`#/company/${id}/tokens`, "tokens"), " · ", link(`#/company/${id}/billing`, "billing")),
    charts);
  const sections = await Promise.all([fleetHealth(id), proofOfPlay(id), scans(id)]);
  charts.replaceChildren(...sections.flat());
  fresh();
}

async function fleetHealth(id) {
  try {
    const h = await api("GET", `/devices/health?company_id=${id}`);
    const co = h.companies[0] || { online: 0, offline: 0, never_seen: 0 };
    return [el("h2", { text: "Fleet health" }), stack("fleet-health", "Screens by status", [
      { label: "Online", value: co.online, cls: "online" },
      { label: "Offline", value: co.offline, cls: "offline" },
      { label: "Never seen", value: co.never_seen, cls: "never_seen" },
    ])];
  } catch (e) {
    return [el("h2", { text: "Fleet health" }), el("p", { class: "muted", text: `Not available to this credential (${e.status}).` })];
  }
}

async function proofOfPlay(id) {
  try {
    const r = await api("GET", `/reports/proof-of-play?company_id=${id}`);
    return [el("h2", { text: `Proof of play, last 7 days: ${r.plays.toLocaleString("en")} plays` }),
      el("div", { class: "chart-pair" },
        barList("plays-per-ad", "Plays per ad", r.ads.map((a) => ({ label: a.name, value: a.plays })), { width: half() }),
        barList("plays-per-screen", "Plays per screen", r.devices.map((d) => ({ label: d.name, value: d.plays })), { width: half() }))];
  } catch (e) {
    return [el("h2", { text: "Proof of play" }), el("p", { class: "muted", text: `Not available to this credential (${e.status}).` })];
  }
}

/** Scans per UTC day of each promotion with scans, last 30 days. */
export async function scansChart(promotions, width) {
  const days = lastDays(sandboxNow(), 30);
  const reports = await Promise.all(promotions.map((p) => api("GET", `/promotions/${p.id}/report`).then((r) => [p, r]).catch(() => [p, null])));
  const series = reports.filter(([, r]) => r && r.scan_count > 0)
    .map(([p, r]) => ({ name: p.name, values: new Map(r.scans_per_day.map((d) => [d.date, d.scans])) }));
  return dayLines("scans-per-day", "QR scans per day, by promotion (last 30 days)", series, days, { width });
}

async function scans(id) {
  try {
    const promotions = await all(`/promotions?company_id=${id}`);
    return [el("h2", { text: "Scans" }), await scansChart(promotions)];
  } catch (e) {
    return [el("h2", { text: "Scans" }), el("p", { class: "muted", text: `Not available to this credential (${e.status}).` })];
  }
}

function half() {
  const w = document.getElementById("view").clientWidth - 32;
  return w > 760 ? Math.floor((w - 24) / 2) : Math.max(260, w);
}
