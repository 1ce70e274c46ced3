"""The sentence check on a lexicon library: units, reading text as people type it, diagnostics on the grammar
(unexpected word, grouped continuations, nearest approved wording), slot types, agreement, slot-field bindings
and witnesses for states said in words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.findings import Severity
from guard.linting import lint, lint_payload
from guard.shapes import bind, check_template, load_library, split_sentences
from tests.shapes.claims import C

TYPES = {
    "name": "string",
    "order_id": "identifier",
    "ship_date": "date",
    "eta": "date",
    "total": "money",
    "status": "enum",
    "n": "integer",
    "carrier": "string",
}


@pytest.fixture(scope="module")
def orders():
    return load_library("orders")


def _codes(report) -> list[str]:
    return [f.code for f in report.findings]


# -- units -------------------------------------------------------------------------------------
def test_units_break_after_stops_and_at_line_breaks_but_not_after_abbreviations():
    text = "Hi {name},\nOrder no. {order_id}: {status}. Est. delivery {eta}.\n\nThanks!  Bye."
    assert [s.text for s in split_sentences(text)] == [
        "Hi {name},",
        "Order no. {order_id}: {status}.",
        "Est. delivery {eta}.",
        "Thanks!",
        "Bye.",
    ]


EMOJI = "\U0001f60a\U0001f44b\u2764\ufe0f"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB .!?,-\u2022\n\t{}" + EMOJI)), max_size=60))
def test_units_are_in_order_and_cover_every_visible_character(text):
    """Nothing visible is lost but emoji and a list bullet that stands, with blanks after it, just before a unit."""
    units = split_sentences(text)
    covered = set()
    for i, u in enumerate(units):
        assert u.index == i and text[u.start : u.end] == u.text and u.text == u.text.strip()
        assert any(not ch.isspace() and ch not in EMOJI for ch in u.text)
        covered.update(range(u.start, u.end))
    for i, ch in enumerate(text):
        if not ch.isspace() and ch not in EMOJI and i not in covered:
            assert ch in "-\u2022" and text[i + 1 : i + 2] in (" ", "\t")
    assert all(a.end <= b.start for a, b in zip(units, units[1:]))


def test_a_bullet_is_not_part_of_its_unit_and_an_emoji_before_a_capital_ends_one():
    text = "- Order ID: {order_id}\n\u2022 Status: {status}\nHi {name} \U0001f44b I checked it. Bye \U0001f60a now."
    assert [s.text for s in split_sentences(text)] == [
        "Order ID: {order_id}",
        "Status: {status}",
        "Hi {name} \U0001f44b",
        "I checked it.",
        "Bye \U0001f60a now.",
    ]


def test_an_emoji_after_a_sentence_is_not_a_unit_of_its_own():
    assert [s.text for s in split_sentences("Thanks! \U0001f60a\n\U0001f44b\nBye.")] == ["Thanks!", "Bye."]


# -- text as people type it ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Your order {order_id} shipped on {ship_date}.",
        "YOUR ORDER {order_id} SHIPPED ON {ship_date}",
        "Your Order {order_id} Shipped On {ship_date}",
        "Hi {name}, your order {order_id} shipped on {ship_date} with {carrier}.",
        "Order {order_id} is currently {status}.",
        "Your order\u2019s total is {total}.",
        "Your order's total is \u201c{total}\u201d.",
        "Order {order_id}: {n} items, {total}.",
        "Order {order_id} ({n} items, {total}) is {status}.",
    ],
)
def test_approved_wording_is_read_as_people_type_it(orders, text):
    report = check_template(text, orders, TYPES)
    assert report.ok, [f.message for f in report.findings]


# -- diagnostics -----------------------------------------------------------------------------------
def test_an_unknown_word_names_itself_the_approved_prefix_grouped_continuations_and_the_nearest_wording(orders):
    text = "Your order {order_id} shiped on {ship_date}."
    (f,) = check_template(text, orders, TYPES).findings
    assert f.code == "S201" and f.severity is Severity.ERROR
    assert text[f.start : f.end] == "shiped"
    assert f.data["unexpected"] == "shiped"
    assert f.data["approved_prefix"] == "Your order {order_id}"
    groups = f.data["expected"]
    assert '"shipped"' in groups["a predicate"] and '"for"' in groups["more about the subject"]
    assert list(groups)[0] == "slots" and all(groups.values())
    assert f.data["nearest"][0] == "Your order {order_id} shipped on {ship_date}."
    assert "'shiped'" in f.message and "after 'Your order {order_id}'" in f.message


def test_a_number_written_out_is_told_to_be_a_slot(orders):
    (f,) = check_template("Your order {order_id} cost $5.", orders, TYPES).findings
    assert f.code == "S201" and "must be slots" in f.message and f.data["unexpected"] == "$"


def test_a_sentence_that_stops_too_early_points_at_its_end(orders):
    text = "Your order {order_id} shipped on"
    (f,) = check_template(text, orders, TYPES).findings
    assert f.code == "S201" and f.end == len(text) and "ends too early" in f.message
    assert "a DATE slot" in f.data["expected"]["slots"]


def test_a_slot_of_the_wrong_type_is_s202_naming_both_types(orders):
    text = "Your order {order_id} shipped on {total}."
    (f,) = check_template(text, orders, TYPES).findings
    assert f.code == "S202" and text[f.start : f.end] == "{total}"
    assert "MONEY" in f.message and "a DATE slot" in f.message


def test_an_attribute_takes_only_a_value_of_its_type(orders):
    report = check_template("Your order total is {eta}.", orders, TYPES)
    assert _codes(report) == ["S202"] and "'total'" in report.findings[0].message
    assert check_template("Your order total is {total}.", orders, TYPES).ok


def test_an_untyped_slot_is_s203_with_the_type_its_place_takes(orders):
    report = check_template("Your order {order_id} shipped on {when}.", orders, TYPES)
    (f,) = report.findings
    assert f.code == "S203" and f.data["inferred"] == "date" and "{DATE}" in f.message
    report = check_template("Your order {order_id} shipped on {when}.", orders, {**TYPES, "when": "weekday"})
    assert report.findings[0].code == "S203" and "unknown type 'weekday'" in report.findings[0].message


def test_stray_spacing_is_reported_but_never_blocks(orders):
    report = check_template("Your order {order_id}  shipped on {ship_date}.", orders, TYPES)
    assert _codes(report) == ["S204"] and report.findings[0].severity is Severity.WARNING and report.ok


def test_a_predicate_that_cannot_be_said_of_the_subject_is_s207(orders):
    report = check_template("Your account was delivered on {ship_date}.", orders, TYPES)
    assert _codes(report) == ["S207"] and "order" in report.findings[0].message


# -- bindings --------------------------------------------------------------------------------------
def test_slot_places_name_the_fields_the_lexicon_binds(orders):
    report = check_template("Your order {order_id} shipped on {ship_date} with {carrier}.", orders, TYPES)
    fields = {u.slot: u.fields for u in report.bindings.uses}
    assert fields == {
        "order_id": ("order.id",),
        "ship_date": ("order.shipped_at",),
        "carrier": ("order.carrier",),
    }


@pytest.mark.parametrize("text", ["Your order {order_id} shipped on {eta}.", "Order {order_id}: shipped on {eta}."])
def test_a_slot_showing_another_field_than_its_place_is_s206(orders, text):
    report = check_template(text, orders, TYPES)
    assert report.ok
    claims = [C("order_id", "order", "id"), C("eta", "order", "estimated_delivery")]
    findings, _ = bind(report.bindings, claims, text, report.findings)
    (f,) = findings
    assert f.code == "S206" and text[f.start : f.end] == "{eta}"
    assert "order.estimated_delivery" in f.message and "order.shipped_at" in f.message
    right = [C("order_id", "order", "id"), C("eta", "order", "shipped_at")]
    assert bind(report.bindings, right, text, report.findings)[0] == []


@pytest.mark.parametrize(
    "text",
    [
        "Your order {order_id} has a total of {total}.",
        "Order {order_id} shows a total of {total}.",
        "Your order {order_id} is {status}, with a total of {total}.",
        "Your order {order_id} is {status}, including shipping of {total}.",
    ],
)
def test_an_attribute_said_to_be_had_shows_that_attribute_of_the_subject(orders, text):
    """The clause "has a total of {x}" and the tails ", with a total of {x}", ", including shipping of {x}" bind
    the value to the attribute of what the clause is about: a slot claiming another field is S206."""
    report = check_template(text, orders, TYPES)
    assert report.ok, [f.message for f in report.findings]
    uses = {u.slot: u.fields for u in report.bindings.uses}
    assert uses["total"] and all(f.startswith("order.") for f in uses["total"]), uses
    shown = uses["total"][0].partition(".")[2]
    right = [C("order_id", "order", "id"), C("status", "order", "status"), C("total", "order", shown)]
    assert bind(report.bindings, right, text, report.findings)[0] == []
    wrong = [*right[:2], C("total", "order", "weight_kg")]
    assert [f.code for f in bind(report.bindings, wrong, text, report.findings)[0]] == ["S206"]


def test_a_statement_slot_shows_the_field_its_form_names():
    """Each form of a domain statement binds its own slots: "{money:refund.amount_minor} has been refunded to
    your card" takes a refund amount, not a payment's; and a predicate after a statement is said of the
    statement's subject."""
    billing = load_library("billing")
    text = "{amt} has been refunded to your card."
    report = check_template(text, billing, {"amt": "money"})
    assert report.ok
    assert {u.slot: u.fields for u in report.bindings.uses} == {"amt": ("refund.amount_minor",)}
    assert bind(report.bindings, [C("amt", "refund", "amount_minor")], text, report.findings)[0] == []
    wrong = bind(report.bindings, [C("amt", "payment", "amount_minor")], text, report.findings)[0]
    assert [f.code for f in wrong] == ["S206"]
    text = "We have received your payment, received on {on}."
    report = check_template(text, billing, {"on": "date"})
    assert report.ok, [f.message for f in report.findings]
    assert {u.slot: u.fields for u in report.bindings.uses} == {"on": ("payment.received_at",)}


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("{amt} has been returned to your {method}.", True),
        ("We acknowledge receipt of {amt} via {method} on {d}.", True),
        ("Please pay {amt} by {d}.", True),
        ("{amt} has been returned to your {method}, as usual.", False),
        ("We acknowledge receipt of {amt} via {method} two days early.", False),
        ("Please pay {amt} by Friday.", False),
    ],
)
def test_billing_money_statements_bind_their_slots(text, ok):
    billing = load_library("billing")
    types = {"amt": "money", "method": "string", "d": "date"}
    report = check_template(text, billing, types)
    assert report.ok is ok, [f.message for f in report.findings]
    if ok:
        assert all(u.fields for u in report.bindings.uses), report.bindings.uses


