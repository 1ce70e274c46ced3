"""A gate without a log counts its decisions from their fields (``Metrics.observe_decision``); the reference is the
events it would log, fed to ``observe_many``. Both must leave every series with the same value."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import Action
from guard.findings import Finding
from guard.linting.ratio import measure
from guard.linting.runner import STAGE_MS
from guard.observe.metrics import Metrics
from guard.pipeline import Guard, _events
from guard.records.status import Status

GATE_CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('direct') / 'records.db'}"
    demo.build(url, n_orders=50, n_customers=20)
    g = Guard(demo.policy(), url, domain="orders", config=GATE_CONFIG)
    yield g
    g.close()


@pytest.fixture(autouse=True)
def _one_process(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("prometheus_multiproc_dir", raising=False)


def series(m: Metrics) -> dict:
    """Every sample but the creation times (which differ between any two registries)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in m.registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    }


def both(gate: Guard, decision, payload, lint, latency_ms: float, domain: str | None) -> tuple[dict, dict]:
    """The series after the reference (events through ``_count``) and after the direct path, from fresh meters."""
    gate.domain = domain
    reference, direct = Metrics(), Metrics()
    gate.metrics = reference
    events = _events(
        decision,
        payload,
        lint,
        domain=domain,
        principal=None,
        latency_ms=latency_ms,
        log_payload=False,
        include_values=False,
    )
    gate._count(events)
    gate.metrics = direct
    assert gate._count_directly(decision, payload, lint, latency_ms)
    gate.metrics, gate.domain = None, "orders"
    return series(reference), series(direct)


def parts(gate: Guard, kind: str):
    from guard.linting import shapes as shape_stage
    from guard.payload import load_payload

    p = load_payload(json.dumps(demo.payloads()[kind]), gate.limits)
    lint = shape_stage.bind(gate.lint_template(p.answer_template, {c.key: c.type.value for c in p.claims}, p), p.claims)
    decision = gate.run(json.dumps(demo.payloads()[kind]), demo.PRINCIPAL, now=demo.NOW)
    return decision, p, lint


@pytest.mark.parametrize("kind", ["answer", "refuse", "regenerate"])
@pytest.mark.parametrize("domain", ["orders", None])
def test_the_gates_own_decisions_count_alike(gate, kind, domain):
    decision, p, lint = parts(gate, kind)
    reference, direct = both(gate, decision, p, lint, 1.25, domain)
    assert reference == direct
    assert any(name == "guard_claims_total" and value for (name, _l), value in direct.items())


TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=6)
TIMES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 5000))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    domain=st.one_of(st.none(), st.sampled_from(["orders", "account"]), TEXT),
    action=st.sampled_from(list(Action)),
    codes=st.lists(st.one_of(st.sampled_from(["S201", "T302", "R401"]), TEXT), max_size=4),
    latency=TIMES,
    stages=st.dictionaries(st.one_of(st.sampled_from(["shapes", "format", "check"]), TEXT), TIMES, max_size=3),
    template=st.sampled_from(["Your order {order_id} shipped.", "Thank you for waiting.", "{a} {b}"]),
)
def test_any_decision_counts_alike(gate, data, domain, action, codes, latency, stages, template):
    decision, p, lint = parts(gate, "answer")
    policy = gate.policy
    entities = [*policy.entities, "nowhere"]
    results = []
    for r in decision.results:
        entity = data.draw(st.sampled_from(entities))
        fields = [*(policy.entities[entity].fields if entity in policy.entities else []), "nothing", r.field]
        results.append(
            r._replace(
                entity=entity,
                field=data.draw(st.sampled_from(fields)),
                status=data.draw(st.sampled_from(list(Status))),
                latency_ms=data.draw(TIMES),
            )
        )
    findings = tuple(Finding(code, "m") for code in codes)
    decision = dataclasses.replace(
        decision, action=action, results=tuple(results), findings=findings[:2], warnings=findings[2:]
    )
    measures = {"ratio": measure(template), STAGE_MS: stages} if data.draw(st.booleans()) else {}
    lint = dataclasses.replace(lint, measures=measures)
    p = p.model_copy(update={"answer_template": template})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an infinite latency's histogram sum
        reference, direct = both(gate, decision, p, lint, latency, domain)
    assert reference.keys() == direct.keys()
    for key, value in reference.items():
        assert value == direct[key] or (math.isnan(value) and math.isnan(direct[key])), key


def test_a_subclass_with_its_own_observe_is_fed_the_events(gate):
    seen = []

    class Own(Metrics):
        def observe(self, event):
            seen.append(event["event"])
            return super().observe(event)

    decision, p, lint = parts(gate, "answer")
    gate.metrics = Own()
    try:
        assert not gate._count_directly(decision, p, lint, 1.0)
        gate._account(decision, p, lint, None, 0.0)
    finally:
        gate.metrics = None
    assert seen == ["claim"] * len(decision.results) + ["decision"]


def test_a_run_without_a_log_counts_through_the_direct_path(gate, monkeypatch):
    calls = []
    monkeypatch.setattr(Metrics, "observe_many", lambda self, events: calls.append(events))
    gate.metrics = Metrics()
    try:
        gate.run(json.dumps(demo.payloads()["answer"]), demo.PRINCIPAL, now=demo.NOW)
        assert calls == []
        assert gate.metrics.value("guard_decisions_total", action="answer") == 1
    finally:
        gate.metrics = None
