"""Export a domain's approved shapes for constrained decoding: a regular expression or llguidance Lark.

Both exports accept whole answer templates: sentences joined by one space (or
line breaks), a comma-ended line (a greeting) followed by a line break, and
slots written as ``{name}``. By default any slot name is allowed where a slot
goes, since a slot's type comes from its claim; pass ``slot_names`` (type to
names) to pin the names each type may use.

The Lark output stays inside the subset llguidance accepts: no ``%import``,
no terminal priorities, no lookaround in regular expressions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import regex

from guard.errors import GrammarError
from guard.shapes.library import SLOT_TERMINALS, SLOT_TYPES, Grammar, Shape
from guard.shapes.shapes import Tok, factor, mark, render

ANY_SLOT = r"\{[A-Za-z_][A-Za-z0-9_]*\}"
FORMATS = ("lark", "regex")
_META = frozenset(".^$*+?{}[]\\|()")


def slot_patterns(slot_names: Mapping[str, Sequence[str]] | None = None) -> dict[str, str]:
    """The regular expression each slot type stands for in an export."""
    out: dict[str, str] = {}
    slot_names = dict(slot_names or {})
    for t in slot_names:
        if t not in SLOT_TYPES:
            raise GrammarError(f"unknown slot type {t!r}; use one of {', '.join(SLOT_TYPES)}")
    for t in SLOT_TYPES:
        names = sorted(set(slot_names.get(t, ())))
        if names:
            out[t] = r"\{(?:" + "|".join(regex.escape(n) for n in names) + r")\}"
        elif not slot_names:
            out[t] = ANY_SLOT
    return out


def _usable(grammar: Grammar, slots: Mapping[str, str]) -> list[Shape]:
    """Shapes restricted to the variants whose slot types have names to write."""
    out = []
    for sh in grammar.shapes.values():
        vs = tuple(v for v in sh.variants if all(s[0] != "slot" or s[1] in slots for s in v))
        if vs:
            out.append(Shape(sh.name, vs))
    if not out:
        raise GrammarError(f"no shape of domain {grammar.domain!r} can be written with the given slot names")
    return out


def _split(shapes: list[Shape]) -> tuple[list[Shape], list[Shape]]:
    return [s for s in shapes if s.ending == "stop"], [s for s in shapes if s.ending == "comma"]


def _re_escape(text: str) -> str:
    """Escape only regex metacharacters, so the pattern reads plainly in any engine."""
    return "".join("\\" + c if c in _META else c for c in text)


def _lead(t: Tok) -> str:
    return "" if t.first or t.sym[0] == "punct" else " "


def sentence_regex(shapes: Sequence[Shape], slots: Mapping[str, str]) -> str:
    """One alternation over every variant of ``shapes``, factored so shared beginnings are shared."""
    tree = factor([m for s in shapes for m in mark(s.variants, first=True)])

    def tok(t: Tok) -> str:
        lead = _lead(t)
        if t.sym[0] == "slot":
            return lead + slots[t.sym[1]]
        return _re_escape(lead + t.sym[1])

    return render(tree, tok, lambda xs: "(?:" + "|".join(xs) + ")", lambda x: "(?:" + x + ")?", "".join)


def to_regex(grammar: Grammar, slot_names: Mapping[str, Sequence[str]] | None = None) -> str:
    """A regular expression (no lookaround, so RE2-style engines take it too) for whole answers.

    Use with ``fullmatch``; it encodes the same spacing and sentence-joining
    rules as :func:`guard.shapes.validate`.
    """
    slots = slot_patterns(slot_names)
    stop, comma = _split(_usable(grammar, slots))
    if not stop:
        return f"(?:{sentence_regex(comma, slots)}\\n+)*{sentence_regex(comma, slots)}"
    s = sentence_regex(stop, slots)
    if not comma:
        return f"(?:{s})(?:(?: |\\n+)(?:{s}))*"
    c = sentence_regex(comma, slots)
    return f"(?:(?:{s})(?: |\\n+)|(?:{c})\\n+)*(?:{s}|{c})"


def _lark_str(text: str) -> str:
    return json.dumps(text)


def to_lark(grammar: Grammar, slot_names: Mapping[str, Sequence[str]] | None = None) -> str:
    """A self-contained Lark grammar in the llguidance subset (one rule per shape, core inlined).

    Every word is its own lexeme carrying its leading space (``" order"``) and
    a slot terminal carries its space too (``SLOT_SP``), so no lexeme is a
    prefix of another that could follow at the same point: a greedy lexer such
    as llguidance's cannot split the text the wrong way.
    """
    slots = slot_patterns(slot_names)
    shapes = _usable(grammar, slots)
    used = sorted({sym[1] for sh in shapes for v in sh.variants for sym in v if sym[0] == "slot"})
    by_pattern: dict[str, list[str]] = {}
    for t in used:
        by_pattern.setdefault(slots[t], []).append(t)
    term_of: dict[str, str] = {}
    patterns: dict[str, str] = {}
    for pattern, types in by_pattern.items():
        name = "SLOT" if len(by_pattern) == 1 else SLOT_TERMINALS[types[0]]
        for t in types:
            term_of[t] = name
        patterns[name] = pattern
    needed: set[str] = set()

    def tok(t: Tok) -> str:
        lead = _lead(t)
        if t.sym[0] == "slot":
            name = term_of[t.sym[1]] + ("_SP" if lead else "")
            needed.add(name)
            return name
        return _lark_str(lead + t.sym[1])

    lines = [
        f"// Approved sentence shapes of guard domain {grammar.domain!r}, for constrained decoding.",
        "// Generated by `guard grammars export`; llguidance Lark subset (no imports, priorities or lookaround).",
        "",
    ]
    stop, comma = _split(shapes)
    unit = (["stop_sentence SEP"] if stop else []) + (["comma_sentence NL"] if comma else [])
    last = (["stop_sentence"] if stop else []) + (["comma_sentence"] if comma else [])
    lines.append(f"start: ({' | '.join(unit)})* ({' | '.join(last)})")
    if stop:
        lines.append("stop_sentence: " + " | ".join(s.name for s in stop))
    if comma:
        lines.append("comma_sentence: " + " | ".join(s.name for s in comma))
    lines.append("")
    for sh in shapes:
        tree = factor(mark(sh.variants, first=True))
        body = render(tree, tok, lambda xs: "(" + " | ".join(xs) + ")", lambda x: "(" + x + ")?", " ".join)
        lines.append(f"{sh.name}: {body}")
    lines.append("")
    if stop:
        lines.append('SEP: " " | /\\n+/')
    if comma:
        lines.append("NL: /\\n+/")
    for name in sorted(needed):
        base = name.removesuffix("_SP")
        lines.append(f"{name}: /{' ' if name.endswith('_SP') else ''}{patterns[base]}/")
    return "\n".join(lines) + "\n"


def export(grammar: Grammar, fmt: str, slot_names: Mapping[str, Sequence[str]] | None = None) -> str:
    """DOMAIN's grammar in FORMAT (``lark`` for llguidance, ``regex``), as ``guard grammars export`` prints it."""
    if fmt == "regex":
        return to_regex(grammar, slot_names) + "\n"
    if fmt == "lark":
        return to_lark(grammar, slot_names)
    raise GrammarError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


__all__ = ["to_regex", "to_lark", "export", "slot_patterns", "sentence_regex", "ANY_SLOT", "FORMATS"]
