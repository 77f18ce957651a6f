// Charts as inline SVG, drawn here from API answers (no library, nothing inline for the CSP to
// refuse: shapes and text are elements, colours come from console.css classes). Each chart is drawn
// at the pixel width it gets, so its 12 px labels stay 12 px on a phone. Every chart is a figure
// with a caption and an accessible summary; `data-chart` names it and `data-points` counts what it
// drew (the browser test checks both).

import { el, svg } from "./common.js";

const FONT = 12;

/** The width a chart gets inside the view (or `within`), in CSS pixels. */
export function chartWidth(within) {
  const box = within || document.getElementById("view");
  const w = box && box.clientWidth ? box.clientWidth - 32 : 760;
  return Math.max(260, Math.min(w, 1220));
}

function figure(name, title, summary, node, points, legend) {
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", `${title}. ${summary}`);
  return el("figure", { class: "chart-box", attrs: { "data-chart": name, "data-points": points } },
    el("figcaption", { text: title }), node, legend || null,
    points ? null : el("p", { class: "muted", text: "No data in this range yet." }));
}

function legendOf(names) {
  return el("ul", { class: "legend" }, ...names.map((n, i) =>
    el("li", {}, el("span", { class: `key series-${i % 6}`, attrs: { "aria-hidden": "true" } }), n)));
}

/** Horizontal bars, one per row, the label above its bar (long names fit a phone): `rows` of
 * {label, value}, largest first. */
export function barList(name, title, rows, { unit = "", width } = {}) {
  const W = width || chartWidth();
  const sorted = [...rows].sort((a, b) => b.value - a.value);
  const max = Math.max(1, ...sorted.map((r) => r.value));
  const ROW = 36;
  const H = Math.max(ROW, sorted.length * ROW) + 4;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const valueRoom = 70;
  sorted.forEach((r, i) => {
    const y = i * ROW;
    const bw = Math.max(2, ((W - valueRoom) * r.value) / max);
    node.append(
      svg("text", { x: 0, y: y + FONT, class: "label" }, r.label),
      svg("rect", { x: 0, y: y + 17, width: bw.toFixed(1), height: 12, rx: 3, class: "bar series-0" }),
      svg("text", { x: (bw + 6).toFixed(1), y: y + 28, class: "value" }, `${r.value.toLocaleString("en")}${unit}`),
    );
  });
  const top = sorted[0];
  return figure(name, title, top ? `${sorted.length} bars; most: ${top.label} with ${top.value}${unit}` : "no data", node, sorted.filter((r) => r.value > 0).length);
}

/** Lines over days: `series` of {name, values: Map("YYYY-MM-DD" -> n)} across `days` (the dates,
 * oldest first), with a legend. */
export function dayLines(name, title, series, days, { width } = {}) {
  const W = width || chartWidth();
  const H = 200;
  const L = 34;
  const B = 22;
  const node = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const max = Math.max(1, ...series.flatMap((s) => days.map((d) => s.values.get(d) || 0)));
  const X = (i) => L + (days.length > 1 ? (i * (W - L - 8)) / (days.length - 1) : 0);
  const Y = (v) => H - B - (v * (H - B - 10)) / max;
  node.append(
    svg("line", { class: "axis", x1: L, y1: H - B, x2: W - 4, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: 8, x2: L, y2: H - B }),
    svg("text", { x: L - 4, y: Y(max) + 4, class: "tick end" }, String(max)),
    svg("text", { x: L - 4, y: H - B + 4, class: "tick end" }, "0"),
    svg("text", { x: L, y: H - 4, class: "tick" }, days[0] ? days[0].slice(5) : ""),
    svg("text", { x: W - 4, y: H - 4, class: "tick end" }, days.length ? days[days.length - 1].slice(5) : ""),
  );
  let points = 0;
  series.forEach((s, i) => {
    const pts = days.map((d, j) => `${X(j).toFixed(1)},${Y(s.values.get(d) || 0).toFixed(1)}`);
    points += days.filter((d) => s.values.get(d)).length;
    node.append(svg("polyline", { class: `line series-${i % 6}`, points: pts.join(" ") }));
  });
  const total = series.reduce((n, s) => n + [...s.values.values()].reduce((a, b) => a + b, 0), 0);
  return figure(name, title, `${series.length} series over ${days.length} days, ${total} in all`, node, points, legendOf(series.map((s) => s.name)));
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
    el("li", {}, el("span", { class: `key part ${p.cls}`, attrs: { "aria-hidden": "true" } }), `${p.label}: ${p.value}`)));
  return figure(name, title, parts.map((p) => `${p.label} ${p.value}`).join(", "), node, total, legend);
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
