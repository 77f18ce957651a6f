// The demo console: a single page over the REST API, with hash routes so that every view has a
// stable URL. It sees exactly what the signed-in credential may see. The views live in their own
// modules (fleet, ads, promotions, reports, dashboard, media, billing, webhooks, feed, sandbox); the
// furniture in ui.js and live.js. A sign-in link (`/console#signin=…`, from `signage demo` or from
// another tab of the console) signs the tab in once, with no key to paste.

import {
  all, api, credential, el, forgetCredential, hooks, logo, saveCredential, setZone, signInFromLink,
} from "./common.js";
import { readinessView, requestView } from "./readiness.js";
import { $, link, page, problemBox } from "./ui.js";
import { clearTimers, fresh, hideSandboxTime, lost, retry, showSandboxTime, transient } from "./live.js";
import { fleet } from "./fleet.js";
import { adsView } from "./adsview.js";
import { promotions } from "./promotions.js";
import { dashboard } from "./dashboard.js";
import { reports } from "./reports.js";
import { media } from "./media.js";
import { billing, invoice, tokens } from "./billing.js";
import { webhooks } from "./webhooks.js";
import { events } from "./feed.js";
import { sandbox } from "./sandbox.js";

const view = $("view");
let me = null;

const isOperator = () => Boolean(me && me.scopes.includes("sandbox"));

/** Whether the credential may read an area (`read`, `write`, `admin`, `<area>:read|write`): the
 * console offers only the views it may open. */
const mayRead = (area) => Boolean(me && me.scopes.some((s) => ["read", "write", "admin", `${area}:read`, `${area}:write`].includes(s)));

/** The company the console last showed: the views that belong to no company (events, readiness,
 * sandbox) keep its menu and colours. */
const COMPANY = "signage.company";

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
  sessionStorage.removeItem(COMPANY);
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
      ["promotions", "Promotions", "promotions"], ["reports", "Reports", "devices"], ["tokens", "Tokens", "tokens"],
      ["billing", "Billing", "billing"], ["media", "Media", "media"], ["webhooks", "Webhooks", "webhooks"]]) {
      if (mayRead(area)) items.push([`#/company/${companyId}${sub ? `/${sub}` : ""}`, label]);
    }
  }
  // The events feed is the webhooks area's (the events webhooks deliver).
  if (mayRead("webhooks")) items.push(["#/events", "Events"]);
  items.push(["#/readiness", "Readiness"]);
  // Only a credential that may use the sandbox's controls is offered them.
  if (isOperator()) items.push(["#/sandbox", "Sandbox"]);
  const here = (location.hash || "#/companies").split("?")[0];
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
  setZone(null);
  if (!companyId) return;
  try {
    const [company, branding] = await Promise.all([
      api("GET", `/companies/${companyId}`), api("GET", `/companies/${companyId}/branding`),
    ]);
    const colour = readableBrandColour(branding.colors);
    if (colour) root.setProperty("--primary", colour);
    $("brand").textContent = company.name;
    setZone(company.timezone);
    $("brand-logo").replaceChildren(logo(company.name, branding.colors, 30));
  } catch (_) {
    /* the page itself reports the problem */
  }
}

/** The view named by the route's parts, loaded. */
async function show(parts, companyId) {
  if (parts[0] === "companies" || parts[0] === "") await companies();
  else if (companyId && !parts[2]) await dashboard(companyId);
  else if (companyId && parts[2] === "fleet") await fleet(companyId);
  else if (companyId && parts[2] === "ads") await adsView(companyId);
  else if (companyId && parts[2] === "promotions") await promotions(companyId);
  else if (companyId && parts[2] === "reports") await reports(companyId);
  else if (companyId && parts[2] === "tokens") await tokens(companyId);
  else if (companyId && parts[2] === "billing" && parts[3]) await invoice(companyId, decodeURIComponent(parts[3]));
  else if (companyId && parts[2] === "billing") await billing(companyId);
  else if (companyId && parts[2] === "media") await media(companyId);
  else if (companyId && parts[2] === "webhooks") await webhooks(companyId);
  else if (parts[0] === "events") await events();
  else if (parts[0] === "sandbox" && isOperator()) await sandbox();
  else if (parts[0] === "sandbox") page("Sandbox", el("p", { class: "problem", text: "The sandbox's controls need a credential with the sandbox scope (the sandbox operator's key, or a sign-in link from signage demo)." }));
  else if (parts[0] === "readiness") await readinessView(page);
  else if (parts[0] === "requests" && parts[1]) await requestView(page, decodeURIComponent(parts[1]));
  else page("Not found", el("p", { text: "There is no such view." }));
}

const TITLES = { fleet: "Fleet", ads: "Ads", promotions: "Promotions", reports: "Proof-of-play report", tokens: "Tokens",
  billing: "Billing", media: "Media", webhooks: "Webhooks", events: "Events", sandbox: "Sandbox", readiness: "Readiness" };

async function route() {
  clearTimers();
  // `data-ready` is set once the view's data is on screen (tests and screenshots wait for it).
  delete view.dataset.ready;
  $("notices").replaceChildren();
  const parts = (location.hash || "#/companies").split("?")[0].slice(2).split("/");
  let companyId = parts[0] === "company" ? parts[1] : null;
  if (companyId) sessionStorage.setItem(COMPANY, companyId);
  else if (parts[0] !== "companies" && parts[0] !== "") companyId = sessionStorage.getItem(COMPANY);
  const own = parts[0] === "company" ? companyId : null;
  nav(companyId);
  await applyBranding(companyId);
  try {
    await show(parts, own);
  } catch (e) {
    if (e.status === 401) return; // back at sign-in, with the reason
    if (transient(e)) {
      // Nothing could load (an outage): say so, and load the view as soon as the sandbox answers.
      const title = TITLES[parts[2] || parts[0]] || "Overview";
      page(title, el("p", { class: "muted", attrs: { "data-waiting": "" }, text: "Waiting for the sandbox to answer; this view loads as soon as it does." }));
      lost(e);
      retry(5000, async () => {
        await show(parts, own);
        view.dataset.ready = location.hash || "#/companies";
        fresh();
      });
    } else {
      page(e.status === 403 ? "Not available to this credential" : "This view could not load", problemBox(e));
    }
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

// ---- start ----------------------------------------------------------------------------------------

async function start() {
  $("signin-error").hidden = true;
  try {
    // A sign-in link: its session replaces whatever this tab held (the link leaves the address bar).
    await signInFromLink();
  } catch (e) {
    showSignIn();
    showSignInError(e);
    $("signin-error").prepend("This sign-in link did not work: ");
    return;
  }
  if (!(await signedIn())) {
    showSignIn();
    return;
  }
  $("signin").hidden = true;
  $("signout").hidden = false;
  document.body.dataset.auth = "in";
  $("who").textContent = `${me.name || me.username || me.key_id || "signed in"}${isOperator() && me.scopes.length > 1 ? " · operator" : ""}`;
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
  if (location.hash.startsWith("#signin=")) start();
  else if (credential() && me) route();
});
start();
