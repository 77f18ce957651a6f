// The demo console: a single page over the REST API, with hash routes so that every view has a
// stable URL. It sees exactly what the signed-in credential may see. The views live in their own
// modules (fleet, ads, promotions, dashboard, feed, sandbox); the furniture in ui.js and live.js.

import {
  all, api, blobUrl, credential, el, forgetCredential, hooks, logo, money, saveCredential, svg, when,
} from "./common.js";
import { readinessView, requestView } from "./readiness.js";
import { $, link, page, problemBox, scroller } from "./ui.js";
import { chartWidth } from "./charts.js";
import { clearTimers, fresh, hideSandboxTime, showSandboxTime } from "./live.js";
import { fleet } from "./fleet.js";
import { adsView } from "./adsview.js";
import { promotions } from "./promotions.js";
import { dashboard } from "./dashboard.js";
import { events } from "./feed.js";
import { sandbox } from "./sandbox.js";

const view = $("view");
let me = null;

const isOperator = () => Boolean(me && me.scopes.includes("sandbox"));

/** Whether the credential may read an area (`read`, `write`, `admin`, `<area>:read|write`): the
 * console offers only the views it may open. */
const mayRead = (area) => Boolean(me && me.scopes.some((s) => ["read", "write", "admin", `${area}:read`, `${area}:write`].includes(s)));

// ---- sign-in ------------------------------------------------------------------------------------

function showSignInError(e) {
  $("signin-error").replaceChildren(...problemBox(e).childNodes);
  $("signin-error").hidden = false;
}

