"""The exports for constrained decoding, in the real engine: llguidance reads the Lark export and accepts and
rejects the same templates as the grammar lint parses with; the regex export exists only for small languages."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard.errors import GrammarError
from guard.shapes import check_template, load_domain, to_lark, to_regex
from guard.shapes.coverage import read_records, slot_types
from guard.shapes.export import compact, sentence_count

llg = pytest.importorskip("llguidance")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "templates"
GRAMMAR_CODES = {"S201", "S202", "S203"}
"""What the grammar itself decides; fields, agreement and witnesses are checked by lint after decoding."""


class ByteTokenizer:
    """A tokenizer whose tokens are the 256 bytes (plus end of text), to drive llguidance without a model."""

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = 256
        self.bos_token_id = None
        self.special_token_ids = [256]

    def __call__(self, text: bytes) -> list[int]:
        return list(text)


@functools.lru_cache(maxsize=1)
def _tokenizer():
    return llg.LLTokenizer(llg.TokenizerWrapper(ByteTokenizer()))


def _accepts(grammar: str, text: str) -> bool:
    """Whether llguidance, with its default limits, reads ``text`` to the end of the grammar."""
    m = llg.LLMatcher(_tokenizer(), grammar, log_level=0)
    return m.consume_tokens(list(text.encode("utf-8"))) and m.is_accepting()


def _names(types: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, t in types.items():
        out.setdefault(t, []).append(name)
    return out


def test_the_lark_export_is_a_valid_llguidance_grammar_without_imports_templates_or_priorities():
    lib = load_domain("orders")
    text = to_lark(lib)
    assert "%import" not in text and "{" not in text.split("\n", 4)[-1].split("/")[0]
    assert not regex.search(r"^\s*\w+\.\d+\s*:", text, flags=regex.M)
    grammar = llg.LLMatcher.grammar_from_lark(text)
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar, _tokenizer())
    assert not is_error and messages == []


def _sample(domain: str, n: int) -> list[dict]:
    rows = list(read_records([CORPUS / f"{domain}.jsonl"], ("train", "dev", "test")))
    rows += [r for r in read_records([CORPUS / "challenge_unverified.jsonl"], ("train", "dev", "test"))]
    rows = [r for r in rows if r["domain"] == domain]
    return rows[:: max(1, len(rows) // n)][:n]


@pytest.mark.parametrize("row", _sample("orders", 60), ids=lambda r: r["text"][:40])
def test_llguidance_accepts_exactly_what_the_grammar_accepts(row):
    lib = load_domain("orders")
    types = slot_types(row)
    report = check_template(row["text"], lib, types)
    parses = not any(f.code in GRAMMAR_CODES for f in report.findings)
    grammar = llg.LLMatcher.grammar_from_lark(to_lark(lib, _names(types) or None))
    assert _accepts(grammar, row["text"]) == parses


def test_the_exports_read_case_apostrophes_quotes_and_line_breaks_as_lint_does():
    lib = load_domain("orders")
    grammar = llg.LLMatcher.grammar_from_lark(to_lark(lib, {"identifier": ["order_id"], "date": ["d"]}))
    for text in [
        "YOUR ORDER {order_id} HAS SHIPPED.",
        "Hi there,\nYour order\u2019s ship date is \u201c{d}\u201d.",
        "Your order {order_id} shipped on {d}. Thanks!",
    ]:
        assert check_template(text, lib, {"order_id": "identifier", "d": "date"}).ok
        assert _accepts(grammar, text), text
    for text in ["Your order {order_id} shipped on {other}.", "Your order {order_id} shipped on {d} early."]:
        assert not _accepts(grammar, text), text


def test_the_regex_export_is_refused_for_a_large_language_with_a_pointer_to_the_lark_export():
    lib = load_domain("orders")
    assert sentence_count(lib, 10**9) > 10**9
    with pytest.raises(GrammarError, match="--format lark"):
        to_regex(lib)


SMALL_CORE = """
classes: {}
courtesy: [thank you]
"""


def test_a_small_language_exports_as_a_regex_that_agrees_with_lint(lockers_dir):
    (lockers_dir / "core.yaml").write_text(SMALL_CORE)
    (lockers_dir / "compose.lark").write_text(
        'start: unit\nunit: sentence\nsentence: body [end]\nend: "." | "!"\nbody: subject predicate | courtesy\n'
        'subject: [det] noun [ref]\ndet: "your" | "the"\nref: IDENTIFIER_SLOT\n'
    )
    lib = load_domain("lockers", lockers_dir)
    pattern = to_regex(lib, {"identifier": ["id"], "date": ["d"]})
    types = {"id": "identifier", "d": "date"}
    for text in [
        "Your locker {id} was opened on {d}.",
        "The locker has been opened on {d}",
        "THANK YOU!",
        "Your locker {id} was opened on {d}. Thank you.",
        "Your locker {id} was opened today.",
        "Your locker was opened on {id}.",
        "Locker {d} was opened on {d}.",
        "Your  locker {id} was opened on {d}.",
    ]:
        assert bool(regex.fullmatch(pattern, text)) == check_template(text, lib, types).ok, text
    json.dumps(pattern)


@pytest.mark.parametrize(
    ("domain", "text", "ok"),
    [
        ("account", "The email address on your account is {email}.", True),
        ("account", "The email address ON  YOUR account is {email}.", True),
        ("account", "The email address on your account is {email}, as always.", False),
        ("orders", "We received your return {return_id} on {received_on}.", True),
        ("orders", "Your order on your account shipped on {received_on}.", True),
    ],
)
def test_a_fused_pair_is_two_words_to_llguidance(domain, text, ok):
    """The lexicon's fused tokens ("on+your") exist for LALR's one word of lookahead; the export writes them as
    the two words they are, so "on {date}" stays open where "on your" could also start."""
    lib = load_domain(domain)
    types = {"email": "string", "return_id": "identifier", "received_on": "date"}
    assert check_template(text, lib, types).ok is ok
    grammar = llg.LLMatcher.grammar_from_lark(to_lark(lib, _names(types)))
    assert _accepts(grammar, text) is ok


# -- compaction keeps the language -----------------------------------------------------------------------------
_WORDS = ("/a/i", "/b/i", "/c/i", '","')
_ALPHABET = ("a", "b", "c", ",")


def _bodies(rule_names: list[str]):
    atom = st.sampled_from(list(_WORDS) + rule_names)

    def extend(inner):
        seq = st.lists(inner, min_size=1, max_size=3).map(" ".join)
        alts = st.lists(seq, min_size=1, max_size=3).map(" | ".join)
        return st.one_of(alts.map(lambda a: f"({a})"), alts.map(lambda a: f"[{a}]"))

    item = st.recursive(atom, extend, max_leaves=6)
    seq = st.lists(item, min_size=1, max_size=3).map(" ".join)
    return st.lists(seq, min_size=1, max_size=4).map(" | ".join)


@st.composite
def _grammars(draw):
    """A few rules over three words and a comma; a rule refers only to rules after it, so nothing recurses."""
    names = ["start", "r1", "r2", "r3"]
    return {name: draw(_bodies(names[i + 1 :])) for i, name in enumerate(names)}


def _language(rules: dict[str, str], max_len: int = 6) -> set[tuple[str, ...]]:
    """Every token sequence of up to ``max_len`` tokens the rules accept, enumerated (the rules do not recurse): a
    reference that reads the Lark subset on its own, a terminal pattern standing for each word it matches."""
    tokens = regex.compile(r'\s*(/(?:[^/\\]|\\.)+/i|"[^"]*"|\w+|[()\[\]|])')

    def lang(name: str) -> set[tuple[str, ...]]:
        toks, pos = tokens.findall(rules[name]), 0

        def alts() -> set[tuple[str, ...]]:
            nonlocal pos
            out = seq()
            while pos < len(toks) and toks[pos] == "|":
                pos += 1
                out |= seq()
            return out

        def seq() -> set[tuple[str, ...]]:
            nonlocal pos
            out: set[tuple[str, ...]] = {()}
            while pos < len(toks) and toks[pos] not in ("|", ")", "]"):
                tok = toks[pos]
                pos += 1
                if tok in ("(", "["):
                    part = alts()
                    pos += 1
                    part = part | {()} if tok == "[" else part
                elif tok.startswith("/"):
                    part = {(w,) for w in _ALPHABET if regex.fullmatch(tok[1:-2], w, flags=regex.I)}
                elif tok.startswith('"'):
                    part = {(tok[1:-1],)}
                else:
                    part = lang(tok)
                out = {a + b for a in out for b in part if len(a) + len(b) <= max_len}
            return out

        return alts()

    return lang("start")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammars())
def test_compaction_keeps_the_language(rules):
    """The compacted rules (inlined, left-factored, words merged) accept exactly the token sequences the rules do."""
    compacted = compact(rules, keep=("start",))
    assert set(compacted) <= set(rules) and "start" in compacted
    assert _language(compacted) == _language(rules)


def test_compaction_merges_words_and_factors_shared_beginnings():
    out = compact({"start": "x | y", "x": "/has/i /shipped/i | /has/i /been/i /sent/i", "y": "/ok/i | /fine/i"})
    assert out == {"start": "/has/i (/shipped/i | /been/i /sent/i) | /(?:ok|fine)/i"}


def test_the_orders_export_stays_under_llguidances_default_row_limit():
    lib = load_domain("orders")
    grammar = llg.LLMatcher.grammar_from_lark(to_lark(lib))
    for text in ["Here are the details: Your order {order_id} has shipped.", "Hi {name},", "Order total: {total}"]:
        assert _accepts(grammar, text), text
