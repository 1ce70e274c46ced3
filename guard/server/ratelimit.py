"""Per-key request rates with the generic cell rate algorithm (GCRA), held across worker processes.

A rate such as ``100/second`` (read by the ``limits`` library's parser) is a bucket of 100 requests that refills at
100 per second: a burst of 100 at once, then one every 10 ms; a refused request learns when the next one would
be allowed (``Retry-After``). The whole state of a key is one number, the time its bucket is next empty, so the
workers of one server share it in a small file: eight bytes a key, mapped into every worker's memory and updated
under an ``fcntl`` lock, against ``CLOCK_MONOTONIC``, which all processes of a machine share. That is a few
microseconds per request; ``limits``' own storages need a server (Redis, memcached) or, in memory, a timer
thread per process and one count per worker, which lets N workers admit N times the rate.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import struct
import threading
import time
from pathlib import Path

from limits import parse

_SLOT = struct.Struct("d")


class RateLimiter:
    """Rates per key name, counted in this process or, given ``folder``, shared by every process that opens it.

    The file in ``folder`` is named by the keys and rates, so a reload with other keys starts from full buckets
    rather than reading another key's slot.
    """

    def __init__(self, rates: dict[str, str], folder: str | os.PathLike[str] | None = None) -> None:
        self._every: dict[str, float] = {}
        self._burst: dict[str, float] = {}
        for name, text in rates.items():
            item = parse(text)
            self._every[name] = item.get_expiry() / item.amount
            self._burst[name] = item.get_expiry() - self._every[name]
        self._slot = {name: i for i, name in enumerate(sorted(rates))}
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._map: mmap.mmap | memoryview | bytearray = bytearray(_SLOT.size * max(1, len(self._slot)))
        if folder is not None:
            tag = hashlib.sha256(repr(sorted(rates.items())).encode()).hexdigest()[:16]
            self.path: Path | None = Path(folder) / f"ratelimit-{tag}.bin"
            size = len(self._map)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                if os.fstat(self._fd).st_size < size:  # new: zero means "never seen", so the bucket is full
                    os.ftruncate(self._fd, size)
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
            self._map = mmap.mmap(self._fd, size)
        else:
            self.path = None

    def hit(self, name: str, now: float | None = None) -> float:
        """Count one request of ``name``: 0.0 when allowed, else the seconds until one would be."""
        now = time.monotonic() if now is None else now
        at = self._slot[name] * _SLOT.size
        with self._lock:
            if self._fd is not None:
                fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                due = max(_SLOT.unpack_from(self._map, at)[0], now)
                wait = due - self._burst[name] - now
                if wait > 0:
                    return wait
                _SLOT.pack_into(self._map, at, due + self._every[name])
                return 0.0
            finally:
                if self._fd is not None:
                    fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Unmap the shared file (its state stays for the other workers)."""
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = ["RateLimiter"]
