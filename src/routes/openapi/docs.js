// The signage API reference: renders /openapi.json with DOM calls and text nodes only, and a
// "try it" form per operation that sends the request with the credential kept in sessionStorage.
"use strict";

const store = window.sessionStorage;
const KEYS = ["key", "client", "jwt"];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function resolve(doc, schema, depth) {
  if (!schema || depth > 20) return schema;
  if (schema.$ref) {
    const target = schema.$ref.replace(/^#\//, "").split("/").reduce((o, k) => (o ? o[k] : undefined), doc);
    return resolve(doc, target, depth + 1);
  }
  return schema;
}

function refName(schema) {
  return schema && schema.$ref ? schema.$ref.split("/").pop() : null;
}

function json(v) {
  return JSON.stringify(v, null, 2);
}

function credentialHeaders() {
  const h = {};
  const key = store.getItem("key");
  const client = store.getItem("client");
  const jwt = store.getItem("jwt");
  if (key) {
    h["X-API-KEY"] = key;
    if (client) h["X-Service-Client-Id"] = client;
  } else if (jwt) {
    h["Authorization"] = "Bearer " + jwt;
  }
  return h;
}

function setupCredential() {
  const form = document.getElementById("credential");
  const state = document.getElementById("credential-state");
  const show = () => {
    state.textContent = store.getItem("key") || store.getItem("jwt") ? "credential set for this tab" : "no credential";
  };
  for (const k of KEYS) document.getElementById(k).value = store.getItem(k) || "";
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const k of KEYS) {
      const v = document.getElementById(k).value.trim();
      if (v) store.setItem(k, v);
      else store.removeItem(k);
    }
    show();
  });
  document.getElementById("forget").addEventListener("click", () => {
    for (const k of KEYS) {
      store.removeItem(k);
      document.getElementById(k).value = "";
    }
    show();
  });
  show();
}

function schemaBlock(doc, schema) {
  const name = refName(schema);
  const wrap = el("div", { class: "schema" });
  if (name) wrap.append(el("p", {}, "Schema: ", el("a", { href: "#schema-" + name }, name)));
  const resolved = resolve(doc, schema, 0);
  if (resolved && resolved.example !== undefined) wrap.append(el("pre", {}, json(resolved.example)));
  return wrap;
}

function tryIt(doc, path, method, op) {
  const form = el("form", { class: "try" });
  const inputs = [];
  for (const p of op.parameters || []) {
    if (p.in !== "path" && p.in !== "query") continue;
    const input = el("input", { name: p.name, placeholder: p.example !== undefined ? String(p.example) : "" });
    if (p.example !== undefined && p.in === "path") input.value = String(p.example);
    inputs.push([p, input]);
    form.append(el("label", {}, `${p.name} (${p.in})`, input));
  }
  let body = null;
  const json_body = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
  if (json_body) {
    body = el("textarea", { rows: "6" });
    const ex = json_body.example;
    body.value = ex !== undefined ? json(ex) : "{}";
    form.append(el("label", {}, "JSON body", body));
  }
  const out = el("pre", { class: "answer" });
  form.append(el("button", { type: "submit" }, `Send ${method.toUpperCase()}`), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    for (const [p, input] of inputs) {
      const v = input.value.trim();
      if (p.in === "path") url = url.replace("{" + p.name + "}", encodeURIComponent(v));
      else if (v) query.set(p.name, v);
    }
    const qs = query.toString();
    if (qs) url += "?" + qs;
    const headers = credentialHeaders();
    const init = { method: method.toUpperCase(), headers };
    if (body) {
      headers["Content-Type"] = "application/json";
      init.body = body.value;
    }
    out.textContent = "…";
    try {
      const r = await fetch(url, init);
      const type = r.headers.get("content-type") || "";
      const text = type.includes("json") ? json(await r.json()) : `(${type}, ${(await r.blob()).size} bytes)`;
      const etag = r.headers.get("etag");
      out.textContent = `${r.status} ${r.statusText}${etag ? "\nETag: " + etag : ""}\n\n${text}`;
    } catch (e) {
      out.textContent = String(e);
    }
  });
  return el("details", {}, el("summary", {}, "Try it"), form);
}

function operation(doc, path, method, op) {
  const id = "op-" + op.operationId;
  const sec = el("section", { class: "operation", id });
  sec.append(el("h3", {}, el("span", { class: "method " + method }, method.toUpperCase()), " ", el("code", {}, path)));
  sec.append(el("p", { class: "summary" }, op.summary || ""));
  if (op.description) sec.append(el("p", { class: "description" }, op.description));
  const params = (op.parameters || []).map((p) =>
    el("li", {}, el("code", {}, p.name), ` (${p.in}${p.required ? ", required" : ""}) `, p.description || "",
      p.example !== undefined ? el("span", { class: "example" }, " e.g. " + String(p.example)) : null));
  if (params.length) sec.append(el("h4", {}, "Parameters"), el("ul", {}, ...params));
  if (op.requestBody) {
    sec.append(el("h4", {}, "Request body"));
    for (const [type, media] of Object.entries(op.requestBody.content || {})) {
      sec.append(el("p", {}, el("code", {}, type)), schemaBlock(doc, media.schema));
      if (media.example !== undefined) sec.append(el("pre", {}, json(media.example)));
    }
  }
  sec.append(el("h4", {}, "Responses"));
  const list = el("ul", {});
  for (const [status, resp] of Object.entries(op.responses || {})) {
    const item = el("li", {}, el("strong", {}, status), " ", resp.description || "");
    for (const [type, media] of Object.entries(resp.content || {})) {
      if (status.startsWith("2")) {
        item.append(el("div", {}, el("code", {}, type)), schemaBlock(doc, media.schema));
        if (media.example !== undefined) item.append(el("pre", {}, json(media.example)));
      }
    }
    list.append(item);
  }
  sec.append(list, tryIt(doc, path, method, op));
  return sec;
}

function render(doc) {
  const main = document.getElementById("reference");
  const toc = document.getElementById("toc");
  main.textContent = "";
  main.append(el("h2", {}, doc.info.title + " " + doc.info.version), el("p", { class: "description" }, doc.info.description || ""));
  const byTag = new Map((doc.tags || []).map((t) => [t.name, { tag: t, ops: [] }]));
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags || ["other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, { tag: { name: tag }, ops: [] });
      byTag.get(tag).ops.push([path, method, op]);
    }
  }
  for (const { tag, ops } of byTag.values()) {
    if (!ops.length) continue;
    toc.append(el("a", { href: "#tag-" + tag.name }, tag.name));
    const sec = el("section", { class: "tag", id: "tag-" + tag.name }, el("h2", {}, tag.name));
    if (tag.description) sec.append(el("p", {}, tag.description));
    for (const [path, method, op] of ops) sec.append(operation(doc, path, method, op));
    main.append(sec);
  }
  toc.append(el("a", { href: "#schemas" }, "schemas"));
  const schemas = el("section", { id: "schemas" }, el("h2", {}, "Schemas"));
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    const s = el("section", { class: "schema-def", id: "schema-" + name }, el("h3", {}, name));
    if (schema.description) s.append(el("p", {}, schema.description));
    s.append(el("pre", {}, json(schema)));
    schemas.append(s);
  }
  main.append(schemas);
}

async function start() {
  setupCredential();
  try {
    const r = await fetch("/openapi.json");
    render(await r.json());
  } catch (e) {
    document.getElementById("reference").textContent = "Could not load /openapi.json: " + e;
  }
}

start();
