"""Frames of stop 35, from shop mail about accounts, orders and bills: welcome and sign-up courtesy ("We're
excited to have you on board", "Thanks for registering with {store}"), an instruction that introduces a link or a
list ("Please click the link below to reset your password:"), purposes such as activating an account or
completing a registration, "keep your password safe", headings over a block ("Your login details", "Shipping
address"), "successfully" after "been", a changed e-mail address or an approved account (witnessed states),
a refund credited to the original payment method, a payment that could not be processed or a card declined
(witnessed by the payment's status), and "you were charged {amount}". Each is accepted as written, refused with
a claim added, and states still need their witness."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from tests.shapes.claims import C, accepted, refused
from tests.shapes.claims import fields as _fields

TYPES = {
    "order_id": "identifier",
    "invoice_id": "identifier",
    "card": "identifier",
    "name": "string",
    "store": "string",
    "email": "string",
    "amount": "money",
    "refund": "money",
    "due": "date",
    "charged_on": "date",
}


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("account", "We're excited to have you on board."),
        ("account", "Thank you for registering with {store}."),
        ("account", "Hi {name}, thanks for creating an account on {store}."),
        ("account", "To activate your account, please click the link below."),
        ("account", "Activate your account"),
        ("account", "Please verify your email address to complete your registration."),
        ("account", "If you did not create this account, please ignore this email."),
        ("account", "Please click the link below to reset your password:"),
        ("account", "To reset your password, visit the following address:"),
        ("account", "If clicking the link doesn't work, copy and paste it into your browser."),
        ("account", "If you forgot your password, you can reset it here."),
        ("account", "If this was you, there's nothing else you need to do."),
        ("account", "Keep your password safe."),
        ("account", "Your login details"),
        ("account", "Password reset request"),
        ("account", "We're sorry to see you go, {name}."),
        ("account", "You are receiving this email because you have an account with {store}."),
        ("account", "We have received a request to change your email address."),
        ("account", "Your account has been successfully created."),
        ("account", "Your password has been successfully reset."),
        ("account", "The email address for your account has been changed."),
        ("account", "Your new email address is {email}."),
        ("account", "Your account has been approved."),
        ("account", "Your account is pending approval."),
        ("account", "You can now log in to your account using your email address and password."),
        ("account", "When you log in to your account, you will be able to:"),
        ("account", "Make changes to your account information"),
        ("account", "We will review your account and let you know once it has been approved."),
        ("account", "To unsubscribe, click the link at the bottom of this email."),
        ("account", "Your password was reset successfully."),
        ("account", "Use the following details to log in:"),
        ("orders", "Shipping to:"),
        ("orders", "Shipping address"),
        ("orders", "A refund of {refund} has been issued to your original payment method."),
        ("orders", "If you did not request this cancellation, please contact us."),
        ("billing", "Payment due date: {due}"),
        ("billing", "Please find attached your invoice."),
        ("billing", "If you have already made this payment, please ignore this reminder."),
        ("billing", "Your payment could not be processed."),
        ("billing", "Your card was declined."),
        ("billing", "Your payment of {amount} is now overdue."),
        ("billing", "The refund has been credited to your original payment method."),
        ("billing", "Your receipt"),
        ("billing", "Billing address"),
        ("billing", "Paid with card ending in {card}."),
        ("billing", "You were charged {amount} on {charged_on}."),
        ("billing", "Your automatic payment is scheduled for {due}."),
        ("billing", "Your invoice from {store}"),
        ("billing", "The invoice is attached to this email as a PDF file."),
        ("billing", "A payment of {amount} was made using your card ending in {card}."),
        ("billing", "We have issued a credit note for {refund}."),
        ("billing", "Please settle your outstanding balance."),
        ("billing", "If you believe you have received this invoice in error, please contact us."),
        ("billing", "Questions about this invoice? Reply to this email and our billing team will help."),
    ],
)
def test_the_frames_are_accepted(domain, text):
    accepted(domain, text, TYPES)


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("account", "We're excited to have you on board, our biggest launch yet."),
        ("account", "Thank you for registering with {store} yesterday."),
        ("account", "To activate your account, please click the link below within 24 hours."),
        ("account", "Please verify your email address to complete your registration by Friday."),
        ("account", "Please click the link below to reset your password quickly:"),
        ("account", "To reset your password, visit the following address before tonight:"),
        ("account", "If clicking the link doesn't work, copy and paste it into your browser, which is faster."),
        ("account", "Keep your password safe, because most accounts are hacked this way."),
        ("account", "Your login details from last week"),
        ("account", "We're sorry to see you go after ten years."),
        ("account", "Your account has been successfully created in record time."),
        ("account", "Your password has been successfully reset twice."),
        ("account", "The email address for your account has been changed again."),
        ("account", "Your account has been approved earlier than usual."),
        ("account", "Your account is pending approval until Monday."),
        ("account", "You can now log in to your account using your email address and password, as usual."),
        ("account", "When you log in to your account, you will be able to check out faster:"),
        ("account", "We will review your account within two days and let you know once it has been approved."),
        ("account", "To unsubscribe, click the link at the bottom of this email before Friday."),
        ("account", "Use the following details to log in from tomorrow:"),
        ("orders", "Shipping to: our fastest courier"),
        ("orders", "Shipping address for free delivery"),
        ("orders", "A refund of {refund} has been issued to your original payment method, as promised."),
        ("billing", "Your payment could not be processed because your bank was offline."),
        ("billing", "Your card was declined for the third time."),
        ("billing", "Your payment of {amount} is now two weeks overdue."),
        ("billing", "The refund has been credited to your original payment method yesterday."),
        ("billing", "You were charged {amount} on {charged_on}, more than last month."),
        ("billing", "Reply to this email and our billing team will help within the hour."),
        ("billing", "Your invoice from {store} with our lowest prices"),
        ("billing", "A payment of {amount} was made using your card ending in {card}, twice."),
        ("billing", "We have issued a credit note for {refund} because the parcel was late."),
        ("billing", "Please settle your outstanding balance by Friday."),
        ("billing", "Your automatic payment is scheduled for {due}, a day earlier than usual."),
    ],
)
def test_claims_inside_the_frames_are_refused(domain, text):
    refused(domain, text, TYPES)


def test_a_changed_email_and_an_approved_account_need_their_witness():
    account = load_library("account")
    text = "The email address for your account has been changed."
    report = check_template(text, account, TYPES)
    assert [f.code for f in report.findings] == ["S205"]
    assert bind(report.bindings, [C("w", "account", "email", "a@example.com")], text, report.findings)[0] == []
    assert bind(report.bindings, [C("w", "account", "phone", "+44")], text, report.findings)[0]
    text = "Your account has been approved."
    report = check_template(text, account, TYPES)
    assert bind(report.bindings, [C("w", "account", "status", "active")], text, report.findings)[0] == []
    assert bind(report.bindings, [C("w", "account", "status", "suspended")], text, report.findings)[0]


def test_a_declined_card_and_an_overdue_payment_are_witnessed_by_their_status():
    billing = load_library("billing")
    text = "Your card was declined."
    report = check_template(text, billing, TYPES)
    assert [f.code for f in report.findings] == ["S205"]
    assert bind(report.bindings, [C("w", "payment", "status", "failed")], text, report.findings)[0] == []
    assert bind(report.bindings, [C("w", "payment", "status", "received")], text, report.findings)[0]
    text = "Your payment of {amount} is now overdue."
    report = check_template(text, billing, TYPES)
    assert _fields(report) == {"amount": ("payment.amount_minor",)}
    claims = [C("amount", "payment", "amount_minor")]
    assert bind(report.bindings, [*claims, C("w", "invoice", "status", "overdue")], text, report.findings)[0] == []
    assert bind(report.bindings, [*claims, C("w", "invoice", "status", "paid")], text, report.findings)[0]


def test_a_charge_binds_the_payment_and_a_due_date_the_invoice():
    billing = load_library("billing")
    report = check_template("You were charged {amount} on {charged_on}.", billing, TYPES)
    assert _fields(report) == {"amount": ("payment.amount_minor",), "charged_on": ("payment.received_at",)}
    report = check_template("Payment due date: {due}", billing, TYPES)
    assert _fields(report) == {"due": ("invoice.due_date",)}


def test_a_heading_and_an_instruction_before_a_colon_bind_nothing():
    headings = (("account", "Your login details"), ("orders", "Shipping address"), ("billing", "Your receipt"))
    for domain, text in headings:
        report = check_template(text, load_library(domain), TYPES)
        assert report.ok and not report.bindings.uses and not report.findings, (text, report.findings)
    report = check_template("Please click the link below to reset your password:", load_library("account"), TYPES)
    assert report.ok and not report.findings, report.findings


def test_a_credit_note_binds_the_refund_and_needs_its_witness():
    billing = load_library("billing")
    text = "We have issued a credit note for {refund}."
    report = check_template(text, billing, TYPES)
    assert _fields(report) == {"refund": ("refund.amount_minor",)}
    assert [f.code for f in report.findings] == ["S205"]
    claims = [C("refund", "refund", "amount_minor")]
    assert bind(report.bindings, [*claims, C("w", "refund", "issued_at", "2026-12-01")], text, report.findings)[0] == []
    assert bind(report.bindings, claims, text, report.findings)[0]
