// Shared by the console and the player: the credential kept in this tab's sessionStorage, REST
// calls that carry it (with idempotency keys and If-Match), sign-in links, problem+json errors,
// and DOM building that only ever inserts text.

const CREDENTIAL = "signage.credential";

export function credential() {
  try {
    const c = JSON.parse(sessionStorage.getItem(CREDENTIAL) || "null");
    if (c && (c.kind === "key" || c.kind === "bearer")) return c;
  } catch (_) {
    /* a damaged entry counts as none */
  }
  return null;
}

export function saveCredential(c) {
  sessionStorage.setItem(CREDENTIAL, JSON.stringify(c));
}

export function forgetCredential() {
  sessionStorage.removeItem(CREDENTIAL);
}

/** A REST error: the problem+json body, or a network failure. `retryAfter`: seconds, from a
 * 429's or 503's `Retry-After`. */
export class Problem extends Error {
  constructor(status, body, retryAfter = null) {
    const title = (body && body.title) || (status ? `HTTP ${status}` : "Network error");
    const detail = (body && body.detail) || "";
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.body = body || {};
    this.retryAfter = retryAfter;
  }
}

/** What the page does about answers every call may get: `waiting(seconds, problem)` while a 429
 * waits for its `Retry-After` (then the call is sent again), `waited()` when it went through,
 * `unauthorized(problem)` on a 401. */
export const hooks = { waiting: () => {}, waited: () => {}, unauthorized: () => {} };

/** The longest a call waits on a 429 before giving up and reporting it. */
const MAX_RATE_WAIT_S = 60;

/** The sandbox's clock minus this browser's (ms), from the answers' `Date` headers: a sandbox
 * clock moved ahead (or frozen) shows here. */
let skewMs = 0;
export function sandboxNow() {
  return new Date(Date.now() + skewMs);
}

function noteDate(resp) {
  const d = Date.parse(resp.headers.get("Date") || "");
  // Date has whole seconds: skews under two seconds are the network's, not the sandbox's.
  if (d) skewMs = Math.abs(d - Date.now()) < 2000 ? 0 : d - Date.now();
}

const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));

function authHeaders() {
  const c = credential();
  if (!c) return {};
  if (c.kind === "key") return { "X-API-Key": c.key, "X-Service-Client-Id": c.client };
  return { Authorization: `Bearer ${c.token}` };
}

/** Calls the REST API with the stored credential. Resolves to the parsed JSON body (a Blob when
 * `as` is "blob", the text when "text", `{body, etag}` when `etag` is set); rejects with a Problem.
 * Every POST carries an `Idempotency-Key` (one per call, so a retry after a 429 or a lost answer
 * is the same request); `ifMatch` sends `If-Match`; `raw` sends bytes as they are (an upload). */
export async function api(method, path, body, { as = "json", headers = {}, ifMatch = null, etag = false, raw = null } = {}) {
  const init = { method, headers: { ...authHeaders(), ...headers }, cache: "no-store" };
  if (method === "POST" && !init.headers["Idempotency-Key"]) init.headers["Idempotency-Key"] = randomKey();
  if (ifMatch) init.headers["If-Match"] = ifMatch;
  if (raw) {
    init.body = raw;
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  for (let attempt = 0; ; attempt += 1) {
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new Problem(0, { title: "Network error", detail: String(e && e.message ? e.message : e) });
    }
    noteDate(resp);
    if (resp.ok) break;
    let problem = null;
    try {
      problem = await resp.json();
    } catch (_) {
      problem = null;
    }
    const retryAfter = Number(resp.headers.get("Retry-After")) || null;
    const p = new Problem(resp.status, problem, retryAfter);
    if (resp.status === 429 && attempt < 3) {
      // Rate limited: wait as long as the server asks (said on the page), then send it again.
      const wait = Math.min(Math.max(retryAfter || 1, 1), MAX_RATE_WAIT_S);
      hooks.waiting(wait, p);
      await sleepMs(wait * 1000);
      hooks.waited();
      continue;
    }
    if (resp.status === 401) hooks.unauthorized(p);
    throw p;
  }
  if (resp.status === 204) return etag ? { body: null, etag: resp.headers.get("ETag") } : null;
  if (as === "blob") return resp.blob();
  if (as === "text") return resp.text();
  const parsed = await resp.json();
  return etag ? { body: parsed, etag: resp.headers.get("ETag") } : parsed;
}

/** A sign-in link (`…#signin=<token>`) opened in this tab: trades the token for a session, once,
 * and takes it out of the address bar and history first. Resolves to the session's path, `null`
 * when the URL carries no link; rejects with a Problem. */
