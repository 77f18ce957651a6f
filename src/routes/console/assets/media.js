// A company's media library: the storage it takes against its quota (`GET /media/usage`), an upload
// by drag and drop or by picking files (`POST /media`, the raw bytes under their type, one
// Idempotency-Key per file), and each item: images, and video thumbnails (the first frame, playing
// on hover or focus).

import { all, api, blobUrl, bytes, el, plural } from "./common.js";
import { page, problemBox } from "./ui.js";
import { fresh } from "./live.js";

/** What the API accepts (`POST /media`), by the browser's type for the file. */
const TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml", "video/mp4"];
const MAX_BYTES = 5 * 1024 * 1024;

function storageLine(u) {
  const share = u.quota_bytes ? Math.min(100, (100 * u.used_bytes) / u.quota_bytes) : 0;
  const meter = el("div", { class: "meter", attrs: { role: "meter", "aria-label": "Media storage used", "aria-valuemin": 0, "aria-valuemax": u.quota_bytes, "aria-valuenow": u.used_bytes } },
    el("span", { class: "meter-fill" }));
  meter.firstChild.style.setProperty("width", `${share.toFixed(1)}%`);
  return el("div", { class: "card storage", attrs: { "data-used": u.used_bytes, "data-quota": u.quota_bytes } },
    el("p", {}, el("strong", { text: `Storage: ${bytes(u.used_bytes)} of ${bytes(u.quota_bytes)} used` }),
      ` · ${plural(u.media_count, "item")} · ${bytes(u.available_bytes)} left`),
    meter);
}

async function thumb(m) {
  let visual = el("div", { class: "muted placeholder", text: m.content_type });
  try {
    if (m.content_type.startsWith("image/")) {
      visual = el("img", { attrs: { src: await blobUrl(`/media/${m.id}/content`), alt: m.filename } });
    } else if (m.content_type.startsWith("video/")) {
      const v = el("video", { attrs: { src: await blobUrl(`/media/${m.id}/content`), muted: true, playsinline: true, preload: "auto", loop: true, tabindex: "0", "aria-label": `Video ${m.filename}` } });
      v.muted = true;
      for (const ev of ["mouseenter", "focus"]) v.addEventListener(ev, () => v.play().catch(() => {}));
      for (const ev of ["mouseleave", "blur"]) v.addEventListener(ev, () => v.pause());
      visual = el("div", { class: "video-thumb" }, v, el("span", { class: "play-mark", attrs: { "aria-hidden": "true" }, text: "▶" }));
    }
  } catch (_) {
    /* keep the placeholder */
  }
  const size = m.width && m.height ? ` · ${m.width}×${m.height}` : "";
  const extra = m.duration_ms ? ` · ${(m.duration_ms / 1000).toFixed(0)} s` : "";
  return el("figure", { attrs: { "data-media-id": m.id, "data-kind": m.content_type.split("/")[0] } }, visual,
    el("figcaption", {}, m.filename, el("br"), `${m.content_type} · ${bytes(m.size_bytes)}${size}${extra}`));
}

export async function media(companyId) {
  const usage = el("div");
  const grid = el("div", { class: "thumbs" });
  const status = el("div", { attrs: { "aria-live": "polite" } });
  const picker = el("input", { attrs: { type: "file", id: "media-files", multiple: true, accept: TYPES.join(",") } });
  const drop = el("div", { class: "drop", attrs: { "data-drop": "" } },
    el("p", {}, el("strong", { text: "Drop images or videos here" }), " or ",
      el("label", { class: "file-button", attrs: { for: "media-files" }, text: "choose files" }), picker),
    el("p", { class: "muted", text: "PNG, JPEG, GIF, WebP, SVG or MP4, up to 5 MB each; the library keeps them within the company's storage quota." }));
  page("Media", usage, drop, status, grid);

  const render = async () => {
    const [u, rows] = await Promise.all([api("GET", `/media/usage?company_id=${companyId}`), all(`/media?company_id=${companyId}`)]);
    usage.replaceChildren(storageLine(u));
    grid.replaceChildren(...await Promise.all(rows.map(thumb)));
    fresh();
  };

  const upload = async (files) => {
    const done = [];
    for (const file of files) {
      const type = file.type === "image/jpg" ? "image/jpeg" : file.type;
      const line = el("p", { class: "muted", text: `Uploading ${file.name}…` });
      status.append(line);
      if (!TYPES.includes(type)) {
        line.replaceWith(el("p", { class: "problem", attrs: { role: "alert" }, text: `${file.name}: a ${type || "file of unknown type"} cannot be shown on a screen. Use PNG, JPEG, GIF, WebP, SVG or MP4.` }));
        continue;
      }
      if (file.size > MAX_BYTES) {
        line.replaceWith(el("p", { class: "problem", attrs: { role: "alert" }, text: `${file.name} is ${bytes(file.size)}: uploads are at most 5 MB.` }));
        continue;
      }
      try {
        const made = await api("POST", `/media?company_id=${companyId}&filename=${encodeURIComponent(file.name)}`, undefined,
          { raw: file, headers: { "Content-Type": type } });
        line.replaceWith(el("p", { class: "done", attrs: { role: "status", "data-uploaded": made.id }, text: `${made.filename} uploaded (${bytes(made.size_bytes)}).` }));
        done.push(made);
      } catch (e) {
        line.replaceWith(problemBox(e));
      }
    }
    if (done.length) await render();
  };

  picker.addEventListener("change", () => upload([...picker.files]).finally(() => { picker.value = ""; }));
  for (const ev of ["dragenter", "dragover"]) {
    drop.addEventListener(ev, (e) => { e.preventDefault(); drop.classList.add("over"); });
  }
  for (const ev of ["dragleave", "drop"]) drop.addEventListener(ev, () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    upload([...e.dataTransfer.files]);
  });
  await render();
}
