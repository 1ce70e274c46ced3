// The playground: lint what is typed (after a short pause), then classify its sentences; show findings with
// carets, the nearest approved wording and the classifier's evidence. Offsets from the server count Unicode
// code points (Python's str), so text is split with Array.from, never indexed as UTF-16.
"use strict";

(() => {
  const { el, keyField, api, loadDomains, status } = guardUI;
  const $ = (id) => document.getElementById(id);
  const input = $("input");
  const slots = $("slots");
  const domain = $("domain");
  const statusLine = $("status");
  const findingsBox = $("findings");
  const sentencesBox = $("sentences");
  const PAUSE_MS = 250;
  let timer = 0;
  let seq = 0;
  let inflight = null;

  /** The template and slot types: from a pasted payload (JSON with answer_template), else the text itself. */
  function readInput() {
    const text = input.value;
    const trimmed = text.trim();
    if (trimmed.startsWith("{") && trimmed.endsWith("}")) {
      let data = null;
      try {
        data = JSON.parse(trimmed);
      } catch (_) {
        data = null; // a template that starts with a slot
      }
      if (data && typeof data === "object" && typeof data.answer_template === "string") {
        const types = {};
        for (const c of Array.isArray(data.claims) ? data.claims : []) {
          if (c && typeof c.key === "string" && typeof c.type === "string") types[c.key] = c.type;
        }
        return { mode: "payload", template: data.answer_template, types, bad: [] };
      }
    }
    const types = {};
    const bad = [];
    for (const part of slots.value.split(/[,\n]/)) {
      if (!part.trim()) continue;
      const m = /^\s*([^:\s]+)\s*:\s*([A-Za-z_]+)\s*$/.exec(part);
      if (m) types[m[1]] = m[2].toLowerCase();
      else bad.push(part.trim());
    }
    return { mode: "template", template: text, types, bad };
  }

  /** The line of ``cps`` (code points) holding ``start``, and a caret line under ``start``..``end``. */
  function caret(cps, start, end) {
    const at = Math.max(0, Math.min(start, cps.length));
    let ls = at;
    while (ls > 0 && cps[ls - 1] !== "\n") ls -= 1;
    let le = at;
    while (le < cps.length && cps[le] !== "\n") le += 1;
    const line = cps.slice(ls, le).join("").replace(/\t/g, " ");
    const width = Math.max(1, Math.min(end, le) - at);
    let lineNo = 1;
    for (let i = 0; i < ls; i += 1) if (cps[i] === "\n") lineNo += 1;
    return { line, marks: " ".repeat(at - ls) + "^".repeat(width), lineNo, column: at - ls + 1 };
  }

  function renderFinding(f, cps) {
    const where = caret(cps, f.start, f.end);
    const box = el(
      "div",
      { class: "finding", "data-code": f.code, "data-severity": f.severity },
      el(
        "p",
        { class: "head" },
        el("span", { class: "code" }, f.code),
        " ",
        el("span", { class: "severity" }, f.severity),
        " ",
        el("span", { class: "name" }, f.name),
        " ",
        el("span", { class: "where" }, "line " + where.lineNo + ", column " + where.column),
      ),
      el("p", { class: "message" }, f.message),
      el("pre", { class: "context" }, where.line + "\n" + where.marks),
    );
    const near = f.data && Array.isArray(f.data.nearest) ? f.data.nearest : [];
    if (near.length) {
      box.append(
        el("p", { class: "near-head" }, "Nearest approved wording:"),
        el("ul", { class: "nearest" }, ...near.map((n) => el("li", {}, String(n)))),
      );
    }
    return box;
  }

  /** The sentence with each run of characters that carries evidence in a <mark> naming its labels. */
  function marked(text, prediction) {
    const cps = Array.from(text);
    const labels = cps.map(() => []);
    for (const [label, spans] of Object.entries((prediction && prediction.spans) || {})) {
      for (const s of spans) {
        for (let i = Math.max(0, s.start); i < Math.min(s.end, cps.length); i += 1) labels[i].push(label);
      }
    }
    const out = el("p", { class: "text" });
    let i = 0;
    while (i < cps.length) {
      const key = labels[i].join(" ");
      let j = i + 1;
      while (j < cps.length && labels[j].join(" ") === key) j += 1;
      const piece = cps.slice(i, j).join("");
      out.append(key ? el("mark", { "data-labels": key, class: labels[i].map((l) => "l-" + l).join(" "), title: key }, piece) : piece);
      i = j;
    }
    return out;
  }

  function renderSentences(sentences, predictions, note) {
    sentencesBox.replaceChildren();
    if (note) sentencesBox.append(el("p", { class: "hint" }, note));
    sentences.forEach((s, n) => {
      const p = predictions ? predictions[n] : null;
      const labels = p ? p.labels.map((l) => el("span", { class: "label l-" + l }, l + " " + (p.scores[l] ?? 0).toFixed(2))) : [];
      sentencesBox.append(
        el(
          "div",
          { class: "sentence", "data-index": s.index },
          marked(s.text, p),
          el("p", { class: "shape" }, s.shape ? "approved shape: " + s.shape : "no approved shape", " ", ...labels),
        ),
      );
    });
  }

  async function lint() {
    const key = getKey();
    const { mode, template, types, bad } = readInput();
    if (!key) return status(statusLine, "Enter an API key to lint.", "error");
    if (!domain.value) return status(statusLine, "No domain: the key may use none, or the key is wrong.", "error");
    if (!template.trim()) {
      findingsBox.replaceChildren();
      sentencesBox.replaceChildren();
      return status(statusLine, "");
    }
    const mine = ++seq;
    if (inflight) inflight.abort();
    inflight = new AbortController();
    const signal = inflight.signal;
    status(statusLine, "Linting…");
    try {
      const result = await api(key, "/v1/lint", { body: { template, domain: domain.value, slot_types: types }, signal });
      if (mine !== seq) return;
      const cps = Array.from(template);
      findingsBox.replaceChildren(...result.findings.map((f) => renderFinding(f, cps)));
      if (!result.findings.length) findingsBox.append(el("p", { class: "ok" }, "No findings: every sentence is approved wording."));
      const summary = (mode === "payload" ? "Payload template: " : "Template: ") + result.findings.length + " finding(s)";
      status(statusLine, bad.length ? summary + "; ignored slot types: " + bad.join(", ") : summary, result.ok ? "" : "findings");
      let predictions = null;
      let note = "";
      const texts = result.sentences.map((s) => s.text);
      if (texts.length) {
        try {
          predictions = (await api(key, "/v1/classify", { body: { sentences: texts }, signal })).predictions;
        } catch (err) {
          if (err.name === "AbortError") return;
          note = err.status === 404 ? "This server has no classifier." : "Classifier: " + err.message;
        }
      }
      if (mine === seq) renderSentences(result.sentences, predictions, note);
    } catch (err) {
      if (err.name === "AbortError" || mine !== seq) return;
      status(statusLine, err.message, "error");
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(lint, PAUSE_MS);
  }

  async function domains() {
    const key = getKey();
    if (!key) return status(statusLine, "Enter an API key.", "error");
    try {
      await loadDomains(key, domain);
      status(statusLine, "");
      schedule();
    } catch (err) {
      domain.replaceChildren();
      status(statusLine, err.message, "error");
    }
  }

  const getKey = keyField($("key"), () => {
    clearTimeout(timer);
    timer = setTimeout(domains, PAUSE_MS);
  });
  input.addEventListener("input", schedule);
  slots.addEventListener("input", schedule);
  domain.addEventListener("change", schedule);
  domains();
})();
