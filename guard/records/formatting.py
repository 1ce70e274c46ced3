"""Stored values as a person reads them: type- and locale-aware (Babel), never the model's strings."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from babel import Locale
from babel.dates import format_date, format_datetime
from babel.numbers import format_currency, format_decimal, get_currency_precision

from guard.payload import ClaimType
from guard.records.policy import FieldPolicy, Policy


@lru_cache(maxsize=64)
def _locale(name: str) -> Locale:
    return Locale.parse(name)


def format_value(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    """A normalised stored value as a person reads it in the policy's locale.

    >>> from guard.records.policy import FieldPolicy, Policy
    >>> p = Policy(locale="en_GB", entities={"o": {"table": "t", "fields": {"x": {"type": "integer"}}}})
    >>> format_value(129900, FieldPolicy(type="money", currency="GBP"), p)
    '£1,299.00'
    """
    return formatter(field, policy)(actual)


_MEMO_SIZE = 4096
_FORMATTERS: dict[tuple[Any, ...], Callable[[Any], str]] = {}


def formatter(field: FieldPolicy, policy: Policy) -> Callable[[Any], str]:
    """``format_value`` for one field, memoised: the same values (dates, small counts, statuses) recur.

    ``formatter(...).many(values)`` formats a list at once.

    Decimals are memoised by their exact digits (``Decimal("4.2") == Decimal("4.20")``), so the memo can
    only ever return what Babel gives for those very digits.
    """
    spec = (field.type, field.currency, field.unit, policy.locale, policy.timezone)
    fmt = _FORMATTERS.get(spec)
    if fmt is not None:
        return fmt
    memo: dict[Any, str] = {}
    exact = field.type is ClaimType.DECIMAL

    def fmt(actual: Any) -> str:
        k = (actual, str(actual)) if exact else actual
        try:
            text = memo.get(k)
        except TypeError:
            return _format(*spec, actual)
        if text is None:
            text = _format(*spec, actual)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[k] = text
        return text

    def many(values: list[Any]) -> list[str]:
        """``fmt`` of many values; a remembered text costs no Python call."""
        if exact:
            return list(map(fmt, values))
        try:
            texts = list(map(memo.get, values))
        except TypeError:
            return list(map(fmt, values))
        if None in texts:
            texts = [fmt(v) if t is None else t for t, v in zip(texts, values)]
        return texts

    fmt.many = many  # type: ignore[attr-defined]
    if len(_FORMATTERS) >= 1024:
        _FORMATTERS.clear()
    _FORMATTERS[spec] = fmt
    return fmt


def _format(t: ClaimType, currency: str | None, unit: str | None, locale: str, tz: str, actual: Any) -> str:
    """Babel formatting of one value."""
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


__all__ = ["format_value", "formatter", "to_json"]
