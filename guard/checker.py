"""Check every claim of a payload against the system of record.

Claims are grouped by entity so each entity costs one query. A claim is only
ever looked up when its (entity, field) pair is in the policy and its declared
type matches the policy's: the model cannot widen the whitelist or choose the
comparison.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from guard.compare import COMPARATORS, BadClaim, BadStored
from guard.errors import StoreUnavailable
from guard.payload import Claim, Payload
from guard.policy import FieldPolicy, Policy
from guard.store import ID, UPDATED_AT, RecordStore


class Status(str, Enum):
    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    NOT_CHECKABLE = "not_checkable"
    STALE = "stale"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """The outcome for one claim.

    ``actual`` is the stored value normalised to the type (int minor units,
    ``date``, aware ``datetime``, ``Decimal``, canonical enum, ...); it is what
    renders. ``row_id`` is the id as the database holds it, so a citation or
    refusal never repeats the model's spelling of it.
    """

    key: str
    entity: str
    entity_id: Any
    field: str
    type: str
    status: Status
    reason: str = ""
    claimed: Any = None
    actual: Any = None
    raw: Any = None
    row_id: str | None = None
    updated_at: datetime | None = None
    latency_ms: float = 0.0
    cause: str = ""

    @property
    def citation(self) -> str | None:
        if self.row_id is None:
            return None
        return f"{self.entity}:{self.row_id}#{self.field}"

    @property
    def resolved(self) -> bool:
        """Whether the database gave a usable value for the claim (confirmed or contradicted)."""
        return self.status in (Status.CONFIRMED, Status.CONTRADICTED) and self.row_id is not None \
            and self.actual is not None


def _aware(value: Any, policy: Policy) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=policy.db_tz)
    return value.astimezone(timezone.utc)


def _result(c: Claim, status: Status, reason: str, **kw: Any) -> ClaimResult:
    return ClaimResult(key=c.key, entity=c.entity, entity_id=c.entity_id, field=c.field, type=c.type.value,
                       status=status, reason=reason, claimed=c.value, **kw)


def _judge(c: Claim, fp: FieldPolicy, row: dict[str, Any], updated: datetime | None, policy: Policy,
           now: datetime, latency: float) -> ClaimResult:
    raw = row.get(c.field)
    row_id = str(row[ID])

    def result(status: Status, reason: str, actual: Any = None, cause: str = "") -> ClaimResult:
        return ClaimResult(c.key, c.entity, c.entity_id, c.field, c.type.value, status, reason, c.value, actual,
                           raw, row_id, updated, latency, cause)

    if raw is None:
        return result(Status.NOT_FOUND, "no value is recorded for this field")
    comp = COMPARATORS[fp.type]
    try:
        actual = comp.stored(raw, fp, policy)
    except BadStored as exc:
        return result(Status.UNAVAILABLE, f"the stored value could not be read: {exc}", cause="garbage")
    if fp.freshness is not None:
        if updated is None:
            return result(Status.STALE, "the record has no update time, so its freshness is unknown", actual)
        age = now - updated
        if age > fp.freshness:
            return result(Status.STALE, f"the record was last updated {age} ago; the budget is {fp.freshness}",
                          actual)
    try:
        claimed = comp.claimed(c.value, fp, policy)
    except BadClaim as exc:
        return result(Status.CONTRADICTED, f"the claimed value is not a {fp.type.value}: {exc}", actual)
    if comp.equal(claimed, actual, fp):
        return result(Status.CONFIRMED, "", actual)
    return result(Status.CONTRADICTED, "the claimed value differs from the record", actual)


def check(payload: Payload, policy: Policy, store: RecordStore, *, principal: Any = None,
          now: datetime | None = None) -> list[ClaimResult]:
    """One :class:`ClaimResult` per claim, in claim order. Never raises for database trouble."""
    now = now.astimezone(timezone.utc) if now and now.tzinfo else (now.replace(tzinfo=timezone.utc) if now
                                                                   else datetime.now(timezone.utc))
    results: dict[int, ClaimResult] = {}
    wanted: dict[str, list[tuple[int, Claim, str]]] = defaultdict(list)
    for i, c in enumerate(payload.claims):
        ent = policy.entities.get(c.entity)
        fp = ent.fields.get(c.field) if ent else None
        if ent is None:
            results[i] = _result(c, Status.NOT_CHECKABLE, "this entity is not in the policy")
        elif fp is None:
            results[i] = _result(c, Status.NOT_CHECKABLE, "this field is not readable under the policy")
        elif fp.type != c.type:
            results[i] = _result(c, Status.NOT_CHECKABLE,
                                 f"the claim says {c.type.value} but the policy types this field as {fp.type.value}")
        elif ent.scope and principal is None:
            results[i] = _result(c, Status.NOT_CHECKABLE,
                                 "these records are scoped to a customer and no principal was given")
        else:
            try:
                key = store.id_key(c.entity, c.entity_id)
            except StoreUnavailable as exc:
                results[i] = _result(c, Status.UNAVAILABLE, exc.message, cause=getattr(exc, "cause", "error"))
                continue
            if key is None:
                results[i] = _result(c, Status.NOT_FOUND, "no record has this id")
            else:
                wanted[c.entity].append((i, c, key))
    for entity, items in wanted.items():
        t0 = time.perf_counter()
        try:
            rows = store.fetch(entity, [k for _, _, k in items], principal=principal)
        except StoreUnavailable as exc:
            latency = (time.perf_counter() - t0) * 1000
            for i, c, _ in items:
                results[i] = _result(c, Status.UNAVAILABLE, exc.message, latency_ms=latency,
                                     cause=getattr(exc, "cause", "error"))
            continue
        latency = (time.perf_counter() - t0) * 1000 / len(items)
        ent = policy.entities[entity]
        updated: dict[str, datetime | None] = {}
        for i, c, key in items:
            row = rows.get(key)
            if row is None:
                results[i] = _result(c, Status.NOT_FOUND, "no record has this id", latency_ms=latency)
                continue
            if key not in updated:
                updated[key] = _aware(row.get(UPDATED_AT), policy) if ent.updated_at else None
            results[i] = _judge(c, ent.fields[c.field], row, updated[key], policy, now, latency)
    return [results[i] for i in range(len(payload.claims))]


__all__ = ["Status", "ClaimResult", "check"]
