"""Where one unit of a template ends and the next begins: the sentence split every lint stage shares, so a
finding's sentence number means the same whatever stage reports it."""

from __future__ import annotations

from dataclasses import dataclass

import regex

ABBREVIATIONS = ("no", "nr", "est", "ref", "approx", "incl", "excl", "qty", "tel", "dept", "mr", "mrs", "ms", "dr")
"""Words written with a full stop that does not end the sentence ("Order no. {id}", "Est. delivery {eta}")."""
EMOJI = r"\p{Extended_Pictographic}\uFE0F\u200D"
"""The characters of an emoji, for a character class: they say nothing a checker could verify or a reader could
take as a fact, so every lint stage reads them as blanks."""
_ABBREVIATED = "|".join(ABBREVIATIONS)
_BOUNDARY = regex.compile(
    rf"[ \t]*\n\s*|(?<=[.!?])(?<!\b(?i:{_ABBREVIATED})\.)[ \t]+(?=\S)|(?<=[{EMOJI}])[ \t]+(?=\p{{Lu}})"
)
"""A break after . ! ? (not after an abbreviation), at a line break, and after an emoji before a capital letter
("Hi {name} \U0001f44b I can see ...": the emoji ends the greeting as a full stop would)."""
_BULLET = regex.compile(r"(?:[-*\u2022\u2023\u2043\u25aa\u25e6\u2013\u2014]|\#{1,6})[ \t]+")
"""A list bullet or a Markdown heading mark before a unit ("- Status: {status}", "## Your order"): formatting, not
a word of the unit."""
_BLANK = regex.compile(rf"[\s{EMOJI}]*")
"""What a unit holding nothing else is not a unit of: blanks and emoji ("Thanks! \U0001f60a" is one sentence)."""


@dataclass(frozen=True)
class Sentence:
    """``template[start:end]``, the ``index``-th unit (no surrounding whitespace)."""

    index: int
    start: int
    end: int
    text: str


def split_sentences(template: str) -> list[Sentence]:
    """Sentences and lines: a break after . ! ? and spaces (not after an abbreviation such as "no."), at every
    line break, and after an emoji before a capital letter; a list bullet before a unit is not part of it.
    Leading and trailing whitespace of the template is ignored."""
    begin = len(template) - len(template.lstrip())
    stop = len(template.rstrip())
    if begin >= stop:
        return []
    out: list[Sentence] = []
    pos = begin
    for m in _BOUNDARY.finditer(template, begin, stop):
        _unit(template, pos, m.start(), out)
        pos = m.end()
    _unit(template, pos, stop, out)
    return out


def _unit(template: str, start: int, end: int, out: list[Sentence]) -> None:
    bullet = _BULLET.match(template, start, end)
    if bullet is not None:
        start = bullet.end()
    if end > start and not _BLANK.fullmatch(template, start, end):
        out.append(Sentence(len(out), start, end, template[start:end]))


__all__ = ["Sentence", "split_sentences", "ABBREVIATIONS"]
