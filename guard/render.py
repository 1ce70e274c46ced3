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
from typing import Any, Callable, Mapping, Sequence

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


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace every slot by ``values[name]``; literal text is kept, ``{{``/``}}`` unescaped."""
    literals, names, starts = _layout(template)
    try:
        filled = list(map(values.__getitem__, names))
    except KeyError:
        missing = next(i for i, n in enumerate(names) if n not in values)
        raise PayloadError(f"slot {{{names[missing]}}} at column {starts[missing] + 1} has no claim with that key",
                           location=f"answer_template:{starts[missing] + 1}") from None
    return _join(literals, filled)


def substitute_in_order(template: str, keys: Sequence[str], texts: list[str]) -> str:
    """:func:`substitute` of ``dict(zip(keys, texts))``; when the slots are ``keys`` in order, no mapping is built."""
    literals, names, _ = _layout(template)
    if names == tuple(keys):
        return _join(literals, texts)
    return substitute(template, dict(zip(keys, texts)))


def _join(literals: tuple[str, ...], filled: list[str]) -> str:
    out = [*literals, *filled]
    out[::2] = literals
    out[1::2] = filled
    return "".join(out)


@lru_cache(maxsize=4096)
def _layout(template: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]:
    """The template as literal runs around its slots: ``literals[0] slot0 literals[1] slot1 ...``."""
    literals, names, starts, run = [], [], [], []
    for piece in template_pieces(template):
        if piece.slot is None:
            run.append(piece.text)
        else:
            literals.append("".join(run))
            run = []
            names.append(piece.slot.name)
            starts.append(piece.slot.start)
    literals.append("".join(run))
    return tuple(literals), tuple(names), tuple(starts)


__all__ = ["format_value", "formatter", "to_json", "substitute", "substitute_in_order"]