export async function signInFromLink() {
  const m = /^#signin=([0-9a-fA-F]{16,200})$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, "", location.pathname + location.search);
  forgetCredential();
  const session = await api("POST", "/auth/sign-in", { token: m[1] });
  saveCredential({ kind: "bearer", token: session.access_token });
  return session.path;
}

/** Opens `path` (a console page or a screen's player) in a new tab, signed in as this tab's
 * credential by a one-use link: a new tab has no session storage of its own. */
export async function openSignedIn(path) {
  // Opened now (still inside the click), pointed at the link once it exists.
  const tab = window.open("about:blank", "_blank");
  try {
    const link = await api("POST", "/auth/sign-in-links", { path });
    const url = new URL(link.path, location.href).href;
    if (tab) tab.location.href = url;
    else location.href = url;
  } catch (e) {
    if (tab) tab.close();
    throw e;
  }
}

/** Text for people: a server message without the code markup (backticks) it carries for developers. */
export function words(text) {
  return String(text || "").replace(/`/g, "");
}

/** `5907` -> "5,907": every count the console shows is written the same way. */
export function num(n) {
  return Number(n || 0).toLocaleString("en");
}

/** "1 scan", "2 scans". */
export function plural(n, one, many = `${one}s`) {
  return `${num(n)} ${Number(n) === 1 ? one : many}`;
}

/** Bytes for people: "1.2 MB". */
export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GB`;
}

/** Every page of a cursor list, up to `max` rows. */
export async function all(path, max = 500) {
  const rows = [];
  let cursor = null;
  const sep = path.includes("?") ? "&" : "?";
  for (;;) {
    const page = await api("GET", `${path}${sep}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    rows.push(...page.data);
    if (!page.has_more || !page.next_cursor || rows.length >= max) return rows;
    cursor = page.next_cursor;
  }
}

/** Builds an element. Children that are strings become text nodes: nothing from the API is ever
 * parsed as HTML. `props`: class, text, attrs, on (event handlers), hidden. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined && props.text !== null) node.textContent = String(props.text);
  if (props.hidden) node.hidden = true;
  for (const [k, v] of Object.entries(props.attrs || {})) {
    if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const [k, v] of Object.entries(props.on || {})) node.addEventListener(k, v);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Object URLs for authenticated images: fetched with the credential, cached per path. */
const blobs = new Map();
export async function blobUrl(path) {
  if (!blobs.has(path)) {
    blobs.set(
      path,
      api("GET", path, undefined, { as: "blob" }).then((b) => URL.createObjectURL(b)),
    );
  }
  try {
    return await blobs.get(path);
  } catch (e) {
    blobs.delete(path);
    throw e;
  }
}

/** An object URL for SVG text (QR codes): shown through <img>, where an SVG runs no script. */
export function svgUrl(svgText) {
  return URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
}

export function randomKey() {
  const a = new Uint8Array(16);
  crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function ago(seconds) {
  if (seconds === null || seconds === undefined) return "never";
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}

let zone = "UTC";

/** Times are shown in the time zone of the company in view (its `timezone`), UTC outside one. */
export function setZone(tz) {
  try {
    zone = tz ? new Intl.DateTimeFormat("en-GB", { timeZone: tz }).resolvedOptions().timeZone : "UTC";
  } catch (_) {
    zone = "UTC"; // a zone this browser does not know
  }
}

/** The IANA name of the zone times are shown in ("Europe/Amsterdam"). */
export function timeZone() {
  return zone;
}

/** An instant's parts in the zone times are shown in: {year, month, day, hour, minute, zone ("CET")}. */
export function zoned(date, tz = zone) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat("en-GB", {
    timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    hourCycle: "h23", timeZoneName: "short",
  }).formatToParts(date).map((p) => [p.type, p.value]));
  return { ...parts, zone: tz === "UTC" ? "UTC" : parts.timeZoneName };
}

/** A company's stores as the server says they are (its `store`, read at the sandbox clock's now by
 * its opening hours, the one rule its screens play by), in words: `{ open, opens }`, `opens` when a
 * closed store next opens, "07:00" within 24 hours of `now` or "Monday 08:30" later, in the
 * company's `timezone` (null: not within a week). A company without a `store` (not read) counts
 * as open. */
export function storeOf(company, now = sandboxNow()) {
  const store = company && company.store;
  if (!store) return { open: true, opens: null };
  if (store.open || !store.opens_at) return { open: Boolean(store.open), opens: null };
  const at = new Date(store.opens_at);
  let parts;
  try {
    parts = new Intl.DateTimeFormat("en-GB", {
      timeZone: company.timezone || "UTC", weekday: "long", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    }).formatToParts(at);
  } catch (_) {
    parts = new Intl.DateTimeFormat("en-GB", {
      timeZone: "UTC", weekday: "long", hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    }).formatToParts(at); // a zone this browser does not know
  }
  const p = Object.fromEntries(parts.map((x) => [x.type, x.value]));
  const time = `${p.hour}:${p.minute}`;
  return { open: false, opens: at.getTime() - now.getTime() <= 86400000 ? time : `${p.weekday} ${time}` };
}

/** An RFC 3339 instant as "2026-12-07 10:28 CET", in the company's time zone (to the minute). */
export function when(rfc3339) {
  if (!rfc3339) return "—";
  const d = new Date(rfc3339);
  if (Number.isNaN(d.getTime())) return rfc3339;
  const p = zoned(d);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute} ${p.zone}`;
}

/** How far the zone `tz` is ahead of UTC at instant `t` (ms since the epoch), in ms. */
function offsetAt(t, tz) {
  const p = zoned(new Date(t), tz);
  return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute) - Math.floor(t / 60000) * 60000;
}

/** `Date` -> the value of a date and time input (forms.js `dateTimeInput`), in the company's time
 * zone, as the console writes times ("2026-11-28 10:00"). */
export function inputValueOf(date) {
  const p = zoned(date);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** A date and time input's value ("2026-11-28 10:00", or with a `T`), read in the company's time
 * zone -> RFC 3339 in UTC ("2026-11-28T09:00:00Z"), or null. */
export function rfc3339Of(value) {
  value = (value || "").trim();
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})$/.exec(value);
  if (!m) return value ? `${value}:00Z` : null; // not a wall time: the API names what is wrong
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]);
  // The offset at the wall time read as UTC, then at the instant that gives (right across a change).
  const t = wall - offsetAt(wall - offsetAt(wall, zone), zone);
  return new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** An offer's day as its landing page on the phone says it ("20 December 2026"): offers run by UTC
 * calendar days (src/routes/landing.rs `long_date`), so the console and the phone name the same
 * days. `last`: the day of the offer's last second (its `ends_at` is exclusive). */
