// The console's page furniture, shared by its views: the view area, problem boxes, dialogs, links,
// scrollable tables and the notices above the view.

import { Problem, el, words } from "./common.js";

export const $ = (id) => document.getElementById(id);

/** What went wrong, in words: the problem's detail, each invalid field by its label, and what to
 * do. The status and code follow in small print for whoever reports it. */
export function problemBox(e, labels = {}) {
  const p = e instanceof Problem ? e : new Problem(0, { title: "Error", detail: String(e) });
  const hint =
    p.status === 401 ? " Sign in again with a valid credential."
      : p.status === 403 ? " This credential lacks the scope for this."
        : p.status === 404 ? " It does not exist, or this credential may not see it."
          : p.status === 412 ? " Someone changed it meanwhile: reload and try again."
            : p.status === 0 ? " Check that the sandbox is running." : "";
  const fields = (p.body.errors || []).map((f) => {
    const name = labels[f.field] || f.field.replace(/^\//, "").replace(/_/g, " ") || "The request";
    return el("li", {}, el("strong", { text: `${name}: ` }), words(f.message));
  });
  const detail = fields.length ? "Some fields need another look." : words(p.body.detail || p.message);
  const small = [p.status || null, p.body.code || null].filter(Boolean).join(" · ");
  return el("div", { class: "problem", attrs: { role: "alert" } },
    el("p", { text: `${detail}${hint}` }),
    fields.length ? el("ul", {}, ...fields) : null,
    small ? el("p", { class: "problem-code", text: small }) : null);
}

/** Marks the inputs a 422 names (`/field` pointers) invalid, with the message under each. */
export function markFields(form, e) {
  for (const old of form.querySelectorAll(".field-error")) old.remove();
  for (const input of form.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
  const errors = (e && e.body && e.body.errors) || [];
  for (const f of errors) {
    const input = form.querySelector(`[name="${CSS.escape(f.field.replace(/^\//, "").split("/")[0])}"]`);
    if (!input) continue;
    const id = `${input.id || input.name}-error`;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
    input.after(el("span", { class: "field-error", attrs: { id }, text: words(f.message) }));
  }
}

/** A labelled form field: `<label>` then the control (an element), with an optional hint. */
export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintId = hint ? `${id}-hint` : null;
  if (hintId) control.setAttribute("aria-describedby", hintId);
  return el("div", { class: "field" },
    el("label", { attrs: { for: id }, text: label }), control,
    hint ? el("span", { class: "hint", attrs: { id: hintId }, text: hint }) : null);
}

export function page(title, ...children) {
  const view = $("view");
  view.replaceChildren(el("h1", { text: title }), ...children);
  view.hidden = false;
  document.title = `${title} · signage console`;
}

export function link(href, text) {
  return el("a", { attrs: { href }, text });
}

/** A table that scrolls sideways inside its own box on a narrow screen, not the whole page. */
export function scroller(table, label) {
  return el("div", { class: "table-wrap", attrs: { role: "region", "aria-label": label, tabindex: "0" } }, table);
}

/** A modal dialog; resolves true when confirmed. `ok` null shows a single Close button. */
export function dialog(title, body, ok) {
  const d = $("dialog");
  $("dialog-title").textContent = title;
  $("dialog-body").replaceChildren(body);
  $("dialog-ok").hidden = ok === null;
  $("dialog-ok").textContent = ok || "Confirm";
  $("dialog-cancel").textContent = ok === null ? "Close" : "Cancel";
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

/** A notice above the view (`id` names it, so the same notice is replaced, not repeated). */
export function notice(id, kind, ...content) {
  let box = document.getElementById(id);
  if (!box) {
    box = el("p", { class: `notice ${kind}`, attrs: { id, role: kind === "bad" ? "alert" : "status" } });
    $("notices").append(box);
  }
  box.className = `notice ${kind}`;
  box.replaceChildren(...content);
  box.hidden = false;
}

export function clearNotice(id) {
  const box = document.getElementById(id);
  if (box) box.remove();
}

export function hhmm(date) {
  return date.toISOString().slice(11, 16);
}
