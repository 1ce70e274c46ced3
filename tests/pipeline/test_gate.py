"""The gate end to end: enforcement per stage, logging, metrics, and bulk audit on every backend."""

from __future__ import annotations

import copy

import pytest
import sqlalchemy as sa

from guard import demo
from guard.decision import Action
from guard.errors import ConfigError, PayloadError
from guard.observe.events import EventLog, read_events
from guard.observe.metrics import Metrics
from guard.pipeline import Guard, load_gate_config

NO_MODEL = {"format": "enforce", "shape": "enforce", "freetext": "off", "ratio": "enforce"}


def cfg(**stages):
    return {"domains": {"orders": {"stages": {**NO_MODEL, **stages}}}}


@pytest.fixture()
def gate(sqlite_demo):
    url, policy, store = sqlite_demo
    return Guard(policy, store, domain="orders", config=cfg())


def prose(extra: str) -> dict:
    p = copy.deepcopy(demo.payloads()["answer"])
    p["answer_template"] += " " + extra
    return p


def count_statements(engine, fn):
    seen = []
    listener = lambda *a: seen.append(a[2])  # noqa: E731
    sa.event.listen(engine, "before_cursor_execute", listener)
    try:
        result = fn()
    finally:
        sa.event.remove(engine, "before_cursor_execute", listener)
    return result, seen


def test_clean_payload_is_answered_with_no_findings(gate):
    d = gate.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER and d.findings == ()


def test_enforced_shape_failure_refuses_before_any_lookup(gate):
    p = prose("This was quicker than usual.")
    d, statements = count_statements(gate.store.engine, lambda: gate.run(p, principal=demo.PRINCIPAL, now=demo.NOW))
    assert d.action is Action.REFUSE and statements == []
    assert d.results == ()
    assert "sentence 3 is not worded in a way I am allowed to use" in d.message
    assert "quicker" not in d.message  # the refusal never repeats the model's words
    assert {f.code for f in d.findings} == {"S201"}


def test_report_mode_keeps_findings_but_answers(sqlite_demo):
    url, policy, store = sqlite_demo
    g = Guard(policy, store, domain="orders", config=cfg(shape="report"))
    d = g.run(prose("This was quicker than usual."), principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER
    assert [f.code for f in d.findings] == ["S201"]
    assert "findings" in d.to_dict()


def test_ratio_enforced(sqlite_demo):
    url, policy, store = sqlite_demo
    g = Guard(policy, store, domain="orders", config=cfg(shape="off"))
    long = (
        "We really appreciate you shopping with us and hope that everything about your purchase and our "
        "service has been exactly what you hoped it would be."
    )
    d = g.run(prose(long), principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE
    assert {f.code for f in d.findings} == {"R401", "R402"}


def test_format_stage_cannot_be_turned_off(sqlite_demo):
    with pytest.raises(ConfigError, match="cannot be turned off"):
        Guard(sqlite_demo[1], sqlite_demo[2], domain="orders", config=cfg(format="off"))


def test_bad_gate_config_is_a_config_error(tmp_path):
    f = tmp_path / "g.yaml"
    f.write_text("domains: {orders: {stages: {shape: sometimes}}}")
    with pytest.raises(ConfigError) as err:
        load_gate_config(f)
    assert "domains.orders.stages.shape" in str(err.value)


def test_invalid_payload_is_a_payload_error(gate):
    with pytest.raises(PayloadError):
        gate.run('{"answer_template": "{a:>99999999}", "claims": []}')


def test_log_and_metrics_one_line_per_result(sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    metrics = Metrics()
    path = tmp_path / "guard.jsonl"
    g = Guard(policy, store, domain="orders", config=cfg(shape="report"), log=EventLog(path), metrics=metrics)
    for name in ("answer", "refuse", "regenerate"):
        g.run(demo.payloads()[name], principal=demo.PRINCIPAL, now=demo.NOW)
    g.log.close()
    events = list(read_events([path]))
    claims = [e for e in events if e["event"] == "claim"]
    decisions = [e for e in events if e["event"] == "decision"]
    assert len(claims) == 4 + 2 + 3 and len(decisions) == 3
    assert all("claimed" not in e and "actual" not in e for e in claims)  # no values unless opted in
    assert {e["action"] for e in decisions} == {"answer", "refuse", "regenerate_from_facts"}
    assert all(e["ts"] and e["request_id"] and e["latency_ms"] >= 0 for e in claims)
    assert decisions[0]["prose_per_slot"] == pytest.approx(13 / 4)
    assert metrics.value("guard_claims_total", entity="order", field="estimated_delivery", status="stale") == 1
    assert metrics.value("guard_decisions_total", action="answer") == 1
    assert metrics.value("guard_claims_total", entity="order", field="total_minor", status="contradicted") == 1


def test_values_logged_only_when_opted_in(sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    path = tmp_path / "v.jsonl"
    g = Guard(policy, store, domain="orders", config=cfg(), log=EventLog(path, include_values=True))
    g.run(demo.payloads()["regenerate"], principal=demo.PRINCIPAL, now=demo.NOW)
    g.log.close()
    claim = next(e for e in read_events([path]) if e["event"] == "claim" and e["key"] == "total")
    assert claim["claimed"] == "£1,199.00" and claim["actual"] == 129900
