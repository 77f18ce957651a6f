// The fleet of one company: a tile per screen showing what it plays, its status, its heartbeat's
// age and a sparkline of its plays over the last 7 days, above a fleet-health bar. Every refresh
// costs a constant number of requests whatever the number of screens: the devices list carries
// status, heartbeat age and current ad; the ads and media lists say what that ad shows; the plays
// per day come from one proof-of-play report per day (refreshed once a minute). A screen's
// diagnostics are fetched when its tile is opened; its player opens in a new tab signed in with
// this tab's credential (a one-use sign-in link). A form registers a new screen.

import { ago, all, api, blobUrl, el, num, openSignedIn, sandboxNow, storeOf, svgUrl, when } from "./common.js";
import { lastDays, sparkline, stack } from "./charts.js";
import { dialog, page, problemBox } from "./ui.js";
import { every, fresh } from "./live.js";
import { loopbackNotice } from "./promotions.js";
import { screenForm } from "./forms.js";

/** Whether media of this size has a 16:9 screen's shape (within 2 %, as the player decides): the
 * player shows it full screen, with no headline over it. */
function widescreen(m) {
  return Boolean(m && m.width && m.height && Math.abs((m.width / m.height) / (16 / 9) - 1) <= 0.02);
}

/** What a 16:9 screen shows: the media of its current ad, with the promotion's QR code over it, as
 * the player frames it (a creative of the screen's shape fills it, with no headline; another
 * shape is shown whole). */
export async function screen(ad, qrByPromotion, mediaById) {
  const box = el("div", { class: "screen" });
  if (!ad) {
    box.append("Nothing playing");
    return box;
  }
  const m = ad.media_id ? mediaById.get(ad.media_id) : null;
  const full = widescreen(m);
  box.dataset.fit = full ? "full" : m ? "framed" : "branded";
  try {
    if (m && m.content_type.startsWith("image/")) {
      const poster = !full && m.content_type.startsWith("image/svg");
      box.append(el("img", { class: poster ? "media poster" : "media", attrs: { src: await blobUrl(`/media/${m.id}/content`), alt: "" } }));
    } else if (m && m.content_type.startsWith("video/")) {
      const v = el("video", { class: "media", attrs: { src: await blobUrl(`/media/${m.id}/content`), muted: true, autoplay: true, loop: true, playsinline: true, "aria-hidden": "true" } });
      v.muted = true;
      box.append(v);
    }
  } catch (_) {
    /* the headline alone */
  }
  // A poster or a full-screen creative carries its own words; a video or photo of another shape
  // gets the headline over it, as on the screen.
  const own = full || (m && m.content_type.startsWith("image/svg"));
  if (!own) box.append(el("span", { class: "screen-headline", text: ad.headline }));
  const qr = ad.promotion_id ? qrByPromotion.get(ad.promotion_id) : null;
  if (qr) box.append(el("img", { class: "qr", attrs: { src: qr, alt: "QR code of the promotion" } }));
  if (qr && !full && m && m.content_type.startsWith("image/svg")) box.classList.add("poster", "with-qr");
  return box;
}

/** The short URLs of every QR code shown so far (for the loopback warning). */
export const shownShortUrls = new Set();

/** QR images of the promotions the ads link to, fetched once per promotion per view. */
export async function qrImages(ads, into) {
  for (const a of ads) {
    if (a.promotion_id && !into.has(a.promotion_id)) {
      into.set(a.promotion_id, null);
      try {
        const codes = await api("GET", `/promotions/${a.promotion_id}/qr-codes`);
        if (codes.data.length) into.set(a.promotion_id, svgUrl(codes.data[0].image_svg));
        for (const c of codes.data) shownShortUrls.add(c.short_url || c.target_url);
      } catch (_) {
        /* a key without promotions:read sees no codes */
      }
    }
  }
}

