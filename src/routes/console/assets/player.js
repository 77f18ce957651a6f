// A browser tab that behaves as one screen: it plays the device's assigned ads that are on air in
// rotation inside the company's branding, crossfading from one to the next, sends a heartbeat
// whenever the ad changes (and every 30 s), and reports proof-of-play through the REST API, with
// the credential of this tab (or the session of a sign-in link, `#signin=…`, opened once), as a
// careful client does: every play is posted with its own `Idempotency-Key` (a retry reuses it), and
// the playlist, media and QR codes are read again at most every PLAYLIST_MS, not at every ad (no
// polling of lists). What tells it at once that an ad was assigned or taken off is the screen's own
// version (its `ETag`, which every assignment moves), read every WATCH_MS: a change reads the
// playlist again and shows a newly assigned ad at once, cutting the ad on screen short.
// Outside its store's opening hours the screen plays nothing: the company's `store` (whether the
// store is open at the sandbox clock's now, and when that next changes, as the server decides it)
// is read again at that instant, after a clock jump and every PLAYLIST_MS, and the screen shows
// "closed · opens 07:00" until the store opens, then plays on without a reload.
// `?slot=N` shows each ad N seconds (at least 1) instead of its own duration, for demos and tests.

import { api, blobUrl, credential, el, hooks, logo, sandboxNow, saveCredential, signInFromLink, storeOf, svgUrl } from "./common.js";

const stage = document.getElementById("stage");
const form = document.getElementById("key-form");
const deviceId = decodeURIComponent(location.pathname.split("/").pop() || "");
const slotParam = Number(new URLSearchParams(location.search).get("slot"));
const HEARTBEAT_MS = 30000;
/** How long one ad fades into the next (player.css has the same). */
const FADE_MS = 800;
/** A picture smaller than this (either side) is an icon or a badge: shown whole, not stretched. */
const SMALL_PX = 400;
/** A creative within this share of the screen's own shape (width over height) was designed for
 * it: it fills the screen. More than rounding (1920×1080 against a 1920×1079 window), less than
 * the gap between 16:9 and 16:10. */
const SAME_SHAPE = 0.02;
/** The playlist (and what its ads show) is read again after this long, at the next ad. */
const PLAYLIST_MS = 10000;
/** How often the screen's version is read: a newly assigned ad is on screen within about this. */
const WATCH_MS = 1000;
let playlist = null;
let playlistAt = 0;
/** What an ad shows (its media and QR code), read once per playlist. */
let shown = new Map();
let playing = null;
let heartbeatTimer = null;
/** The screen's company as last read (its `store` says whether the store is open), when that
 * was (this browser's ms) and the sandbox's time then; null until read (the screen then plays). */
let company = null;
let companyAt = 0;
let companySandboxAt = 0;

function message(text) {
  stage.replaceChildren(el("p", { class: "message", attrs: { role: "status" }, text }));
}

/** The screen while its store is closed: calm, in the brand's frame, saying when it opens. */
function closed() {
  const { opens } = storeOf(company);
  const text = `closed${opens ? ` · opens ${opens}` : ""}`;
  delete document.body.dataset.fit;
  delete document.body.dataset.ownWords;
  delete stage.dataset.adId;
  const shown = stage.querySelector(".closed");
  if (shown && shown.dataset.text === text) return;
  stage.replaceChildren(el("div", { class: "closed", attrs: { role: "status", "data-store": "closed", "data-text": text } },
    el("p", { class: "closed-word", text: "Closed" }),
    opens ? el("p", { class: "closed-opens", text: `opens ${opens}` }) : null));
  document.body.dataset.store = "closed";
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
  await api("POST", `/devices/${deviceId}/heartbeat`, body);
  count("heartbeats");
}

const HEX = /^#[0-9a-fA-F]{6}$/;

