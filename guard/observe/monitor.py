"""The hallucination monitor: per-field status rates over time, and alerts on jumps.

Reads the events of :mod:`guard.observe.events` as a stream and keeps only counts: for
each time window, for each ``(entity, field)``, how many claims got each
status, plus a fixed-bin histogram of prose words per slot. Memory therefore
grows with windows times fields, never with the number of log lines, so a
month of logs is read in the same memory as an hour.

A field is flagged when, in one window, its contradicted (or not-found) share
of the resolved claims is higher than in its baseline (the preceding N windows
or a fixed period) by a one-sided test for two proportions: Fisher's exact
test when an expected cell is under 5, the pooled two-proportion z-test
otherwise. Nothing is tested below ``min_count`` resolved claims on either
side (1 of 2 is not news), the level is Bonferroni-corrected over the tests
of a window so many fields do not page by chance, and a rise smaller than
``min_delta`` (one percentage point) is not flagged however many claims make
it significant. Slot-ratio drift is a
two-sided Mann-Whitney test on the binned prose-per-slot values together with
a minimum shift of the median; when the median holds, an upper-tail test (the
share of templates above the baseline's p90, one-sided as for rates) with a
minimum shift of the p90 catches the few templates that route round their
slots (``status`` ``prose_per_slot_p90``).

The distributions come from SciPy: the normal tail (``scipy.special.ndtr``, what ``scipy.stats.norm.sf``
computes) and Fisher's exact test (``scipy.stats.fisher_exact``). Three small pieces stay here, each tested
against SciPy: the pooled two-proportion z statistic (two lines; SciPy has no such test, and statsmodels'
``proportions_ztest`` is the same formula behind a new dependency), the Mann-Whitney test on histograms
(``scipy.stats.mannwhitneyu`` wants every observation, and the monitor keeps only counts so that its memory
does not grow with the log; on the expanded values the two agree), and Bonferroni's ``alpha / tests``.

Resolved claims are ``confirmed``, ``contradicted``, ``not_found`` and
``stale``: ``unavailable`` and ``not_checkable`` say nothing about the model.

Entity and field names are written by the model, so they cannot be allowed to
make series without bound. Given the policy's fields (``listed``, or
``guard monitor --policy``), a name not in it folds into
``<entity>._unlisted`` (or ``_unlisted._unlisted`` for an entity not in it),
the labels the Prometheus metrics use. Whatever the names, at most
``max_fields`` series are kept (500 by default, ``--max-fields``) besides the
fold: claims of further names, and names over 200 characters, fold into
``_unlisted._unlisted``. Either way the fold is counted (``folded``).
Memory and time then grow with the log's length and never with the number
of names in it.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from guard.errors import OptionError
from guard.observe import schema
from guard.records.status import RESOLVED as _RESOLVED_SET
from guard.records.status import Status
from guard.timeutil import iso_time, parse_duration, parse_time

STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
RESOLVED: tuple[str, ...] = tuple(s.value for s in Status if s in _RESOLVED_SET)
WATCHED: tuple[str, ...] = (Status.CONTRADICTED.value, Status.NOT_FOUND.value)
_INDEX = {s: i for i, s in enumerate(STATUSES)}
_OTHER = len(STATUSES)
_RESOLVED_IDX = tuple(_INDEX[s] for s in RESOLVED)

UNLISTED = "_unlisted"
"""The name an entity or field folds into: the metric label of :data:`guard.pipeline.UNLISTED`."""

MAX_FIELDS = 500
"""Default cap on the series kept: far more fields than a policy names, few enough to render."""

_LONGEST = 200
"""A name longer than this is no policy's and folds: a series name never holds a megabyte."""

_FIRST_SECOND = datetime.min.replace(tzinfo=UTC).timestamp()
_LAST_SECOND = datetime.max.replace(tzinfo=UTC).timestamp()

PROSE_EDGES: tuple[float, ...] = tuple(i * 0.25 for i in range(80)) + tuple(20.0 + 2 * i for i in range(41))
"""Lower bounds of the prose-per-slot bins: quarter words up to 20, then 2 words up to 100 (and above)."""


TAIL_STATUS = "prose_per_slot_p90"
"""The ``status`` of a slot-ratio drift alert raised by the upper-tail test rather than the median."""


