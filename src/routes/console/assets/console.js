// The demo console: a single page over the REST API, with hash routes so that every view has a
// stable URL. It sees exactly what the signed-in credential may see.

import {
  Problem, ago, all, api, blobUrl, credential, el, forgetCredential, money, randomKey,
  saveCredential, svgUrl, when,
} from "./common.js";
import { readinessView, requestView } from "./readiness.js";

const $ = (id) => document.getElementById(id);
const view = $("view");
let timers = [];
let me = null;

function clearTimers() {
  for (const t of timers) clearInterval(t);
  timers = [];
}

function every(ms, fn) {
  timers.push(setInterval(fn, ms));
}

function problemBox(e) {
  const p = e instanceof Problem ? e : new Problem(0, { title: "Error", detail: String(e) });
  const code = p.body.code ? ` (${p.body.code})` : "";
  const hint =
    p.status === 401 ? " Sign in again with a valid credential."
      : p.status === 403 ? " This credential lacks the scope for this view."
        : p.status === 404 ? " It does not exist, or this credential may not see it." : "";
  return el("p", { class: "problem", attrs: { role: "alert" } },
    `${p.status ? `${p.status} ` : ""}${p.message}${code}.${hint}`);
}

function page(title, ...children) {
  view.replaceChildren(el("h1", { text: title }), ...children);
  view.hidden = false;
  document.title = `${title} · signage console`;
}

function link(href, text) {
  return el("a", { attrs: { href }, text });
}

// ---- sign-in ------------------------------------------------------------------------------------

async function signedIn() {
  const c = credential();
  if (!c) return false;
  try {
    me = await api("GET", "/me");
    return true;
  } catch (e) {
    if (e.status === 401) forgetCredential();
    $("signin-error").replaceChildren(...problemBox(e).childNodes);
    $("signin-error").hidden = false;
    return false;
  }
}

async function onKeySignIn(event) {
  event.preventDefault();
  saveCredential({ kind: "key", key: $("key-input").value.trim(), client: $("client-input").value.trim() });
  $("key-input").value = "";
  await start();
}

async function onLogin(event) {
  event.preventDefault();
  forgetCredential();
  try {
    const token = await api("POST", "/auth/login", {
      username: $("user-input").value, password: $("password-input").value,
    });
    saveCredential({ kind: "bearer", token: token.access_token });
    $("password-input").value = "";
    await start();
  } catch (e) {
    $("signin-error").replaceChildren(...problemBox(e).childNodes);
    $("signin-error").hidden = false;
  }
}

function signOut() {
  forgetCredential();
  me = null;
  clearTimers();
  location.hash = "";
  showSignIn();
}

function showSignIn() {
  $("signin").hidden = false;
  view.hidden = true;
  $("nav").hidden = true;
  $("signout").hidden = true;
  $("who").textContent = "";
}

// ---- navigation -----------------------------------------------------------------------------------

function nav(companyId) {
  const items = [["#/companies", "Companies"]];
  if (companyId) {
    for (const [sub, label] of [["fleet", "Fleet"], ["promotions", "Promotions"], ["tokens", "Tokens"],
      ["billing", "Billing"], ["media", "Media"], ["webhooks", "Webhooks"]]) {
      items.push([`#/company/${companyId}/${sub}`, label]);
    }
  }
  items.push(["#/events", "Events"], ["#/readiness", "Readiness"], ["#/sandbox", "Sandbox"]);
  const here = location.hash || "#/companies";
  $("nav").replaceChildren(...items.map(([href, label]) =>
    el("a", { attrs: { href, "aria-current": here === href ? "page" : null }, text: label })));
  $("nav").hidden = false;
}

const HEX = /^#[0-9a-fA-F]{6}$/;

