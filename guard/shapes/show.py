"""A domain's sentence library as people read it: the composition patterns, then each class's phrases in the
lexicon's own notation (``[optional]``, ``(a | b)``, ``<class>``, ``{type}``). Nothing is enumerated: the
language is far too large to list (about 10^10 sentences per domain)."""

from __future__ import annotations

from typing import Any

from guard.shapes.lexicon import SENTENCE_CLASSES, Witness, _proofs, read_lexicon
from guard.shapes.sentences import Library

PATTERNS = (
    ("greeting line", "<greet> ,"),
    ("statement", "[<greet> ,] [<lead>] SUBJECT PREDICATE [[,] and (PREDICATE | SUBJECT PREDICATE)] [.]"),
    ("attribute", "[<greet> ,] ATTRIBUTE [(for | of | on) SUBJECT] (is | was | will be | comes to | ...) {value} [.]"),
    ("possessive", "SUBJECT 's ATTRIBUTE is {value} ."),
    ("parenthetical", "SUBJECT ( {value} [, {value} [, {value}]] ) PREDICATE ."),
    ("label line", "(ATTRIBUTE | SUBJECT) (: | -) {value} [, {value} [, {value}]] [.]"),
    ("intro line", "<intro> :"),
    (
        "other sentences",
        "[<greet> ,] (<courtesy> | <contact> | <instruction> | <discourse> | <ack> | <hedge> | <procedure>) [.]",
    ),
    ("sign-off", "<sign_off> , [<signature>]  or  <signature> on its own line"),
)
"""The composition of core's compose.lark, in words (SUBJECT: [your | the | this] NOUN [id] [modifier])."""


def describe(library: Library) -> dict[str, Any]:
    """The library as plain data: patterns, entities, predicates, prose states, statements and classes."""
    domain_file, core_file = library.files[0], library.files[1]
    lex, core = read_lexicon(domain_file), read_lexicon(core_file)
    entities = {}
    for name, ent in lex.entities.items():
        entities[name] = {
            "nouns": list(ent.nouns),
            "id": ent.id,
            "modifiers": list(ent.modifiers),
            "relative": list(ent.relative),
            "attributes": {a.field: {"type": a.type, "names": list(a.names)} for a in ent.attributes},
            "counts": {c.field: list(c.nouns) for c in ent.counts},
        }
    predicates: list[dict[str, Any]] = []
    states: list[dict[str, Any]] = []
    for p in lex.predicates:
        item: dict[str, Any] = {"entity": list(p.entities), "field": p.field, "forms": list(p.forms)}
        if p.proofs:
            item["witness"] = [{"field": w.field, "values": list(w.accepted)} for w in p.proofs]
            states.append(item)
        else:
            predicates.append(item)
    statements: list[dict[str, Any]] = [
        {
            "forms": list(st.forms),
            "witness": (
                {e: [_proof(w) for w in _proofs(ws)] for e, ws in st.witnesses.items()}
                or [_proof(w) for w in st.proofs]
            ),
        }
        for st in lex.statements
    ]
    classes = {
        cls: [*core.sentence_class(cls), *lex.sentence_class(cls)]
        for cls in SENTENCE_CLASSES
        if core.sentence_class(cls) or lex.sentence_class(cls)
    }
    phrases = {**core.classes}
    for k, v in lex.classes.items():
        phrases[k] = [*phrases.get(k, []), *v]
    return {
        "domain": library.domain,
        "description": lex.description,
        "patterns": dict(PATTERNS),
        "entities": entities,
        "predicates": predicates,
        "states": states,
        "statements": statements,
        "sentence_classes": classes,
        "phrase_classes": phrases,
    }


def _proof(w: Witness) -> dict[str, Any]:
    return {"field": w.field, "values": list(w.accepted)}


def render(info: dict[str, Any]) -> str:
    """:func:`describe` as text for a terminal."""
    out = [f"{info['domain']}: {info['description']}".rstrip(": "), "", "Patterns"]
    width = max(len(k) for k in info["patterns"])
    out += [f"  {k:<{width}}  {v}" for k, v in info["patterns"].items()]
    out += ["", "Subjects (NOUN, the id after it, modifiers)"]
    for name, e in info["entities"].items():
        out.append(f"  {name}: {' | '.join(e['nouns'])}" + (f"  id: {e['id']}" if e["id"] else ""))
        for m in [*e["modifiers"], *e["relative"]]:
            out.append(f"      ... {m}")
    out += ["", "Attributes (ATTRIBUTE, by the field it shows)"]
    for e in info["entities"].values():
        for fld, a in e["attributes"].items():
            out.append(f"  {fld} ({a['type']}): {' | '.join(a['names'])}")
        for fld, nouns in e["counts"].items():
            out.append(f"  {fld} (count): {{integer}} {' | '.join(nouns)}")
    out += ["", "Predicates (PREDICATE; a slot shows the field named)"]
    for p in info["predicates"]:
        out.append(f"  {'/'.join(p['entity'])} -> {p['field'] or 'fields in the forms'}")
        out += [f"      {f}" for f in p["forms"]]
    out += ["", "States said in words (each needs its witness claim)"]
    for p in info["states"]:
        said = " or ".join(f"{w['field']} = {' or '.join(w['values']) or 'any confirmed value'}" for w in p["witness"])
        out.append(f"  {'/'.join(p['entity'])}: {said}")
        out += [f"      {f}" for f in p["forms"]]
    out += ["", "Statements"]
    for st in info["statements"]:
        out += [f"  {f}" for f in st["forms"]]
    for title, key in (("Sentence classes", "sentence_classes"), ("Phrase classes", "phrase_classes")):
        out += ["", title]
        for name, phrases in info[key].items():
            out.append(f"  <{name}>")
            out += [f"      {p}" for p in phrases]
    return "\n".join(out) + "\n"


__all__ = ["describe", "render", "PATTERNS"]
