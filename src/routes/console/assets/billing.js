// A company's tokens (the balance and the ledger, plotted) and billing: revenue per month, the
// invoices (on a phone the total comes right after the number, so it stays on screen), the recent
// charges, and the media storage line, from the library's real size.

import { all, api, bytes, el, money, num, plural, svg, timeZone, utcDay, when } from "./common.js";
import { link, page, problemBox, scroller } from "./ui.js";
import { chartWidth } from "./charts.js";
import { fresh } from "./live.js";
import { revenueChart } from "./dashboard.js";

/** A table read page by page ("Load more"). */
function cursorTable(path, columns, label) {
  const body = el("tbody");
  const more = el("button", { attrs: { type: "button" }, text: "Load more" });
  const table = el("table", {},
    el("thead", {}, el("tr", {}, ...columns.map(([h]) => el("th", { attrs: { scope: "col" }, text: h })))), body);
  let cursor = null;
  const load = async () => {
    const sep = path.includes("?") ? "&" : "?";
    const pageData = await api("GET", `${path}${sep}limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    for (const row of pageData.data) {
      body.append(el("tr", {}, ...columns.map(([h, f]) => el("td", { attrs: { "data-label": h } }, f(row)))));
    }
    cursor = pageData.next_cursor;
    more.hidden = !pageData.has_more;
  };
  more.addEventListener("click", () => load().catch((e) => more.replaceWith(problemBox(e))));
  return { node: el("div", {}, scroller(table, label), more), load };
}

/** The token balance over time, as a step line with labelled axes, drawn at the width it gets. */
function ledgerChart(txs) {
  const pts = txs.map((t) => [Date.parse(t.created_at), t.balance_after]).sort((a, b) => a[0] - b[0]);
  const W = chartWidth();
  const H = 230;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Token balance over time: ${pts.length} transactions${pts.length ? `, now ${num(pts[pts.length - 1][1])} tokens` : ""}` });
  const box = el("figure", { class: "chart-box", attrs: { "data-chart": "token-balance", "data-points": pts.length } },
    el("figcaption", { text: "Token balance" }), node);
  if (pts.length < 2) return box;
  const [x0, x1] = [pts[0][0], pts[pts.length - 1][0]];
  const ys = pts.map((p) => p[1]);
  const [y0, y1] = [Math.min(0, ...ys), Math.max(...ys, 1)];
  const L = 64;
  const B = 42;
  const X = (x) => L + ((x - x0) / Math.max(1, x1 - x0)) * (W - L - 10);
  const Y = (y) => H - B - ((y - y0) / Math.max(1, y1 - y0)) * (H - B - 12);
  let d = `M${X(pts[0][0]).toFixed(1)},${Y(pts[0][1]).toFixed(1)}`;
  for (let i = 1; i < pts.length; i++) d += ` H${X(pts[i][0]).toFixed(1)} V${Y(pts[i][1]).toFixed(1)}`;
  node.append(
    svg("line", { class: "axis", x1: L, y1: H - B, x2: W - 4, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: 10, x2: L, y2: H - B }),
    svg("path", { class: "line", d }),
    svg("text", { x: L - 6, y: Y(y1) + 4, class: "tick end" }, num(y1)),
    svg("text", { x: L - 6, y: Y(y0) + 4, class: "tick end" }, num(y0)),
    svg("text", { x: L, y: H - B + 16, class: "tick" }, new Date(x0).toISOString().slice(0, 10)),
    svg("text", { x: W - 4, y: H - B + 16, class: "tick end" }, new Date(x1).toISOString().slice(0, 10)),
    svg("text", { x: 12, y: (H - B) / 2, class: "axis-title", transform: `rotate(-90 12 ${(H - B) / 2})` }, "Tokens"),
    svg("text", { x: (L + W) / 2, y: H - 4, class: "axis-title middle" }, "Date (UTC)"));
  return box;
}

export async function tokens(companyId) {
  const [balance, txs] = await Promise.all([
    api("GET", `/tokens/balance?company_id=${companyId}`), all(`/tokens/transactions?company_id=${companyId}`),
  ]);
  const list = cursorTable(`/tokens/transactions?company_id=${companyId}`, [
    ["When", (t) => when(t.created_at)], ["Kind", (t) => t.kind], ["Amount", (t) => num(t.amount)],
    ["Balance after", (t) => num(t.balance_after)], ["Description", (t) => t.description],
  ], "Transactions");
  page("Tokens",
    el("p", { class: "card" }, "Balance: ", el("strong", { attrs: { "data-balance": balance.balance }, text: plural(balance.balance, "token") })),
    el("h2", { text: "Balance over time" }), ledgerChart(txs),
    el("h2", { text: "Transactions" }), list.node);
  await list.load();
  fresh();
}

export async function billing(companyId) {
  const invoices = cursorTable(`/invoices?company_id=${companyId}`, [
    ["Number", (i) => link(`#/company/${companyId}/billing/${encodeURIComponent(i.id)}`, i.number)], ["Total", (i) => el("strong", { text: money(i.total_cents, i.currency) })],
    ["Status", (i) => el("span", { class: `badge ${i.status}`, text: i.status })],
    ["Period", (i) => period(i)], ["Due", (i) => utcDay(new Date(i.due_at))],
  ], "Invoices");
  const charges = cursorTable(`/charges?company_id=${companyId}`, [
    ["When", (c) => when(c.created_at)], ["Amount", (c) => money(c.amount_cents, c.currency)], ["Kind", (c) => c.kind],
    ["Description", (c) => c.description],
  ], "Recent charges");
  const [all_, usage] = await Promise.all([
    all(`/charges?company_id=${companyId}`, 300),
    api("GET", `/media/usage?company_id=${companyId}`).catch(() => null),
  ]);
  page("Billing",
    usage ? el("p", { class: "card storage", attrs: { "data-used": usage.used_bytes } },
      el("strong", { text: "Media storage: " }), `${bytes(usage.used_bytes)} of ${bytes(usage.quota_bytes)} included in the plan (${plural(usage.media_count, "item")}).`) : null,
    revenueChart(all_),
    el("h2", { text: "Invoices" }), zoneNote(), invoices.node, el("h2", { text: "Recent charges" }), charges.node);
  await Promise.all([invoices.load(), charges.load()]);
  fresh();
}

