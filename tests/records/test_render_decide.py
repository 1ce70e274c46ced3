"""Rendering from database values, refusal wording, and the regenerate loop."""

from __future__ import annotations

import copy
import warnings
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import Action, decide, refusal_sentence
from guard.errors import GuardError, PayloadError
from guard.payload import load_payload, substitute, substitute_in_order
from guard.pipeline import regenerate_loop, verify
from guard.records.checker import ClaimResult, Status
from guard.records.formatting import format_value, formatter
from guard.records.policy import FieldPolicy, Policy, PolicyWarning, readable_name


def pol(locale="en_GB", tz="Europe/London"):
    return Policy(
        locale=locale,
        timezone=tz,
        entities={"o": {"table": "t", "label": "order", "fields": {"x": {"type": "integer", "label": "count"}}}},
    )


def test_locale_formatting():
    assert format_value(129900, FieldPolicy(type="money", currency="GBP"), pol()) == "£1,299.00"
    assert format_value(129900, FieldPolicy(type="money", currency="EUR"), pol("de_DE")) == "1.299,00\xa0€"
    assert format_value(1299, FieldPolicy(type="money", currency="JPY"), pol("en_US")) == "¥1,299"
    assert format_value(date(2026, 7, 30), FieldPolicy(type="date"), pol()) == "30 July 2026"
    assert format_value(date(2026, 7, 30), FieldPolicy(type="date"), pol("en_US")) == "July 30, 2026"
    assert format_value(Decimal("4.2"), FieldPolicy(type="decimal", unit="kg"), pol()) == "4.2 kg"
    ts = datetime(2026, 7, 29, 23, 40, tzinfo=UTC)
    assert "30 July 2026" in format_value(ts, FieldPolicy(type="timestamp"), pol("en_GB", "Asia/Tokyo"))


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=30),
    st.text(max_size=30),
    st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=30),
)
def test_substitute_inserts_values_verbatim_and_nothing_else(before, value, after):
    out = substitute(before + "{slot}" + after, {"slot": value})
    assert out == before + value + after


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**12),
    st.sampled_from(["GBP", "JPY", "BHD", "EUR", "USD"]),
    st.sampled_from(["en_GB", "en_US", "de_DE", "fr_FR", "ja_JP"]),
)
def test_rendered_money_parses_back_to_the_same_minor_units(minor, currency, locale):
    from guard.records.types import matches

    f = FieldPolicy(type="money", currency=currency)
    p = pol(locale)
    assert matches(format_value(minor, f, p), minor, f, p)


def result(status, row_id="ord_1", entity="order", field="estimated_delivery"):
    return ClaimResult(
        key="eta",
        entity=entity,
        entity_id="whatever the model said",
        field=field,
        type="date",
        status=status,
        row_id=row_id,
    )


def test_refusal_sentences_use_labels_and_never_model_text():
    p = demo.policy()
    assert refusal_sentence(result(Status.UNAVAILABLE, None), p) == (
        "I could not verify the delivery estimate for the order you asked about because the system of record "
        "could not be reached, so I have not given one."
    )
    assert refusal_sentence(result(Status.STALE), p).startswith(
        "I could not verify the delivery estimate for order ord_1"
    )
    assert "whatever" not in refusal_sentence(result(Status.NOT_FOUND, None), p)
    outside = refusal_sentence(result(Status.NOT_CHECKABLE, None, entity="secrets", field="password"), p)
    assert "secrets" not in outside and "password" not in outside


def test_empty_claims_refuse():
    d = decide(load_payload({"answer_template": "Hello.", "claims": []}), [], demo.policy())
    assert d.action is Action.REFUSE and d.message


