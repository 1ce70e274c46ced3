"""Shared by the benchmarks: a rate measured by repetition, and the common command-line options."""

from __future__ import annotations

import argparse
import time
from typing import Callable


def rate(fn: Callable[[], object], seconds: float, warm: bool = True) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (after one warm-up call)."""
    if warm:
        fn()
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        fn()
        n += 1
    return n / elapsed


def rates(fns: dict[str, Callable[[], object]], seconds: float, rounds: int = 10) -> dict[str, float]:
    """Calls per second of each function, measured in interleaved rounds; each keeps its best round.

    On a shared machine the speed drifts over seconds. Measuring one function
    for the whole budget, then the next, puts that drift into their ratio;
    taking turns puts every contender in every period, and the best round
    (like ``timeit``'s minimum) is the one least disturbed.
    """
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, 0.0)
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = max(best[name], rate(fn, seconds / rounds, warm=False))
    return best


def options(description: str | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rows", type=int, default=100_000, help="orders in the SQLite system of record")
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    return ap.parse_args()
