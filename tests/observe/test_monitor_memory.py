"""The monitor keeps counts, not lines: peak memory does not grow with the log."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest
import scipy.stats  # noqa: F401  (imported before measuring: its import is not the monitor's memory)

from guard.observe.monitor import MonitorConfig, monitor_logs
from guard.observe.simulate import simulate_events


def _write_log(path: Path, lines: int) -> int:
    per_hour = lines // (24 * 3) + 1
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        for event in simulate_events(seed=11, hours=24, requests_per_hour=per_hour):
            f.write(json.dumps(event, separators=(",", ":")) + "\n")
            written += 1
            if written >= lines:
                break
    return written


def _peak(path: Path) -> tuple[int, int]:
    gc.collect()
    tracemalloc.start()
    try:
        report = monitor_logs([str(path)], MonitorConfig(baseline_windows=6))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, report.counters["events"]


@pytest.mark.slow
def test_peak_memory_is_independent_of_the_number_of_lines(tmp_path: Path) -> None:
    warm, small, large = tmp_path / "warm.log", tmp_path / "small.log", tmp_path / "large.log"
    assert _write_log(small, 50_000) == 50_000
    large.write_bytes(small.read_bytes() * 4)  # the same day four times over: 4x the lines, same windows
    _write_log(warm, 2_000)
    _peak(warm)  # warm caches (datetime, json, scipy's tests) so both runs measure the same thing
    peak_small, seen_small = _peak(small)
    peak_large, seen_large = _peak(large)
    assert (seen_small, seen_large) == (50_000, 200_000)
    # Four times the lines: a list of events would need ~4x; counts need the same.
    print(f"peak {peak_small} B for 50k lines, {peak_large} B for 200k lines")
    assert peak_large < peak_small * 1.25 + 64_000, (peak_small, peak_large)
    assert peak_large < 4_000_000, peak_large
