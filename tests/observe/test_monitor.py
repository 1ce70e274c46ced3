"""The monitor's statistics and decisions: what is flagged, what is not, and why."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from guard.errors import GuardError
from guard.observe.monitor import (
    PROSE_EDGES,
    Monitor,
    MonitorConfig,
    binned_mann_whitney,
    binned_quantile,
    parse_window,
    proportion_increase_test,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)


def claims(hour: int, field: str, n: int, bad: int, status: str = "contradicted", entity: str = "order"):
    """``n`` claim events in hour ``hour`` of which ``bad`` have ``status``, the rest confirmed."""
    for i in range(n):
        ts = (T0 + hour * HOUR + timedelta(seconds=i * 3600 / max(n, 1))).isoformat()
        yield {
            "ts": ts,
            "event": "claim",
            "entity": entity,
            "field": field,
            "status": status if i < bad else "confirmed",
            "domain": "orders",
        }


def decisions(hour: int, ratios):
    for i, r in enumerate(ratios):
        ts = (T0 + hour * HOUR + timedelta(seconds=i)).isoformat()
        yield {
            "ts": ts,
            "event": "decision",
            "action": "answer",
            "prose_per_slot": r,
            "n_slots": 2,
            "prose_words": r * 2,
            "findings": [],
        }


def run(events, **cfg) -> Monitor:
    return Monitor(MonitorConfig(**cfg)).add_all(events).report()


def steady_then(jump_bad: int, jump_n: int = 500, hours: int = 6):
    events = []
    for h in range(hours):
        events += claims(h, "shipped_at", 500, 10)  # 2 %
        events += claims(h, "total", 500, 10)
    events += claims(hours, "shipped_at", jump_n, jump_bad)
    events += claims(hours, "total", 500, 11)
    return events


def test_a_jump_from_2_to_20_percent_is_flagged_on_that_field_only() -> None:
    report = run(steady_then(100), baseline_windows=6)
    (alert,) = report.alerts
    assert (alert.entity, alert.field, alert.status, alert.kind) == ("order", "shipped_at", "contradicted", "rate_jump")
    assert alert.window_start == T0 + 6 * HOUR and alert.window_end == T0 + 7 * HOUR
    assert (alert.current_count, alert.current_n, alert.baseline_count, alert.baseline_n) == (100, 500, 60, 3000)
    assert alert.current == pytest.approx(0.2) and alert.baseline == pytest.approx(0.02)
    assert alert.test == "z" and alert.p_value < 1e-20
    assert "20.0% (100/500) against 2.0% (60/3000)" in alert.message


def test_one_of_two_is_not_news() -> None:
    events = steady_then(1, jump_n=2)
    assert run(events, baseline_windows=6).alerts == []


def test_the_minimum_count_is_what_holds_back_a_tiny_but_extreme_window() -> None:
    events = steady_then(3, jump_n=3)  # 3 of 3 contradicted after 2 %
    assert run(events, baseline_windows=6, min_count=30).alerts == []
    (alert,) = run(events, baseline_windows=6, min_count=1).alerts
    assert alert.test == "fisher" and alert.current_n == 3


def test_a_drop_is_not_an_alert() -> None:
    events = []
    for h in range(6):
        events += claims(h, "shipped_at", 500, 100)
    events += claims(6, "shipped_at", 500, 0)
    assert run(events, baseline_windows=6).alerts == []


def test_not_found_jumps_are_flagged_and_statuses_can_be_chosen() -> None:
    events = []
    for h in range(6):
        events += claims(h, "total", 400, 4, status="not_found")
    events += claims(6, "total", 400, 60, status="not_found")
    assert [a.status for a in run(events, baseline_windows=6).alerts] == ["not_found"]
    assert run(events, baseline_windows=6, watched=("contradicted",)).alerts == []


def test_unavailable_claims_do_not_count_as_resolved() -> None:
    events = list(claims(0, "total", 100, 10))
    events += claims(0, "total", 900, 900, status="unavailable")
    report = run(events)
    (series,) = report.fields
    assert series.resolved(report.windows[0]) == 100
    assert series.rate(report.windows[0], "contradicted") == pytest.approx(0.1)


def test_bonferroni_over_the_fields_of_a_window() -> None:
    # A moderate jump on one field among twenty: significant alone, not after correction.
    events = []
    for f in range(20):
        for h in range(4):
            events += claims(h, f"f{f}", 300, 15)  # 5 %
        events += claims(4, f"f{f}", 300, 27 if f == 0 else 15)  # 9 % on f0
    alone = run(events, baseline_windows=4, correction="none", alpha=0.01)
    assert [a.field for a in alone.alerts] == ["f0"]
    assert alone.alerts[0].p_value > 0.01 / 40
    assert run(events, baseline_windows=4, alpha=0.01).alerts == []


def test_fixed_baseline_is_not_tested_and_later_windows_are_compared_with_it() -> None:
    events = []
    for h in range(3):
        events += claims(h, "shipped_at", 400, 8)
    for h in range(3, 6):
        events += claims(h, "shipped_at", 400, 60)
    report = run(events, baseline_start=T0, baseline_end=T0 + 3 * HOUR)
    assert [a.window_start for a in report.alerts] == [T0 + h * HOUR for h in (3, 4, 5)]
    assert all(a.baseline_n == 1200 and a.baseline_count == 24 for a in report.alerts)
    # With a rolling baseline of one window the new level stops being news after the first hour.
    rolling = run(events, baseline_windows=1)
    assert [a.window_start for a in rolling.alerts] == [T0 + 3 * HOUR]


def test_fixed_baseline_for_prose_drift() -> None:
    rng = random.Random(9)
    events = []
    for h in range(6):
        events += decisions(h, [(1 if h < 3 else 2) * rng.gammavariate(4, 0.75) for _ in range(100)])
    report = run(events, baseline_start=T0, baseline_end=T0 + 3 * HOUR)
    assert [a.window_start for a in report.alerts] == [T0 + h * HOUR for h in (3, 4, 5)]
    assert {a.baseline_n for a in report.alerts} == {300}


def test_windows_follow_the_configured_length() -> None:
    events = list(claims(0, "total", 120, 0)) + list(claims(1, "total", 120, 0))
    assert len(run(events, window=timedelta(minutes=30)).windows) == 4
    assert len(run(events, window=timedelta(days=1)).windows) == 1


def test_slot_ratio_drift_is_flagged_and_a_tiny_shift_is_not() -> None:
    rng = random.Random(4)
    base = [decisions(h, [rng.gammavariate(4, 0.75) for _ in range(200)]) for h in range(4)]
    events = [e for gen in base for e in gen]
    drifted = events + list(decisions(4, [2 * rng.gammavariate(4, 0.75) for _ in range(200)]))
    (alert,) = run(drifted, baseline_windows=4).alerts
    assert alert.kind == "slot_ratio_drift" and alert.current > alert.baseline + 1
    nudged = events + list(decisions(4, [0.4 + rng.gammavariate(4, 0.75) for _ in range(200)]))
    assert run(nudged, baseline_windows=4, min_shift=1.0).alerts == []
    assert run(nudged, baseline_windows=4, min_shift=0.1).alerts  # the same shift is significant


def test_templates_without_slots_land_in_the_top_bin() -> None:
    m = Monitor()
    m.add(
        {
            "ts": T0.isoformat(),
            "event": "decision",
            "action": "refuse",
            "n_slots": 0,
            "prose_words": 30,
            "prose_per_slot": None,
            "findings": ["R402"],
        }
    )
    m.add({"ts": T0.isoformat(), "event": "decision", "action": "answer", "n_slots": 0, "prose_words": 0})
    report = m.report()
    (bins,) = report.prose.values()
    assert bins[-1] == 1 and sum(bins) == 1
    assert report.findings == {"R402": 1}


def test_events_without_time_other_domains_and_unknown_kinds_are_counted_not_used() -> None:
    m = Monitor(MonitorConfig(domain="orders"))
    m.add_all(
        [
            {"event": "claim", "entity": "o", "field": "f", "status": "confirmed", "domain": "orders"},
            {"ts": "yesterday", "event": "claim", "domain": "orders"},
            {
                "ts": T0.isoformat(),
                "event": "claim",
                "entity": "o",
                "field": "f",
                "status": "confirmed",
                "domain": "billing",
            },
            {"ts": T0.isoformat(), "event": "heartbeat"},
            {
                "ts": "2026-12-01T00:00:00",
                "event": "claim",
                "entity": "o",
                "field": "f",
                "status": "weird",
                "domain": "orders",
            },
        ]
    )
    r = m.report()
    assert r.counters == {
        "events": 5,
        "claims": 1,
        "decisions": 0,
        "ignored": 1,
        "untimed": 2,
        "other_domain": 1,
        "folded": 0,
    }
    (series,) = r.fields
    assert series.totals()[-1] == 1 and series.resolved(r.windows[0]) == 0


def test_report_json_and_text() -> None:
    report = run(steady_then(100), baseline_windows=6)
    data = json.loads(report.to_json())
    assert data["alerts"][0]["field"] == "shipped_at"
    assert data["alerts"][0]["window_start"] == (T0 + 6 * HOUR).isoformat()
    shipped = next(f for f in data["fields"] if f["field"] == "shipped_at")
    assert shipped["totals"]["contradicted"] == 160 and shipped["resolved"] == 3500
    assert len(shipped["windows"]) == 7
    text = report.to_text(width=160)
    assert "c 20.0%*" in text and "Alerts (1)" in text
    assert "c 2.2%*" not in text


@pytest.mark.parametrize(
    "bad",
    [
        {"baseline_windows": 0},
        {"alpha": 0},
        {"alpha": 1.5},
        {"min_count": 0},
        {"watched": ("wrong",)},
        {"baseline_start": T0},
        {"baseline_start": T0, "baseline_end": T0},
        {"correction": "holm"},
        {"window": timedelta(0)},
        {"min_delta": 1.5},
        {"min_delta": -0.1},
    ],
)
def test_bad_settings_are_refused_with_reasons(bad: dict) -> None:
    with pytest.raises(GuardError, match="invalid monitor settings"):
        MonitorConfig(**bad)


# -- the statistics against SciPy and against their definitions ------------------------
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400), st.data())
def test_proportion_test_is_a_valid_one_sided_p_value(n1: int, n0: int, data) -> None:
    x1 = data.draw(st.integers(0, n1))
    x0 = data.draw(st.integers(0, n0))
    p, stat, name = proportion_increase_test(x1, n1, x0, n0)
    assert 0.0 <= p <= 1.0
    pooled = (x1 + x0) / (n1 + n0)
    small = min(n1 * pooled, n1 * (1 - pooled), n0 * pooled, n0 * (1 - pooled)) < 5
    assert name == ("fisher" if small else "z")
    if name == "z":
        z = (x1 / n1 - x0 / n0) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
        assert stat == pytest.approx(z)
        assert p == pytest.approx(sps.norm.sf(z), rel=1e-9, abs=1e-300)
    else:
        assert p == pytest.approx(sps.fisher_exact([[x1, n1 - x1], [x0, n0 - x0]], alternative="greater")[1])
    if x1 < n1:  # one more bad claim now never makes the jump less significant (under the same test)
        p_more, _, name_more = proportion_increase_test(x1 + 1, n1, x0, n0)
        if name_more == name:
            assert p_more <= p + 1e-12


bins = st.lists(st.integers(0, 6), min_size=len(PROSE_EDGES), max_size=len(PROSE_EDGES))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=12))
def test_binned_mann_whitney_matches_scipy_on_the_bin_values(cells) -> None:
    current = [0] * len(PROSE_EDGES)
    baseline = [0] * len(PROSE_EDGES)
    for b, c, k in cells:
        current[b] += c
        baseline[b] += k
    p, z, u = binned_mann_whitney(current, baseline)
    xs = [PROSE_EDGES[i] for i, c in enumerate(current) for _ in range(c)]
    ys = [PROSE_EDGES[i] for i, c in enumerate(baseline) for _ in range(c)]
    if not xs or not ys or len(set(xs + ys)) < 2:
        assert p == 1.0
        return
    ref = sps.mannwhitneyu(xs, ys, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert u == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue, rel=1e-6, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 99.9, allow_nan=False), min_size=1, max_size=300), st.sampled_from([0.1, 0.5, 0.9]))
def test_binned_quantile_is_within_one_bin_of_the_exact_quantile(values, q) -> None:
    import bisect

    counts = [0] * len(PROSE_EDGES)
    for v in values:
        counts[bisect.bisect_right(PROSE_EDGES, v) - 1] += 1
    got = binned_quantile(counts, q)
    ordered = sorted(values)
    exact = ordered[max(0, math.ceil(q * len(values)) - 1)]
    width = 2.0 if exact >= 20 else 0.25
    assert abs(got - exact) <= width + 1e-9


@given(st.integers(0, 3), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_parse_window_reads_combined_units(d, h, m, s) -> None:
    text = "".join(f"{v}{u}" for v, u in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] if v)
    expected = timedelta(days=d, hours=h, minutes=m, seconds=s)
    if expected:
        assert parse_window(text) == expected
        assert parse_window(text.upper()) == expected
    else:
        with pytest.raises(GuardError):
            parse_window(text or "0h")


@pytest.mark.parametrize("bad", ["", "1", "h", "1x", "1h garbage", "-1h", "1.5h"])
def test_parse_window_refuses_what_it_cannot_read(bad: str) -> None:
    with pytest.raises(GuardError, match="window"):
        parse_window(bad)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from(["a", "b"]), st.integers(0, 40), st.integers(0, 40)),
        min_size=1,
        max_size=25,
    ),
    st.lists(st.tuples(st.integers(0, 30), st.lists(st.floats(0, 30), min_size=1, max_size=30)), max_size=12),
    st.integers(1, 5),
)
def test_baselines_are_the_sums_of_the_preceding_windows(cells, prose, n_base) -> None:
    events = []
    for hour, field, good, bad in cells:
        events += claims(hour, field, good + bad, bad)
    for hour, ratios in prose:
        events += decisions(hour, ratios)
    report = run(
        events, baseline_windows=n_base, min_count=1, alpha=0.999999, correction="none", min_shift=0, min_delta=0
    )
    first = int(T0.timestamp() // 3600)
    for alert in report.alerts:
        hour = int(alert.window_start.timestamp() // 3600) - first
        span = range(hour - n_base, hour)
        if alert.kind == "rate_jump":
            rows = [(g + b, b) for h, f, g, b in cells if f == alert.field and h in span]
            assert alert.baseline_n == sum(n for n, _ in rows)
            assert alert.baseline_count == sum(b for _, b in rows)
            now = [(g + b, b) for h, f, g, b in cells if f == alert.field and h == hour]
            assert (alert.current_n, alert.current_count) == (sum(n for n, _ in now), sum(b for _, b in now))
        else:
            assert alert.baseline_n == sum(len(r) for h, r in prose if h in span)
            assert alert.current_n == sum(len(r) for h, r in prose if h == hour)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from(
    [
        "ts",
        "event",
        "entity",
        "field",
        "status",
        "action",
        "findings",
        "prose_per_slot",
        "n_slots",
        "prose_words",
        "domain",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(_keys, _json | st.sampled_from(["claim", "decision", T0.isoformat()])), max_size=20))
def test_any_json_objects_are_survived(events) -> None:
    m = Monitor(MonitorConfig(min_count=1))
    m.add_all(events)
    report = m.report()
    json.loads(report.to_json())
    c = report.counters
    assert c["events"] == len(events)
    assert c["claims"] + c["decisions"] + c["ignored"] + c["untimed"] + c["other_domain"] == len(events)


def test_epoch_timestamps_are_read_and_out_of_range_ones_skipped() -> None:
    m = Monitor()
    for ts in [1e300, -1e300, float("nan"), float("inf"), T0.timestamp(), T0.timestamp() + 59, True]:
        m.add({"ts": ts, "event": "claim", "entity": "o", "field": "f", "status": "confirmed"})
    report = m.report()
    assert report.counters["claims"] == 2 and report.counters["untimed"] == 5
    assert [report.window_start(w) for w in report.windows] == [T0]


def test_naive_baseline_times_are_utc_whatever_the_local_zone(monkeypatch) -> None:
    import time

    events = []
    for h in range(6):
        events += claims(h, "shipped_at", 400, 8 if h < 3 else 60)
    aware = run(events, baseline_start=T0, baseline_end=T0 + 3 * HOUR)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        naive = run(events, baseline_start=T0.replace(tzinfo=None), baseline_end=(T0 + 3 * HOUR).replace(tzinfo=None))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert naive.alerts == aware.alerts and len(aware.alerts) == 3


def test_a_significant_but_tiny_rise_needs_min_delta() -> None:
    events = []
    for h in range(4):
        events += claims(h, "total", 40_000, 800)  # 2.0 %
    events += claims(4, "total", 40_000, 1_000)  # 2.5 %: p ~ 1e-5 on this volume
    (alert,) = run(events, baseline_windows=4, min_delta=0.0).alerts
    assert alert.p_value < 1e-4
    assert run(events, baseline_windows=4).alerts == []  # half a point is under the default one
    assert run(events, baseline_windows=4, min_delta=0.004).alerts
