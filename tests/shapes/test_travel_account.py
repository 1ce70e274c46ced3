"""Travel and account libraries: general phrasings people write (stays, seats, routes, passengers, sign-ins,
contact data, plans), each accepted, and the same frames with a claim tacked on, each refused; states said in
words need their witness, and slots show the fields their places are bound to."""

from __future__ import annotations

import pytest

from guard.shapes import bind, check_template, load_library
from tests.shapes.claims import C


@pytest.fixture(scope="module")
def travel():
    return load_library("travel")


@pytest.fixture(scope="module")
def account():
    return load_library("account")


@pytest.mark.parametrize(
    ("text", "types"),
    [
        (
            "You're booked into {hotel} from {check_in} to {check_out}.",
            {"hotel": "string", "check_in": "date", "check_out": "date"},
        ),
        (
            "You are staying at {hotel} in {city} for {nights} nights.",
            {"hotel": "string", "city": "string", "nights": "integer"},
        ),
        (
            "Hi {name}, you're in seat {seat} on flight {flight}.",
            {"name": "string", "seat": "identifier", "flight": "identifier"},
        ),
        (
            "Your flight leaves {origin} at {departs} and gets into {destination} at {arrives}.",
            {"origin": "string", "departs": "timestamp", "destination": "string", "arrives": "timestamp"},
        ),
        (
            "Booking {ref} was made for {pax} passengers travelling to {city}.",
            {"ref": "identifier", "pax": "integer", "city": "string"},
        ),
        (
            "Booking {ref} includes {nights} nights at {hotel} and cost {total}.",
            {"ref": "identifier", "nights": "integer", "hotel": "string", "total": "money"},
        ),
        ("Your stay at {hotel} starts {check_in}.", {"hotel": "string", "check_in": "date"}),
        ("This booking, reference {ref}, currently has the status {status}.", {"ref": "identifier", "status": "enum"}),
        ("The reservation held under the name {guest} totals {total}.", {"guest": "string", "total": "money"}),
        ("{nights} nights at {hotel} from {check_in}.", {"nights": "integer", "hotel": "string", "check_in": "date"}),
        (
            "{pax} passengers travelling from {origin} to {destination}.",
            {"pax": "integer", "origin": "string", "destination": "string"},
        ),
        (
            "Train {origin} to {destination}, departing {departs}.",
            {"origin": "string", "destination": "string", "departs": "timestamp"},
        ),
        (
            "Your train to {city} departs at {departs}, arriving in {city} at {arrives}.",
            {"city": "string", "departs": "timestamp", "arrives": "timestamp"},
        ),
        ("I've found your reservation under {guest}.", {"guest": "string"}),
        ("Your gate has now been announced.", {}),
        ("Gate assigned.", {}),
        ("We're sorry your plans have changed.", {}),
        ("Need help? Call the number shown in the app.", {}),
        ("If you need anything else with your booking, just ask.", {}),
        ("Our customer service team can be reached by phone or through our website.", {}),
        ("Should you have any questions about your itinerary, please contact our reservations team.", {}),
        ("Thanks, I've got the screenshot you sent.", {}),
        ("Cancellations are subject to the fare rules of your ticket.", {}),
        ("Refundable bookings can be cancelled online.", {}),
        ("Refunds for cancelled bookings go back to the card used to pay.", {}),
    ],
)
def test_travel_sentences_people_write_are_accepted(travel, text, types):
    report = check_template(text, travel, types)
    assert report.ok, [f.message for f in report.findings]


@pytest.mark.parametrize(
    ("text", "types"),
    [
        (
            "You're booked into {hotel} from {check_in} to {check_out}, two days early.",
            {"hotel": "string", "check_in": "date", "check_out": "date"},
        ),
        (
            "You are staying at {hotel} in {city} for {nights} nights because of the storm.",
            {"hotel": "string", "city": "string", "nights": "integer"},
        ),
        (
            "Hi {name}, you're in seat {seat} on flight {flight}, the best seat on the plane.",
            {"name": "string", "seat": "identifier", "flight": "identifier"},
        ),
        (
            "Your flight leaves {origin} at {departs} and gets into {destination} at {arrives}, an hour late.",
            {"origin": "string", "departs": "timestamp", "destination": "string", "arrives": "timestamp"},
        ),
        (
            "Booking {ref} was made for {pax} passengers travelling to {city} tomorrow.",
            {"ref": "identifier", "pax": "integer", "city": "string"},
        ),
        (
            "Booking {ref} includes {nights} nights at {hotel} and cost less than usual.",
            {"ref": "identifier", "nights": "integer", "hotel": "string"},
        ),
        ("Your stay at {hotel} starts on Friday.", {"hotel": "string"}),
        (
            "This booking, reference {ref}, currently has the status {status} because of the strike.",
            {"ref": "identifier", "status": "enum"},
        ),
        (
            "{nights} nights at {hotel} from {check_in}, free of charge.",
            {"nights": "integer", "hotel": "string", "check_in": "date"},
        ),
        ("Train {origin} to {destination}, departing two hours late.", {"origin": "string", "destination": "string"}),
        (
            "Your train to {city} departs at {departs}, arriving in {city} at {arrives}, earlier than scheduled.",
            {"city": "string", "departs": "timestamp", "arrives": "timestamp"},
        ),
        ("I've found your reservation under {guest}, and it will be upgraded.", {"guest": "string"}),
        ("Your gate has now been announced, so boarding starts soon.", {}),
        ("Gate assigned: boarding in ten minutes.", {}),
        ("We're sorry your plans have changed because of the storm.", {}),
        ("Call the number shown in the app within two hours.", {}),
        ("Our customer service team can be reached by phone or through our website within an hour.", {}),
        ("Cancellations are subject to the fare rules of your ticket, which are usually generous.", {}),
        ("Refundable bookings can be cancelled online for free.", {}),
    ],
)
def test_travel_claims_inside_approved_frames_are_refused(travel, text, types):
    assert travel.parse(text, types) is None
    assert not check_template(text, travel, types).ok