def test_a_slot_in_an_instruction_shows_the_field_the_entry_names():
    """Sentence-class entries whose slots name fields (an instruction's "pay <object> by {date:invoice.due_date}")
    bind them as statements do: a date claiming another field there is S206."""
    billing = load_library("billing")
    text = "Please pay {amt} by {d}."
    report = check_template(text, billing, {"amt": "money", "d": "date"})
    assert {u.slot: u.fields for u in report.bindings.uses} == {
        "amt": ("invoice.amount_minor",),
        "d": ("invoice.due_date",),
    }
    right = [C("amt", "invoice", "amount_minor"), C("d", "invoice", "due_date")]
    assert bind(report.bindings, right, text, report.findings)[0] == []
    wrong = [C("amt", "invoice", "amount_minor"), C("d", "payment", "received_at")]
    assert [f.code for f in bind(report.bindings, wrong, text, report.findings)[0]] == ["S206"]


def test_a_fact_may_close_with_thanks_but_nothing_after_it(orders):
    assert check_template("Your order {order_id} shipped on {ship_date} – thank you!", orders, TYPES).ok
    assert check_template("Order {order_id} is {status}, many thanks.", orders, TYPES).ok
    assert check_template("Your order {order_id} has been cancelled, I'm afraid.", orders, TYPES).ok
    assert check_template("Good news, {name}: your order {order_id} is {status}.", orders, TYPES).ok
    for text in (
        "Your order {order_id} shipped on {ship_date}, thank you for waiting so long.",
        "Your order {order_id} shipped on {ship_date}, thanks to our new courier.",
        "Your order {order_id} has a bigger total of {total}.",
        "Your order {order_id} has a total of {total}, including free shipping.",
        "Your order {order_id} has a total of {total} because of the sale.",
        "Your order {order_id} has been cancelled, I'm afraid, because of the weather.",
        "Good news, {name}: your order {order_id} is early.",
    ):
        assert not check_template(text, orders, TYPES).ok, text


