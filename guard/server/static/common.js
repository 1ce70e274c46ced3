// Shared by the playground pages: the API key, calls to the API, and building elements from text.
// Every string from the server or the user is set as textContent (or a text node), never parsed as markup.
"use strict";

const guardUI = (() => {
  const KEY = "guard.key";
  const DOMAIN = "guard.domain";

  /** An element with attributes and children; string children become text nodes. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "text") node.textContent = String(value);
      else node.setAttribute(name, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  /** A table from header labels and rows of cells (strings, numbers or elements). */
  function table(headers, rows) {
    const head = el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", { scope: "col" }, h))));
    const body = el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c)))));
    return el("table", {}, head, body);
  }

  /** The key typed into the page, kept for this tab only (sessionStorage), shared by both pages. */
  function keyField(input, onChange) {
    input.value = sessionStorage.getItem(KEY) || "";
    input.addEventListener("input", () => {
      sessionStorage.setItem(KEY, input.value.trim());
      onChange();
    });
    return () => input.value.trim();
  }

  class ApiError extends Error {
    constructor(status, body) {
      const detail = body && typeof body.detail === "string" ? body.detail : "the server answered " + status;
      const reasons = body && Array.isArray(body.problems) ? body.problems.map((p) => p.message).filter(Boolean) : [];
      super(reasons.length ? detail + ": " + reasons.join("; ") : detail);
      this.status = status;
      this.code = body && body.code;
    }
  }

  /** Call the API with the key as a bearer token; the parsed JSON, or an ApiError carrying the problem. */
  async function api(key, path, options) {
    const opts = options || {};
    const headers = { Authorization: "Bearer " + key };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method: opts.method || (opts.body !== undefined ? "POST" : "GET"),
      headers,
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
      signal: opts.signal,
      credentials: "omit",
      cache: "no-store",
    });
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  /** Fill the domain list with the domains the key may use; keeps the last choice of this tab. */
  async function loadDomains(key, select) {
    const data = await api(key, "/v1/grammars");
    const wanted = sessionStorage.getItem(DOMAIN) || select.value;
    select.replaceChildren(...data.domains.map((d) => el("option", { value: d.domain }, d.domain)));
    if (data.domains.some((d) => d.domain === wanted)) select.value = wanted;
    if (!select.dataset.remembered) {
      select.dataset.remembered = "1";
      select.addEventListener("change", () => sessionStorage.setItem(DOMAIN, select.value));
    }
    return data.domains;
  }

  /** Show a message in the status line (kind: "" or "error"). */
  function status(node, text, kind) {
    node.textContent = text;
    node.dataset.kind = kind || "";
  }

  // the page's own link in the navigation (both pages share one header)
  for (const a of document.querySelectorAll("nav a")) {
    if (a.pathname === location.pathname) a.setAttribute("aria-current", "page");
  }

  return { el, table, keyField, api, ApiError, loadDomains, status };
})();