/** Plays per device per day over the last `days` days: one report per day. */
export async function playsPerDay(companyId, days) {
  const now = sandboxNow();
  const dates = lastDays(now, days);
  const reports = await Promise.all(dates.map((d, i) => {
    const from = `${d}T00:00:00Z`;
    const to = i === dates.length - 1 ? now.toISOString().replace(/\.\d{3}Z$/, "Z") : `${dates[i + 1]}T00:00:00Z`;
    return api("GET", `/reports/proof-of-play?company_id=${companyId}&from=${from}&to=${to}`);
  }));
  const byDevice = new Map();
  reports.forEach((r, i) => {
    for (const d of r.devices) {
      if (!byDevice.has(d.device_id)) byDevice.set(d.device_id, new Array(days).fill(0));
      byDevice.get(d.device_id)[i] = d.plays;
    }
  });
  return byDevice;
}

/** Opens a screen's player in a new tab, signed in; a refusal is said in `where`. */
export function openPlayer(deviceId, where) {
  openSignedIn(`/player/${deviceId}`).catch((e) => where.replaceChildren(problemBox(e)));
}

export async function fleet(companyId) {
  const health = el("div");
  const grid = el("div", { class: "grid", attrs: { role: "list", "aria-label": "Screens" } });
  const summary = el("p", { class: "muted" });
  const status = el("div", { attrs: { "aria-live": "polite" } });
  const formBox = el("div");
  const newButton = el("button", { attrs: { type: "button", "aria-expanded": "false" }, text: "Register a screen" });
  page("Fleet", summary, el("div", { class: "row" }, newButton), formBox, status, health, grid);
  const qrByPromotion = new Map();
  /** Each tile's screen as last drawn, kept while its ad stays the same: a refresh moves it into
   * the new tile (in the same task, so a video keeps playing instead of starting over). */
  const screens = new Map();
  let mediaById = new Map();
  const screenOf = async (d, ad) => {
    const kept = screens.get(d.id);
    // What the screen shows: the ad and what it is made of (an edited headline redraws it).
    const shows = ad ? [ad.id, ad.headline, ad.media_id, ad.promotion_id].join("|") : null;
    if (kept && kept.shows === shows) return kept.node;
    const node = await screen(ad, qrByPromotion, mediaById);
    screens.set(d.id, { shows, node });
    return node;
  };
  let plays = new Map();
  let playsAt = 0;
  const refresh = async () => {
    const [devices, ads, mediaRows, company] = await Promise.all([
      all(`/devices?company_id=${companyId}`), all(`/ads?company_id=${companyId}`),
      all(`/media?company_id=${companyId}`).catch(() => []),
      // Whether its store is open now: the server's `store`, read with the screens.
      api("GET", `/companies/${companyId}`).catch(() => ({})),
    ]);
    // Outside the store's opening hours a screen is on but plays nothing: said as closed, not broken.
    const store = storeOf(company);
    if (Date.now() - playsAt > 60000) {
      plays = await playsPerDay(companyId, 7).catch(() => plays);
      playsAt = Date.now();
    }
    const adById = new Map(ads.map((a) => [a.id, a]));
    mediaById = new Map(mediaRows.map((m) => [m.id, m]));
    await qrImages(ads, qrByPromotion);
    const tiles = await Promise.all(devices.map(async (d) => {
      const status = d.status;
      const closed = status === "online" && !store.open;
      const ad = d.current_ad_id && !closed ? adById.get(d.current_ad_id) : null;
      const series = plays.get(d.id) || new Array(7).fill(0);
      const total = series.reduce((a, b) => a + b, 0);
      const tile = el("button", {
        class: `tile ${status}`, attrs: { type: "button", "data-device-id": d.id },
        on: { click: () => showDiagnostics(d) },
      },
      el("h3", { text: d.name }),
      el("span", { class: `status ${closed ? "closed" : status}`, attrs: { "data-store": closed ? "closed" : null },
        text: closed ? `closed${store.opens ? ` · opens ${store.opens}` : ""}` : status.replace("_", " ") }),
      el("span", { class: "muted", text: ` · heartbeat ${ago(d.seconds_since_heartbeat)}` }),
      await screenOf(d, ad),
      // Only a screen that is online and open plays; an offline one last showed its ad.
      el("span", { class: "muted", attrs: { "data-playing": ad && status === "online" ? ad.id : null },
        text: closed ? `${d.location} · store closed, nothing plays`
          : !ad ? `${d.location}` : status === "online" ? `Playing: ${ad.name}` : `Not playing (${status.replace("_", " ")}) · last showed ${ad.name}` }),
      el("span", { class: "spark-row" }, sparkline(series, `${d.name}: ${num(total)} plays in 7 days`), `${num(total)} plays, 7 d`));
      const player = el("button", { class: "link-button", attrs: { type: "button", "data-open-player": d.id, "aria-label": `Open player ↗ of ${d.name} (a new tab)` },
        text: "Open player ↗", on: { click: () => openPlayer(d.id, status) } });
      return el("div", { class: "tile-wrap", attrs: { role: "listitem" } }, tile, player);
    }));
    const count = (s) => devices.filter((d) => d.status === s).length;
    const hoursNote = store.open ? "" : ` The store is closed${store.opens ? ` (opens ${store.opens}, ${company.timezone})` : ""}: its screens are on and play nothing.`;
    summary.textContent = `${num(devices.length)} screens: ${num(count("online"))} online, ${num(count("offline"))} offline, ${num(count("never_seen"))} never seen.${hoursNote} Refreshed every 5 s.`;
    health.replaceChildren(stack("fleet-health", "Fleet health", [
      { label: "Online", value: count("online"), cls: "online" },
      { label: "Offline", value: count("offline"), cls: "offline" },
      { label: "Never seen", value: count("never_seen"), cls: "never_seen" },
    ]));
    grid.replaceChildren(...tiles);
    // A kept video that spent a moment out of the page (another tile's media was loading) was
    // paused by the browser: it carries on.
    for (const v of grid.querySelectorAll("video")) if (v.paused) v.play().catch(() => {});
    fresh();
  };
  newButton.addEventListener("click", () => {
    const open = newButton.getAttribute("aria-expanded") === "true";
    newButton.setAttribute("aria-expanded", String(!open));
    const close = () => { formBox.replaceChildren(); newButton.setAttribute("aria-expanded", "false"); newButton.focus(); };
    formBox.replaceChildren(...(open ? [] : [screenForm(companyId, async () => { await refresh(); }, close)]));
    if (!open) formBox.querySelector("input").focus();
  });
  await refresh();
  loopbackNotice([...shownShortUrls]);
  every(5000, refresh);
}