export function offerDay(rfc3339, last = false) {
  return utcDay(new Date(Date.parse(rfc3339) - (last ? 1000 : 0)));
}

/** The UTC calendar day of an instant, as "15 January 2027": the days offers run and invoices bill
 * by (the billing rule's months are UTC months). */
export function utcDay(date) {
  return new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", day: "numeric", month: "long", year: "numeric" }).format(date);
}

export function money(cents, currency = "EUR") {
  return `${(cents / 100).toFixed(2)} ${currency}`;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes (text as a text node, never parsed). */
export function svg(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = String(text);
  return n;
}

const HEX = /^#[0-9a-fA-F]{6}$/;

/** A company's logo mark, drawn here from its name and brand colours (the branding's logo files
 * live on the company's CDN, which this page's policy does not load from). */
export function logo(name, colors = {}, size = 40) {
  const words = String(name || "?").split(/\s+/).filter(Boolean);
  const initials = (words.length > 1 ? words[0][0] + words[1][0] : String(name || "?").slice(0, 2)).toUpperCase();
  const bg = HEX.test(colors.primary || "") ? colors.primary : "#1f4fd1";
  const accent = HEX.test(colors.accent || "") ? colors.accent : "#f5a623";
  const mark = svg("svg", { viewBox: "0 0 40 40", width: size, height: size, class: "logo-mark", role: "img", "aria-label": `${name} logo` });
  mark.append(
    svg("rect", { x: 1, y: 1, width: 38, height: 38, rx: 9, fill: bg, stroke: "#fff", "stroke-width": 2 }),
    svg("rect", { x: 8, y: 30, width: 24, height: 3, rx: 1.5, fill: accent }),
    svg("text", { x: 20, y: 25, "text-anchor": "middle", "font-size": 16, "font-weight": 700, fill: "#fff", "font-family": "system-ui, sans-serif" }, initials),
  );
  return mark;
}

/** True when a URL points at this machine only: a phone cannot follow it. */
export function isLoopback(url) {
  try {
    const h = new URL(url).hostname;
    return h === "localhost" || h === "[::1]" || h === "::1" || /^127\./.test(h) || h === "0.0.0.0";
  } catch (_) {
    return false;
  }
}
