"""Word boundaries: words, slots and sentences must be separated the way a person writes them."""

from __future__ import annotations

import lark
import pytest
import regex

from guard.linting import lint
from guard.shapes import load_grammar, to_regex

from ._examples import load, slot_names

TYPES = {"order_id": "identifier", "ship_date": "date", "eta": "date", "item_count": "integer"}
RUN_TOGETHER = "Yourorder{order_id}shippedon{ship_date}."


def test_a_whitespace_ignoring_grammar_would_accept_run_together_words() -> None:
    naive = lark.Lark(
        'start: "Your" "order" SLOT "shipped" "on" SLOT "."\nSLOT: /\\{[a-z_]+\\}/\n%import common.WS\n%ignore WS',
        parser="lalr",
    )
    naive.parse(RUN_TOGETHER)
    r = lint(RUN_TOGETHER, domain="orders", slot_types=TYPES)
    assert not r.ok and {"S201", "S204"} <= {f.code for f in r.findings}
    assert regex.fullmatch(to_regex(load_grammar("orders")), RUN_TOGETHER) is None


def test_missing_space_after_full_stop_fails() -> None:
    t = "Your order {order_id} shipped on {ship_date}.It contains {item_count} items."
    r = lint(t, domain="orders", slot_types=TYPES)
    assert not r.ok
    assert any(f.code == "S204" and t[f.start : f.end] == ".It" for f in r.findings)


ACCEPTS = [e for d in ("orders", "billing", "account") for e in load(d) if e.accept]


@pytest.mark.parametrize("example", ACCEPTS[::3], ids=lambda e: e.id)
def test_every_space_matters(example) -> None:
    """Dropping or doubling any one space of an accepted template makes lint and the regex reject it."""
    pattern = regex.compile(to_regex(load_grammar(example.domain), slot_names(example.slots)))
    text = example.text
    for i, c in enumerate(text):
        if c != " ":
            continue
        for bad in (text[:i] + text[i + 1 :], text[:i] + "  " + text[i + 1 :]):
            assert not lint(bad, domain=example.domain, slot_types=example.slots).ok, bad
            assert pattern.fullmatch(bad) is None, bad
