"""Frames of stop 38, from answers a third author wrote as a model would for the demo's orders: an instruction
after a fact or after a lead ("..., and you can track it in your account"; "As a {tier} member, you can ..."),
up to five summary items, "Regarding <subject>:", formal and chat courtesies and help offers. Each is accepted
as written and refused with a claim added."""

from __future__ import annotations

import pytest

from guard.shapes import check_template, load_library
from tests.shapes.claims import accepted, refused
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "status": "enum",
    "tier": "enum",
    "name": "string",
    "items": "integer",
    "weight": "decimal",
    "total": "money",
    "amount": "money",
    "eta": "date",
    "shipped_at": "date",
}

ACCEPTED = [
    "Your order {order_id} is {status}, and you can track it in your account.",
    "As a {tier} member, you can track order {order_id} in your account.",
    "Order total {total} \u00b7 {items} items \u00b7 status {status} \u00b7 weight {weight}",
    "Good afternoon.",
    "Regarding order {order_id}: it is {status}.",
    "Hi {name}, order {order_id} is {status} for now.",
    "Just checked \u2014 order {order_id} is {status}.",
    "Please note that order {order_id}, valued at {amount}, has been {status}.",
    "Your order {order_id} was shipped on {shipped_at} and has since been {status}.",
    "You can expect it on {eta}.",
    "Hope you love it! \U0001f60a",
    "Please accept our thanks for your purchase.",
    "We remain at your disposal for any further questions.",
    "Anything else on your mind?",
    "Want me to do anything else with it?",
    "Let me know if there's anything I can do for you.",
    "Feel free to ask if you have any other questions.",
    "If any items are damaged, let us know.",
    "{order_id}: {status}",
    "{order_id} \u2192 {status}",
    "Yep, {order_id} is {status}!",
    "Thanks for being a {tier} customer, {name}!",
    "We write to inform you that your order {order_id} has been {status}.",
    "We trust this information is helpful.",
    "Please find below the current status of your order.",
    "Kindly note that your order {order_id} is {status}.",
    "You'll receive a tracking email once it ships.",
    "I checked and your order {order_id} is {status}.",
    "Hi {name} \U0001f44b I can see order {order_id} is marked as {status}.",
    "- Status: {status}\n- Total: {total}",
    "Hope you love everything!",
    "Feel free to ask me anything else!",
    "Happy to help with anything else \U0001f60a",
    "I'm here if you have more questions \U0001f4ac",
    "Is there anything else you'd like to know?",
    "Here's what I found.",
    "Dear Buyer,",
    "Respectfully,",
    "We hereby inform you that order {order_id} is {status}.",
    "This message is to confirm that your order {order_id} was shipped on {shipped_at}.",
    "If you have any other questions, we're happy to help.",
    "Our team will be glad to assist.",
    "Good news about your order {order_id}: it is {status}.",
    "Thanks for waiting, {name}!",
    "If anything is missing or damaged, simply reply to this e-mail.",
    "Should you wish to place a new order, our team will be glad to assist.",
    "The total value of the order is {total}.",
    "Dear Buyer, this is an automated reply.",
    "Kind regards, the Seller.",
    "Please be advised that order {order_id} is in status {status}.",
    "Dear Customer, your order {order_id} consisting of {items} items was dispatched on {shipped_at}.",
    "The order comprised {items} items.",
    "Reply STOP to opt out.",
    "I just checked order {order_id} for you \u2013 it's currently {status}.",
    "It has {items} items totalling {total}.",
    "It comes to {total} for {items} items.",
    "Current status of {order_id}: {status}.",
    "Your order {order_id} is {status}, and you can keep an eye on it in your account.",
    "If anything is missing or damaged, reply here and I'll look into it.",
    "Order: {order_id} / Status: {status} / Items: {items}",
    "As a {tier} member, you can find all your order details in your account.",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_frames_are_accepted(text):
    accepted("orders", text, TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "Your order {order_id} is {status}, and you can track it in your account from tomorrow.",
        "As a {tier} member, you get free delivery on order {order_id}.",
        "As a {tier} member, you can track order {order_id} faster than other customers.",
        "Order total {total} \u00b7 {items} items \u00b7 status {status} \u00b7 free delivery",
        "Regarding order {order_id}: it is {status} because of the strike.",
        "Hi {name}, order {order_id} is {status} for now, but it should arrive on Friday.",
        "Just checked \u2014 order {order_id} is {status}, earlier than usual.",
        "Please note that order {order_id}, valued at {amount}, has been {status} at no cost.",
        "Your order {order_id} was shipped on {shipped_at} and has since been {status} at 9:40.",
        "You can expect it around Friday.",
        "You can expect it on {eta}, guaranteed.",
        "Hope you love it as much as last time!",
        "We remain at your disposal for 48 hours.",
        "Let me know if there's anything I can do for you before Monday.",
        "{order_id}: {status} since Monday",
        "{order_id} \u2192 {status}, free delivery",
        "Yep, {order_id} is {status} and on schedule!",
        "Thanks for being a {tier} customer for ten years, {name}!",
        "Order: {order_id} / Status: {status} / Shipped: yesterday",
        "We write to inform you that your order {order_id} has been {status} by our fastest courier.",
        "We trust this information is helpful and that it arrives before the weekend.",
        "Kindly note that your order {order_id} is {status} due to a stock shortage.",
        "You'll receive a tracking email within the hour.",
        "I checked and your order {order_id} is {status}, as usual.",
        "We hereby inform you that order {order_id} is {status} after a short delay.",
        "This message is to confirm that your order {order_id} was shipped on {shipped_at} by express courier.",
        "Good news about your order {order_id}: it is {status} and arrives tomorrow.",
        "- Status: {status} (as of this morning)",
        "Hope you love everything, it's our best seller!",
        "Happy to help with anything else until 6pm.",
        "Hi {name} \U0001f44b Your order {order_id} is {status} and arrives Friday.",
        "The total value of the order is {total}, less than last time.",
        "Please be advised that order {order_id} is in status {status} since Monday.",
        "The order comprised {items} items, all in stock.",
        "It has {items} items totalling {total}, a record for you.",
        "It comes to {total} for {items} items, with free returns.",
        "Current status of {order_id}: {status} since Tuesday.",
        "I just checked order {order_id} for you \u2013 it's currently {status} at the Leeds depot.",
        "Your order {order_id} is {status}, and you can keep an eye on it in your account until Friday.",
        "If anything is missing or damaged, reply here within two days and I'll look into it.",
        "As a {tier} member, you can find all your order details in your account within an hour.",
    ],
)
def test_claims_inside_the_frames_are_refused(text):
    refused("orders", text, TYPES)


