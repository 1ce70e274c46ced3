"""guard's own build and cache of a library's LALR table (guard/shapes/tables.py) against Lark building the same
grammar itself with ``strict=True``: the same table, the same trees, the same rejections; word groups that
would conflict are written out in place; a damaged cache is rebuilt."""

from __future__ import annotations

import shutil
from pathlib import Path

import lark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.errors import GrammarError
from guard.shapes import tables
from guard.shapes.compiler import compile_files
from guard.shapes.sentences import STARTS, _TokenListLexer, load_library

LEXICONS = Path(__file__).resolve().parents[2] / "grammars" / "lexicons"

SHOP = """
domain: shop
entities:
  order:
    nouns: [order, parcel]
    id: order.id
predicates:
  - entity: order
    field: order.shipped_at
    forms: ["(shipped | dispatched) on {date}", "(was | has been) (shipped | dispatched) on {date}"]
  - entity: order
    field: order.status
    forms: ["is {enum}"]
courtesy:
  - "(howdy | yo) partner"
  - "(howdy | hiya) partner pal"
"""
"""Two word groups that end on the same word before the same word ("howdy" then "partner"): shared as rules
they would be a reduce/reduce conflict, so the builder writes them out."""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("shop")
    for name in ("core.yaml", "compose.lark"):
        shutil.copy(LEXICONS / name, d / name)
    (d / "shop.yaml").write_text(SHOP, encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def pair(shop: Path) -> tuple[lark.Lark, lark.Lark, object]:
    lib = load_library("shop", shop)
    return lib.lark, tables.reference(lib.compiled.source, _TokenListLexer, STARTS), lib


def _canonical(parser: lark.Lark) -> list[dict[str, tuple[str, object]]]:
    """The table with states numbered in the order a walk from the start states meets them (Lark numbers them
    in an order that varies with string hashing)."""
    table = tables.states(parser)
    starts = parser.parser.parser._parse_table.start_states
    order: dict[int, int] = {}
    queue = [starts[name] for name in sorted(starts)]
    while queue:
        s = queue.pop(0)
        if s in order:
            continue
        order[s] = len(order)
        queue += [a for _, (act, a) in sorted(table[s].items()) if act.name == "Shift"]
    assert len(order) == len(table)
    return [
        {t: ("shift", order[a]) if act.name == "Shift" else ("reduce", str(a)) for t, (act, a) in table[s].items()}
        for s in sorted(order, key=order.__getitem__)
    ]


def test_the_assembled_table_is_the_table_lark_builds_strictly(pair):
    ours, reference, _ = pair
    assert reference.options.strict is True
    assert _canonical(ours) == _canonical(reference)
    assert [str(r) for r in ours.rules] == [str(r) for r in reference.rules]
    assert sorted(t.name for t in ours.terminals) == sorted(t.name for t in reference.terminals)


def test_conflicting_word_groups_are_written_out_and_the_language_is_kept(pair):
    _, _, lib = pair
    groups = set(lib.compiled.groups.values())
    assert ("howdy", "yo") not in {tuple(s.strip('"') for s in g) for g in groups}
    assert ("hiya", "howdy") not in {tuple(s.strip('"') for s in g) for g in groups}
    for text in ("Yo partner.", "Howdy partner.", "Hiya partner pal!", "Howdy partner pal."):
        assert lib.parse(text, {}) is not None, text
    for text in ("Yo partner pal.", "Hiya partner.", "Partner pal."):
        assert lib.parse(text, {}) is None, text


def test_other_word_groups_stay_shared(pair):
    _, _, lib = pair
    assert lib.compiled.groups, "the compiler shares word groups as rules"
    assert any(name.startswith("_w") for name in lib.compiled.groups)


SENTENCES = [
    ("Your order {id} was shipped on {d}.", {"id": "identifier", "d": "date"}),
    ("The parcel has been dispatched on {d}", {"d": "date"}),
    ("Hi {name}, your order is {s}.", {"name": "string", "s": "enum"}),
    ("Thanks for your order!", {}),
    ("Yo partner.", {}),
]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_assembled_parser_and_lark_agree_on_every_token_sequence(pair, data):
    ours, reference, lib = pair
    text, types = data.draw(st.sampled_from(SENTENCES))
    toks = lib.lark_tokens(text, types)
    words = sorted(lib.vocabulary.values())
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(toks)), st.sampled_from(words)), max_size=2))
    for at, term in edits:
        toks.insert(at, lark.Token(term, lib.spelling[term]))
    cut = data.draw(st.integers(0, len(toks)))
    for seq in (toks, toks[:cut]):
        results = []
        for parser in (ours, reference):
            try:
                results.append(parser.parse(list(seq), start="start"))
            except lark.exceptions.UnexpectedInput as exc:
                results.append(type(exc).__name__)
        assert results[0] == results[1]


