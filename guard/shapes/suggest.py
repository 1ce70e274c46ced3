"""Proposals for the long tail: lexicon entries for sentences a domain's library rejects, each vetted against
the claim-bearing words and the free-text classifier, never applied without review.

A rejected sentence becomes a proposal of one of two kinds: a predicate form after the longest subject the
library already reads ("Your parcel {id} | was left with {neighbour}." adds "was left with {string:...}" to
the subject's entity), or, for a sentence without slots and without a subject, a ``procedure`` sentence the
organisation approves as a whole. A slot's field comes from the payload's claim; a state said in words
without a slot needs its witness claim in the payload. Everything that carries a claim is refused, with why.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lark
import yaml
from lark import Token, Tree

from guard.errors import GuardError
from guard.shapes.check import check_template, split_sentences
from guard.shapes.compiler import PHRASE, claim_words
from guard.shapes.lexicon import read_lexicon
from guard.shapes.sentences import Library, load_library


@dataclass(frozen=True)
class Sample:
    """One template to learn from: its text, slot types, and (from a payload) each slot's field and the claims
    no slot uses (candidate witnesses)."""

    text: str
    types: Mapping[str, str]
    fields: Mapping[str, str] = field(default_factory=dict)
    """slot -> entity.field"""
    witnesses: Sequence[tuple[str, Any]] = ()
    """(entity.field, value) of claims no slot shows."""


@dataclass(frozen=True)
class Proposal:
    sentence: str
    section: str
    """``predicates`` or ``procedure``."""
    entry: Any
    types: Mapping[str, str] = field(default_factory=dict)
    """The sample's slot types, to check the patched library accepts the sentence."""


@dataclass(frozen=True)
class Refusal:
    sentence: str
    reason: str


@dataclass
class Suggestions:
    proposals: list[Proposal] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)

    def patch(self, domain: str) -> str:
        """The proposals as YAML to add to ``<domain>.yaml``."""
        data: dict[str, list[Any]] = {}
        for p in self.proposals:
            data.setdefault(p.section, []).append(p.entry)
        head = f"# guard shapes suggest: additions to {domain}.yaml (review them; --write applies them)\n"
        return head + (yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100) if data else "{}\n")


def suggest(samples: Sequence[Sample], library: Library, classifier: Any = None) -> Suggestions:
    """Proposals for every unit the library rejects (S201), and the units refused, with the reason."""
    out = Suggestions()
    banned = claim_words(read_lexicon(library.files[1]))
    seen: set[str] = set()
    for sample in samples:
        report = check_template(sample.text, library, sample.types)
        failing = {f.sentence for f in report.findings if f.code == "S201"}
        for unit in split_sentences(sample.text):
            if unit.index not in failing or unit.text in seen:
                continue
            seen.add(unit.text)
            item = _one(unit.text, sample, library, banned, classifier)
            (out.proposals if isinstance(item, Proposal) else out.refused).append(item)  # type: ignore[arg-type]
    if out.proposals:
        _vet_grammar(out, library)
    return out


def _one(text: str, sample: Sample, lib: Library, banned: Mapping[str, str], classifier: Any) -> Proposal | Refusal:
    toks = lib.lark_tokens(text, sample.types)
    for t in toks:
        word = str(t.value)
        if t.type == "OTHER" or (t.type not in _SLOT_TYPES and word[:1].isdigit()):
            return Refusal(text, f"{word!r} is a number or symbol in the prose; say it with a slot")
        if t.type == "UNTYPED_SLOT":
            return Refusal(text, f"slot {{{word}}} has no type")
        if word in banned and t.type not in _SLOT_TYPES:
            return Refusal(text, f"{word!r} carries a claim ({banned[word]}); such sentences stay refused")
    if classifier is not None:
        from guard.linting.freetext import freetext_findings

        flagged = freetext_findings(text, classifier)
        if flagged:
            return Refusal(text, f"the free-text classifier flags it ({flagged[0].name})")
    body = toks[:-1] if toks and str(toks[-1].value) in ".!?" else toks
    start = _after_greeting(lib, body)
    for k in range(len(body), start, -1):
        subject = _parse(lib, body[start:k], "subject")
        if subject is None:
            continue
        entities = _entities(lib, subject)
        return _predicate(text, body[k:], entities, sample, lib)
    if any(t.type in _SLOT_TYPES for t in body):
        return Refusal(text, "no subject the library reads starts this sentence; write the entry by hand")
    words = " ".join(str(t.value) for t in body[start:])
    return Proposal(text, "procedure", words, sample.types)


_SLOT_TYPES = {f"{t}_SLOT" for t in ("IDENTIFIER", "STRING", "INTEGER", "DECIMAL", "MONEY", "DATE", "TIMESTAMP")}
_SLOT_TYPES |= {"ENUM_SLOT", "BOOLEAN_SLOT"}


