// A company at a glance: its logo and facts, fleet health, proof of play over the last 7 days (per
// day, per ad, per screen), what it was billed per month (revenue, by kind of charge), and QR scans
// per day per promotion over the last 30 days and by device class, as charts.

import { all, api, el, logo, money, num, plural, sandboxNow } from "./common.js";
import { barList, colours, columns, dayLines, stack } from "./charts.js";
import { link, page } from "./ui.js";
import { fresh } from "./live.js";
import { classChart, scansChart } from "./promotions.js";

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
      link(`#/company/${id}/promotions`, "promotions"), " · ", link(`#/company/${id}/reports`, "proof-of-play report"), " · ",
      link(`#/company/${id}/tokens`, "tokens"), " · ", link(`#/company/${id}/billing`, "billing")),
    charts);
  const sections = await Promise.all([fleetHealth(id), proofOfPlay(id), revenue(id), scans(id)]);
  charts.replaceChildren(...sections.flat());
  fresh();
}

function unavailable(title, e) {
  return [el("h2", { text: title }), el("p", { class: "muted", text: `Not available to this credential (${e.status}).` })];
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
    return unavailable("Fleet health", e);
  }
}

async function proofOfPlay(id) {
  try {
    // Seven whole UTC days, today's so far included (a partial first day would read as a dip).
    const from = new Date(sandboxNow().getTime() - 6 * 86400000).toISOString().slice(0, 10);
    const r = await api("GET", `/reports/proof-of-play?company_id=${id}&from=${from}`);
    const ads = r.ads.filter((a) => a.plays > 0 || a.status === "active");
    const perDay = { name: "Plays", key: "plays", values: new Map(r.days.map((d) => [d.date, d.plays])) };
    const adColours = colours(r.ads.map((a) => a.ad_id));
    return [el("h2", { text: `Proof of play, last 7 days: ${plural(r.plays, "play")}` }),
      dayLines("plays-per-day", "Plays per UTC day (the last 7, today so far)", [perDay], r.days.map((d) => d.date), { yTitle: "Plays per day" }),
      el("div", { class: "chart-pair" },
        barList("plays-per-ad", "Plays per ad", ads.map((a) => ({ label: a.name, value: a.plays, colour: adColours.get(a.ad_id) })), { width: half() }),
        barList("plays-per-screen", "Plays per screen", r.devices.map((d) => ({ label: d.name, value: d.plays })), { width: half() }))];
  } catch (e) {
    return unavailable("Proof of play", e);
  }
}

const KINDS = new Map([["subscription", "Subscription"], ["token_pack", "Token packs"], ["overage", "Overage"], ["credit", "Credits"]]);

/** What the company was billed per UTC month (net of VAT), the last 6 months, by kind of charge. */
export function revenueChart(charges, width) {
  const months = [];
  const newest = charges.reduce((m, c) => (c.created_at > m ? c.created_at : m), "");
  const end = newest ? new Date(`${newest.slice(0, 7)}-01T00:00:00Z`) : new Date();
  for (let i = 5; i >= 0; i--) {
    const d = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - i, 1));
    months.push(d.toISOString().slice(0, 7));
  }
  const currency = (charges[0] && charges[0].currency) || "EUR";
  const cols = months.map((m) => ({
    label: new Date(`${m}-01T00:00:00Z`).toLocaleString("en", { month: "short", year: "2-digit", timeZone: "UTC" }),
    short: new Date(`${m}-01T00:00:00Z`).toLocaleString("en", { month: "short", timeZone: "UTC" }),
    parts: new Map([...KINDS.keys()].map((k) => [k, charges.filter((c) => c.kind === k && c.created_at.startsWith(m)).reduce((n, c) => n + c.amount_cents, 0)])),
  }));
  return columns("revenue", `Revenue: billed per month, by kind (net, ${currency})`, cols, KINDS,
    { width, yTitle: currency, format: (v) => money(v, "").trim().replace(/\.00$/, ""), colourOf: colours([...KINDS.keys()]) });
}

async function revenue(id) {
  try {
    const charges = await all(`/charges?company_id=${id}`, 300);
    return [el("h2", { text: `Revenue: ${money(charges.reduce((n, c) => n + c.amount_cents, 0), (charges[0] && charges[0].currency) || "EUR")} billed in all` }),
      revenueChart(charges)];
  } catch (e) {
    return unavailable("Revenue", e);
  }
}

async function scans(id) {
  try {
    const promotions = await all(`/promotions?company_id=${id}`);
    const reports = await Promise.all(promotions.map((p) => api("GET", `/promotions/${p.id}/report`).then((r) => [p, r]).catch(() => [p, null])));
    const total = reports.reduce((n, [, r]) => n + (r ? r.scan_count : 0), 0);
    return [el("h2", { text: `Scans: ${num(total)} in all` }),
      el("div", { class: "chart-pair" }, scansChart(reports, half()), classChart(reports, half()))];
  } catch (e) {
    return unavailable("Scans", e);
  }
}

function half() {
  const w = document.getElementById("view").clientWidth - 32;
  return w > 760 ? Math.floor((w - 24) / 2) : Math.max(260, w);
}
