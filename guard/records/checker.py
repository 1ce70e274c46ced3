"""Check every claim of a payload against the system of record.

Claims are grouped by entity so each entity costs one query. A claim is only
ever looked up when its (entity, field) pair is in the policy and its declared
type matches the policy's: the model cannot widen the whitelist or choose the
comparison.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any, TypeVar, cast

from guard.errors import OptionError, StoreUnavailable
from guard.payload import Claim, ClaimType, Payload
from guard.records import _columns
from guard.records.policy import FieldPolicy, Policy
from guard.records.results import UTC_NAMES, ClaimResult, stamp
from guard.records.status import Status
from guard.records.store import Read, RecordStore
from guard.records.types import TYPES, BadClaim, BadStored, Batch, ClaimOutOfRange, _exact

T = TypeVar("T")


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
    batch: Batch | None


_PLANS: dict[int, tuple[Policy, dict[tuple[str, str], _Field]]] = {}


def _plan(policy: Policy) -> dict[tuple[str, str], _Field]:
    """Every whitelisted (entity, field) of ``policy``; policies are immutable, so this is built once."""
    hit = _PLANS.get(id(policy))
    if hit is not None and hit[0] is policy:
        return hit[1]
    plan = {}
    for ename, ent in policy.entities.items():
        for fname, fp in ent.fields.items():
            comp = TYPES[fp.type]
            plan[ename, fname] = _Field(
                ename,
                fname,
                fp.type,
                fp.type.value,
                bool(ent.scope),
                ent.updated_at is not None,
                fp,
                comp.claimed,
                comp.stored,
                comp.equal,
                fp.freshness,
                comp.batch,
            )
    if len(_PLANS) >= 64:
        _PLANS.clear()
    _PLANS[id(policy)] = (policy, plan)
    return plan


def _result(c: Claim, status: Status, reason: str, **kw: Any) -> ClaimResult:
    return ClaimResult(
        key=c.key,
        entity=c.entity,
        entity_id=c.entity_id,
        field=c.field,
        type=c.type.value,
        status=status,
        reason=reason,
        claimed=c.value,
        **kw,
    )


_CONFIRMED, _CONTRADICTED, _MALFORMED, _NOT_FOUND, _STALE, _UNAVAILABLE = (
    Status.CONFIRMED,
    Status.CONTRADICTED,
    Status.MALFORMED,
    Status.NOT_FOUND,
    Status.STALE,
    Status.UNAVAILABLE,
)


def _judge(
    c: Claim,
    f: _Field,
    raw: Any,
    row_id: str,
    updated: datetime | None,
    iso: str | None,
    policy: Policy,
    now: datetime,
    latency: float,
) -> ClaimResult:
    """Compare one claim with its stored value (the row exists).

    A type that fails in a way it did not foresee (an overflow, a decimal signal) counts as having refused the
    value, so no comparator exception leaves the checker.
    """
    status, reason, actual, cause = _CONFIRMED, "", None, ""
    if raw is None:
        status, reason = _NOT_FOUND, "no value is recorded for this field"
    else:
        try:
            actual = f.stored(raw, f.policy, policy)
        except (BadStored, ArithmeticError, ValueError) as exc:
            status, reason, cause = _UNAVAILABLE, f"the stored value could not be read: {exc}", "garbage"
        else:
            budget = f.freshness
            if budget is not None and updated is None:
                status, reason = _STALE, "the record has no update time, so its freshness is unknown"
            elif budget is not None and updated is not None and now - updated > budget:
                status, reason = _STALE, f"the record was last updated {now - updated} ago; the budget is {budget}"
            else:
                try:
                    claimed = f.claimed(c.value, f.policy, policy)
                    if not (claimed == actual if f.equal is _exact else f.equal(claimed, actual, f.policy)):
                        status, reason = _CONTRADICTED, "the claimed value differs from the record"
                except ClaimOutOfRange as exc:
                    status, reason = _CONTRADICTED, f"the claimed value is beyond any record: {exc}"
                except BadClaim as exc:
                    status, reason = _MALFORMED, f"the claimed value is not a {f.type_name}: {exc}"
                except (ArithmeticError, ValueError) as exc:
                    status, reason = _CONTRADICTED, f"the claimed value is not a {f.type_name}: {exc}"
    return ClaimResult(
        key=c.key,
        entity=c.entity,
        entity_id=c.entity_id,
        field=c.field,
        type=f.type_name,
        status=status,
        reason=reason,
        claimed=c.value,
        actual=actual,
        raw=raw,
        row_id=row_id,
        updated_at=updated,
        latency_ms=latency,
        cause=cause,
        updated_iso=iso,
    )


def _unchecked(c: Claim, f: _Field | None, policy: Policy) -> ClaimResult:
    if f is None:
        return _result(
            c,
            Status.NOT_CHECKABLE,
            "this entity is not in the policy"
            if c.entity not in policy.entities
            else "this field is not readable under the policy",
        )
    if f.type is not c.type:
        return _result(
            c, Status.NOT_CHECKABLE, f"the claim says {c.type.value} but the policy types this field as {f.type_name}"
        )
    return _result(c, Status.NOT_CHECKABLE, "these records are scoped to a customer and no principal was given")


Rows = list[dict[str, Sequence[Any]] | StoreUnavailable]
"""The store's answer to a list of :class:`~guard.records.store.Read`: each entity's rows, or why there are none."""
Checking = Generator[list[Read], Rows, list[ClaimResult]]
"""A check that stops once to have its reads done (:func:`checking`), then returns the results."""


def check(
    payload: Payload, policy: Policy, store: RecordStore, *, principal: Any = None, now: datetime | None = None
) -> list[ClaimResult]:
    """One :class:`ClaimResult` per claim, in claim order. Never raises for database trouble.

    An empty principal is no principal: it names no customer, so scoped claims are not checkable.
    """
    return _check(payload, policy, store, principal, now, True)


def _check(
    payload: Payload, policy: Policy, store: RecordStore, principal: Any, now: datetime | None, batch: bool
) -> list[ClaimResult]:
    """:func:`check`; ``batch=False`` judges claim by claim (the reference the batch path is tested against)."""
    return drive(checking(payload, policy, store, principal, now, batch), store.read_many)


def drive(steps: Generator[list[Read], Rows, T], read: Callable[[list[Read]], Rows]) -> T:
    """Run ``steps`` to its end, doing each batch of reads it stops for with ``read``."""
    try:
        reads = next(steps)
        while True:
            reads = steps.send(read(reads))
    except StopIteration as done:
        return cast(T, done.value)


async def adrive(steps: Generator[list[Read], Rows, T], read: Callable[[list[Read]], Awaitable[Rows]]) -> T:
    """:func:`drive` with reads that are awaited."""
    try:
        reads = next(steps)
        while True:
            reads = steps.send(await read(reads))
    except StopIteration as done:
        return cast(T, done.value)


def checking(
    payload: Payload, policy: Policy, store: RecordStore, principal: Any, now: datetime | None, batch: bool = True
) -> Checking:
    """:func:`check` with its database reads left to the caller: the generator yields every entity's
    :class:`~guard.records.store.Read` at once (nothing when no claim needs the database) and is sent the
    store's answer (:meth:`~guard.records.store.RecordStore.read_many`), so that one checkout, and where the
    driver can, one round trip, serves the payload; :class:`guard.pipeline.AsyncGuard` awaits them."""
    try:
        now = now.astimezone(UTC) if now and now.tzinfo else (now.replace(tzinfo=UTC) if now else datetime.now(UTC))
    except OverflowError:
        raise OptionError(f"now ({now}) is beyond the years 1 to 9999 in UTC", location="now") from None
    plan = _plan(policy)
    claims = payload.claims
    results: list[ClaimResult | None] = [None] * len(claims)
    n = len(claims)
    cols = _columns.claim_columns(claims)
    ents, names = cols[_columns.ENTITY], cols[_columns.FIELD]
    groups: dict[tuple[str, str], list[int]] = {}
    if n and ents.count(ents[0]) == n and names.count(names[0]) == n:
        groups[ents[0], names[0]] = list(range(n))
    else:
        for i, k in enumerate(zip(ents, names)):
            idx = groups.get(k)
            if idx is None:
                groups[k] = [i]
            else:
                idx.append(i)
    unscoped = principal is None or (isinstance(principal, str) and not principal)
    if unscoped:
        principal = None
    wanted: dict[str, list[_columns.Part]] = {}
    for (entity, name), idx in groups.items():
        f = plan.get((entity, name))
        if f is None or (unscoped and f.scoped):
            for i in idx:
                results[i] = _unchecked(claims[i], f, policy)
            continue
        columns = cols if len(idx) == n else _columns.take(cols, idx)
        types = columns[_columns.TYPE]
        if types.count(f.type) != len(idx):
            for i, t in zip(idx, types):
                if t is not f.type:
                    results[i] = _unchecked(claims[i], f, policy)
            idx = [i for i, t in zip(idx, types) if t is f.type]
            if not idx:
                continue
            columns = _columns.take(cols, idx)
        try:
            found_keys = store.keys(entity, list(columns[_columns.ENTITY_ID]))
        except StoreUnavailable as exc:
            for i in idx:
                results[i] = _result(claims[i], Status.UNAVAILABLE, exc.message, cause=getattr(exc, "cause", "error"))
            continue
        if None in found_keys:
            for i, key in zip(idx, found_keys):
                if key is None:
                    results[i] = _result(claims[i], Status.NOT_FOUND, "no record has this id")
            idx = [i for i, key in zip(idx, found_keys) if key is not None]
            if not idx:
                continue
            columns = _columns.take(cols, idx)
        keys = [key for key in found_keys if key is not None]
        wanted.setdefault(entity, []).append(_columns.Part(f, idx, keys, columns))
    if not wanted:
        return cast(list[ClaimResult], results)  # every position is filled above
    db_tz, db_utc = policy.db_tz, policy.db_timezone in UTC_NAMES
    no_stamp = (None, None)
    t0 = time.perf_counter()
    reads = []
    for entity, parts in wanted.items():
        every_key = parts[0].keys if len(parts) == 1 else [k for part in parts for k in part.keys]
        reads.append(Read(entity, every_key, store.fields(entity, [part.field.name for part in parts]), principal))
    answers = yield reads
    elapsed = (time.perf_counter() - t0) * 1000
    per_key = elapsed / sum(len(r.keys) for r in reads)
    for parts, read, rows in zip(wanted.values(), reads, answers):
        if isinstance(rows, StoreUnavailable):
            for part in parts:
                for i in part.idx:
                    results[i] = _result(
                        claims[i],
                        Status.UNAVAILABLE,
                        rows.message,
                        latency_ms=elapsed,
                        cause=getattr(rows, "cause", "error"),
                    )
            continue
        latency = per_key
        pos = {c: j for j, c in enumerate(cast(tuple[str, ...], read.fields), 1)}
        stamped = parts[0].field.has_updated
        stamps: dict[str, tuple[datetime | None, str | None]] = {}
        for part in parts:
            f, idx, keys = part.field, part.idx, part.keys
            j = pos.get(f.name)
            if j is None:
                for i in idx:
                    results[i] = _result(
                        claims[i],
                        Status.NOT_CHECKABLE,
                        "this field is not readable by the record store",
                        latency_ms=latency,
                    )
                continue
            found = list(map(rows.get, keys))
            if batch and len(found) >= _columns.COLUMN_FROM and f.batch is not None and None not in found:
                hits = cast("list[Sequence[Any]]", found)
                raws = list(map(itemgetter(j), hits))
                if stamped:
                    upds, isos = _columns.stamps(list(map(_last, hits)), db_tz, db_utc)
                else:
                    upds, isos = [None] * len(found), [None] * len(found)
                judged = _columns.judge_column(part, raws, upds, isos, policy, now, latency)
                if judged is not None:
                    if len(idx) == len(results):
                        results[:] = judged
                    else:
                        for i, r in zip(idx, judged):
                            results[i] = r
                    continue
            if stamped and not stamps:
                if batch:
                    stamps = dict(zip(rows, zip(*_columns.stamps(list(map(_last, rows.values())), db_tz, db_utc))))
                else:
                    stamps = {key: stamp(row[-1], db_tz, db_utc) for key, row in rows.items()}
            for i, key, row in zip(idx, keys, found):
                if row is None:
                    results[i] = _result(claims[i], Status.NOT_FOUND, "no record has this id", latency_ms=latency)
                else:
                    upd, iso = stamps.get(key, no_stamp)
                    results[i] = _judge(
                        claims[i],
                        f,
                        row[j],
                        row[0] if type(row[0]) is str else str(row[0]),
                        upd,
                        iso,
                        policy,
                        now,
                        latency,
                    )
    return cast(list[ClaimResult], results)  # every position is filled above


_last = itemgetter(-1)

__all__ = ["Status", "ClaimResult", "check", "checking", "drive", "adrive"]
