"""Claim statuses: the outcome vocabulary shared by the checker, decisions, events and the monitor.

Light on purpose (no SQLAlchemy), so log readers can use it without a database driver.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """The outcome of checking one claim."""

    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    NOT_FOUND = "not_found"
    NOT_CHECKABLE = "not_checkable"
    STALE = "stale"
    UNAVAILABLE = "unavailable"


RESOLVED: frozenset[Status] = frozenset({Status.CONFIRMED, Status.CONTRADICTED, Status.NOT_FOUND, Status.STALE})
"""Statuses that say something about the model: ``unavailable`` and ``not_checkable`` do not."""

__all__ = ["Status", "RESOLVED"]
