"""Each comparison rule of the issue, plus properties of the parsers."""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.records.policy import FieldPolicy, Policy
from guard.records.types import BadClaim, BadStored, matches, normalise_stored


def pol(tz="UTC", locale="en_GB"):
    return Policy(
        timezone=tz,
        locale=locale,
        entities={"o": {"table": "t", "label": "order", "fields": {"x": {"type": "integer", "label": "count"}}}},
    )


GBP = FieldPolicy(type="money", currency="GBP")
JPY = FieldPolicy(type="money", currency="JPY")
BHD = FieldPolicy(type="money", currency="BHD")


@pytest.mark.parametrize("claimed", [1299.00, 1299, "£1,299.00", "1299", "1,299", "GBP 1,299.00", " £1,299 "])
def test_money_claims_confirmed_against_minor_units(claimed):
    assert matches(claimed, 129900, GBP, pol())


@pytest.mark.parametrize("claimed", [1299.01, "£1,299.01", "1199", "€1,299.00", "$1299"])
def test_money_mismatches(claimed):
    with contextlib.suppress(BadClaim):
        assert not matches(claimed, 129900, GBP, pol())


def test_money_exponents():
    assert matches(1299, 1299, JPY, pol())
    assert matches("¥1,299", 1299, JPY, pol())
    assert matches("1.299", 1299, BHD, pol())
    assert matches(1.299, 1299, BHD, pol())
    with pytest.raises(BadClaim):
        matches(12.5, 12, JPY, pol())


def test_money_floats_go_through_decimal():
    assert matches(0.3, 30, GBP, pol())
    with pytest.raises(BadClaim):
        matches(0.1 + 0.2, 30, GBP, pol())  # too many decimal places for GBP, never rounded


def test_date_follows_policy_timezone():
    stored = datetime(2026, 7, 29, 23, 40, tzinfo=UTC)
    f = FieldPolicy(type="date")
    assert normalise_stored(stored, f, pol("Asia/Tokyo")) == date(2026, 7, 30)
    assert normalise_stored(stored, f, pol("UTC")) == date(2026, 7, 29)
    assert matches("2026-07-30", normalise_stored(stored, f, pol("Asia/Tokyo")), f, pol("Asia/Tokyo"))
    assert not matches("2026-07-30", normalise_stored(stored, f, pol("UTC")), f, pol("UTC"))


def test_naive_stored_timestamps_are_in_db_timezone():
    f = FieldPolicy(type="date")
    p = Policy(
        timezone="Asia/Tokyo",
        db_timezone="America/New_York",
        entities={"o": {"table": "t", "label": "order", "fields": {"x": {"type": "integer", "label": "count"}}}},
    )
    # 20:00 in New York is 09:00 next day in Tokyo
    assert normalise_stored(datetime(2026, 7, 29, 20, 0), f, p) == date(2026, 7, 30)


def test_timestamp_compares_instants():
    f = FieldPolicy(type="timestamp")
    stored = normalise_stored(datetime(2026, 7, 29, 23, 40, tzinfo=UTC), f, pol())
    assert matches("2026-07-30T08:40:00+09:00", stored, f, pol())
    assert matches("2026-07-29T23:40:00Z", stored, f, pol())
    assert not matches("2026-07-29T23:41:00Z", stored, f, pol())
    assert matches("2026-07-29T23:40:30Z", stored, FieldPolicy(type="timestamp", tolerance=60), pol())


def test_decimal_tolerance():
    assert matches(4.23, Decimal("4.2"), FieldPolicy(type="decimal", tolerance="0.05"), pol())
    assert not matches(4.23, Decimal("4.2"), FieldPolicy(type="decimal", tolerance=0), pol())
    assert not matches(4.23, Decimal("4.2"), FieldPolicy(type="decimal"), pol())


def test_enum_case_and_aliases():
    f = FieldPolicy(type="enum", aliases={"shipped": ["dispatched", "sent"]})
    stored = normalise_stored("shipped", f, pol())
    for v in ["Shipped", "dispatched", "SHIPPED", " sent "]:
        assert matches(v, stored, f, pol())
    assert not matches("delivered", stored, f, pol())


