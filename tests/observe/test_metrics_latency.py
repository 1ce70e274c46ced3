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


def test_stage_latency_by_domain_and_stage() -> None:
    m = Metrics()
    stage_ms = {"format": 0.2, "shape": 40.0, "check": 1.5, "made-up": 1.0, "ratio": -1, "freetext": float("inf")}
    m.observe({"event": "decision", "action": "answer", "domain": "orders", "latency_ms": 42.0, "stage_ms": stage_ms})
    m.observe({"event": "decision", "action": "answer", "domain": "orders", "latency_ms": 1.0, "stage_ms": "shape"})
    assert m.value("guard_stage_latency_seconds_count", domain="orders", stage="shape") == 1
    assert m.value("guard_stage_latency_seconds_sum", domain="orders", stage="shape") == pytest.approx(0.04)
    assert m.value("guard_stage_latency_seconds_bucket", domain="orders", stage="format", le="0.0005") == 1
    assert m.value("guard_stage_latency_seconds_count", domain="orders", stage="check") == 1
    for ignored in ("made-up", "ratio", "freetext"):  # not a stage, negative, infinite: no series
        assert m.value("guard_stage_latency_seconds_count", domain="orders", stage=ignored) == 0
    assert b'stage="made-up"' not in m.expose()


def test_the_gate_reports_its_latency(sqlite_demo, tmp_path) -> None:
    from guard.pipeline import Guard

    url, policy, _ = sqlite_demo
    m = Metrics()
    log = tmp_path / "events.jsonl"
    with Guard(policy, url, domain="orders", metrics=m, log=log) as gate:
        d = gate.run(json.dumps(demo.payloads()["answer"]), principal=demo.PRINCIPAL, now=demo.NOW)
        again = gate.run(json.dumps(demo.payloads()["answer"]), principal=demo.PRINCIPAL, now=demo.NOW)
        stages = [name for name, _ in gate.stages]
    assert d.action.value == again.action.value == "answer"
    assert m.value("guard_decision_latency_seconds_count", domain="orders") == 2
    assert m.value("guard_claim_latency_seconds_count", domain="orders") == len(d.results) * 2
    assert b'guard_decision_latency_seconds_bucket{domain="orders",le="+Inf"} 2.0' in m.expose()
    # the lint stages ran once (the second run was a lint-cache hit); the check ran twice
    assert "shape" in stages
    for name in stages:
        assert m.value("guard_stage_latency_seconds_count", domain="orders", stage=name) == 1, name
    assert m.value("guard_stage_latency_seconds_count", domain="orders", stage="check") == 2
    decisions = [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "decision"]
    first, second = (e["stage_ms"] for e in decisions)
    assert set(first) == {*stages, "check"} and set(second) == {"check"}
    assert all(v >= 0 for v in (*first.values(), *second.values()))
    assert sum(first.values()) <= decisions[0]["latency_ms"]


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
            "stage_ms": {"format": 0.1, "shape": 2.0, "check": 0.5},
        }
    )
    m.observe_lint_cache(False)
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "check", "metrics"], input=m.expose(), capture_output=True, timeout=120)
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), done
