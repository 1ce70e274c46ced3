"""Slot-ratio drift in the upper tail: the p90 moves while the median stays (issue 19, item 14)."""

from __future__ import annotations

import random

from guard.observe.monitor import PROSE_EDGES, TAIL_STATUS, binned_quantile
from tests.observe.test_monitor import HOUR, T0, decisions, run


def _window(hour: int, rng: random.Random, tail: float, n: int = 300) -> list[dict]:
    """Most templates near 2 words per slot; one in seven at ``tail``."""
    values = [tail if i % 7 == 0 else rng.uniform(1.5, 2.5) for i in range(n)]
    return list(decisions(hour, values))


def test_a_tripled_p90_with_a_steady_median_is_flagged() -> None:
    rng = random.Random(7)
    events = [e for h in range(4) for e in _window(h, rng, 3.2)] + _window(4, rng, 9.2)
    report = run(events, baseline_windows=4)
    (alert,) = report.alerts
    assert alert.kind == "slot_ratio_drift" and alert.status == TAIL_STATUS
    assert alert.window_start == T0 + 4 * HOUR
    assert alert.current >= 9 and alert.baseline < 3.5 and alert.current_count > alert.baseline_count
    assert "p90 9." in alert.message and "above the baseline's p90" in alert.message
    medians = [report.prose_summary(w)["median"] for w in report.windows]
    assert max(medians) - min(medians) < 0.3  # the median test alone saw nothing


def test_a_steady_tail_and_a_small_p90_move_are_quiet() -> None:
    rng = random.Random(8)
    steady = [e for h in range(5) for e in _window(h, rng, 3.2)]
    assert run(steady, baseline_windows=4).alerts == []
    nudged = [e for h in range(4) for e in _window(h, rng, 3.2)] + _window(4, rng, 3.8)
    assert run(nudged, baseline_windows=4, min_shift=1.0).alerts == []


def test_binned_p90_reads_the_tail() -> None:
    counts = [0] * len(PROSE_EDGES)
    counts[8] = 90  # 2.0 words per slot
    counts[36] = 10  # 9.0
    assert binned_quantile(counts, 0.5) is not None and binned_quantile(counts, 0.5) < 2.5
    assert binned_quantile(counts, 0.95) >= 9.0
