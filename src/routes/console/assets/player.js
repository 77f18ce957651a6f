// A browser tab that behaves as one screen: it plays the device's assigned active ads in rotation
// inside the company's branding, sends a heartbeat whenever the ad changes (and every 30 s), and
// reports proof-of-play through the REST API, with the credential of this tab, as a careful client
// does: every play is posted with its own `Idempotency-Key` (a retry reuses it), and the playlist,
// media and QR codes are read again at most every PLAYLIST_MS, not at every ad (no polling).
// `?slot=N` shows each ad N seconds (at least 1) instead of its own duration, for demos and tests.

import { api, blobUrl, credential, el, hooks, logo, saveCredential, svgUrl } from "./common.js";

const stage = document.getElementById("stage");
const form = document.getElementById("key-form");
const deviceId = decodeURIComponent(location.pathname.split("/").pop() || "");
const slotParam = Number(new URLSearchParams(location.search).get("slot"));
const HEARTBEAT_MS = 30000;
/** The playlist (and what its ads show) is read again after this long, at the next ad. */
const PLAYLIST_MS = 10000;
let playlist = null;
let playlistAt = 0;
/** What an ad shows (its media and QR code), read once per playlist. */
let shown = new Map();
let playing = null;
/** The sandbox clock minus this browser's (ms): a sandbox clock may be ahead or frozen. */
let clockOffset = 0;
let heartbeatTimer = null;

function message(text) {
  stage.replaceChildren(el("p", { class: "message", attrs: { role: "status" }, text }));
}

function refused(e) {
  if (e.status === 401) return "This screen's credential was refused (401). Sign in again.";
  if (e.status === 403) return `The credential may not act for this screen (403): ${e.message}`;
  if (e.status === 404) return `There is no screen ${deviceId}, or this credential may not see it (404).`;
  return `The sandbox could not be reached: ${e.message}`;
}

function count(name) {
  document.body.dataset[name] = String(Number(document.body.dataset[name] || 0) + 1);
}

async function heartbeat() {
  const body = { app_version: "browser-player-1.0" };
  if (playing) body.current_ad_id = playing;
  const diag = await api("POST", `/devices/${deviceId}/heartbeat`, body);
  const serverNow = diag && Date.parse(diag.last_seen || "");
  if (serverNow) clockOffset = serverNow - Date.now();
  count("heartbeats");
}