/** Which days and which times: billing counts UTC calendar days (its months are UTC months), times
 * are the company's local ones. */
function zoneNote() {
  return el("p", { class: "muted zone-note", attrs: { "data-zone": timeZone() },
    text: `Periods and dates are UTC calendar days, as billing counts them; times are in ${timeZone()}.` });
}

/** An invoice's period as the calendar month it bills, in UTC as billing counts it: "1–31 December 2026". */
function period(i) {
  const fmt = (d, opts) => new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", ...opts }).format(d);
  const start = new Date(i.period_start);
  const last = new Date(Date.parse(i.period_end) - 1000);
  return `${fmt(start, { day: "numeric" })}–${fmt(last, { day: "numeric", month: "long", year: "numeric" })}`;
}

/** One invoice as a document: who and when, its lines, its VAT and its totals; printable (the
 * console's print styles leave only the document). */
export async function invoice(companyId, invoiceId) {
  const [inv, company] = await Promise.all([
    api("GET", `/invoices/${encodeURIComponent(invoiceId)}`),
    api("GET", `/companies/${companyId}`).catch(() => null),
  ]);
  const cur = inv.currency;
  const row = (label, value, attrs = {}) => el("tr", { attrs }, el("th", { attrs: { scope: "row" }, text: label }), el("td", { class: "num" }, value));
  const lines = el("table", { class: "invoice-lines" },
    el("thead", {}, el("tr", {}, ...["Date", "Description", "Kind", "Amount"].map((h) => el("th", { class: h === "Amount" ? "num" : null, attrs: { scope: "col" }, text: h })))),
    el("tbody", {}, ...inv.lines.map((l) => el("tr", { attrs: { "data-line": l.id } },
      el("td", { attrs: { "data-label": "Date" }, text: when(l.created_at) }),
      el("td", { attrs: { "data-label": "Description" }, text: l.description }),
      el("td", { attrs: { "data-label": "Kind" }, text: l.kind }),
      el("td", { class: "num", attrs: { "data-label": "Amount" }, text: money(l.amount_cents, l.currency) })))));
  const vat = el("table", { class: "invoice-vat" },
    el("thead", {}, el("tr", {}, ...["VAT", "Rate", "Net", "VAT amount"].map((h, n) => el("th", { class: n ? "num" : null, attrs: { scope: "col" }, text: h })))),
    el("tbody", {}, ...(inv.vat_lines.length ? inv.vat_lines.map((v) => el("tr", {},
      el("td", { attrs: { "data-label": "VAT" }, text: v.description }),
      el("td", { class: "num", attrs: { "data-label": "Rate" }, text: `${v.rate_percent} %` }),
      el("td", { class: "num", attrs: { "data-label": "Net" }, text: money(v.net_cents, cur) }),
      el("td", { class: "num", attrs: { "data-label": "VAT amount" }, text: money(v.vat_cents, cur) })))
      : [el("tr", {}, el("td", { attrs: { colspan: 4 }, text: "No VAT (rate 0 %)." }))])));
  const totals = el("table", { class: "invoice-totals" }, el("tbody", {},
    row("Net", money(inv.net_cents, cur), { "data-net": inv.net_cents }),
    row(`VAT ${inv.vat_rate_percent} %`, money(inv.vat_cents, cur), { "data-vat": inv.vat_cents }),
    row("Total", el("strong", { text: money(inv.total_cents, cur) }), { "data-total": inv.total_cents })));
  const facts = el("dl", { class: "invoice-facts" },
    el("dt", { text: "Billed to" }), el("dd", { text: company ? `${company.name} (${company.country})` : inv.company_id }),
    el("dt", { text: "Status" }), el("dd", {}, el("span", { class: `badge ${inv.status}`, attrs: { "data-status": inv.status }, text: inv.status })),
    el("dt", { text: "Period" }), el("dd", { text: period(inv) }),
    el("dt", { text: "Issued" }), el("dd", { text: utcDay(new Date(inv.issued_at)) }),
    el("dt", { text: "Due" }), el("dd", { attrs: { "data-due": inv.due_at }, text: utcDay(new Date(inv.due_at)) }),
    ...(inv.paid_at ? [el("dt", { text: "Paid" }), el("dd", { text: when(inv.paid_at) })] : []));
  page(`Invoice ${inv.number}`,
    el("p", { class: "row no-print" },
      link(`#/company/${companyId}/billing`, "← All invoices"), " ",
      el("button", { attrs: { type: "button" }, text: "Print", on: { click: () => window.print() } })),
    el("article", { class: "invoice card", attrs: { "data-invoice": inv.id } },
      facts, zoneNote(),
      el("h2", { text: "Lines" }), scroller(lines, "Invoice lines"),
      el("h2", { text: "VAT" }), scroller(vat, "VAT lines"),
      el("h2", { text: "Totals" }), totals));
  fresh();
}
