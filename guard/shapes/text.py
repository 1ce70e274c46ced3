"""Where one unit of a template ends and the next begins: the sentence split every lint stage shares, so a
finding's sentence number means the same whatever stage reports it."""

from __future__ import annotations

from dataclasses import dataclass

import regex

ABBREVIATIONS = ("no", "nr", "est", "ref", "approx", "incl", "excl", "qty", "tel", "dept", "mr", "mrs", "ms", "dr")
"""Words written with a full stop that does not end the sentence ("Order no. {id}", "Est. delivery {eta}")."""
_BOUNDARY = regex.compile(r"[ \t]*\n\s*|(?<=[.!?])(?<!\b(?i:" + "|".join(ABBREVIATIONS) + r")\.)[ \t]+(?=\S)")
EMOJI = r"\p{Extended_Pictographic}\uFE0F\u200D"
"""The characters of an emoji, for a character class: they say nothing a checker could verify or a reader could
take as a fact, so every lint stage reads them as blanks."""
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
    """Sentences and lines: a break after . ! ? and spaces (not after an abbreviation such as "no."), and at
    every line break. Leading and trailing whitespace of the template is ignored."""
    begin = len(template) - len(template.lstrip())
    stop = len(template.rstrip())
    if begin >= stop:
        return []
    out: list[Sentence] = []
    pos = begin
    for m in _BOUNDARY.finditer(template, begin, stop):
        if m.start() > pos and not _BLANK.fullmatch(template, pos, m.start()):
            out.append(Sentence(len(out), pos, m.start(), template[pos : m.start()]))
        pos = m.end()
    if stop > pos and not _BLANK.fullmatch(template, pos, stop):
        out.append(Sentence(len(out), pos, stop, template[pos:stop]))
    return out


__all__ = ["Sentence", "split_sentences", "ABBREVIATIONS"]