def test_integer_rules():
    f = FieldPolicy(type="integer")
    assert matches("3", 3, f, pol())
    assert matches(3, 3, f, pol())
    for bad in [True, "3.5", 3.5, "three", None]:
        with pytest.raises(BadClaim):
            matches(bad, 1 if bad is True else 3, f, pol())
    with pytest.raises(BadStored):
        normalise_stored(True, f, pol())


def test_identifier_is_exact():
    f = FieldPolicy(type="identifier")
    assert matches("ord_1", "ord_1", f, pol())
    assert not matches("ORD_1", "ord_1", f, pol())
    assert not matches("ord_1 ", "ord_1", f, pol())


def test_boolean_is_not_an_integer():
    f = FieldPolicy(type="boolean")
    assert matches(True, normalise_stored(1, f, pol()), f, pol())
    with pytest.raises(BadClaim):
        matches(1, True, f, pol())


def test_garbage_stored_values():
    with pytest.raises(BadStored):
        normalise_stored("not a date", FieldPolicy(type="date"), pol())
    with pytest.raises(BadStored):
        normalise_stored(Decimal("12.5"), GBP, pol())


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_money_roundtrip_every_minor_amount(minor):
    major = Decimal(minor).scaleb(-2)
    assert matches(str(major), minor, GBP, pol())
    assert matches(f"£{major:,.2f}" if minor >= 0 else f"-£{-major:,.2f}", minor, GBP, pol())
    assert not matches(str(major + Decimal("0.01")), minor, GBP, pol())


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40)
    ),
    st.sampled_from(["identifier", "string", "integer", "decimal", "money", "date", "timestamp", "enum", "boolean"]),
)
def test_any_claimed_value_either_compares_or_is_bad_claim(value, type_):
    f = FieldPolicy(type=type_, currency="GBP" if type_ == "money" else None)
    stored = {
        "identifier": "x",
        "string": "x",
        "integer": 3,
        "decimal": Decimal("1.5"),
        "money": 150,
        "date": date(2026, 1, 1),
        "timestamp": datetime(2026, 1, 1, tzinfo=UTC),
        "enum": "x",
        "boolean": True,
    }[type_]
    try:
        result = matches(value, normalise_stored(stored, f, pol()), f, pol())
    except BadClaim:
        return
    assert isinstance(result, bool)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(10**9), max_value=10**9), st.integers(min_value=-(10**9), max_value=10**9))
def test_integer_comparison_is_equality(a, b):
    f = FieldPolicy(type="integer")
    assert matches(a, b, f, pol()) == (a == b)
    assert matches(str(a), b, f, pol()) == (a == b)


@settings(max_examples=300, deadline=None)
@given(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
    st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]),
    st.sampled_from(["UTC", "Europe/London", "Asia/Tokyo"]),
    st.sampled_from(["object", "iso", "space", "date", "z"]),
)
def test_stored_update_times_read_as_the_reference_reading(dt, offset, db_tz, form):
    """The checker's fast reading of ``updated_at`` equals fromisoformat + replace(tzinfo) + astimezone(UTC)."""
    from zoneinfo import ZoneInfo

    from guard.records.results import UTC_NAMES as _UTC_NAMES
    from guard.records.results import aware as _aware

    value = dt.replace(tzinfo=offset)
    if form == "object":
        raw = value
    elif form == "iso":
        raw = value.isoformat()
    elif form == "space":
        raw = value.isoformat(sep=" ")
    elif form == "date":
        raw, value = value.date().isoformat(), datetime.combine(value.date(), datetime.min.time())
    else:
        if offset is not UTC:
            return
        raw = value.replace(tzinfo=None).isoformat() + "Z"
    tz = ZoneInfo(db_tz)
    expected = (value if value.tzinfo else value.replace(tzinfo=tz)).astimezone(UTC)
    got = _aware(raw, tz, db_tz in _UTC_NAMES)
    assert got == expected and got.utcoffset() == timedelta(0)


def test_unreadable_update_times_are_none():
    from zoneinfo import ZoneInfo

    from guard.records.results import aware as _aware

    for raw in ("garbage", "2026-13-01", 5, None, b"2026-08-01"):
        assert _aware(raw, ZoneInfo("UTC"), True) is None