/** White or near-black, whichever reads better on `hex` (WCAG AA for the frame's text). */
function inkOn(hex) {
  const lin = (i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const l = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return 1.05 / (l + 0.05) >= (l + 0.05) / 0.05 ? "#ffffff" : "#000000";
}

/** The company's branding frames the screen: its colours, logo mark, name and tagline. */
async function frame() {
  try {
    const device = await api("GET", `/devices/${deviceId}`);
    const [read, branding] = await Promise.all([
      api("GET", `/companies/${device.company_id}`), api("GET", `/companies/${device.company_id}/branding`),
    ]);
    noteCompany(read);
    const c = branding.colors || {};
    const root = document.documentElement.style;
    if (HEX.test(c.primary || "")) {
      root.setProperty("--brand", c.primary);
      root.setProperty("--brand-text", inkOn(c.primary));
    }
    if (HEX.test(c.accent || "")) root.setProperty("--accent", c.accent);
    document.getElementById("frame-logo").replaceChildren(logo(read.name, c));
    document.getElementById("frame-name").textContent = read.name;
    document.getElementById("frame-tagline").textContent = branding.tagline || "";
    document.getElementById("frame").hidden = false;
    document.body.classList.add("framed");
    document.title = `${device.name} · ${read.name}`;
    document.body.dataset.orientation = device.orientation;
  } catch (_) {
    /* no branding for this credential: the ads alone */
  }
}

function noteCompany(read) {
  company = read;
  companyAt = Date.now();
  companySandboxAt = sandboxNow().getTime();
}

/** Whether the store is open, as the server last said (a store not read counts as open). */
function storeOpen() {
  return !company || !company.store || company.store.open;
}

/** Whether the company's `store` is to be read again: the instant it said the store opens or
 * closes has come (on the sandbox's clock, which a jump moves), the clock went back before the
 * last read, or it was read PLAYLIST_MS ago (an admin may have changed the hours). */
function storeStale() {
  if (!company) return false;
  const now = sandboxNow().getTime();
  const s = company.store || {};
  const next = Date.parse((s.open ? s.closes_at : s.opens_at) || "");
  return (next && now >= next) || now < companySandboxAt - 2000 || Date.now() - companyAt >= PLAYLIST_MS;
}

/** Reads the company again; when its store opened or closed, the ad on screen gives way at once. */
async function readStore() {
  const was = storeOpen();
  noteCompany(await api("GET", `/companies/${company.id}`));
  if (storeOpen() !== was) {
    playlist = null;
    wake();
  }
}

/** Whether the playlist changed since it was last read, and the wait it cuts short, if one runs. */
let changed = false;
let cutShort = null;

/** The playlist changed: the wait of the ad on screen (`rest`) ends now, or the next one at once. */
function wake() {
  changed = true;
  if (cutShort) cutShort();
}

/** Waits `ms`, or less if the playlist changes meanwhile (or changed unread); true when cut short. */
function rest(ms) {
  if (changed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      cutShort = null;
      resolve(false);
    }, ms);
    cutShort = () => {
      clearTimeout(timer);
      cutShort = null;
      resolve(true);
    };
  });
}

/** Reads the screen every WATCH_MS: when an assignment moved its version, the playlist is read
 * again and the ad on screen gives way at once; when the store's opening or closing instant has
 * come (or the clock jumped), the store is read again; when it reads offline while this player
 * plays or waits for its store to open (the presenter moved the clock past its last heartbeat), it
 * heartbeats at once rather than at the next beat, 30 s on. */
async function watch() {
  let version = null;
  let revivedAt = 0;
  for (;;) {
    await sleep(WATCH_MS);
    try {
      const { body, etag } = await api("GET", `/devices/${deviceId}`, undefined, { etag: true });
      if (version !== null && etag !== version) {
        playlist = null;
        wake();
      }
      version = etag;
      if (storeStale()) await readStore();
      if (body.status !== "online" && (playing || !storeOpen()) && Date.now() - revivedAt > 5000) {
        revivedAt = Date.now();
        heartbeat().catch((e) => { document.body.dataset.lastError = e.message; });
      }
    } catch (e) {
      if (e.status === 401) return;
    }
  }
}

