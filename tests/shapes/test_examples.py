"""Every accept and reject example of every shipped domain, through lint and both exports."""

from __future__ import annotations

import functools
import re

import lark
import pytest
import regex

from guard.linting import lint
from guard.shapes import load_grammar, to_lark, to_regex

from ._examples import GRAMMARS, Example, all_examples, domains, load, slot_names

EXAMPLES = all_examples()


def test_every_domain_has_examples_and_enough_shapes() -> None:
    assert {"orders", "billing", "account"} <= set(domains())
    for d in domains():
        g = load_grammar(d)
        core = set(re.findall(r"^([a-z_]+):", (GRAMMARS / "core.lark").read_text(), flags=re.M))
        own = [s for s in g.shapes if s not in core]
        assert len(g.shapes) >= 25 and len(own) >= 25, d
        assert any(e.accept for e in load(d)) and any(not e.accept for e in load(d))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example(example: Example) -> None:
    result = lint(example.text, domain=example.domain, slot_types=example.slots)
    codes = {f.code for f in result.findings}
    if example.accept:
        assert result.ok, [f.message for f in result.findings]
        assert not result.findings
        if example.shapes:
            assert tuple(result.shapes) == example.shapes
    else:
        assert not result.ok, example.why
        assert set(example.codes) <= codes, (example.codes, [f.message for f in result.findings])


@pytest.mark.parametrize("domain", domains())
def test_every_shape_has_an_accept_example(domain: str) -> None:
    matched = set()
    for e in load(domain):
        if e.accept:
            matched.update(s for s in lint(e.text, domain=domain, slot_types=e.slots).shapes if s)
    assert set(load_grammar(domain).shapes) - matched == set()


@functools.cache
def _regex(domain: str, slots: tuple[tuple[str, str], ...]) -> regex.Pattern[str]:
    return regex.compile(to_regex(load_grammar(domain), slot_names(dict(slots))))


@functools.cache
def _lark(domain: str, slots: tuple[tuple[str, str], ...]) -> lark.Lark:
    return lark.Lark(to_lark(load_grammar(domain), slot_names(dict(slots))), parser="earley", lexer="dynamic")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_regex_export_agrees_with_lint(example: Example) -> None:
    ok = lint(example.text, domain=example.domain, slot_types=example.slots).ok
    pattern = _regex(example.domain, tuple(sorted(example.slots.items())))
    assert (pattern.fullmatch(example.text) is not None) == ok == example.accept


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_lark_export_agrees_with_lint(example: Example) -> None:
    parser = _lark(example.domain, tuple(sorted(example.slots.items())))
    try:
        parser.parse(example.text)
        accepted = True
    except lark.exceptions.UnexpectedInput:
        accepted = False
    assert accepted == example.accept
