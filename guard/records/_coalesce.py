"""Record reads of concurrent runs merged into one statement per entity, fields and scope.

Why: on PostgreSQL a worker spent 35-45% of its CPU sending statements (a round trip, the socket's reader
registered and removed, the result loaded), one per run, while many runs in flight read the same table for the
same columns. A :class:`Coalescer` collects the reads submitted in one turn of the event loop (and, while
``limit`` batches are already at the database, every read submitted until one returns), merges those with the
same (entity, fields, scope) into one :class:`~guard.records.store.Read` of all their ids, has the store's own
reference path (:meth:`~guard.records.store.AsyncRecordStore.aread_each`) run them, and hands each run back only
the rows under its own id keys.

What does not change: the statements (the same compiled ``IN`` over bound ids, at most the store's
``batch_size`` of them, so one statement a merged read), the row scope (the principal is part of the merge key
of a scoped entity, and rows are shared out by exact id key), the errors (a merged read's
:class:`~guard.errors.StoreUnavailable` reaches every run in it; duplicate ids, which the reference reports for
the run whose ids found them, send the batch's runs back to the reference path one by one), freshness (nothing
is kept after a batch is shared out). A run whose deadline cancels its wait leaves the batch running for the
others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from guard.errors import StoreUnavailable

if TYPE_CHECKING:
    from guard.records.store import AsyncRecordStore, Read

Answer = dict[str, Sequence[Any]] | StoreUnavailable
Waiting = tuple[Sequence["Read"], "asyncio.Future[list[Answer]]"]


class Coalescer:
    """Merges the reads of runs in flight on one event loop; at most ``limit`` batches at the database at once."""

    def __init__(self, store: AsyncRecordStore, limit: int) -> None:
        self.store, self.limit = store, max(1, limit)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[Waiting] = []
        self._scheduled = False
        self._running = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0
        """Batches sent and runs served, for benchmarks: ``runs / batches`` is the merge achieved."""
        self.runs = 0

    async def read_many(self, reads: Sequence[Read]) -> list[Answer]:
        """:meth:`~guard.records.store.AsyncRecordStore.aread_each` of ``reads``, sent with other runs' reads."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a store used from another loop starts afresh (nothing pending survives one)
            self._loop, self._pending, self._scheduled, self._running = loop, [], False, 0
        fut: asyncio.Future[list[Answer]] = loop.create_future()
        self._pending.append((reads, fut))
        self._schedule()
        return await fut

    def _schedule(self) -> None:
        if not self._scheduled and self._pending and self._running < self.limit:
            self._scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        batch = [w for w in self._pending if not w[1].done()]  # a run cancelled while waiting needs nothing
        self._pending = []
        if not batch:
            return
        self._running += 1
        assert self._loop is not None
        task = self._loop.create_task(self._serve(batch))
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.get_loop() is self._loop:  # a batch of a loop left behind counts against none
            self._running -= 1
            self._schedule()

    async def _serve(self, batch: list[Waiting]) -> None:
        self.batches += 1
        self.runs += len(batch)
        try:
            if len(batch) == 1:
                answers: list[list[Answer] | Exception] = [await self.store.aread_each(batch[0][0])]
            else:
                answers = await self._merged(batch)
        except asyncio.CancelledError:  # the loop is closing under the batch: so are its runs
            for _reads, fut in batch:
                fut.cancel()
            raise
        except Exception as exc:  # the reference would have raised it in each run: so does every waiter
            for _reads, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_reads, fut), answer in zip(batch, answers):
            if fut.done():
                continue
            if isinstance(answer, Exception):
                fut.set_exception(answer)
            else:
                fut.set_result(answer)

    async def _merged(self, batch: list[Waiting]) -> list[list[Answer] | Exception]:
        """Every run's answers from one merged read per (entity, fields, scope), at most ``batch_size`` ids each."""
        store, most = self.store, self.store.batch_size
        merged: list[Read] = []
        members: list[list[tuple[int, int]]] = []
        open_groups: dict[Any, int] = {}
        alone: set[int] = set()
        for m, (reads, _fut) in enumerate(batch):
            keys = [store.merge_key(r) for r in reads]
            if None in keys:  # a read the store cannot place: the run goes by the reference path, on its own
                alone.add(m)
                continue
            for j, (r, key) in enumerate(zip(reads, keys)):
                g = open_groups.get(key)
                if g is not None and len(merged[g].keys) + len(r.keys) <= most:
                    merged[g].keys.extend(r.keys)
                    members[g].append((m, j))
                    continue
                open_groups[key] = len(merged)
                merged.append(type(r)(r.entity, list(r.keys), r.fields, r.principal))
                members.append([(m, j)])
        got = await store.aread_each(merged) if merged else []
        answers: list[list[Answer] | Exception] = [[{} for _ in reads] for reads, _fut in batch]
        again = alone
        for owners, rows in zip(members, got):
            if len(owners) == 1:
                m, j = owners[0]
                cast(list[Answer], answers[m])[j] = rows
            elif isinstance(rows, StoreUnavailable):
                if getattr(rows, "cause", "") == "garbage":
                    again.update(m for m, _j in owners)
                for m, j in owners:
                    cast(list[Answer], answers[m])[j] = rows
            else:
                for m, j in owners:
                    cast(list[Answer], answers[m])[j] = store.share(rows, batch[m][0][j])
        for m in sorted(again):
            try:
                answers[m] = await store.aread_each(batch[m][0])
            except Exception as exc:  # the reference's own error, for this run only
                answers[m] = exc
        return answers


__all__ = ["Coalescer"]
