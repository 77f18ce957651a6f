// Charts as inline SVG, drawn here from API answers (no library, nothing inline for the CSP to
// refuse: shapes and text are elements, colours come from console.css classes). Each chart is drawn
// at the pixel width it gets, so its 12 px labels stay 12 px on a phone. Every chart is a figure
// with a caption, labelled axes and an accessible summary; `data-chart` names it and `data-points`
// counts what it drew (the browser test checks both).
//
// Colours are stable: a series keeps its colour on every chart and every refresh, because it is
// chosen from the series' key (a promotion's id, a charge's kind), never from its place in a list.

import { el, num, sandboxNow, svg } from "./common.js";

const FONT = 12;
/** Distinct, accessible series colours (console.css `.series-N`). */
export const PALETTE_SIZE = 8;

/** The width a chart gets inside the view (or `within`), in CSS pixels. */
export function chartWidth(within) {
  const box = within || document.getElementById("view");
  const w = box && box.clientWidth ? box.clientWidth - 32 : 760;
  return Math.max(260, Math.min(w, 1220));
}

/** Colour indices for keys: each key's position among all the keys sorted, so adding a later key
 * (ids sort by creation) never moves an earlier one's colour. */
export function colours(keys) {
  const sorted = [...new Set(keys)].sort();
  return new Map(sorted.map((k, i) => [k, i % PALETTE_SIZE]));
}

function figure(name, title, summary, node, points, legend) {
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", `${title}. ${summary}`);
  return el("figure", { class: "chart-box", attrs: { "data-chart": name, "data-points": points } },
    el("figcaption", { text: title }), node, legend || null,
    points ? null : el("p", { class: "muted", text: "No data in this range yet." }));
}

function legendOf(items) {
  return el("ul", { class: "legend" }, ...items.map(({ name, colour }) =>
    el("li", {}, el("span", { class: `key series-${colour}`, attrs: { "aria-hidden": "true" } }), name)));
}

/** A round step for an axis from 0 to `max`: 1, 2 or 5 times a power of ten, about 4 steps. */
function step(max) {
  const raw = Math.max(1, max) / 4;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}

