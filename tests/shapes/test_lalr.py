"""guard's indexed LALR analysis (guard/shapes/lalr.py) against two references: canonical LR(1) states merged by
kernel (the definition of LALR(1) lookaheads), on hypothesis-made grammars with empty, nullable, recursive and
conflicting rules; and Lark's own ``LALR_Analyzer``: the same states, never more lookaheads, and on a shipped
domain the same conflicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lark.common import ParserConf
from lark.grammar import NonTerminal, Rule, Terminal
from lark.load_grammar import load_grammar
from lark.parsers.lalr_analysis import LALR_Analyzer

from guard.shapes.compiler import compile_files
from guard.shapes.conflicts import analyse
from guard.shapes.lalr import Analyzer
from guard.shapes.sentences import STARTS

LEXICONS = Path(__file__).resolve().parents[2] / "grammars" / "lexicons"
NONTERMINALS = ["s", "a", "b", "c"]
TERMINALS = ["X", "Y", "Z"]


def _kernel(itemset: Any) -> frozenset[tuple[str, int]]:
    return frozenset((str(rp.rule), rp.index) for rp in itemset.kernel)


def _picture(analysis: Any) -> dict[str, Any]:
    """Everything the table is made from, with states named by their kernels (objects differ between runs)."""
    states = {}
    for itemset in analysis.lr0_itemsets:
        states[_kernel(itemset)] = (
            frozenset((str(rp.rule), rp.index) for rp in itemset.closure),
            {sym.name: _kernel(target) for sym, target in itemset.transitions.items()},
            {sym.name: frozenset(map(str, rules)) for sym, rules in itemset.lookaheads.items() if rules},
        )
    return {
        "states": states,
        "nullable": frozenset(n.name for n in analysis.NULLABLE if not n.name.startswith("$root")),
        "includes": {
            (_kernel(s), sym.name): frozenset((_kernel(s2), sym2.name) for s2, sym2 in rel)
            for (s, sym), rel in analysis.includes.items()
            if rel
        },
        "lookback": {
            (_kernel(s), sym.name): frozenset((_kernel(s2), str(r)) for s2, r in rel)
            for (s, sym), rel in analysis.lookback.items()
            if rel
        },
    }


def _first_sets(rules: list[Rule]) -> tuple[set[str], dict[str, set[str]]]:
    nullable: set[str] = set()
    first: dict[str, set[str]] = {r.origin.name: set() for r in rules}
    changed = True
    while changed:
        changed = False
        for r in rules:
            before = (len(nullable), len(first[r.origin.name]))
            for sym in r.expansion:
                first[r.origin.name] |= {sym.name} if sym.is_term else first[sym.name]
                if sym.is_term or sym.name not in nullable:
                    break
            else:
                nullable.add(r.origin.name)
            changed |= before != (len(nullable), len(first[r.origin.name]))
    return nullable, first


def canonical_lalr(rules: list[Rule], start: str) -> dict[frozenset[tuple[str, int]], dict[str, frozenset[str]]]:
    """The reference: canonical LR(1) states (Knuth), merged by their LR(0) kernels; for each kernel, the rules
    reduced on each lookahead. Exponential in general, instant on the small grammars used here."""
    root = Rule(NonTerminal("$root_" + start), [NonTerminal(start)])
    by_origin: dict[str, list[Rule]] = {}
    for r in rules:
        by_origin.setdefault(r.origin.name, []).append(r)
    nullable, first = _first_sets(rules)

    def first_of(symbols: list[Any], follow: str) -> set[str]:
        out: set[str] = set()
        for sym in symbols:
            if sym.is_term:
                return out | {sym.name}
            out |= first[sym.name]
            if sym.name not in nullable:
                return out
        return out | {follow}

    def closure(items: frozenset[tuple[Rule, int, str]]) -> frozenset[tuple[Rule, int, str]]:
        done, todo = set(items), list(items)
        while todo:
            rule, dot, la = todo.pop()
            if dot < len(rule.expansion) and not rule.expansion[dot].is_term:
                for b in first_of(list(rule.expansion[dot + 1 :]), la):
                    for r in by_origin[rule.expansion[dot].name]:
                        if (r, 0, b) not in done:
                            done.add((r, 0, b))
                            todo.append((r, 0, b))
        return frozenset(done)

    merged: dict[frozenset[tuple[str, int]], dict[str, set[str]]] = {}
    seen: set[frozenset[tuple[Rule, int, str]]] = set()
    todo = [frozenset({(root, 0, "$END")})]
    while todo:
        kernel = todo.pop()
        if kernel in seen:
            continue
        seen.add(kernel)
        core = frozenset((str(r), d) for r, d, _ in kernel)
        reduces = merged.setdefault(core, {})
        items = closure(kernel)
        by_next: dict[str, set[tuple[Rule, int, str]]] = {}
        for rule, dot, la in items:
            if dot == len(rule.expansion):
                if rule is not root:
                    reduces.setdefault(la, set()).add(str(rule))
            else:
                by_next.setdefault(rule.expansion[dot].name, set()).add((rule, dot + 1, la))
        todo += [frozenset(k) for k in by_next.values()]
    return {core: {la: frozenset(rs) for la, rs in reduces.items()} for core, reduces in merged.items()}


def _productive(rules: list[Rule]) -> bool:
    """Whether every nonterminal derives some string of terminals (canonical LR(1) drops items whose lookahead set
    is empty, which only an unproductive nonterminal gives, so the two automata differ there)."""
    done: set[str] = set()
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.origin.name not in done and all(x.is_term or x.name in done for x in r.expansion):
                done.add(r.origin.name)
                changed = True
    return done == {r.origin.name for r in rules}


def _analysed(cls: type, rules: list[Rule], start: str) -> Any:
    analysis = cls(ParserConf(rules, {}, [start]), debug=False, strict=False)
    analyse(analysis)
    return analysis


symbols = st.sampled_from([*(NonTerminal(n) for n in NONTERMINALS), *(Terminal(t) for t in TERMINALS)])
expansions = st.lists(symbols, max_size=4).map(tuple)
grammars = st.fixed_dictionaries({n: st.lists(expansions, min_size=1, max_size=3, unique=True) for n in NONTERMINALS})


@settings(max_examples=400, deadline=None)
@given(grammars)
def test_the_lookaheads_are_those_of_merged_canonical_lr1_states(grammar):
    """On any small grammar (empty, nullable, left- and right-recursive, conflicting rules), including those where
    Lark's own lookaheads vary with hash order."""
    rules = [Rule(NonTerminal(n), list(exp), order=i) for n, exps in grammar.items() for i, exp in enumerate(exps)]
    assume(_productive(rules))
    expected = canonical_lalr(rules, "s")
    ours = _analysed(Analyzer, rules, "s")
    got = {
        _kernel(i): {sym.name: frozenset(map(str, rs)) for sym, rs in i.lookaheads.items() if rs}
        for i in ours.lr0_itemsets
    }
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(grammars)
def test_the_states_are_lark_s_and_the_lookaheads_never_more(grammar):
    rules = [Rule(NonTerminal(n), list(exp), order=i) for n, exps in grammar.items() for i, exp in enumerate(exps)]
    reference = _picture(_analysed(LALR_Analyzer, rules, "s"))
    ours = _picture(_analysed(Analyzer, rules, "s"))
    assert ours["nullable"] == reference["nullable"]
    assert ours["lookback"] == reference["lookback"]
    for key, related in ours["includes"].items():
        assert related <= reference["includes"][key]
    assert ours["states"].keys() == reference["states"].keys()
    for kernel, (closure, moves, lookaheads) in ours["states"].items():
        ref_closure, ref_moves, ref_lookaheads = reference["states"][kernel]
        assert (closure, moves) == (ref_closure, ref_moves)
        for word, reduced in lookaheads.items():
            assert reduced <= ref_lookaheads[word]


