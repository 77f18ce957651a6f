// Honest status for a live console: views refresh with `every`, and when a refresh fails the data
// on screen is marked stale with "connection lost — showing data from HH:MM"; a 429 waits for its
// Retry-After (said in a notice) and is sent again (see common.js); a 401 goes back to sign-in with
// the reason. The header shows the sandbox's time, which an operator's "+1 day" moves.

import { api, el, hooks, sandboxNow, timeZone, when, zoned } from "./common.js";
import { $, clearNotice, notice } from "./ui.js";

let timers = [];
/** When the view's data last arrived whole (browser time), for the banner. */
let lastGood = null;

export function clearTimers() {
  for (const t of timers) clearInterval(t);
  timers = [];
}

/** Marks the data on screen as fresh (a view calls it after a successful load). */
export function fresh() {
  // The sandbox's time, as the header shows it: the banner's "data from HH:MM" must agree with it.
  lastGood = sandboxNow();
  clearNotice("connection");
  $("view").classList.remove("stale");
  document.body.dataset.connection = "ok";
}

/** Runs `fn` every `ms`; a failure keeps the old data on screen, marked stale, and says so. */
export function every(ms, fn) {
  timers.push(setInterval(async () => {
    try {
      await fn();
      fresh();
    } catch (e) {
      if (e.status === 401) return; // hooks.unauthorized has gone back to sign-in
      lost(e);
    }
  }, ms));
}

/** A failure worth retrying (the network, a 429 that outlasted its waits, a 5xx), as opposed to
 * an answer that will not change by asking again (a 403, a 404). */
export function transient(e) {
  return !e || !e.status || e.status === 429 || e.status >= 500;
}

/** Runs `load` again every `ms` until it succeeds (a view that could not load at all, during an
 * outage); the banner says so meanwhile. */
export function retry(ms, load) {
  const t = setInterval(async () => {
    try {
      await load();
      clearInterval(t);
    } catch (e) {
      lost(e);
    }
  }, ms);
  timers.push(t);
}

export function lost(e) {
  const since = lastGood ? `showing data from ${when(lastGood.toISOString())} (sandbox time)` : "nothing loaded yet";
  const why = e && e.status ? `${e.status} ${e.message}` : (e && e.message) || "no answer";
  notice("connection", "bad", el("strong", { text: `Connection lost — ${since}.` }), ` Retrying every few seconds (${why}).`);
  $("view").classList.add("stale");
  document.body.dataset.connection = "lost";
}

hooks.waiting = (seconds, p) => {
  notice("rate-limit", "warn", el("strong", { text: `Rate limited (429) — waiting ${seconds} s` }),
    ` as the server's Retry-After asks, then trying again. ${p.body.detail || ""}`);
  document.body.dataset.rateLimited = String(seconds);
};
hooks.waited = () => clearNotice("rate-limit");

// ---- the sandbox's time -------------------------------------------------------------------------

let clockTimer = null;
let operatorClock = null;

/** Shows the sandbox time in the header, ticking; with the `sandbox` scope also the clock's mode
 * and how far it was advanced. */
export async function showSandboxTime(isOperator) {
  operatorClock = null;
  if (isOperator) {
    try {
      operatorClock = await api("GET", "/_sandbox/clock");
    } catch (_) {
      operatorClock = null;
    }
  }
  const render = () => {
    const now = sandboxNow();
    const box = $("sandbox-time");
    const z = zoned(now);
    let extra = "";
    if (operatorClock) {
      if (operatorClock.mode === "frozen") extra = " · frozen";
      else if (operatorClock.offset_seconds) extra = ` · +${span(operatorClock.offset_seconds)}`;
    } else if (Math.abs(now - Date.now()) > 60000) {
      // The Date header has whole seconds: shown to the minute.
      extra = ` · ${now > Date.now() ? "+" : "−"}${span(Math.round(Math.abs(now - Date.now()) / 60000) * 60)}`;
    }
    box.replaceChildren(el("span", { class: "label", text: "Sandbox time " }),
      el("time", { attrs: { datetime: now.toISOString(), title: `Times in ${timeZone()}` } },
        el("span", { class: "date", text: `${z.year}-${z.month}-${z.day} ` }), `${z.hour}:${z.minute} ${z.zone}`), extra);
    box.hidden = false;
  };
  render();
  clearInterval(clockTimer);
  clockTimer = setInterval(render, 1000);
}

export function hideSandboxTime() {
  clearInterval(clockTimer);
  $("sandbox-time").hidden = true;
}

/** `90061` -> "1 d 1 h". */
export function span(seconds) {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  if (d) return `${d} d${h ? ` ${h} h` : ""}`;
  if (h) return `${h} h${m ? ` ${m} min` : ""}`;
  return `${m} min`;
}