def _after_greeting(lib: Library, toks: list[Token]) -> int:
    for k in range(len(toks) - 1, 0, -1):
        if str(toks[k].value) == "," and _parse(lib, toks[:k], "greet") is not None:
            return k + 1
    return 0


def _parse(lib: Library, toks: list[Token], start: str) -> Tree[Any] | None:
    if not toks:
        return None
    try:
        return lib.lark.parse(toks, start=start)
    except lark.exceptions.LarkError:
        return None


def _entities(lib: Library, subject: Tree[Any]) -> set[str]:
    ents: set[str] | None = None
    for sub in subject.iter_subtrees_topdown():
        m = lib.compiled.meta.get(sub.data)
        if m is not None and m.kind != PHRASE:
            ents = set(m.entities) if ents is None else ents & m.entities
    return ents or set()


def _predicate(text: str, rest: list[Token], entities: set[str], sample: Sample, lib: Library) -> Proposal | Refusal:
    if not rest:
        return Refusal(text, "nothing follows the subject")
    words, fields = [], []
    for t in rest:
        if t.type in _SLOT_TYPES:
            slot = str(t.value)
            type_ = t.type.removesuffix("_SLOT").lower()
            fld = sample.fields.get(slot) or _only_field(lib, entities, type_)
            if fld is None:
                return Refusal(text, f"which field does {{{slot}}} show? lint a payload whose claims say")
            fields.append(fld)
            words.append(f"{{{type_}:{fld}}}")
        else:
            words.append(str(t.value))
    owners = {f.partition(".")[0] for f in fields} & entities if fields else set(entities)
    if len(owners) != 1:
        return Refusal(text, f"the subject can be {' or '.join(sorted(entities)) or 'nothing known'}; say which")
    entity = owners.pop()
    entry: dict[str, Any] = {"entity": entity, "forms": [" ".join(words)]}
    if not fields:
        witness = next(((f, v) for f, v in sample.witnesses if f.partition(".")[0] == entity), None)
        if witness is None:
            return Refusal(text, "a state said in words needs its witness claim; suggest from a payload that has it")
        entry["witness"] = {"field": witness[0], "value": str(witness[1])}
    return Proposal(text, "predicates", entry, sample.types)


def _only_field(lib: Library, entities: set[str], type_: str) -> str | None:
    found = {f for e in entities for f in lib.compiled.attributes.get(e, {}).get(type_, ())}
    return found.pop() if len(found) == 1 else None


def _vet_grammar(out: Suggestions, lib: Library) -> None:
    """Keep only proposals with which the library still compiles strictly LALR(1) and accepts the sentence."""
    kept: list[Proposal] = []
    for p in out.proposals:
        try:
            patched = _patched(lib, [*kept, p])
        except GuardError as exc:
            out.refused.append(Refusal(p.sentence, f"the library would not compile with it: {exc}"))
            continue
        if not check_template(p.sentence, patched, p.types).ok:
            out.refused.append(Refusal(p.sentence, "the library would still reject it with this entry"))
            continue
        kept.append(p)
    out.proposals = kept


def _patched(lib: Library, proposals: Sequence[Proposal]) -> Library:
    domain_file = lib.files[0]
    with tempfile.TemporaryDirectory(prefix="guard-suggest-") as tmp:
        d = Path(tmp)
        for f in lib.files:
            shutil.copy(f, d / f.name)
        apply(d / domain_file.name, proposals)
        return load_library(lib.domain, d)


def apply(path: Path, proposals: Sequence[Proposal]) -> None:
    """Append the proposals to the lexicon at ``path``, keeping its comments and layout; the result is read back
    and must still be a valid lexicon."""
    text = path.read_text(encoding="utf-8")
    by_section: dict[str, list[Any]] = {}
    for p in proposals:
        by_section.setdefault(p.section, []).append(p.entry)
    for section, entries in by_section.items():
        block = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=100)
        block = "".join("  " + line if line.strip() else line for line in block.splitlines(keepends=True))
        text = _append(text, section, block)
    path.write_text(text, encoding="utf-8")
    read_lexicon(path)


def _append(text: str, section: str, block: str) -> str:
    lines = text.splitlines(keepends=True)
    head = next((i for i, ln in enumerate(lines) if ln.rstrip() == f"{section}:"), None)
    if head is None:
        return text.rstrip("\n") + f"\n\n{section}:\n{block}"
    end = head + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "-", "#")):
        end += 1
    while end > head + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:end]) + block + "".join(lines[end:])


__all__ = ["Sample", "Proposal", "Refusal", "Suggestions", "suggest", "apply"]
