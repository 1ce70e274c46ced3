"""Issue 16: with the shape stage off, the free-text classifier alone keeps the issue's unverifiable templates
from being answered, and still answers the clean one."""

from __future__ import annotations

import copy

import pytest

from guard import demo
from guard.decision import Action
from guard.pipeline import Guard

SHAPES_OFF = {"format": "enforce", "shape": "off", "freetext": "enforce", "ratio": "report"}

UNVERIFIABLE = [
    "Your order {order_id} will arrive by Friday.",
    "It left our warehouse at 6:40 this morning.",
    "It should be with you by tomorrow evening.",
    "We restock every Monday, which is why it hasn't shipped yet.",
    "Your gold status means order {order_id} skipped the queue.",
    "Delivery was free on this order.",
]


@pytest.fixture()
def gate(sqlite_demo):
    url, policy, store = sqlite_demo
    return Guard(policy, store, domain="orders", config={"domains": {"orders": {"stages": SHAPES_OFF}}})


def test_the_clean_demo_answer_is_answered_with_shapes_off(gate):
    d = gate.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER


@pytest.mark.parametrize("sentence", UNVERIFIABLE)
def test_an_unverifiable_sentence_is_not_answered_with_shapes_off(gate, sentence):
    p = copy.deepcopy(demo.payloads()["answer"])
    p["answer_template"] += " " + sentence
    d = gate.run(p, principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is not Action.ANSWER
    assert any(f.stage == "freetext" for f in d.findings)
