"""Payload rejections happen before any database access and say what and where."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.errors import PayloadError
from guard.payload import Limits, load_payload, scan_template, template_pieces, unused_claims


def claim(key="a", **kw):
    c = {
        "key": key,
        "type": "date",
        "entity": "order",
        "entity_id": "ord_1",
        "field": "shipped_at",
        "value": "2026-07-30",
    }
    c.update(kw)
    return c


def payload(template="Shipped on {a}.", claims=None):
    return {"answer_template": template, "claims": claims if claims is not None else [claim()]}


def rejected(data, **kw) -> PayloadError:
    with pytest.raises(PayloadError) as err:
        load_payload(data, **kw)
    return err.value


def test_valid_payload_loads():
    p = load_payload(json.dumps(payload()))
    assert p.claims[0].type.value == "date"


def test_invalid_json_names_line_and_column():
    e = rejected('{"answer_template": "x",\n "claims": [}')
    assert "line 2" in str(e) and "column" in str(e)


@pytest.mark.parametrize("text", ["NaN", '{"answer_template": "x", "claims": [], "v": Infinity}'])
def test_nan_and_infinity_are_not_json(text):
    assert "not valid JSON" in str(rejected(text))


def test_missing_and_extra_keys():
    c = claim()
    del c["entity_id"]
    c["colour"] = "red"
    e = rejected({"answer_template": "on {a}", "claims": [c], "extra": 1})
    text = str(e)
    assert "claims[0] (key 'a').entity_id: this key is required" in text
    assert "claims[0] (key 'a').colour: unknown key" in text
    assert "extra: unknown key" in text


def test_missing_value_key_is_rejected_but_null_is_allowed():
    c = claim()
    del c["value"]
    assert "value: this key is required" in str(rejected(payload(claims=[c])))
    load_payload(payload(claims=[claim(value=None)]))


def test_duplicate_keys():
    e = rejected(payload(claims=[claim(), claim()]))
    assert "claims[1].key" in str(e) and "also used by claims[0]" in str(e)


def test_unknown_type_names_the_key():
    e = rejected(payload(claims=[claim(type="datetime")]))
    assert "claims[0] (key 'a').type" in str(e)


def test_slot_without_claim_names_slot_and_column():
    e = rejected(payload("Shipped on {a}, arriving {eta}.", [claim()]))
    assert "slot {eta} at column 26 has no claim" in str(e)


@pytest.mark.parametrize(
    "template,code",
    [
        ("{a.__class__}", "F101"),
        ("{a[0]}", "F102"),
        ("{a:>2147483648}", "F103"),
        ("{a!r}", "F104"),
        ("{}", "F105"),
        ("{0}", "F105"),
        ("{a", "F106"),
        ("a}", "F106"),
        ("{a b}", "F109"),
        ("{é}", "F109"),
        ("{o.__init__.__globals__[x]}", "F101"),
    ],
)
def test_unsafe_slots_are_rejected_with_code(template, code):
    e = rejected(payload(template, [claim()]))
    assert any(p.code == code for p in e.problems), e.problems
    assert all(str(p.location).startswith("answer_template:") for p in e.problems if p.code.startswith("F"))


def test_escaped_braces_are_literal():
    assert [p.text for p in template_pieces("{{not a slot}} {a}")] == ["{not a slot} ", "{a}"]


def test_limits():
    assert "limit is 2" in str(
        rejected(payload(claims=[claim("a"), claim("b"), claim("c")]), limits=Limits(max_claims=2))
    )
    assert "answer_template" in str(rejected(payload("x" * 50), limits=Limits(max_template_chars=10)))
    assert "bytes" in str(rejected(json.dumps(payload("x" * 500)), limits=Limits(max_bytes=100)))


def test_bool_is_not_an_entity_id_and_nested_values_are_rejected():
    assert "entity_id" in str(rejected(payload(claims=[claim(entity_id=True)])))
    assert "value must be a JSON string" in str(rejected(payload(claims=[claim(value={"a": 1})])))


def test_unused_claim_is_a_warning_not_an_error():
    p = load_payload(payload("Shipped on {a}.", [claim(), claim("b")]))
    assert [w.code for w in unused_claims(p)] == ["F108"]


def test_deeply_nested_json_is_a_payload_error():
    assert isinstance(rejected("[" * 100_000 + "]" * 100_000), PayloadError)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_scanner_never_raises_and_slots_are_plain(template):
    slots, findings = scan_template(template)
    for s in slots:
        assert template[s.start : s.end] == "{" + s.name + "}"
        assert s.name.isidentifier() and s.name.isascii()
    for f in findings:
        assert f.code.startswith("F1") and 0 <= f.start < f.end <= len(template)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_characters="{}")),
            st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).map(lambda n: "{" + n + "}"),
        ),
        max_size=8,
    )
)
def test_pieces_reassemble_the_template(parts):
    template = "".join(parts)
    pieces = template_pieces(template)
    assert "".join(p.text for p in pieces) == template


def _outcome(fn, data):
    try:
        return "value", fn(data)
    except Exception as exc:  # the same exception, type and message, from both
        return type(exc).__name__, str(exc)


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        _JSONISH.map(json.dumps),
        _JSONISH.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8")),
        _JSONISH.map(lambda v: json.dumps(v).encode("utf-16")),
        st.text(alphabet='{}[]":,0123456789.eE+-NaInfity \\u\ufeffé', max_size=30),
        st.binary(max_size=30),
        st.sampled_from(["NaN", "[Infinity]", '{"a": -Infinity}', "\ufeff{}", b"\xef\xbb\xbf{}", b"\x00{", "", b""]),
    )
)
def test_the_shared_decoder_reads_as_json_loads(data):
    """guard.payload.model._loads (one decoder for every payload) against json.loads with the same hook."""
    from guard.payload import model

    assert _outcome(model._loads, data) == _outcome(
        lambda d: json.loads(d, parse_constant=model._reject_constant), data
    )


SURROGATE_TEXT = st.text(st.sampled_from(["a", " ", "é", "\U0001f600", "\ud800", "\udfff", "\ud83d"]), max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    template=SURROGATE_TEXT,
    fields=st.lists(
        st.fixed_dictionaries(
            {
                "entity": st.sampled_from(["order", "é"]),
                "entity_id": st.one_of(SURROGATE_TEXT, st.integers()),
                "field": st.sampled_from(["status", "\U0001f600"]),
                "value": st.one_of(
                    SURROGATE_TEXT, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.none()
                ),
            }
        ),
        max_size=3,
    ),
)
def test_every_lone_surrogate_is_reported_where_it_is(template, fields):
    """The one search over all the text finds a payload with a lone surrogate anywhere, and the field-by-field
    pass names each field that has one (a pair split across two fields stays two lone surrogates). The schema
    itself refuses them in the length-bounded names (entity, field, key)."""
    claims = [claim(f"k{i}", type="string", **f) for i, f in enumerate(fields)]
    text = json.dumps(payload(template + "".join(f" {{k{i}}}" for i in range(len(claims))), claims))
    data = json.loads(text)  # JSON joins an escaped high and low surrogate into one character
    claims = data["claims"]
    expected = set()
    if any("\ud800" <= ch <= "\udfff" for ch in data["answer_template"]):
        expected.add("answer_template")
    for i, c in enumerate(claims):
        for k in ("entity", "entity_id", "field", "value"):
            if isinstance(c[k], str) and any("\ud800" <= ch <= "\udfff" for ch in c[k]):
                expected.add(f"claims[{i}].{k}")
    try:
        load_payload(text)
    except PayloadError as exc:
        found = {p.location.part for p in exc.problems if p.code == "unicode"}
        assert found == expected
    else:
        assert not expected
