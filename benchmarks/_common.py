"""Shared by the benchmarks: a rate measured by repetition, and the common command-line options."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable


def rate(fn: Callable[[], object], seconds: float, warm: bool = True) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (after one warm-up call)."""
    if warm:
        fn()
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        fn()
        n += 1
    return n / elapsed


def rounds(fns: dict[str, Callable[[], object]], seconds: float, n_rounds: int = 10) -> dict[str, list[float]]:
    """Calls per second of each function in each of ``n_rounds`` interleaved rounds.

    On a shared machine the speed drifts over seconds. Measuring one function
    for the whole budget, then the next, puts that drift into their ratio;
    taking turns puts every contender in every period. The order is reversed
    every other round, so a steady drift favours no one.
    """
    for fn in fns.values():
        fn()
    got: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(n_rounds):
        for name in names if r % 2 == 0 else reversed(names):
            got[name].append(rate(fns[name], seconds / n_rounds, warm=False))
    return got


def paired_ratio(num: list[float], den: list[float]) -> tuple[float, float, float]:
    """Median, lowest and highest of ``num[i] / den[i]`` over rounds: each ratio is taken within one round,
    so a machine that slows down between rounds does not move it."""
    ratios = sorted(a / b for a, b in zip(num, den, strict=True))
    return statistics.median(ratios), ratios[0], ratios[-1]


def options(description: str | None = None, rounds: int | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="orders in the SQLite system of record")
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds, help="interleaved rounds the time is split into")
    return ap.parse_args()
