"""Text normalisation before classification, with a map back to the original offsets.

A model reads words, so text that *looks* like a word must read as one: "lаter thаn" with a
Cyrillic "а", "ｃｈｅａｐｅｒ" in full-width letters, "ﬁve" with a ligature or "fas\u200bter" with
a zero-width space are the words a reader sees. :func:`normalize` folds each character (NFKD,
combining marks dropped, NFKC, then Unicode's confusable letters mapped to the Latin letter
they imitate when the text holds Latin letters at all), drops default-ignorable format
characters, keeps at most :data:`MAX_PUNCT` characters of a run of punctuation and symbols,
and breaks every run of more than :data:`MAX_RUN` non-space characters with a space, because
spaCy's tokenizer is quadratic in the length of one whitespace-free chunk (8,000 characters of
".," took 97 s) and linear in the number of bounded chunks. A long run of punctuation says
nothing a short one does not, and would otherwise add thousands of tokens whose small weights
sum to drown the words around them.

The result keeps, per character, the span of the original text it came from, so evidence
spans found on the normalised text are reported on the text the caller gave.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

#: Longest run of non-space characters handed to the tokenizer in one piece.
MAX_RUN = 64
#: Longest run of punctuation and symbol characters kept; the rest of the run is dropped.
MAX_PUNCT = 8

_LONG_RUN = re.compile(rf"(?<!\S)\S{{{MAX_RUN + 1}}}")
_PUNCT_RUN = re.compile(rf"[^\w\s]{{{MAX_PUNCT + 1}}}")
#: The same as _PUNCT_RUN for ASCII text (its Unicode classes cost ten times as much per character).
_ASCII_PUNCT_RUN = re.compile(rf"[!-/:-@\[-`{{-~]{{{MAX_PUNCT + 1}}}")
_LATIN = re.compile(r"[A-Za-z]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


class Normalized(NamedTuple):
    """A normalised text and where each of its characters came from.

    ``starts[i]:ends[i]`` is the span of the original text that character ``i`` stands for;
    both are None when the text is unchanged (every offset maps to itself).
    """

    text: str
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the normalised characters ``start:end`` (``end > start``)."""
        if self.starts is None or self.ends is None:
            return start, end
        return self.starts[start], self.ends[end - 1]


@lru_cache(maxsize=1)
def confusable_table() -> dict[str, str]:
    """Non-ASCII character -> the ASCII letter it imitates, from Unicode's confusables data.

    Built once from the ``confusable_homoglyphs`` package's copy of confusables.txt. Where a
    character imitates several letters ("І" looks like "I" and "l"), a letter of the same case
    wins, then the alphabetically first. The reference of :func:`confusable_letter`, which
    prediction asks instead.
    """
    from confusable_homoglyphs.confusables import confusables_data

    table: dict[str, str] = {}
    for char, glyphs in confusables_data.items():
        if len(char) != 1 or char.isascii():
            continue
        folded = unicodedata.normalize("NFKC", char)
        if folded.isascii():
            continue  # NFKC already reads it (full-width and mathematical letters)
        targets = sorted(g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalpha())
        if not targets:
            continue
        same_case = [t for t in targets if t.islower() == char.islower()]
        table[char] = (same_case or targets)[0]
    return table


@lru_cache(maxsize=8192)
def confusable_letter(char: str) -> str:
    """``confusable_table().get(char, char)``, worked out for this character alone: building the whole
    table took 19 ms, and a text with a few non-ASCII letters needs a handful of its 9,600 entries."""
    if len(char) != 1 or char.isascii():
        return char
    from confusable_homoglyphs.confusables import confusables_data

    glyphs = confusables_data.get(char)
    if not glyphs or unicodedata.normalize("NFKC", char).isascii():
        return char  # NFKC already reads it (full-width and mathematical letters)
    targets = sorted(g["c"] for g in glyphs if len(g["c"]) == 1 and g["c"].isascii() and g["c"].isalpha())
    if not targets:
        return char
    same_case = [t for t in targets if t.islower() == char.islower()]
    return (same_case or targets)[0]


@lru_cache(maxsize=8192)
def _fold(char: str, latin: bool) -> str:
    """What one non-ASCII character reads as: possibly nothing or several characters."""
    if unicodedata.category(char) == "Cf":
        return ""
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if unicodedata.category(c) != "Mn")
    out = unicodedata.normalize("NFKC", base)
    # a non-ASCII brace never becomes a slot: slots are written with ASCII braces only
    out = out.replace("{", "(").replace("}", ")")
    if latin:
        out = "".join(map(confusable_letter, out))
    return out


def normalize(text: str) -> Normalized:
    """Fold confusable characters and break overlong runs; see the module docstring."""
    if text.isascii():
        if _ASCII_PUNCT_RUN.search(text) or (len(text) > MAX_RUN and _LONG_RUN.search(text)):
            return _rebuild(text, True)
        return Normalized(text)
    latin = bool(_LATIN.search(text))
    if any(_fold(c, latin) != c for c in set(_NON_ASCII.findall(text))):
        return _rebuild(text, latin)
    if _PUNCT_RUN.search(text) or _LONG_RUN.search(text):
        return _rebuild(text, latin)
    return Normalized(text)


def _rebuild(text: str, latin: bool) -> Normalized:
    """The normalised text, character by character, with the map back to the original."""
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    run = punct = 0
    for i, char in enumerate(text):
        folded = char if char.isascii() else _fold(char, latin)
        for c in folded:
            if c.isalnum() or c.isspace() or c == "_":
                punct = 0
            else:
                punct += 1
                if punct > MAX_PUNCT:
                    continue
            if c.isspace():
                run = 0
            else:
                if run == MAX_RUN:
                    pieces.append(" ")
                    starts.append(i)
                    ends.append(i)
                    run = 0
                run += 1
            pieces.append(c)
            starts.append(i)
            ends.append(i + 1)
    out = "".join(pieces)
    if out == text:
        return Normalized(text)
    return Normalized(out, tuple(starts), tuple(ends))
