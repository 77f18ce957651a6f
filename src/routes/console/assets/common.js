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

export function when(rfc3339) {
  if (!rfc3339) return "—";
  return rfc3339.replace("T", " ").replace(":00Z", " UTC").replace("Z", " UTC");
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
