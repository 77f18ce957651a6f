// The ads of one company, each as its screens show it (media, headline, QR code), with its dates,
// whether it is on air, where it is assigned and its plays over the last 7 days; a form makes a new
// ad (headline, media, promotion, dates, screens), and each ad can be paused or resumed (PATCH with
// If-Match), assigned and unassigned, through the same REST calls any client makes.

import { all, api, el, plural, sandboxNow, storeOf, timeZone, when } from "./common.js";
import { barList, colours } from "./charts.js";
import { field, page, problemBox } from "./ui.js";
import { qrImages, screen, shownShortUrls } from "./fleet.js";
import { fresh } from "./live.js";
import { loopbackNotice } from "./promotions.js";
import { dateTimeInput, formCard, input, rfc3339Of, select, valueOf } from "./forms.js";

function schedule(ad) {
  if (!ad.starts_at && !ad.ends_at) return "no dates of its own";
  return `${ad.starts_at ? when(ad.starts_at) : "now"} → ${ad.ends_at ? when(ad.ends_at) : "until stopped"}`;
}

/** "on air" only where a screen shows it: a screen plays while it is online and its store is open
 * (the company's `store`, by its opening hours), so an ad on air whose screens are all
 * offline (or never seen), or whose stores are closed now, plays nowhere and says so instead of
 * reading as playing with 0 plays. */
function onAirBadge(ad, deviceById, store) {
  if (!ad.on_air) return null;
  if (!store.open) {
    return el("span", { class: "badge idle", attrs: { "data-on-air-screens": 0, "data-store": "closed" },
      text: `on air · stores closed${store.opens ? ` · opens ${store.opens}` : ""}` });
  }
  const online = ad.device_ids.filter((id) => (deviceById.get(id) || {}).status === "online").length;
  return online
    ? el("span", { class: "badge on-air", attrs: { "data-on-air-screens": online }, text: `on air on ${plural(online, "screen")} online` })
    : el("span", { class: "badge idle", attrs: { "data-on-air-screens": 0 }, text: "on air, but no screen of it is online" });
}

