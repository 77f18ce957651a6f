// A company's promotions: make one (with its QR code) in a form, see its state in one badge, its
// window and cost, its QR codes with their short links, where they land and their scans, live (the
// counts move as phones scan, "just scanned" for a minute), charts of scans per day and by device
// class, activation through a dialog that shows the cost and the balance after (no Activate on an
// ended promotion: its dates can be changed instead). Warns when the QR codes point at a loopback
// address, which no phone can reach.

import { all, api, el, isLoopback, num, offerDay, plural, sandboxNow, svgUrl, timeZone, when } from "./common.js";
import { clearNotice, dialog, field, notice, page, problemBox } from "./ui.js";
import { every, fresh } from "./live.js";
import { barList, colours, dayLines, lastDays } from "./charts.js";
import { dateTimeInput, defaultWindow, formCard, input, rfc3339Of, select, inputValueOf, valueOf } from "./forms.js";

/** Says so when QR links point at this machine only (127.0.0.1, localhost): phones cannot follow. */
export function loopbackNotice(urls) {
  const bad = urls.find((u) => isLoopback(u));
  if (!bad) {
    clearNotice("loopback");
    return;
  }
  notice("loopback", "warn", el("strong", { text: "Phones cannot scan these QR codes: " }),
    `they point at ${new URL(bad).host}, this machine only. Start the sandbox with `,
    el("code", { text: "signage demo" }), " (binds to the network and sets the public address) or set ",
    el("code", { text: "server.public_base_url" }), " to an address phones can reach.");
}

/** A promotion's state for people: one badge. */
const STATE = { active: "Running", scheduled: "Scheduled", inactive: "Switched off", expired: "Ended" };
/** How long "just scanned" shows after a scan (sandbox time). */
const JUST_SCANNED_MS = 60000;
const CLASSES = [["ios", "iPhone and iPad"], ["android", "Android"], ["desktop", "Desktop"], ["other", "Other"], ["bot", "Link previews and bots"]];

/** Every promotion's report, fetched once per render. */
async function reportsOf(rows) {
  return Promise.all(rows.map((p) => api("GET", `/promotions/${p.id}/report`).then((r) => [p, r]).catch(() => [p, null])));
}

/** Scans per UTC day of each promotion with scans, last 30 days (colour by promotion id). */
export function scansChart(reports, width) {
  const days = lastDays(sandboxNow(), 30);
  const colourOf = colours(reports.map(([p]) => p.id));
  const series = reports.filter(([, r]) => r && r.scan_count > 0)
    .map(([p, r]) => ({ name: p.name, key: p.id, values: new Map(r.scans_per_day.map((d) => [d.date, d.scans])) }));
  return dayLines("scans-per-day", "QR scans per day, by promotion (last 30 days)", series, days,
    { width, yTitle: "Scans per day", colourOf });
}

/** Scans by device class over every promotion (what `GET /promotions/{id}/report` counts). */
export function classChart(reports, width) {
  const sums = new Map(CLASSES.map(([k]) => [k, 0]));
  for (const [, r] of reports) {
    if (!r) continue;
    for (const [k, v] of Object.entries(r.scans_by_agent_class)) sums.set(k, (sums.get(k) || 0) + v);
  }
  return barList("scans-by-class", "QR scans by device class (all time)",
    CLASSES.map(([k, label], i) => ({ label, value: sums.get(k) || 0, colour: i })), { width, axis: "Scans" });
}

function justScanned(code) {
  return code.last_scanned_at && sandboxNow() - Date.parse(code.last_scanned_at) < JUST_SCANNED_MS;
}

/** One QR code: its picture, label, short link, where it lands and its scans (kept up to date). */
function qrFigure(q) {
  const count = el("span", { attrs: { "data-scan-count": q.scan_count }, text: plural(q.scan_count, "scan") });
  const fresh_ = el("span", { class: "badge just", text: "just scanned", hidden: !justScanned(q) });
  return el("figure", { attrs: { "data-qr-id": q.id } },
    el("img", { attrs: { src: svgUrl(q.image_svg), alt: `QR code ${q.label || ""}: ${q.short_url}` } }),
    el("figcaption", {}, el("strong", { text: q.label || "QR code" }), el("br"),
      el("span", { class: "url", text: q.short_url }), el("br"),
      el("a", { attrs: { href: q.target_url, target: "_blank", rel: "noopener", "data-landing": q.target_url }, text: "Open its landing page" }), el("br"),
      count, " ", fresh_));
}