/** Y ticks, grid lines and the axis titles of a plot area. */
function axes(node, { L, T, W, H, B, max, yTitle, xTitle, format = num }) {
  const s = step(max);
  const top = Math.ceil(Math.max(1, max) / s) * s;
  const Y = (v) => H - B - (v * (H - B - T)) / top;
  for (let v = 0; v <= top; v += s) {
    node.append(
      svg("line", { class: v ? "grid" : "axis", x1: L, y1: Y(v), x2: W - 4, y2: Y(v) }),
      svg("text", { x: L - 6, y: Y(v) + 4, class: "tick end" }, format(v)));
  }
  node.append(
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
    svg("text", { x: 12, y: (T + H - B) / 2, class: "axis-title", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, yTitle),
    svg("text", { x: (L + W) / 2, y: H - 4, class: "axis-title middle" }, xTitle));
  return Y;
}

/** Horizontal bars, one per row, the label above its bar (long names fit a phone): `rows` of
 * {label, value}, largest first; `unit` names what is counted (the axis). */
export function barList(name, title, rows, { unit = "", width, axis = "Plays" } = {}) {
  const W = width || chartWidth();
  const sorted = [...rows].sort((a, b) => b.value - a.value);
  const max = Math.max(1, ...sorted.map((r) => r.value));
  const ROW = 36;
  const H = Math.max(ROW, sorted.length * ROW) + 26;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const valueRoom = 80;
  sorted.forEach((r, i) => {
    const y = i * ROW;
    const bw = Math.max(2, ((W - valueRoom) * r.value) / max);
    node.append(
      svg("text", { x: 0, y: y + FONT, class: "label" }, r.label),
      svg("rect", { x: 0, y: y + 17, width: bw.toFixed(1), height: 12, rx: 3, class: `bar series-${r.colour ?? 0}` }),
      svg("text", { x: (bw + 6).toFixed(1), y: y + 28, class: "value" }, `${num(r.value)}${unit}`),
    );
  });
  node.append(svg("text", { x: 0, y: H - 6, class: "axis-title" }, `${axis} (bar length)`));
  const top = sorted[0];
  return figure(name, title, top ? `${sorted.length} bars; most: ${top.label} with ${num(top.value)}${unit}` : "no data", node, sorted.filter((r) => r.value > 0).length);
}

/** Date labels along an x axis: the first, last and a few between (never crowded). */
function dateTicks(node, days, X, y, width) {
  const room = Math.max(2, Math.floor(width / 90));
  const every = Math.max(1, Math.ceil((days.length - 1) / (room - 1)));
  days.forEach((d, i) => {
    if (i % every === 0 || i === days.length - 1) {
      if (i !== days.length - 1 && days.length - 1 - i < every / 2) return;
      const cls = i === 0 ? "tick" : i === days.length - 1 ? "tick end" : "tick middle";
      node.append(svg("text", { x: X(i).toFixed(1), y, class: cls }, d.slice(5)));
    }
  });
}

/** Lines over days: `series` of {name, key, values: Map("YYYY-MM-DD" -> n)} across `days` (the
 * dates, oldest first), coloured by key (`colourOf`), with a legend and labelled axes. When the
 * last day is today (UTC, sandbox time) it is not over yet: its segment is dashed and its point
 * hollow, and a note says so, so a partial day does not read as a fall. */
export function dayLines(name, title, series, days, { width, yTitle = "Count", colourOf } = {}) {
  const partial = days.length > 0 && days[days.length - 1] === sandboxNow().toISOString().slice(0, 10);
  const W = width || chartWidth();
  const H = 230;
  const L = 74;
  const B = 42;
  const T = 10;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const max = Math.max(1, ...series.flatMap((s) => days.map((d) => s.values.get(d) || 0)));
  const X = (i) => L + (days.length > 1 ? (i * (W - L - 12)) / (days.length - 1) : 0);
  const Y = axes(node, { L, T, W, H, B, max, yTitle, xTitle: "Date (UTC)" });
  dateTicks(node, days, X, H - B + 16, W - L);
  const colour = colourOf || colours(series.map((s) => s.key || s.name));
  let points = 0;
  const open = partial && days.length > 1;
  series.forEach((s) => {
    const c = colour.get(s.key || s.name) ?? 0;
    const pts = days.map((d, j) => `${X(j).toFixed(1)},${Y(s.values.get(d) || 0).toFixed(1)}`);
    points += days.filter((d) => s.values.get(d)).length;
    if (!open) {
      node.append(svg("polyline", { class: `line series-${c}`, points: pts.join(" ") }));
      return;
    }
    const last = days.length - 1;
    node.append(
      svg("polyline", { class: `line series-${c}`, points: pts.slice(0, last).join(" ") }),
      svg("polyline", { class: `line series-${c} partial`, points: pts.slice(last - 1).join(" ") }),
      svg("circle", { class: `series-${c} partial`, cx: X(last).toFixed(1), cy: Y(s.values.get(days[last]) || 0).toFixed(1), r: 3.5 }));
  });
  const total = series.reduce((n, s) => n + [...s.values.values()].reduce((a, b) => a + b, 0), 0);
  const box = figure(name, title, `${series.length} series over ${days.length} days, ${num(total)} in all${open ? "; the last day is today so far" : ""}`, node, points,
    legendOf(series.map((s) => ({ name: s.name, colour: colour.get(s.key || s.name) ?? 0 }))));
  if (open) {
    box.dataset.partial = days[days.length - 1];
    box.append(el("p", { class: "muted chart-note", text: `Dashed: ${days[days.length - 1]} (today, UTC) so far; the day is not over.` }));
  }
  return box;
}

/** Columns over periods (days or months), each stacked from parts: `columns` of {label, parts:
 * Map(key -> value)}; `names` maps each key to its legend text. Colours by key. */
export function columns(name, title, cols, names, { width, yTitle = "Amount", xTitle = "Month", format = num, colourOf } = {}) {
  const W = width || chartWidth();
  const H = 230;
  const L = 78;
  const B = 42;
  const T = 10;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const totals = cols.map((c) => [...c.parts.values()].reduce((a, b) => a + b, 0));
  const max = Math.max(1, ...totals);
  const Y = axes(node, { L, T, W, H, B, max, yTitle, xTitle, format });
  const keys = [...names.keys()];
  const colour = colourOf || colours(keys);
  const slot = (W - L - 12) / Math.max(1, cols.length);
  const bw = Math.min(48, slot * 0.6);
  cols.forEach((c, i) => {
    let y = Y(0);
    const x = L + slot * i + (slot - bw) / 2;
    for (const k of keys) {
      const v = c.parts.get(k) || 0;
      if (v <= 0) continue;
      const h = Y(0) - Y(v);
      y -= h;
      node.append(svg("rect", { x: x.toFixed(1), y: y.toFixed(1), width: bw.toFixed(1), height: h.toFixed(1), class: `bar series-${colour.get(k) ?? 0}` }));
    }
    // A narrow column (a phone) takes the short label, so neighbours never run together.
    node.append(svg("text", { x: (x + bw / 2).toFixed(1), y: H - B + 16, class: "tick middle" }, slot < 60 && c.short ? c.short : c.label));
  });
  const legend = legendOf(keys.map((k) => ({ name: names.get(k), colour: colour.get(k) ?? 0 })));
  const summary = cols.map((c, i) => `${c.label}: ${format(totals[i])}`).join(", ");
  return figure(name, title, summary || "no data", node, totals.filter((t) => t > 0).length, legend);
}

/** One bar split into parts ({label, value, cls}), with counts in the legend. */
export function stack(name, title, parts, { width } = {}) {
  const W = width || chartWidth();
  const H = 30;
  const total = parts.reduce((n, p) => n + p.value, 0);
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  let x = 0;
  for (const p of parts) {
    const w = total ? (W * p.value) / total : 0;
    if (w > 0) node.append(svg("rect", { x: x.toFixed(1), y: 2, width: w.toFixed(1), height: H - 4, class: `part ${p.cls}` }));
    x += w;
  }
  const legend = el("ul", { class: "legend" }, ...parts.map((p) =>
    el("li", {}, el("span", { class: `key part ${p.cls}`, attrs: { "aria-hidden": "true" } }), `${p.label}: ${num(p.value)}`)));
  return figure(name, title, parts.map((p) => `${p.label} ${num(p.value)}`).join(", "), node, total, legend);
}

/** A small line of `values` (oldest first), for a tile. */
export function sparkline(values, label) {
  const W = 120;
  const H = 26;
  const max = Math.max(1, ...values);
  const X = (i) => (values.length > 1 ? (i * (W - 4)) / (values.length - 1) : 0) + 2;
  const Y = (v) => H - 3 - (v * (H - 6)) / max;
  const node = svg("svg", { class: "spark", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": label, "data-chart": "sparkline", "data-points": values.filter((v) => v > 0).length });
  node.append(svg("polyline", { class: "line series-0", points: values.map((v, i) => `${X(i).toFixed(1)},${Y(v).toFixed(1)}`).join(" ") }));
  return node;
}

/** The last `n` UTC dates ("YYYY-MM-DD") up to `now`, oldest first. */
export function lastDays(now, n) {
  const out = [];
  for (let i = n - 1; i >= 0; i--) out.push(new Date(now.getTime() - i * 86400000).toISOString().slice(0, 10));
  return out;
}