@pytest.mark.parametrize(
    ("text", "types"),
    [
        ("The account I found is {account_id}.", {"account_id": "identifier"}),
        (
            "Your {plan} account {account_id} is {status}.",
            {"plan": "enum", "account_id": "identifier", "status": "enum"},
        ),
        (
            "Your account, number {account_id}, has been held with us since {created}.",
            {"account_id": "identifier", "created": "date"},
        ),
        ("The last time anyone signed in was {last_login}.", {"last_login": "timestamp"}),
        ("The last time your password changed was {changed}.", {"changed": "date"}),
        ("The last recorded sign-in is {last_login}.", {"last_login": "timestamp"}),
        ("You last signed in {last_login}.", {"last_login": "timestamp"}),
        ("{name}, we last saw a password change on {changed}.", {"name": "string", "changed": "date"}),
        ("Someone signed in to {username} at {last_login}.", {"username": "identifier", "last_login": "timestamp"}),
        ("New sign-in to {username} at {last_login}.", {"username": "identifier", "last_login": "timestamp"}),
        ("You signed up on {created} with the username {username}.", {"created": "date", "username": "identifier"}),
        (
            "I can see the account was created on {created} under the email {email}.",
            {"created": "date", "email": "string"},
        ),
        (
            "We confirm that the mobile number registered to account {account_id} is {phone}.",
            {"account_id": "identifier", "phone": "string"},
        ),
        ("The phone number we have on file is {phone}.", {"phone": "string"}),
        ("The username linked to {email} is {username}.", {"email": "string", "username": "identifier"}),
        ("The account held in the name of {name} is currently {status}.", {"name": "string", "status": "enum"}),
        ("Account {account_id} is registered in the name of {name}.", {"account_id": "identifier", "name": "string"}),
        ("Your account is registered on the {plan} plan.", {"plan": "enum"}),
        ("Verification codes for your account go to {phone}.", {"phone": "string"}),
        ("The account is awaiting email verification.", {}),
        ("A phone number has been added to your account.", {}),
        ("Your account is active and you can now sign in.", {}),
        ("Security notice for {username}:", {"username": "identifier"}),
        (
            "For your security, we're letting you know that someone signed in to {username} at {last_login}.",
            {"username": "identifier", "last_login": "timestamp"},
        ),
        ("If you're still locked out, reply to this email and we'll help you get back in.", {}),
        ("Feel free to reach out if you have trouble setting up two-factor authentication.", {}),
        ("You may contact us by replying to this letter or through your online account.", {}),
        (
            "Should you have any concerns about the security of your account, please contact us.",
            {},
        ),
        ("You can contact us through the Help Centre.", {}),
        ("Questions? Visit Help > Account in the app.", {}),
        ('Tap "Send code" and enter the code we text to {phone}.', {"phone": "string"}),
        ("Please choose a password that you have not used on other websites.", {}),
        ("We are writing to let you know about a change to your account {account_id}.", {"account_id": "identifier"}),
        ("Thanks, I've got the screenshot you sent.", {}),
        ("Closed accounts cannot be reopened.", {}),
        ("We can only discuss account details with the registered account holder.", {}),
    ],
)
def test_account_sentences_people_write_are_accepted(account, text, types):
    report = check_template(text, account, types)
    assert report.ok, [f.message for f in report.findings]