def test_each_item_of_a_label_line_shows_its_own_attribute(orders):
    text = "Subtotal: {sub} \u00b7 Shipping: {ship} \u00b7 Total: {tot}"
    report = check_template(text, orders, {"sub": "money", "ship": "money", "tot": "money"})
    assert report.ok
    fields = {u.slot: set(u.fields) for u in report.bindings.uses}
    assert "order.shipping_minor" in fields["ship"] and "order.subtotal_minor" not in fields["ship"]
    assert "order.subtotal_minor" in fields["sub"]
    total = C("tot", "order", "total_minor")
    right = [C("sub", "order", "subtotal_minor"), C("ship", "order", "shipping_minor"), total]
    assert bind(report.bindings, right, text, report.findings)[0] == []
    swapped = [C("sub", "order", "shipping_minor"), C("ship", "order", "subtotal_minor"), total]
    assert {f.code for f in bind(report.bindings, swapped, text, report.findings)[0]} == {"S206"}


@pytest.mark.parametrize("text", ["Your order {order_id} has been cancelled.", "Order {order_id}: has been cancelled."])
def test_a_state_said_in_words_needs_its_witness(orders, text):
    report = check_template(text, orders, TYPES)
    (f,) = report.findings
    assert f.code == "S205" and f.severity is Severity.WARNING and report.ok
    assert f.data["witness"] == [{"entity": "order", "field": "order.status", "values": ["cancelled"]}]
    missing, _ = bind(report.bindings, [C("order_id", "order", "id")], text, report.findings)
    assert [x.code for x in missing] == ["S208"] and "order.status = cancelled" in missing[0].message
    wrong, _ = bind(report.bindings, [C("s", "order", "status", "shipped")], text, report.findings)
    assert [x.code for x in wrong] == ["S208"]
    found, witnessed = bind(report.bindings, [C("s", "order", "status", "Cancelled")], text, report.findings)
    assert found == [] and list(witnessed) == ["s"]


