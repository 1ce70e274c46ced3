"""Prometheus metrics: each event type moves the counters it should and nothing else."""

from __future__ import annotations

import urllib.request
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from guard.errors import GuardError
from guard.observe.metrics import PROSE_PER_SLOT_BUCKETS, Metrics


def claim(field: str, status: str) -> dict:
    return {"event": "claim", "entity": "order", "field": field, "status": status, "type": "date"}


def decision(action: str, findings: list[str], ratio: float | None) -> dict:
    return {"event": "decision", "action": action, "findings": findings, "prose_per_slot": ratio}


def test_claims_counted_per_entity_field_status() -> None:
    m = Metrics()
    for status in ["confirmed", "confirmed", "contradicted", "not_found"]:
        m.observe(claim("shipped_at", status))
    m.observe(claim("total", "confirmed"))
    assert m.value("guard_claims_total", entity="order", field="shipped_at", status="confirmed") == 2
    assert m.value("guard_claims_total", entity="order", field="shipped_at", status="contradicted") == 1
    assert m.value("guard_claims_total", entity="order", field="total", status="confirmed") == 1
    assert m.value("guard_claims_total", entity="order", field="total", status="contradicted") == 0


def test_decisions_findings_and_prose_histogram() -> None:
    m = Metrics()
    m.observe(decision("answer", [], 2.8))
    m.observe(decision("refuse", ["S201", "T302"], 12.0))
    m.observe(decision("refuse", ["S201"], None))  # no slots: no ratio to observe
    m.observe(decision("answer", [], float("inf")))
    assert m.value("guard_decisions_total", action="refuse") == 2
    assert m.value("guard_decisions_total", action="answer") == 2
    assert m.value("guard_lint_findings_total", code="S201") == 2
    assert m.value("guard_lint_findings_total", code="T302") == 1
    assert m.value("guard_prose_per_slot_count") == 2
    assert m.value("guard_prose_per_slot_sum") == pytest.approx(14.8)
    assert m.value("guard_prose_per_slot_bucket", le="3.0") == 1
    assert m.value("guard_prose_per_slot_bucket", le="+Inf") == 2


def test_unknown_events_are_ignored() -> None:
    m = Metrics()
    assert m.observe({"event": "heartbeat"}) is False
    assert b"guard_claims_total{" not in m.expose()


def test_registries_are_isolated_and_a_shared_one_is_refused_twice() -> None:
    a, b = Metrics(), Metrics()
    a.observe(claim("total", "confirmed"))
    assert b.value("guard_claims_total", entity="order", field="total", status="confirmed") == 0
    shared = CollectorRegistry()
    Metrics(shared)
    with pytest.raises(GuardError, match="cannot register"):
        Metrics(shared)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=200, allow_nan=False), max_size=40))
def test_histogram_buckets_are_cumulative_counts(values: list[float]) -> None:
    m = Metrics()
    for v in values:
        m.observe(decision("answer", [], v))
    for bound in PROSE_PER_SLOT_BUCKETS:
        assert m.value("guard_prose_per_slot_bucket", le=str(float(bound))) == sum(v <= bound for v in values)


def test_served_over_http() -> None:
    m = Metrics()
    m.observe(claim("shipped_at", "contradicted"))
    server, thread = m.serve(0, addr="127.0.0.1")
    try:
        port = server.server_port
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'guard_claims_total{entity="order",field="shipped_at",status="contradicted"} 1.0' in body
    assert "# TYPE guard_prose_per_slot histogram" in body


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["event", "entity", "field", "status", "action", "findings", "prose_per_slot"]),
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5) | st.lists(st.text(max_size=3)),
    )
)
def test_observe_survives_odd_events(event: dict) -> None:
    event.setdefault("event", "decision")
    Metrics().observe(event)


def _worker_counts(events: int) -> None:
    from guard.observe.metrics import Metrics

    m = Metrics()
    for i in range(events):
        m.observe(claim("shipped_at", "contradicted" if i % 10 == 0 else "confirmed"))
        m.observe(decision("answer", ["R401"], 3.0))


