"""Frames of stop 37, from answers a second author wrote as a model would for the demo's orders (a status after
"has been", a bare order id, bullets between labels, "which came to", three coordinated predicates, a comma
splice, emoji) and from support macros, letters and text messages about accounts. Each is
accepted as written, refused with a claim added, and states still need their witness."""

from __future__ import annotations

import pytest

from guard.shapes import check_template, load_library
from tests.shapes.claims import C, accepted, assert_witnessed, refused
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "order_number": "identifier",
    "status": "enum",
    "tier": "enum",
    "name": "string",
    "customer_name": "string",
    "device": "string",
    "location": "string",
    "email": "string",
    "newsletter": "string",
    "item_count": "integer",
    "weight": "decimal",
    "total": "money",
    "eta": "date",
    "expected": "date",
    "dispatch_date": "date",
    "registered_on": "date",
    "member_since": "date",
    "last_sign_in": "timestamp",
}

ACCEPTED = [
    ("orders", "Order {order_id} has been {status}."),
    ("orders", "Good news, {customer_name} \u2014 your order {order_id} has been {status}!"),
    ("orders", "Order {order_id} \u2022 Status: {status} \u2022 Total: {total}"),
    ("orders", "Hiya {name}! \U0001f44b Order {order_id} is {status} \u2014 estimated arrival {eta}."),
    ("orders", "Quick update on {order_id}: it was dispatched on {dispatch_date}, and the delivery estimate is {eta}."),
    ("orders", "Your order {order_id}, which came to {total}, is now {status}."),
    ("orders", "It contained {item_count} items, weighed {weight}, and cost {total} altogether."),
    ("orders", "Your order #{order_number} is {status} \u2014 it's expected on {eta}."),
    ("orders", "We're expecting it to reach you on {expected}."),
    ("orders", "It has a parcel weight of {weight}."),
    ("orders", "If anything is missing or damaged, reply to this message and I'll look into it."),
    ("orders", "Let us know if you'd like any help placing a new order."),
    ("account", "We noticed a new sign-in to your account from {device} in {location}."),
    ("account", "You've unsubscribed from {newsletter}."),
    ("account", "Your registration was completed successfully on {registered_on}."),
    ("account", "A password reset link is on its way to {email}."),
    ("account", "You've been a {tier} member since {member_since}."),
]


@pytest.mark.parametrize(("domain", "text"), ACCEPTED, ids=[t for _, t in ACCEPTED])
def test_the_frames_are_accepted(domain, text):
    accepted(domain, text, TYPES)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "Order {order_id} has been {status}, two days early."),
        ("orders", "Great news, {name}: order {order_id} has been {status}!"),
        ("orders", "Good news, {name}: order {order_id} has been {status} ahead of schedule!"),
        ("orders", "Order {order_id} \u2022 Status: {status} \u2022 Delivery: free"),
        ("orders", "Hiya {name}! \U0001f44b Order {order_id} is {status} and arriving by Friday."),
        ("orders", "Quick update on {order_id}: it was dispatched on {dispatch_date} because of the backlog."),
        ("orders", "Your order {order_id}, which came to {total}, is now {status} and cheaper than last time."),
        ("orders", "It contained {item_count} items, weighed {weight}, and cost {total} less than usual."),
        ("orders", "It contained {item_count} items, weighed {weight}, and cost {total} altogether, a bargain."),
        ("orders", "Your order #{order_number} is {status} \u2014 it will arrive tomorrow."),
        ("orders", "We're expecting it to reach you on {expected}, before the weekend."),
        ("orders", "If anything is missing, reply within two days and I'll look into it."),
        ("account", "You've unsubscribed from {newsletter} for six months."),
        ("account", "A password reset link is on its way to {email} and expires in 30 minutes."),
        ("account", "You've been a {tier} member since {member_since}, longer than most."),
    ],
)
def test_claims_inside_the_frames_are_refused(domain, text):
    refused(domain, text, TYPES)


@pytest.mark.parametrize(
    ("text", "good", "bad"),
    [
        ("Your order {order_id} hasn't been dispatched yet.", "pending", "shipped"),
        ("Your order {order_id} has been placed.", "pending", "cancelled"),
    ],
)
def test_the_demo_statuses_witness_the_states_they_mean(text, good, bad):
    claims = [C("order_id", "order", "id")]
    assert_witnessed(
        load_library("orders"), text, TYPES, claims, C("w", "order", "status", good), C("w", "order", "status", bad)
    )


def test_unsubscribed_needs_the_newsletter_field():
    good, bad = C("w", "account", "newsletter", "unsubscribed"), C("w", "account", "newsletter", "subscribed")
    assert_witnessed(load_library("account"), "You've unsubscribed from {newsletter}.", TYPES, [], good, bad)


def test_a_status_after_has_been_binds_to_the_status_and_a_sign_in_statement_binds_by_place():
    report = check_template("Your order {order_id} has been {status}.", load_library("orders"), TYPES)
    assert _fields(report)["status"] == ("order.status",)
    report = check_template("You've been a {tier} member since {member_since}.", load_library("account"), TYPES)
    assert _fields(report) == {"tier": ("account.plan",), "member_since": ("account.created_at",)}
