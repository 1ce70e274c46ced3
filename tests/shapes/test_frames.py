"""Frames of stop 33, general across domains: an indefinite subject named by its modifier ("a refund of {r} has
been issued"), two modifiers after a subject, "sorry, but ...", a label naming whose attribute it shows
("Order #{id} status: {status}"), a second value in brackets on a label, documents attached or below, the
"you're receiving this email because ..." footer, "welcome to ...", and "item(s)" read as "items". Each is
accepted as written, refused with a claim added, and its slots bound to the fields they show."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from guard.shapes.sentences import tokens
from tests.shapes.claims import C
from tests.shapes.claims import errors as _errors
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "invoice_id": "identifier",
    "tracking_number": "identifier",
    "carrier": "string",
    "name": "string",
    "status": "enum",
    "n": "integer",
    "r": "money",
    "amount": "money",
    "eta": "date",
    "when": "timestamp",
    "address": "string",
    "shipped": "date",
    "username": "identifier",
}


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("billing", "A refund of {r} has been issued to your card."),
        ("billing", "A payment of {amount} was received."),
        ("orders", "Your refund of {r} for order {order_id} has been processed."),
        ("orders", "We're sorry, but order {order_id} has been cancelled."),
        ("orders", "Order #{order_id} status: {status}"),
        ("orders", "Tracking: {tracking_number} ({carrier})"),
        ("orders", "Order {order_id} contains {n} item(s)."),
        ("orders", "Your order {order_id} is {status} and should arrive on {eta}."),
        ("orders", "Your receipt for order {order_id} is attached."),
        ("orders", "Please find your receipt below."),
        ("subscriptions", "Please find your invoice attached."),
        ("travel", "Here is your boarding pass."),
        ("billing", "Thank you for your payment of {amount}."),
        ("billing", "We have received your payment for invoice {invoice_id}."),
        ("account", "You're receiving this email because you have an account with us."),
        ("account", "Welcome to our store, {name}!"),
        ("account", "If you did not make this change, please contact us immediately."),
        ("orders", "We shipped order {order_id} to {address} on {shipped}."),
        ("billing", "I can see a payment of {amount} that reached us on {shipped}."),
        ("billing", "Download a PDF copy of your receipt from your account."),
        ("account", "Please do not share your password with anyone."),
        ("account", "Your account username is {username}."),
        ("orders", "Hi {name}, we wanted to let you know your order is on its way."),
        ("orders", "We're sorry to let you know that your order {order_id} has been cancelled."),
        ("orders", "Your order {order_id} shipped to {address}."),
        ("orders", "Your order {order_id} is currently in transit with {carrier}."),
        ("orders", "The status of order {order_id} changed to {status}."),
        ("travel", "Please quote your booking reference when you contact us."),
        ("travel", "Please ensure your booking reference is correct."),
        ("orders", "Please make sure your delivery address is up to date."),
        ("orders", "You can contact us through the app any time."),
        ("billing", "Not you? Contact us now."),
    ],
)
def test_the_frames_are_accepted(domain, text):
    report = check_template(text, load_library(domain), TYPES)
    assert not _errors(report), _errors(report)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("billing", "A refund of {r} has been issued to your card, faster than usual."),
        ("billing", "A large refund of {r} has been issued."),
        ("billing", "A refund of {r} has been issued because of the delay."),
        ("orders", "Your refund of {r} for order {order_id} has been processed early."),
        ("orders", "We're sorry, but order {order_id} has been cancelled because of a stock problem."),
        ("orders", "Order #{order_id} status: {status} since Monday"),
        ("orders", "Tracking: {tracking_number} ({carrier}, two days late)"),
        ("orders", "Order {order_id} contains {n} item(s), more than last time."),
        ("orders", "Your order {order_id} should arrive tomorrow."),
        ("orders", "Your receipt for order {order_id} is attached, with a free gift."),
        ("orders", "Your receipt is attached and your refund is guaranteed."),
        ("account", "You're receiving this email because your account is at risk."),
        ("account", "Welcome to our store, the best in town!"),
        ("account", "If you did not make this change, please contact us within 24 hours."),
        ("billing", "Thank you for your payment of {amount}, which was two days late."),
        ("billing", "I can see a payment of {amount} that reached us late on {shipped}."),
        ("billing", "I can see a payment of {amount} that probably reached us on {shipped}."),
        ("account", "Please do not share your password with anyone, as it is usually safe."),
        ("orders", "We wanted to let you know your order is on its way and will arrive early."),
        ("orders", "Your order {order_id} shipped to {address} yesterday."),
        ("orders", "Your order {order_id} is currently in transit with {carrier}, two days behind."),
        ("orders", "The status of order {order_id} changed to {status} this morning."),
        ("travel", "Please quote your booking reference when you contact us within 14 days."),
        ("travel", "Please ensure your booking reference is correct for at least six months."),
        ("orders", "Please make sure your delivery address is up to date by Friday."),
        ("billing", "Not you? Contact us now, before your card is charged again."),
    ],
)
def test_claims_inside_the_frames_are_refused(domain, text):
    report = check_template(text, load_library(domain), TYPES)
    assert _errors(report), text


def test_an_indefinite_subject_binds_its_modifier():
    billing = load_library("billing")
    text = "A refund of {r} has been issued to your card."
    report = check_template(text, billing, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"r": ("refund.amount_minor",)}
    assert [f.code for f in report.findings] == ["S205"]
    witness = C("w", "refund", "issued_at")
    right = [C("r", "refund", "amount_minor"), witness]
    assert bind(report.bindings, right, text, report.findings)[0] == []
    wrong = bind(report.bindings, [C("r", "invoice", "amount_minor"), witness], text, report.findings)[0]
    assert [f.code for f in wrong] == ["S206"]
    # without a modifier the thing is not named: not approved
    assert not check_template("A refund has been issued to your card.", billing, TYPES).ok
    # "that" before the predicate changes nothing: the state still needs its witness
    report = check_template("A refund of {r} that has been issued to your card.", billing, TYPES)
    assert report.ok and [f.code for f in report.findings] == ["S205"], report.findings
    report = check_template("I can see a payment of {amount} that reached us on {shipped}.", billing, TYPES)
    assert _fields(report) == {"amount": ("payment.amount_minor",), "shipped": ("payment.received_at",)}


def test_two_modifiers_each_bind_their_own_field():
    orders = load_library("orders")
    report = check_template("Your refund of {r} for order {order_id} has been processed.", orders, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"r": ("return.refund_minor",), "order_id": ("order.id",)}


def test_a_label_names_whose_attribute_it_shows():
    orders = load_library("orders")
    text = "Order #{order_id} status: {status}"
    report = check_template(text, orders, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"order_id": ("order.id",), "status": ("order.status",)}
    claims = [C("order_id", "order", "id"), C("status", "return", "status")]
    assert [f.code for f in bind(report.bindings, claims, text, report.findings)[0]] == ["S206"]


def test_a_value_in_brackets_is_another_attribute_of_the_same_thing():
    orders = load_library("orders")
    text = "Tracking: {tracking_number} ({carrier})"
    report = check_template(text, orders, TYPES)
    assert report.ok, _errors(report)
    fields = _fields(report)
    assert fields["tracking_number"] == ("order.tracking_number",)
    assert "order.carrier" in fields["carrier"] and all(f.startswith("order.") for f in fields["carrier"])
    # a bracketed value of a type the thing has nowhere is refused
    assert not check_template("Tracking: {tracking_number} ({when})", orders, TYPES).ok


def test_a_plural_in_brackets_reads_as_the_plural_and_keeps_positions():
    text = "Order {order_id} contains {n} item(s)."
    toks = tokens(text)
    assert [t.text for t in toks][-2:] == ["items", "."]
    assert toks[-1].start == text.index(".")
    orders = load_library("orders")
    lark = orders.lark_tokens(text, TYPES)
    assert [(t.value, t.start_pos) for t in lark] == [(t.text, t.start) for t in toks]
    # only a bare "(s)" after a letter: "(s)" alone or "(S)" stay punctuation
    assert [t.text for t in tokens("(s) item(S)")] == ["(", "s", ")", "item", "(", "s", ")"]


def test_shipped_to_an_address_needs_its_witness_and_binds_the_address():
    orders = load_library("orders")
    text = "Your order {order_id} shipped to {address}."
    report = check_template(text, orders, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report)["address"] == ("order.delivery_address",)
    assert [f.code for f in report.findings] == ["S205"]
    claims = [C("order_id", "order", "id"), C("address", "order", "delivery_address")]
    assert [f.code for f in bind(report.bindings, claims, text, report.findings)[0]] == ["S208"]


def test_a_changed_status_binds_like_is():
    orders = load_library("orders")
    report = check_template("The status of order {order_id} changed to {status}.", orders, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"order_id": ("order.id",), "status": ("order.status",)}