def test_request_ids_are_fresh_128_bit_hex_unless_given():
    payload = load_payload({"answer_template": "Hello.", "claims": []})
    ids = {decide(payload, [], demo.policy()).request_id for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert decide(payload, [], demo.policy(), request_id="req-7").request_id == "req-7"


def test_regenerate_loop_converges_with_facts(sqlite_demo):
    url, policy, store = sqlite_demo
    wrong = demo.payloads()["regenerate"]
    seen = []

    def generate(feedback):
        seen.append(feedback)
        if feedback is None:
            return wrong
        fixed = copy.deepcopy(wrong)
        for c in fixed["claims"]:
            if c["key"] in feedback.contradicted:
                c["value"] = feedback.facts[c["key"]]["text"]
        return fixed

    d = regenerate_loop(generate, policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER
    assert "£1,299.00" in d.text
    assert seen[0] is None and seen[1].contradicted == ("total",)


def test_regenerate_loop_is_bounded_and_ends_in_refuse(sqlite_demo):
    url, policy, store = sqlite_demo
    calls = []

    def stubborn(feedback):
        calls.append(feedback)
        return demo.payloads()["regenerate"]

    d = regenerate_loop(stubborn, policy, store, max_attempts=3, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE and len(calls) == 3
    assert d.unverified == ("total",) and "after 3 attempts" in d.message
    with pytest.raises(GuardError):
        regenerate_loop(stubborn, policy, store, max_attempts=0)


def test_answer_only_when_every_claim_confirmed(sqlite_demo):
    url, policy, store = sqlite_demo
    p = copy.deepcopy(demo.payloads()["answer"])
    p["claims"].append(
        {"key": "extra", "type": "string", "entity": "customer", "entity_id": "cus_nope", "field": "name", "value": "x"}
    )
    d = verify(p, policy, store, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.REFUSE
    assert d.unverified == ("extra",)
    assert [w.code for w in d.warnings] == ["F108"]


_LITERAL = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12).map(
    lambda t: t.replace("{", "{{").replace("}", "}}")
)
_NAMES = st.sampled_from(["a", "b", "order_id", "_x1", "eta"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_LITERAL, _NAMES), max_size=8),
    _LITERAL,
    st.dictionaries(_NAMES, st.text(max_size=10), min_size=5),
)
def test_substitute_equals_str_format_on_safe_templates(runs, tail, values):
    """The precomputed layout renders exactly what str.format would for plain slots (escaped braces included)."""
    template = "".join(lit + "{" + name + "}" for lit, name in runs) + tail
    assert substitute(template, values) == template.format(**values)


def test_substitute_names_the_first_slot_without_a_value():
    with pytest.raises(PayloadError) as err:
        substitute("a {x} b {y} c {z}", {"x": "1"})
    assert "{y}" in err.value.message and "column 9" in err.value.message


@settings(max_examples=200, deadline=None)
@given(st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6))
def test_decimal_rendering_keeps_the_stored_digits_whatever_was_rendered_before(d):
    """``Decimal('4.2') == Decimal('4.20')``: a memo keyed by value alone would render one as the other."""
    f = FieldPolicy(type="decimal", unit="kg")
    p = pol()
    longer = d.quantize(Decimal("0.0001"))
    fmt = formatter(f, p)
    fmt(d)
    assert fmt(longer) == format_value(longer, f, p)
    assert fmt(d) == format_value(d, f, p)
    assert fmt.many([longer, d]) == [format_value(longer, f, p), format_value(d, f, p)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_LITERAL, _NAMES), max_size=8),
    _LITERAL,
    st.lists(st.tuples(_NAMES, st.text(max_size=10)), max_size=8, unique_by=lambda kv: kv[0]),
    st.data(),
)
def test_substitute_in_order_equals_substitute_of_the_mapping(runs, tail, pairs, data):
    """The no-mapping path is taken only when the slots are the keys in order; any other layout falls back."""
    template = "".join(lit + "{" + name + "}" for lit, name in runs) + tail
    if data.draw(st.booleans()):
        names = [name for _, name in runs]
        if len(set(names)) == len(names):
            pairs = [(name, data.draw(st.text(max_size=10))) for name in names]
    keys, texts = [k for k, _ in pairs], [t for _, t in pairs]
    values = dict(pairs)
    if all(name in values for _, name in runs):
        assert substitute_in_order(template, keys, texts) == substitute(template, values)
    else:
        with pytest.raises(PayloadError):
            substitute_in_order(template, keys, texts)


