// Shared by the console and the player: the credential kept in this tab's sessionStorage, REST
// calls that carry it, problem+json errors, and DOM building that only ever inserts text.

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

/** A REST error: the problem+json body, or a network failure. */
export class Problem extends Error {
  constructor(status, body) {
    const title = (body && body.title) || (status ? `HTTP ${status}` : "Network error");
    const detail = (body && body.detail) || "";
    super(detail ? `${title}: ${detail}` : title);
    this.status = status;
    this.body = body || {};
  }
}

function authHeaders() {
  const c = credential();
  if (!c) return {};
  if (c.kind === "key") return { "X-API-Key": c.key, "X-Service-Client-Id": c.client };
  return { Authorization: `Bearer ${c.token}` };
}

/** Calls the REST API with the stored credential. Resolves to the parsed JSON body (or a Blob
 * when `as` is "blob"); rejects with a Problem. */
export async function api(method, path, body, { as = "json", headers = {} } = {}) {
  const init = { method, headers: { ...authHeaders(), ...headers }, cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new Problem(0, { title: "Network error", detail: String(e && e.message ? e.message : e) });
  }
  if (!resp.ok) {
    let problem = null;
    try {
      problem = await resp.json();
    } catch (_) {
      problem = null;
    }
    throw new Problem(resp.status, problem);
  }
  if (resp.status === 204) return null;
  if (as === "blob") return resp.blob();
  return resp.json();
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
