"""Shared by the benchmarks: a rate measured by repetition, and the common command-line options."""

from __future__ import annotations

import argparse
import time
from typing import Callable


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (after one warm-up call)."""
    fn()
    n, t0 = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - t0) < seconds:
        fn()
        n += 1
    return n / elapsed


def options(description: str | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rows", type=int, default=100_000, help="orders in the SQLite system of record")
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    return ap.parse_args()
