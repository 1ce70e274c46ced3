"""Frames of stop 39, from answers two more authors wrote as a model would for the demo's orders: Markdown emphasis
and headings, a dash or a middle dot between a label and its value, a value leading a line ("{status} · ETA
{eta}"), "our records show it as {status}", notification headings ("ORDER UPDATE"), "Customer: {name}"; and the
sentences around the facts (openers, apologies, help offers, closers, sign-offs) from a list a third author wrote.
Each is accepted as written and refused with a claim added."""

from __future__ import annotations

import pytest

from guard.shapes import check_template, load_library
from guard.shapes.sentences import tokens
from guard.shapes.text import split_sentences
from tests.shapes.claims import accepted, refused
from tests.shapes.claims import errors as _errors
from tests.shapes.claims import fields as _fields

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

ACCEPTED = [
    "**Order:** {order_id}\n**Status:** {status}\n**Total:** {total}",
    "Your order *{order_id}* is `{status}`.",
    "## Order summary\nStatus: {status}",
    "Order {order_id} \u2014 {status}",
    "Order #{order_id} \u2014 {items} item(s) \u2014 {total}",
    "{order_id} \u2013 {status}",
    "Status \u2014 {status}\nWeight \u2014 {weight}",
    "{status} \u00b7 ETA {eta}",
    "{status} | {order_id} | {items} items | {total}",
    "{status} \u2705 \u2014 {order_id}, {items} items, {total}",
    "Our records show it as {status}.",
    "The system shows {order_id} as {status}.",
    "Our records list order {order_id} as {status}.",
    "From what I can see, order {order_id} is {status}.",
    "Looking at our records, order {order_id} is {status}.",
    "The short version: order {order_id} is {status}.",
    "Quick summary of your order:",
    "ORDER UPDATE",
    "Shipping Update",
    "STATUS CHECK",
    "Delivery update",
    "Dispatch notice",
    "Customer: {name}\nOrder: {order_id}\nStatus: {status}",
    "Customer: {name} | Order: {order_id} | Status: {status}",
    "Lines: {items}",
    "You can track it from the Orders section of your account.",
    "You can view the full details in your account.",
    "Keep an eye on your account.",
    "Our records show {order_id} as {status} \u2014 order total {total}.",
    "The system shows {order_id} as {status}, with {items} items.",
    "Here's a summary: order {order_id} is {status}, {items} items, total {total}.",
    "Update on {order_id}: {status}",
    "Order {order_id} {status}.",
    "{order_id} {status}. Items: {items}.",
    "Status: {status}; shipped: {shipped_at}; ETA: {eta}",
    "Order {order_id} | Status {status} | Total {total}",
    "Expected: {eta}",
    "Here's everything on file for {order_id}: status {status}, weight {weight}.",
    "The shipment left on {shipped_at}.",
    "It has {items} items with a total of {total}.",
    "It comprised {items} items totalling {total}.",
    "It held {items} items.",
    "Feel free to check your account.",
    "You can follow its progress under My Orders in your account.",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_frames_are_accepted(text):
    accepted("orders", text, TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "**Your order {order_id} will arrive tomorrow.**",
        "Your order *{order_id}* is `{status}`, two days early.",
        "## Free delivery\nStatus: {status}",
        "Order {order_id} \u2014 {status} since Monday",
        "Order #{order_id} \u2014 {items} item(s) \u2014 {total} \u2014 free delivery",
        "{order_id} \u2013 {status}, arriving Friday",
        "Status \u2014 {status} (delayed by the storm)",
        "{status} \u00b7 ETA tomorrow",
        "{status} | {order_id} | 3 items | {total}",
        "{status} \u2014 {order_id}, {items} items, {total}, free shipping",
        "{items} items \u00b7 {total} \u00b7 cheaper than last time",
        "Our records show it as {status} since yesterday.",
        "The system shows {order_id} as {status} because of the strike.",
        "From what I can see, order {order_id} is {status} and will arrive early.",
        "Looking at our records, order {order_id} is probably {status}.",
        "The short version: order {order_id} arrives Friday.",
        "ORDER UPDATE: delivered",
        "Shipping update for Friday",
        "Customer: {name} (our best customer)",
        "Lines: 3",
        "You can track it from the Orders section of your account within the hour.",
        "You can view the full details in your account after 6pm.",
        "Keep an eye on your account for the refund next week.",
        "Our records show {order_id} as {status} \u2014 order total {total}, the lowest this year.",
        "The system shows {order_id} as {status}, with 3 items.",
        "Here's a summary: order {order_id} is {status}, {items} items, total {total}, all in stock.",
        "Update on {order_id}: {status} at last",
        "Order {order_id} {status} yesterday.",
        "{order_id} {status} early.",
        "Status: {status}; shipped: last week; ETA: {eta}",
        "Order {order_id} | Status {status} | Total {total} incl. free shipping",
        "Expected: tomorrow",
        "Here's everything on file for {order_id}: status {status}, no problems found.",
        "The shipment left on {shipped_at}, a day late.",
        "It has {items} items with a total of {total}, the most this month.",
        "It held {items} items, all fragile.",
        "Feel free to check your account for a discount.",
        "You can follow its progress under My Orders in your account until it arrives on Monday.",
    ],
)
def test_claims_inside_the_frames_are_refused(text):
    refused("orders", text, TYPES)


