"""Per-key request rates, counted in the worker's memory with the generic cell rate algorithm (GCRA).

A rate such as ``100/second`` (read by the ``limits`` library's parser) is a bucket of 100 requests that refills at
100 per second: a burst of 100 at once, then one every 10 ms; a refused request learns when the next one would
be allowed (``Retry-After``). One number per key and O(1) per request: ``limits``' own in-memory storage starts a timer
thread to expire its entries, which costs more than the request it guards.
"""

from __future__ import annotations

import time

from limits import parse


class RateLimiter:
    """Rates per key name; call :meth:`hit` from one event loop (no lock is taken)."""

    def __init__(self, rates: dict[str, str]) -> None:
        self._every: dict[str, float] = {}
        self._burst: dict[str, float] = {}
        for name, text in rates.items():
            item = parse(text)
            self._every[name] = item.get_expiry() / item.amount
            self._burst[name] = item.get_expiry() - self._every[name]
        self._next: dict[str, float] = {}

    def hit(self, name: str, now: float | None = None) -> float:
        """Count one request of ``name``: 0.0 when allowed, else the seconds until one would be."""
        now = time.monotonic() if now is None else now
        due = max(self._next.get(name, now), now)
        wait = due - self._burst[name] - now
        if wait > 0:
            return wait
        self._next[name] = due + self._every[name]
        return 0.0


__all__ = ["RateLimiter"]
