// The console's page furniture, shared by its views: the view area, problem boxes, dialogs, links,
// scrollable tables and the notices above the view.

import { Problem, el } from "./common.js";

export const $ = (id) => document.getElementById(id);

export function problemBox(e) {
  const p = e instanceof Problem ? e : new Problem(0, { title: "Error", detail: String(e) });
  const code = p.body.code ? ` (${p.body.code})` : "";
  const hint =
    p.status === 401 ? " Sign in again with a valid credential."
      : p.status === 403 ? " This credential lacks the scope for this view."
        : p.status === 404 ? " It does not exist, or this credential may not see it." : "";
  return el("p", { class: "problem", attrs: { role: "alert" } },
    `${p.status ? `${p.status} ` : ""}${p.message}${code}.${hint}`);
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