async function signedIn() {
  const c = credential();
  if (!c) return false;
  try {
    me = await api("GET", "/me");
    return true;
  } catch (e) {
    if (e.status === 401) forgetCredential();
    showSignInError(e);
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
    showSignInError(e);
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
  document.body.dataset.auth = "out";
  clearTimers();
  hideSandboxTime();
  // Nobody is signed in: no company's colours or name in the header.
  applyBranding(null);
  $("notices").replaceChildren();
  $("signin").hidden = false;
  view.hidden = true;
  $("nav").hidden = true;
  $("menu-toggle").hidden = true;
  $("signout").hidden = true;
  $("who").textContent = "";
}

/** A 401 on any call (revoked or expired key, expired token): back to sign-in, saying why. */
hooks.unauthorized = (p) => {
  if (!me) return;
  forgetCredential();
  me = null;
  showSignIn();
  showSignInError(p);
  $("signin-error").prepend("You were signed out: ");
};

// ---- navigation -----------------------------------------------------------------------------------

function nav(companyId) {
  const items = mayRead("companies") ? [["#/companies", "Companies"]] : [];
  if (companyId) {
    for (const [sub, label, area] of [["", "Overview", "companies"], ["fleet", "Fleet", "devices"], ["ads", "Ads", "ads"],
      ["promotions", "Promotions", "promotions"], ["tokens", "Tokens", "tokens"], ["billing", "Billing", "billing"],
      ["media", "Media", "media"], ["webhooks", "Webhooks", "webhooks"]]) {
      if (mayRead(area)) items.push([`#/company/${companyId}${sub ? `/${sub}` : ""}`, label]);
    }
  }
  // The events feed is the webhooks area's (the events webhooks deliver).
  if (mayRead("webhooks")) items.push(["#/events", "Events"]);
  items.push(["#/readiness", "Readiness"]);
  // Only a credential that may use the sandbox's controls is offered them.
  if (isOperator()) items.push(["#/sandbox", "Sandbox"]);
  const here = location.hash || "#/companies";
  $("nav").replaceChildren(...items.map(([href, label]) =>
    el("a", { attrs: { href, "aria-current": here === href ? "page" : null }, text: label })),
  // On a phone the header's Sign out moves into the menu, so the header stays one row.
  el("button", { class: "nav-signout", attrs: { type: "button" }, text: "Sign out", on: { click: signOut } }));
  $("nav").hidden = false;
  $("menu-toggle").hidden = false;
  setMenu(false);
}

/** On a phone the views hide behind a Menu button (the header stays one row). */
function setMenu(open) {
  $("menu-toggle").setAttribute("aria-expanded", String(open));
  document.body.classList.toggle("menu-open", open);
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

/** Applies a company's brand colours and logo to the console while its pages are shown. */
async function applyBranding(companyId) {
  const root = document.documentElement.style;
  root.removeProperty("--primary");
  $("brand").textContent = "signage";
  $("brand-logo").replaceChildren();
  if (!companyId) return;
  try {
    const [company, branding] = await Promise.all([
      api("GET", `/companies/${companyId}`), api("GET", `/companies/${companyId}/branding`),
    ]);
    const colour = readableBrandColour(branding.colors);
    if (colour) root.setProperty("--primary", colour);
    $("brand").textContent = company.name;
    $("brand-logo").replaceChildren(logo(company.name, branding.colors, 30));
  } catch (_) {
    /* the page itself reports the problem */
  }
}

async function route() {
  clearTimers();
  // `data-ready` is set once the view's data is on screen (tests and screenshots wait for it).
  delete view.dataset.ready;
  $("notices").replaceChildren();
  const parts = (location.hash || "#/companies").slice(2).split("/");
  const companyId = parts[0] === "company" ? parts[1] : null;
  nav(companyId);
  await applyBranding(companyId);
  try {
    if (parts[0] === "companies" || parts[0] === "") await companies();
    else if (companyId && !parts[2]) await dashboard(companyId);
    else if (companyId && parts[2] === "fleet") await fleet(companyId);
    else if (companyId && parts[2] === "ads") await adsView(companyId);
    else if (companyId && parts[2] === "promotions") await promotions(companyId);
    else if (companyId && parts[2] === "tokens") await tokens(companyId);
    else if (companyId && parts[2] === "billing") await billing(companyId);
    else if (companyId && parts[2] === "media") await media(companyId);
    else if (companyId && parts[2] === "webhooks") await webhooks(companyId);
    else if (parts[0] === "events") await events();
    else if (parts[0] === "sandbox" && isOperator()) await sandbox();
    else if (parts[0] === "sandbox") page("Sandbox", el("p", { class: "problem", text: "The sandbox's controls need a credential with the sandbox scope (the sandbox operator's key)." }));
    else if (parts[0] === "readiness") await readinessView(page);
    else if (parts[0] === "requests" && parts[1]) await requestView(page, decodeURIComponent(parts[1]));
    else page("Not found", el("p", { text: "There is no such view." }));
  } catch (e) {
    if (e.status === 401) return; // back at sign-in, with the reason
    page(e.status === 403 ? "Not available to this credential" : "Something went wrong", problemBox(e));
  }
  view.dataset.ready = location.hash || "#/companies";
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
      el("div", { class: "company-head" }, logo(c.name, brand ? brand.colors : {}, 44),
        el("h2", {}, link(`#/company/${c.id}`, c.name))),
      el("p", { class: "muted", text: `${c.industry} · ${c.country} · ${c.timezone}` }),
      brand ? el("p", {}, ...Object.entries(brand.colors).map(([k, v]) => {
        const s = el("span", { class: "swatch", attrs: { title: `${k} ${v}`, role: "img", "aria-label": `${k} colour ${v}` } });
        if (HEX.test(v)) s.style.setProperty("background", v);
        return s;
      }), " ", brand.tagline) : null);
  }));
  page("Companies", el("p", { class: "muted", text: `${rows.length} companies visible to this credential.` }), ...cards);
  fresh();
}

