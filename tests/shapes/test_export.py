"""Exports for constrained decoding: llguidance subset, and agreement with lint on generated texts."""

from __future__ import annotations

import re

import lark
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.errors import GrammarError
from guard.linting import lint
from guard.shapes import export, load_grammar, to_lark, to_regex
from guard.shapes.library import SLOT_TYPES

DOMAINS = ["orders", "billing", "account"]
NAMES = {t: [f"{t}_a", f"{t}_b"] for t in SLOT_TYPES}
TYPES = {n: t for t, ns in NAMES.items() for n in ns}


@pytest.mark.parametrize("domain", DOMAINS)
def test_lark_export_is_in_the_llguidance_subset(domain: str) -> None:
    text = to_lark(load_grammar(domain))
    assert "%import" not in text and "%ignore" not in text
    assert not re.search(r"\(\?[=!<]", text), "lookaround"
    assert not re.search(r"^\s*[A-Za-z_]+\.-?\d+\s*:", text, re.M), "priority"
    assert not re.search(r"^\s*[?!]", text, re.M)
    parser = lark.Lark(text, parser="earley", lexer="dynamic")
    assert parser.parse("Hi {name},\nThanks for your order!") is not None


@pytest.mark.parametrize("domain", DOMAINS)
def test_regex_export_compiles_in_re_and_regex(domain: str) -> None:
    pattern = to_regex(load_grammar(domain))
    assert not re.search(r"\(\?[=!<]", pattern)
    re.compile(pattern)
    regex.compile(pattern)


def test_slot_names_pin_types_and_drop_unwritable_shapes() -> None:
    g = load_grammar("orders")
    only = to_regex(g, {"identifier": ["order_id"], "date": ["ship_date"]})
    assert regex.fullmatch(only, "Your order {order_id} shipped on {ship_date}.")
    assert not regex.fullmatch(only, "Your order {ship_date} shipped on {order_id}.")
    assert not regex.fullmatch(only, "Your order total is {total}.")
    assert "SLOT" in to_lark(g) and "DATE_SLOT" in to_lark(g, {"identifier": ["order_id"], "date": ["d"]})
    with pytest.raises(GrammarError):
        to_regex(g, {"datetime": ["x"]})
    with pytest.raises(GrammarError):
        export(g, "json")


def _render(variant, names) -> str:
    out = ""
    for i, (kind, text) in enumerate(variant):
        if i and kind != "punct":
            out += " "
        out += "{" + names[text][0] + "}" if kind == "slot" else text
    return out


@st.composite
def answers(draw):
    domain = draw(st.sampled_from(DOMAINS))
    g = load_grammar(domain)
    shapes = draw(st.lists(st.sampled_from(sorted(g.shapes)), min_size=1, max_size=4))
    out = ""
    for i, name in enumerate(shapes):
        v = draw(st.sampled_from(g.shapes[name].variants))
        pick = {t: [draw(st.sampled_from(ns))] for t, ns in NAMES.items()}
        if i:
            prev_comma = out.endswith(",")
            out += draw(st.sampled_from(["\n", "\n\n"] if prev_comma else [" ", "\n", "\n\n"]))
        out += _render(v, pick)
    return domain, out


_PATTERNS: dict[str, regex.Pattern[str]] = {}
_LARKS: dict[str, lark.Lark] = {}


def _pattern(domain: str) -> regex.Pattern[str]:
    if domain not in _PATTERNS:
        _PATTERNS[domain] = regex.compile(to_regex(load_grammar(domain), NAMES))
    return _PATTERNS[domain]


def _lark(domain: str) -> lark.Lark:
    if domain not in _LARKS:
        _LARKS[domain] = lark.Lark(to_lark(load_grammar(domain), NAMES), parser="earley", lexer="dynamic")
    return _LARKS[domain]


try:
    import llguidance as llg
except ImportError:  # the llguidance checks below are skipped without it
    llg = None

_LLG: dict[str, str] = {}


def _llguidance_accepts(domain: str, text: str) -> bool | None:
    """llguidance's verdict on ``text`` under the Lark export, or None when llguidance is not installed."""
    if llg is None:
        return None
    from ._examples import ByteTokenizer

    if "tok" not in _LLG:
        _LLG["tok"] = llg.LLTokenizer(llg.TokenizerWrapper(ByteTokenizer()))
    if domain not in _LLG:
        _LLG[domain] = llg.LLMatcher.grammar_from_lark(to_lark(load_grammar(domain), NAMES))
    m = llg.LLMatcher(_LLG["tok"], _LLG[domain], log_level=0)
    return m.consume_tokens(list(text.encode("utf-8"))) and m.is_accepting()


def _lark_accepts(domain: str, text: str) -> bool:
    try:
        _lark(domain).parse(text)
        return True
    except lark.exceptions.UnexpectedInput:
        return False


@settings(max_examples=100, deadline=None)
@given(answers())
def test_generated_answers_pass_lint_and_both_exports(answer) -> None:
    domain, text = answer
    assert lint(text, domain=domain, slot_types=TYPES).ok, text
    assert _pattern(domain).fullmatch(text)
    assert _lark_accepts(domain, text)
    assert _llguidance_accepts(domain, text) in (True, None)


@settings(max_examples=200, deadline=None)
@given(answers(), st.data())
def test_mutated_answers_get_the_same_verdict_from_lint_and_regex(answer, data) -> None:
    domain, text = answer
    i = data.draw(st.integers(0, len(text)))
    op = data.draw(st.sampled_from(["delete", "insert", "replace"]))
    ch = data.draw(st.sampled_from(list(" \n\t.,!?{}xA_") + ["order", "the", "{date_a}"]))
    if op == "delete":
        bad = text[:i] + text[i + 1 :]
    elif op == "insert":
        bad = text[:i] + ch + text[i:]
    else:
        bad = text[:i] + ch + text[i + 1 :]
    ok = lint(bad, domain=domain, slot_types=TYPES).ok
    assert ok == (_pattern(domain).fullmatch(bad.strip()) is not None), repr(bad)
    assert _llguidance_accepts(domain, bad.strip()) in (ok, None), repr(bad)
    if ok:
        assert _lark_accepts(domain, bad.strip())