async function showDiagnostics(device) {
  let diag = null;
  try {
    diag = await api("GET", `/devices/${device.id}/diagnostics`);
  } catch (_) {
    diag = null;
  }
  const body = el("div", {},
    el("dl", { class: "facts" },
      el("dt", { text: "Location" }), el("dd", { text: device.location }),
      el("dt", { text: "Platform" }), el("dd", { text: `${device.platform} · ${device.resolution} · ${device.orientation}` }),
      el("dt", { text: "Status" }), el("dd", { text: diag ? diag.status : device.status }),
      el("dt", { text: "Last seen" }), el("dd", { text: diag ? when(diag.last_seen) : when(device.last_heartbeat_at) }),
      el("dt", { text: "App version" }), el("dd", { text: (diag && diag.app_version) || device.app_version || "—" }),
      el("dt", { text: "Storage" }), el("dd", { text: diag && diag.storage && diag.storage.free_percent !== null ? `${diag.storage.free_percent}% free` : "—" })),
    el("h3", { text: "Recent playback errors" }),
    diag && diag.recent_playback_errors.length
      ? el("ul", {}, ...diag.recent_playback_errors.map((e) => el("li", { text: `${when(e.occurred_at)} ${e.code}: ${e.message}` })))
      : el("p", { class: "muted", text: diag ? "None." : "Diagnostics could not be loaded." }),
    el("p", {}, el("button", { class: "link-button", attrs: { type: "button" }, text: "Open this screen's player (signed in, new tab)",
      on: { click: (ev) => openPlayer(device.id, ev.target.parentElement) } })));
  dialog(`Screen: ${device.name}`, body, null);
}
