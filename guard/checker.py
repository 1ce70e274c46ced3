"""Check every claim of a payload against the system of record.

Claims are grouped by entity so each entity costs one query. A claim is only
ever looked up when its (entity, field) pair is in the policy and its declared
type matches the policy's: the model cannot widen the whitelist or choose the
comparison.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from enum import Enum
from typing import Any, Callable, NamedTuple

from guard.compare import COMPARATORS, BadClaim, BadStored, _exact
from guard.errors import StoreUnavailable
from guard.payload import Claim, ClaimType, Payload
from guard.policy import FieldPolicy, Policy
from guard.store import RecordStore


class Status(str, Enum):
    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    NOT_CHECKABLE = "not_checkable"
    STALE = "stale"
    UNAVAILABLE = "unavailable"


class ClaimResult(NamedTuple):
    """The outcome for one claim (an immutable record).

    ``actual`` is the stored value normalised to the type (int minor units,
    ``date``, aware ``datetime``, ``Decimal``, canonical enum, ...); it is what
    renders. ``row_id`` is the id as the database holds it, so a citation or
    refusal never repeats the model's spelling of it. A named tuple rather than
    a frozen dataclass: a payload makes one per claim, and a frozen dataclass
    costs ten times as much to build.
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


@dataclass(frozen=True, slots=True)
class _Field:
    """A whitelisted (entity, field) with everything the comparison needs, looked up once per policy."""

    entity: str
    name: str
    type: ClaimType
    type_name: str
    scoped: bool
    has_updated: bool
    policy: FieldPolicy
    claimed: Callable[[Any, FieldPolicy, Policy], Any]
    stored: Callable[[Any, FieldPolicy, Policy], Any]
    equal: Callable[[Any, Any, FieldPolicy], bool]
    freshness: timedelta | None


_PLANS: dict[int, tuple[Policy, dict[tuple[str, str], _Field]]] = {}


def _plan(policy: Policy) -> dict[tuple[str, str], _Field]:
    """Every whitelisted (entity, field) of ``policy``; policies are immutable, so this is built once."""
    hit = _PLANS.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    plan = {}
    for ename, ent in policy.entities.items():
        for fname, fp in ent.fields.items():
            comp = COMPARATORS[fp.type]
            plan[ename, fname] = _Field(ename, fname, fp.type, fp.type.value, bool(ent.scope),
                                        ent.updated_at is not None, fp, comp.claimed, comp.stored, comp.equal,
                                        fp.freshness)
    if len(_PLANS) >= 64:
        _PLANS.clear()
    _PLANS[id(policy)] = (policy, plan)
    return plan


_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu"})


def _aware(value: Any, tz: tzinfo, tz_is_utc: bool) -> datetime | None:
    """A stored update time as an aware UTC datetime; naive values are in the database's timezone.

    ``fromisoformat`` with the offset appended is a tenth of the cost of ``replace(tzinfo=...)``.
    """
    if isinstance(value, str):
        if tz_is_utc:
            try:
                stamped = datetime.fromisoformat(value + "+00:00")
                if stamped.tzinfo is not None:
                    return stamped
            except ValueError:
                pass
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        if tz_is_utc:
            return value.replace(tzinfo=timezone.utc)
        value = value.replace(tzinfo=tz)
    return value.astimezone(timezone.utc)


def _result(c: Claim, status: Status, reason: str, **kw: Any) -> ClaimResult:
    return ClaimResult(key=c.key, entity=c.entity, entity_id=c.entity_id, field=c.field, type=c.type.value,
                       status=status, reason=reason, claimed=c.value, **kw)


_new = tuple.__new__
_CONFIRMED, _CONTRADICTED, _NOT_FOUND, _STALE, _UNAVAILABLE = (
    Status.CONFIRMED, Status.CONTRADICTED, Status.NOT_FOUND, Status.STALE, Status.UNAVAILABLE)


