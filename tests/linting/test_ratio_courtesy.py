"""The slot ratio does not count approved sentences that state no fact (courtesy, greetings, sign-offs)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from guard.linting import default_stages, lint
from guard.linting.ratio import NO_FACT_KINDS, measure

TYPES = {"name": "string", "order_id": "identifier", "d": "date"}
STAGES = default_stages(freetext=False)
COURTESY = [
    "Thank you for your order.",
    "We are happy to help.",
    "Thanks!",
    "Kind regards,",
    "Hi {name},",
    "Let me know if there's anything else I can do for you.",
    "You can check the status of your order by logging into your account.",
    "Please see the details below.",
]


def _codes(template: str) -> list[str]:
    return [f.code for f in lint(template, domain="orders", slot_types=TYPES, stages=STAGES).findings]


def test_a_template_of_courtesy_sentences_only_gets_no_r401() -> None:
    template = "Thank you for your order.\nWe are happy to help.\n"
    assert measure(template).prose_words == 10  # without the shape stage's word, it is prose
    result = lint(template, domain="orders", slot_types={}, stages=STAGES)
    assert [s.shape for s in result.sentences] == ["courtesy", "courtesy"]
    assert result.findings == [] and result.measures["ratio"].prose_words == 0


def test_unapproved_prose_still_counts() -> None:
    template = (
        "Your order {order_id} shipped on {d}. It went by the very fastest carrier we have in this whole country.\n"
    )
    codes = _codes(template)
    assert "R401" in codes and "R402" in codes and "S201" in codes


def test_courtesy_does_not_dilute_or_inflate_a_statement() -> None:
    template = "Hi {name},\nYour order {order_id} shipped on {d}.\nThank you for your order.\nKind regards,\n"
    result = lint(template, domain="orders", slot_types=TYPES, stages=STAGES)
    assert result.findings == []
    assert result.measures["ratio"].prose_words == 4  # "Your order shipped on"
    assert {"courtesy", "greet_line", "sign_off_line"} <= NO_FACT_KINDS


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(COURTESY), min_size=1, max_size=12))
def test_any_number_of_approved_courtesy_lines_is_clean(lines: list[str]) -> None:
    assert _codes("\n".join(lines) + "\n") == []


def test_a_state_said_in_prose_counts_as_a_fact_its_witness_proves() -> None:
    """ "Your order has been cancelled." has no slot, but the shape stage binds it to a witness claim that the gate
    verifies (or refuses, S205/S208), so the ratio counts it as a slot would be counted."""
    template = "Hi {name},\nYour order has been cancelled.\nThank you for your order.\n"
    assert measure(template).slots == 1  # {name} alone: without the shape stage the state is bare prose
    result = lint(template, domain="orders", slot_types=TYPES, stages=STAGES)
    report = result.measures["ratio"]
    assert report.slots == 2 and report.sentence_words[1] == (5, 1)
    assert not [f for f in result.findings if f.code.startswith("R4")]
    assert [f.code for f in result.findings] == ["S205"]  # the witness is still needed
    stated = measure(template, stated={1: 1})
    assert stated.slots == 2 and stated.sentence_words[1][1] == 1
    long = "Your order has been cancelled, and we moved everything around in the warehouse to make space for it.\n"
    assert "R402" in _codes(long)


def test_help_offers_and_instructions_are_no_prose_but_a_procedure_is() -> None:
    """A chat answer's long help offer and instruction carry no fact the library would admit; a procedure states a
    rule of the organisation, which is prose a model could have made up."""
    template = (
        "Your order {order_id} shipped on {d}.\n"
        "If anything is missing or damaged, reply to this message and we will look into it.\n"
        "You can check the status of your order by logging into your account.\n"
    )
    result = lint(template, domain="orders", slot_types=TYPES, stages=STAGES)
    assert [s.shape for s in result.sentences] == ["statement", "contact", "instruction"]
    assert result.findings == [] and result.measures["ratio"].prose_words == 4
    assert {"contact", "instruction", "discourse"} <= NO_FACT_KINDS and "procedure" not in NO_FACT_KINDS
    policy = (
        "Your order {order_id} shipped on {d}.\n"
        "Refunds exclude the original delivery charge unless the item was faulty.\n"
        "Refunds go back to the original payment method.\n"
    )
    result = lint(policy, domain="orders", slot_types=TYPES, stages=STAGES)
    assert [s.shape for s in result.sentences] == ["statement", "procedure", "procedure"]
    assert [f.code for f in result.findings] == ["R401"]
