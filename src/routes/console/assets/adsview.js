// The ads of one company, each as its screens show it (media, headline, QR code), with where it
// is assigned, its plays over the last 7 days, and assign/unassign through the same REST calls any
// client makes (POST /ads/{id}/devices, DELETE /ads/{id}/devices/{device_id}).

import { all, api, el } from "./common.js";
import { barList } from "./charts.js";
import { page, problemBox } from "./ui.js";
import { qrImages, screen, shownShortUrls } from "./fleet.js";
import { fresh } from "./live.js";
import { loopbackNotice } from "./promotions.js";

export async function adsView(companyId) {
  const status = el("p", { attrs: { role: "status" } });
  const list = el("div", { class: "ad-list" });
  const chart = el("div");
  page("Ads", status, chart, list);
  const qrByPromotion = new Map();
  const render = async () => {
    const [ads, devices, mediaRows, report] = await Promise.all([
      all(`/ads?company_id=${companyId}`), all(`/devices?company_id=${companyId}`),
      all(`/media?company_id=${companyId}`).catch(() => []),
      api("GET", `/reports/proof-of-play?company_id=${companyId}`).catch(() => null),
    ]);
    await qrImages(ads, qrByPromotion);
    const mediaById = new Map(mediaRows.map((m) => [m.id, m]));
    const deviceById = new Map(devices.map((d) => [d.id, d]));
    const plays = new Map((report ? report.ads : []).map((a) => [a.ad_id, a.plays]));
    chart.replaceChildren(barList("ad-plays", "Plays per ad, last 7 days",
      ads.filter((a) => a.status === "active").map((a) => ({ label: a.name, value: plays.get(a.id) || 0 }))));
    const order = { active: 0, paused: 1, draft: 2, archived: 3 };
    const sorted = [...ads].sort((a, b) => (order[a.status] - order[b.status]) || a.name.localeCompare(b.name));
    list.replaceChildren(...await Promise.all(sorted.map(async (ad) => {
      const unassigned = devices.filter((d) => !ad.device_ids.includes(d.id));
      const pick = el("select", { attrs: { "aria-label": `Screen to assign ${ad.name} to` } },
        ...unassigned.map((d) => el("option", { attrs: { value: d.id }, text: d.name })));
      return el("article", { class: "card ad-card", attrs: { "data-ad-id": ad.id } },
        el("div", { class: "ad-preview" }, await screen(ad, qrByPromotion, mediaById)),
        el("div", {},
          el("h2", { text: ad.name }),
          el("p", { class: "row" }, el("span", { class: `badge ${ad.status}`, text: ad.status }),
            `${ad.duration_seconds} s · ${plays.get(ad.id) || 0} plays in 7 days`),
          el("p", { class: "muted", text: ad.headline }),
          el("h3", { text: `On ${ad.device_ids.length} screen${ad.device_ids.length === 1 ? "" : "s"}` }),
          ad.device_ids.length ? el("ul", { class: "assigned" }, ...ad.device_ids.map((id) => {
            const d = deviceById.get(id);
            const name = d ? d.name : id;
            return el("li", {}, `${name} `, el("button", { attrs: { type: "button", "aria-label": `Unassign ${ad.name} from ${name}` }, text: "Unassign",
              on: { click: () => act(() => api("DELETE", `/ads/${ad.id}/devices/${id}`), `${ad.name} taken off ${name}.`) } }));
          })) : el("p", { class: "muted", text: "Not assigned to any screen." }),
          unassigned.length && ad.status !== "archived" ? el("div", { class: "row" }, pick,
            el("button", { attrs: { type: "button" }, text: "Assign", on: { click: () => act(() => api("POST", `/ads/${ad.id}/devices`, { device_id: pick.value }), `${ad.name} assigned to ${pick.selectedOptions[0] ? pick.selectedOptions[0].textContent : "the screen"}.`) } })) : null));
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
  await render();
  loopbackNotice([...shownShortUrls]);
}