def test_worker_processes_add_up_in_multiprocess_mode(tmp_path, monkeypatch) -> None:
    import multiprocessing as mp

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    ctx = mp.get_context("spawn")  # a fresh interpreter reads the variable when it imports prometheus_client
    procs = [ctx.Process(target=_worker_counts, args=(n,)) for n in (30, 50, 70)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    body = Metrics().expose().decode()
    assert 'guard_claims_total{entity="order",field="shipped_at",status="confirmed"} 135.0' in body
    assert 'guard_claims_total{entity="order",field="shipped_at",status="contradicted"} 15.0' in body
    assert 'guard_decisions_total{action="answer"} 150.0' in body
    assert "guard_prose_per_slot_count 150.0" in body


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["answer", "refuse"]),
            st.floats(min_value=0, max_value=200, allow_nan=False),
            st.floats(min_value=0, max_value=10_000, allow_nan=False),
        ),
        max_size=40,
    )
)
def test_deferred_counts_equal_immediate_ones_once_flushed(events: list[tuple[str, float, float]]) -> None:
    now, held = Metrics(), Metrics(deferred=True)
    for m in (now, held):
        for action, ratio, ms in events:
            m.observe({**decision(action, ["S201"], ratio), "domain": "orders", "latency_ms": ms})
            m.observe({**claim("total", "confirmed"), "domain": "orders", "latency_ms": ms / 10})
    # before a flush prometheus_client's own values have none of the deferred counts
    assert held.registry.get_sample_value("guard_decisions_total", {"action": "answer"}) in (None, 0.0)
    assert held.registry.get_sample_value("guard_prose_per_slot_count") == 0.0
    held.flush()
    assert samples(held) == samples(now)
    held.flush()  # a second flush adds nothing
    assert samples(held) == samples(now)


def samples(m: Metrics) -> list[str]:
    """The exposition's lines less the series' creation times (the two sets were made moments apart)."""
    return [line for line in m.expose().decode().splitlines() if "_created" not in line]


def _deferred_worker_counts(events: int) -> None:
    from guard.observe.metrics import Metrics

    m = Metrics(deferred=True)
    for _ in range(events):
        m.observe(decision("answer", ["R401"], 3.0))
    m.flush()


def test_deferred_counts_of_worker_processes_add_up_once_flushed(tmp_path, monkeypatch) -> None:
    import multiprocessing as mp

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_deferred_worker_counts, args=(n,)) for n in (20, 45)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with warnings.catch_warnings():  # the pytest process may have made a Metrics in this mode before
        warnings.simplefilter("ignore", RuntimeWarning)
        body = Metrics().expose().decode()
    assert 'guard_decisions_total{action="answer"} 65.0' in body
    assert 'guard_lint_findings_total{code="R401"} 65.0' in body
    assert "guard_prose_per_slot_count 65.0" in body
    assert 'guard_prose_per_slot_bucket{le="3.0"} 65.0' in body


label_values = st.sampled_from(["order", "total", "confirmed", "orders", "", None, 1, 1.0, True])
latencies = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.none(), st.just("3"), st.just(True)
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(label_values, label_values, label_values, label_values, latencies), max_size=12),
    st.booleans(),
)
def test_claim_events_counted_by_observe_many_as_the_metric_names_say(events: list[tuple], deferred: bool) -> None:
    """observe_many's one-lookup path (string labels, a float latency) and the general one count alike: a claim per
    (entity, field, status) label, a latency point per domain label when the latency is a finite number >= 0."""
    m = Metrics(deferred=deferred)

    def label(v: object) -> str:
        return "" if v is None else str(v)

    lines = [
        {"event": "claim", "entity": e, "field": f, "status": s, "domain": d, "latency_ms": ms}
        for e, f, s, d, ms in events
    ]
    assert m.observe_many(lines) == len(lines)
    m.observe_many(lines)  # twice: the second time every meter is already made
    claims: dict[tuple[str, str, str], int] = {}
    points: dict[str, tuple[int, float]] = {}
    for e, f, s, d, ms in events:
        key = (label(e), label(f), label(s))
        claims[key] = claims.get(key, 0) + 2
        if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 <= ms < float("inf"):
            n, total = points.get(label(d), (0, 0.0))
            points[label(d)] = (n + 2, total + 2 * (ms / 1000))
    for (e, f, s), n in claims.items():
        assert m.value("guard_claims_total", entity=e, field=f, status=s) == n
    for d, (n, total) in points.items():
        assert m.value("guard_claim_latency_seconds_count", domain=d) == n
        assert m.value("guard_claim_latency_seconds_sum", domain=d) == pytest.approx(total)
    for d in {label(d) for *_, d, _ms in events} - set(points):
        assert m.value("guard_claim_latency_seconds_count", domain=d) == 0