def parse_window(text: str) -> timedelta:
    """``"1h"``, ``"15m"``, ``"1h30m"``, ``"P1D"`` -> a timedelta: the duration syntax of policies, above zero."""
    return parse_duration(text, what="window", location="--window", allow_zero=False)


# -- statistics ----------------------------------------------------------------
def _normal_sf(z: float) -> float:
    """The standard normal's upper tail: ``scipy.stats.norm.sf(z)``, which is ``scipy.special.ndtr(-z)``;
    called as ``ndtr`` because ``norm.sf`` costs 80 microseconds a scalar (the distribution machinery) and
    the monitor asks once per field and window."""
    from scipy.special import ndtr

    return float(ndtr(-z))


def proportion_increase_test(x1: int, n1: int, x0: int, n0: int) -> tuple[float, float, str]:
    """One-sided test that x1/n1 exceeds x0/n0: ``(p_value, statistic, test_name)``.

    Fisher's exact test (SciPy) when an expected cell count is under 5, where
    the normal approximation is poor; otherwise the pooled two-proportion
    z-test. The statistic is the odds ratio for Fisher and z for the z-test.
    """
    if n1 <= 0 or n0 <= 0:
        return 1.0, 0.0, "none"
    pooled = (x1 + x0) / (n1 + n0)
    smallest = min(n1 * pooled, n1 * (1 - pooled), n0 * pooled, n0 * (1 - pooled))
    if smallest < 5:
        try:
            from scipy.stats import fisher_exact
        except ImportError:  # pragma: no cover - scipy comes with scikit-learn
            pass
        else:
            odds, p = fisher_exact([[x1, n1 - x1], [x0, n0 - x0]], alternative="greater")
            return float(p), float(odds), "fisher"
    if pooled <= 0.0 or pooled >= 1.0:
        return 1.0, 0.0, "z"
    z = (x1 / n1 - x0 / n0) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
    return _normal_sf(z), z, "z"


def binned_mann_whitney(current: list[int], baseline: list[int]) -> tuple[float, float, float]:
    """Two-sided Mann-Whitney U on two histograms over the same bins: ``(p, z, U)``.

    Values in one bin are ties, so the usual tie-corrected normal approximation
    applies exactly to the binned data (with a continuity correction of 1/2).
    ``U`` counts pairs where the current value is larger (ties count 1/2).
    """
    n1, n0 = sum(current), sum(baseline)
    if n1 == 0 or n0 == 0:
        return 1.0, 0.0, 0.0
    u = 0.0
    below = 0
    ties = 0
    for c, b in zip(current, baseline):
        u += c * (below + 0.5 * b)
        below += b
        t = c + b
        ties += t * t * t - t
    n = n1 + n0
    mean = n1 * n0 / 2.0
    var = n1 * n0 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0, 0.0, u
    z = (abs(u - mean) - 0.5) / math.sqrt(var)
    z = max(z, 0.0)
    signed = math.copysign(z, u - mean)
    return min(1.0, 2.0 * _normal_sf(z)), signed, u


def binned_quantile(counts: list[int], q: float, edges: tuple[float, ...] = PROSE_EDGES) -> float | None:
    """The q-quantile of a histogram, interpolated inside its bin; the last bin reads as its lower edge."""
    total = sum(counts)
    if total == 0:
        return None
    target = q * total
    running = 0
    for i, c in enumerate(counts):
        if c and running + c >= target:
            lo = edges[i]
            if i + 1 >= len(edges):
                return lo
            hi = edges[i + 1]
            return lo + (hi - lo) * max(0.0, target - running) / c
        running += c
    return edges[-1]