def test_markdown_marks_are_formatting():
    assert [t.text for t in tokens("**Status:** {status}")] == ["status", ":", "status"]
    assert [t.kind for t in tokens("`{order_id}`")] == ["slot"]
    units = split_sentences("## Your order\n### Status: {status}")
    assert [s.text for s in units] == ["Your order", "Status: {status}"]
    # a lone star is not emphasis and stays a character nothing accepts
    assert "*" in [t.text for t in tokens("Delivery * {eta}")]


def test_a_leading_value_shows_what_the_domain_has_of_its_type():
    lib = load_library("orders")
    found = _fields(check_template("{status} | {order_id} | {items} items | {total}", lib, TYPES))
    assert "order.status" in found["status"] and "order.id" in found["order_id"]
    assert found["items"] == ("order.line_count",)
    assert "order.total_minor" in found["total"]
    found = _fields(check_template("{status} \u00b7 ETA {eta}", lib, TYPES))
    assert found["eta"] == ("order.estimated_delivery",)
    found = _fields(check_template("Update on {order_id}: {status}", lib, TYPES))
    assert found["status"] == ("order.status",)
    found = _fields(check_template("Order {order_id} {status}.", lib, TYPES))
    assert found == {"order_id": ("order.id",), "status": ("order.status",)}
    found = _fields(check_template("Status: {status}; shipped: {shipped_at}", lib, TYPES))
    assert found["shipped_at"] == ("order.shipped_at",)
    found = _fields(check_template("Here's a summary: order {order_id} is {status}, {items} items.", lib, TYPES))
    assert found["items"] == ("order.line_count",)


def test_shown_as_binds_the_subjects_field():
    lib = load_library("orders")
    found = _fields(check_template("The system shows {order_id} as {status}.", lib, TYPES))
    assert found == {"order_id": ("order.id",), "status": ("order.status",)}
    found = _fields(check_template("The shipment left on {shipped_at}.", lib, TYPES))
    assert found == {"shipped_at": ("order.shipped_at",)}
    found = _fields(check_template("Customer: {name}", lib, TYPES))
    assert found == {"name": ("customer.name",)}
    found = _fields(check_template("Order {order_id} \u2014 {status}", lib, TYPES))
    assert found["status"] == ("order.status",)


