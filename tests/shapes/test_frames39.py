"""Frames of stop 39, from answers a sixth author wrote as a model would for the demo's orders: Markdown emphasis
and headings, a dash or a middle dot between a label and its value, a value leading a line ("{status} · ETA
{eta}"), "our records show it as {status}", notification headings ("ORDER UPDATE"), "Customer: {name}". Each is
accepted as written and refused with a claim added."""

from __future__ import annotations

import pytest

from guard.shapes import check_template, load_library
from guard.shapes.sentences import tokens
from guard.shapes.text import split_sentences
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
    "Feel free to check your account.",
    "You can follow its progress under My Orders in your account.",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_frames_are_accepted(text):
    report = check_template(text, load_library("orders"), TYPES)
    assert not _errors(report), _errors(report)


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
        "Feel free to check your account for a discount.",
        "You can follow its progress under My Orders in your account until it arrives on Monday.",
    ],
)
def test_claims_inside_the_frames_are_refused(text):
    report = check_template(text, load_library("orders"), TYPES)
    assert _errors(report), text


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
    found = _fields(check_template("Customer: {name}", lib, TYPES))
    assert found == {"name": ("customer.name",)}
    found = _fields(check_template("Order {order_id} \u2014 {status}", lib, TYPES))
    assert found["status"] == ("order.status",)
