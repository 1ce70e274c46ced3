"""Frames of stop 34, from model-style answer templates and shop mail: what the agent did ("I checked order {id}",
"I've pulled up your order now"), "Good news, {name}!", a status or a value after "was" ("your payment was
{status}", "your last login was at {time}"), a carrier after "on its way", "you ordered {n} items for a total of
{total}", shipping "from our warehouse", "we never ask for your password" after "for your security",
"successfully" after an auxiliary or at the end, an invoice "now due" (a witnessed state), headings over a table
("Order details", "Product", "Total"), "just to let you know", "unfortunately," and a finished or complete order.
Each is accepted as written, refused with a claim added, and its slots bound to the fields they show."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from tests.shapes.claims import C, accepted, refused
from tests.shapes.claims import errors as _errors
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "invoice_id": "identifier",
    "card": "identifier",
    "tracking_number": "identifier",
    "carrier": "string",
    "name": "string",
    "status": "enum",
    "n": "integer",
    "total": "money",
    "amount": "money",
    "shipped": "date",
    "eta": "date",
    "ordered": "date",
    "delivered": "date",
    "when": "timestamp",
    "email": "string",
    "phone": "string",
}


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "I checked order {order_id} and it is {status}."),
        ("orders", "Hi {name}, I looked up order {order_id} for you."),
        ("orders", "Thanks for the details, I've pulled up your order now."),
        ("orders", "Good news, {name}! Your order {order_id} shipped on {shipped}."),
        ("orders", "Your shipment is on its way with {carrier}."),
        ("orders", "You ordered {n} items for a total of {total}."),
        ("orders", "Order {order_id} shipped from our warehouse on {shipped}."),
        ("orders", "Your order left us on {shipped} and is with {carrier}."),
        ("orders", "The total amount charged for order {order_id} was {total}."),
        ("orders", "Below you'll find the items in this shipment."),
        ("orders", "Your order {order_id} was {status}."),
        ("billing", "Your payment for invoice {order_id} was {status}."),
        ("billing", "Please update your payment details to avoid any interruption to your service."),
        ("account", "Your last login was at {when}."),
        ("account", "Your account {order_id} was last signed in at {when}."),
        ("account", "Your account name is {name}."),
        ("account", "We noticed a new sign-in to your account on {when}."),
        ("account", "We've updated the email address on your account to {email}."),
        ("account", "For your security, we never ask for your password by email."),
        ("orders", "Here are the details for order {order_id}: status {status}, total {total}."),
        ("orders", "Order {order_id} is scheduled for delivery on {eta}."),
        ("orders", "Your order {order_id} total is {total}."),
        ("orders", "We dispatched your parcel on {shipped} via {carrier}."),
        ("orders", "I've looked into order {order_id}: it's {status} and is due to arrive on {eta}."),
        ("orders", "Your order of {n} items shipped on {shipped}."),
        ("orders", "Hi {name}, just a quick update: order {order_id} is {status}."),
        ("account", "Your account was successfully created."),
        ("account", "Your account has been created successfully."),
        ("account", "You can now sign in with your email address."),
        ("account", "Use the link below to set a new password."),
        ("account", "If you didn't ask to reset your password, you can safely ignore this email."),
        ("account", "We sent a verification code to {phone}."),
        ("account", "Enter the code to verify your identity."),
        ("account", "Please contact support to restore access to your account."),
        ("account", "This email was sent to {email}."),
        ("billing", "Please find your invoice attached to this email."),
        ("billing", "This is a receipt for your payment of {amount}."),
        ("billing", "Invoice {invoice_id} for {amount} is now due."),
        ("billing", "We have charged {amount} to your card ending in {card}."),
        ("billing", "The payment was refunded to your original payment method."),
        ("orders", "Order details"),
        ("orders", "Product"),
        ("orders", "Quantity"),
        ("orders", "Price"),
        ("orders", "Total"),
        ("orders", "Total:"),
        ("orders", "Items in this shipment"),
        ("orders", "Just to let you know, your order {order_id} has been shipped."),
        ("orders", "Unfortunately, your order has been cancelled."),
        ("orders", "Congratulations on your purchase!"),
        ("orders", "We have finished processing your order."),
        ("orders", "Your order is now complete."),
    ],
)
def test_the_frames_are_accepted(domain, text):
    accepted(domain, text, TYPES)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "I checked order {order_id} and it is {status}, earlier than usual."),
        ("orders", "I looked up order {order_id} for you, and it is the fastest we have shipped."),
        ("orders", "Good news, {name}! Your order {order_id} shipped yesterday."),
        ("orders", "Your shipment is on its way with {carrier} and will arrive tomorrow."),
        ("orders", "You ordered {n} items for a total of {total}, less than last time."),
        ("orders", "You ordered three items for a total of {total}."),
        ("orders", "Order {order_id} shipped from our warehouse on {shipped}, two days early."),
        ("orders", "Your order {order_id} was {status} on Monday."),
        ("billing", "Your payment for invoice {order_id} was {status} due to a bank error."),
        ("account", "Your last login was at {when}, which is unusual."),
        ("account", "We noticed a new sign-in to your account on {when}, probably from a new phone."),
        ("account", "We've updated the email address on your account to {email} within an hour."),
        ("account", "For your security, we never ask for your password by email, unlike other shops."),
        ("orders", "Here are the details for order {order_id}: status {status}, total {total}, the lowest this year."),
        ("orders", "Order {order_id} is scheduled for delivery on {eta}, weather permitting."),
        ("orders", "Your order {order_id} total is {total}, a great deal."),
        ("orders", "We dispatched your parcel on {shipped} via {carrier}, our fastest courier."),
        ("orders", "Your order of {n} items shipped on {shipped}, a day early."),
        ("orders", "Your order of 3 items shipped on {shipped}."),
        ("orders", "Hi {name}, just a quick update: order {order_id} is {status} at last."),
        ("account", "Your account was successfully created in record time."),
        ("account", "Your account has been created successfully by our team yesterday."),
        ("account", "We sent a verification code to {phone} two minutes ago."),
        ("account", "Enter the code within 10 minutes to verify your identity."),
        ("account", "Please contact support to restore access to your account within 30 days."),
        ("billing", "Invoice {invoice_id} for {amount} is now due, a week early."),
        ("billing", "We have charged {amount} to your card ending in {card}, less than last month."),
        ("billing", "The payment was refunded to your original payment method because the item was faulty."),
        ("orders", "Order details for your fastest delivery yet"),
        ("orders", "Price: lowest ever"),
        ("orders", "Total: 3 items"),
        ("orders", "Product of the year"),
        ("orders", "Just to let you know, your order {order_id} has been shipped early."),
        ("orders", "Unfortunately, your order has been cancelled because of a payment problem."),
        ("orders", "Congratulations on your purchase of our best-selling jacket!"),
        ("orders", "We have finished processing your order ahead of schedule."),
        ("orders", "Your order is now complete and arrived two days early."),
    ],
)
def test_claims_inside_the_frames_are_refused(domain, text):
    refused(domain, text, TYPES)


def test_a_count_and_a_total_bind_to_the_order():
    orders = load_library("orders")
    report = check_template("You ordered {n} items for a total of {total}.", orders, TYPES)
    assert _fields(report) == {"n": ("order.line_count",), "total": ("order.total_minor",)}


def test_on_its_way_with_a_carrier_needs_its_witness_and_binds_the_carrier():
    orders = load_library("orders")
    text = "Your shipment is on its way with {carrier}."
    report = check_template(text, orders, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"carrier": ("order.carrier",)}
    assert [f.code for f in report.findings] == ["S205"]
    claims = [C("carrier", "order", "carrier")]
    assert [f.code for f in bind(report.bindings, claims, text, report.findings)[0]] == ["S208"]
    witnessed = [*claims, C("w", "order", "status", "shipped")]
    assert bind(report.bindings, witnessed, text, report.findings)[0] == []


def test_a_value_after_was_binds_to_its_attribute():
    account = load_library("account")
    report = check_template("Your last login was at {when}.", account, TYPES)
    assert _fields(report) == {"when": ("account.last_login_at",)}
    # the type still has to be the attribute's
    assert not check_template("Your last login was at {email}.", account, TYPES).ok
    report = check_template("Your account name is {name}.", account, TYPES)
    assert _fields(report) == {"name": ("customer.name",)}


def test_an_updated_email_binds_the_email_and_a_phone_the_phone():
    account = load_library("account")
    report = check_template("We've updated the email address on your account to {email}.", account, TYPES)
    assert _fields(report) == {"email": ("account.email",)}
    report = check_template("We've changed the phone number on your account to {phone}.", account, TYPES)
    assert _fields(report) == {"phone": ("account.phone",)}


def test_an_attribute_after_an_id_binds_to_that_thing():
    orders = load_library("orders")
    text = "Your order {order_id} total is {total}."
    report = check_template(text, orders, TYPES)
    fields = _fields(report)
    assert fields["order_id"] == ("order.id",)
    assert "order.total_minor" in fields["total"] and all(f.startswith("order.") for f in fields["total"])
    claims = [C("order_id", "order", "id"), C("total", "return", "refund_minor")]
    assert [f.code for f in bind(report.bindings, claims, text, report.findings)[0]] == ["S206"]


def test_labelled_values_after_an_intro_bind_to_their_attributes():
    orders = load_library("orders")
    report = check_template("Here are the details for order {order_id}: status {status}, total {total}.", orders, TYPES)
    fields = _fields(report)
    # the intro names whose values they are: "status" alone is an order's or a return's, here the order's
    assert fields["order_id"] == ("order.id",) and fields["status"] == ("order.status",)
    assert "order.total_minor" in fields["total"] and all(f.startswith("order.") for f in fields["total"])
    text = "Here are the details for order {order_id}: status {status}."
    report = check_template(text, orders, TYPES)
    for wrong in ("return", "status"), ("order", "carrier"):
        claims = [C("order_id", "order", "id"), C("status", *wrong)]
        assert [f.code for f in bind(report.bindings, claims, text, report.findings)[0]] == ["S206"], wrong
    # without a thing named, a label keeps every owner its attribute can have
    report = check_template("Here are the details: status {status}.", orders, TYPES)
    assert "return.status" in _fields(report)["status"] and "order.status" in _fields(report)["status"]
    # a value of a type the named attribute does not have is refused
    assert not check_template("Here are the details for order {order_id}: status {total}.", orders, TYPES).ok


def test_an_invoice_now_due_needs_its_witness():
    billing = load_library("billing")
    text = "Invoice {invoice_id} for {amount} is now due."
    report = check_template(text, billing, TYPES)
    assert report.ok, _errors(report)
    assert _fields(report) == {"invoice_id": ("invoice.id",), "amount": ("invoice.amount_minor",)}
    assert [f.code for f in report.findings] == ["S205"]
    claims = [C("invoice_id", "invoice", "id"), C("amount", "invoice", "amount_minor")]
    assert bind(report.bindings, [*claims, C("w", "invoice", "status", "overdue")], text, report.findings)[0] == []
    assert bind(report.bindings, [*claims, C("w", "invoice", "status", "paid")], text, report.findings)[0]
    assert bind(report.bindings, claims, text, report.findings)[0]


def test_a_heading_binds_nothing_and_a_finished_order_needs_its_witness():
    orders = load_library("orders")
    for text in ("Order details", "Total", "Product"):
        report = check_template(text, orders, TYPES)
        assert report.ok and not report.bindings.uses and not report.findings, (text, report.findings)
    text = "We have finished processing your order."
    report = check_template(text, orders, TYPES)
    assert [f.code for f in report.findings] == ["S205"]
    assert bind(report.bindings, [C("w", "order", "status", "shipped")], text, report.findings)[0] == []
    assert bind(report.bindings, [C("w", "order", "status", "processing")], text, report.findings)[0]