def test_lint_payload_binds_claims_and_drops_the_unused_claim_warning_for_a_witness():
    claim = {"type": "enum", "entity": "order", "entity_id": "o1", "field": "status", "value": "cancelled"}
    payload = {"answer_template": "Your order has been cancelled.", "claims": [{"key": "s", **claim}]}
    result = lint_payload(payload, domain="orders")
    assert [f.code for f in result.findings] == [] and result.ok
    assert list(result.measures["witnesses"]) == ["s"]
    other = {**claim, "key": "t", "field": "shipped_at", "type": "date", "value": "2026-01-02"}
    payload = {"answer_template": "Your order has been cancelled.", "claims": [other]}
    assert {f.code for f in lint_payload(payload, domain="orders").findings} == {"S208", "F108"}


def test_lint_without_a_payload_reports_the_witness_need():
    result = lint("Your order has been cancelled.", domain="orders")
    assert [f.code for f in result.findings] == ["S205"] and result.ok


# -- robustness ------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "your",
                "order",
                "{order_id}",
                "{x}",
                "shipped",
                "on",
                "{ship_date}",
                ",",
                ".",
                "and",
                "it",
                "is",
                "{status}",
                "has",
                "been",
                "cancelled",
                "'s",
                "total",
                "(",
                ")",
                ":",
                "hi",
                "{name}",
                "\n",
                "$",
                "5",
                "\u2019",
                "\u201c",
                "#",
            ]
        ),
        max_size=25,
    )
)
def test_the_check_never_raises_and_findings_stay_inside_the_template(orders, words):
    text = " ".join(words)
    report = check_template(text, orders, TYPES)
    for f in report.findings:
        assert 0 <= f.start <= f.end <= len(text)
        assert f.code in {"S201", "S202", "S203", "S204", "S205", "S207"}
    assert report.ok == (
        not any(f.severity is Severity.ERROR for f in report.findings) and all(s.ok for s in report.sentences)
    )