NONFACT = [
    "Good question, let me take a look.",
    "Of course, I'd be glad to help with that.",
    "One moment while I look that up.",
    "Hi there! Bear with me while I check.",
    "Thanks, {name}! Let me see what I can find.",
    "Okay, here's what I found on my end.",
    "Hey {name}, great to hear from you.",
    "Hi! I'm here to help with your order.",
    "I understand how frustrating this can be.",
    "I'm sorry you've had to reach out about this.",
    "Please forgive the inconvenience.",
    "I really appreciate your patience with this.",
    "I'm truly sorry about your experience.",
    "Thanks for chatting with us.",
    "Anything else I can do for you?",
    "Is there anything more I can check for you?",
    "What else can I do for you?",
    "Would you like help with something else?",
    "Just say the word if you need anything.",
    "Let me know how else I can help.",
    "Do you have any other questions about your order?",
    "I'm here if you need me.",
    "Give us a shout if anything else comes up.",
    "Feel free to reach out again anytime.",
    "Let us know if you run into any trouble.",
    "If I can be of further assistance, please let me know.",
    "Does that help?",
    "Wishing you all the best.",
    "Stay safe and take care.",
    "Have a wonderful rest of your day.",
    "Thanks for being a valued customer.",
    "Happy shopping!",
    "Thanks for your patience, and have a good one!",
    "Thank you, {name}, and have a good day.",
    "Thanks and regards,",
    "With gratitude,",
    "Cheers, the team",
    "Sorry for keeping you waiting.",
    "Thank you for choosing us, and have a wonderful week.",
    "We're happy to help whenever you need us.",
    "I'm here whenever you need me.",
    "Is there anything else I can assist you with?",
    "If you need anything further, just reply to this ticket.",
    "Goodbye for now!",
    "Here you go, {name}.",
    "Hope that helps \u2014 enjoy the rest of your week!",
    "Kind regards,\nThe Helpdesk",
    "Is there anything else you'd like me to look into?",
    "Don't hesitate to write back.",
    "Drop me a line if anything else comes up.",
]


@pytest.mark.parametrize("text", NONFACT)
def test_the_sentences_around_the_facts_are_accepted(text):
    accepted("orders", text, TYPES)


@pytest.mark.parametrize(
    "text",
    [
        "Good question, let me take a look before 5pm.",
        "Of course, I'd be glad to help with that refund of £20.",
        "One moment while I look that up, it should only take two minutes.",
        "Okay, here's what I found on my end: it was lost.",
        "I understand how frustrating this can be after three delays.",
        "I'm sorry you've had to reach out about this twice.",
        "Please forgive the inconvenience caused by the courier.",
        "Anything else I can do for you before Friday?",
        "Is there anything more I can check for you, like your refund of £5?",
        "Let us know if you run into any trouble with the free returns.",
        "Wishing you all the best with your faster delivery.",
        "Have a wonderful rest of your day, your parcel arrives tomorrow.",
        "Thanks for being a valued customer for ten years.",
        "Thank you, {name}, and have a good day; it will arrive on Monday.",
        "Happy shopping with 10% off!",
        "Sorry for keeping you waiting for three days.",
        "Thank you for choosing us, and enjoy the free gift.",
        "I'm here whenever you need me, day or night.",
        "Goodbye for now, see you on Friday!",
        "Is there anything else you'd like me to look into before the sale ends?",
    ],
)
def test_claims_around_the_facts_are_refused(text):
    refused("orders", text, TYPES)


def test_a_third_fact_after_a_splice_or_a_semicolon():
    lib = load_library("orders")
    for text in (
        "Order {order_id} is {status}; it was dispatched on {shipped_at} and weighed {weight}.",
        "Order {order_id} is {status} \u2014 it shipped on {shipped_at} and weighs {weight}.",
    ):
        report = check_template(text, lib, TYPES)
        assert not _errors(report), _errors(report)
        assert _fields(report)["weight"] == ("order.weight_kg",)
    report = check_template("Order {order_id} is {status}; it shipped on {shipped_at} and arrived early.", lib, TYPES)
    assert _errors(report)
