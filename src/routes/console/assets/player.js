// A browser tab that behaves as one screen: it plays the device's assigned active ads in rotation,
// sends heartbeats and reports proof-of-play through the REST API, with the credential of this tab.
// `?slot=N` shows each ad N seconds (at least 1) instead of its own duration, for demos and tests.

import { api, blobUrl, credential, el, saveCredential, svgUrl } from "./common.js";

const stage = document.getElementById("stage");
const deviceId = decodeURIComponent(location.pathname.split("/").pop() || "");
const slotParam = Number(new URLSearchParams(location.search).get("slot"));
const HEARTBEAT_MS = 30000;
let playing = null;
/** The sandbox clock minus this browser's (ms): a frozen sandbox lives at another time. */
let clockOffset = 0;

function message(text) {
  stage.replaceChildren(el("p", { class: "message", attrs: { role: "status" }, text }));
}

function refused(e) {
  if (e.status === 401) return "This screen's credential was refused (401). Sign in again.";
  if (e.status === 403) return `The credential may not act for this screen (403): ${e.message}`;
  if (e.status === 404) return `There is no screen ${deviceId}, or this credential may not see it (404).`;
  return `The sandbox could not be reached: ${e.message}`;
}

async function heartbeat() {
  const body = { app_version: "browser-player-1.0" };
  if (playing) body.current_ad_id = playing;
  const device = await api("POST", `/devices/${deviceId}/heartbeat`, body);
  const serverNow = device && Date.parse(device.last_heartbeat_at || device.last_seen || "");
  if (serverNow) clockOffset = serverNow - Date.now();
}

async function activeAds() {
  const ads = await api("GET", `/devices/${deviceId}/ads`);
  return ads.data.filter((a) => a.status === "active");
}

async function show(ad) {
  const nodes = [];
  if (ad.media_id) {
    try {
      const meta = await api("GET", `/media/${ad.media_id}`);
      const src = await blobUrl(`/media/${ad.media_id}/content`);
      nodes.push(meta.content_type.startsWith("video/")
        ? el("video", { class: "media", attrs: { src, muted: true, autoplay: true, loop: true } })
        : el("img", { class: "media", attrs: { src, alt: "" } }));
    } catch (_) {
      /* the headline alone */
    }
  }
  nodes.push(el("p", { class: "headline", text: ad.headline }));
  if (ad.promotion_id) {
    try {
      const codes = await api("GET", `/promotions/${ad.promotion_id}/qr-codes`);
      if (codes.data.length) nodes.push(el("img", { class: "qr", attrs: { src: svgUrl(codes.data[0].image_svg), alt: "Scan for the offer" } }));
    } catch (_) {
      /* no QR code for this credential */
    }
  }
  stage.replaceChildren(...nodes);
  stage.dataset.adId = ad.id;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function play() {
  let index = 0;
  for (;;) {
    let ads;
    try {
      ads = await activeAds();
    } catch (e) {
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
    playing = ad.id;
    const started = new Date(Date.now() + clockOffset);
    await show(ad);
    const seconds = slotParam >= 1 ? Math.floor(slotParam) : ad.duration_seconds;
    await sleep(seconds * 1000);
    try {
      await api("POST", `/devices/${deviceId}/playbacks`, {
        ad_id: ad.id,
        started_at: started.toISOString().replace(/\.\d{3}Z$/, "Z"),
        duration_seconds: seconds,
      });
      document.body.dataset.playbacks = String(Number(document.body.dataset.playbacks || 0) + 1);
    } catch (e) {
      document.body.dataset.lastError = e.message;
    }
  }
}

async function start() {
  if (!credential()) {
    message("No credential.");
    const form = document.getElementById("key-form");
    form.hidden = false;
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      saveCredential({ kind: "key", key: document.getElementById("key-input").value.trim(), client: document.getElementById("client-input").value.trim() });
      form.hidden = true;
      start();
    }, { once: true });
    return;
  }
  try {
    await heartbeat();
    document.body.dataset.heartbeats = "1";
  } catch (e) {
    message(refused(e));
    return;
  }
  setInterval(() => heartbeat().then(() => {
    document.body.dataset.heartbeats = String(Number(document.body.dataset.heartbeats || 0) + 1);
  }).catch((e) => message(refused(e))), HEARTBEAT_MS);
  play();
}

start();