# -- configuration and report --------------------------------------------------
@dataclass(frozen=True)
class MonitorConfig:
    """How to window, what to compare and how sure to be before alerting.

    Windows are aligned to multiples of their length since the Unix epoch, so
    hours start on the hour and days at midnight UTC, in every run.
    """

    window: timedelta = timedelta(hours=1)
    baseline_windows: int = 24
    baseline_start: datetime | None = None
    baseline_end: datetime | None = None
    min_count: int = 30
    alpha: float = 0.01
    watched: tuple[str, ...] = WATCHED
    correction: str = "bonferroni"
    min_delta: float = 0.01
    min_shift: float = 1.0
    domain: str | None = None
    max_fields: int = MAX_FIELDS
    listed: frozenset[tuple[str, str]] | None = None
    """The policy's ``(entity, field)`` pairs; other names fold into ``_unlisted`` (None: no policy)."""

    def __post_init__(self) -> None:
        for name in ("baseline_start", "baseline_end"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:  # naive means UTC, as in the logs
                object.__setattr__(self, name, value.replace(tzinfo=UTC))
        problems = []
        if self.window.total_seconds() <= 0:
            problems.append("window must be longer than zero")
        if self.baseline_windows < 1:
            problems.append("baseline must be at least one window")
        if (self.baseline_start is None) != (self.baseline_end is None):
            problems.append("a fixed baseline needs both a start and an end")
        if self.baseline_start and self.baseline_end and self.baseline_start >= self.baseline_end:
            problems.append("the fixed baseline must start before it ends")
        if self.min_count < 1:
            problems.append("min_count must be at least 1")
        if not 0 < self.alpha < 1:
            problems.append("alpha must be between 0 and 1")
        unknown = [s for s in self.watched if s not in STATUSES]
        if unknown:
            problems.append(f"unknown status {', '.join(unknown)} (known: {', '.join(STATUSES)})")
        if not 0 <= self.min_delta < 1:
            problems.append("min_delta must be a rate difference from 0 up to 1")
        if not 0 <= self.min_shift < math.inf:
            problems.append("min_shift must be a finite number of words from 0 up (--min-shift)")
        if self.max_fields < 1:
            problems.append("max_fields must be at least 1 (--max-fields)")
        if self.correction not in ("bonferroni", "none"):
            problems.append("correction must be 'bonferroni' or 'none'")
        if problems:
            raise OptionError("invalid monitor settings: " + "; ".join(problems), location="MonitorConfig")

    @property
    def fixed_baseline(self) -> bool:
        return self.baseline_start is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_seconds": self.window.total_seconds(),
            "baseline_windows": None if self.fixed_baseline else self.baseline_windows,
            "baseline_start": self.baseline_start.isoformat() if self.baseline_start else None,
            "baseline_end": self.baseline_end.isoformat() if self.baseline_end else None,
            "min_count": self.min_count,
            "alpha": self.alpha,
            "watched": list(self.watched),
            "correction": self.correction,
            "min_delta": self.min_delta,
            "min_shift": self.min_shift,
            "domain": self.domain,
            "max_fields": self.max_fields,
            "policy_fields": None if self.listed is None else len(self.listed),
        }


@dataclass(frozen=True)
class Alert:
    """One window in which a field's rate jumped, or the prose per slot drifted."""

    kind: str  # "rate_jump" or "slot_ratio_drift"
    window_start: datetime
    window_end: datetime
    entity: str
    field: str
    status: str
    current: float
    baseline: float
    current_n: int
    baseline_n: int
    current_count: int
    baseline_count: int
    p_value: float
    threshold: float
    statistic: float
    test: str

    @property
    def subject(self) -> str:
        return f"{self.entity}.{self.field}" if self.entity or self.field else "prose_per_slot"

    @property
    def message(self) -> str:
        if self.kind == "slot_ratio_drift" and self.status == TAIL_STATUS:
            return (
                f"prose per slot p90 {self.current:.2f} against {self.baseline:.2f}: {self.current_count} of "
                f"{self.current_n} templates above the baseline's p90 against {self.baseline_count} of "
                f"{self.baseline_n} ({self.test} p={self.p_value:.2g})"
            )
        if self.kind == "slot_ratio_drift":
            return (
                f"prose per slot median {self.current:.2f} against {self.baseline:.2f} "
                f"(n={self.current_n} vs {self.baseline_n}, p={self.p_value:.2g})"
            )
        return (
            f"{self.subject} {self.status} rate {self.current:.1%} ({self.current_count}/{self.current_n}) "
            f"against {self.baseline:.1%} ({self.baseline_count}/{self.baseline_n}), "
            f"{self.test} p={self.p_value:.2g}"
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["window_start"] = self.window_start.isoformat()
        d["window_end"] = self.window_end.isoformat()
        d["message"] = self.message
        return d


@dataclass
class FieldSeries:
    """Counts per status for one ``entity.field`` in every window (a window absent from ``counts`` had none)."""

    entity: str
    field: str
    counts: dict[int, list[int]] = dataclasses.field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.entity}.{self.field}"

    def resolved(self, window: int) -> int:
        row = self.counts.get(window)
        return sum(row[i] for i in _RESOLVED_IDX) if row else 0

    def count(self, window: int, status: str) -> int:
        row = self.counts.get(window)
        return row[_INDEX[status]] if row else 0

    def rate(self, window: int, status: str) -> float | None:
        n = self.resolved(window)
        return self.count(window, status) / n if n else None

    def totals(self) -> list[int]:
        out = [0] * (len(STATUSES) + 1)
        for row in self.counts.values():
            for i, c in enumerate(row):
                out[i] += c
        return out


