"""Explaining an LALR conflict in words an author can act on: both rules, and the word where they meet.

Lark in strict mode stops at the first conflict and names the rule it would
reduce. This replays Lark's own LALR analysis (its public building blocks, no
patching) and reports, for every conflict, the rule that could end before the
word and the rules that would go on with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark.common import ParserConf
from lark.load_grammar import load_grammar
from lark.parsers.lalr_analysis import LALR_Analyzer

from guard.shapes.lalr import Analyzer


@dataclass(frozen=True)
class Conflict:
    """Rules that the parser cannot choose between on one word."""

    kind: str
    """``shift/reduce`` or ``reduce/reduce``."""
    word: str
    ending: tuple[str, ...]
    """Rules that are complete before ``word``."""
    continuing: tuple[str, ...]
    """Rules that take ``word`` next."""
    rules: tuple[str, ...] = ()
    """The names of every rule involved (for the builder, which writes conflicting word groups out)."""

    def __str__(self) -> str:
        ends = " or ".join(self.ending)
        if self.kind == "reduce/reduce":
            return f"before {self.word}, a sentence can end {ends}"
        return f"before {self.word}, {ends} can end, or {' or '.join(self.continuing)} can go on"


def _rule(r: object) -> str:
    text = str(r)
    return text if len(text) <= 160 else text[:157] + "..."


def conflicts(source: str, start: str = "start", limit: int = 10) -> list[Conflict]:
    """Up to ``limit`` conflicts of an LALR grammar (empty when it is LALR(1))."""
    grammar, _ = load_grammar(source, "<lexicon>", [], False)
    _terminals, rules, _ignore = grammar.compile([start], set())
    return analyse(Analyzer(ParserConf(rules, {}, [start]), debug=False, strict=False), limit)


def analyse(analysis: LALR_Analyzer, limit: int | None = None) -> list[Conflict]:
    """Run Lark's LALR analysis up to the lookaheads and list its conflicts (at most ``limit``); the caller may
    go on to ``analysis.compute_lalr1_states()`` when there are none."""
    analysis.compute_lr0_states()
    analysis.compute_reads_relations()
    analysis.compute_includes_lookback()
    analysis.compute_lookaheads()
    out: list[Conflict] = []
    seen: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = set()
    for itemset in analysis.lr0_itemsets:
        for term, reducing in itemset.lookaheads.items():
            going = [i.rule for i in itemset.closure if not i.is_satisfied and i.next == term]
            if len(reducing) < 2 and not going:
                continue
            shifting = sorted({_rule(r) for r in going})
            kind = "reduce/reduce" if len(reducing) > 1 else "shift/reduce"
            ending = tuple(sorted(_rule(r) for r in reducing))
            key = (term.name, ending, tuple(shifting[:3]))
            if key in seen:
                continue
            seen.add(key)
            names = tuple(sorted({r.origin.name for r in [*reducing, *going]}))
            out.append(Conflict(kind, term.name, ending, tuple(shifting[:3]), names))
            if limit is not None and len(out) >= limit:
                return out
    return out


__all__ = ["Conflict", "conflicts", "analyse"]
