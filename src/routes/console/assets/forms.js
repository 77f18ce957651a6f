// The console's authoring forms, built on the same REST calls any client makes: every create is a
// POST with an Idempotency-Key (common.js), every change a PATCH with the ETag it was read at in
// If-Match; a refusal is shown in words, and the fields it names are marked.

import { api, el, sandboxNow } from "./common.js";
import { field, markFields, problemBox } from "./ui.js";

// Date and time inputs are in the company's time zone (common.js `inputValueOf`, `rfc3339Of`).
export { inputValueOf, rfc3339Of } from "./common.js";

export function input(name, attrs = {}) {
  return el("input", { attrs: { name, ...attrs } });
}

/** A date and time written the way the console writes times ("2026-12-07 10:00", 24-hour), in the
 * time zone its label names. A browser's own picker would show it in the browser's locale
 * ("12/07/2026, 10:00 AM") beside times written ISO-like everywhere else. */
export function dateTimeInput(name, attrs = {}) {
  return input(name, {
    type: "text", pattern: "\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}", placeholder: "YYYY-MM-DD HH:MM",
    title: "Year-month-day and 24-hour time, e.g. 2026-12-07 10:00", autocomplete: "off", spellcheck: "false", size: 16,
    "data-format": "YYYY-MM-DD HH:MM", ...attrs,
  });
}

/** A calendar day written as the console writes days ("2026-12-07"), for the same reason. */
export function dateInput(name, attrs = {}) {
  return input(name, {
    type: "text", pattern: "\\d{4}-\\d{2}-\\d{2}", placeholder: "YYYY-MM-DD", title: "Year-month-day, e.g. 2026-12-07",
    autocomplete: "off", spellcheck: "false", size: 10, "data-format": "YYYY-MM-DD", ...attrs,
  });
}

export function select(name, options, value) {
  const s = el("select", { attrs: { name } }, ...options.map(([v, t]) => el("option", { attrs: { value: v }, text: t })));
  if (value !== undefined) s.value = value;
  return s;
}

/** A card holding a form: `fields` (elements), a submit button, a Cancel button and a place for
 * the answer. `submit(form)` returns what to say on success; a rejection is shown in words.
 * Resolves the form element (the caller inserts it). */
export function formCard({ title, fields, submitText, submit, onCancel, labels = {} }) {
  const answer = el("div", { attrs: { "aria-live": "polite" } });
  const button = el("button", { class: "primary", attrs: { type: "submit" }, text: submitText });
  const form = el("form", { class: "card form-card", attrs: { novalidate: true } },
    el("h2", { text: title }), ...fields, answer,
    el("div", { class: "row" }, button,
      onCancel ? el("button", { attrs: { type: "button" }, text: "Cancel", on: { click: onCancel } }) : null));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!form.reportValidity()) return;
    button.disabled = true;
    answer.replaceChildren(el("p", { class: "muted", text: "Saving…" }));
    try {
      const said = await submit(form);
      markFields(form, null);
      answer.replaceChildren(el("p", { class: "done", attrs: { role: "status" }, text: said || "Saved." }));
    } catch (e) {
      markFields(form, e);
      answer.replaceChildren(problemBox(e, labels));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** The value of a form control by name ("" when absent). */
export function valueOf(form, name) {
  const c = form.elements.namedItem(name);
  return c ? c.value.trim() : "";
}

/** The new-screen form of a company: `POST /devices`. */
export function screenForm(companyId, done, onCancel) {
  return formCard({
    title: "Register a screen",
    submitText: "Register screen",
    onCancel,
    labels: { "/name": "Name", "/location": "Location", "/platform": "Platform", "/resolution": "Resolution" },
    fields: [
      field("Name", input("name", { required: true, maxlength: 100, placeholder: "Entrance Screen 4" })),
      field("Location", input("location", { maxlength: 200, placeholder: "Utrecht store, entrance" })),
      field("Platform", select("platform", ["android", "tizen", "webos", "brightsign", "windows", "linux"].map((p) => [p, p]), "linux")),
      field("Orientation", select("orientation", [["landscape", "Landscape"], ["portrait", "Portrait"]])),
      field("Resolution", input("resolution", { value: "1920x1080", pattern: "[1-9][0-9]{1,4}x[1-9][0-9]{1,4}" }), "Width x height in pixels."),
    ],
    submit: async (form) => {
      const body = { company_id: companyId, name: valueOf(form, "name"), platform: valueOf(form, "platform"),
        orientation: valueOf(form, "orientation"), resolution: valueOf(form, "resolution") };
      if (valueOf(form, "location")) body.location = valueOf(form, "location");
      const made = await api("POST", "/devices", body);
      await done(made);
      return `${made.name} is registered. Open its player from its tile to make this browser that screen.`;
    },
  });
}

/** Today at the next whole hour, and `days` later, in sandbox time. */
export function defaultWindow(days) {
  const start = new Date(Math.ceil(sandboxNow().getTime() / 3600000) * 3600000 - 3600000);
  return [start, new Date(start.getTime() + days * 86400000)];
}
