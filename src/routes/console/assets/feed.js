// The events feed: what changed, on which object (by name), by whom (the key's or user's name,
// "sandbox clock", "simulated fleet") and through which door. Heartbeats and plays come in bursts,
// so runs of them are grouped into one line. Polling walks the cursor back to the newest event
// already shown, so a burst (a day's advance makes dozens) leaves no gap. Filters by kind of event.

import { api, el, when } from "./common.js";
import { page } from "./ui.js";
import { every, fresh } from "./live.js";

/** Event types that arrive in bursts and are grouped. */
const CHATTY = new Set(["device.heartbeat", "device.playback_recorded"]);
/** The most a poll walks back (pages of 100) before it says that older events were skipped. */
const MAX_PAGES = 20;

const FILTERS = [
  ["all", "Everything"], ["changes", "Changes (no heartbeats or plays)"], ["devices", "Screens"],
  ["ads", "Ads"], ["promotions", "Promotions and scans"], ["billing", "Tokens and billing"], ["sandbox", "Sandbox only"],
];

function matches(filter, e) {
  switch (filter) {
    case "changes": return !CHATTY.has(e.type);
    case "devices": return e.type.startsWith("device.");
    case "ads": return e.type.startsWith("ad.");
    case "promotions": return e.type.startsWith("promotion.") || e.type.startsWith("qr");
    case "billing": return /^(token|invoice|charge|payment)/.test(e.type);
    case "sandbox": return e.via === "sandbox";
    default: return true;
  }
}

/** The object's name: as it is now, else as the event recorded it, else its id. */
function objectName(e) {
  const d = e.data || {};
  return e.resource_name || d.name || d.filename || d.label || d.number || e.resource_id;
}

function line(e) {
  return el("li", { attrs: { "data-type": e.type, "data-via": e.via } },
    el("strong", { text: e.type }), ` ${objectName(e)} · ${when(e.created_at)} · by ${e.actor_name || e.actor || "unknown"} `,
    el("span", { class: `badge via-${e.via}`, text: e.via }));
}

function group(run) {
  const first = run[0];
  const last = run[run.length - 1];
  const names = [...new Set(run.map(objectName))];
  const shown = names.slice(0, 3).join(", ") + (names.length > 3 ? ` and ${names.length - 3} more` : "");
  const item = el("li", { class: "grouped", attrs: { "data-type": first.type, "data-via": first.via, "data-count": run.length } },
    el("strong", { text: `${run.length} × ${first.type}` }), ` ${shown} · ${when(last.created_at)} → ${when(first.created_at)} · by ${first.actor_name || "unknown"} `,
    el("span", { class: `badge via-${first.via}`, text: first.via }));
  return item;
}

/** Events (newest first) to list items: consecutive chatty events of one type and actor grouped. */
function render(events) {
  const out = [];
  let run = [];
  const flush = () => {
    if (run.length === 1) out.push(line(run[0]));
    else if (run.length) out.push(group(run));
    run = [];
  };
  for (const e of events) {
    if (CHATTY.has(e.type) && run.length && (run[0].type !== e.type || run[0].actor_name !== e.actor_name)) flush();
    if (CHATTY.has(e.type)) run.push(e);
    else {
      flush();
      out.push(line(e));
    }
  }
  flush();
  return out;
}

export async function events() {
  const list = el("ol", { class: "feed", attrs: { "aria-label": "Events, newest first" } });
  const empty = el("p", { class: "empty", text: "No events yet. Change something (an ad, a promotion), let a screen heartbeat, or advance the sandbox clock, and it appears here within 3 s." });
  const select = el("select", { attrs: { id: "event-filter" } }, ...FILTERS.map(([v, t]) => el("option", { attrs: { value: v }, text: t })));
  const note = el("p", { class: "muted", attrs: { role: "status" } });
  page("Events", el("div", { class: "row" }, el("label", { attrs: { for: "event-filter" }, text: "Show" }), select), note, empty, list);
  /** Every event seen, newest first (bounded). */
  let seen = [];
  const draw = () => {
    const shown = seen.filter((e) => matches(select.value, e));
    list.replaceChildren(...render(shown));
    empty.hidden = shown.length > 0;
    list.hidden = shown.length === 0;
    if (seen.length && !shown.length) empty.textContent = "No events of this kind yet.";
    note.textContent = `${seen.length} events loaded; new ones appear as they happen (polled every 3 s).`;
  };
  select.addEventListener("change", draw);
  const poll = async () => {
    const newest = seen.length ? seen[0].id : null;
    const arrived = [];
    let cursor = null;
    for (let pages = 0; pages < (newest ? MAX_PAGES : 1); pages++) {
      const pageData = await api("GET", `/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      let reached = false;
      for (const e of pageData.data) {
        if (e.id === newest) {
          reached = true;
          break;
        }
        arrived.push(e);
      }
      if (reached || !pageData.has_more || !newest) break;
      cursor = pageData.next_cursor;
    }
    if (arrived.length || !seen.length) {
      seen = arrived.concat(seen).slice(0, 2000);
      draw();
    }
  };
  await poll();
  fresh();
  every(3000, poll);
}