def test_the_new_places_bind_their_fields():
    lib = load_library("orders")
    report = check_template(
        "Order total {total} \u00b7 {items} items \u00b7 status {status} \u00b7 weight {weight}", lib, TYPES
    )
    assert "order.total_minor" in _fields(report)["total"]
    assert {k: v for k, v in _fields(report).items() if k != "total"} == {
        "items": ("order.line_count",),
        "status": ("order.status",),
        "weight": ("order.weight_kg",),
    }
    report = check_template("Please note that order {order_id}, valued at {amount}, has been {status}.", lib, TYPES)
    assert _fields(report)["amount"] == ("order.total_minor",)
    report = check_template("You can expect it on {eta}.", lib, TYPES)
    assert _fields(report) == {"eta": ("order.estimated_delivery",)}
    report = check_template("As a {tier} member, you can track order {order_id} in your account.", lib, TYPES)
    assert _fields(report)["tier"] == ("customer.tier",)


def test_a_bare_id_is_the_order_it_names():
    lib = load_library("orders")
    found = _fields(check_template("{order_id}: {status}, {total}", lib, TYPES))
    assert found["order_id"] == ("order.id",)
    assert found["status"] == ("order.status",) and "order.total_minor" in found["total"]
    found = _fields(check_template("Yep, {order_id} is {status}!", lib, TYPES))
    assert found == {"order_id": ("order.id",), "status": ("order.status",)}
    found = _fields(check_template("Thanks for being a {tier} customer, {name}!", lib, TYPES))
    assert found["tier"] == ("customer.tier",)


def test_a_count_after_consisting_of_binds_the_item_count():
    lib = load_library("orders")
    found = _fields(check_template("Your order {order_id} consisting of {items} items is {status}.", lib, TYPES))
    assert found["items"] == ("order.line_count",)
    found = _fields(check_template("It comes to {total} for {items} items.", lib, TYPES))
    assert found == {"total": ("order.total_minor",), "items": ("order.line_count",)}
    found = _fields(check_template("Current status of {order_id}: {status}.", lib, TYPES))
    assert found == {"order_id": ("order.id",), "status": ("order.status",)}
