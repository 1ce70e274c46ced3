"""Frames of stop 40, from answers a model would write about the demo's orders (probe set orders_gate_tuning_6):
a person's name signing an answer after a sign-off, a second fact after a splice joined by "and", leads and
courtesies of e-mail and ticket replies, and the weight and total phrasings of multi-fact chat answers. Each is
accepted as written and refused with a claim added."""

from __future__ import annotations

import pytest

from guard.shapes import check_template, load_library
from tests.shapes.claims import accepted, refused

TYPES = {
    "order_id": "identifier",
    "status": "enum",
    "tier": "enum",
    "name": "string",
    "items": "integer",
    "weight": "decimal",
    "total": "money",
    "eta": "date",
    "shipped_at": "date",
}

SIGNED = [
    "Thanks for your message.\n\nBest,\nSam",
    "Thanks for your message.\n\nKind regards,\nPriya \u2013 Support",
    "Thanks for your message.\n\nKind regards,\nMorgan, Customer Support",
    "Let me know if you need anything else. \u2013 Tom",
    "Order {order_id} is {status}.\n\nThanks,\nJamie",
    "Order {order_id} is {status}.\n\nAll the best,\nChris O'Neill",
    "Thanks for your message.\n\nBest wishes,\nAlex\nCustomer Support",
]


@pytest.mark.parametrize("text", SIGNED)
def test_a_name_signs_an_answer_after_a_sign_off(text):
    report = accepted("orders", text, TYPES)
    assert report.sentences[-1].shape == "signature_line"
    assert {u.slot for u in report.bindings.uses} <= set(TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "Sam",
        "Order {order_id} is {status}. Sam will call you.",
        "Thanks for your message.\n\nBest,\nSam (back on Monday)",
        "Thanks for your message.\n\nBest,\nSam, Tomorrow",
        "Thanks for your message.\n\nBest,\nSam Free",
        "Thanks for your message.\n\nBest,\nSam, who packed your parcel",
        "Hi {name},\nSam",
        "Order {order_id} is {status}.\nTom",
    ],
)
def test_a_name_elsewhere_or_with_a_claim_is_refused(text):
    refused("orders", text, TYPES)


def test_a_signing_name_binds_nothing_and_keeps_its_place():
    text = "Order {order_id} is {status}.\n\nBest,\nSam"
    report = check_template(text, load_library("orders"), TYPES)
    assert report.ok
    last = report.sentences[-1]
    assert text[last.start : last.end] == "Sam"
    assert all(u.slot in ("order_id", "status") for u in report.bindings.uses)


ACCEPTED = [
    "Order {order_id} is {status} \u2014 it was dispatched on {shipped_at} and the current estimate for delivery is "
    "{eta}.",
    "Order {order_id} is {status}, it was dispatched on {shipped_at} and the estimated delivery is {eta}.",
    "Order {order_id} weighs in at {weight} and is due to arrive by {eta}.",
    "It has {items} items and weighs {weight} altogether.",
    "Order {order_id} had {items} items, with a combined total of {total}.",
    "It contained {items} items for a total of {total}.",
    "The weight recorded for order {order_id} is {weight}.",
    "The recorded weight of order {order_id} is {weight}.",
    "Just a quick note to confirm your order {order_id} is {status}.",
    "We're confirming that your order {order_id} has been {status}.",
    "To confirm: order {order_id} is {status}, with an estimated delivery date of {eta}.",
    "I've had a look, and order {order_id} is marked as {status}.",
    "I've had a look at order {order_id}.",
    "Hi there, I've looked into this for you.",
    "Here's a quick summary of order {order_id}:",
    "Hope that helps with your planning!",
    "I hope this helps with your records.",
    "We hope you're enjoying your purchase!",
    "Thank you for your recent order.",
    "Hi {name}, sorry for any trouble with this.",
    "Anything else you'd like to know?",
    "Please let me know if you need anything else regarding this order.",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_frames_are_accepted(text):
    accepted("orders", text, TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "Order {order_id} is {status} \u2014 it was dispatched on {shipped_at} and the courier is fast.",
        "Order {order_id} is {status}, it was dispatched on {shipped_at} and arrives on Friday.",
        "Order {order_id} weighs in at {weight}, heavier than usual.",
        "It has {items} items and weighs {weight} altogether, so it ships free.",
        "Order {order_id} had {items} items, with a combined total of {total} after the discount.",
        "It contained {items} items for a total of {total}, two of them on sale.",
        "The weight recorded for order {order_id} is {weight}, about 5 kg.",
        "Just a quick note to confirm your order {order_id} is {status} two days early.",
        "We're confirming that your order {order_id} has been {status} because of a delay.",
        "To confirm: order {order_id} is {status}, with an estimated delivery date of Monday.",
        "I've had a look, and order {order_id} is marked as {status} since yesterday.",
        "I've had a look at order {order_id} and it is late.",
        "Hope that helps with your planning for next week!",
        "We hope you're enjoying your purchase, which arrived early!",
        "Thank you for your recent order of three items.",
        "Hi {name}, sorry for any trouble with this late delivery.",
        "Anything else you'd like to know about your free gift?",
        "Please let me know if you need anything else regarding this refund of \u00a35.",
    ],
)
def test_claims_inside_the_frames_are_refused(text):
    refused("orders", text, TYPES)


