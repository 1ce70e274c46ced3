"""A statement's slots of one claim type bind by place: the n-th slot shows the field the statement writes n-th,
so a payload that swaps two same-typed slots ("from {location} in {device}") is a finding (S206)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from guard.shapes import bind, check_template, load_library
from guard.shapes.compiler import Binding, RuleMeta, _slot_orders
from guard.shapes.phrases import parse_phrase
from tests.shapes.claims import C
from tests.shapes.claims import fields as _fields

TYPES = {"device": "string", "location": "string", "when": "timestamp"}


def _orders(phrase: str, slotted: frozenset[str] = frozenset()):
    return _slot_orders(parse_phrase(phrase, "test"), lambda name: name in slotted)


def test_orders_follow_options_and_alternatives():
    x, y = ("string", "a.x"), ("string", "a.y")
    assert _orders("from {string:a.x} [in {string:a.y}]") == ((x,), (x, y))
    assert _orders("[from {string:a.x}] in {string:a.y}") == ((x, y), (y,))
    assert _orders("(from {string:a.x} | in {string:a.y})") == ((x,), (y,))
    assert _orders("sent to {string:a.email} [by {string}]") == (
        (("string", "a.email"),),
        (("string", "a.email"), ("string", "")),
    )


def test_a_subject_brings_its_own_slots_and_a_slotted_class_gives_up_the_places():
    assert _orders("<subject> was opened from {string:a.x}") == ((("string", "a.x"),),)
    assert _orders("<we> saw {string:a.x}") == ((("string", "a.x"),),)
    assert _orders("<place> saw {string:a.x}", frozenset({"place"})) is None
    assert _orders("<predicate> from {string:a.x}") is None


def test_too_many_orders_fall_back_to_the_claim_type():
    phrase = " ".join(f"[{w} {{string:a.{w}}}]" for w in ("one", "two", "three", "four", "five", "six", "seven"))
    assert _orders(phrase) is None


def _meta(phrase: str) -> RuleMeta:
    return RuleMeta("statement", (Binding(""),), phrase, _orders(phrase))


def test_places_name_the_fields_a_slot_may_show():
    meta = _meta("[from {string:a.x}] in {string:a.y}")
    assert meta.placed(["string"]) == [("a.y",)]
    assert meta.placed(["string", "string"]) == [("a.x",), ("a.y",)]
    assert meta.placed(["date"]) is None
    meta = _meta("(from {string:a.x} | in {string:a.y})")
    assert meta.placed(["string"]) == [("a.x", "a.y")]
    assert _meta("sent to {string:a.email} [by {string}]").placed(["string", "string"]) == [("a.email",), None]
    assert RuleMeta("statement", (Binding(""),), "x").placed(["string"]) is None


@given(st.lists(st.sampled_from(["a.x", "a.y", "a.z"]), min_size=1, max_size=4))
def test_a_written_sequence_binds_each_slot_to_its_own_field(fields):
    phrase = " then ".join(f"{{string:{f}}}" for f in fields)
    assert _meta(phrase).placed(["string"] * len(fields)) == [(f,) for f in fields]


def test_a_swapped_pair_of_same_typed_slots_is_a_finding():
    text = "We noticed a new sign-in to your account from {device} in {location}."
    report = check_template(text, load_library("account"), TYPES)
    assert _fields(report) == {"device": ("account.last_login_device",), "location": ("account.last_login_location",)}
    right = [C("device", "account", "last_login_device"), C("location", "account", "last_login_location")]
    swapped = [C("device", "account", "last_login_location"), C("location", "account", "last_login_device")]
    assert [f.code for f in bind(report.bindings, right, text, report.findings)[0]] == []
    found = bind(report.bindings, swapped, text, report.findings)[0]
    assert [f.code for f in found] == ["S206", "S206"]
    assert {f.data["slot"] for f in found} == {"device", "location"}
