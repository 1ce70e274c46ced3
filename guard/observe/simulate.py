"""Synthetic event logs with known regressions, to try the monitor and its alert rules.

A seeded stream of the events the gate logs (claim results, then the decision
for each request) in which chosen fields change their status rates from a
chosen time, and the prose-per-slot distribution may drift. The notebook, the
tests and the benchmark use it; an operator can use it to rehearse an alert.

Example::

    jump = Jump("order", "shipped_at", "contradicted", rate=0.2, start=START + timedelta(hours=18))
    with EventLog("demo.log") as log:
        for event in simulate_events(seed=7, hours=24, jumps=[jump]):
            log.emit(event)
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from guard.observe.schema import Event, claim_event, decision_event
from guard.records.status import Status

START = datetime(2026, 12, 1, tzinfo=UTC)


@dataclass(frozen=True)
class FieldProfile:
    """A claimable field and the share of each status its claims get normally."""

    entity: str
    field: str
    type: str
    rates: dict[str, float] = dataclasses.field(
        default_factory=lambda: {
            Status.CONTRADICTED.value: 0.02,
            Status.NOT_FOUND.value: 0.01,
            Status.STALE.value: 0.005,
            Status.UNAVAILABLE.value: 0.002,
        }
    )


@dataclass(frozen=True)
class Jump:
    """From ``start`` on, claims on ``entity.field`` get ``status`` with probability ``rate``."""

    entity: str
    field: str
    status: str
    rate: float
    start: datetime


@dataclass(frozen=True)
class ProseDrift:
    """From ``start`` on, templates carry ``factor`` times as much prose per slot."""

    start: datetime
    factor: float = 2.0


_REGENERATE = frozenset({Status.CONTRADICTED.value, Status.MALFORMED.value, Status.NOT_FOUND.value})
"""Statuses after which the simulated gate asks the model to regenerate."""

DEFAULT_FIELDS: tuple[FieldProfile, ...] = (
    FieldProfile("order", "shipped_at", "date"),
    FieldProfile("order", "total", "money"),
    FieldProfile("order", "status", "enum"),
    FieldProfile("customer", "tier", "enum"),
    FieldProfile("invoice", "due_date", "date"),
)


def simulate_events(
    *,
    seed: int = 0,
    start: datetime = START,
    hours: float = 24,
    requests_per_hour: int = 200,
    fields: Sequence[FieldProfile] = DEFAULT_FIELDS,
    jumps: Sequence[Jump] = (),
    drift: ProseDrift | None = None,
    domain: str | None = "orders",
) -> Iterator[Event]:
    """Yield claim and decision events (:mod:`guard.observe.schema`) in time order, reproducibly for one ``seed``."""
    rng = random.Random(seed)
    total = int(hours * requests_per_hour)
    step = timedelta(hours=1) / max(requests_per_hour, 1)
    for number in range(total):
        now = start + number * step
        ts = now.isoformat()
        rid = f"r-{seed}-{number}"
        chosen = rng.sample(list(fields), k=min(len(fields), rng.randint(1, 5)))
        statuses = []
        for profile in chosen:
            rates = dict(profile.rates)
            for jump in jumps:
                if (jump.entity, jump.field) == (profile.entity, profile.field) and now >= jump.start:
                    rates[jump.status] = jump.rate
            draw, status = rng.random(), Status.CONFIRMED.value
            for name, p in rates.items():
                if draw < p:
                    status = name
                    break
                draw -= p
            statuses.append(status)
            claim = claim_event(
                request_id=rid,
                domain=domain,
                entity=profile.entity,
                field=profile.field,
                key=profile.field,
                type=profile.type,
                status=status,
                latency_ms=round(rng.uniform(0.1, 2.0), 3),
            )
            claim["ts"] = ts
            yield claim
        n_slots = len(chosen)
        per_slot = rng.gammavariate(4.0, 0.75)
        if drift is not None and now >= drift.start:
            per_slot *= drift.factor
        prose = max(0, round(per_slot * n_slots))
        bad = any(s in _REGENERATE for s in statuses)
        findings = ["R401"] if prose / n_slots > 8 else []
        decision = decision_event(
            request_id=rid,
            domain=domain,
            action="regenerate_from_facts" if bad else "answer",
            n_claims=n_slots,
            n_slots=n_slots,
            prose_words=prose,
            prose_per_slot=round(prose / n_slots, 3),
            findings=findings,
            latency_ms=round(rng.uniform(0.5, 5.0), 3),
        )
        decision["ts"] = ts
        yield decision


__all__ = ["FieldProfile", "Jump", "ProseDrift", "DEFAULT_FIELDS", "START", "simulate_events"]
