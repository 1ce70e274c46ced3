"""Diagnostics of the shape validator and the lint facade."""

from __future__ import annotations

import json

import pytest

from guard.errors import PayloadError
from guard.findings import Finding
from guard.linting import LintContext, base_stages, lint, lint_payload

TYPES = {"order_id": "identifier", "ship_date": "date", "eta": "date", "item_count": "integer", "total": "money"}
SEED = (
    "Your order {order_id} shipped on {ship_date} and is expected to arrive on {eta}. It contains {item_count} items."
)


def test_seed_example_passes_orders() -> None:
    r = lint(SEED, domain="orders", slot_types=TYPES)
    assert r.ok and r.findings == []
    assert r.shapes == ["order_shipped_with_eta", "order_contains"]


def test_unexpected_word_has_column_expected_words_and_nearest_shapes() -> None:
    t = "Your order {order_id} shipped on {ship_date}.\nIt is unusually quick."
    r = lint(t, domain="orders", slot_types=TYPES)
    (f,) = r.findings
    assert (f.code, f.sentence) == ("S201", 1)
    assert t[f.start : f.end] == "unusually"
    assert f.data["line"] == 2 and f.data["column"] == 7
    assert f.data["unexpected"] == "unusually"
    assert set(f.data["expected"]) == {'"being"', '"expected"'}
    assert all(n["text"].startswith("It ") for n in f.data["nearest"])
    assert "It is expected to arrive on {DATE}." in [n["text"] for n in f.data["nearest"]] or any(
        "It" in n["text"] for n in f.data["nearest"]
    )
    assert r.shapes == ["order_shipped", None]


def test_wrong_slot_type_is_s202_naming_both_types() -> None:
    r = lint("Your order {order_id} shipped on {total}.", domain="orders", slot_types=TYPES)
    (f,) = r.findings
    assert f.code == "S202"
    assert "MONEY" in f.message and "{DATE}" in f.message
    assert f.data["nearest"][0]["shape"] == "order_shipped"


def test_untyped_slot_is_s203_with_the_type_the_shape_takes() -> None:
    r = lint("Your order {order_id} shipped on {when}.", domain="orders", slot_types={"order_id": "identifier"})
    (f,) = r.findings
    assert f.code == "S203" and f.data["inferred"] == "date"
    assert r.shapes == [None] and not r.ok


def test_unknown_type_name_is_s203() -> None:
    r = lint(
        "Your order {order_id} shipped on {when}.",
        domain="orders",
        slot_types={"order_id": "identifier", "when": "datetime"},
    )
    assert [f.code for f in r.findings] == ["S203"]
    assert "datetime" in r.findings[0].message


def test_sentence_ending_too_early_points_at_its_end() -> None:
    t = "Your order {order_id} shipped on"
    (f,) = lint(t, domain="orders", slot_types=TYPES).findings
    assert f.code == "S201" and f.data["unexpected"] is None
    assert f.data["expected"] == ["{DATE}"]
    assert f.end == len(t)


def test_unsafe_slot_is_reported_once_and_its_sentence_skipped() -> None:
    r = lint(
        "Your order {order_id.x} shipped on {ship_date}. It contains {item_count} items.",
        domain="orders",
        slot_types=TYPES,
    )
    assert [f.code for f in r.findings] == ["F101"]
    assert [s.checked for s in r.sentences] == [False, True]
    assert r.shapes == [None, "order_contains"]


def test_lint_payload_takes_slot_types_from_claims() -> None:
    def claim(key: str, kind: str, value: object) -> dict[str, object]:
        return {"key": key, "type": kind, "entity": "order", "entity_id": "ord_1", "field": key, "value": value}

    payload = {
        "answer_template": "Your order {order_id} shipped on {ship_date}.",
        "claims": [
            claim("order_id", "identifier", "ord_1"),
            claim("ship_date", "money", "4.00"),
            claim("spare", "integer", 1),
        ],
    }
    r = lint_payload(json.dumps(payload), domain="orders")
    assert sorted(f.code for f in r.findings) == ["F108", "S202"]
    payload["claims"][1]["type"] = "date"
    r = lint_payload(payload, domain="orders")
    assert r.ok and [f.code for f in r.findings] == ["F108"]
    with pytest.raises(PayloadError):
        lint_payload("{not json", domain="orders")


def test_stages_are_pluggable() -> None:
    def shouting(ctx: LintContext) -> list[Finding]:
        return [
            Finding.make("R401", "too loud", sentence=s.index, start=s.start, end=s.end)
            for s in ctx.sentences
            if s.text.isupper()
        ]

    r = lint(
        "Gift wrapping: {g}.",
        domain="orders",
        slot_types={"g": "boolean"},
        stages=base_stages() + [("ratio", shouting)],
    )
    assert r.ok
    r = lint("HI!", domain="orders", stages=base_stages() + [("ratio", shouting)])
    assert [f.code for f in r.findings] == ["S201", "R401"]


def test_non_string_template_is_a_guard_error() -> None:
    with pytest.raises(PayloadError):
        lint(42, domain="orders")  # type: ignore[arg-type]


def test_untyped_slot_inference_tries_every_type_the_shapes_allow(tmp_path) -> None:
    (tmp_path / "pay.lark").write_text(
        "sentence: paid_when | paid_amount\n"
        'paid_when: "Paid" DATE_SLOT "as agreed."\n'
        'paid_amount: "Paid" MONEY_SLOT "in total."\n'
    )
    r = lint("Paid {x} in total.", domain="pay", grammar_dir=tmp_path)
    assert [(f.code, f.data["inferred"]) for f in r.findings] == [("S203", "money")]
    r = lint("Paid {x} as agreed.", domain="pay", grammar_dir=tmp_path)
    assert [(f.code, f.data["inferred"]) for f in r.findings] == [("S203", "date")]
    r = lint("Paid {x} by card.", domain="pay", grammar_dir=tmp_path)
    assert sorted(f.code for f in r.findings) == ["S201", "S203"]
    assert r.shapes == [None]
    r = lint("Paid {x} in total.", domain="pay", grammar_dir=tmp_path, slot_types={"x": "money"})
    assert r.ok and r.shapes == ["paid_amount"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(
    [
        "Your",
        " ",
        "order",
        "{order_id}",
        "{x}",
        "{a.b}",
        "{",
        "}",
        ".",
        ",",
        "\n",
        "\t",
        "shipped on",
        "{ship_date}",
        "Hi",
        "!",
        "$",
        "é",
        "It contains",
        "{item_count}",
        "items",
        "  ",
        "{}",
        "{0}",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.text(max_size=80), st.lists(_PIECES, max_size=25).map("".join)),
    st.dictionaries(
        st.sampled_from(["order_id", "x", "ship_date", "item_count"]),
        st.sampled_from(["identifier", "date", "integer", "money", "bogus"]),
    ),
)
def test_lint_never_raises_and_findings_stay_inside_the_template(text: str, types: dict[str, str]) -> None:
    r = lint(text, domain="orders", slot_types=types)
    for f in r.findings:
        assert 0 <= f.start <= f.end <= len(text)
        assert f.code[0] in "FS" and f.message
    assert len(r.sentences) == len(r.shapes)
    assert r.ok == (not [f for f in r.findings if f.severity.value == "error"])
    if r.ok:
        assert all(r.shapes)
