// A company's promotions: state, window, QR codes with their short URLs and scans, a chart of
// scans per day per promotion, and activation through a dialog that shows the cost and the balance
// after. Warns when the QR codes point at a loopback address, which no phone can reach.

import { all, api, el, isLoopback, randomKey, svgUrl, when } from "./common.js";
import { clearNotice, dialog, notice, page, problemBox } from "./ui.js";
import { fresh } from "./live.js";
import { scansChart } from "./dashboard.js";

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

export async function promotions(companyId) {
  const list = el("div");
  const chart = el("div");
  const status = el("p", { attrs: { role: "status" } });
  page("Promotions", status, chart, list);
  const render = async () => {
    const rows = await all(`/promotions?company_id=${companyId}`);
    const urls = [];
    list.replaceChildren(...await Promise.all(rows.map(async (p) => {
      const codes = await api("GET", `/promotions/${p.id}/qr-codes`).then((r) => r.data).catch(() => []);
      urls.push(...codes.map((q) => q.short_url || q.target_url));
      const button = p.active
        ? el("button", { attrs: { type: "button" }, text: "Deactivate", on: { click: () => toggle(p, false) } })
        : el("button", { class: "primary", attrs: { type: "button" }, text: "Activate", on: { click: () => toggle(p, true) } });
      return el("article", { class: "card", attrs: { "data-promotion-id": p.id } },
        el("h2", { text: p.name }),
        el("p", { class: "row" }, el("span", { class: `badge ${p.state}`, text: p.state }),
          p.active ? el("span", { class: "badge active", text: "active" }) : null,
          `${when(p.starts_at)} → ${when(p.ends_at)} · ${p.discount_percent === null ? "no discount" : `${p.discount_percent}% off`} · activation ${p.activation_cost_tokens} tokens`),
        el("p", { text: p.description }),
        el("div", { class: "qr-list" }, ...codes.map((q) => el("figure", { attrs: { "data-qr-id": q.id } },
          el("img", { attrs: { src: svgUrl(q.image_svg), alt: `QR code ${q.label || ""}` } }),
          el("figcaption", {}, el("strong", { text: q.label || "QR code" }), el("br"),
            el("span", { class: "url", text: q.short_url || q.target_url }), el("br"),
            el("span", { attrs: { "data-scan-count": q.scan_count }, text: `${q.scan_count} scans` }))))),
        el("div", { class: "row" }, button));
    })));
    loopbackNotice(urls);
    chart.replaceChildren(await scansChart(rows));
    fresh();
  };
  const toggle = async (p, activate) => {
    try {
      const balance = await api("GET", `/tokens/balance?company_id=${companyId}`);
      const cost = activate ? p.activation_cost_tokens : 0;
      const after = balance.balance - cost;
      const body = el("dl", { class: "facts" },
        el("dt", { text: "Promotion" }), el("dd", { text: p.name }),
        el("dt", { text: "Cost" }), el("dd", { text: `${cost} tokens` }),
        el("dt", { text: "Balance now" }), el("dd", { text: `${balance.balance} tokens` }),
        el("dt", { text: "Balance after" }), el("dd", { attrs: { "data-balance-after": after }, text: `${after} tokens` }));
      const ok = await dialog(activate ? "Activate promotion?" : "Deactivate promotion?", body, activate ? "Activate" : "Deactivate");
      if (!ok) return;
      await api("POST", `/promotions/${p.id}/${activate ? "activate" : "deactivate"}`, undefined, { headers: { "Idempotency-Key": randomKey() } });
      const now = await api("GET", `/tokens/balance?company_id=${companyId}`);
      status.textContent = `${p.name} ${activate ? "activated" : "deactivated"}. Balance: ${now.balance} tokens.`;
      await render();
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };
  await render();
}
