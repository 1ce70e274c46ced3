"""Lexicon files: the words of a sentence library as data (``core.yaml`` and one ``<domain>.yaml`` each).

A domain lexicon names its entities (the noun phrases that refer to them, the
field an id after the noun shows, modifiers and relative clauses, attribute
names per claim type, count nouns), its predicates (forms, the claim type and
field of each slot, the kind that decides which adverbs fit), the states it may
assert in prose with the claim that witnesses each, and entries for the shared
sentence classes. :mod:`guard.shapes.compiler` turns core plus a domain into
one Lark grammar.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from guard.errors import GrammarError

SENTENCE_CLASSES = (
    "greet",
    "sign_off",
    "signature",
    "courtesy",
    "contact",
    "instruction",
    "discourse",
    "intro",
    "ack",
    "hedge",
    "procedure",
    "heading",
    "lead",
    "state_tail",
)
"""The sentence classes core.lark composes; core and every domain may add entries to each."""

Phrases = list[str]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Witness(_Model):
    """The claim that proves a state asserted in prose: its field and the value (or values) it must have."""

    field: str
    value: str | None = None
    values: tuple[str, ...] = ()

    @property
    def accepted(self) -> tuple[str, ...]:
        """The values that witness the state (empty: any confirmed value of the field)."""
        return tuple(self.values) + ((self.value,) if self.value is not None else ())


class Attribute(_Model):
    """Names of one field as people call it ("order total", "total"), with its claim type."""

    names: Phrases
    type: str
    field: str


class Count(_Model):
    """Count nouns after an integer slot ("{n} items") and the field the integer shows."""

    nouns: Phrases
    field: str


class Entity(_Model):
    """How sentences refer to one entity."""

    nouns: Phrases
    """Head nouns and noun phrases: order, package, your order, shipment."""
    id: str | list[str] | None = None
    """The field an identifier slot right after the noun shows ("order {id}", "order #{id}"); a list where the
    entity has several identifying fields ("your account {username}" as well as "account {account_id}")."""
    determiners: Phrases = Field(default_factory=lambda: ["your", "the", "this", "that"])
    pronouns: Phrases = Field(default_factory=list)
    """Phrases that refer to this entity without a noun ("it" is shared by every entity)."""
    modifiers: Phrases = Field(default_factory=list)
    """Phrases after the noun: "of {money:refund.amount_minor}", "for {string:item.name}"."""
    relative: Phrases = Field(default_factory=list)
    """Relative clauses after "the <noun>": "you placed on {date:order.created_at}"."""
    attributes: list[Attribute] = Field(default_factory=list)
    counts: list[Count] = Field(default_factory=list)

    @property
    def ids(self) -> tuple[str, ...]:
        """Every field an identifier slot after the noun may show."""
        if self.id is None:
            return ()
        return (self.id,) if isinstance(self.id, str) else tuple(self.id)


class Predicate(_Model):
    """What a sentence may say of an entity: forms whose slots show fields; a prose state names its witness."""

    entity: str | list[str]
    forms: Phrases
    field: str | None = None
    """The field of the forms' slots when a slot names none."""
    witness: Witness | list[Witness] | None = None
    """For a form that asserts a state without a slot ("has been cancelled"): the claim that proves it, or a
    list of claims any one of which does (order.status = shipped, or any order.shipped_at)."""

    @property
    def entities(self) -> tuple[str, ...]:
        return (self.entity,) if isinstance(self.entity, str) else tuple(self.entity)

    @property
    def proofs(self) -> tuple[Witness, ...]:
        return _proofs(self.witness)


class Statement(_Model):
    """A whole clause with its own wording ("we have cancelled <subject>"), optionally a state with a witness."""

    forms: Phrases
    entity: str | None = None
    witness: Witness | list[Witness] | None = None
    witnesses: dict[str, Witness | list[Witness]] = Field(default_factory=dict)
    """Per entity of the sentence's subject, when the state depends on what the subject is."""

    @property
    def proofs(self) -> tuple[Witness, ...]:
        return _proofs(self.witness)