@pytest.mark.parametrize(
    ("text", "types"),
    [
        ("The account I found is {account_id}, the oldest one we have.", {"account_id": "identifier"}),
        (
            "Your {plan} account {account_id} is {status}, which is unusual.",
            {"plan": "enum", "account_id": "identifier", "status": "enum"},
        ),
        ("Your account, number {account_id}, has been held with us since 2019.", {"account_id": "identifier"}),
        ("The last time anyone signed in was two days ago.", {}),
        ("You last signed in {last_login}, from a new device in Paris.", {"last_login": "timestamp"}),
        (
            "Someone signed in to {username} at {last_login} because your password leaked.",
            {"username": "identifier", "last_login": "timestamp"},
        ),
        (
            "New sign-in to {username} at {last_login}, probably from abroad.",
            {"username": "identifier", "last_login": "timestamp"},
        ),
        (
            "You signed up on {created} with the username {username}, earlier than most members.",
            {"created": "date", "username": "identifier"},
        ),
        ("The phone number we have on file is {phone}, which is correct.", {"phone": "string"}),
        ("Your account is registered on the {plan} plan, our cheapest.", {"plan": "enum"}),
        ("Verification codes for your account go to {phone} within a minute.", {"phone": "string"}),
        ("The account is awaiting email verification since yesterday.", {}),
        ("A phone number has been added to your account by our team yesterday.", {}),
        ("Your account is active and you can now sign in, two days early.", {}),
        ("If you're still locked out tomorrow, reply to this email.", {}),
        ("Closed accounts cannot be reopened after 30 days.", {}),
        ("You can contact us through the Help Centre within an hour.", {}),
        ("We can only discuss account details with the registered account holder, usually within a day.", {}),
    ],
)
def test_account_claims_inside_approved_frames_are_refused(account, text, types):
    assert account.parse(text, types) is None
    assert not check_template(text, account, types).ok


@pytest.mark.parametrize(
    ("domain", "text", "witness", "proof"),
    [
        (
            "account",
            "A phone number has been added to your account.",
            "account.phone",
            C("p", "account", "phone", "+44 7700 900123"),
        ),
        (
            "account",
            "Your account is active and you can now sign in.",
            "account.status",
            C("s", "account", "status", "active"),
        ),
        (
            "account",
            "The account is awaiting email verification.",
            "account.status",
            C("s", "account", "status", "pending_verification"),
        ),
        ("travel", "Gate assigned.", "booking.gate", C("g", "booking", "gate", "B12")),
        ("travel", "Your gate has now been announced.", "booking.gate", C("g", "booking", "gate", "B12")),
    ],
)
def test_a_state_said_in_words_needs_its_witness(domain, text, witness, proof, request):
    lib = request.getfixturevalue(domain)
    report = check_template(text, lib, {})
    assert "S205" in [f.code for f in report.findings] and report.ok
    assert any(w["field"] == witness for f in report.findings for w in f.data.get("witness", []))
    missing, _ = bind(report.bindings, [], text, report.findings)
    assert "S208" in [f.code for f in missing]
    found, witnessed = bind(report.bindings, [proof], text, report.findings)
    assert found == [] and list(witnessed) == [proof.key]


@pytest.mark.parametrize(
    ("domain", "text", "types", "right", "wrong"),
    [
        (
            "account",
            "Account {a} is registered in the name of {n}.",
            {"n": "string"},
            ("customer", "name"),
            ("account", "email"),
        ),
        (
            "account",
            "The account held in the name of {n} is {s}.",
            {"n": "string"},
            ("customer", "name"),
            ("account", "email"),
        ),
        ("account", "The username linked to {n} is {u}.", {"n": "string"}, ("account", "email"), ("customer", "name")),
        (
            "account",
            "Your account has been held with us since {n}.",
            {"n": "date"},
            ("account", "created_at"),
            ("account", "password_changed_at"),
        ),
        (
            "account",
            "The last time anyone signed in was {n}.",
            {"n": "timestamp"},
            ("account", "last_login_at"),
            ("account", "created_at"),
        ),
        (
            "travel",
            "Your flight leaves {n} at {t}.",
            {"n": "string"},
            ("booking", "origin"),
            ("booking", "destination"),
        ),
        (
            "travel",
            "Booking {b} includes {k} nights at {n}.",
            {"n": "string"},
            ("booking", "hotel_name"),
            ("booking", "room_type"),
        ),
        (
            "travel",
            "Your flight is arriving in {n} at {t}.",
            {"n": "string"},
            ("booking", "destination"),
            ("booking", "origin"),
        ),
    ],
)
def test_slots_in_the_new_phrasings_show_the_fields_their_places_are_bound_to(
    domain, text, types, right, wrong, request
):
    """Only the slot {n} is claimed: the others are checked by type."""
    lib = request.getfixturevalue(domain)
    others = {"a": "identifier", "s": "enum", "u": "identifier", "t": "timestamp", "b": "identifier", "k": "integer"}
    report = check_template(text, lib, {**others, **types})
    assert report.ok
    assert bind(report.bindings, [C("n", *right)], text, report.findings)[0] == []
    assert [f.code for f in bind(report.bindings, [C("n", *wrong)], text, report.findings)[0]] == ["S206"]
