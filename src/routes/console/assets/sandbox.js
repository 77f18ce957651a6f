// The sandbox operator's controls (scope `sandbox`): the clock with +1 h and +1 day (on the running
// clock too: it moves ahead and keeps running), fault rules and snapshots.

import { api, el, when } from "./common.js";
import { page, problemBox } from "./ui.js";
import { fresh, showSandboxTime, span } from "./live.js";

export async function sandbox() {
  const clockBox = el("div", { class: "card" });
  const faultsBox = el("div", { class: "card" });
  const snapBox = el("div", { class: "card" });
  const status = el("p", { attrs: { role: "status" } });
  page("Sandbox", el("p", { class: "muted", text: "The sandbox operator's controls (scope sandbox)." }), status, clockBox, faultsBox, snapBox);
  const act = async (fn, done) => {
    try {
      const r = await fn();
      status.textContent = typeof done === "function" ? done(r) : done;
      await render();
      await showSandboxTime(true);
    } catch (e) {
      status.replaceChildren(problemBox(e));
    }
  };
  const advance = (seconds, label) => act(() => api("POST", "/_sandbox/clock/advance", { seconds }),
    (r) => `Advanced ${label}: now ${when(r.now)}; ${Object.values(r.events).reduce((a, b) => a + b, 0)} events on the way.`);
  const render = async () => {
    try {
      const clock = await api("GET", "/_sandbox/clock");
      const mode = clock.mode === "frozen" ? "frozen: moves only when advanced"
        : `running${clock.offset_seconds ? `, ${span(clock.offset_seconds)} ahead of real time` : ", real time"}`;
      clockBox.replaceChildren(el("h2", { text: "Clock" }),
        el("p", {}, "Sandbox time: ", el("strong", { attrs: { "data-now": clock.now, "data-offset": clock.offset_seconds }, text: when(clock.now) }), ` (${mode})`),
        el("div", { class: "row" },
          el("button", { attrs: { type: "button" }, text: "+1 hour", on: { click: () => advance(3600, "one hour") } }),
          el("button", { attrs: { type: "button" }, text: "+1 day", on: { click: () => advance(86400, "one day") } })));
    } catch (e) {
      clockBox.replaceChildren(el("h2", { text: "Clock" }), problemBox(e));
    }
    try {
      const faults = await api("GET", "/_sandbox/faults");
      faultsBox.replaceChildren(el("h2", { text: "Faults" }), faults.data.length
        ? el("ul", {}, ...faults.data.map((f) => el("li", {}, `${f.id}: ${JSON.stringify(f.match)} → ${JSON.stringify(f.action)} `,
          el("button", { attrs: { type: "button" }, text: "Remove", on: { click: () => act(() => api("DELETE", `/_sandbox/faults/${f.id}`), "Fault removed.") } }))))
        : el("p", { class: "muted", text: "No fault rules." }));
    } catch (e) {
      faultsBox.replaceChildren(el("h2", { text: "Faults" }), problemBox(e));
    }
    try {
      const snaps = await api("GET", "/_sandbox/snapshots");
      const name = el("input", { attrs: { id: "snapshot-name", "aria-label": "Snapshot name", pattern: "[a-z0-9_-]{1,64}", value: "demo" } });
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
}
