"""The gate's log and metrics feed the monitor: the event schema is the contract between them."""

from __future__ import annotations

from pathlib import Path

from guard import demo
from guard.observe.events import EventLog
from guard.observe.metrics import Metrics
from guard.observe.monitor import MonitorConfig, monitor_logs
from guard.pipeline import Guard

# Lint stages that need a model or a grammar are off: this test is about what the gate logs.
CONFIG = {"default": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "report"}}}


def test_events_logged_by_the_gate_are_counted_alike_by_the_monitor_and_metrics(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'records.db'}"
    demo.build(url, n_orders=200, n_customers=60)
    log_path = tmp_path / "guard.log"
    metrics = Metrics()
    payloads = demo.payloads()
    log = EventLog(log_path, max_bytes=4_000)
    with Guard(demo.policy(), url, domain="orders", config=CONFIG, log=log, metrics=metrics) as gate:
        actions = [
            gate.run(payloads[name], principal=demo.PRINCIPAL, now=demo.NOW).action.value
            for name in ["answer", "refuse", "regenerate"] * 5
        ]
    assert set(actions) == {"answer", "refuse", "regenerate_from_facts"}

    report = monitor_logs([str(log_path)], MonitorConfig(min_count=1))
    assert len(report.read["files"]) > 1  # the small max_bytes rotated the log
    assert report.counters["decisions"] == 15 and report.read["malformed"] == 0
    decided: dict[str, int] = {}
    for per_window in report.decisions.values():
        for action, n in per_window.items():
            decided[action] = decided.get(action, 0) + n
    assert decided == {a: actions.count(a) for a in set(actions)}
    assert all(metrics.value("guard_decisions_total", action=a) == n for a, n in decided.items())

    claims = 0
    for series in report.fields:
        for status in ("confirmed", "contradicted", "not_found", "stale", "unavailable", "not_checkable"):
            counted = sum(series.count(w, status) for w in report.windows)
            claims += counted
            assert (
                metrics.value("guard_claims_total", entity=series.entity, field=series.field, status=status) == counted
            ), (series.name, status)
    assert claims == report.counters["claims"] > 0
    contradicted = {s.name for s in report.fields if any(s.count(w, "contradicted") for w in report.windows)}
    assert contradicted == {"order.total_minor"}  # the demo's wrong total
    assert metrics.value("guard_prose_per_slot_count") == sum(sum(b) for b in report.prose.values()) > 0
