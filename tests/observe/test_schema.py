"""Every producer's events match the one schema: Guard.run, verify, simulate, and lines read back from a log."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard import demo
from guard.errors import EventLogError
from guard.observe.events import EventLog, read_events
from guard.observe.schema import EVENTS, SCHEMA_VERSION, json_schema, validate
from guard.observe.simulate import START, Jump, ProseDrift, simulate_events
from guard.pipeline import Guard, verify

_VALIDATOR = jsonschema.Draft202012Validator(json_schema())


def _check(events):
    kinds = set()
    for e in events:
        validate(e)
        _VALIDATOR.validate(json.loads(json.dumps(e)))
        assert e["schema_version"] == SCHEMA_VERSION
        kinds.add(e["event"])
    return kinds


@pytest.mark.parametrize("log_payloads", [False, True])
@pytest.mark.parametrize("include_values", [False, True])
def test_guard_run_events_match_the_schema(sqlite_demo, tmp_path, log_payloads, include_values):
    url, policy, store = sqlite_demo
    path = tmp_path / "g.jsonl"
    with EventLog(path, include_values=include_values) as log:
        gate = Guard(policy, store, domain="orders", log=log, log_payloads=log_payloads)
        for _name, payload in demo.payloads().items():
            gate.run(payload, principal=demo.PRINCIPAL, now=demo.NOW)
        gate.run({"answer_template": "Your order was quicker than usual.", "claims": []})
    events = list(read_events([path]))
    kinds = _check(events)
    assert kinds == ({"payload", "claim", "decision"} if log_payloads else {"claim", "decision"})
    assert all(("claimed" in e) is include_values for e in events if e["event"] == "claim")
    assert all(e["ts"] for e in events)


def test_verify_events_match_the_schema_and_carry_what_the_monitor_reads(sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    path = tmp_path / "v.jsonl"
    with EventLog(path) as log:
        for payload in demo.payloads().values():
            verify(payload, policy, store, principal=demo.PRINCIPAL, now=demo.NOW, log=log, domain="orders")
    events = list(read_events([path]))
    assert _check(events) == {"claim", "decision"}
    decisions = [e for e in events if e["event"] == "decision"]
    assert all({"n_slots", "prose_words", "prose_per_slot", "latency_ms"} <= set(e) for e in decisions)


def test_guard_and_verify_write_the_same_claim_and_decision_fields(sqlite_demo, tmp_path):
    url, policy, store = sqlite_demo
    payload = demo.payloads()["answer"]
    with EventLog(tmp_path / "a.jsonl") as a, EventLog(tmp_path / "b.jsonl") as b:
        Guard(policy, store, domain="orders", log=a).run(
            payload, principal=demo.PRINCIPAL, now=demo.NOW, request_id="r1"
        )
        verify(payload, policy, store, principal=demo.PRINCIPAL, now=demo.NOW, log=b, domain="orders", request_id="r1")
    volatile = {"ts", "latency_ms", "stage_ms"}  # stage_ms: times, and verify runs only the format stage
    for n in ("a.jsonl", "b.jsonl"):
        (decision,) = [e for e in read_events([tmp_path / n]) if e["event"] == "decision"]
        assert {"format", "check"} <= set(decision["stage_ms"])
    strip = [
        [{k: v for k, v in e.items() if k not in volatile} for e in read_events([tmp_path / n])]
        for n in ("a.jsonl", "b.jsonl")
    ]
    assert strip[0] == strip[1]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), hours=st.floats(0.05, 1), drift=st.booleans())
def test_simulated_events_match_the_schema(seed, hours, drift):
    jumps = [Jump("order", "total", "contradicted", 0.3, START)]
    events = list(
        simulate_events(
            seed=seed, hours=hours, requests_per_hour=60, jumps=jumps, drift=ProseDrift(START) if drift else None
        )
    )
    assert _check(events) <= {"claim", "decision"}


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"event": "claim"}, "schema_version"),
        ({"event": "nope", "schema_version": SCHEMA_VERSION}, "event"),
        (
            {
                "event": "decision",
                "schema_version": SCHEMA_VERSION,
                "request_id": "r",
                "domain": None,
                "action": "answer",
                "n_claims": "3",
                "n_slots": 1,
                "prose_words": 2,
                "prose_per_slot": 2.0,
                "findings": [],
                "latency_ms": 1.0,
            },
            "n_claims",
        ),
        (
            {
                "event": "payload",
                "schema_version": SCHEMA_VERSION,
                "request_id": "r",
                "domain": None,
                "principal": None,
                "payload": {},
                "surprise": 1,
            },
            "payload",
        ),
    ],
)
def test_invalid_events_are_rejected_with_where(bad, where):
    with pytest.raises(EventLogError) as err:
        validate(bad)
    assert err.value.location == where


def test_schema_names_each_event_kind():
    schema = json.dumps(json_schema())
    assert all(kind in schema for kind in EVENTS)


@given(
    st.one_of(st.floats(), st.integers(min_value=-(10**400), max_value=10**400), st.booleans(), st.text(), st.none())
)
def test_finite_accepts_exactly_the_real_json_numbers(value):
    import math

    from guard.observe.schema import finite

    expected = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (isinstance(value, float) and math.isfinite(value) or isinstance(value, int) and abs(value) < 2**1024)
    )
    assert finite(value) is expected


def test_the_readers_count_what_the_producers_write(sqlite_demo, tmp_path):
    """Monitor and metrics, reading through the schema, count every claim and decision Guard.run logged."""
    from guard.observe.metrics import Metrics
    from guard.observe.monitor import Monitor, MonitorConfig

    url, policy, store = sqlite_demo
    path = tmp_path / "g.jsonl"
    with EventLog(path) as log:
        gate = Guard(policy, store, domain="orders", log=log, log_payloads=True)
        for _name, payload in demo.payloads().items():
            gate.run(payload, principal=demo.PRINCIPAL, now=demo.NOW)
    events = list(read_events(path))
    claims = sum(e["event"] == "claim" for e in events)
    decisions = sum(e["event"] == "decision" for e in events)
    assert claims and decisions
    monitor = Monitor(MonitorConfig(min_count=1)).add_all(events)
    assert monitor.counters["claims"] == claims
    assert monitor.counters["decisions"] == decisions
    assert monitor.counters["ignored"] == len(events) - claims - decisions
    metrics = Metrics()
    assert sum(map(metrics.observe, events)) == claims + decisions


def test_read_events_takes_one_path_as_well_as_several(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"event": "claim", "n": 1}\n', encoding="utf-8")
    assert list(read_events(path)) == list(read_events([path])) == list(read_events(str(path)))
    assert len(list(read_events(str(path)))) == 1
