// The sandbox operator's controls (scope `sandbox`): the clock with +1 h, +1 day, +1 week, +1 month
// and "to the next invoice" (the first of the next UTC month, when billing charges the month; on the
// running clock too: it moves ahead and keeps running), fault rules (with two a presenter shows the console's
// honest status with: an outage of the screens list, and one rate-limited answer) and snapshots.
// The clock and the fault rules' counts refresh every 3 s (a rule fires while the view is open).

import { api, el, utcDay, when } from "./common.js";
import { page, problemBox } from "./ui.js";
import { every, fresh, showSandboxTime, span } from "./live.js";

/** Every GET /devices (the Fleet view's list) answers 503 until the rule is removed. */
const OUTAGE = { match: { method: "GET", path: "/devices" }, action: { type: "status", status: 503, detail: "Injected outage (sandbox fault)." } };
/** The next GET /devices answers 429, asking to wait 5 s. */
const RATE_LIMIT = { match: { method: "GET", path: "/devices" }, times: 1, action: { type: "status", status: 429, retry_after: 5 } };

/** A fault rule in words: "GET /devices → 503 · fired 2 times · 1 left". */
function describeFault(f) {
  const m = f.match || {};
  const a = f.action || {};
  const what = [m.method, m.path, m.operation_id, m.key_id ? `key ${m.key_id}` : null, m.via && m.via !== "any" ? `via ${m.via}` : null]
    .filter(Boolean).join(" ") || "every request";
  const does = a.type === "status" ? `${a.status}${a.retry_after ? ` (Retry-After ${a.retry_after} s)` : ""}`
    : a.type === "delay" ? `delayed ${a.delay_ms} ms` : a.type === "drop" ? "connection dropped" : a.type || "?";
  const fired = `fired ${f.fired || 0} time${f.fired === 1 ? "" : "s"}`;
  const left = f.remaining === null || f.remaining === undefined ? "" : ` · ${f.remaining} left`;
  return el("span", {}, el("strong", { text: `${what} → ${does}` }), ` · ${fired}${left}`);
}

/** `now` (RFC 3339) one calendar month on, the day kept (the month's last day when it has fewer). */
export function nextMonth(now) {
  const d = new Date(now);
  const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 2, 0)).getUTCDate();
  const to = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, Math.min(d.getUTCDate(), last),
    d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()));
  return to.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** When the next invoice is made: the first second of the next UTC month (the billing rule). */
