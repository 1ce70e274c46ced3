"""General frames shared by every domain: notifications of the organisation's own process, conditions before an
instruction or a contact offer, an attribute had by the customer ("you have a balance of {b}"), and modifiers
read through a fused token ("the email address on your account"). Each is accepted as written and refused
when a claim rides along."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from tests.shapes.claims import C, accepted, refused
from tests.shapes.claims import errors as _errors

TYPES = {
    "order_id": "identifier",
    "ship_date": "date",
    "carrier": "string",
    "email": "string",
    "b": "money",
    "amt": "money",
    "status": "enum",
}


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "We'll email you when your order {order_id} ships."),
        ("orders", "Once your return has been received, we'll let you know."),
        ("orders", "You'll get a confirmation email once we receive your return."),
        ("orders", "We'll send you a tracking number once your order has shipped."),
        ("orders", "If you've already returned the items, please ignore this email."),
        ("orders", "If you'd like to cancel your order, just reply to this email."),
        ("orders", "If you need to make a change to your order, please reply to this email."),
        ("orders", "If this was you, you don't need to do anything."),
        ("orders", "To cancel your order, please contact us."),
        ("orders", "Please contact us if anything looks wrong with your order."),
        ("orders", "You can unsubscribe at any time."),
        ("orders", "Sign in to manage your order."),
        ("orders", "We've shipped your order {order_id} via {carrier}."),
        ("billing", "We'll send you a receipt once your payment goes through."),
        ("billing", "If you have already paid, please ignore this message."),
        ("subscriptions", "We'll let you know when your subscription renews."),
        ("travel", "We'll email you when your booking is confirmed."),
        ("account", "If you didn't request a password reset, you can safely ignore this email."),
    ],
)
def test_general_frames_are_accepted_in_every_domain(domain, text):
    accepted(domain, text, TYPES)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "We'll let you know when your order ships tomorrow."),
        ("orders", "We'll email you when your order ships, usually within two days."),
        ("orders", "We'll email you as soon as your order ships on Friday."),
        ("orders", "You'll receive an email when your order ships in two days."),
        ("orders", "We'll email you when your order ships, which is usually quick."),
        ("orders", "If you've already returned the items, your refund will be faster."),
        ("orders", "If you need to make a change to your order, reply before noon."),
        ("orders", "To cancel your order, please contact us within an hour."),
        ("orders", "You can unsubscribe at any time, for free."),
        ("orders", "We've shipped your order {order_id} via {carrier}, two days early."),
        ("billing", "We'll send you a receipt once your payment goes through in a few minutes."),
        ("billing", "If you have already paid, please ignore this message, as it usually takes a day."),
        ("subscriptions", "We'll let you know when your subscription renews next month."),
        ("account", "If you didn't request a password reset, your account is probably safe."),
        ("orders", "Your order has been cancelled as requested, two days early."),
        ("orders", "Your order has been cancelled at your request because of a delay."),
        ("travel", "Your booking has been cancelled as requested and refunded in full."),
        # who asked for a change is not in the record: "as requested" after a state says why it holds
        ("orders", "We have cancelled your order {order_id} as requested."),
        ("orders", "Your order has been cancelled at your request."),
        ("orders", "Order {order_id} shows a status of {status}, as you requested."),
        ("subscriptions", "Your subscription has been cancelled, as you asked."),
        ("travel", "Your booking has been cancelled as requested."),
    ],
)
def test_claims_inside_the_general_frames_are_refused(domain, text):
    refused(domain, text, TYPES)


def test_an_attribute_the_customer_has_binds_to_its_field():
    """A balance "you have": no subject names the entity, the attribute does."""
    billing = load_library("billing")
    for text in (
        "You have an outstanding balance of {b} on your account.",
        "There's a balance of {b} on your account.",
        "There is a credit of {b}.",
    ):
        report = check_template(text, billing, TYPES)
        assert report.ok, (text, _errors(report))
        (use,) = report.bindings.uses
        assert use.slot == "b" and use.fields and all(f.startswith("billing_account.") for f in use.fields), use
    text = "You have an outstanding balance of {b} on your account."
    report = check_template(text, billing, TYPES)
    right = [C("b", "billing_account", "balance_minor")]
    assert bind(report.bindings, right, text, report.findings)[0] == []
    wrong = [C("b", "invoice", "amount_minor")]
    assert [f.code for f in bind(report.bindings, wrong, text, report.findings)[0]] == ["S206"]
    assert not check_template("You have an outstanding balance of {b}, more than last month.", billing, TYPES).ok


def test_a_fused_modifier_is_read_only_where_the_plain_words_fail():
    """After a subject, "on your" would need two words of lookahead to tell a modifier from a predicate; the
    lexicon writes the modifier with the fused token ``on+your`` and the check tries that reading second."""
    account = load_library("account")
    assert ("on", "your") in account.fused
    text = "The email address on your account is {email}."
    readings = list(account.readings(text, TYPES))
    assert [t.value for t in readings[0]][:4] == ["the", "email", "address", "on"]
    fused = readings[1]
    assert [t.value for t in fused][:4] == ["the", "email", "address", "on your"]
    assert (fused[3].start_pos, fused[3].end_pos) == (text.index("on your"), text.index("on your") + 7)
    report = check_template(text, account, TYPES)
    assert report.ok, _errors(report)
    assert {u.slot: u.fields for u in report.bindings.uses} == {"email": ("account.email",)}
    assert check_template("The email address ON YOUR account is {email}.", account, TYPES).ok
    assert not check_template("The email address on your account is {email}, as always.", account, TYPES).ok
    assert not check_template("The email address on your old account is {email}.", account, TYPES).ok
    # a sentence with no fusable pair is read once
    assert len(list(account.readings("Your account is active.", {}))) == 1


def test_the_fused_token_is_spelled_as_two_words_to_people():
    account = load_library("account")
    name = account.fused[("on", "your")]
    assert account.spelling[name] == "on your"