def test_the_cache_is_read_back_and_a_damaged_one_is_rebuilt(shop, tmp_path, monkeypatch):
    monkeypatch.setenv("GUARD_CACHE_DIR", str(tmp_path))
    files = (shop / "shop.yaml", shop / "core.yaml", shop / "compose.lark")
    path = tmp_path / f"shop-{tables.key('shop', files)}.tables"
    assert tables.read(path) is None
    compiled, parts = tables.build(
        lambda inline: compile_files("shop", *files, inline=inline),
        _TokenListLexer,
        STARTS,
        "shop.yaml",
    )
    tables.write(path, compiled, parts)
    back = tables.read(path)
    assert back is not None and back[0].digest == compiled.digest
    path.write_bytes(b"not a pickle")
    assert tables.read(path) is None
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_conflict_of_the_lexicon_itself_still_names_both_rules(shop, tmp_path):
    for name in ("core.yaml", "compose.lark"):
        shutil.copy(shop / name, tmp_path / name)
    (tmp_path / "shop.yaml").write_text(
        SHOP + 'statements:\n  - forms: ["<subject> shipped on {date:order.shipped_at}"]\n', encoding="utf-8"
    )
    with pytest.raises(GrammarError, match="not LALR"):
        load_library("shop", tmp_path)


def test_a_hint_from_the_last_build_saves_its_rounds_and_keeps_the_language(shop, tmp_path):
    files = (shop / "shop.yaml", shop / "core.yaml", shop / "compose.lark")
    rounds: list[frozenset[tuple[str, ...]]] = []

    def compile_with(inline: frozenset[tuple[str, ...]]):
        rounds.append(inline)
        return compile_files("shop", *files, inline=inline)

    cold, parts = tables.build(compile_with, _TokenListLexer, STARTS, "shop.yaml")
    assert len(rounds) >= 2, "the shop lexicon has groups that conflict"
    assert set(parts["inline"]) == set(rounds[-1])
    hint = tmp_path / "shop.hint"
    tables.write_hint(hint, parts["inline"])
    assert tables.read_hint(hint) == frozenset(parts["inline"])

    rounds.clear()
    stale = tables.read_hint(hint) | {("no", "such"), ("group", "here")}
    warm, warm_parts = tables.build(compile_with, _TokenListLexer, STARTS, "shop.yaml", stale)
    assert len(rounds) == 1
    assert warm.source == cold.source
    parsers = [tables.assemble(p, _TokenListLexer, STARTS) for p in (parts, warm_parts)]
    lib = load_library("shop", shop)
    for text, types in SENTENCES + [("Yo partner pal.", {}), ("Hiya partner.", {})]:
        toks = lib.lark_tokens(text, types)
        results = []
        for parser in parsers:
            try:
                results.append(parser.parse(list(toks), start="start"))
            except lark.exceptions.UnexpectedInput as exc:
                results.append(type(exc).__name__)
        assert results[0] == results[1], text

    hint.write_bytes(b"\x00garbage")
    assert tables.read_hint(hint) == frozenset()
    assert tables.read_hint(tmp_path / "none.hint") == frozenset()


def test_stored_rules_come_back_as_the_rules_lark_builds(pair):
    ours, reference, lib = pair
    stored = ours.rules
    assert isinstance(stored, tables.Rules) and len(stored) == len(reference.rules)
    keyed = {(r.origin, tuple(r.expansion)): r for r in reference.rules}
    for r in stored:
        ref = keyed[(r.origin, tuple(r.expansion))]
        assert (r.order, r.alias) == (ref.order, ref.alias)
        assert [s.is_term for s in r.expansion] == [s.is_term for s in ref.expansion]
        assert [getattr(s, "filter_out", None) for s in r.expansion] == [
            getattr(s, "filter_out", None) for s in ref.expansion
        ]
        assert vars(r.options) == vars(ref.options)
        assert hash(r) == hash(ref)
    assert stored[3] is stored[3]  # made once: the table's reduce entries and the callbacks share it
    assert list(tables.shapes(stored)) == list(tables.shapes(list(stored)))


def test_what_a_failed_parse_expected_is_read_from_the_stored_names_as_from_lark_rules(pair):
    ours, reference, lib = pair
    plain = type(lib)(lib.compiled, reference, lib.files)
    assert lib.firsts == plain.firsts and lib.firsts["unit"]


def test_the_cache_key_follows_the_compiler_this_process_imported(shop, monkeypatch):
    """A compiler edited on disk while a process runs must not key tables built by the code it runs: the key
    hashes the source as imported, and any change of it is a new key."""
    from guard.shapes import compiler

    files = [shop / "shop.yaml"]
    before = tables.key("shop", files)
    assert tables.key("shop", files) == before
    tables._code_digest.cache_clear()
    monkeypatch.setattr(compiler, "SOURCE_DIGEST", b"\0" * 32)
    try:
        assert tables.key("shop", files) != before
    finally:
        tables._code_digest.cache_clear()