export function nextInvoice(now) {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export async function sandbox() {
  const clockBox = el("div", { class: "card" });
  const faultsBox = el("div", { class: "card" });
  const snapBox = el("div", { class: "card" });
  const status = el("p", { attrs: { role: "status" } });
  page("Sandbox", el("p", { class: "muted", text: "The sandbox operator's controls (scope sandbox)." }), status, clockBox, faultsBox, snapBox);
  const act = async (fn, done) => {
    try {
      const r = await fn();
      // The header's time first, so that it never contradicts what the status line says.
      await showSandboxTime(true);
      status.textContent = typeof done === "function" ? done(r) : done;
      await render();
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };
  const moved = (label) => (r) => `Advanced ${label}: now ${when(r.now)}; ${Object.values(r.events).reduce((a, b) => a + b, 0)} events on the way.`;
  const advance = (seconds, label) => act(() => api("POST", "/_sandbox/clock/advance", { seconds }), moved(label));
  const advanceTo = (to, label) => act(() => api("POST", "/_sandbox/clock/advance", { to }), moved(label));
  const render = async () => {
    await Promise.all([renderClock(), renderFaults(), renderSnapshots()]);
  };
  const renderClock = async () => {
    try {
      const clock = await api("GET", "/_sandbox/clock");
      const mode = clock.mode === "frozen" ? "frozen: moves only when advanced"
        : `running${clock.offset_seconds ? `, ${span(clock.offset_seconds)} ahead of real time` : ", real time"}`;
      clockBox.replaceChildren(el("h2", { text: "Clock" }),
        el("p", {}, "Sandbox time: ", el("strong", { attrs: { "data-now": clock.now, "data-offset": clock.offset_seconds }, text: when(clock.now) }), ` (${mode})`),
        el("div", { class: "row" },
          el("button", { attrs: { type: "button" }, text: "+1 hour", on: { click: () => advance(3600, "one hour") } }),
          el("button", { attrs: { type: "button" }, text: "+1 day", on: { click: () => advance(86400, "one day") } }),
          el("button", { attrs: { type: "button" }, text: "+1 week", on: { click: () => advance(7 * 86400, "one week") } }),
          el("button", { attrs: { type: "button" }, text: "+1 month", on: { click: () => advanceTo(nextMonth(clock.now), "one month") } }),
          el("button", { attrs: { type: "button", "data-next-invoice": nextInvoice(clock.now) },
            text: `To the next invoice (${utcDay(new Date(nextInvoice(clock.now)))})`,
            on: { click: () => advanceTo(nextInvoice(clock.now), "to the next invoice") } })),
        el("p", { class: "muted", text: "Invoices are billed on the first of each month (UTC): \"To the next invoice\" moves to that instant, when the month's subscription is charged on a new invoice." }));
    } catch (e) {
      clockBox.replaceChildren(el("h2", { text: "Clock" }), problemBox(e));
    }
  };
  const renderFaults = async () => {
    try {
      const faults = await api("GET", "/_sandbox/faults");
      faultsBox.replaceChildren(el("h2", { text: "Faults" }),
        el("p", { class: "muted", text: "Make the REST API misbehave for every client, the console included (the screens' players keep playing):" }),
        el("div", { class: "row" },
          el("button", { attrs: { type: "button" }, text: "Outage: GET /devices answers 503",
            on: { click: () => act(() => api("POST", "/_sandbox/faults", OUTAGE), "Outage injected: the Fleet view now says the connection is lost. Remove the rule to end it.") } }),
          el("button", { attrs: { type: "button" }, text: "Rate-limit the next GET /devices (429, 5 s)",
            on: { click: () => act(() => api("POST", "/_sandbox/faults", RATE_LIMIT), "The next GET /devices answers 429 with Retry-After: 5.") } })),
        faults.data.length
          ? el("ul", { class: "faults" }, ...faults.data.map((f) => el("li", { attrs: { "data-fault-id": f.id } }, describeFault(f), " ",
            el("button", { attrs: { type: "button", "aria-label": `Remove fault ${f.id}` }, text: "Remove", on: { click: () => act(() => api("DELETE", `/_sandbox/faults/${f.id}`), "Fault removed.") } }))))
          : el("p", { class: "muted", text: "No fault rules." }));
    } catch (e) {
      faultsBox.replaceChildren(el("h2", { text: "Faults" }), problemBox(e));
    }
  };
  const renderSnapshots = async () => {
    try {
      const snaps = await api("GET", "/_sandbox/snapshots");
      const name = el("input", { attrs: { id: "snapshot-name", "aria-label": "Snapshot name", pattern: "[a-z0-9_\\-]{1,64}", value: "demo" } });
      snapBox.replaceChildren(el("h2", { text: "Snapshots" }),
        el("div", { class: "row" }, name,
          el("button", { attrs: { type: "button" }, text: "Save snapshot", on: { click: () => act(() => api("POST", "/_sandbox/snapshots", { name: name.value }), "Snapshot saved.") } })),
        el("ul", {}, ...snaps.data.map((s) => el("li", {}, `${s.name} (${when(s.taken_at || s.created_at)}) `,
          el("button", { attrs: { type: "button" }, text: "Restore", on: { click: () => act(() => api("POST", `/_sandbox/snapshots/${s.name}/restore`, {}), `Snapshot ${s.name} restored.`) } })))));
    } catch (e) {
      snapBox.replaceChildren(el("h2", { text: "Snapshots" }), problemBox(e));
    }
  };
  await render();
  fresh();
  // Live counts: the clock ticks and rules fire while the view is open (the snapshot form is left
  // alone, so a name being typed is not lost).
  every(3000, () => Promise.all([renderClock(), renderFaults()]));
}
