// The events feed: what changed, on which object (by name), by whom (the key's or user's name,
// "sandbox clock", "simulated fleet") and through which door. Heartbeats and plays come in bursts,
// so runs of them are grouped into one line. Polling walks the cursor back to the newest event
// already shown, so a burst (a day's advance makes dozens) leaves no gap. Filters by kind of event.
// QR scans come in bursts too (the simulated phones scan at the top of every hour): grouped alike;
// and so is one change repeated on one object (a script's burst of edits).

import { api, el, when } from "./common.js";
import { page } from "./ui.js";
import { every, fresh } from "./live.js";

/** Event types that arrive all the time: "Changes" leaves them out. */
const CHATTY = new Set(["device.heartbeat", "device.playback_recorded"]);
/** Event types that arrive in bursts: consecutive ones of a type and actor share one line. */
const GROUPED = new Set([...CHATTY, "qr_code.scanned"]);
/** The most a poll walks back (pages of 100) before it says that older events were skipped. */
const MAX_PAGES = 20;
/** Pages the first load reads: enough that a burst just before the tab opened is not all it shows. */
const FIRST_PAGES = 5;

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
  const counts = new Map();
  for (const e of run) counts.set(e.type, (counts.get(e.type) || 0) + 1);
  const what = [...counts].map(([type, n]) => `${n} × ${type}`).join(", ");
  const range = last.created_at === first.created_at ? when(first.created_at) : `${when(last.created_at)} → ${when(first.created_at)}`;
  return el("li", { class: "grouped", attrs: { "data-type": first.type, "data-types": [...counts.keys()].join(" "), "data-via": first.via, "data-count": run.length } },
    el("strong", { text: what }), ` ${shown} · ${range} · by ${first.actor_name || "unknown"} `,
    el("span", { class: `badge via-${first.via}`, text: first.via }));
}

/** What makes consecutive events one line: a burst (heartbeats, plays, scans) by one actor through
 * one door, or the same change to the same object repeated by one actor (a script's hundred edits). */
function runKey(e) {
  return GROUPED.has(e.type) ? `burst|${e.actor_name}|${e.via}` : `same|${e.type}|${e.resource_id}|${e.actor_name}|${e.via}`;
}

/** Events (newest first) to list items, runs counted by type on one line. */
function render(events) {
  const out = [];
  let run = [];
  const flush = () => {
    if (run.length === 1) out.push(line(run[0]));
    else if (run.length) out.push(group(run));
    run = [];
  };
  for (const e of events) {
    if (run.length && runKey(run[0]) !== runKey(e)) flush();
    run.push(e);
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
    note.dataset.loaded = String(seen.length);
  };
  select.addEventListener("change", draw);
  const poll = async () => {
    const newest = seen.length ? seen[0].id : null;
    const arrived = [];
    let cursor = null;
    let skipped = false;
    for (let pages = 0; pages < (newest ? MAX_PAGES : FIRST_PAGES); pages++) {
      const pageData = await api("GET", `/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      let reached = false;
      for (const e of pageData.data) {
        if (e.id === newest) {
          reached = true;
          break;
        }
        arrived.push(e);
      }
      if (reached || !pageData.has_more) break;
      cursor = pageData.next_cursor;
      if (newest && pages === MAX_PAGES - 1) skipped = true;
    }
    if (arrived.length || !seen.length) {
      seen = arrived.concat(seen).slice(0, 2000);
      draw();
      if (skipped) note.textContent += ` More than ${MAX_PAGES * 100} events arrived at once: older ones are not shown.`;
    }
  };
  await poll();
  fresh();
  every(3000, poll);
}