/** The token balance over time, as a step line, drawn at the width it gets. */
function ledgerChart(txs) {
  const pts = txs.map((t) => [Date.parse(t.created_at), t.balance_after]).sort((a, b) => a[0] - b[0]);
  const W = chartWidth();
  const H = 220;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Token balance over time: ${pts.length} transactions${pts.length ? `, now ${pts[pts.length - 1][1]} tokens` : ""}` });
  const box = el("figure", { class: "chart-box", attrs: { "data-chart": "token-balance", "data-points": pts.length } },
    el("figcaption", { text: "Token balance" }), node);
  if (pts.length < 2) return box;
  const [x0, x1] = [pts[0][0], pts[pts.length - 1][0]];
  const ys = pts.map((p) => p[1]);
  const [y0, y1] = [Math.min(0, ...ys), Math.max(...ys, 1)];
  const L = 44;
  const X = (x) => L + ((x - x0) / Math.max(1, x1 - x0)) * (W - L - 10);
  const Y = (y) => H - 30 - ((y - y0) / Math.max(1, y1 - y0)) * (H - 50);
  let d = `M${X(pts[0][0]).toFixed(1)},${Y(pts[0][1]).toFixed(1)}`;
  for (let i = 1; i < pts.length; i++) d += ` H${X(pts[i][0]).toFixed(1)} V${Y(pts[i][1]).toFixed(1)}`;
  node.append(
    svg("line", { class: "axis", x1: L, y1: H - 30, x2: W - 4, y2: H - 30 }),
    svg("line", { class: "axis", x1: L, y1: 10, x2: L, y2: H - 30 }),
    svg("path", { class: "line", d }),
    svg("text", { x: L - 4, y: Y(y1) + 4, class: "tick end" }, String(y1)),
    svg("text", { x: L - 4, y: Y(y0) + 4, class: "tick end" }, String(y0)),
    svg("text", { x: L, y: H - 10, class: "tick" }, new Date(x0).toISOString().slice(0, 10)),
    svg("text", { x: W - 4, y: H - 10, class: "tick end" }, new Date(x1).toISOString().slice(0, 10)));
  return box;
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
  return { node: el("div", {}, scroller(table, "Table, scrolls sideways"), more), load };
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
  fresh();
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
  fresh();
}

async function media(companyId) {
  const rows = await all(`/media?company_id=${companyId}`);
  const figures = await Promise.all(rows.map(async (m) => {
    let visual = el("div", { class: "muted placeholder", text: m.content_type });
    try {
      if (m.content_type.startsWith("image/")) {
        visual = el("img", { attrs: { src: await blobUrl(`/media/${m.id}/content`), alt: m.filename } });
      } else if (m.content_type.startsWith("video/")) {
        // The video's first frame is its thumbnail; it plays on hover or focus.
        const v = el("video", { attrs: { src: await blobUrl(`/media/${m.id}/content`), muted: true, playsinline: true, preload: "auto", loop: true, tabindex: "0", "aria-label": `Video ${m.filename}` } });
        v.muted = true;
        for (const ev of ["mouseenter", "focus"]) v.addEventListener(ev, () => v.play().catch(() => {}));
        for (const ev of ["mouseleave", "blur"]) v.addEventListener(ev, () => v.pause());
        visual = el("div", { class: "video-thumb" }, v, el("span", { class: "play-mark", attrs: { "aria-hidden": "true" }, text: "▶" }));
      }
    } catch (_) {
      /* keep the placeholder */
    }
    const extra = m.duration_ms ? ` · ${(m.duration_ms / 1000).toFixed(0)} s` : "";
    return el("figure", { attrs: { "data-media-id": m.id, "data-kind": m.content_type.split("/")[0] } }, visual,
      el("figcaption", {}, m.filename, el("br"), `${m.content_type} · ${m.size_bytes.toLocaleString("en")} bytes${extra}`));
  }));
  page("Media", el("div", { class: "thumbs" }, ...figures));
  fresh();
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
  page("Webhooks", scroller(table, "Webhooks"), log);
  fresh();
}

async function deliveries(w, box) {
  try {
    const rows = await api("GET", `/webhooks/${w.id}/deliveries?limit=20`);
    box.replaceChildren(el("h2", { text: `Deliveries to ${w.url}` }),
      rows.data.length ? scroller(el("table", {}, el("tbody", {}, ...rows.data.map((d) => el("tr", {},
        el("td", { text: d.event_type || d.type || "" }), el("td", {}, el("span", { class: `badge ${d.status}`, text: d.status })),
        el("td", { text: `${(d.attempts || []).length} attempt(s)` }))))), "Deliveries") : el("p", { class: "muted", text: "No deliveries yet." }));
  } catch (e) {
    box.replaceChildren(problemBox(e));
  }
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
  document.body.dataset.auth = "in";
  $("who").textContent = `${me.name || me.username || me.key_id || "signed in"}`;
  $("who").title = me.scopes.join(" ");
  showSandboxTime(isOperator());
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
$("menu-toggle").addEventListener("click", () => setMenu($("menu-toggle").getAttribute("aria-expanded") !== "true"));
window.addEventListener("hashchange", () => {
  if (credential() && me) route();
});
start();
