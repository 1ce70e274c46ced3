"""The claim-type registry: one complete spec per type, and every batch shortcut equal to the scalar path."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.errors import PolicyError
from guard.payload import ClaimType
from guard.records.policy import FieldPolicy, Policy, load_policy
from guard.records.types import TYPES, BadClaim, BadStored, to_json

POLICY = Policy(
    entities={"o": {"table": "t", "label": "order", "fields": {"x": {"type": "integer", "label": "count"}}}}
)
SAMPLES = {
    ClaimType.IDENTIFIER: ("ord_1", FieldPolicy(type="identifier")),
    ClaimType.STRING: ("Ada Lovelace", FieldPolicy(type="string")),
    ClaimType.INTEGER: (1299, FieldPolicy(type="integer")),
    ClaimType.DECIMAL: (Decimal("4.20"), FieldPolicy(type="decimal", unit="kg")),
    ClaimType.MONEY: (129900, FieldPolicy(type="money", currency="GBP")),
    ClaimType.DATE: (date(2026, 7, 30), FieldPolicy(type="date")),
    ClaimType.TIMESTAMP: (datetime(2026, 7, 30, 9, 5, tzinfo=UTC), FieldPolicy(type="timestamp")),
    ClaimType.ENUM: ("shipped", FieldPolicy(type="enum")),
    ClaimType.BOOLEAN: (True, FieldPolicy(type="boolean")),
}


def test_every_claim_type_has_one_complete_spec():
    assert set(TYPES) == set(ClaimType) == set(SAMPLES)
    for t, s in TYPES.items():
        assert s.type is t
        value, field = SAMPLES[t]
        text = s.format(value, field, POLICY)
        assert isinstance(text, str) and text
        json.dumps(to_json(value, t))
        jsonschema.Draft202012Validator.check_schema(dict(s.schema))
        assert s.required <= s.options


@pytest.mark.parametrize("t", list(ClaimType))
def test_stored_value_round_trips_through_its_own_json(t):
    value, field = SAMPLES[t]
    stored = TYPES[t].stored(to_json(value, t) if t is not ClaimType.MONEY else value, field, POLICY)
    assert TYPES[t].equal(TYPES[t].claimed(_as_claim(t, value), field, POLICY), stored, field)


def _as_claim(t, value):
    if t is ClaimType.MONEY:
        return "£1,299.00"
    if t in (ClaimType.DATE, ClaimType.TIMESTAMP, ClaimType.DECIMAL):
        return to_json(value, t)
    return value


def test_policy_options_follow_the_specs():
    for option, bad in (
        ("currency", {"type": "integer", "currency": "GBP"}),
        ("tolerance", {"type": "date", "tolerance": 1}),
        ("aliases", {"type": "string", "aliases": {"a": ["b"]}}),
        ("unit", {"type": "money", "currency": "GBP", "unit": "kg"}),
    ):
        with pytest.raises(PolicyError) as err:
            load_policy({"entities": {"o": {"table": "t", "fields": {"x": bad}}}})
        assert f"{option} appl" in str(err.value)
    with pytest.raises(PolicyError, match="needs a currency"):
        load_policy({"entities": {"o": {"table": "t", "fields": {"x": {"type": "money"}}}}})


_INTS = st.integers(-(10**20), 10**20)
_ASCII = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
_TEXT = st.text(max_size=12)


def _scalar(t, claimed, stored, field):
    """The reference: each value on its own, as the claim-by-claim path does."""
    actuals, same = [], []
    for c, s in zip(claimed, stored, strict=True):
        try:
            a = TYPES[t].stored(s, field, POLICY)
        except BadStored:
            return None
        actuals.append(a)
        try:
            same.append(TYPES[t].equal(TYPES[t].claimed(c, field, POLICY), a, field))
        except BadClaim:
            same.append(False)
    return actuals, same


@settings(max_examples=300, deadline=None)
@given(data=st.data(), t=st.sampled_from([t for t, s in TYPES.items() if s.batch is not None]), n=st.integers(1, 20))
def test_batch_shortcuts_equal_the_scalar_path(data, t, n):
    field = SAMPLES[t][1]
    values = {
        ClaimType.INTEGER: st.one_of(_INTS, st.booleans(), _TEXT),
        ClaimType.MONEY: st.one_of(_INTS, st.booleans()),
        ClaimType.IDENTIFIER: st.one_of(_ASCII, _TEXT, st.integers()),
    }[t]
    stored = data.draw(st.lists(values, min_size=n, max_size=n))
    claimed = data.draw(st.one_of(st.just(list(stored)), st.lists(values, min_size=n, max_size=n)))
    got = TYPES[t].batch(claimed, stored, field, POLICY)
    if got is not None:
        assert (list(got[0]), list(got[1])) == _scalar(t, claimed, stored, field)