async function onAir() {
  if (playlist && Date.now() - playlistAt < PLAYLIST_MS) return playlist;
  changed = false;
  const ads = await api("GET", `/devices/${deviceId}/ads`);
  playlist = ads.data.filter((a) => a.on_air);
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

/** Whether a creative of `meta`'s size has this screen's shape: it was designed to fill it. */
function fillsScreen(meta) {
  if (!meta.width || !meta.height || !window.innerHeight) return false;
  const screen = window.innerWidth / window.innerHeight;
  return Math.abs(meta.width / meta.height / screen - 1) <= SAME_SHAPE;
}

/** One ad as a slide, and how the screen frames it (`fit`):
 * - "full": a creative of the screen's shape plays as designed, edge to edge: no branded frame, no
 *   headline over it (the headline is its alternative text); only the promotion's QR code, in a
 *   corner, when the ad has one.
 * - "framed": a creative of another shape is shown whole, the branded frame fitted around it (the
 *   brand's colour where it leaves room); a poster carries its own words (the tagline among them),
 *   so the frame drops its tagline rather than say it twice; the QR code stands beside a poster.
 * - "branded": a text-only ad, or an icon: the branded slide with the headline. */
async function slide(ad) {
  const nodes = [];
  let kind = "text";
  let poster = false;
  let small = false;
  let full = false;
  let mediaType = "";
  if (ad.media_id) {
    try {
      const { meta, src } = await once(`media:${ad.media_id}`, async () => ({
        meta: await api("GET", `/media/${ad.media_id}`),
        src: await blobUrl(`/media/${ad.media_id}/content`),
      }));
      kind = meta.content_type.startsWith("video/") ? "video" : "image";
      poster = meta.content_type.startsWith("image/svg");
      small = kind === "image" && !poster && meta.width && meta.height && (meta.width < SMALL_PX || meta.height < SMALL_PX);
      full = !small && fillsScreen(meta);
      if (full) poster = false;
      mediaType = meta.content_type;
      const cls = `media${poster ? " poster" : ""}${small ? " small" : ""}`;
      // A poster or a full-screen creative carries its own words (the headline is its alternative
      // text); a photo of another shape gets the headline over it.
      const own = poster || full;
      nodes.push(kind === "video" ? video(src, ad.headline)
        : el("img", { class: cls, attrs: { src, alt: own ? ad.headline : "" } }));
    } catch (_) {
      /* the headline alone */
    }
  }
  if (!poster && !full) nodes.push(el("p", { class: "headline", text: ad.headline }));
  let qr = null;
  if (ad.promotion_id) {
    try {
      const codes = await once(`qr:${ad.promotion_id}`, () => api("GET", `/promotions/${ad.promotion_id}/qr-codes`));
      const code = codes.data[0];
      if (code) {
        qr = el("figure", { class: "qr", attrs: { "data-short-url": code.short_url } },
          el("img", { attrs: { src: svgUrl(code.image_svg), alt: `QR code: ${code.short_url}` } }),
          el("figcaption", { text: "Scan for the offer" }));
      }
    } catch (_) {
      /* no QR code for this credential */
    }
  }
  const fit = full ? "full" : kind !== "text" && !small ? "framed" : "branded";
  const classes = ["slide", fit, poster ? "poster" : "", qr ? "with-qr" : "", small ? "small" : ""].filter(Boolean).join(" ");
  const media = el("div", { class: "slide-media" }, ...nodes);
  return { node: el("div", { class: classes, attrs: { "data-ad-id": ad.id } }, media, qr), kind, mediaType, fit, poster };
}

/** Shows a slide, fading it in over the one on screen, which then goes. */
async function show(ad) {
  const next = await slide(ad);
  delete document.body.dataset.store;
  const old = [...stage.children];
  next.node.classList.add("entering");
  // The frame follows the slide coming in: gone for a full-screen creative, without its tagline
  // around a poster that says it (player.css).
  document.body.dataset.fit = next.fit;
  if (next.poster) document.body.dataset.ownWords = "";
  else delete document.body.dataset.ownWords;
  stage.append(next.node);
  // Two frames: the slide is laid out transparent before its opacity moves.
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  next.node.classList.remove("entering");
  stage.dataset.adId = ad.id;
  stage.dataset.kind = next.kind;
  stage.dataset.media = next.mediaType;
  count("slides");
  setTimeout(() => old.forEach((n) => n.remove()), FADE_MS + 50);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function play() {
  let index = 0;
  /** The ads of the playlist last played, to tell a newly assigned one. */
  let known = null;
  for (;;) {
    let ads;
    try {
      ads = await onAir();
    } catch (e) {
      if (e.status === 401) return;
      message(refused(e));
      await rest(5000);
      continue;
    }
    if (!storeOpen()) {
      // The store is closed: nothing plays until it opens (watch() reads when that is); the
      // platform hears at once that the screen shows nothing.
      if (playing) {
        playing = null;
        heartbeat().catch((e) => { document.body.dataset.lastError = e.message; });
      }
      known = null;
      closed();
      await rest(5000);
      continue;
    }
    if (!ads.length) {
      playing = null;
      known = new Set();
      message("Nothing to play: no ad on air is assigned to this screen.");
      await rest(5000);
      continue;
    }
    // A newly assigned ad plays next: the presenter sees it at once.
    const added = known ? ads.findIndex((a) => !known.has(a.id)) : -1;
    if (added >= 0) index = added;
    known = new Set(ads.map((a) => a.id));
    const ad = ads[index % ads.length];
    index += 1;
    const changed = playing !== ad.id;
    playing = ad.id;
    // The sandbox's time (its clock may be ahead or frozen), from the answers' Date headers.
    const started = sandboxNow();
    await show(ad);
    if (changed) {
      // The platform knows what the screen shows the moment it changes.
      heartbeat().catch((e) => { document.body.dataset.lastError = e.message; offAir(e); });
      count("adChanges");
    }
    const planned = slotParam >= 1 ? Math.floor(slotParam) : ad.duration_seconds;
    const shownAt = Date.now();
    // Cut short when the playlist changes: the play counts the whole seconds it lasted.
    const cut = await rest(planned * 1000);
    const seconds = cut ? Math.floor((Date.now() - shownAt) / 1000) : planned;
    if (seconds < 1) continue;
    try {
      // One Idempotency-Key per play (`api` gives every POST its own; its retry after a 429
      // sends the very same one).
      await api("POST", `/devices/${deviceId}/playbacks`, {
        ad_id: ad.id,
        started_at: started.toISOString().replace(/\.\d{3}Z$/, "Z"),
        duration_seconds: seconds,
      });
      count("playbacks");
    } catch (e) {
      document.body.dataset.lastError = e.message;
      if (e.status === 401) return;
      offAir(e);
    }
  }
}

/** A 409 says the ad is no longer on air here (the API's `on_air`, which the heartbeat and the
 * play are held to): the playlist is read again rather than kept until it expires. */
function offAir(e) {
  if (e.status === 409) playlist = null;
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
  try {
    await signInFromLink();
  } catch (e) {
    askForCredential(`This sign-in link did not work (${e.status || "no answer"}): ${e.message}`);
    return;
  }
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
  watch();
}

start();
