"""Lark's LALR(1) analysis with two of its steps indexed, so that a domain's table builds in seconds.

Lark's ``LALR_Analyzer`` is the reference. Two of its steps are quadratic in the size of a state: building LR(0)
states expands every nonterminal again for every new kernel, and computing the includes and lookback
relations scans a state's whole closure for each of its nonterminal transitions. With grammars of 10,000 to
20,000 rules these two steps were 80% of a build, and the FIRST and FOLLOW sets Lark computes up front (which
LALR does not use) most of the rest. :class:`Analyzer` computes the same relations, with the expansions
memoised per nonterminal, the closure indexed by rule origin and only the nullable set computed up front.

It differs from Lark in two places on purpose, and gives exactly the LALR(1) lookaheads (those of canonical LR(1)
states merged by kernel, which the tests compute independently) where Lark's can be a superset:

- Includes. DeRemer and Pennello relate a transition on A to the transition on B where B's rule *starts*
  (``B -> . beta A gamma``). Lark also walks items of B that started earlier (``B -> x . beta A gamma``) from the
  current state, which relates A to an unrelated occurrence of B and adds its lookaheads.
- ``digraph``. Lark starts each node's set as the very set object of its base relation and shares one object
  among the members of a cycle, so on a recursive grammar a node's follow set can take in another's depending on
  the order states happen to be iterated in: Lark's lookaheads, and so the conflicts it reports, vary from run
  to run. :func:`digraph` copies.

Extra lookaheads only add reduce actions on words that cannot follow (and, at worst, conflicts that are not
real); the sentences parsed and rejected are the same. ``tests/shapes/test_lalr.py`` checks the lookaheads
against canonical LR(1) and everything else against Lark: the same states and transitions, nullable set and
lookback, includes and lookaheads contained in Lark's, and on a shipped domain the same conflicts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from lark.common import ParserConf
from lark.exceptions import GrammarError
from lark.grammar import NonTerminal, Rule
from lark.parsers.grammar_analysis import LR0ItemSet, RulePtr
from lark.parsers.lalr_analysis import LALR_Analyzer
from lark.utils import bfs, classify


def nullable(rules: list[Rule]) -> set[Any]:
    """The nonterminals that can derive the empty string."""
    found: set[Any] = set()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            if rule.origin not in found and all(s in found for s in rule.expansion):
                found.add(rule.origin)
                changed = True
    return found


def digraph(nodes: list[Any], relation: Mapping[Any, Any], base: Mapping[Any, Any]) -> dict[Any, set[Any]]:
    """F(x) = base(x) united with F(y) for every y that x relates to (DeRemer and Pennello, 1982): one
    depth-first walk, the members of a cycle sharing one set. Iterative, so a long chain cannot overflow the
    stack."""
    found: dict[Any, set[Any]] = {}
    depth = dict.fromkeys(nodes, 0)
    stack: list[Any] = []
    for start in nodes:
        if depth[start]:
            continue
        stack.append(start)
        depth[start] = len(stack)
        found[start] = set(base.get(start, ()))
        work = [(start, len(stack), iter(relation.get(start, ())))]
        while work:
            x, d, targets = work[-1]
            for y in targets:
                if depth[y] == 0:
                    stack.append(y)
                    depth[y] = len(stack)
                    found[y] = set(base.get(y, ()))
                    work.append((y, len(stack), iter(relation.get(y, ()))))
                    break
                if 0 < depth[y] < depth[x]:
                    depth[x] = depth[y]
                found[x] |= found[y]
            else:
                work.pop()
                if depth[x] == d:
                    done = found[x]
                    while True:
                        z = stack.pop()
                        depth[z] = -1
                        found[z] = done
                        if z == x:
                            break
                if work:
                    parent = work[-1][0]
                    if 0 < depth[x] < depth[parent]:
                        depth[parent] = depth[x]
                    found[parent] |= found[x]
    return found


class Analyzer(LALR_Analyzer):
    """``LALR_Analyzer`` with memoised rule expansion and closures indexed by origin (same results)."""

    def __init__(self, parser_conf: ParserConf, debug: bool = False, strict: bool = False) -> None:
        # GrammarAnalyzer.__init__ is not called: it also computes FIRST and FOLLOW, which LALR does not read.
        self.debug, self.strict = debug, strict
        self.nonterminal_transitions = []
        self.directly_reads = defaultdict(set)
        self.reads = defaultdict(set)
        self.includes = defaultdict(set)
        self.lookback = defaultdict(set)
        rules = list(parser_conf.rules)
        twice = [r for r, n in Counter(rules).items() if n > 1]
        if twice:
            raise GrammarError(f"Rules defined twice: {', '.join(map(str, twice))}")
        roots = {s: Rule(NonTerminal("$root_" + s), [NonTerminal(s)]) for s in parser_conf.start}
        self.lr0_rules_by_origin = classify(rules + list(roots.values()), lambda r: r.origin)
        self.rules_by_origin = self.lr0_rules_by_origin
        for r in rules:
            for sym in r.expansion:
                if not (sym.is_term or sym in self.lr0_rules_by_origin):
                    raise GrammarError(f"Using an undefined rule: {sym}")
        self.lr0_start_states = {
            s: LR0ItemSet([RulePtr(root, 0)], self.expand_rule(root.origin, self.lr0_rules_by_origin))
            for s, root in roots.items()
        }
        self.NULLABLE = nullable(rules)

    def _expansion(self, nonterminal: Any, memo: dict[Any, frozenset[RulePtr]]) -> frozenset[RulePtr]:
        found = memo.get(nonterminal)
        if found is None:
            found = memo[nonterminal] = frozenset(self.expand_rule(nonterminal, self.lr0_rules_by_origin))
        return found

    def compute_lr0_states(self) -> None:
        self.lr0_itemsets = set()
        cache: dict[frozenset[RulePtr], LR0ItemSet] = {}
        memo: dict[Any, frozenset[RulePtr]] = {}

        def step(state: LR0ItemSet) -> Any:
            by_next: dict[Any, list[RulePtr]] = {}
            for rp in state.closure:
                if not rp.is_satisfied:
                    by_next.setdefault(rp.next, []).append(rp)
            for sym, rps in by_next.items():
                kernel = frozenset(RulePtr(rp.rule, rp.index + 1) for rp in rps)
                new_state = cache.get(kernel)
                if new_state is None:
                    closure = set(kernel)
                    expanded = {rp.next for rp in kernel if not rp.is_satisfied and not rp.next.is_term}
                    for nonterminal in expanded:
                        closure |= self._expansion(nonterminal, memo)
                    new_state = LR0ItemSet(kernel, closure)
                    cache[kernel] = new_state
                state.transitions[sym] = new_state
                yield new_state
            self.lr0_itemsets.add(state)

        for _ in bfs(self.lr0_start_states.values(), step):
            pass

    def compute_lookaheads(self) -> None:
        read_sets = digraph(self.nonterminal_transitions, self.reads, self.directly_reads)
        follow_sets = digraph(self.nonterminal_transitions, self.includes, read_sets)
        for nt, lookbacks in self.lookback.items():
            for state, rule in lookbacks:
                for s in follow_sets[nt]:
                    state.lookaheads[s].add(rule)

    def compute_includes_lookback(self) -> None:
        by_origin: dict[Any, dict[Any, list[RulePtr]]] = {}
        for nt in self.nonterminal_transitions:
            state, nonterminal = nt
            index = by_origin.get(state)
            if index is None:
                index = by_origin[state] = defaultdict(list)
                for rp in state.closure:
                    index[rp.rule.origin].append(rp)
            includes = []
            lookback = self.lookback[nt]
            for rp in index.get(nonterminal, ()):
                if rp.index:
                    continue
                state2 = state
                expansion = rp.rule.expansion
                for i in range(rp.index, len(expansion)):
                    s = expansion[i]
                    nt2 = (state2, s)
                    state2 = state2.transitions[s]
                    if nt2 not in self.reads:
                        continue
                    if all(expansion[j] in self.NULLABLE for j in range(i + 1, len(expansion))):
                        includes.append(nt2)
                if rp.index == 0 and RulePtr(rp.rule, len(expansion)) in state2.closure:
                    lookback.add((state2, rp.rule))
            for nt2 in includes:
                self.includes[nt2].add(nt)


__all__ = ["Analyzer"]
