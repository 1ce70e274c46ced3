"""The Grafana dashboard: valid JSON whose every query names only metrics guard exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from guard.observe.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "guard-monitor.json"


def _exported() -> set[str]:
    m = Metrics()
    m.observe({"event": "claim", "entity": "order", "field": "id", "status": "confirmed", "latency_ms": 1.0})
    m.observe(
        {
            "event": "decision",
            "action": "refuse",
            "findings": ["S201"],
            "prose_per_slot": 2.0,
            "latency_ms": 2,
            "stage_ms": {"shape": 1.0},
        }
    )
    m.observe_lint_cache(True)
    return {s.name for family in text_string_to_metric_families(m.expose().decode()) for s in family.samples}


def test_every_query_references_an_exported_metric() -> None:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    exported = _exported()
    used = {name for e in exprs for name in re.findall(r"\bguard_[a-z_]+", e)}
    assert used and used <= exported, used - exported
    for family in (
        "guard_claims_total",
        "guard_decisions_total",
        "guard_decision_latency_seconds_bucket",
        "guard_stage_latency_seconds_bucket",
    ):
        assert family in used


def test_the_panels_cover_the_monitor() -> None:
    doc = json.loads(DASHBOARD.read_text())
    titles = " ".join(p["title"].lower() for p in doc["panels"])
    for words in ("contradicted", "not-found", "refusal", "latency", "prose"):
        assert words in titles
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    assert all(p["datasource"]["uid"] == "${datasource}" for p in doc["panels"])
