"""The shape validator: every sentence of a template must parse as one approved shape.

Findings say where and why: ``S201`` a sentence matches no shape (with the
unexpected word, the words that would fit there, and the nearest shapes as
readable text), ``S202`` a slot of the wrong type, ``S203`` a slot without a
known type, ``S204`` spacing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import lark
from lark import Token

from guard.findings import Finding, line_col
from guard.shapes.library import SLOT_TYPES, TERMINAL_SLOT_TYPES, Grammar, Sym
from guard.shapes.shapes import nearest_shapes
from guard.shapes.text import Sentence, Tok, lex_sentence, split_sentences

MAX_EXPECTED = 12


@dataclass(frozen=True)
class SentenceResult:
    """One sentence: its span, and the shape it matched (None if none, or if it was not checked)."""

    index: int
    start: int
    end: int
    text: str
    shape: str | None
    checked: bool = True

    @property
    def ok(self) -> bool:
        return self.shape is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "shape": self.shape,
            "checked": self.checked,
        }


@dataclass
class ShapeReport:
    sentences: list[SentenceResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def validate_template(
    template: str,
    grammar: Grammar,
    slots: Sequence[Any],
    slot_types: Mapping[str, str] | None = None,
    skip: Sequence[tuple[int, int]] = (),
) -> ShapeReport:
    """Check each sentence of ``template`` against ``grammar``.

    ``slots`` are the plain slots from :func:`guard.payload.scan_template`;
    ``skip`` are spans already reported as unsafe, whose sentences are not
    parsed (their format finding is the one to fix first).
    """
    types = dict(slot_types or {})
    spans = [(s.name, s.start, s.end) for s in slots]
    report = ShapeReport()
    for sent in split_sentences(template):
        if any(a < sent.end and sent.start < b for a, b in skip):
            report.sentences.append(SentenceResult(sent.index, sent.start, sent.end, sent.text, None, False))
            continue
        toks, gaps = lex_sentence(template, sent, spans)
        findings: list[Finding] = []
        for g in gaps:
            findings.append(
                _finding(template, "S204", f"sentence {sent.index + 1}: {g.message}", sent, g.start, g.end, {})
            )
        shape = _parse(template, grammar, sent, toks, types, findings)
        report.findings.extend(findings)
        report.sentences.append(SentenceResult(sent.index, sent.start, sent.end, sent.text, shape))
    return report


def _finding(
    template: str, code: str, message: str, sent: Sentence, start: int, end: int, data: dict[str, Any]
) -> Finding:
    line, col = line_col(template, start)
    data = {"line": line, "column": col, **data}
    return Finding.make(code, message, sentence=sent.index, start=start, end=end, data=data)


def _slot_type(tok: Tok, types: Mapping[str, str]) -> str | None:
    t = types.get(tok.slot)
    return t if t in SLOT_TYPES else None


def _parse(
    template: str, grammar: Grammar, sent: Sentence, toks: list[Tok], types: Mapping[str, str], findings: list[Finding]
) -> str | None:
    lark_toks: list[Token] = []
    for i, t in enumerate(toks):
        ttype = grammar.token_type(t.kind, t.text, _slot_type(t, types) if t.kind == "slot" else None)
        lark_toks.append(Token(ttype, t.text, start_pos=t.start, line=i, end_pos=t.end))
    inferred: dict[int, str] = {}
    try:
        return _run(template, grammar, sent, toks, lark_toks, types, findings, inferred)
    finally:
        findings.extend(_untyped_findings(template, grammar, sent, toks, types, inferred))


def _untyped_findings(
    template: str, grammar: Grammar, sent: Sentence, toks: list[Tok], types: Mapping[str, str], inferred: dict[int, str]
) -> list[Finding]:
    out = []
    for i, t in enumerate(toks):
        if t.kind != "slot" or _slot_type(t, types) is not None:
            continue
        given = types.get(t.slot)
        why = f"has unknown type {given!r} (known: {', '.join(SLOT_TYPES)})" if given is not None else "has no type"
        fix = f"; give one with --slot-type {t.slot}=TYPE, a .slots.yaml sidecar or a payload claim"
        here = f"; here the approved shapes take {{{inferred[i].upper()}}}" if i in inferred else ""
        out.append(
            _finding(
                template,
                "S203",
                f"sentence {sent.index + 1}: slot {t.text} {why}{here}{fix}",
                sent,
                t.start,
                t.end,
                {"slot": t.slot, "given": given, "inferred": inferred.get(i)},
            )
        )
    return out


def _run(
    template: str,
    grammar: Grammar,
    sent: Sentence,
    toks: list[Tok],
    lark_toks: list[Token],
    types: Mapping[str, str],
    findings: list[Finding],
    inferred: dict[int, str],
) -> str | None:
    untyped = any(t.kind == "slot" and _slot_type(t, types) is None for t in toks)
    if grammar.parser_kind != "lalr":
        try:
            tree = grammar.lark.parse(lark_toks)
        except lark.exceptions.UnexpectedInput as exc:
            expected: set[str] = set(getattr(exc, "expected", None) or ())
            findings.append(_diagnose(template, grammar, sent, toks, exc, types, lambda: expected))
            return None
        head = tree.children[0]
        return None if untyped or not isinstance(head, lark.Tree) else str(head.data)
    try:
        tree = _feed(grammar.lark.parse_interactive([]), lark_toks, 0, [], inferred)
    except _Stuck as stuck:
        fed = stuck.fed

        def accepts() -> set[str]:
            again = grammar.lark.parse_interactive([])
            for t in fed:
                again.feed_token(t)
            return set(again.accepts())

        findings.append(_diagnose(template, grammar, sent, toks, stuck.error, types, accepts))
        return None
    return None if untyped else str(tree.children[0].data)


class _Stuck(Exception):
    """A parse that failed: the Lark error and the tokens fed before it."""

    def __init__(self, error: Exception, fed: list[Token]) -> None:
        self.error, self.fed = error, fed


def _feed(ip: Any, toks: list[Token], i: int, fed: list[Token], inferred: dict[int, str]) -> Any:
    """Feed ``toks[i:]``; an untyped slot tries each slot type the parser takes there, keeping one that parses."""
    while i < len(toks):
        lt = toks[i]
        if lt.type == "UNTYPED_SLOT":
            choices = sorted(c for c in ip.choices() if c in TERMINAL_SLOT_TYPES)
            first: _Stuck | None = None
            for c in choices:
                typed = Token(c, lt.value, start_pos=lt.start_pos, line=lt.line, end_pos=lt.end_pos)
                branch = ip.copy()
                try:
                    branch.feed_token(typed)
                    tree = _feed(branch, toks, i + 1, fed + [typed], inferred)
                except lark.exceptions.UnexpectedToken as exc:
                    first = first or _Stuck(exc, fed)
                    continue
                except _Stuck as stuck:
                    first = first or stuck
                    continue
                inferred[i] = TERMINAL_SLOT_TYPES[c]
                return tree
            if first is not None:
                inferred.setdefault(i, TERMINAL_SLOT_TYPES[choices[0]])
                raise first
        try:
            ip.feed_token(lt)
        except lark.exceptions.UnexpectedToken as exc:
            raise _Stuck(exc, fed) from None
        fed.append(lt)
        i += 1
    try:
        return ip.feed_eof()
    except lark.exceptions.UnexpectedToken as exc:
        raise _Stuck(exc, fed) from None


def _expected(grammar: Grammar, names: set[str]) -> list[str]:
    words = sorted(grammar.describe(n) for n in names if n != "$END" and not n.endswith("_SLOT"))
    slots = sorted(grammar.describe(n) for n in names if n.endswith("_SLOT"))
    return slots + words + (["end of sentence"] if "$END" in names else [])


def _diagnose(
    template: str,
    grammar: Grammar,
    sent: Sentence,
    toks: list[Tok],
    err: Any,
    types: Mapping[str, str],
    accepts: Callable[[], set[str]],
) -> Finding:
    tok = getattr(err, "token", None)
    at_end = tok is None or tok.type == "$END"
    idx = len(toks) if tok is None or at_end else int(tok.line)
    try:
        names = accepts()
    except lark.exceptions.LarkError:
        names = set(getattr(err, "expected", None) or ())
    expected = _expected(grammar, names)
    syms: list[Sym] = [("slot", _slot_type(t, types) or "?") if t.kind == "slot" else (t.kind, t.text) for t in toks]
    near = nearest_shapes(grammar, syms)
    shown = ", ".join(expected[:MAX_EXPECTED]) + (", ..." if len(expected) > MAX_EXPECTED else "")
    data: dict[str, Any] = {
        "expected": expected,
        "nearest": [n.to_dict() for n in near],
        "shape_prefix": _prefix(toks, idx),
    }
    if at_end:
        start = end = sent.end
        data["unexpected"] = None
        msg = f"sentence {sent.index + 1} ends too early after '{_prefix(toks, idx)}'; expected {shown}"
        return _finding(template, "S201", msg, sent, max(sent.end - 1, sent.start), end, data)
    t = toks[idx]
    start, end = t.start, t.end
    data["unexpected"] = t.text
    slot_expected = [e for e in expected if e.startswith("{")]
    have = _slot_type(t, types) if t.kind == "slot" else None
    if have is not None and slot_expected:
        data["slot"], data["slot_type"] = t.slot, have
        msg = (
            f"sentence {sent.index + 1}: slot {t.text} is {have.upper()}, but here the approved shapes take "
            f"{' or '.join(slot_expected)}"
        )
        return _finding(template, "S202", msg, sent, start, end, data)
    where = f"after '{_prefix(toks, idx)}'" if idx else "at the start"
    what = f"slot {t.text}" if t.kind == "slot" else f"'{t.text}'"
    hint = " (amounts, dates and numbers must be slots)" if t.kind == "other" or t.text[:1].isdigit() else ""
    msg = f"sentence {sent.index + 1} matches no approved shape: unexpected {what}{hint} {where}; expected {shown}"
    return _finding(template, "S201", msg, sent, start, end, data)


def _prefix(toks: list[Tok], idx: int, width: int = 4) -> str:
    part = toks[max(0, idx - width) : idx]
    out = ""
    for i, t in enumerate(part):
        if i and t.kind != "punct":
            out += " "
        out += t.text
    return ("... " if idx > width else "") + out


__all__ = ["SentenceResult", "ShapeReport", "validate_template", "line_col"]