/** WCAG contrast ratio of a #rrggbb colour against white. */
function contrastWithWhite(hex) {
  const lin = (i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return 1.05 / (l + 0.05);
}

/** The first brand colour that white text stays readable on (WCAG AA, with room for the darker
 * highlight of the current view), if any. */
function readableBrandColour(colors) {
  return [colors.primary, colors.secondary].find((c) => HEX.test(c || "") && contrastWithWhite(c) >= 4.6);
}

/** Applies a company's brand colours to the console while its pages are shown. */
async function applyBranding(companyId) {
  const root = document.documentElement.style;
  root.removeProperty("--primary");
  $("brand").textContent = "signage";
  if (!companyId) return;
  try {
    const [company, branding] = await Promise.all([
      api("GET", `/companies/${companyId}`), api("GET", `/companies/${companyId}/branding`),
    ]);
    const colour = readableBrandColour(branding.colors);
    if (colour) root.setProperty("--primary", colour);
    $("brand").textContent = company.name;
  } catch (_) {
    /* the page itself reports the problem */
  }
}

async function route() {
  clearTimers();
  const parts = (location.hash || "#/companies").slice(2).split("/");
  const companyId = parts[0] === "company" ? parts[1] : null;
  nav(companyId);
  await applyBranding(companyId);
  try {
    if (parts[0] === "companies" || parts[0] === "") await companies();
    else if (companyId && !parts[2]) await company(companyId);
    else if (companyId && parts[2] === "fleet") await fleet(companyId);
    else if (companyId && parts[2] === "promotions") await promotions(companyId);
    else if (companyId && parts[2] === "tokens") await tokens(companyId);
    else if (companyId && parts[2] === "billing") await billing(companyId);
    else if (companyId && parts[2] === "media") await media(companyId);
    else if (companyId && parts[2] === "webhooks") await webhooks(companyId);
    else if (parts[0] === "events") await events();
    else if (parts[0] === "sandbox") await sandbox();
    else if (parts[0] === "readiness") await readinessView(page);
    else if (parts[0] === "requests" && parts[1]) await requestView(page, decodeURIComponent(parts[1]));
    else page("Not found", el("p", { text: "There is no such view." }));
  } catch (e) {
    page("Something went wrong", problemBox(e));
  }
  $("main").focus({ preventScroll: true });
}

// ---- views ----------------------------------------------------------------------------------------

async function companies() {
  const rows = await all("/companies");
  const cards = await Promise.all(rows.map(async (c) => {
    let brand = null;
    try {
      brand = await api("GET", `/companies/${c.id}/branding`);
    } catch (_) {
      brand = null;
    }
    return el("article", { class: "card company", attrs: { "data-company-id": c.id } },
      el("h2", {}, link(`#/company/${c.id}`, c.name)),
      el("p", { class: "muted", text: `${c.industry} · ${c.country} · ${c.timezone}` }),
      brand ? el("p", {}, ...Object.entries(brand.colors).map(([k, v]) => {
        const s = el("span", { class: "swatch", attrs: { title: `${k} ${v}`, role: "img", "aria-label": `${k} colour ${v}` } });
        if (HEX.test(v)) s.style.setProperty("background", v);
        return s;
      }), " ", brand.tagline) : null);
  }));
  page("Companies", el("p", { class: "muted", text: `${rows.length} companies visible to this credential.` }), ...cards);
}

async function company(id) {
  const [c, b] = await Promise.all([api("GET", `/companies/${id}`), api("GET", `/companies/${id}/branding`)]);
  page(c.name,
    el("p", { text: b.tagline }),
    el("dl", { class: "facts" },
      el("dt", { text: "Industry" }), el("dd", { text: c.industry }),
      el("dt", { text: "Country" }), el("dd", { text: c.country }),
      el("dt", { text: "Fonts" }), el("dd", { text: `${b.fonts.heading} / ${b.fonts.body}` }),
      el("dt", { text: "Logos" }), el("dd", {}, ...b.logos.map((l) => el("span", { class: "badge", text: `${l.variant} ${l.format} ${l.width}×${l.height}` })))),
    el("p", {}, "Views: ", link(`#/company/${id}/fleet`, "fleet"), " · ", link(`#/company/${id}/promotions`, "promotions"),
      " · ", link(`#/company/${id}/tokens`, "tokens"), " · ", link(`#/company/${id}/billing`, "billing")));
}

/** What a screen shows: the media of its current ad, with the promotion's QR code over it. */
async function screen(ad, qrByPromotion, mediaById) {
  const box = el("div", { class: "screen" });
  if (!ad) {
    box.append("Nothing playing");
    return box;
  }
  const m = ad.media_id ? mediaById.get(ad.media_id) : null;
  if (m && m.content_type.startsWith("image/")) {
    try {
      box.append(el("img", { class: "media", attrs: { src: await blobUrl(`/media/${m.id}/content`), alt: ad.headline } }));
    } catch (_) {
      box.append(ad.headline);
    }
  } else if (m && m.content_type.startsWith("video/")) {
    try {
      box.append(el("video", { class: "media", attrs: { src: await blobUrl(`/media/${m.id}/content`), muted: true, autoplay: true, loop: true, "aria-label": ad.headline } }));
    } catch (_) {
      box.append(ad.headline);
    }
  } else {
    box.append(ad.headline);
  }
  const qr = ad.promotion_id ? qrByPromotion.get(ad.promotion_id) : null;
  if (qr) box.append(el("img", { class: "qr", attrs: { src: qr, alt: "QR code of the promotion" } }));
  return box;
}

async function fleet(companyId) {
  const grid = el("div", { class: "grid", attrs: { "aria-label": "Screens" } });
  const summary = el("p", { class: "muted" });
  page("Fleet", summary, grid);
  const qrByPromotion = new Map();
  const refresh = async () => {
    const [devices, ads, mediaRows] = await Promise.all([
      all(`/devices?company_id=${companyId}`), all(`/ads?company_id=${companyId}`),
      all(`/media?company_id=${companyId}`).catch(() => []),
    ]);
    const adById = new Map(ads.map((a) => [a.id, a]));
    const mediaById = new Map(mediaRows.map((m) => [m.id, m]));
    for (const a of ads) {
      if (a.promotion_id && !qrByPromotion.has(a.promotion_id)) {
        qrByPromotion.set(a.promotion_id, null);
        try {
          const codes = await api("GET", `/promotions/${a.promotion_id}/qr-codes`);
          if (codes.data.length) qrByPromotion.set(a.promotion_id, svgUrl(codes.data[0].image_svg));
        } catch (_) {
          /* a key without promotions:read sees no codes */
        }
      }
    }
    const tiles = await Promise.all(devices.map(async (d) => {
      let diag = null;
      try {
        diag = await api("GET", `/devices/${d.id}/diagnostics`);
      } catch (_) {
        diag = null;
      }
      const status = diag ? diag.status : d.status;
      const age = diag ? diag.seconds_since_heartbeat : null;
      const adId = diag && diag.current_ad ? diag.current_ad.id : d.current_ad_id;
      const ad = adId ? adById.get(adId) : null;
      const tile = el("button", {
        class: `tile ${status}`, attrs: { type: "button", "data-device-id": d.id, "aria-label": `${d.name}, ${status.replace("_", " ")}` },
        on: { click: () => showDiagnostics(d, diag) },
      },
      el("h3", { text: d.name }),
      el("span", { class: `status ${status}`, text: status.replace("_", " ") }),
      el("span", { class: "muted", text: ` · heartbeat ${ago(age)}` }),
      await screen(ad, qrByPromotion, mediaById),
      el("span", { class: "muted", text: ad ? `Playing: ${ad.name}` : `${d.location}` }));
      return tile;
    }));
    const count = (s) => devices.filter((d) => d.status === s).length;
    summary.textContent = `${devices.length} screens: ${count("online")} online, ${count("offline")} offline, ${count("never_seen")} never seen. Refreshed every 5 s.`;
    grid.replaceChildren(...tiles);
  };
  await refresh();
  every(5000, () => refresh().catch(() => {}));
}

function showDiagnostics(device, diag) {
  const body = el("div", {},
    el("dl", { class: "facts" },
      el("dt", { text: "Location" }), el("dd", { text: device.location }),
      el("dt", { text: "Platform" }), el("dd", { text: `${device.platform} · ${device.resolution} · ${device.orientation}` }),
      el("dt", { text: "Status" }), el("dd", { text: diag ? diag.status : device.status }),
      el("dt", { text: "Last seen" }), el("dd", { text: diag ? when(diag.last_seen) : "—" }),
      el("dt", { text: "App version" }), el("dd", { text: (diag && diag.app_version) || "—" }),
      el("dt", { text: "Storage" }), el("dd", { text: diag && diag.storage ? `${diag.storage.free_percent}% free` : "—" })),
    el("h3", { text: "Recent playback errors" }),
    diag && diag.recent_playback_errors.length
      ? el("ul", {}, ...diag.recent_playback_errors.map((e) => el("li", { text: `${when(e.occurred_at || e.at)} ${e.code}: ${e.message}` })))
      : el("p", { class: "muted", text: "None." }),
    el("p", {}, el("a", { attrs: { href: `/player/${device.id}`, target: "_blank" }, text: "Open this screen's player" })));
  dialog(`Screen: ${device.name}`, body, null);
}

/** A modal dialog; resolves true when confirmed. `ok` null shows a single Close button. */
function dialog(title, body, ok) {
  const d = $("dialog");
  $("dialog-title").textContent = title;
  $("dialog-body").replaceChildren(body);
  $("dialog-ok").hidden = ok === null;
  $("dialog-ok").textContent = ok || "Confirm";
  $("dialog-cancel").textContent = ok === null ? "Close" : "Cancel";
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

async function promotions(companyId) {
  const list = el("div");
  const status = el("p", { attrs: { role: "status" } });
  page("Promotions", status, list);
  const render = async () => {
    const rows = await all(`/promotions?company_id=${companyId}`);
    list.replaceChildren(...await Promise.all(rows.map(async (p) => {
      const codes = await api("GET", `/promotions/${p.id}/qr-codes`).then((r) => r.data).catch(() => []);
      const button = p.active
        ? el("button", { attrs: { type: "button" }, text: "Deactivate", on: { click: () => toggle(p, false) } })
        : el("button", { class: "primary", attrs: { type: "button" }, text: "Activate", on: { click: () => toggle(p, true) } });
      return el("article", { class: "card", attrs: { "data-promotion-id": p.id } },
        el("h2", { text: p.name }),
        el("p", { class: "row" }, el("span", { class: `badge ${p.state}`, text: p.state }),
          p.active ? el("span", { class: "badge active", text: "active" }) : null,
          `${when(p.starts_at)} → ${when(p.ends_at)} · ${p.discount_percent}% off · activation ${p.activation_cost_tokens} tokens`),
        el("p", { text: p.description }),
        el("div", { class: "qr-list" }, ...codes.map((q) => el("figure", {},
          el("img", { attrs: { src: svgUrl(q.image_svg), alt: `QR code ${q.label || ""}` } }),
          el("figcaption", {}, el("strong", { text: q.label || "QR code" }), el("br"),
            q.short_url || q.target_url, el("br"), `${q.scan_count} scans`)))),
        el("div", { class: "row" }, button));
    })));
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

function ledgerChart(txs) {
  const pts = txs.map((t) => [Date.parse(t.created_at), t.balance_after]).sort((a, b) => a[0] - b[0]);
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", "0 0 800 220");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Token balance over time");
  if (pts.length < 2) return svg;
  const [x0, x1] = [pts[0][0], pts[pts.length - 1][0]];
  const ys = pts.map((p) => p[1]);
  const [y0, y1] = [Math.min(0, ...ys), Math.max(...ys, 1)];
  const X = (x) => 50 + ((x - x0) / Math.max(1, x1 - x0)) * 730;
  const Y = (y) => 190 - ((y - y0) / Math.max(1, y1 - y0)) * 170;
  let d = `M${X(pts[0][0]).toFixed(1)},${Y(pts[0][1]).toFixed(1)}`;
  for (let i = 1; i < pts.length; i++) d += ` H${X(pts[i][0]).toFixed(1)} V${Y(pts[i][1]).toFixed(1)}`;
  const mk = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.append(n);
  };
  mk("line", { class: "axis", x1: 50, y1: 190, x2: 780, y2: 190 });
  mk("line", { class: "axis", x1: 50, y1: 20, x2: 50, y2: 190 });
  mk("path", { class: "line", d });
  mk("text", { x: 4, y: Y(y1) + 4 }, String(y1));
  mk("text", { x: 4, y: Y(y0) + 4 }, String(y0));
  mk("text", { x: 50, y: 210 }, new Date(x0).toISOString().slice(0, 10));
  mk("text", { x: 700, y: 210 }, new Date(x1).toISOString().slice(0, 10));
  return svg;
}

function cursorTable(path, columns) {
  const body = el("tbody");
  const more = el("button", { attrs: { type: "button" }, text: "Load more" });
  const table = el("table", {},
    el("thead", {}, el("tr", {}, ...columns.map(([h]) => el("th", { attrs: { scope: "col" }, text: h })))), body);
  let cursor = null;
  const load = async () => {
    const sep = path.includes("?") ? "&" : "?";
    const pageData = await api("GET", `${path}${sep}limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    for (const row of pageData.data) {
      body.append(el("tr", {}, ...columns.map(([, f]) => el("td", {}, f(row)))));
    }
    cursor = pageData.next_cursor;
    more.hidden = !pageData.has_more;
  };
  more.addEventListener("click", () => load().catch((e) => more.replaceWith(problemBox(e))));
  return { node: el("div", {}, table, more), load };
}

async function tokens(companyId) {
  const [balance, txs] = await Promise.all([
    api("GET", `/tokens/balance?company_id=${companyId}`), all(`/tokens/transactions?company_id=${companyId}`),
  ]);
  const list = cursorTable(`/tokens/transactions?company_id=${companyId}`, [
    ["When", (t) => when(t.created_at)], ["Kind", (t) => t.kind], ["Amount", (t) => String(t.amount)],
    ["Balance after", (t) => String(t.balance_after)], ["Description", (t) => t.description],
  ]);
  page("Tokens",
    el("p", { class: "card" }, "Balance: ", el("strong", { attrs: { "data-balance": balance.balance }, text: `${balance.balance} tokens` })),
    el("h2", { text: "Balance over time" }), ledgerChart(txs),
    el("h2", { text: "Transactions" }), list.node);
  await list.load();
}

async function billing(companyId) {
  const invoices = cursorTable(`/invoices?company_id=${companyId}`, [
    ["Number", (i) => i.number], ["Status", (i) => el("span", { class: `badge ${i.status}`, text: i.status })],
    ["Period", (i) => `${when(i.period_start)} → ${when(i.period_end)}`], ["Due", (i) => when(i.due_at)],
    ["Total", (i) => money(i.total_cents, i.currency)],
  ]);
  const charges = cursorTable(`/charges?company_id=${companyId}`, [
    ["When", (c) => when(c.created_at)], ["Kind", (c) => c.kind], ["Description", (c) => c.description],
    ["Amount", (c) => money(c.amount_cents, c.currency)],
  ]);
  page("Billing", el("h2", { text: "Invoices" }), invoices.node, el("h2", { text: "Recent charges" }), charges.node);
  await Promise.all([invoices.load(), charges.load()]);
}

async function media(companyId) {
  const rows = await all(`/media?company_id=${companyId}`);
  const figures = await Promise.all(rows.map(async (m) => {
    let visual = el("div", { class: "muted", text: m.content_type });
    if (m.content_type.startsWith("image/")) {
      try {
        visual = el("img", { attrs: { src: await blobUrl(`/media/${m.id}/content`), alt: m.filename } });
      } catch (_) {
        /* keep the placeholder */
      }
    }
    return el("figure", {}, visual, el("figcaption", {}, m.filename, el("br"), `${m.content_type} · ${m.size_bytes} bytes`));
  }));
  page("Media", el("div", { class: "thumbs" }, ...figures));
}

async function webhooks(companyId) {
  const rows = await all(`/webhooks?company_id=${companyId}`);
  const log = el("div");
  const table = el("table", {},
    el("thead", {}, el("tr", {}, ...["URL", "Events", "Enabled", "Secret", ""].map((h) => el("th", { attrs: { scope: "col" }, text: h })))),
    el("tbody", {}, ...rows.map((w) => el("tr", {},
      el("td", { text: w.url }), el("td", { text: w.event_types.join(", ") }), el("td", { text: w.enabled ? "yes" : "no" }),
      el("td", { text: `…${w.secret_last4}` }),
      el("td", {}, el("button", { attrs: { type: "button" }, text: "Deliveries", on: { click: () => deliveries(w, log) } }))))));
  page("Webhooks", table, log);
}

async function deliveries(w, box) {
  try {
    const rows = await api("GET", `/webhooks/${w.id}/deliveries?limit=20`);
    box.replaceChildren(el("h2", { text: `Deliveries to ${w.url}` }),
      rows.data.length ? el("table", {}, el("tbody", {}, ...rows.data.map((d) => el("tr", {},
        el("td", { text: d.event_type || d.type || "" }), el("td", {}, el("span", { class: `badge ${d.status}`, text: d.status })),
        el("td", { text: `${(d.attempts || []).length} attempt(s)` }))))) : el("p", { class: "muted", text: "No deliveries yet." }));
  } catch (e) {
    box.replaceChildren(problemBox(e));
  }
}

async function events() {
  const list = el("ol", { attrs: { "aria-label": "Events, newest first" } });
  const note = el("p", { class: "muted", text: "New events appear here as they happen (polled every 3 s)." });
  page("Events", note, list);
  let newest = null;
  const poll = async () => {
    const first = await api("GET", "/events?limit=50");
    const fresh = [];
    for (const e of first.data) {
      if (e.id === newest) break;
      fresh.push(e);
    }
    if (fresh.length) newest = first.data[0].id;
    list.prepend(...fresh.map((e) => el("li", {},
      el("strong", { text: e.type }), ` ${when(e.created_at)} · ${e.resource_id || ""}`,
      e.via ? el("span", { class: "badge", text: e.via }) : null,
      e.actor ? el("span", { class: "muted", text: ` by ${e.actor}` }) : null)));
  };
  await poll();
  every(3000, () => poll().catch(() => {}));
}

async function sandbox() {
  const clockBox = el("div", { class: "card" });
  const faultsBox = el("div", { class: "card" });
  const snapBox = el("div", { class: "card" });
  const status = el("p", { attrs: { role: "status" } });
  page("Sandbox", el("p", { class: "muted", text: "The sandbox operator's controls (scope sandbox)." }), status, clockBox, faultsBox, snapBox);
  const act = async (fn, done) => {
    try {
      await fn();
      status.textContent = done;
      await render();
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };
  const render = async () => {
    try {
      const clock = await api("GET", "/_sandbox/clock");
      clockBox.replaceChildren(el("h2", { text: "Clock" }),
        el("p", {}, "Now: ", el("strong", { attrs: { "data-now": clock.now }, text: when(clock.now) }), ` (${clock.mode})`),
        el("div", { class: "row" },
          el("button", { attrs: { type: "button" }, text: "Advance 1 hour", on: { click: () => act(() => api("POST", "/_sandbox/clock/advance", { seconds: 3600 }), "Advanced one hour.") } }),
          el("button", { attrs: { type: "button" }, text: "Advance 1 day", on: { click: () => act(() => api("POST", "/_sandbox/clock/advance", { seconds: 86400 }), "Advanced one day.") } })));
    } catch (e) {
      clockBox.replaceChildren(el("h2", { text: "Clock" }), problemBox(e));
    }
    try {
      const faults = await api("GET", "/_sandbox/faults");
      faultsBox.replaceChildren(el("h2", { text: "Faults" }), faults.data.length
        ? el("ul", {}, ...faults.data.map((f) => el("li", {}, `${f.id}: ${JSON.stringify(f.match)} → ${JSON.stringify(f.action)} `,
          el("button", { attrs: { type: "button" }, text: "Remove", on: { click: () => act(() => api("DELETE", `/_sandbox/faults/${f.id}`), "Fault removed.") } }))))
        : el("p", { class: "muted", text: "No fault rules." }));
    } catch (e) {
      faultsBox.replaceChildren(el("h2", { text: "Faults" }), problemBox(e));
    }
    try {
      const snaps = await api("GET", "/_sandbox/snapshots");
      const name = el("input", { attrs: { id: "snapshot-name", "aria-label": "Snapshot name", pattern: "[a-z0-9_-]{1,64}", value: "demo" } });
      snapBox.replaceChildren(el("h2", { text: "Snapshots" }),
        el("div", { class: "row" }, name,
          el("button", { attrs: { type: "button" }, text: "Save snapshot", on: { click: () => act(() => api("POST", "/_sandbox/snapshots", { name: name.value }), "Snapshot saved.") } })),
        el("ul", {}, ...snaps.data.map((s) => el("li", {}, `${s.name} (${when(s.taken_at || s.created_at)}) `,
          el("button", { attrs: { type: "button" }, text: "Restore", on: { click: () => act(() => api("POST", `/_sandbox/snapshots/${s.name}/restore`, {}), `Snapshot ${s.name} restored.`) } })))));
    } catch (e) {
      snapBox.replaceChildren(el("h2", { text: "Snapshots" }), problemBox(e));
    }
  };
  await render();
}

// ---- start ----------------------------------------------------------------------------------------

async function start() {
  $("signin-error").hidden = true;
  if (!(await signedIn())) {
    showSignIn();
    return;
  }
  $("signin").hidden = true;
  $("signout").hidden = false;
  $("who").textContent = `${me.name || me.username || me.key_id || "signed in"} · ${me.scopes.join(" ")}`;
  // The sandbox operator's key reads no account data: its home is the sandbox view.
  if (!location.hash && me.scopes.length === 1 && me.scopes[0] === "sandbox") {
    location.hash = "#/sandbox";
    return;
  }
  await route();
  if (!performance.getEntriesByName("signage:interactive").length) performance.mark("signage:interactive");
}

$("key-form").addEventListener("submit", onKeySignIn);
$("login-form").addEventListener("submit", onLogin);
$("signout").addEventListener("click", signOut);
window.addEventListener("hashchange", () => {
  if (credential()) route();
});
start();
