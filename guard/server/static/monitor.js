// The monitor page: /v1/monitor over the server's own log, as tables. Text only through textContent.
"use strict";

(() => {
  const { el, table, keyField, api, loadDomains, status } = guardUI;
  const $ = (id) => document.getElementById(id);
  const statusLine = $("status");
  const domain = $("domain");
  const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%");
  const RESOLVED = ["confirmed", "contradicted", "not_found", "stale"];

  function render(report) {
    const alerts = report.alerts.map((a) => [
      a.window_start,
      a.kind,
      a.entity || a.field ? a.entity + "." + a.field : "prose per slot",
      a.status,
      a.message,
    ]);
    $("alerts").replaceChildren(
      alerts.length ? table(["Window", "Kind", "Subject", "Status", "Message"], alerts) : el("p", { class: "ok" }, "No alerts."),
    );
    const fields = report.fields.map((f) => [
      f.entity + "." + f.field,
      f.resolved,
      ...RESOLVED.map((s) => f.totals[s] + " (" + pct(f.rates[s]) + ")"),
      Object.values(f.totals).reduce((a, b) => a + b, 0) - f.resolved, // unavailable, not checkable, malformed
    ]);
    $("fields").replaceChildren(
      fields.length
        ? table(["Field", "Resolved", ...RESOLVED, "Other"], fields)
        : el("p", { class: "hint" }, "No claims in this domain's log yet."),
    );
    const actions = ["answer", "regenerate_from_facts", "refuse"];
    const decisions = report.decisions.map((d) => [d.start, ...actions.map((a) => d.actions[a] || 0)]);
    $("decisions").replaceChildren(
      decisions.length ? table(["Window", ...actions], decisions) : el("p", { class: "hint" }, "No decisions yet."),
    );
    const counters = [
      ["log lines read", report.read.lines],
      ["malformed lines", report.read.malformed],
      ...Object.entries(report.counters).map(([k, v]) => [k.replace(/_/g, " "), v]),
      ...Object.entries(report.findings).map(([k, v]) => ["finding " + k, v]),
    ];
    $("counters").replaceChildren(table(["What", "Count"], counters));
  }

  async function refresh() {
    const key = getKey();
    if (!key) return status(statusLine, "Enter an API key.", "error");
    status(statusLine, "Reading the log…");
    const query = new URLSearchParams({
      domain: domain.value,
      window: $("window").value,
      baseline: $("baseline").value || "24",
      min_count: $("min_count").value || "30",
    });
    try {
      const report = await api(key, "/v1/monitor?" + query.toString());
      render(report);
      status(statusLine, report.read.events + " events read; " + report.alerts.length + " alert(s).");
    } catch (err) {
      status(statusLine, err.message, "error");
    }
  }

  async function start() {
    const key = getKey();
    if (!key) return status(statusLine, "Enter an API key.", "error");
    try {
      await loadDomains(key, domain);
      await refresh();
    } catch (err) {
      domain.replaceChildren();
      status(statusLine, err.message, "error");
    }
  }

  let timer = 0;
  const getKey = keyField($("key"), () => {
    clearTimeout(timer);
    timer = setTimeout(start, 250);
  });
  $("refresh").addEventListener("click", refresh);
  for (const id of ["domain", "window"]) $(id).addEventListener("change", refresh);
  start();
})();
