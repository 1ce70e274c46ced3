"""Property tests for the sentence splitter and the word/slot/punctuation lexer."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from guard.payload import scan_template
from guard.shapes.text import lex_sentence, split_sentences

WORDS = st.sampled_from(["Your", "order", "It", "shipped", "on", "sign-in", "order's", "a", "7"])
PUNCT = st.sampled_from([",", ".", "!", "?", ":", ";"])
SLOTS = st.sampled_from(["{order_id}", "{eta}", "{a_1}"])
TOKEN = st.one_of(WORDS, WORDS, SLOTS, PUNCT)
TEXT = st.text(alphabet=st.sampled_from(list("ab .,!?\n\t{}xyz_'-")), max_size=60)


def canonical(tokens: list[str]) -> str:
    """Tokens joined by the spacing rules: one space before words and slots, none before punctuation."""
    out = ""
    for i, t in enumerate(tokens):
        if i and t not in ",.!?:;":
            out += " "
        out += t
    return out


def _lex(text: str):
    slots, _ = scan_template(text)
    spans = [(s.name, s.start, s.end) for s in slots]
    return [lex_sentence(text, s, spans) for s in split_sentences(text)]


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_sentences_cover_the_template_in_order(text: str) -> None:
    sents = split_sentences(text)
    assert [s.index for s in sents] == list(range(len(sents)))
    pos = 0
    for s in sents:
        assert text[s.start : s.end] == s.text
        assert s.text and s.text == s.text.strip()
        gap = text[pos : s.start]
        assert gap.strip() == ""
        pos = s.end
    assert text[pos:].strip() == ""
    assert "".join(text.split()) == "".join("".join(s.text.split()) for s in sents)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_tokens_cover_every_visible_character(text: str) -> None:
    for toks, _gaps in _lex(text):
        for a, b in pairwise(toks):
            assert a.end <= b.start
        for t in toks:
            assert text[t.start : t.end] == t.text
    visible = "".join(t.text for toks, _ in _lex(text) for t in toks)
    assert visible == "".join(text.split())


@settings(max_examples=200, deadline=None)
@given(st.lists(TOKEN, min_size=1, max_size=12).filter(lambda ts: ts[0] not in ",.!?:;"))
def test_canonical_spacing_has_no_gaps(tokens: list[str]) -> None:
    text = canonical(tokens)
    sents = split_sentences(text)
    lexed = _lex(text)
    assert [t.text for toks, _ in lexed for t in toks] == tokens
    assert all(not gaps for _, gaps in lexed)
    assert len(sents) == 1 + sum(1 for a, b in pairwise(tokens) if a in ".!?" and b not in ",.!?:;")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(WORDS, SLOTS), min_size=2, max_size=8), st.data())
def test_any_spacing_change_inside_a_sentence_is_a_gap_or_a_new_word(tokens: list[str], data: st.DataObject) -> None:
    text = canonical(tokens)
    spaces = [i for i, c in enumerate(text) if c == " "]
    i = data.draw(st.sampled_from(spaces))
    change = data.draw(st.sampled_from(["", "  ", "\t", "\n", " \n"]))
    bad = text[:i] + change + text[i + 1 :]
    lexed = _lex(bad)
    merged = [t.text for toks, _ in lexed for t in toks] != tokens
    assert merged or any(gaps for _, gaps in lexed)
    if change == "":
        assert merged or any("missing space" in g.message for _, gaps in lexed for g in gaps)