export async function adsView(companyId) {
  const status = el("p", { attrs: { role: "status" } });
  const list = el("div", { class: "ad-list" });
  const chart = el("div");
  const formBox = el("div");
  const newButton = el("button", { class: "primary", attrs: { type: "button", "aria-expanded": "false" }, text: "New ad" });
  page("Ads", el("div", { class: "row" }, newButton), formBox, status, chart, list);
  const qrByPromotion = new Map();
  let known = { devices: [], media: [], promotions: [] };
  const render = async () => {
    const [ads, devices, mediaRows, promotions, report, company] = await Promise.all([
      all(`/ads?company_id=${companyId}`), all(`/devices?company_id=${companyId}`),
      all(`/media?company_id=${companyId}`).catch(() => []),
      all(`/promotions?company_id=${companyId}`).catch(() => []),
      // Seven whole UTC days, today's so far included (as the overview counts them).
      api("GET", `/reports/proof-of-play?company_id=${companyId}&from=${new Date(sandboxNow().getTime() - 6 * 86400000).toISOString().slice(0, 10)}`).catch(() => null),
      // Whether its stores are open now (the server's `store`); a company it cannot read counts
      // as open (the badge then counts online screens).
      api("GET", `/companies/${companyId}`).catch(() => null),
    ]);
    known = { devices, media: mediaRows, promotions };
    await qrImages(ads, qrByPromotion);
    const mediaById = new Map(mediaRows.map((m) => [m.id, m]));
    const deviceById = new Map(devices.map((d) => [d.id, d]));
    const store = storeOf(company);
    const plays = new Map((report ? report.ads : []).map((a) => [a.ad_id, a.plays]));
    const adColours = colours(ads.map((a) => a.id));
    chart.replaceChildren(barList("ad-plays", "Plays per ad, last 7 days",
      ads.filter((a) => a.status === "active").map((a) => ({ label: a.name, value: plays.get(a.id) || 0, colour: adColours.get(a.id) }))));
    const order = { active: 0, paused: 1, draft: 2, archived: 3 };
    const sorted = [...ads].sort((a, b) => (order[a.status] - order[b.status]) || a.name.localeCompare(b.name));
    list.replaceChildren(...await Promise.all(sorted.map(async (ad) => {
      const unassigned = devices.filter((d) => !ad.device_ids.includes(d.id));
      const pick = el("select", { attrs: { "aria-label": `Screen to assign ${ad.name} to` } },
        ...unassigned.map((d) => el("option", { attrs: { value: d.id }, text: d.name })));
      const toggle = ad.status === "active"
        ? el("button", { attrs: { type: "button" }, text: "Pause", on: { click: () => setStatus(ad, "paused") } })
        : ad.status !== "archived" ? el("button", { attrs: { type: "button" }, text: ad.status === "draft" ? "Make active" : "Resume", on: { click: () => setStatus(ad, "active") } }) : null;
      return el("article", { class: "card ad-card", attrs: { "data-ad-id": ad.id, "data-on-air": ad.on_air } },
        el("div", { class: "ad-preview" }, await screen(ad, qrByPromotion, mediaById)),
        el("div", {},
          el("h2", { text: ad.name }),
          el("p", { class: "row" }, el("span", { class: `badge ${ad.status}`, text: ad.status }),
            onAirBadge(ad, deviceById, store),
            `${ad.duration_seconds} s · ${plural(plays.get(ad.id) || 0, "play")} in 7 days · ${schedule(ad)}`),
          el("p", { class: "muted", text: ad.headline }),
          el("h3", { text: `On ${plural(ad.device_ids.length, "screen")}` }),
          ad.device_ids.length ? el("ul", { class: "assigned" }, ...ad.device_ids.map((id) => {
            const d = deviceById.get(id);
            const name = d ? d.name : id;
            return el("li", {}, `${name} `, el("button", { attrs: { type: "button", "aria-label": `Unassign ${ad.name} from ${name}` }, text: "Unassign",
              on: { click: () => act(() => api("DELETE", `/ads/${ad.id}/devices/${id}`), `${ad.name} taken off ${name}.`) } }));
          })) : el("p", { class: "muted", text: "Not assigned to any screen." }),
          el("div", { class: "row" },
            unassigned.length && ad.status !== "archived" ? pick : null,
            unassigned.length && ad.status !== "archived" ? el("button", { attrs: { type: "button" }, text: "Assign", on: { click: () => act(() => api("POST", `/ads/${ad.id}/devices`, { device_id: pick.value }), `${ad.name} assigned to ${pick.selectedOptions[0] ? pick.selectedOptions[0].textContent : "the screen"}.`) } }) : null,
            toggle)));
    })));
    fresh();
  };
  const act = async (fn, done) => {
    try {
      await fn();
      status.textContent = done;
      await render();
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };
  const setStatus = (ad, to) => act(async () => {
    const { etag } = await api("GET", `/ads/${ad.id}`, undefined, { etag: true });
    await api("PATCH", `/ads/${ad.id}`, { status: to }, { ifMatch: etag });
  }, `${ad.name} is ${to === "active" ? "active" : "paused"}.`);

  const newForm = () => {
    const screens = el("fieldset", { class: "screens" }, el("legend", { text: "Show it on" }),
      ...known.devices.map((d) => el("label", { class: "check" },
        el("input", { attrs: { type: "checkbox", name: "screen", value: d.id } }), ` ${d.name}`)));
    return formCard({
      title: "New ad",
      submitText: "Create ad",
      labels: { "/name": "Name", "/headline": "Headline", "/media_id": "Media", "/promotion_id": "Promotion", "/duration_seconds": "Seconds on screen", "/starts_at": "Starts", "/ends_at": "Ends" },
      onCancel: () => { formBox.replaceChildren(); newButton.setAttribute("aria-expanded", "false"); newButton.focus(); },
      fields: [
        field("Name", input("name", { required: true, maxlength: 100, placeholder: "Cheese week - entrance" })),
        field("Headline", input("headline", { required: true, maxlength: 200, placeholder: "10% off every cheese this week" }), "Shown over a photo or video; a poster carries its own words."),
        el("div", { class: "field-row" },
          field("Media", select("media_id", [["", "None: the headline alone"], ...known.media.map((m) => [m.id, `${m.filename} (${m.content_type.split("/")[0]})`])])),
          field("Promotion (its QR code is shown)", select("promotion_id", [["", "None"], ...known.promotions.filter((p) => p.state !== "expired").map((p) => [p.id, p.name])]))),
        el("div", { class: "field-row" },
          field("Seconds on screen", input("duration_seconds", { type: "number", min: 1, max: 3600, value: 10, required: true })),
          field("Status", select("status", [["active", "Active: screens play it"], ["draft", "Draft"]]))),
        el("div", { class: "field-row" },
          field(`Starts (${timeZone()}, optional)`, dateTimeInput("starts_at")),
          field(`Ends (${timeZone()}, optional)`, dateTimeInput("ends_at"))),
        screens,
      ],
      submit: async (f) => {
        const body = { company_id: companyId, name: valueOf(f, "name"), headline: valueOf(f, "headline"),
          status: valueOf(f, "status"), duration_seconds: Number(valueOf(f, "duration_seconds") || 10),
          media_id: valueOf(f, "media_id") || null, promotion_id: valueOf(f, "promotion_id") || null,
          starts_at: rfc3339Of(valueOf(f, "starts_at")), ends_at: rfc3339Of(valueOf(f, "ends_at")) };
        const made = await api("POST", "/ads", body);
        const chosen = [...f.querySelectorAll("input[name=screen]:checked")].map((c) => c.value);
        for (const device_id of chosen) await api("POST", `/ads/${made.id}/devices`, { device_id });
        status.textContent = `${made.name} is created${chosen.length ? ` and shown on ${plural(chosen.length, "screen")}` : ""}.`;
        formBox.replaceChildren();
        newButton.setAttribute("aria-expanded", "false");
        await render();
        return status.textContent;
      },
    });
  };
  newButton.addEventListener("click", () => {
    const open = newButton.getAttribute("aria-expanded") === "true";
    newButton.setAttribute("aria-expanded", String(!open));
    formBox.replaceChildren(...(open ? [] : [newForm()]));
    if (!open) formBox.querySelector("input").focus();
  });
  await render();
  loopbackNotice([...shownShortUrls]);
}