def _judge(c: Claim, f: _Field, raw: Any, row_id: str, updated: datetime | None, policy: Policy,
           now: datetime, latency: float) -> ClaimResult:
    """Compare one claim with its stored value (the row exists)."""
    status, reason, actual, cause = _CONFIRMED, "", None, ""
    if raw is None:
        status, reason = _NOT_FOUND, "no value is recorded for this field"
    else:
        try:
            actual = f.stored(raw, f.policy, policy)
        except BadStored as exc:
            status, reason, cause = _UNAVAILABLE, f"the stored value could not be read: {exc}", "garbage"
        else:
            budget = f.freshness
            if budget is not None and updated is None:
                status, reason = _STALE, "the record has no update time, so its freshness is unknown"
            elif budget is not None and now - updated > budget:  # type: ignore[operator]
                status, reason = _STALE, f"the record was last updated {now - updated} ago; the budget is {budget}"
            else:
                try:
                    claimed = f.claimed(c.value, f.policy, policy)
                    if not (claimed == actual if f.equal is _exact else f.equal(claimed, actual, f.policy)):
                        status, reason = _CONTRADICTED, "the claimed value differs from the record"
                except BadClaim as exc:
                    status, reason = _CONTRADICTED, f"the claimed value is not a {f.type_name}: {exc}"
    return _new(ClaimResult, (c.key, c.entity, c.entity_id, c.field, f.type_name, status, reason, c.value,
                              actual, raw, row_id, updated, latency, cause))


def _unchecked(c: Claim, f: _Field | None, policy: Policy) -> ClaimResult:
    if f is None:
        return _result(c, Status.NOT_CHECKABLE, "this entity is not in the policy" if c.entity not in policy.entities
                       else "this field is not readable under the policy")
    if f.type is not c.type:
        return _result(c, Status.NOT_CHECKABLE,
                       f"the claim says {c.type.value} but the policy types this field as {f.type_name}")
    return _result(c, Status.NOT_CHECKABLE, "these records are scoped to a customer and no principal was given")


def check(payload: Payload, policy: Policy, store: RecordStore, *, principal: Any = None,
          now: datetime | None = None) -> list[ClaimResult]:
    """One :class:`ClaimResult` per claim, in claim order. Never raises for database trouble."""
    now = now.astimezone(timezone.utc) if now and now.tzinfo else (now.replace(tzinfo=timezone.utc) if now
                                                                   else datetime.now(timezone.utc))
    plan = _plan(policy)
    claims = payload.claims
    results: list[ClaimResult | None] = [None] * len(claims)
    wanted: dict[str, list[tuple[int, Claim, str, _Field]]] = {}
    keyers: dict[str, Callable[[Any], str | None]] = {}
    unscoped = principal is None
    for i, c in enumerate(claims):
        f = plan.get((c.entity, c.field))
        if f is None or f.type is not c.type or (unscoped and f.scoped):
            results[i] = _unchecked(c, f, policy)
            continue
        keyer = keyers.get(c.entity)
        if keyer is None:
            try:
                keyer = keyers[c.entity] = store.keyer(c.entity)
            except StoreUnavailable as exc:
                results[i] = _result(c, Status.UNAVAILABLE, exc.message, cause=getattr(exc, "cause", "error"))
                continue
        key = keyer(c.entity_id)
        if key is None:
            results[i] = _result(c, Status.NOT_FOUND, "no record has this id")
        elif c.entity in wanted:
            wanted[c.entity].append((i, c, key, f))
        else:
            wanted[c.entity] = [(i, c, key, f)]
    db_tz, db_utc = policy.db_tz, policy.db_timezone in _UTC_NAMES
    for entity, items in wanted.items():
        t0 = time.perf_counter()
        claimed_fields = {it[3].name for it in items}
        ordered = tuple(n for n in store.fields(entity) if n in claimed_fields)
        try:
            rows = store.read(entity, {it[2] for it in items}, ordered, principal=principal)
        except StoreUnavailable as exc:
            latency = (time.perf_counter() - t0) * 1000
            for i, c, _, _ in items:
                results[i] = _result(c, Status.UNAVAILABLE, exc.message, latency_ms=latency,
                                     cause=getattr(exc, "cause", "error"))
            continue
        latency = (time.perf_counter() - t0) * 1000 / len(items)
        pos = {n: j for j, n in enumerate(ordered, 1)}
        stamped = items[0][3].has_updated
        updated = {k: _aware(r[-1], db_tz, db_utc) for k, r in rows.items()} if stamped else {}
        for i, c, key, f in items:
            row = rows.get(key)
            j = pos.get(f.name)
            if row is None:
                results[i] = _result(c, Status.NOT_FOUND, "no record has this id", latency_ms=latency)
            elif j is None:
                results[i] = _result(c, Status.NOT_CHECKABLE, "this field is not readable by the record store",
                                     latency_ms=latency)
            else:
                row_id = row[0] if type(row[0]) is str else str(row[0])
                results[i] = _judge(c, f, row[j], row_id, updated.get(key), policy, now, latency)
    return results  # type: ignore[return-value]


__all__ = ["Status", "ClaimResult", "check"]