PARCELS = """
domain: parcels
entities:
  parcel:
    nouns: [parcel]
    id: parcel.id
predicates:
  - entity: parcel
    witness:
      - {field: parcel.status, value: dispatched}
      - {field: parcel.dispatched_at}
    forms: ["has been dispatched"]
"""


def test_a_state_may_name_several_witnesses_any_one_of_which_proves_it(tmp_path):
    (tmp_path / "parcels.yaml").write_text(PARCELS)
    lib = load_library("parcels", tmp_path)
    text = "Your parcel has been dispatched."
    report = check_template(text, lib, {})
    assert [f.code for f in report.findings] == ["S205"]
    assert "parcel.status = dispatched or parcel.dispatched_at (any confirmed value)" in report.findings[0].message
    for claim in (C("s", "parcel", "status", "dispatched"), C("d", "parcel", "dispatched_at", "2026-05-01")):
        findings, witnessed = bind(report.bindings, [claim], text, report.findings)
        assert findings == [] and list(witnessed) == [claim.key]
    findings, _ = bind(report.bindings, [C("s", "parcel", "status", "lost")], text, report.findings)
    assert [f.code for f in findings] == ["S208"]


# -- general phrasing from core (issue 15): state adverbs, labels, hedges, signatures -----------------------
GENERAL_TYPES = {**TYPES, "agent": "string"}


@pytest.mark.parametrize(
    "text",
    [
        "Order {order_id} is now {status}.",
        "The parcel is currently {status}.",
        "Shipped on: {ship_date}",
        "Your order {order_id} shipped on: {ship_date}.",
        "I couldn't verify the total for order {order_id}, so I haven't given one.",
        "We don't have the total for your order at the moment.",
        "I wasn't able to check the total for your order right now.",
        "We're unable to verify the total for your order, so we've left it out.",
        "I couldn't find a record of order {order_id}.",
        "Kind regards, Customer Care Team",
        "Best regards, {agent}",
        "On behalf of the Returns Department",
        "Dear Member,",
        "We apologise for any inconvenience caused.",
        "Glad we could help!",
        "You're all set.",
        "Never share this code with anyone.",
        "Tap \u201cEdit\u201d next to your order {order_id}.",
        "I couldn't verify the total for order {order_id}, so I won't give a figure.",
        "Sorry for the confusion around your order.",
        "Hello {name}, and thanks for contacting us.",
        "This is an automated message.",
        "Please do not reply to this email.",
        "For more information, visit our website.",
        "If this wasn't you, you can safely ignore this email.",
        "We'll let you know if anything changes.",
        "Speak soon,",
        "Thanks and kind regards,",
        "Kindest regards,",
        "{agent}, Customer Care Team",
        "Dear {agent} {name},",
        "Morning {name}!",
        "To whom it may concern,",
        "Hello again,",
        "We look forward to hearing from you.",
        "Oops, sorry about that.",
        "Apologies again for the inconvenience.",
        "We are writing to let you know that your order {order_id} shipped on {ship_date}.",
        "I'm checking your order {order_id} now.",
        "As requested, here's a summary of your order {order_id}.",
        "All set, {name}.",
        "We never ask for your password by email, text or phone.",
        "Our staff do not ask for your card details over the phone.",
        "We've received your request to close your order {order_id}.",
    ],
)
def test_general_phrasing_comes_from_core_classes(orders, text):
    report = check_template(text, orders, GENERAL_TYPES)
    assert not [f for f in report.findings if f.severity is Severity.ERROR], [f.message for f in report.findings]


def test_still_and_already_are_aspect_not_claims(orders):
    """corpora/GUIDELINES.md, row 8: "still" and "already" say nothing a record cannot back; the state beside
    them is what the slot or witness proves."""
    for text in ("Your order {order_id} is still {status}.", "Your order {order_id} has already been delivered."):
        assert check_template(text, orders, TYPES).ok, text
    assert not check_template("Your order {order_id} is still {status} after all this time.", orders, TYPES).ok


