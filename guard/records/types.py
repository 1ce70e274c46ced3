"""One spec per claim type: everything guard does that depends on a claim's type, in one place.

A :class:`TypeSpec` parses the model's value, normalises the database's,
compares them (one at a time, and optionally a column at a time), formats the
stored value for a person (Babel), gives it as JSON, hints its JSON Schema for
structured output, names the policy options that apply to the type, and says
whether its column must hold integers. :data:`TYPES` holds one spec per
:class:`~guard.payload.ClaimType`; no other module switches on the type.

A claimed value that cannot be read as the type raises :class:`BadClaim` (the
claim is then contradicted: the model said something the field cannot hold); a
stored value that cannot be read raises :class:`BadStored` (the system of
record answered garbage: unavailable). Floats never meet floats: numbers go
through ``Decimal(str(x))``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Context, Decimal, InvalidOperation, localcontext
from functools import lru_cache
from operator import eq
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import regex
from babel import Locale
from babel.dates import format_date, format_datetime
from babel.numbers import (
    NumberFormatError,
    format_currency,
    format_decimal,
    get_currency_precision,
    get_currency_symbol,
    parse_decimal,
)

from guard.payload import ClaimType

if TYPE_CHECKING:
    from guard.records.policy import FieldPolicy, Policy


class BadClaim(ValueError):
    """The claimed value is not a value of the field's type (the claim is ``malformed``)."""


class ClaimOutOfRange(BadClaim):
    """The claimed value is of the field's type but beyond what any record holds (``1E+999999999``, ``inf``, a
    time past the year 9999): no stored value can equal it, so the claim is ``contradicted``."""


def _out_of_range(err: type[ValueError]) -> type[ValueError]:
    return ClaimOutOfRange if err is BadClaim else err


class BadStored(ValueError):
    """The stored value is not a value of the field's type."""


MAX_EXPONENT = 1000
"""Numbers beyond 10**±1000, or with more digits than that, are rejected before any arithmetic: no record holds
them, and neither decimal arithmetic nor Babel could take them."""
_BIG = 10**MAX_EXPONENT
_WIDE = Context(prec=2 * MAX_EXPONENT + 64)
"""Room for every number :func:`_bounded` lets through: Babel parses and formats in the current context, whose
28 digits would make ``1,000,000,000,000,000,000,000,000,000`` an ``InvalidOperation``."""
_INT = regex.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)")
_SPACES = regex.compile(r"[\s\u00a0\u202f]+")
_MACHINE = regex.compile(r"-?[0-9]+(?:\.[0-9]+)?")
"""A number as ``guard schema`` asks the model to write it (``12.50``): read the same in every locale."""


