"""Sentence splitting and the word/slot/punctuation lexer for answer templates.

Spacing is part of the language, not something to ignore: inside a sentence
words and slots are separated by exactly one space and punctuation follows its
word directly; sentences are separated by one space or by line breaks. The
exported regular expressions encode the same rules, so lint and constrained
decoding accept the same texts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

WORD = regex.compile(r"[A-Za-z0-9]+(?:['\u2019\-][A-Za-z0-9]+)*")
PUNCT = frozenset(",.;:!?")
STOPS = frozenset(".!?")
_TOKEN = regex.compile(r"[A-Za-z0-9]+(?:['\u2019\-][A-Za-z0-9]+)*|[,.;:!?]")
_BOUNDARY = regex.compile(r"(?<=[.!?])(?: |\n+)(?=\S)|(?<=,)\n+(?=\S)")


@dataclass(frozen=True)
class Sentence:
    """``template[start:end]``, the ``index``-th sentence (no surrounding whitespace)."""

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Tok:
    """One lexeme: ``kind`` is ``word``, ``punct``, ``slot`` or ``other`` (a character no shape uses)."""

    kind: str
    text: str
    start: int
    end: int
    slot: str = ""


@dataclass(frozen=True)
class Gap:
    """Whitespace between two tokens that is not what the spacing rules ask for."""

    start: int
    end: int
    message: str


def split_sentences(template: str) -> list[Sentence]:
    """Split after ``.``/``!``/``?`` followed by one space or line breaks, and after ``,`` + line break.

    Leading and trailing whitespace of the template is ignored. Any other
    whitespace stays inside its sentence, where the lexer judges it.
    """
    begin = len(template) - len(template.lstrip())
    stop = len(template.rstrip())
    if begin >= stop:
        return []
    out: list[Sentence] = []
    pos = begin
    for m in _BOUNDARY.finditer(template, begin, stop):
        out.append(Sentence(len(out), pos, m.start(), template[pos : m.start()]))
        pos = m.end()
    out.append(Sentence(len(out), pos, stop, template[pos:stop]))
    return out


def lex_sentence(
    template: str, sentence: Sentence, slots: Iterable[tuple[str, int, int]]
) -> tuple[list[Tok], list[Gap]]:
    """Tokens of one sentence with template offsets, and every spacing fault between them.

    ``slots`` are ``(name, start, end)`` spans of plain slots (from
    :func:`guard.payload.scan_template`); text outside them is words,
    punctuation and, for anything else, single ``other`` characters.
    """
    spans = sorted((s for s in slots if sentence.start <= s[1] and s[2] <= sentence.end), key=lambda s: s[1])
    toks: list[Tok] = []
    i, end, k = sentence.start, sentence.end, 0
    while i < end:
        if k < len(spans) and spans[k][1] == i:
            name, s, e = spans[k]
            toks.append(Tok("slot", template[s:e], s, e, name))
            i, k = e, k + 1
            continue
        ch = template[i]
        if ch.isspace():
            i += 1
            continue
        limit = spans[k][1] if k < len(spans) else end
        m = _TOKEN.match(template, i, limit)
        if m:
            kind = "punct" if m.group() in PUNCT else "word"
            toks.append(Tok(kind, m.group(), i, m.end()))
            i = m.end()
        else:
            toks.append(Tok("other", ch, i, i + 1))
            i += 1
    return toks, _gaps(template, toks)


def _gaps(template: str, toks: Sequence[Tok]) -> list[Gap]:
    gaps: list[Gap] = []
    for prev, tok in zip(toks, toks[1:]):
        if "other" in (prev.kind, tok.kind):
            continue
        gap = template[prev.end : tok.start]
        want = "" if tok.kind == "punct" else " "
        if gap == want:
            continue
        if not gap:
            msg = f"missing space between '{prev.text}' and '{tok.text}'"
            gaps.append(Gap(prev.start, tok.end, msg))
            continue
        if "\n" in gap:
            msg = f"line break inside a sentence, before '{tok.text}'"
        elif want == "":
            msg = f"no space belongs before '{tok.text}'"
        else:
            msg = f"use exactly one space between '{prev.text}' and '{tok.text}'"
        gaps.append(Gap(prev.end, tok.start, msg))
    return gaps


def literal_tokens(text: str) -> list[str] | None:
    """Split a grammar literal like ``"shipped on"`` into the lexer's tokens; None if it has other characters."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == " ":
            i += 1
            continue
        m = _TOKEN.match(text, i)
        if not m:
            return None
        out.append(m.group())
        i = m.end()
    return out


__all__ = ["Sentence", "Tok", "Gap", "split_sentences", "lex_sentence", "literal_tokens", "WORD", "PUNCT", "STOPS"]