/** Updates the scan counts of codes on screen; says which were scanned since the last look. True
 * when a count moved. */
function updateCounts(list, codes, announce) {
  let moved = false;
  for (const q of codes) {
    const fig = list.querySelector(`[data-qr-id="${q.id}"]`);
    if (!fig) continue;
    const count = fig.querySelector("[data-scan-count]");
    const before = Number(count.dataset.scanCount);
    if (before !== q.scan_count) {
      moved = true;
      count.dataset.scanCount = q.scan_count;
      count.textContent = plural(q.scan_count, "scan");
      if (q.scan_count > before) announce(`Scanned just now: ${q.label || "a QR code"} (${plural(q.scan_count, "scan")}).`);
    }
    fig.querySelector(".just").hidden = !justScanned(q);
  }
  return moved;
}

export async function promotions(companyId) {
  const status = el("p", { attrs: { role: "status" } });
  const live = el("p", { class: "live-scan", attrs: { "aria-live": "polite", "data-live-scan": "" } });
  const formBox = el("div");
  const charts = el("div", { class: "chart-pair" });
  const list = el("div");
  const newButton = el("button", { class: "primary", attrs: { type: "button", "aria-expanded": "false" }, text: "New promotion" });
  page("Promotions", el("div", { class: "row" }, newButton), formBox, status, live, charts, list);
  let rows = [];

  const drawCharts = (reports) => {
    const half = charts.clientWidth > 760 ? Math.floor((charts.clientWidth - 24) / 2) : undefined;
    charts.replaceChildren(scansChart(reports, half), classChart(reports, half));
  };
  const render = async () => {
    rows = await all(`/promotions?company_id=${companyId}`);
    const reports = await reportsOf(rows);
    const urls = [];
    list.replaceChildren(...await Promise.all(rows.map(async (p) => {
      const codes = await api("GET", `/promotions/${p.id}/qr-codes`).then((r) => r.data).catch(() => []);
      urls.push(...codes.map((q) => q.short_url));
      return card(p, codes);
    })));
    loopbackNotice(urls);
    drawCharts(reports);
    fresh();
  };

  const card = (p, codes) => {
    const ended = p.state === "expired";
    const actions = [];
    if (ended) {
      actions.push(el("span", { class: "muted", text: `Ended on ${offerDay(p.ends_at, true)}: it cannot be activated again unless its dates change.` }));
      actions.push(el("button", { attrs: { type: "button" }, text: "Change dates", on: { click: () => editDates(p) } }));
    } else if (p.active) {
      actions.push(el("button", { attrs: { type: "button" }, text: "Deactivate", on: { click: () => toggle(p, false) } }));
    } else {
      actions.push(el("button", { class: "primary", attrs: { type: "button" }, text: "Activate", on: { click: () => toggle(p, true) } }));
    }
    if (!ended) actions.push(el("button", { attrs: { type: "button" }, text: "Add QR code", on: { click: (ev) => addCode(p, ev.target) } }));
    const lands = p.landing_url ? ["lands on ", el("a", { attrs: { href: p.landing_url, target: "_blank", rel: "noopener" }, text: new URL(p.landing_url).host })]
      : ["lands on the sandbox's landing page"];
    return el("article", { class: "card", attrs: { "data-promotion-id": p.id, "data-state": p.state } },
      el("h2", { text: p.name }),
      el("p", { class: "row" }, el("span", { class: `badge ${p.state}`, text: STATE[p.state] || p.state }),
        el("span", { attrs: { "data-offer-days": "", title: `${when(p.starts_at)} → ${when(p.ends_at)}` },
          text: `Valid from ${offerDay(p.starts_at)} to ${offerDay(p.ends_at, true)}` }),
        ` (ends ${when(p.ends_at)}) · ${p.discount_percent === null ? "no discount" : `${p.discount_percent}% off`} · activation ${plural(p.activation_cost_tokens, "token")} · `, ...lands),
      el("p", { text: p.description }),
      codes.length ? el("div", { class: "qr-list" }, ...codes.map(qrFigure)) : el("p", { class: "muted", text: "No QR code yet." }),
      el("div", { class: "row actions-row" }, ...actions));
  };

  const after = async (text) => {
    status.textContent = text;
    await render();
  };

  const toggle = async (p, activate) => {
    try {
      const balance = await api("GET", `/tokens/balance?company_id=${companyId}`);
      const cost = activate ? p.activation_cost_tokens : 0;
      const left = balance.balance - cost;
      const enough = left >= 0;
      const body = el("div", {}, el("dl", { class: "facts" },
        el("dt", { text: "Promotion" }), el("dd", { text: p.name }),
        el("dt", { text: "Cost" }), el("dd", { text: plural(cost, "token") }),
        el("dt", { text: "Balance now" }), el("dd", { text: plural(balance.balance, "token") }),
        el("dt", { text: "Balance after" }), el("dd", { attrs: { "data-balance-after": left }, text: enough ? plural(left, "token") : "—" })),
        enough ? (activate ? null : el("p", { class: "muted", text: "Deactivating refunds nothing: the cost paid for the activation." }))
          : el("p", { class: "problem", text: `Not enough tokens: this needs ${plural(cost, "token")} and the balance is ${num(balance.balance)}. Buy a token pack first.` }));
      const ok = await dialog(activate ? "Activate promotion?" : "Deactivate promotion?", body, enough ? (activate ? "Activate" : "Deactivate") : null);
      if (!ok) return;
      await api("POST", `/promotions/${p.id}/${activate ? "activate" : "deactivate"}`);
      const now = await api("GET", `/tokens/balance?company_id=${companyId}`);
      await after(`${p.name} ${activate ? "activated" : "deactivated"}. Balance: ${plural(now.balance, "token")}.`);
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };

  const editDates = async (p) => {
    const { body: current, etag } = await api("GET", `/promotions/${p.id}`, undefined, { etag: true });
    const [, ends] = defaultWindow(14);
    const form = formCard({
      title: `Dates of ${current.name}`,
      submitText: "Save dates",
      labels: { "/starts_at": "Starts", "/ends_at": "Ends" },
      onCancel: () => form.remove(),
      fields: [
        field(`Starts (${timeZone()})`, dateTimeInput("starts_at", { required: true, value: inputValueOf(new Date(current.starts_at)) })),
        field(`Ends (${timeZone()})`, dateTimeInput("ends_at", { required: true, value: inputValueOf(ends) })),
      ],
      submit: async (f) => {
        const changed = await api("PATCH", `/promotions/${p.id}`, { starts_at: rfc3339Of(valueOf(f, "starts_at")), ends_at: rfc3339Of(valueOf(f, "ends_at")) }, { ifMatch: etag });
        await after(`${changed.name} now runs ${when(changed.starts_at)} → ${when(changed.ends_at)}.`);
        return "Dates saved.";
      },
    });
    list.querySelector(`[data-promotion-id="${p.id}"]`).append(form);
    form.querySelector("input").focus();
  };

  const addCode = (p, button) => {
    const form = formCard({
      title: "New QR code",
      submitText: "Create QR code",
      labels: { "/label": "Placement", "/target_url": "Target" },
      onCancel: () => form.remove(),
      fields: [field("Placement", input("label", { maxlength: 100, value: "Entrance poster" }), "Where it is shown, to tell scans apart.")],
      submit: async (f) => {
        const q = await api("POST", `/promotions/${p.id}/qr-codes`, { label: valueOf(f, "label"), utm: { source: "signage", medium: "qr" } });
        await after(`QR code “${q.label}” made: ${q.short_url} leads to ${q.target_url}.`);
        return "QR code made.";
      },
    });
    button.closest("article").append(form);
    form.querySelector("input").focus();
  };

  const newForm = () => {
    const [start, end] = defaultWindow(14);
    const own = input("landing_url", { type: "url", maxlength: 2048, placeholder: "https://www.example.com/offer" });
    const ownField = field("Landing page URL", own, "On one of the company's landing domains.");
    ownField.hidden = true;
    const landing = select("landing", [["sandbox", "The sandbox's landing page (logo, colours, the offer)"], ["own", "Our own page"]]);
    landing.addEventListener("change", () => { ownField.hidden = landing.value !== "own"; });
    const withCode = el("input", { attrs: { type: "checkbox", name: "with_code", checked: true } });
    const form = formCard({
      title: "New promotion",
      submitText: "Create promotion",
      labels: { "/name": "Name", "/description": "Description", "/discount_percent": "Discount", "/activation_cost_tokens": "Activation cost",
        "/starts_at": "Starts", "/ends_at": "Ends", "/landing_url": "Landing page URL", "/label": "QR code placement" },
      onCancel: () => { formBox.replaceChildren(); newButton.setAttribute("aria-expanded", "false"); newButton.focus(); },
      fields: [
        field("Name", input("name", { required: true, maxlength: 100, placeholder: "Cheese Week" })),
        field("Description", input("description", { maxlength: 1000, placeholder: "10% off every cheese at the counter." })),
        el("div", { class: "field-row" },
          field("Discount (%)", input("discount_percent", { type: "number", min: 1, max: 100, inputmode: "numeric" }), "Leave empty for none."),
          field("Activation cost (tokens)", input("activation_cost_tokens", { type: "number", min: 0, max: 100000, value: 50, required: true }))),
        el("div", { class: "field-row" },
          field(`Starts (${timeZone()})`, dateTimeInput("starts_at", { required: true, value: inputValueOf(start) })),
          field(`Ends (${timeZone()})`, dateTimeInput("ends_at", { required: true, value: inputValueOf(end) }))),
        field("Where its QR codes lead", landing), ownField,
        el("div", { class: "field check" }, withCode, el("label", { attrs: { for: "with-code" }, text: "Make a QR code for it now" })),
        field("QR code placement", input("label", { maxlength: 100, value: "Entrance poster" })),
      ],
      submit: async (f) => {
        const body = {
          company_id: companyId, name: valueOf(f, "name"), description: valueOf(f, "description"),
          activation_cost_tokens: Number(valueOf(f, "activation_cost_tokens") || 0),
          starts_at: rfc3339Of(valueOf(f, "starts_at")), ends_at: rfc3339Of(valueOf(f, "ends_at")),
          discount_percent: valueOf(f, "discount_percent") ? Number(valueOf(f, "discount_percent")) : null,
        };
        if (landing.value === "own") body.landing_url = valueOf(f, "landing_url");
        const made = await api("POST", "/promotions", body);
        let said = `${made.name} is created (switched off: activate it to run it).`;
        if (withCode.checked) {
          const q = await api("POST", `/promotions/${made.id}/qr-codes`, { label: valueOf(f, "label"), utm: { source: "signage", medium: "qr" } });
          said += ` Its QR code ${q.short_url} leads to ${q.target_url}.`;
        }
        await after(said);
        formBox.replaceChildren();
        newButton.setAttribute("aria-expanded", "false");
        const cardNode = list.querySelector(`[data-promotion-id="${made.id}"]`);
        if (cardNode) cardNode.scrollIntoView({ block: "nearest" });
        return said;
      },
    });
    withCode.id = "with-code";
    return form;
  };
  newButton.addEventListener("click", () => {
    const open = newButton.getAttribute("aria-expanded") === "true";
    newButton.setAttribute("aria-expanded", String(!open));
    formBox.replaceChildren(...(open ? [] : [newForm()]));
    if (!open) formBox.querySelector("input").focus();
  });

  await render();
  // Live: every 3 s the codes' counts (one list request per promotion), so a scan shows at once;
  // a scan also redraws the charts from the reports (its day, its device class, a promotion's first
  // scan adding its line). A promotion made meanwhile elsewhere (another tab, a client) redraws all.
  every(3000, async () => {
    const listed = await all(`/promotions?company_id=${companyId}`);
    if (listed.map((p) => p.id).join() !== rows.map((p) => p.id).join()) {
      await render();
      return;
    }
    let scanned = false;
    for (const p of rows) {
      const codes = await api("GET", `/promotions/${p.id}/qr-codes`).then((r) => r.data);
      scanned = updateCounts(list, codes, (text) => { live.textContent = text; }) || scanned;
    }
    if (scanned) drawCharts(await reportsOf(rows));
  });
}