def test_a_second_fact_after_a_splice_binds_its_own_field():
    text = "Order {order_id} is {status} \u2014 it was dispatched on {shipped_at} and the estimated delivery is {eta}."
    report = accepted("orders", text, TYPES)
    fields = {u.slot: u.fields for u in report.bindings.uses}
    assert fields["shipped_at"] == ("order.shipped_at",)
    assert fields["eta"] == ("order.estimated_delivery",)


def test_a_slot_in_a_phrase_class_shows_the_field_the_class_names():
    """ "tracking number {identifier:order.tracking_number}" is a phrase of orders' navigation_place class and "card
    ending in {identifier:payment.card_last4}" one of billing's; where no predicate binds them, their slots show
    those fields, and a payload that puts another field there is refused (S206)."""
    from guard.shapes import bind
    from tests.shapes.claims import C

    for domain, text, slot, field, other in (
        (
            "orders",
            "You can track it with tracking number {tn}.",
            "tn",
            "order.tracking_number",
            C("tn", "order", "id"),
        ),
        (
            "billing",
            "We have charged {amount} to your card ending in {card}.",
            "card",
            "payment.card_last4",
            C("card", "invoice", "number"),
        ),
    ):
        types = {"tn": "identifier", "card": "identifier", "amount": "money"}
        report = accepted(domain, text, types)
        assert {u.slot: u.fields for u in report.bindings.uses}[slot] == (field,)
        found, _ = bind(report.bindings, [other], text, report.findings)
        assert [f.code for f in found] == ["S206"], found


BATCH3 = [
    "Absolutely, let me pull that up.",
    "Hi {name}, sorry you've had to wait.",
    "We acknowledge receipt of your letter concerning order {order_id}.",
    "We write in reference to order {order_id}.",
    "Thank you for your correspondence regarding order {order_id}.",
    "We hereby confirm that order {order_id} is {status}.",
    "We are pleased to advise that order {order_id} is {status}.",
    "I've reviewed order {order_id}.",
    "Thank you for your order {order_id}.",
    "Order {order_id} is showing as {status} on our side.",
    "The weight recorded for order {order_id} is {weight}, and it is marked as {status} in our system.",
    "It shipped on {shipped_at}, and our estimate for delivery is {eta}.",
    "Order {order_id} was dispatched on {shipped_at}, and our current delivery estimate is {eta}.",
]


@pytest.mark.parametrize("text", BATCH3)
def test_the_letter_and_ticket_frames_are_accepted(text):
    accepted("orders", text, TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "Absolutely, it will arrive tomorrow.",
        "Hi {name}, sorry you've had to wait three days.",
        "We acknowledge receipt of your letter concerning the damaged order {order_id}.",
        "We write in reference to order {order_id}, which was lost.",
        "We hereby confirm that order {order_id} is {status} and insured.",
        "We are pleased to advise that order {order_id} is {status}, ahead of schedule.",
        "Thank you for your order {order_id} of five items.",
        "Order {order_id} is showing as {status} on our side since Monday.",
        "It shipped on {shipped_at}, and our estimate for delivery is Friday.",
        "Our courier is faster than usual.",
    ],
)
def test_claims_inside_the_letter_and_ticket_frames_are_refused(text):
    refused("orders", text, TYPES)
