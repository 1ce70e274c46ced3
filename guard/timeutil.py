"""The one duration syntax and the one ISO 8601 time reader of guard.

Policy freshness budgets, monitor windows and command-line times all go
through here, so ``1h30m`` means the same in a policy file as on the command
line. Light on purpose (standard library only): log readers import it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from guard.errors import OptionError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+)\s*([smhdw])")
_ISO = re.compile(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")
HINT = "write numbers with units s, m, h, d or w (30d, 2h, 1h30m), ISO 8601 (P1DT2H) or seconds as a number"


def parse_duration(
    value: str | int | float | timedelta, *, what: str = "duration", location: str = "", allow_zero: bool = True
) -> timedelta:
    """``30d``, ``1h30m``, ``1h 30m``, ``P1DT2H``, ``PT15M``, or seconds as a number -> a timedelta.

    Units are case-insensitive. A bare number in text (``"90"``) is refused
    because its unit would be a guess; a number typed as a number (YAML
    ``freshness: 90``) is seconds. Raises :class:`~guard.errors.OptionError`
    naming ``what`` and ``location``.
    """
    if isinstance(value, timedelta):
        seconds: float | None = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
        seconds = None
    elif isinstance(value, (int, float)):
        seconds = float(value) if abs(value) < 1e15 else None
    else:
        try:
            seconds = _seconds(value.strip())
        except (OverflowError, ValueError):
            raise OptionError(f"the {what} {value[:40]!r} is too long", location=location) from None
    if seconds is None:
        raise OptionError(f"cannot read the {what} {value!r}: {HINT}", location=location)
    if seconds < 0:
        raise OptionError(f"the {what} {value!r} cannot be negative", location=location)
    if not allow_zero and seconds == 0:
        raise OptionError(f"the {what} {value!r} must be longer than zero", location=location)
    if isinstance(value, timedelta):
        return value
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise OptionError(f"the {what} {value!r} is too long", location=location) from None


def _seconds(text: str) -> float | None:
    """Seconds in ``text`` (unit form or ISO 8601), or None when it is neither."""
    upper = text.upper()
    if upper.startswith("P"):
        m = _ISO.fullmatch(upper)
        if not m or upper in ("P", "PT"):
            return None
        w, d, h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        return w * 604800 + d * 86400 + h * 3600 + mi * 60 + s
    lower = text.lower()
    parts = _PART.findall(lower)
    if not parts or _PART.sub("", lower).strip():
        return None
    return float(sum(int(n) * _UNITS[u] for n, u in parts))


def iso_time(text: str) -> datetime:
    """ISO 8601 (``Z`` allowed) to an aware datetime; a naive time is taken as UTC. ValueError otherwise.

    The plain reader for hot loops (the monitor reads one per event);
    :func:`parse_time` is the same with guard's error.
    """
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_time(text: str, *, location: str = "") -> datetime:
    """:func:`iso_time` raising :class:`~guard.errors.OptionError` that names ``location``."""
    try:
        return iso_time(text.strip())
    except (TypeError, ValueError, AttributeError):
        raise OptionError(
            f"cannot read the time {text!r}: use ISO 8601, such as 2026-01-31T12:00:00Z", location=location
        ) from None


__all__ = ["parse_duration", "iso_time", "parse_time"]
