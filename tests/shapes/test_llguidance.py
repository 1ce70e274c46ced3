"""The exports in the real constrained-decoding engine: llguidance accepts exactly the approved templates."""

from __future__ import annotations

import functools

import pytest

from guard.shapes import load_grammar, to_lark, to_regex

from ._examples import ByteTokenizer, Example, all_examples, domains, slot_names

llg = pytest.importorskip("llguidance")

EXAMPLES = all_examples()


@functools.lru_cache(maxsize=1)
def _tokenizer():
    return llg.LLTokenizer(llg.TokenizerWrapper(ByteTokenizer()))


@functools.cache
def _grammar(domain: str, fmt: str, slots: tuple[tuple[str, str], ...]) -> str:
    names = slot_names(dict(slots)) if slots else None
    g = load_grammar(domain)
    if fmt == "lark":
        return llg.LLMatcher.grammar_from_lark(to_lark(g, names))
    return llg.LLMatcher.grammar_from_regex(to_regex(g, names))


def _accepts(grammar: str, text: str) -> bool:
    m = llg.LLMatcher(_tokenizer(), grammar, log_level=0)
    return m.consume_tokens(list(text.encode("utf-8"))) and m.is_accepting()


@pytest.mark.parametrize("fmt", ["lark", "regex"])
@pytest.mark.parametrize("domain", domains())
def test_exports_are_valid_llguidance_grammars(domain: str, fmt: str) -> None:
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(_grammar(domain, fmt, ()), _tokenizer())
    assert not is_error and messages == []


@pytest.mark.parametrize("fmt", ["lark", "regex"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_llguidance_agrees_with_lint(example: Example, fmt: str) -> None:
    grammar = _grammar(example.domain, fmt, tuple(sorted(example.slots.items())))
    assert _accepts(grammar, example.text) == example.accept
