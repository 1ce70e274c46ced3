"""Prometheus metrics for the events guard logs.

The metrics live on a registry the caller passes, or on a new
:class:`~prometheus_client.CollectorRegistry` (never the process-global one)
so two gates, or two tests, in one process do not share counters. The metric
names are the contract with ``deploy/prometheus/guard-alerts.yml``::

    guard_claims_total{entity, field, status}
    guard_decisions_total{action}
    guard_lint_findings_total{code}
    guard_lint_cache_total{result}  (hit or miss of the gate's per-template lint cache)
    guard_prose_per_slot            (histogram of prose words per slot)
    guard_decision_latency_seconds{domain}  (histogram: the whole gate, parse to decision, per payload)
    guard_claim_latency_seconds{domain}     (histogram: the check stage, per claim)
    guard_stage_latency_seconds{domain, stage}  (histogram: each lint stage that ran, and the check, per decision)
    guard_log_write_failures_total          (decisions returned whose event-log lines could not be written)

Example::

    metrics = Metrics()
    metrics.observe({"event": "decision", "action": "answer", "findings": [], "prose_per_slot": 2.5})
    metrics.serve(9464)        # or: body = metrics.expose()

``Metrics(deferred=True)`` (``guard serve``'s workers) holds the counts in the
process and writes them to prometheus_client's values only on :meth:`Metrics.flush`
(and before :meth:`expose`, :meth:`serve` and :meth:`value` read): in
multiprocess mode each write to a value is a lock, a process id check and a write
to a memory-mapped file, about twenty a decision, while a flush every second
writes each series once. The caller flushes on a timer and at exit; counts held
since the last flush are lost if the process is killed.

Several worker processes (gunicorn, uwsgi) count into one set of series with
prometheus_client's multiprocess mode: set ``PROMETHEUS_MULTIPROC_DIR`` to an
empty directory before the workers start; :meth:`Metrics.expose`,
:meth:`Metrics.serve` and :meth:`Metrics.value` then report the sum over every
process's files. In that mode the series belong to the folder, not to an
instance: every ``Metrics`` of every process sharing the folder counts into, and
reports, the same series (prometheus_client keys its files by process and metric
name), so a second instance in one process warns. Isolation between instances
holds only without the variable.
"""

from __future__ import annotations

import bisect
import os
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, start_http_server
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from guard.errors import DependencyError, FileError
from guard.observe import schema

_INF = float("inf")
PROSE_PER_SLOT_BUCKETS: tuple[float, ...] = (0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50)
"""Bucket bounds in words per slot; the alert rules' quantiles are only as fine as these."""

LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
"""Bucket bounds in seconds for the latency histograms (a gate decides in milliseconds; a slow store shows)."""


def _stage_names() -> frozenset[str]:
    """The stage labels a decision may carry: the registered lint stages and ``check``; a log line naming
    anything else (a hand-edited log, a newer guard) adds no series."""
    global _STAGE_NAMES
    if _STAGE_NAMES is None:
        from guard.linting import registry

        _STAGE_NAMES = frozenset(s.name for s in registry.stages()) | {"check"}
    return _STAGE_NAMES


_STAGE_NAMES: frozenset[str] | None = None


def _label(value: Any) -> str:
    return "" if value is None else str(value)


def _write_error(exc: OSError) -> FileError:
    """A multiprocess metrics write that failed (its folder removed after start-up), as guard's error."""
    return FileError(
        f"cannot write the multiprocess metrics in PROMETHEUS_MULTIPROC_DIR: {exc.strerror or exc}",
        location=_multiprocess_folder() or "",
    )


def _multiprocess_folder() -> str | None:
    """The multiprocess folder, when that mode is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")  # noqa: SIM112 (prometheus_client reads both spellings)


_made: dict[int, int] = {}
"""Metrics made per process in multiprocess mode, to warn that a second one shares the first one's series."""
_made_lock = threading.Lock()


class _HeldCount:
    """A counter's child, counted in this process until :meth:`flush`."""

    __slots__ = ("child", "amount")

    def __init__(self, child: Any) -> None:
        self.child, self.amount = child, 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.amount += amount

    def flush(self) -> None:
        amount, self.amount = self.amount, 0.0
        if amount:
            self.child.inc(amount)


