"""Latency histograms by domain, fed by the events the gate logs."""

from __future__ import annotations

import json
import subprocess

import pytest

from guard import demo
from guard.observe.metrics import LATENCY_BUCKETS, Metrics
from tests.observe.test_prometheus_rules import PROMTOOL, needs_promtool


def test_decision_and_claim_latency_by_domain() -> None:
    m = Metrics()
    m.observe({"event": "decision", "action": "answer", "domain": "orders", "latency_ms": 3.0})
    m.observe({"event": "decision", "action": "refuse", "domain": "billing", "latency_ms": 700.0})
    m.observe(
        {
            "event": "claim",
            "entity": "order",
            "field": "id",
            "status": "confirmed",
            "domain": "orders",
            "latency_ms": 0.4,
        }
    )
    m.observe({"event": "decision", "action": "answer", "domain": "orders", "latency_ms": float("nan")})
    m.observe({"event": "decision", "action": "answer", "domain": "orders", "latency_ms": -1})
    m.observe({"event": "decision", "action": "answer", "domain": "orders"})
    assert m.value("guard_decision_latency_seconds_count", domain="orders") == 1
    assert m.value("guard_decision_latency_seconds_sum", domain="orders") == pytest.approx(0.003)
    assert m.value("guard_decision_latency_seconds_bucket", domain="orders", le="0.005") == 1
    assert m.value("guard_decision_latency_seconds_bucket", domain="billing", le="0.5") == 0
    assert m.value("guard_decision_latency_seconds_bucket", domain="billing", le="1.0") == 1
    assert m.value("guard_claim_latency_seconds_bucket", domain="orders", le="0.0005") == 1
    assert m.value("guard_decisions_total", action="answer") == 4  # a bad latency still counts the decision
    assert list(LATENCY_BUCKETS) == sorted(LATENCY_BUCKETS)


def test_the_gate_reports_its_latency(sqlite_demo) -> None:
    from guard.pipeline import Guard

    url, policy, _ = sqlite_demo
    m = Metrics()
    with Guard(policy, url, domain="orders", metrics=m) as gate:
        d = gate.run(json.dumps(demo.payloads()["answer"]), principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action.value == "answer"
    assert m.value("guard_decision_latency_seconds_count", domain="orders") == 1
    assert m.value("guard_claim_latency_seconds_count", domain="orders") == len(d.results)
    assert b'guard_decision_latency_seconds_bucket{domain="orders",le="+Inf"} 1.0' in m.expose()


@needs_promtool
def test_promtool_accepts_the_metric_names_and_help() -> None:
    m = Metrics()
    m.observe(
        {
            "event": "claim",
            "entity": "order",
            "field": "id",
            "status": "confirmed",
            "domain": "orders",
            "latency_ms": 0.4,
        }
    )
    m.observe(
        {
            "event": "decision",
            "action": "answer",
            "domain": "orders",
            "latency_ms": 3.0,
            "findings": ["S201"],
            "prose_per_slot": 2.0,
        }
    )
    m.observe_lint_cache(False)
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "check", "metrics"], input=m.expose(), capture_output=True, timeout=120)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done
