"""Claim statuses: the outcome vocabulary shared by the checker, decisions, events and the monitor.

Light on purpose (no SQLAlchemy), so log readers can use it without a database driver.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """The outcome of checking one claim."""

    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    MALFORMED = "malformed"
    """The model wrote something that is not a value of the claim's type ("€45.99" for a GBP amount,
    "22/07/2026" for a date): regenerated like a contradiction, but counted apart, so a model that writes
    values in the wrong format does not look like one that states wrong facts."""
    NOT_FOUND = "not_found"
    NOT_CHECKABLE = "not_checkable"
    STALE = "stale"
    UNAVAILABLE = "unavailable"


RESOLVED: frozenset[Status] = frozenset(
    {Status.CONFIRMED, Status.CONTRADICTED, Status.MALFORMED, Status.NOT_FOUND, Status.STALE}
)
"""Statuses that say something about the model: ``unavailable`` and ``not_checkable`` do not."""

__all__ = ["Status", "RESOLVED"]