_FIELD_VALUES = {
    "line_count": st.integers(-(10**6), 10**6),
    "total_minor": st.integers(0, 10**9),
    "weight_kg": st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**4), max_value=10**4),
    "shipped_at": st.dates(),
    "status": st.sampled_from(["shipped", "delivered", "pending"]),
}


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(_FIELD_VALUES)), st.data())
def test_formatting_a_column_equals_formatting_each_value(name, data):
    policy = demo.policy()
    values = data.draw(st.lists(_FIELD_VALUES[name], max_size=30))
    fmt = formatter(policy.entities["order"].fields[name], policy)
    expected = [format_value(v, policy.entities["order"].fields[name], policy) for v in values]
    assert fmt.many(values) == expected
    assert fmt.many(values) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(_FIELD_VALUES)), min_size=1, max_size=12), st.data())
def test_answer_text_and_citations_equal_the_reference(fields, data):
    """Whatever the mix of fields and the slot order, the answer is the template filled with each claim's
    formatted database value, and one citation per claim in claim order."""
    policy = demo.policy()
    order = policy.entities["order"]
    results, values = [], {}
    for i, name in enumerate(fields):
        actual = data.draw(_FIELD_VALUES[name])
        stamp = data.draw(st.one_of(st.none(), st.datetimes(timezones=st.just(UTC))))
        key = f"k{i}"
        results.append(
            ClaimResult(
                key=key,
                entity="order",
                entity_id=f"ord_{i}",
                field=name,
                type=order.fields[name].type.value,
                status=Status.CONFIRMED,
                claimed=actual,
                actual=actual,
                raw=actual,
                row_id=f"ord_{i}",
                updated_at=stamp,
                updated_iso=data.draw(st.sampled_from([None, stamp.isoformat()])) if stamp else None,
            )
        )
        values[key] = format_value(actual, order.fields[name], policy)
    slots = data.draw(st.permutations([r.key for r in results]))
    template = "Here: " + ", ".join("{" + k + "}" for k in slots) + "."
    payload = load_payload(
        {
            "answer_template": template,
            "claims": [
                {"key": r.key, "type": r.type, "entity": "order", "entity_id": r.row_id, "field": r.field, "value": "x"}
                for r in results
            ],
        }
    )
    d = decide(payload, results, policy)
    assert d.action is Action.ANSWER
    assert d.text == substitute(template, values)
    assert list(d.citations) == [
        {
            "key": r.key,
            "citation": f"order:{r.row_id}#{r.field}",
            "updated_at": r.updated_at.isoformat() if r.updated_at else None,
        }
        for r in results
    ]


def test_unlabelled_names_read_as_words_in_refusals():
    assert readable_name("shipped_at") == readable_name("shippedAt") == "shipped at"
    assert readable_name("order_ID") == "order ID"
    p = Policy(entities={"parcelBox": {"table": "t", "fields": {"deliveryDate": {"type": "date"}}}})
    said = refusal_sentence(result(Status.STALE, entity="parcelBox", field="deliveryDate"), p)
    assert said.startswith("I could not verify the delivery date for parcel box ord_1")


def test_an_unlabelled_abbreviation_is_named_at_load():
    fields = {"pid": {"type": "identifier"}, "qty": {"type": "integer", "label": "quantity"}}
    with pytest.warns(PolicyWarning, match=r"field 'order\.pid' \(reads 'pid'\) without a label") as caught:
        Policy(entities={"order": {"table": "t", "fields": fields}})
    assert "qty" not in str(caught[0].message)  # labelled: the customer reads "quantity"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Policy(
            entities={"order": {"table": "t", "fields": {"status": {"type": "enum"}, "weight_kg": {"type": "decimal"}}}}
        )