@dataclass
class Report:
    """What the monitor found: per-field series, the prose-per-slot series, alerts and read statistics."""

    config: MonitorConfig
    windows: list[int]
    fields: list[FieldSeries]
    prose: dict[int, list[int]]
    decisions: dict[int, dict[str, int]]
    findings: dict[str, int]
    alerts: list[Alert]
    counters: dict[str, int]
    read: dict[str, Any] = dataclasses.field(default_factory=dict)

    def window_start(self, window: int) -> datetime:
        return datetime.fromtimestamp(window * self.config.window.total_seconds(), tz=UTC)

    def prose_summary(self, window: int) -> dict[str, Any]:
        counts = self.prose.get(window)
        if not counts:
            return {"n": 0, "median": None, "p90": None}
        return {"n": sum(counts), "median": binned_quantile(counts, 0.5), "p90": binned_quantile(counts, 0.9)}

    def to_dict(self) -> dict[str, Any]:
        def _round(value: float | None) -> float | None:
            return None if value is None else round(value, 6)

        fields = []
        for series in self.fields:
            totals = series.totals()
            resolved = sum(totals[i] for i in _RESOLVED_IDX)
            fields.append(
                {
                    "entity": series.entity,
                    "field": series.field,
                    "totals": {s: totals[i] for i, s in enumerate(STATUSES)} | {"other": totals[_OTHER]},
                    "resolved": resolved,
                    "rates": {s: _round(totals[_INDEX[s]] / resolved) if resolved else None for s in RESOLVED},
                    "windows": [
                        {
                            "start": self.window_start(w).isoformat(),
                            "resolved": series.resolved(w),
                            "counts": {s: series.count(w, s) for s in STATUSES if series.count(w, s)},
                            "rates": {s: _round(series.rate(w, s)) for s in self.config.watched},
                        }
                        for w in sorted(series.counts)
                    ],
                }
            )
        return {
            "config": self.config.to_dict(),
            "read": self.read,
            "counters": dict(self.counters),
            "windows": [self.window_start(w).isoformat() for w in self.windows],
            "fields": fields,
            "prose_per_slot": [
                {"start": self.window_start(w).isoformat()}
                | {k: (_round(v) if isinstance(v, float) else v) for k, v in self.prose_summary(w).items()}
                for w in self.windows
            ],
            "decisions": [
                {"start": self.window_start(w).isoformat(), "actions": dict(self.decisions.get(w, {}))}
                for w in self.windows
            ],
            "findings": dict(sorted(self.findings.items())),
            "alerts": [a.to_dict() for a in self.alerts],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_text(self, *, width: int = 120, color: bool = False, tail: int = 0) -> str:
        """The report as text tables (rich); ``tail`` keeps only the last N windows in the rate table."""
        from rich.console import Console

        buffer = io.StringIO()
        console = Console(
            file=buffer, width=width, force_terminal=color, force_jupyter=False, no_color=not color, highlight=False
        )
        render(self, console, tail=tail)
        return buffer.getvalue()


# -- the accumulator -------------------------------------------------------------
class Monitor:
    """Feed events with :meth:`add` (or :meth:`add_all`), then ask for :meth:`report`.

    >>> m = Monitor(MonitorConfig(min_count=1))
    >>> m.add({"ts": "2026-12-01T10:00:00+00:00", "event": "claim", "entity": "order",
    ...        "field": "total", "status": "confirmed"})
    >>> m.report().fields[0].name
    'order.total'
    """

    def __init__(self, config: MonitorConfig | None = None) -> None:
        self.config = config or MonitorConfig()
        self._seconds = self.config.window.total_seconds()
        self._claims: dict[tuple[str, str], FieldSeries] = {}
        self._prose: dict[int, list[int]] = {}
        self._decisions: dict[int, dict[str, int]] = {}
        self._findings: dict[str, int] = {}
        self._windows: set[int] = set()
        self._last_ts: Any = object()  # never equal to a ts, not even a missing one
        self._last_window: int | None = None
        listed = self.config.listed
        self._listed_entities = None if listed is None else frozenset(e for e, _ in listed)
        self.counters = {
            "events": 0,
            "claims": 0,
            "decisions": 0,
            "ignored": 0,
            "untimed": 0,
            "other_domain": 0,
            "folded": 0,
        }

    def _window(self, event: Mapping[str, Any]) -> int | None:
        ts = event.get("ts")
        if ts == self._last_ts:  # the claims of one request share their timestamp
            return self._last_window
        try:
            if isinstance(ts, (int, float)) and not isinstance(ts, bool):
                # Epoch seconds, as some log shippers rewrite it; through datetime to stay in its range.
                seconds = datetime.fromtimestamp(ts, tz=UTC).timestamp()
            else:
                seconds = iso_time(ts).timestamp()  # type: ignore[arg-type]
            window = int(seconds // self._seconds)
            if window * self._seconds < _FIRST_SECOND or (window + 1) * self._seconds > _LAST_SECOND:
                raise OverflowError("the window of this time is not inside the years 1 to 9999")
        except (TypeError, ValueError, OverflowError, OSError):
            self.counters["untimed"] += 1
            return None
        self._last_ts, self._last_window = ts, window
        return window

    def add(self, event: Mapping[str, Any]) -> None:
        counters = self.counters
        counters["events"] += 1
        kind = schema.kind(event)
        if kind != schema.CLAIM and kind != schema.DECISION:
            counters["ignored"] += 1
            return
        if self.config.domain is not None and event.get("domain") != self.config.domain:
            counters["other_domain"] += 1
            return
        window = self._window(event)
        if window is None:
            return
        self._windows.add(window)
        if kind == schema.CLAIM:
            claim = schema.as_claim(event)
            counters["claims"] += 1
            key = (str(claim.get("entity") or ""), str(claim.get("field") or ""))
            series = self._claims.get(key)
            if series is None:
                series = self._series(key)
            row = series.counts.get(window)
            if row is None:
                row = series.counts[window] = [0] * (len(STATUSES) + 1)
            status = claim.get("status")
            row[_INDEX.get(status, _OTHER) if isinstance(status, str) else _OTHER] += 1
            return
        decision = schema.as_decision(event)
        counters["decisions"] += 1
        actions = self._decisions.get(window)
        if actions is None:
            actions = self._decisions[window] = {}
        action = str(decision.get("action"))
        actions[action] = actions.get(action, 0) + 1
        findings = decision.get("findings")
        if isinstance(findings, list):
            for code in findings:
                code = str(code)
                self._findings[code] = self._findings.get(code, 0) + 1
        ratio = decision.get("prose_per_slot")
        words = decision.get("prose_words")
        if schema.finite(ratio):
            index = bisect.bisect_right(PROSE_EDGES, ratio) - 1
            index = 0 if index < 0 else index
        elif not decision.get("n_slots") and schema.finite(words) and words > 0:
            index = len(PROSE_EDGES) - 1  # prose without any slot: the extreme of routing round the slots
        else:
            return
        bins = self._prose.get(window)
        if bins is None:
            bins = self._prose[window] = [0] * len(PROSE_EDGES)
        bins[index] += 1

    def _series(self, key: tuple[str, str]) -> FieldSeries:
        """The series of a name without one yet: its own, or the fold it belongs to (see the module)."""
        listed = self.config.listed
        folded = False
        if len(key[0]) > _LONGEST or len(key[1]) > _LONGEST:
            key, folded = (UNLISTED, UNLISTED), True
        elif listed is not None and key not in listed:
            assert self._listed_entities is not None
            key, folded = (key[0] if key[0] in self._listed_entities else UNLISTED, UNLISTED), True
        series = self._claims.get(key)
        if series is None and len(self._claims) >= self.config.max_fields:
            key, folded = (UNLISTED, UNLISTED), True
            series = self._claims.get(key)
        if series is None:
            series = self._claims[key] = FieldSeries(*key)
        self.counters["folded"] += folded
        return series

    def add_all(self, events: Iterable[Mapping[str, Any]]) -> Monitor:
        add = self.add
        for event in events:
            add(event)
        return self

    # -- analysis --------------------------------------------------------------
    def _baseline_of(self, window: int) -> tuple[int, int] | None:
        """The windows ``[lo, hi)`` that ``window`` is compared with, or None when it is not tested."""
        cfg = self.config
        if cfg.fixed_baseline:
            assert cfg.baseline_start is not None and cfg.baseline_end is not None
            lo = math.ceil(cfg.baseline_start.timestamp() / self._seconds)
            hi = math.floor(cfg.baseline_end.timestamp() / self._seconds)
            return (lo, hi) if window >= hi and hi > lo else None
        return window - cfg.baseline_windows, window

    def _in_fixed_baseline(self, window: int) -> bool:
        cfg = self.config
        assert cfg.baseline_start is not None and cfg.baseline_end is not None
        lo = math.ceil(cfg.baseline_start.timestamp() / self._seconds)
        hi = math.floor(cfg.baseline_end.timestamp() / self._seconds)
        return lo <= window < hi

    def _rate_alerts(self, windows: list[int]) -> list[Alert]:
        cfg = self.config
        columns = [_INDEX[s] for s in cfg.watched]
        # Prefix sums per field over its windows, so a baseline of any length costs two bisections.
        prefix = {}
        present: dict[int, list[tuple[str, str]]] = {}
        for key, series in self._claims.items():
            keys = sorted(series.counts)
            for k in keys:
                present.setdefault(k, []).append(key)
            sums = [[0] * (1 + len(columns))]
            for k in keys:
                row = series.counts[k]
                last = sums[-1]
                sums.append(
                    [last[0] + sum(row[i] for i in _RESOLVED_IDX)]
                    + [last[j + 1] + row[c] for j, c in enumerate(columns)]
                )
            prefix[key] = (keys, sums)

        def total(key: tuple[str, str], lo: int, hi: int) -> list[int]:
            keys, sums = prefix[key]
            a, b = bisect.bisect_left(keys, lo), bisect.bisect_left(keys, hi)
            return [y - x for x, y in zip(sums[a], sums[b])]

        alerts: list[Alert] = []
        for window in windows:
            span = self._baseline_of(window)
            if span is None:
                continue
            tests: list[tuple[FieldSeries, str, int, int, int, int, float, float, str] | None] = []
            for key in present.get(window, ()):  # a field without claims in this window is not tested in it
                series = self._claims[key]
                now = total(key, window, window + 1)
                if now[0] < cfg.min_count:
                    continue
                base = total(key, *span)
                if base[0] < cfg.min_count:
                    continue
                n1, n0 = now[0], base[0]
                for j, status in enumerate(cfg.watched, 1):
                    x1, x0 = now[j], base[j]
                    if x1 * n0 <= x0 * n1:  # not higher than before: counted as a test, never an alert
                        tests.append(None)
                        continue
                    p, stat, name = proportion_increase_test(x1, n1, x0, n0)
                    tests.append((series, status, x1, n1, x0, n0, p, stat, name))
            if not tests:
                continue
            threshold = cfg.alpha / len(tests) if cfg.correction == "bonferroni" else cfg.alpha
            start = datetime.fromtimestamp(window * self._seconds, tz=UTC)
            for test in tests:
                if test is None or test[6] >= threshold:
                    continue
                series, status, x1, n1, x0, n0, p, stat, name = test
                if x1 / n1 - x0 / n0 < cfg.min_delta:  # significant on a huge volume, too small to page on
                    continue
                alerts.append(
                    Alert(
                        "rate_jump",
                        start,
                        start + cfg.window,
                        series.entity,
                        series.field,
                        status,
                        x1 / n1,
                        x0 / n0,
                        n1,
                        n0,
                        x1,
                        x0,
                        p,
                        threshold,
                        stat,
                        name,
                    )
                )
        return alerts

    def _drift_alerts(self, windows: list[int]) -> list[Alert]:
        cfg = self.config
        alerts: list[Alert] = []
        keys = sorted(self._prose)
        baseline = [0] * len(PROSE_EDGES)
        added = removed = 0  # keys[removed:added] are summed in baseline (rolling mode)
        if cfg.fixed_baseline:
            for k in keys:
                span = self._baseline_of(k)
                if span is None and self._in_fixed_baseline(k):
                    baseline = [x + y for x, y in zip(baseline, self._prose[k])]
        for window in windows:
            span = self._baseline_of(window)
            if span is None:
                continue
            if not cfg.fixed_baseline:
                while added < len(keys) and keys[added] < span[1]:
                    baseline = [x + y for x, y in zip(baseline, self._prose[keys[added]])]
                    added += 1
                while removed < added and keys[removed] < span[0]:
                    baseline = [x - y for x, y in zip(baseline, self._prose[keys[removed]])]
                    removed += 1
            current = self._prose.get(window)
            if not current or sum(current) < cfg.min_count or sum(baseline) < cfg.min_count:
                continue
            p, z, _ = binned_mann_whitney(current, baseline)
            now, before = binned_quantile(current, 0.5), binned_quantile(baseline, 0.5)
            assert now is not None and before is not None
            start = datetime.fromtimestamp(window * self._seconds, tz=UTC)
            if p < cfg.alpha and abs(now - before) >= cfg.min_shift:
                alerts.append(
                    Alert(
                        "slot_ratio_drift",
                        start,
                        start + cfg.window,
                        "",
                        "",
                        "prose_per_slot",
                        now,
                        before,
                        sum(current),
                        sum(baseline),
                        0,
                        0,
                        p,
                        cfg.alpha,
                        z,
                        "mann-whitney",
                    )
                )
                continue
            tail = self._tail_alert(current, baseline, start)
            if tail is not None:
                alerts.append(tail)
        return alerts

    def _tail_alert(self, current: list[int], baseline: list[int], start: datetime) -> Alert | None:
        """The upper tail: a larger share of templates above the baseline's p90 bin than the baseline has there.

        A few templates that route round their slots move the p90 (3.2 to 9.2 words per slot) and leave the
        median where it was, so the rank test on the whole distribution misses them.
        """
        cfg = self.config
        p90_now, p90_before = binned_quantile(current, 0.9), binned_quantile(baseline, 0.9)
        assert p90_now is not None and p90_before is not None
        if p90_now - p90_before < cfg.min_shift:
            return None
        above = bisect.bisect_right(PROSE_EDGES, p90_before)
        n1, n0 = sum(current), sum(baseline)
        x1, x0 = sum(current[above:]), sum(baseline[above:])
        p, statistic, test = proportion_increase_test(x1, n1, x0, n0)
        if p >= cfg.alpha:
            return None
        return Alert(
            "slot_ratio_drift",
            start,
            start + cfg.window,
            "",
            "",
            TAIL_STATUS,
            p90_now,
            p90_before,
            n1,
            n0,
            x1,
            x0,
            p,
            cfg.alpha,
            statistic,
            f"upper-tail {test}",
        )

    def report(self, read: Mapping[str, Any] | None = None) -> Report:
        windows = sorted(self._windows)
        alerts = self._rate_alerts(windows) + self._drift_alerts(windows)
        alerts.sort(key=lambda a: (a.window_start, a.kind, a.entity, a.field, a.status))
        return Report(
            config=self.config,
            windows=windows,
            fields=sorted(self._claims.values(), key=lambda s: (s.entity, s.field)),
            prose=self._prose,
            decisions=self._decisions,
            findings=self._findings,
            alerts=alerts,
            counters=dict(self.counters),
            read=dict(read or {}),
        )


def monitor_logs(paths: Iterable[str], config: MonitorConfig | None = None) -> Report:
    """Read logs (with their rotated files) in one pass and analyse them."""
    from guard.observe.events import ReadStats, read_events

    stats = ReadStats()
    monitor = Monitor(config)
    monitor.add_all(read_events(paths, stats))
    return monitor.report(read=stats.to_dict())


# -- text rendering ----------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def render(report: Report, console: Any, *, tail: int = 0) -> None:
    """Print the report's tables on a rich console, as many field columns side by side as fit; ``tail`` > 0
    keeps the last windows of the rate table (a negative one would silently drop the first ones instead).

    Names come from the model and file names from the operator: they are given to rich as
    :class:`~rich.text.Text`, never as markup, so ``[/]`` in a field prints as written.
    """
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    if tail < 0:
        raise OptionError(f"--tail must be 0 (all windows) or a number of windows, not {tail}", location="--tail")

    fields_per_table = max(1, (console.width - 22) // 27)

    cfg = report.config
    read = report.read
    head = (
        f"{read.get('events', report.counters['events'])} events from {len(read.get('files', []))} file(s)"
        f", {report.counters['claims']} claim results, {report.counters['decisions']} decisions"
        f" in {len(report.windows)} window(s) of {cfg.window}"
    )
    console.print(head)
    if read.get("malformed"):
        console.print(
            f"[yellow]{read['malformed']} malformed line(s) skipped[/], first: {escape(read['malformed_examples'][0])}"
        )
    if report.counters.get("untimed"):
        console.print(f"[yellow]{report.counters['untimed']} event(s) without a readable ts skipped[/]")
    if report.counters.get("folded"):
        console.print(
            f"[yellow]{report.counters['folded']} claim(s) folded into {UNLISTED}[/]: their entity or field is "
            f"not in the policy, or is one name too many (--max-fields {cfg.max_fields})"
        )

    summary = Table(title="Claims per field (all windows)", title_justify="left")
    summary.add_column("field", no_wrap=True)
    summary.add_column("resolved", justify="right")
    for status in RESOLVED:
        summary.add_column(status, justify="right")
    summary.add_column("unavailable", justify="right")
    for series in report.fields:
        totals = series.totals()
        resolved = sum(totals[i] for i in _RESOLVED_IDX)
        summary.add_row(
            Text(series.name),
            str(resolved),
            *[_pct(totals[_INDEX[s]] / resolved if resolved else None) for s in RESOLVED],
            str(totals[_INDEX[Status.UNAVAILABLE.value]]),
        )
    console.print(summary)

    flagged = {(a.window_start, a.entity, a.field, a.status) for a in report.alerts if a.kind == "rate_jump"}
    windows = report.windows[-tail:] if tail else report.windows
    short = {
        Status.CONTRADICTED.value: "c",
        Status.MALFORMED.value: "mf",
        Status.NOT_FOUND.value: "nf",
        Status.STALE.value: "st",
        Status.CONFIRMED.value: "ok",
    }
    for chunk in range(0, len(report.fields), fields_per_table):
        group = report.fields[chunk : chunk + fields_per_table]
        legend = ", ".join(f"{short.get(s, s)}={s}" for s in cfg.watched)
        table = Table(title=f"Rates per window ({legend}; * = alert)", title_justify="left")
        table.add_column("window start (UTC)")
        for series in group:
            table.add_column(Text(series.name), justify="right")
        for w in windows:
            if not any(series.resolved(w) for series in group):
                continue  # a row of empty cells says nothing, and many fields over many windows would be mostly that
            start = report.window_start(w)
            cells = []
            for series in group:
                n = series.resolved(w)
                if not n:
                    cells.append("")
                    continue
                parts = []
                for status in cfg.watched:
                    text = f"{short.get(status, status)} {_pct(series.rate(w, status))}"
                    if (start, series.entity, series.field, status) in flagged:
                        text = f"[bold red]{text}*[/]"
                    parts.append(text)
                cells.append(" ".join(parts) + f" n={n}")
            table.add_row(start.strftime("%Y-%m-%d %H:%M"), *cells)
        console.print(table)

    drifted = {a.window_start for a in report.alerts if a.kind == "slot_ratio_drift"}
    prose = Table(title="Prose words per slot (* = drift)", title_justify="left")
    for name in ("window start (UTC)", "templates", "median", "p90"):
        prose.add_column(name, justify="left" if name.startswith("window") else "right")
    for w in windows:
        s = report.prose_summary(w)
        if not s["n"]:
            continue
        start = report.window_start(w)
        mark = "[bold red]*[/]" if start in drifted else ""
        prose.add_row(start.strftime("%Y-%m-%d %H:%M"), str(s["n"]), f"{s['median']:.2f}{mark}", f"{s['p90']:.2f}")
    console.print(prose)

    if report.alerts:
        table = Table(title=f"Alerts ({len(report.alerts)})", title_justify="left")
        for name in ("window start (UTC)", "kind", "subject", "what"):
            table.add_column(name)
        for a in report.alerts:
            table.add_row(a.window_start.strftime("%Y-%m-%d %H:%M"), a.kind, Text(a.subject), Text(a.message))
        console.print(table)
    else:
        console.print("No alerts.")


__all__ = [
    "STATUSES",
    "RESOLVED",
    "WATCHED",
    "PROSE_EDGES",
    "MonitorConfig",
    "Monitor",
    "UNLISTED",
    "MAX_FIELDS",
    "Report",
    "Alert",
    "FieldSeries",
    "monitor_logs",
    "parse_window",
    "parse_time",
    "render",
    "proportion_increase_test",
    "binned_mann_whitney",
    "binned_quantile",
]
