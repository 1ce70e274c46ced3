"""Slots: the only part of an answer template that is ever filled, and the filling.

A slot is accepted only as a plain ``{name}``: attribute access, indexing,
conversions, format specs and positional fields are what make ``str.format`` on
model text dangerous, so they are findings, never evaluated. Substitution walks
the pieces found here; ``str.format`` is never called on model text.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import regex

from guard.errors import PayloadError, Problem
from guard.findings import Finding

NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A slot name or claim key: ASCII only, so confusable letters cannot make two names look alike."""


@dataclass(frozen=True)
class Slot:
    """A plain ``{name}`` at ``template[start:end]``."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Piece:
    """A run of literal text (braces unescaped) or a slot, in template order."""

    text: str
    slot: Slot | None = None


def _bad_slot(body: str) -> tuple[str, str]:
    if body == "" or body.isdigit():
        return "F105", "positional fields are not allowed; name the slot, e.g. {order_id}"
    for ch, code, what in (
        ("!", "F104", "conversions (!r, !s, !a) are not allowed"),
        (":", "F103", "format specifications are not allowed; guard formats values itself"),
        ("[", "F102", "indexing is not allowed"),
        (".", "F101", "attribute access is not allowed"),
    ):
        if ch in body:
            first = min(body.index(c) for c in "!:[." if c in body)
            if body[first] == ch:
                return code, what
    return "F109", "a slot name must be letters, digits and underscores, starting with a letter or _"


_FORMAT = regex.compile(r"\p{Cf}+")
"""Runs of Unicode format characters: bidirectional controls, zero-width spaces and joiners, BOM, tags."""


def format_characters(template: str) -> list[Finding]:
    """F110 for every run of invisible format characters (one finding per run, found in one linear scan).

    >>> [(f.code, f.location.start) for f in format_characters("Ships on \u202e{eta}")]
    [('F110', 9)]
    """
    return [
        Finding.make(
            "F110",
            f"invisible format character{'s' if m.end() - m.start() > 1 else ''} "
            f"{', '.join(f'U+{ord(c):04X}' for c in m.group()[:3])}{'...' if m.end() - m.start() > 3 else ''} "
            f"at column {m.start() + 1}; remove {'them' if m.end() - m.start() > 1 else 'it'}",
            start=m.start(),
            end=m.end(),
            data={"column": m.start() + 1},
        )
        for m in _FORMAT.finditer(template)
    ]


@lru_cache(maxsize=4096)
def _tokenize_cached(template: str) -> tuple[tuple[Piece, ...], tuple[Finding, ...]]:
    pieces, findings = _tokenize(template)
    return tuple(pieces), tuple(findings)


def _tokenize(template: str) -> tuple[list[Piece], list[Finding]]:
    pieces: list[Piece] = []
    findings: list[Finding] = []
    buf: list[str] = []
    i, n = 0, len(template)
    # the next '}' and '{' after i, searched again only once i has passed them: each character is
    # scanned a bounded number of times, so a run of unclosed braces costs linear, not quadratic, work
    close = reopen = 0
    while i < n:
        ch = template[i]
        if ch == "{":
            if template.startswith("{{", i):
                buf.append("{")
                i += 2
                continue
            if close != -1 and close <= i:
                close = template.find("}", i + 1)
            if reopen != -1 and reopen <= i:
                reopen = template.find("{", i + 1)
            if close == -1 or (reopen != -1 and reopen < close):
                findings.append(
                    Finding.make(
                        "F106",
                        f"'{{' at column {i + 1} is never closed; write '{{{{' for a literal brace",
                        start=i,
                        end=i + 1,
                        data={"column": i + 1},
                    )
                )
                i += 1
                continue
            body = template[i + 1 : close]
            if NAME.fullmatch(body):
                if buf:
                    pieces.append(Piece("".join(buf)))
                    buf = []
                slot = Slot(body, i, close + 1)
                pieces.append(Piece(template[i : close + 1], slot))
            else:
                code, why = _bad_slot(body)
                shown = body if len(body) <= 40 else body[:37] + "..."
                findings.append(
                    Finding.make(
                        code,
                        f"slot {{{shown}}} at column {i + 1}: {why}",
                        start=i,
                        end=close + 1,
                        data={"column": i + 1, "slot": shown},
                    )
                )
            i = close + 1
        elif ch == "}":
            if template.startswith("}}", i):
                buf.append("}")
                i += 2
                continue
            findings.append(
                Finding.make(
                    "F106",
                    f"'}}' at column {i + 1} has no opening brace; write '}}}}' for a literal brace",
                    start=i,
                    end=i + 1,
                    data={"column": i + 1},
                )
            )
            i += 1
        else:
            buf.append(ch)
            i += 1
    if buf:
        pieces.append(Piece("".join(buf)))
    return pieces, findings


def scan_template(template: str) -> tuple[list[Slot], list[Finding]]:
    """Plain slots of ``template`` and a format finding for every unsafe one.

    >>> slots, findings = scan_template("Shipped {a} on {b.__class__}")
    >>> [s.name for s in slots], [f.code for f in findings]
    (['a'], ['F101'])
    """
    pieces, findings = _tokenize_cached(template)
    return [p.slot for p in pieces if p.slot is not None], list(findings)


def unclaimed_slots(slots: Sequence[Slot], keys: Container[str]) -> list[Finding]:
    """F107 for every slot that no claim key names.

    The one place F107 is built: :func:`guard.payload.load_payload` refuses a
    payload with it, and the linter reports it for a payload it cannot load.
    """
    return [
        Finding.make(
            "F107", f"slot {{{s.name}}} at column {s.start + 1} has no claim with that key", start=s.start, end=s.end
        )
        for s in slots
        if s.name not in keys
    ]


def template_pieces(template: str) -> list[Piece]:
    """Literal runs and slots in order; raises PayloadError if any slot is unsafe."""
    pieces, findings = _tokenize_cached(template)
    if findings:
        raise PayloadError(
            "the answer template has unsafe slots",
            problems=[Problem.from_finding(f) for f in findings],
        )
    return list(pieces)


def substitute(template: str, values: Mapping[str, str]) -> str:
    """Replace every slot by ``values[name]``; literal text is kept, ``{{``/``}}`` unescaped."""
    literals, names, starts = _layout(template)
    try:
        filled = list(map(values.__getitem__, names))
    except KeyError:
        missing = next(i for i, n in enumerate(names) if n not in values)
        raise PayloadError(
            f"slot {{{names[missing]}}} at column {starts[missing] + 1} has no claim with that key",
            location=f"answer_template:{starts[missing] + 1}",
        ) from None
    return _join(literals, filled)


def substitute_in_order(template: str, keys: Sequence[str], texts: Sequence[str]) -> str:
    """:func:`substitute` of ``dict(zip(keys, texts))``; when the slots are ``keys`` in order, no mapping is built."""
    literals, names, _ = _layout(template)
    if names == tuple(keys):
        return _join(literals, texts)
    return substitute(template, dict(zip(keys, texts)))


def _join(literals: tuple[str, ...], filled: Sequence[str]) -> str:
    out = [*literals, *filled]
    out[::2] = literals
    out[1::2] = filled
    return "".join(out)


@lru_cache(maxsize=4096)
def _layout(template: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]:
    """The template as literal runs around its slots: ``literals[0] slot0 literals[1] slot1 ...``."""
    literals, names, starts, run = [], [], [], []
    for piece in template_pieces(template):
        if piece.slot is None:
            run.append(piece.text)
        else:
            literals.append("".join(run))
            run = []
            names.append(piece.slot.name)
            starts.append(piece.slot.start)
    literals.append("".join(run))
    return tuple(literals), tuple(names), tuple(starts)


__all__ = [
    "NAME",
    "Slot",
    "Piece",
    "scan_template",
    "format_characters",
    "template_pieces",
    "substitute",
    "substitute_in_order",
]
