"""The outcome record of one claim, and the reference reading of a record's update time."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any, NamedTuple

from guard.records.status import Status


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
    updated_iso: str | None = None
    """``updated_at`` as the ISO 8601 text a citation carries, made once per row."""

    @property
    def citation(self) -> str | None:
        """``entity:row_id#field``, the record an answer cites; None when no row was found."""
        if self.row_id is None:
            return None
        return f"{self.entity}:{self.row_id}#{self.field}"

    @property
    def resolved(self) -> bool:
        """Whether the database gave a usable value for the claim (confirmed, contradicted or malformed)."""
        return (
            self.status in (Status.CONFIRMED, Status.CONTRADICTED, Status.MALFORMED)
            and self.row_id is not None
            and self.actual is not None
        )


RESULT_FIELDS: tuple[str, ...] = ClaimResult._fields
"""The field order of :class:`ClaimResult`; the column fast path builds results in this order."""


UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu"})


def aware(value: Any, tz: tzinfo, tz_is_utc: bool) -> datetime | None:
    """A stored update time as an aware UTC datetime; naive values are in the database's timezone. None when
    it is unreadable, or beyond the calendar once in UTC (``0001-01-01 00:00`` in Tokyo).

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
    when: datetime = value
    if when.tzinfo is None:
        if tz_is_utc:
            return when.replace(tzinfo=UTC)
        when = when.replace(tzinfo=tz)
    try:
        return when.astimezone(UTC)
    except OverflowError:
        return None


def stamp(value: Any, tz: tzinfo, tz_is_utc: bool) -> tuple[datetime | None, str | None]:
    """A stored update time as (aware UTC datetime, its ``isoformat()``): the reference for ``_columns.stamps``."""
    aware_ = aware(value, tz, tz_is_utc)
    return aware_, None if aware_ is None else aware_.isoformat()


__all__ = ["ClaimResult", "RESULT_FIELDS", "Status", "UTC_NAMES", "stamp"]
