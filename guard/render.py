"""Render an answer from database values: type- and locale-aware, and never from the model's strings.

Slot substitution walks the pieces found by :func:`guard.payload.template_pieces`;
``str.format`` is never called on model text, so a template cannot reach
attributes, index objects or choose a format width.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo
from typing import Any, Mapping

from babel import Locale

from babel.dates import format_date, format_datetime
from babel.numbers import format_currency, format_decimal, get_currency_precision

from guard.errors import PayloadError
from guard.payload import ClaimType, template_pieces
from guard.policy import FieldPolicy, Policy


@lru_cache(maxsize=64)
def _locale(name: str) -> Locale:
    return Locale.parse(name)


def format_value(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    """A normalised stored value as a person reads it in the policy's locale.

    >>> from guard.policy import FieldPolicy, Policy
    >>> p = Policy(locale="en_GB", entities={"o": {"table": "t", "fields": {"x": {"type": "integer"}}}})
    >>> format_value(129900, FieldPolicy(type="money", currency="GBP"), p)
    '£1,299.00'
    """
    return _format(field.type, field.currency, field.unit, policy.locale, policy.timezone, actual)


@lru_cache(maxsize=65536)
def _format(t: ClaimType, currency: str | None, unit: str | None, locale: str, tz: str, actual: Any) -> str:
    """Babel formatting, memoised: the same values (dates, small counts, statuses) recur across answers."""
    loc = _locale(locale)
    if t is ClaimType.MONEY:
        exponent = get_currency_precision(currency)
        return format_currency(Decimal(int(actual)).scaleb(-exponent), currency, locale=loc)
    if t is ClaimType.DATE:
        return format_date(actual, format="long", locale=loc)
    if t is ClaimType.TIMESTAMP:
        zone = ZoneInfo(tz)
        return format_datetime(actual.astimezone(zone), format="long", tzinfo=zone, locale=loc)
    if t is ClaimType.INTEGER:
        return format_decimal(int(actual), locale=loc)
    if t is ClaimType.DECIMAL:
        text = format_decimal(actual, locale=loc, decimal_quantization=False)
        return f"{text} {unit}" if unit else text
    if t is ClaimType.BOOLEAN:
        return "yes" if actual else "no"
    return str(actual)


def to_json(actual: Any) -> Any:
    """A normalised stored value as a JSON value (money stays in integer minor units; None stays None)."""
    if isinstance(actual, date):  # datetime included
        return actual.isoformat()
    if isinstance(actual, Decimal):
        return str(actual)
    return actual


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace every slot by ``values[name]``; literal text is kept, ``{{``/``}}`` unescaped."""
    out = []
    for piece in template_pieces(template):
        if piece.slot is None:
            out.append(piece.text)
        elif piece.slot.name in values:
            out.append(values[piece.slot.name])
        else:
            raise PayloadError(f"slot {{{piece.slot.name}}} at column {piece.slot.start + 1} has no claim with that "
                               "key", location=f"answer_template:{piece.slot.start + 1}")
    return "".join(out)


__all__ = ["format_value", "to_json", "substitute"]