def _decimal(value: Any, err: type[ValueError], what: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise err(f"{value!r} is not {what}")
    if isinstance(value, (int, Decimal)):
        d = Decimal(value)
    elif isinstance(value, float):
        d = Decimal(repr(value))
    elif isinstance(value, str):
        text = _SPACES.sub("", value).replace(",", "").replace("_", "")
        try:
            d = Decimal(text)
        except InvalidOperation:
            raise err(f"'{value}' is not {what}") from None
    else:
        raise err(f"{type(value).__name__} is not {what}")
    return _bounded(d, err, what, value)


def _bounded(d: Decimal, err: type[ValueError], what: str, value: Any) -> Decimal:
    """A finite number of sane magnitude: ``1E+999999999`` would overflow decimal arithmetic, ``inf`` and
    ``NaN`` have no integer value, and none of them is a value a record holds."""
    if not d.is_finite() or (d and (abs(d.adjusted()) > MAX_EXPONENT or len(d.as_tuple().digits) > MAX_EXPONENT)):
        raise _out_of_range(err)(f"{_shown(value)} is not {what}")
    return d


def _whole(number: int, err: type[ValueError], what: str) -> int:
    if -_BIG < number < _BIG:
        return number
    raise _out_of_range(err)(f"{_shown(number)} is not {what}")


def _shown(value: Any) -> str:
    """A value as a message quotes it: short, and never a conversion that can fail (a 5,000-digit int)."""
    if isinstance(value, int) and not -_BIG < value < _BIG:
        return f"a number of more than {MAX_EXPONENT} digits"
    text = str(value)
    return f"'{text}'" if len(text) <= 60 else f"'{text[:57]}...'"


def _integer_claim(value: Any, field: FieldPolicy, policy: Policy) -> int:
    if type(value) is int and -_BIG < value < _BIG:
        return value
    if isinstance(value, bool):
        raise BadClaim(f"{value!r} is a boolean, not an integer")
    if isinstance(value, int):
        return _whole(int(value), BadClaim, "an integer")
    if isinstance(value, float):
        if value.is_integer():
            return _whole(int(value), BadClaim, "an integer")
        raise BadClaim(f"{value!r} is not a whole number")
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        if len(value) > 2 * MAX_EXPONENT:  # a whole number, too long for int() to read or any record to hold
            raise ClaimOutOfRange(f"{_shown(value)} is not an integer")
        return _whole(int(value.strip().replace(",", "")), BadClaim, "an integer")
    raise BadClaim(f"{_shown(value)} is not an integer")


def _integer_stored(value: Any, field: FieldPolicy, policy: Policy) -> int:
    if type(value) is int and -_BIG < value < _BIG:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        if isinstance(value, str) and len(value) <= 2 * MAX_EXPONENT and _INT.fullmatch(value.strip()):
            return _whole(int(value.strip().replace(",", "")), BadStored, "an integer")
        raise BadStored(f"stored {type(value).__name__} is not an integer")
    if isinstance(value, Decimal):
        _bounded(value, BadStored, "an integer", value)
        if value != value.to_integral_value():
            raise BadStored("stored value is not a whole number")
    return _whole(int(value), BadStored, "an integer")


def _strip_unit(value: Any, field: FieldPolicy) -> Any:
    if isinstance(value, str) and field.unit:
        text = value.strip()
        if text.lower().endswith(field.unit.lower()):
            return text[: -len(field.unit)].strip()
    return value


def _decimal_claim(value: Any, field: FieldPolicy, policy: Policy) -> Decimal:
    return _decimal(_strip_unit(value, field), BadClaim, "a number")


def _decimal_stored(value: Any, field: FieldPolicy, policy: Policy) -> Decimal:
    return _decimal(value, BadStored, "a number")


def _decimal_equal(c: Decimal, a: Decimal, field: FieldPolicy) -> bool:
    return abs(c - a) <= (field.tolerance or Decimal(0))


@lru_cache(maxsize=256)
def _currency_marks(currency: str, locale: str) -> tuple[str, ...]:
    """The code and the symbols a person may write for ``currency``, longest first (``JP¥`` before ``¥``)."""
    marks = {currency}
    for loc in (locale, "en", "en_US", "en_GB"):
        marks.add(get_currency_symbol(currency, locale=loc))
    for m in list(marks):
        marks.add(regex.sub(r"^[A-Z]{1,3}(?=\p{Sc})", "", m))
    return tuple(sorted((m for m in marks if m), key=len, reverse=True))


def _money_claim(value: Any, field: FieldPolicy, policy: Policy) -> int:
    """Minor units of a claimed amount in major units: ``1299``, ``1299.00``, ``"£1,299.00"``, ``"GBP 1,299"``."""
    cur = field.currency or ""
    if isinstance(value, str) and _MACHINE.fullmatch(value.strip()):
        # the format `guard schema` advertises (12.50) means the same in every locale
        amount = _bounded(Decimal(value.strip()), BadClaim, "an amount of money", value)
    elif isinstance(value, str):
        text = value.strip()
        for mark in _currency_marks(cur, policy.locale):
            if mark and mark in text:
                text = text.replace(mark, "", 1).strip()
                break
        if regex.search(r"\p{Sc}|[A-Z]{3}", text):
            raise BadClaim(f"'{value}' is not an amount in {cur}")
        negative = text.startswith("-")
        text = text.lstrip("-").strip()
        try:
            with localcontext(_WIDE):
                amount = parse_decimal(text, locale=policy.locale, strict=True)
        except (NumberFormatError, ArithmeticError):
            raise BadClaim(f"{_shown(value)} is not an amount of money") from None
        amount = _bounded(-amount if negative else amount, BadClaim, "an amount of money", value)
    else:
        amount = _decimal(value, BadClaim, "an amount of money")
    minor = amount.scaleb(field.exponent)
    if minor != minor.to_integral_value():
        raise BadClaim(f"'{value}' has more decimal places than {cur} allows ({field.exponent})")
    return int(minor)


def _as_utc(value: Any, policy: Policy, err: type[ValueError]) -> datetime:
    """An aware UTC time; a stored one must also be a time of the policy's zone, where it is shown.

    Both conversions leave the calendar (years 1 to 9999) only within a day of its ends.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise err(f"'{value}' is not an ISO 8601 timestamp") from None
    if isinstance(value, datetime):
        when: datetime = value
        if when.tzinfo is None:
            when = when.replace(tzinfo=policy.db_tz if err is BadStored else policy.tz)
        try:
            when = when.astimezone(UTC)
            if err is BadStored and (when.year == 1 or when.year == 9999):
                when.astimezone(policy.tz)
        except OverflowError:
            raise _out_of_range(err)(f"{value} is beyond the years 1 to 9999 in UTC or in {policy.timezone}") from None
        return when
    raise err(f"{type(value).__name__} is not a timestamp")


def _date_claim(value: Any, field: FieldPolicy, policy: Policy) -> date:
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            raise BadClaim(f"'{value}' is not a date (YYYY-MM-DD)") from None
    raise BadClaim(f"{value!r} is not a date (YYYY-MM-DD)")


def _date_stored(value: Any, field: FieldPolicy, policy: Policy) -> date:
    """A stored date is a calendar day; a stored timestamp is the day it falls on in the policy's timezone."""
    if isinstance(value, datetime):
        return _as_utc(value, policy, BadStored).astimezone(policy.tz).date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            return _as_utc(value, policy, BadStored).astimezone(policy.tz).date()
    raise BadStored(f"stored {type(value).__name__} is not a date")


def _timestamp_claim(value: Any, field: FieldPolicy, policy: Policy) -> datetime:
    return _as_utc(value, policy, BadClaim)


def _timestamp_stored(value: Any, field: FieldPolicy, policy: Policy) -> datetime:
    return _as_utc(value, policy, BadStored)


def _timestamp_equal(c: datetime, a: datetime, field: FieldPolicy) -> bool:
    return abs(c - a) <= timedelta(seconds=float(field.tolerance or 0))


def _text(value: Any, err: type[ValueError]) -> str:
    if isinstance(value, bool) or value is None:
        raise err(f"{value!r} is not text")
    if isinstance(value, (str, int)):
        return unicodedata.normalize("NFC", str(value))
    raise err(f"{type(value).__name__} is not text")


def _identifier_claim(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return _text(value, BadClaim)


def _identifier_stored(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return _text(value, BadStored)


def _string_claim(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return " ".join(_text(value, BadClaim).split())


def _string_stored(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return " ".join(_text(value, BadStored).split())


def _enum_claim(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return field.canonical_enum(_text(value, BadClaim))


def _enum_stored(value: Any, field: FieldPolicy, policy: Policy) -> str:
    return field.canonical_enum(_text(value, BadStored))


_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}


def _boolean_claim(value: Any, field: FieldPolicy, policy: Policy) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in _TRUE | _FALSE:
        return value.strip().casefold() in _TRUE
    raise BadClaim(f"{value!r} is not a boolean")


def _boolean_stored(value: Any, field: FieldPolicy, policy: Policy) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise BadStored(f"stored {value!r} is not a boolean")


def _all(values: Sequence[Any], kind: type) -> bool:
    """Every value is exactly of ``kind`` (``bool`` is not ``int``), tested without a Python-level loop."""
    return len(set(map(type, values))) == 1 and type(values[0]) is kind


_SAFE_INT = 10**18


def _integer_batch(
    claimed: Sequence[Any], stored: Sequence[Any], field: FieldPolicy, policy: Policy
) -> tuple[Sequence[Any], list[bool]] | None:
    if _all(claimed, int) and _all(stored, int) and max(map(abs, stored)) < _BIG:
        return stored, list(map(eq, claimed, stored))
    return None


def _money_batch(
    claimed: Sequence[Any], stored: Sequence[Any], field: FieldPolicy, policy: Policy
) -> tuple[Sequence[Any], list[bool]] | None:
    if _all(claimed, int) and _all(stored, int) and max(map(abs, claimed)) < _SAFE_INT and max(map(abs, stored)) < _BIG:
        scale = 10**field.exponent
        return stored, list(map(eq, (v * scale for v in claimed), stored))
    return None


def _identifier_batch(
    claimed: Sequence[Any], stored: Sequence[Any], field: FieldPolicy, policy: Policy
) -> tuple[Sequence[Any], list[bool]] | None:
    """ASCII text is its own NFC form."""
    if _all(claimed, str) and _all(stored, str) and "".join(claimed).isascii() and "".join(stored).isascii():
        return stored, list(map(eq, claimed, stored))
    return None


def _exact(c: Any, a: Any, field: FieldPolicy) -> bool:
    return bool(c == a)


# -- formatting: the stored value as a person reads it -------------------------------------------------------
@lru_cache(maxsize=64)
def _locale(name: str) -> Locale:
    return Locale.parse(name)


def _format_money(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    currency = field.currency or ""
    exponent = get_currency_precision(currency)
    with localcontext(_WIDE):
        return str(format_currency(Decimal(int(actual)).scaleb(-exponent), currency, locale=_locale(policy.locale)))


def _format_date(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    return str(format_date(actual, format="long", locale=_locale(policy.locale)))


def _format_timestamp(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    zone = ZoneInfo(policy.timezone)
    return str(format_datetime(actual.astimezone(zone), format="long", tzinfo=zone, locale=_locale(policy.locale)))


def _format_integer(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    with localcontext(_WIDE):
        return str(format_decimal(int(actual), locale=_locale(policy.locale)))


def _format_decimal(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    with localcontext(_WIDE):
        text = str(format_decimal(actual, locale=_locale(policy.locale), decimal_quantization=False))
    return f"{text} {field.unit}" if field.unit else text


def _format_boolean(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    return "yes" if actual else "no"


def _format_text(actual: Any, field: FieldPolicy, policy: Policy) -> str:
    return str(actual)


def _json_iso(actual: Any) -> Any:
    return actual.isoformat()


def _json_str(actual: Any) -> Any:
    return str(actual)


def _json_same(actual: Any) -> Any:
    return actual


# -- the specs -----------------------------------------------------------------------------------------------
Parse = Callable[[Any, "FieldPolicy", "Policy"], Any]
Batch = Callable[[Sequence[Any], Sequence[Any], "FieldPolicy", "Policy"], "tuple[Sequence[Any], list[bool]] | None"]


@dataclass(frozen=True)
class TypeSpec:
    """How one claim type is read, compared, shown and described.

    ``batch`` is an optional shortcut for many claims of one field at once:
    ``(claimed values, stored values) -> (normalised stored values, equal?)``
    for inputs it can take whole (plain ints, ASCII text), else None. It must
    agree with ``claimed``/``stored``/``equal`` wherever it answers (a property
    test holds it to that).
    """

    type: ClaimType
    claimed: Parse
    """The model's value as the type's canonical Python value; raises BadClaim."""
    stored: Parse
    """The database's value as the type's canonical Python value; raises BadStored."""
    format: Callable[[Any, FieldPolicy, Policy], str]
    """A canonical value as a person reads it in the policy's locale and time zone."""
    equal: Callable[[Any, Any, FieldPolicy], bool] = _exact
    batch: Batch | None = None
    json: Callable[[Any], Any] = _json_same
    """A canonical value as JSON (dates as ISO 8601, decimals as exact text, money in minor units)."""
    schema: Mapping[str, Any] = field(default_factory=dict)
    """JSON Schema of the value a model should write for this type (structured output)."""
    options: frozenset[str] = frozenset()
    """Policy options that apply to fields of this type (``currency``, ``tolerance``, ``unit``, ``aliases``)."""
    required: frozenset[str] = frozenset()
    """Policy options fields of this type must set."""
    integer_column: bool = False
    """The field's column must hold integers (money is stored in minor units)."""


_ID_SCHEMA = {"type": ["string", "integer"]}
_NUMBER_SCHEMA = {"type": ["number", "string"]}

TYPES: Mapping[ClaimType, TypeSpec] = {
    s.type: s
    for s in (
        TypeSpec(
            ClaimType.IDENTIFIER,
            _identifier_claim,
            _identifier_stored,
            _format_text,
            batch=_identifier_batch,
            schema=_ID_SCHEMA,
        ),
        TypeSpec(ClaimType.STRING, _string_claim, _string_stored, _format_text, schema={"type": "string"}),
        TypeSpec(
            ClaimType.INTEGER,
            _integer_claim,
            _integer_stored,
            _format_integer,
            batch=_integer_batch,
            schema={"type": ["integer", "string"]},
            integer_column=True,
        ),
        TypeSpec(
            ClaimType.DECIMAL,
            _decimal_claim,
            _decimal_stored,
            _format_decimal,
            _decimal_equal,
            json=_json_str,
            schema=_NUMBER_SCHEMA,
            options=frozenset({"tolerance", "unit"}),
        ),
        TypeSpec(
            ClaimType.MONEY,
            _money_claim,
            _integer_stored,
            _format_money,
            batch=_money_batch,
            schema=_NUMBER_SCHEMA,
            options=frozenset({"currency"}),
            required=frozenset({"currency"}),
            integer_column=True,
        ),
        TypeSpec(
            ClaimType.DATE,
            _date_claim,
            _date_stored,
            _format_date,
            json=_json_iso,
            schema={"type": "string", "format": "date"},
        ),
        TypeSpec(
            ClaimType.TIMESTAMP,
            _timestamp_claim,
            _timestamp_stored,
            _format_timestamp,
            _timestamp_equal,
            json=_json_iso,
            schema={"type": "string", "format": "date-time"},
            options=frozenset({"tolerance"}),
        ),
        TypeSpec(
            ClaimType.ENUM,
            _enum_claim,
            _enum_stored,
            _format_text,
            schema={"type": "string"},
            options=frozenset({"aliases"}),
        ),
        TypeSpec(
            ClaimType.BOOLEAN, _boolean_claim, _boolean_stored, _format_boolean, schema={"type": ["boolean", "string"]}
        ),
    )
}
"""One spec per claim type."""


def spec(claim_type: ClaimType | str) -> TypeSpec:
    """The spec of a claim type (by member or by name)."""
    return TYPES[ClaimType(claim_type)]


def to_json(actual: Any, claim_type: ClaimType | str) -> Any:
    """A canonical value as a JSON value (None stays None)."""
    return None if actual is None else spec(claim_type).json(actual)


def normalise_stored(value: Any, field: FieldPolicy, policy: Policy) -> Any:
    """The stored value as the type's canonical Python value; raises BadStored."""
    return TYPES[field.type].stored(value, field, policy)


def matches(claimed: Any, stored: Any, field: FieldPolicy, policy: Policy) -> bool:
    """Whether the claimed value equals the (already normalised) stored value under the field's rules.

    >>> from guard.records.policy import FieldPolicy, Policy
    >>> f = FieldPolicy(type="money", currency="GBP")
    >>> p = Policy(entities={"o": {"table": "t", "fields": {"x": {"type": "integer"}}}})
    >>> matches("£1,299.00", 129900, f, p)
    True
    """
    s = TYPES[field.type]
    return s.equal(s.claimed(claimed, field, policy), stored, field)


__all__ = ["BadClaim", "BadStored", "TypeSpec", "TYPES", "spec", "to_json", "normalise_stored", "matches"]