def test_lark_s_lookaheads_vary_where_guard_s_do_not():
    """The reason guard has its own ``digraph``: a recursive grammar whose lookaheads Lark computes differently
    from run to run (the order of states follows object ids), always with more than the canonical ones."""
    n, t = NonTerminal, Terminal
    grammar = {"s": [(n("a"),), (n("b"), n("s"), n("s"), t("Z"))], "a": [(), (n("s"), n("s"))], "b": [()]}
    rules = [Rule(n(o), list(e), order=i) for o, es in grammar.items() for i, e in enumerate(es)]
    expected = canonical_lalr(rules, "s")

    def lookaheads(cls: type) -> dict[Any, Any]:
        a = _analysed(cls, rules, "s")
        return {
            _kernel(i): {sym.name: frozenset(map(str, rs)) for sym, rs in i.lookaheads.items() if rs}
            for i in a.lr0_itemsets
        }

    assert all(lookaheads(Analyzer) == expected for _ in range(20))
    lark_runs = [lookaheads(LALR_Analyzer) for _ in range(40)]
    for run in lark_runs:
        for kernel, las in expected.items():
            for la, rs in las.items():
                assert rs <= run[kernel].get(la, frozenset())


def test_undefined_and_twice_defined_rules_are_refused_as_lark_refuses_them():
    from lark.exceptions import GrammarError

    undefined = [Rule(NonTerminal("s"), [NonTerminal("nowhere")])]
    twice = [Rule(NonTerminal("s"), [Terminal("X")]), Rule(NonTerminal("s"), [Terminal("X")])]
    for rules in (undefined, twice):
        for cls in (LALR_Analyzer, Analyzer):
            with pytest.raises(GrammarError):
                cls(ParserConf(rules, {}, ["s"]))


@pytest.mark.slow
def test_the_indexed_analysis_is_lark_s_on_a_shipped_domain():
    """Account, the smallest shipped domain, compiled with every word group shared (so that it has conflicts)."""
    files = [LEXICONS / n for n in ("account.yaml", "core.yaml", "compose.lark")]
    compiled = compile_files("account", *files)
    grammar, _ = load_grammar(compiled.source, "<lexicon>", [], False)
    _terminals, rules, _ignore = grammar.compile(list(STARTS), set())
    pictures, found = [], []
    for cls in (LALR_Analyzer, Analyzer):
        analysis = cls(ParserConf(rules, {}, list(STARTS)), debug=False, strict=False)
        found.append(sorted(map(str, analyse(analysis))))
        pictures.append(_picture(analysis))
    (reference, ours), (reference_conflicts, our_conflicts) = pictures, found
    assert reference_conflicts, "the fully shared grammar has conflicts, so lookaheads are compared where they matter"
    assert ours["nullable"] == reference["nullable"]
    assert ours["states"] == reference["states"]
    assert ours == reference
    assert our_conflicts == reference_conflicts