/** The company's branding frames the screen: its colours, logo mark, name and tagline. */
async function frame() {
  try {
    const device = await api("GET", `/devices/${deviceId}`);
    const [company, branding] = await Promise.all([
      api("GET", `/companies/${device.company_id}`), api("GET", `/companies/${device.company_id}/branding`),
    ]);
    const c = branding.colors || {};
    const root = document.documentElement.style;
    if (/^#[0-9a-fA-F]{6}$/.test(c.primary || "")) root.setProperty("--brand", c.primary);
    if (/^#[0-9a-fA-F]{6}$/.test(c.accent || "")) root.setProperty("--accent", c.accent);
    document.getElementById("frame-logo").replaceChildren(logo(company.name, c));
    document.getElementById("frame-name").textContent = company.name;
    document.getElementById("frame-tagline").textContent = branding.tagline || "";
    document.getElementById("frame").hidden = false;
    document.body.classList.add("framed");
    document.title = `${device.name} · ${company.name}`;
  } catch (_) {
    /* no branding for this credential: the ads alone */
  }
}

async function activeAds() {
  if (playlist && Date.now() - playlistAt < PLAYLIST_MS) return playlist;
  const ads = await api("GET", `/devices/${deviceId}/ads`);
  playlist = ads.data.filter((a) => a.status === "active");
  playlistAt = Date.now();
  shown = new Map();
  return playlist;
}

/** `read()` once per playlist for this key; a failure is not kept. */
async function once(key, read) {
  if (!shown.has(key)) shown.set(key, read().catch((e) => { shown.delete(key); throw e; }));
  return shown.get(key);
}

/** A video that plays by itself: muted and inline, which every browser's autoplay policy allows. */
function video(src, label) {
  const v = el("video", { class: "media", attrs: { src, muted: true, autoplay: true, loop: true, playsinline: true, "aria-label": label } });
  v.muted = true;
  v.defaultMuted = true;
  v.playsInline = true;
  v.play().catch(() => {
    /* the browser refused; the first frame stays */
  });
  return v;
}

async function show(ad) {
  const nodes = [];
  let kind = "text";
  let poster = false;
  let mediaType = "";
  if (ad.media_id) {
    try {
      const { meta, src } = await once(`media:${ad.media_id}`, async () => ({
        meta: await api("GET", `/media/${ad.media_id}`),
        src: await blobUrl(`/media/${ad.media_id}/content`),
      }));
      kind = meta.content_type.startsWith("video/") ? "video" : "image";
      poster = meta.content_type.startsWith("image/svg");
      mediaType = meta.content_type;
      // A poster carries its own words (the headline is its alt text); a photo gets the headline over it.
      nodes.push(kind === "video" ? video(src, ad.headline)
        : el("img", { class: poster ? "media poster" : "media", attrs: { src, alt: poster ? ad.headline : "" } }));
    } catch (_) {
      /* the headline alone */
    }
  }
  if (!poster) nodes.push(el("p", { class: "headline", text: ad.headline }));
  if (ad.promotion_id) {
    try {
      const codes = await once(`qr:${ad.promotion_id}`, () => api("GET", `/promotions/${ad.promotion_id}/qr-codes`));
      const code = codes.data[0];
      if (code) {
        nodes.push(el("figure", { class: "qr", attrs: { "data-short-url": code.short_url || code.target_url } },
          el("img", { attrs: { src: svgUrl(code.image_svg), alt: `QR code: ${code.short_url || code.target_url}` } }),
          el("figcaption", { text: "Scan for the offer" })));
      }
    } catch (_) {
      /* no QR code for this credential */
    }
  }
  stage.replaceChildren(...nodes);
  stage.dataset.adId = ad.id;
  stage.dataset.kind = kind;
  stage.dataset.media = mediaType;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A fresh idempotency key for one play (randomUUID needs a secure context; 127.0.0.1 is one). */
function playKey() {
  if (crypto.randomUUID) return `play-${crypto.randomUUID()}`;
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `play-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function play() {
  let index = 0;
  for (;;) {
    let ads;
    try {
      ads = await activeAds();
    } catch (e) {
      if (e.status === 401) return;
      message(refused(e));
      await sleep(5000);
      continue;
    }
    if (!ads.length) {
      playing = null;
      message("Nothing to play: no active ad is assigned to this screen.");
      await sleep(5000);
      continue;
    }
    const ad = ads[index % ads.length];
    index += 1;
    const changed = playing !== ad.id;
    playing = ad.id;
    const started = new Date(Date.now() + clockOffset);
    await show(ad);
    if (changed) {
      // The platform knows what the screen shows the moment it changes.
      heartbeat().catch((e) => { document.body.dataset.lastError = e.message; });
      count("adChanges");
    }
    const seconds = slotParam >= 1 ? Math.floor(slotParam) : ad.duration_seconds;
    await sleep(seconds * 1000);
    try {
      // One key per play: a retry of this post (after a 429) sends the very same one.
      await api("POST", `/devices/${deviceId}/playbacks`, {
        ad_id: ad.id,
        started_at: started.toISOString().replace(/\.\d{3}Z$/, "Z"),
        duration_seconds: seconds,
      }, { headers: { "Idempotency-Key": playKey() } });
      count("playbacks");
    } catch (e) {
      document.body.dataset.lastError = e.message;
      if (e.status === 401) return;
    }
  }
}

function askForCredential(reason) {
  message("No credential.");
  const why = document.getElementById("key-reason");
  why.textContent = reason || "";
  why.hidden = !reason;
  form.hidden = false;
  document.getElementById("key-input").focus();
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  saveCredential({ kind: "key", key: document.getElementById("key-input").value.trim(), client: document.getElementById("client-input").value.trim() });
  document.getElementById("key-input").value = "";
  start();
});

hooks.unauthorized = (p) => {
  clearInterval(heartbeatTimer);
  askForCredential(`The credential was refused (401): ${p.message}`);
};
hooks.waiting = (s) => { document.body.dataset.rateLimitedFor = String(s); };

async function start() {
  if (!credential()) {
    askForCredential(null);
    return;
  }
  form.hidden = true;
  try {
    await heartbeat();
  } catch (e) {
    if (e.status !== 401) message(refused(e));
    return;
  }
  await frame();
  clearInterval(heartbeatTimer);
  heartbeatTimer = setInterval(() => heartbeat().catch((e) => message(refused(e))), HEARTBEAT_MS);
  play();
}

start();
