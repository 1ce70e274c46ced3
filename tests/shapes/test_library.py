"""Loading grammars: shipped and user domains, %import core, caching, and clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guard.errors import GrammarError
from guard.linting import lint
from guard.shapes import list_domains, load_grammar
from guard.shapes.library import clear_cache, rewrite_source

USER = """
%import core (greeting, sign_off)
sentence: booking_confirmed | greeting | sign_off
booking_confirmed: "Your booking" IDENTIFIER_SLOT "is confirmed for" DATE_SLOT "."
"""


def _write(d: Path, name: str, text: str) -> Path:
    p = d / f"{name}.lark"
    p.write_text(text, encoding="utf-8")
    return p


def test_user_domain_imports_core(tmp_path: Path) -> None:
    _write(tmp_path, "travel", USER)
    assert "travel" in list_domains(tmp_path) and "orders" in list_domains(tmp_path)
    g = load_grammar("travel", grammar_dir=tmp_path)
    assert set(g.shapes) == {"booking_confirmed", "greeting", "sign_off"}
    r = lint(
        "Hi {name},\nYour booking {ref} is confirmed for {day}.",
        domain="travel",
        grammar_dir=tmp_path,
        slot_types={"name": "string", "ref": "identifier", "day": "date"},
    )
    assert r.ok and r.shapes == ["greeting", "booking_confirmed"]
    r = lint(
        "Your booking {ref} is confirmed for {day}.",
        domain="travel",
        grammar_dir=str(tmp_path),
        slot_types={"ref": "identifier", "day": "money"},
    )
    assert [f.code for f in r.findings] == ["S202"]


def test_user_domain_hides_shipped_domain_of_same_name(tmp_path: Path) -> None:
    _write(tmp_path, "orders", USER)
    assert set(load_grammar("orders", grammar_dir=tmp_path).shapes) == {"booking_confirmed", "greeting", "sign_off"}
    assert "order_shipped" in load_grammar("orders").shapes


def test_compiled_once_and_rebuilt_when_the_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from guard.shapes import library

    monkeypatch.setattr(library, "RECHECK_SECONDS", 0.0)
    p = _write(tmp_path, "travel", USER)
    first = load_grammar("travel", grammar_dir=tmp_path)
    assert load_grammar("travel", grammar_dir=tmp_path) is first
    p.write_text(USER + 'booking_cancelled: "Your booking" IDENTIFIER_SLOT "was cancelled."\n', encoding="utf-8")
    p.write_text(
        p.read_text().replace("sentence: booking_confirmed", "sentence: booking_confirmed | booking_cancelled"),
        encoding="utf-8",
    )
    os.utime(p, ns=(1, 1))
    second = load_grammar("travel", grammar_dir=tmp_path)
    assert second is not first and "booking_cancelled" in second.shapes
    clear_cache()
    assert load_grammar("travel", grammar_dir=tmp_path) is not second


def test_earley_parser_gives_the_same_shapes() -> None:
    lalr, earley = load_grammar("orders"), load_grammar("orders", parser="earley")
    assert lalr.shapes.keys() == earley.shapes.keys()


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('sentence: a\na: "Hi" a "."', "recursive"),
        ('sentence: a\na: ("Hi" "there")* "."', "recursive"),
        ('sentence: a "."\na: "Hi"', "one shape rule"),
        ('sentence: a\na: "Hi" "there"', "must end with"),
        ('sentence: a\na: "Hi." "there."', "before its end"),
        ('sentence: a\na: "Cost $5."', "words and"),
        ('sentence: a\na: "hi"i "."', "case-insensitive"),
        ('sentence: a\na: WORD "."\nWORD: /[a-z]+/', "terminal WORD"),
        ('sentence: a | b\na: "Hi" "."\nb: "Hi" "."', "could not be compiled"),
        ('sentence: a\na: "Hi" nothing "."', "could not be compiled"),
    ],
)
def test_bad_grammars_raise_grammar_error(tmp_path: Path, body: str, needle: str) -> None:
    _write(tmp_path, "bad", body)
    with pytest.raises(GrammarError) as err:
        load_grammar("bad", grammar_dir=tmp_path)
    assert needle in str(err.value)
    assert "bad" in str(err.value)


def test_unknown_domain_and_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(GrammarError, match="unknown domain 'nope'.*orders"):
        load_grammar("nope")
    with pytest.raises(GrammarError, match="does not exist"):
        load_grammar("orders", grammar_dir=tmp_path / "missing")
    with pytest.raises(GrammarError, match="unknown parser"):
        load_grammar("orders", parser="cyk")


def test_multi_word_literals_split_only_inside_rules() -> None:
    src = 'a: "shipped on" X "it, too."\nX: "two words"\n// "not touched"\n'
    out = rewrite_source(src, "t.lark")
    assert '("shipped" "on")' in out and '("it" "," "too" ".")' in out
    assert 'X: "two words"' in out and '// "not touched"' in out


def test_shipped_grammars_found_through_package_resources() -> None:
    from guard._resources import data_path

    paths = list_domains()
    assert {"orders", "billing", "account"} <= set(paths)
    assert all(p.parent == data_path("grammars") for p in paths.values())