class _HeldHistogram:
    """A histogram's child, its buckets and sum counted in this process until :meth:`flush`, which adds them to
    the child's own values (prometheus_client's ``Histogram`` has no public way to add many observations at
    once; the attributes are checked when this is made)."""

    __slots__ = ("child", "bounds", "counts", "sum")

    def __init__(self, child: Any) -> None:
        self.child, self.bounds = child, list(child._upper_bounds)
        if len(child._buckets) != len(self.bounds) or not hasattr(child._sum, "inc"):
            raise DependencyError("this prometheus_client's Histogram cannot take deferred counts")
        self.counts = [0] * len(self.bounds)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.sum += amount
        i = bisect.bisect_left(self.bounds, amount)
        if i < len(self.counts) and amount <= self.bounds[i]:
            self.counts[i] += 1

    def flush(self) -> None:
        counts, total = self.counts, self.sum
        if not any(counts) and not total:
            return
        self.counts, self.sum = [0] * len(counts), 0.0
        self.child._sum.inc(total)
        for bucket, n in zip(self.child._buckets, counts):
            if n:
                bucket.inc(n)


class Metrics:
    """Counters and the prose-per-slot histogram, fed one event at a time by :meth:`observe`."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        buckets: Sequence[float] = PROSE_PER_SLOT_BUCKETS,
        deferred: bool = False,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self.deferred = deferred
        self._held: list[Any] = []
        self._claim_meters: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
        """A claim event's count and latency children by (entity, field, status, domain), all strings: one lookup
        instead of two :meth:`child` calls and four label conversions."""
        self.lock = threading.Lock()
        """Held while counting in deferred mode (by :meth:`observe` and whoever counts into :meth:`child`) and
        while flushing."""
        folder = _multiprocess_folder()
        if folder:
            self._check_folder(folder)
        try:
            self.claims = Counter(
                "guard_claims",
                "Claim results by entity, field and status (confirmed, contradicted, not_found, ...).",
                ["entity", "field", "status"],
                registry=self.registry,
            )
            self.decisions = Counter(
                "guard_decisions",
                "Decisions by action (answer, refuse, regenerate_from_facts).",
                ["action"],
                registry=self.registry,
            )
            self.findings = Counter(
                "guard_lint_findings",
                "Lint findings by code (F1xx, S2xx, T3xx, R4xx).",
                ["code"],
                registry=self.registry,
            )
            self.lint_cache = Counter(
                "guard_lint_cache",
                "Lint results served from the per-template cache (hit) or computed (miss).",
                ["result"],
                registry=self.registry,
            )
            self.prose_per_slot = Histogram(
                "guard_prose_per_slot",
                "Prose words per slot in each decided template.",
                buckets=tuple(buckets),
                registry=self.registry,
            )
            self.decision_latency = Histogram(
                "guard_decision_latency_seconds",
                "Time from payload to decision (parse, lint, check, decide, render), by domain.",
                ["domain"],
                buckets=LATENCY_BUCKETS,
                registry=self.registry,
            )
            self.claim_latency = Histogram(
                "guard_claim_latency_seconds",
                "Time to check one claim against the system of record, by domain.",
                ["domain"],
                buckets=LATENCY_BUCKETS,
                registry=self.registry,
            )
            self.stage_latency = Histogram(
                "guard_stage_latency_seconds",
                "Time spent in each stage of one decision (the lint stages that ran, and the check), by domain.",
                ["domain", "stage"],
                buckets=LATENCY_BUCKETS,
                registry=self.registry,
            )
            self.log_write_failures = Counter(
                "guard_log_write_failures",
                "Decisions returned whose event-log lines could not be written (full disk, closed log).",
                registry=self.registry,
            )
        except ValueError as exc:  # duplicate names on a shared registry, bad buckets
            raise DependencyError(f"cannot register guard metrics: {exc}") from exc
        except OSError as exc:  # multiprocess mode: the folder went away or cannot be written
            raise FileError(
                f"cannot write the multiprocess metrics in PROMETHEUS_MULTIPROC_DIR: {exc.strerror or exc}",
                location=folder or "",
            ) from exc

    @staticmethod
    def _check_folder(folder: str) -> None:
        """The multiprocess folder must be a writable folder; a second instance in one process is told it shares."""
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
            raise FileError(
                f"PROMETHEUS_MULTIPROC_DIR names {folder}, which is not a writable folder; "
                "create it (empty) before the workers start",
                location=folder,
            )
        with _made_lock:
            count = _made[os.getpid()] = _made.get(os.getpid(), 0) + 1
        if count > 1:
            warnings.warn(
                "a second guard Metrics in this process: with PROMETHEUS_MULTIPROC_DIR set, every instance "
                "shares the same series (they count into, and report, the folder's files)",
                RuntimeWarning,
                stacklevel=3,
            )

    def observe(self, event: Mapping[str, Any]) -> bool:
        """Count one logged event; returns False for an event type that carries no metric.

        Raises FileError when multiprocess mode cannot write its folder (removed after start-up).
        """
        try:
            if self.deferred:
                with self.lock:
                    return self._observe(event)
            return self._observe(event)
        except OSError as exc:
            raise _write_error(exc) from exc

    def observe_many(self, events: Sequence[Mapping[str, Any]]) -> int:
        """:meth:`observe` each event, under one hold of :attr:`lock` (a decision's events: its claims and itself);
        returns how many carried a metric.

        Raises FileError when multiprocess mode cannot write its folder (removed after start-up). A subclass that
        overrides :meth:`observe` gets its own method called per event.
        """
        if type(self).observe is not Metrics.observe:
            return [self.observe(e) for e in events].count(True)
        observe = self._observe
        try:
            if self.deferred:
                with self.lock:
                    return [observe(e) for e in events].count(True)
            return [observe(e) for e in events].count(True)
        except OSError as exc:
            raise _write_error(exc) from exc

    def observe_decision(
        self,
        domain: str | None,
        claims: Sequence[tuple[Any, Any, Any, Any]],
        action: Any,
        findings: list[Any],
        prose_per_slot: Any,
        latency_ms: Any,
        stage_ms: Mapping[str, Any] | None,
    ) -> bool:
        """What :meth:`observe_many` counts for a decision's claim events and its decision event, from their fields:
        each claim as ``(entity, field, status, latency_ms)``, the rest as the decision event carries them. For the
        gate without a log, which would build the events only to count them (about half the cost of counting).

        Counts nothing and returns False when a subclass overrides :meth:`observe` (it is to be fed the events).
        Raises FileError as :meth:`observe_many` does.
        """
        if type(self).observe is not Metrics.observe:
            return False
        try:
            if self.deferred:
                with self.lock:
                    self._count_decision(domain, claims, action, findings, prose_per_slot, latency_ms, stage_ms)
            else:
                self._count_decision(domain, claims, action, findings, prose_per_slot, latency_ms, stage_ms)
        except OSError as exc:
            raise _write_error(exc) from exc
        return True

    def _count_decision(
        self,
        domain: str | None,
        claims: Sequence[tuple[Any, Any, Any, Any]],
        action: Any,
        findings: list[Any],
        prose_per_slot: Any,
        latency_ms: Any,
        stage_ms: Mapping[str, Any] | None,
    ) -> None:
        for entity, field, status, ms in claims:
            self._claim(entity, field, status, domain, ms)
        self._decision(action, findings, prose_per_slot, latency_ms, domain, stage_ms)

    def _observe(self, event: Mapping[str, Any]) -> bool:
        kind = schema.kind(event)
        if kind == schema.CLAIM:
            claim = schema.as_claim(event)
            entity, field, status = claim.get("entity"), claim.get("field"), claim.get("status")
            self._claim(entity, field, status, claim.get("domain"), claim.get("latency_ms"))
            return True
        if kind == schema.DECISION:
            decision = schema.as_decision(event)
            self._decision(
                decision.get("action"),
                decision.get("findings"),
                decision.get("prose_per_slot"),
                decision.get("latency_ms"),
                decision.get("domain"),
                decision.get("stage_ms"),
            )
            return True
        return False

    def _claim(self, entity: Any, field: Any, status: Any, domain: Any, ms: Any) -> None:
        """A claim event's counts."""
        if (
            type(ms) is float
            and 0 <= ms < _INF
            and type(entity) is str
            and type(field) is str
            and type(status) is str
            and type(domain) is str
        ):
            # the usual claim event (the gate's own): both its meters from one lookup
            labels = (entity, field, status, domain)
            meters = self._claim_meters.get(labels)
            if meters is None:
                meters = self._claim_meters[labels] = (
                    self.child(self.claims, entity, field, status),
                    self.child(self.claim_latency, domain),
                )
            meters[0].inc()
            meters[1].observe(ms / 1000)
            return
        self.child(self.claims, _label(entity), _label(field), _label(status)).inc()
        if schema.finite(ms) and ms >= 0:
            self.child(self.claim_latency, _label(domain)).observe(ms / 1000)

    def _decision(self, action: Any, findings: Any, ratio: Any, ms: Any, domain: Any, stage_ms: Any) -> None:
        """A decision event's counts."""
        self.child(self.decisions, _label(action)).inc()
        if isinstance(findings, list):
            for code in findings:
                self.child(self.findings, _label(code)).inc()
        # A template without slots has no finite ratio; it is a finding (R4xx), not a histogram point.
        if schema.finite(ratio):
            self.child(self.prose_per_slot).observe(ratio)
        if schema.finite(ms) and ms >= 0:
            self.child(self.decision_latency, _label(domain)).observe(ms / 1000)
        if isinstance(stage_ms, Mapping):
            label = _label(domain)
            for stage, stage_time in stage_ms.items():
                if stage in _stage_names() and schema.finite(stage_time) and stage_time >= 0:
                    self.child(self.stage_latency, label, stage).observe(stage_time / 1000)

    def child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)`` (the metric itself without labels), kept: prometheus_client checks and
        locks on every ``labels`` call, about a dozen a decision. The cache holds what prometheus_client already
        keeps (a child per label set). In deferred mode the child is held in this process until :meth:`flush`
        (count into it under :attr:`lock`)."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = metric.labels(*values) if values else metric
            if self.deferred:
                child = _HeldHistogram(child) if isinstance(metric, Histogram) else _HeldCount(child)
                self._held.append(child)
            self._children[key] = child
        return child

    def flush(self) -> None:
        """Write the counts held in this process (deferred mode) to prometheus_client's values; nothing else.

        Raises FileError when multiprocess mode cannot write its folder."""
        if not self.deferred:
            return
        try:
            with self.lock:
                for held in self._held:
                    held.flush()
        except OSError as exc:
            raise _write_error(exc) from exc

    def observe_log_failure(self) -> None:
        """Count one decision whose log lines could not be written."""
        self.log_write_failures.inc()

    def observe_lint_cache(self, hit: bool) -> None:
        """Count one lint-cache lookup of the gate."""
        if self.deferred:
            with self.lock:
                self.child(self.lint_cache, "hit" if hit else "miss").inc()
            return
        self.child(self.lint_cache, "hit" if hit else "miss").inc()

    def _exposed(self) -> CollectorRegistry:
        """The registry to expose: this one, or in multiprocess mode the files of every process."""
        folder = _multiprocess_folder()
        if not folder:
            return self.registry
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        try:
            MultiProcessCollector(registry, path=folder)
        except ValueError as exc:
            raise FileError(f"cannot read the multiprocess metrics: {exc}", location=folder) from exc
        return registry

    def expose(self) -> bytes:
        """The metrics in the Prometheus text format (for a handler of your own web framework)."""
        self.flush()
        return generate_latest(self._exposed())

    content_type = CONTENT_TYPE_LATEST

    def serve(self, port: int, addr: str = "0.0.0.0") -> Any:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread; returns the server."""
        self.flush()
        try:
            return start_http_server(port, addr=addr, registry=self._exposed())
        except OSError as exc:
            raise DependencyError(f"cannot serve metrics on {addr}:{port}: {exc.strerror}") from exc

    def value(self, name: str, **labels: str) -> float:
        """The current value of one sample (``guard_claims_total``, ...), 0.0 when never set.

        In multiprocess mode, the value :meth:`expose` reports: the sum over the folder's files.
        """
        self.flush()
        found = self._exposed().get_sample_value(name, labels)
        return 0.0 if found is None else found


__all__ = ["Metrics", "PROSE_PER_SLOT_BUCKETS", "LATENCY_BUCKETS"]