def _proofs(witness: Witness | list[Witness] | None) -> tuple[Witness, ...]:
    if witness is None:
        return ()
    return (witness,) if isinstance(witness, Witness) else tuple(witness)


class ClaimClass(_Model):
    """Words that carry a claim of one kind; ``allow_in`` lists classes where a word is harmless."""

    words: list[str]
    allow_in: dict[str, list[str]] = Field(default_factory=dict)


class Lexicon(_Model):
    """A lexicon file: core's or a domain's (a domain has no ``claim_words``)."""

    domain: str | None = None
    description: str = ""
    classes: dict[str, Phrases] = Field(default_factory=dict)
    entities: dict[str, Entity] = Field(default_factory=dict)
    predicates: list[Predicate] = Field(default_factory=list)
    statements: list[Statement] = Field(default_factory=list)
    claim_words: dict[str, ClaimClass] = Field(default_factory=dict)
    greet: Phrases = Field(default_factory=list)
    sign_off: Phrases = Field(default_factory=list)
    signature: Phrases = Field(default_factory=list)
    courtesy: Phrases = Field(default_factory=list)
    contact: Phrases = Field(default_factory=list)
    instruction: Phrases = Field(default_factory=list)
    discourse: Phrases = Field(default_factory=list)
    intro: Phrases = Field(default_factory=list)
    ack: Phrases = Field(default_factory=list)
    hedge: Phrases = Field(default_factory=list)
    lead: Phrases = Field(default_factory=list)
    state_tail: Phrases = Field(default_factory=list)
    """Where a state holds, said after a fact ("... is {status} right now", "on our side"): adds no claim."""
    """Openers of a statement that add no claim of their own ("I can confirm that", "According to our records,")."""
    procedure: Phrases = Field(default_factory=list)
    """Procedural sentences the organisation approves, written out in full: a list it owns."""
    heading: Phrases = Field(default_factory=list)
    """Headings over a table or a block of a message ("Order details", "Price"): words that assert nothing. An
    attribute name or a noun of the domain is a heading already."""

    @field_validator("classes")
    @classmethod
    def _class_names(cls, value: dict[str, Phrases]) -> dict[str, Phrases]:
        for name in value:
            if not name.isidentifier() or not name.islower():
                raise ValueError(f"class name {name!r} must be a lower-case identifier")
        return value

    def sentence_class(self, name: str) -> Phrases:
        phrases: Phrases = getattr(self, name)
        return phrases


class _WordLoader(yaml.SafeLoader):
    """YAML without its 1.1 booleans: in a lexicon, on, off, yes and no are words."""


_WordLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_lexicon(path: Path) -> Lexicon:
    """A lexicon file, validated; a GrammarError names the file and the key that is wrong."""
    try:
        data: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_WordLoader)  # noqa: S506 (a SafeLoader)
    except OSError as exc:
        raise GrammarError(f"cannot read lexicon {path.name}: {exc.strerror}", location=str(path)) from None
    except yaml.YAMLError as exc:
        raise GrammarError(f"lexicon {path.name} is not valid YAML: {exc}", location=str(path)) from None
    if not isinstance(data, dict):
        raise GrammarError(f"lexicon {path.name} must be a mapping", location=str(path))
    try:
        return Lexicon.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GrammarError(f"lexicon {path.name}: {where}: {first['msg']}", location=f"{path}:{where}") from None


__all__ = [
    "SENTENCE_CLASSES",
    "Witness",
    "Attribute",
    "Count",
    "Entity",
    "Predicate",
    "Statement",
    "ClaimClass",
    "Lexicon",
    "read_lexicon",
]

SOURCE_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).digest()
"""This module's source as imported: part of the grammar cache key (guard/shapes/tables.py)."""
