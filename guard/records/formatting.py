"""Stored values as a person reads them: the type's Babel formatting, remembered, never the model's strings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guard.payload import ClaimType
from guard.records.policy import FieldPolicy, Policy
from guard.records.types import TYPES, to_json

_MEMO_SIZE = 4096


def format_value(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    """A normalised stored value as a person reads it in the policy's locale (the reference :class:`Formatter`
    must agree with).

    >>> from guard.records.policy import FieldPolicy, Policy
    >>> p = Policy(locale="en_GB", entities={"o": {"table": "t", "fields": {"x": {"type": "integer"}}}})
    >>> format_value(129900, FieldPolicy(type="money", currency="GBP"), p)
    '£1,299.00'
    """
    return TYPES[field.type].format(actual, field, policy)


class Formatter:
    """:func:`format_value` for one kind of field, remembering texts: the same values (dates, small counts,
    statuses) recur from payload to payload.

    Decimals are remembered by their exact digits (``Decimal("4.2") == Decimal("4.20")``), so the memo can
    only ever return what Babel gives for those very digits.
    """

    def __init__(self, field: FieldPolicy, policy: Policy) -> None:
        self._format = TYPES[field.type].format
        self._field, self._policy = field, policy
        self._exact = field.type is ClaimType.DECIMAL
        self._memo: dict[Any, str] = {}

    def __call__(self, actual: Any) -> str:
        key = (actual, str(actual)) if self._exact else actual
        try:
            text = self._memo.get(key)
        except TypeError:
            return self._format(actual, self._field, self._policy)
        if text is None:
            text = self._format(actual, self._field, self._policy)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = text
        return text

    def many(self, values: Sequence[Any]) -> list[str]:
        """Texts of many values; a remembered text costs no Python call."""
        if self._exact:
            return list(map(self, values))
        try:
            found = list(map(self._memo.get, values))
        except TypeError:
            return list(map(self, values))
        if None in found:
            return [self(v) if t is None else t for t, v in zip(found, values)]
        return found  # type: ignore[return-value]  # no None left


_FORMATTERS: dict[tuple[Any, ...], Formatter] = {}


def formatter(field: FieldPolicy, policy: Policy) -> Formatter:
    """The shared :class:`Formatter` for fields formatted alike (type, currency, unit, locale, time zone)."""
    key = (field.type, field.currency, field.unit, policy.locale, policy.timezone)
    found = _FORMATTERS.get(key)
    if found is None:
        if len(_FORMATTERS) >= 1024:
            _FORMATTERS.clear()
        found = _FORMATTERS[key] = Formatter(field, policy)
    return found


__all__ = ["format_value", "Formatter", "formatter", "to_json"]
