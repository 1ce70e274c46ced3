"""The free-text classifier judges only what the sentence library does not vouch for: a sentence the domain's
closed library approves (no claim-bearing word can be in it) is not second-guessed, so the classifier's false
alarms on courtesy lines cost no answers; text outside the library is judged as before."""

from __future__ import annotations

import pytest

from guard.linting import default_stages, lint
from guard.linting.freetext import freetext_findings, load_classifier

SIGN_OFF = "Best regards,"


@pytest.fixture(scope="module")
def classifier():
    return load_classifier()


def test_the_classifier_alone_flags_a_sign_off(classifier):
    assert [f.code for f in freetext_findings(SIGN_OFF, classifier)] == ["T301"]


def test_a_sentence_the_library_approves_is_not_judged_again(classifier):
    stages = default_stages(freetext=True, ratio=False, domain="orders", classifier=classifier)
    result = lint(f"{SIGN_OFF}\nThe Shop Team", domain="orders", stages=stages)
    assert [s.ok for s in result.sentences][:1] == [True]
    assert not any(f.code.startswith("T3") for f in result.findings)


def test_text_outside_the_library_is_still_judged(classifier):
    stages = default_stages(freetext=True, ratio=False, domain="orders", classifier=classifier)
    text = "Your order {order_id} is bigger than your last one."
    result = lint(text, domain="orders", slot_types={"order_id": "identifier"}, stages=stages)
    codes = [f.code for f in result.findings]
    assert "S201" in codes and "T301" in codes
