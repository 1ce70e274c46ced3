"""The blind template set (corpora/templates/blind) is well formed: its format only, never its acceptance.

The set measures how the sentence libraries generalise, so nothing here scores a library on it; the checks are
what a malformed line would break: the JSON, the labels, every ``{slot}`` bound to a typed field, a witness on
each prose state and a reason on each unverified line, and no sentence shared with the development corpus.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from guard.payload.model import ClaimType

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpora" / "templates"
BLIND = CORPUS / "blind"
DOMAINS = ("orders", "billing", "account", "subscriptions", "travel")
REGISTERS = {"email", "chat", "sms", "letter", "macro"}
CLEAN = {"slot_fact", "prose_state", "courtesy", "contact", "instruction", "procedure", "discourse", "label_line"}
CLASSES = {"courtesy": {"acknowledgement"}, "procedure": {"hedge"}}
"""The optional ``class`` key: which finer class a line of a kind belongs to."""
FORMULAIC = {"dear {name}", "hi {name}", "hello {name}", "yours sincerely", "yours faithfully"}
"""Greetings and closings any two sets of letters share: the only lines allowed in the development corpus too."""
SLOT = re.compile(r"\{([a-z][a-z0-9_]*)\}")
FIELD = re.compile(r"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*")


def _rows(domain: str) -> list[tuple[str, dict]]:
    path = BLIND / f"{domain}.jsonl"
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path.name}:{n}"
        record = json.loads(line)
        assert isinstance(record, dict), where
        rows.append((where, record))
    return rows


def _norm(text: str) -> str:
    """Lower-cased words only, apostrophes straightened: catches copies that differ in punctuation or case."""
    return " ".join(re.findall(r"[a-z0-9{}_']+", text.lower().replace("\u2019", "'")))


def test_one_file_per_domain_and_nothing_else():
    assert sorted(p.stem for p in BLIND.glob("*.jsonl")) == sorted(DOMAINS)


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_line_follows_the_format(domain):
    for where, r in _rows(domain):
        kind = r["kind"]
        required = {"text", "domain", "register", "kind", "slots"}
        optional = {"witness"} if kind == "prose_state" else {"why"} if kind == "unverified" else set()
        assert required <= set(r) <= required | optional | ({"class"} if kind in CLASSES else set()), where
        assert r["domain"] == domain and r["register"] in REGISTERS, where
        assert kind in CLEAN or kind == "unverified", where
        text = r["text"]
        assert isinstance(text, str) and text == text.strip() and "\n" not in text, where
        assert 2 <= len(text.split()) <= 35, where
        assert "{" not in SLOT.sub("", text) and "}" not in SLOT.sub("", text), f"{where}: a stray brace"
        assert set(SLOT.findall(text)) == set(r["slots"]), f"{where}: slots in the text and in 'slots' differ"
        for name, slot in r["slots"].items():
            assert set(slot) == {"type", "field"}, f"{where}: {name}"
            assert slot["type"] in {t.value for t in ClaimType}, f"{where}: {name}"
            assert FIELD.fullmatch(slot["field"]), f"{where}: {name}"
        if kind == "prose_state":
            w = r["witness"]
            assert set(w) == {"field", "value"} and FIELD.fullmatch(w["field"]) and w["value"], where
        if kind == "unverified":
            assert isinstance(r["why"], str) and r["why"].strip(), where
        if "class" in r:
            assert r["class"] in CLASSES[kind], where


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_domain_has_110_clean_and_50_unverified_lines_spread_over_the_registers(domain):
    rows = [r for _, r in _rows(domain)]
    kinds = Counter("unverified" if r["kind"] == "unverified" else "clean" for r in rows)
    assert kinds == {"clean": 110, "unverified": 50}
    for group in ("clean", "unverified"):
        registers = Counter(r["register"] for r in rows if (r["kind"] == "unverified") == (group == "unverified"))
        assert set(registers) == REGISTERS and max(registers.values()) - min(registers.values()) <= 2, registers
    assert set(r["kind"] for r in rows) == CLEAN | {"unverified"}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_slot_name_means_one_field_within_a_domain(domain):
    bound: dict[str, tuple[str, str]] = {}
    for where, r in _rows(domain):
        for name, slot in r["slots"].items():
            assert bound.setdefault(name, (slot["type"], slot["field"])) == (slot["type"], slot["field"]), where


def test_no_blind_sentence_repeats_or_appears_in_the_development_corpus():
    development = set()
    for path in CORPUS.glob("*.jsonl"):
        development |= {_norm(json.loads(line)["text"]) for line in path.read_text(encoding="utf-8").splitlines()}
    for domain in DOMAINS:
        texts = Counter(_norm(r["text"]) for _, r in _rows(domain))
        assert [t for t, n in texts.items() if n > 1] == [], domain
        assert sorted(set(texts) & development - FORMULAIC) == [], domain
