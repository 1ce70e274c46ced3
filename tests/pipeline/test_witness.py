"""States said in words through the gate with the shipped config: answered only when the witness claim is in
the payload and verifies as confirmed; otherwise refused, naming the sentence. Slots showing another field than
their place binds are refused before any lookup (S206)."""

from __future__ import annotations

import pytest

from guard import demo
from guard.pipeline import Guard

ORDER = "ord_88431"  # shipped, per the demo records


def _claim(key: str, type_: str, field: str, value, entity_id: str = ORDER) -> dict:
    return {"key": key, "type": type_, "entity": "order", "entity_id": entity_id, "field": field, "value": value}


@pytest.fixture
def gate(sqlite_demo):
    url, policy, store = sqlite_demo
    with Guard(policy, store, domain="orders") as g:
        yield g


def _run(gate, template: str, claims: list[dict]):
    return gate.run({"answer_template": template, "claims": claims}, principal=demo.PRINCIPAL, now=demo.NOW)


def test_the_shipped_gate_enforces_the_sentence_library(gate):
    assert gate.modes["shape"].value == "enforce"


def test_a_state_with_its_confirmed_witness_is_answered(gate):
    claims = [_claim("order_id", "identifier", "id", ORDER), _claim("state", "enum", "status", "shipped")]
    d = _run(gate, "Your order {order_id} has shipped.", claims)
    assert d.action.value == "answer", d.message
    assert d.text == f"Your order {ORDER} has shipped."
    assert {r.key for r in d.results} == {"order_id", "state"}


def test_a_state_whose_witness_is_contradicted_is_refused_naming_the_sentence(gate):
    claims = [_claim("order_id", "identifier", "id", ORDER), _claim("state", "enum", "status", "cancelled")]
    d = _run(gate, "Hi there,\nYour order {order_id} has been cancelled.", claims)
    assert d.action.value == "refuse"
    assert "sentence 2" in d.message and "cancelled" in d.message
    assert d.unverified == ("state",)


def test_a_state_without_a_witness_claim_is_refused_before_any_lookup(gate):
    d = _run(gate, "Your order {order_id} has been cancelled.", [_claim("order_id", "identifier", "id", ORDER)])
    assert d.action.value == "refuse"
    assert [f.code for f in d.findings] == ["S208"]
    assert d.results == ()


def test_a_slot_showing_another_field_than_its_place_is_refused(gate):
    claims = [_claim("order_id", "identifier", "id", ORDER), _claim("eta", "date", "estimated_delivery", "2026-08-03")]
    d = _run(gate, "Your order {order_id} shipped on {eta}.", claims)
    assert d.action.value == "refuse"
    assert [f.code for f in d.findings] == ["S206"]
    claims[1] = _claim("shipped", "date", "shipped_at", "2026-07-30")
    d = _run(gate, "Your order {order_id} shipped on {shipped}.", claims)
    assert d.action.value == "answer", d.message


def test_the_lint_cache_does_not_carry_one_payloads_bindings_to_another(gate):
    template = "Your order {order_id} shipped on {d}."
    good = [_claim("order_id", "identifier", "id", ORDER), _claim("d", "date", "shipped_at", "2026-07-30")]
    bad = [_claim("order_id", "identifier", "id", ORDER), _claim("d", "date", "estimated_delivery", "2026-08-03")]
    assert _run(gate, template, good).action.value == "answer"
    assert _run(gate, template, bad).action.value == "refuse"
    assert _run(gate, template, good).action.value == "answer"
