"""Frames of stop 36, from probe sets a second author wrote in the style of shop mail and of chat answers about
orders: an order ready for pickup, partially shipped or not shipped yet (witnessed by its status), handed over to
a carrier, "currently shows the status", a vocative after the clause ("..., {name}."), "the order {id} you asked
about", "Order number {id}: status {status}, total {total}."; invoice and payment for an order, credit memos,
store credit, "remains unpaid", "this is a reminder that"; newsletter subscription states (witnessed by the
account's newsletter field), a sign-in's device and location, customer groups and reward points. Each is accepted
as written, refused with a claim added, and states still need their witness."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from tests.shapes.claims import C, accepted, assert_witnessed, refused
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "invoice_number": "identifier",
    "tracking_number": "identifier",
    "creditmemo_id": "identifier",
    "status": "enum",
    "name": "string",
    "carrier": "string",
    "store": "string",
    "email": "string",
    "device": "string",
    "location": "string",
    "ip": "string",
    "group": "string",
    "pickup": "string",
    "link": "string",
    "support": "string",
    "method": "string",
    "seller": "string",
    "order_date": "date",
    "points": "integer",
    "total": "money",
    "amount": "money",
    "refund": "money",
    "credit": "money",
    "subtotal": "money",
    "ship_date": "date",
    "due": "date",
}

ACCEPTED = [
    ("orders", "Order {order_id} currently shows the status {status}."),
    ("orders", "Order {order_id} is marked as {status} in our system."),
    ("orders", "Your order {order_id} hasn't been dispatched yet."),
    ("orders", "Your order is ready for collection at {pickup}."),
    ("orders", "Pickup location: {pickup}"),
    ("orders", "Your order {order_id} has been partially shipped."),
    ("orders", "Your order has been handed over to {carrier}."),
    ("orders", "Order {order_id} left our warehouse on {ship_date} and is being carried by {carrier}."),
    ("orders", "Your package for order {order_id} is with {carrier} under tracking number {tracking_number}."),
    ("orders", "Order {order_id} was placed with a total of {total}."),
    ("orders", "Your order {order_id} for {total} is {status}."),
    ("orders", "Let me look that up."),
    ("orders", "Happy to check that for you."),
    ("orders", "I found your order {order_id}."),
    ("orders", "I looked up order {order_id} for you: it shipped on {ship_date} via {carrier}."),
    ("orders", "Your order {order_id} is {status}, {name}."),
    ("orders", "The order {order_id} you asked about has the status {status}."),
    ("orders", "{name}, your order {order_id} placed on {ship_date} has shipped."),
    ("orders", "Order number {order_id}: status {status}, total {total}."),
    ("orders", "The latest update for order {order_id} is {status}."),
    ("orders", "Your order details are listed below."),
    ("orders", "According to {carrier}, your package was delivered on {ship_date}."),
    ("orders", "You can track it with tracking number {tracking_number}."),
    ("orders", "If you have any questions about your order, reply to this email or contact us at {support}."),
    ("orders", "Payment method: {method}"),
    ("orders", "Per our records, order {order_id} was placed on {order_date}."),
    ("orders", "Based on our records, order {order_id} has a status of {status}."),
    ("orders", "Sure! Order {order_id} is {status}."),
    ("orders", "Let me pull that up."),
    ("orders", "Status: {status}; Carrier: {carrier}; Tracking: {tracking_number}."),
    ("orders", "Order {order_id} | Total: {total} | Status: {status}"),
    ("orders", "Your order is awaiting payment."),
    ("orders", "Part of your order has shipped."),
    ("orders", "Seller: {seller}"),
    ("orders", "This item is sold and shipped by {seller}."),
    ("orders", "I've located order {order_id}."),
    ("orders", "You can track order {order_id} on the {carrier} website."),
    ("billing", "Please find your invoice for order {order_id} attached to this email."),
    ("billing", "Your payment for order {order_id} could not be processed."),
    ("billing", "This is a reminder that invoice {invoice_number} for {amount} is due on {due}."),
    ("billing", "Our records show that invoice {invoice_number} remains unpaid."),
    ("billing", "If you have already paid this invoice, please disregard this message."),
    ("billing", "Pay now"),
    ("billing", "Payment reminder"),
    ("billing", "We have refunded {refund} to your {method}."),
    ("billing", "Credit memo number: {creditmemo_id}"),
    ("billing", "Store credit balance: {credit}"),
    ("billing", "Receipt for order {order_id}"),
    ("billing", "Here is your receipt from {store}."),
    ("billing", "Subtotal: {subtotal}"),
    ("billing", "Your latest invoice has been paid."),
    ("billing", "As of the date of this letter, the balance of your account stands at {amount}."),
    ("billing", "Your payment is pending confirmation from your bank."),
    ("billing", "Please update your payment details to keep your subscription active."),
    ("orders", "Your order {order_id} contains {points} items with a total of {total}."),
    ("orders", "It is {status} with {carrier}."),
    ("account", "You can sign in to your account using the link below."),
    ("account", "Your account has been activated, and you can now sign in with {email}."),
    ("account", "Someone requested a password reset for the account associated with {email}."),
    ("account", "Reset password"),
    ("account", "New sign-in to your account"),
    ("account", "We noticed a new sign-in to your account from {device} in {location}."),
    ("account", "IP address: {ip}"),
    ("account", "If you do not recognise this sign-in, reset your password and contact us."),
    ("account", "To unlock your account, follow the instructions at {link}."),
    ("account", "You have been subscribed to the {store} newsletter."),
    ("account", "Please confirm your newsletter subscription."),
    ("account", "You have been unsubscribed from our newsletter."),
    ("account", "Unsubscribe"),
    ("account", "Your account has been moved to the {group} customer group."),
    ("account", "Customer group: {group}"),
    ("account", "Your reward points balance is {points}."),
    ("account", "If you need help with your account, our support team can be reached at {support}."),
    ("account", "Email: {email}"),
    ("account", "Verify email"),
    ("account", "Choose a new password"),
    ("account", "If you did not request a password reset, no action is needed."),
    ("account", "Manage email preferences"),
    ("account", "{store} staff do not ask for your password."),
    ("account", "Customer Care, {store}"),
    ("account", "Privacy policy"),
    ("account", "We received a request to reset the password for your account."),
    ("account", "This message was sent to {email} by {store}."),
    ("account", "{store} | {support}"),
]


@pytest.mark.parametrize(("domain", "text"), ACCEPTED)
def test_the_frames_are_accepted(domain, text):
    accepted(domain, text, TYPES)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("orders", "Order {order_id} currently shows the status {status}, as usual."),
        ("orders", "Order {order_id} is marked as {status} in our system since Monday."),
        ("orders", "Your order {order_id} hasn't been dispatched yet because of the strike."),
        ("orders", "Your order is ready for collection at {pickup} until Friday."),
        ("orders", "Your order {order_id} has been partially shipped, the rest follows tomorrow."),
        ("orders", "Your order has been handed over to {carrier}, our fastest courier."),
        ("orders", "Order {order_id} is being carried by {carrier} and will arrive early."),
        ("orders", "Order {order_id} was placed with a total of {total}, less than usual."),
        ("orders", "Let me look that up, it should only take two minutes."),
        ("orders", "I found your order {order_id} in the delayed pile."),
        ("orders", "Your order {order_id} is {status}, {name}, sooner than expected."),
        ("orders", "The order {order_id} you asked about yesterday has the status {status}."),
        ("orders", "Order number {order_id}: status {status}, total {total}, free shipping."),
        ("orders", "According to {carrier}, your package was delivered on {ship_date}, a day early."),
        ("orders", "Per our records, order {order_id} was placed on {order_date}, earlier than usual."),
        ("orders", "Sure! Order {order_id} is {status} and will arrive tomorrow."),
        ("orders", "Status: {status}; Carrier: {carrier}; Delivery: free."),
        ("orders", "Order {order_id} | Total: {total} | Status: {status} | Arrives Monday"),
        ("orders", "Your order is awaiting payment for three days."),
        ("orders", "Part of your order has shipped, the rest follows next week."),
        ("account", "{store} staff never ask for your password, because we value security."),
        ("account", "Choose a new password within 24 hours."),
        ("account", "If you did not request a password reset, no action is needed until Friday."),
        ("billing", "This is a reminder that invoice {invoice_number} for {amount} is due in 3 days."),
        ("billing", "Our records show that invoice {invoice_number} remains unpaid after two reminders."),
        ("billing", "We have refunded {refund} to your {method} because the item was faulty."),
        ("billing", "Store credit balance: {credit}, the highest it has been."),
        ("billing", "Pay now to save 10%"),
        ("billing", "As of the date of this letter, the balance of your account stands at {amount}, lower than usual."),
        ("billing", "Your payment is pending confirmation from your bank until Monday."),
        ("orders", "Your order {order_id} contains {points} items with a total of {total}, a bargain."),
        ("orders", "It is {status} with {carrier}, our fastest courier."),
        ("account", "We noticed a new sign-in to your account from {device} in {location} at midnight."),
        ("account", "You have been subscribed to the {store} newsletter, our most popular one."),
        ("account", "You have been unsubscribed from our newsletter for a week."),
        ("account", "Your account has been moved to the {group} customer group, which is cheaper."),
        ("account", "Your reward points balance is {points}, worth twenty pounds."),
        ("account", "To unlock your account, follow the instructions at {link} within 24 hours."),
    ],
)
def test_claims_inside_the_frames_are_refused(domain, text):
    refused(domain, text, TYPES)


@pytest.mark.parametrize(
    ("text", "good", "bad"),
    [
        ("Your order {order_id} is ready for pickup.", "ready_for_pickup", "shipped"),
        ("Your order {order_id} has been partially shipped.", "partially_shipped", "delivered"),
        ("Order {order_id} has not shipped yet.", "processing", "shipped"),
    ],
)
def test_order_states_need_their_status(text, good, bad):
    claims = [C("order_id", "order", "id")]
    assert_witnessed(
        load_library("orders"), text, TYPES, claims, C("w", "order", "status", good), C("w", "order", "status", bad)
    )


def test_newsletter_states_need_the_newsletter_field():
    account = load_library("account")
    text = "You have been unsubscribed from our newsletter."
    report = check_template(text, account, TYPES)
    assert [f.code for f in report.findings] == ["S205"]
    assert bind(report.bindings, [C("w", "account", "newsletter", "unsubscribed")], text, report.findings)[0] == []
    assert bind(report.bindings, [C("w", "account", "newsletter", "subscribed")], text, report.findings)[0]


def test_new_slots_bind_their_fields():
    report = check_template(
        "We noticed a new sign-in to your account from {device} in {location}.", load_library("account"), TYPES
    )
    # two string slots of one statement bind by place: the first is the device, the second the location
    assert _fields(report) == {"device": ("account.last_login_device",), "location": ("account.last_login_location",)}
    report = check_template(
        "Your package for order {order_id} is with {carrier} under tracking number {tracking_number}.",
        load_library("orders"),
        TYPES,
    )
    assert _fields(report)["tracking_number"] == ("order.tracking_number",)
    assert _fields(report)["carrier"] == ("order.carrier",)
    report = check_template("Tracking for order {order_id}: {tracking_number}.", load_library("orders"), TYPES)
    assert _fields(report) == {"order_id": ("order.id",), "tracking_number": ("order.tracking_number",)}
    report = check_template(
        "Status: {status}; Carrier: {carrier}; Tracking: {tracking_number}.", load_library("orders"), TYPES
    )
    assert _fields(report)["carrier"] == ("order.carrier",)
    assert _fields(report)["tracking_number"] == ("order.tracking_number",)
    report = check_template("Your payment for order {order_id} could not be processed.", load_library("billing"), TYPES)
    assert _fields(report) == {"order_id": ("payment.order_id",)}


def test_the_caret_is_at_the_word_that_failed_not_an_earlier_one_spelt_alike():
    text = "The total for order {order_id} comes to {total} for {n} items."
    report = check_template(text, load_library("orders"), {**TYPES, "n": "integer"})
    (finding,) = [f for f in report.findings if f.code.startswith("S2")]
    assert finding.code == "S201"
    assert finding.start == text.index("for {n}")
    assert "comes to {total}" in finding.message