@pytest.mark.parametrize(
    "text",
    [
        "Your order {order_id} is still {status}, as usual.",
        "Your order {order_id} has already shipped on {ship_date}, ahead of schedule.",
        "Order {order_id} is currently {status} because of the weather.",
        "Shipped early on: {ship_date}",
        "Contains: two items",
        "I couldn't verify the total, so it will probably be about the same.",
        "I don't have the total yet, but it should arrive tomorrow.",
        "Kind regards, the fastest team",
        "We apologise for the delay caused by the courier.",
        "Glad we could help you save money!",
        "Never late, your order {order_id} is {status}.",
        "Orders never ship late.",
        "The delivery is around {ship_date}.",
        "We'll let you know when there's an update tomorrow.",
        "We'll let you know if anything changes, probably on Friday.",
        "This mailbox is not monitored at weekends.",
        "Speak soon, your order ships tomorrow.",
        "We look forward to hearing from you by Friday.",
        "Hello again, your order is late.",
        "We are writing to let you know that your order is late.",
        "I'm checking your order now, it should arrive tomorrow.",
        "We never ask for your password, so your order is safe.",
        "We never ask for your password by email since 2019.",
    ],
)
def test_claims_inside_the_general_frames_are_refused(orders, text):
    report = check_template(text, orders, GENERAL_TYPES)
    assert [f for f in report.findings if f.severity is Severity.ERROR], text


def test_the_compiler_writes_state_adverbs_and_labels_for_every_predicate(tmp_path):
    """No form of PARCELS writes an adverb or a colon: both come from core."""
    (tmp_path / "parcels.yaml").write_text(
        PARCELS + "  - entity: parcel\n    field: parcel.dispatched_at\n"
        '    forms: ["(left | was sent from) our depot on {date}"]\n'
    )
    lib = load_library("parcels", tmp_path)
    types = {"d": "date"}
    for text in (
        "Your parcel has now been dispatched.",
        "Your parcel has currently been dispatched.",
        "Your parcel was sent from our depot on {d}.",
        "Your parcel was now sent from our depot on {d}.",
        "Left our depot on: {d}",
        "Your parcel has been dispatched at the moment.",
        "Your parcel was sent from our depot on {d} at present.",
    ):
        assert lib.parse(text, types) is not None, text
    for text in (
        "Your parcel left our depot on {d} at the moment.",
        "Your parcel has been dispatched at the moment, at present.",
        "Your parcel has just been dispatched.",
        "Your parcel has usually been dispatched.",
        "Your parcel left now our depot on {d}.",
        "Has been: dispatched",
    ):
        assert lib.parse(text, types) is None, text


@pytest.fixture(scope="module")
def subscriptions():
    return load_library("subscriptions")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("Your next billing date is {d}.", True),
        ("Next payment date: {d}", True),
        ("Your trial runs until {d}.", True),
        ("Your subscription remains active until {d}.", True),
        ("Your trial is due to end on {d}.", True),
        ("Your next billing date is tomorrow.", False),
        ("Your subscription remains active until further notice.", False),
        ("Your trial runs until next week.", False),
        ("Your last payment was late.", False),
        ("Your next plan will be cheaper.", False),
    ],
)
def test_next_last_and_until_only_name_a_field_or_lead_to_a_date_slot(subscriptions, text, ok):
    """ "next" and "last" are approved inside attribute names bound to a field, "until" and "end" in predicates
    ending in a slot; the same words anywhere else stay claims."""
    report = check_template(text, subscriptions, {"d": "date"})
    errors = [f.message for f in report.findings if f.severity is Severity.ERROR]
    assert (not errors) is ok, errors


def test_the_word_never_is_a_word_and_empty_classes_stay_unreachable(lockers_dir):
    """The compiler's terminals for empty classes are ``NEVER_<CLASS>``; the word "never" (core's "Never share
    this code") is the terminal ``NEVER`` and must stay in the vocabulary, or every phrase with it is dead."""
    lib = load_library("lockers", lockers_dir)
    names = {t.name for t in lib.lark.terminals}
    assert "NEVER" in names and "NEVER_STMT" in names  # lockers has no statements of its own
    assert lib.vocabulary.get("never") == "NEVER"
    assert not [t for t in lib.vocabulary.values() if t.startswith("NEVER_")]
    assert check_template("Never share this code with anyone.", lib, {}).ok
