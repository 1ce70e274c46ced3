"""From claim results to one decision: answer, refuse, or regenerate from facts.

A refusal names exactly what could not be verified, in sentences built from the
policy's labels and the database's ids; it never repeats the model's text.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Any, TypedDict

from guard import _answer
from guard.findings import Finding
from guard.payload import Payload, substitute_in_order
from guard.records.checker import ClaimResult, Status
from guard.records.formatting import Formatter, format_value, formatter, to_json
from guard.records.policy import Policy, readable_name

_status = attrgetter("status")
_CONFIRMED, _CONTRADICTED, _MALFORMED = Status.CONFIRMED, Status.CONTRADICTED, Status.MALFORMED
_REWRITE = (_CONTRADICTED, _MALFORMED)
"""Statuses the model can fix from the facts: a wrong value, or one that is not a value of its type."""


def _answer_parts(
    results: Sequence[ClaimResult], policy: Policy
) -> tuple[Sequence[str], Sequence[str], Sequence[str | None], Sequence[str | None]]:
    """Keys, rendered texts, citations and update times of confirmed results, one result at a time: the
    reference the one-field column path (:mod:`guard._answer`) must agree with."""
    formats: dict[tuple[str, str], Formatter] = {}
    keys, texts, cited, stamps = [], [], [], []
    for r in results:
        fmt = formats.get((r.entity, r.field))
        if fmt is None:
            fmt = formats[r.entity, r.field] = formatter(policy.entities[r.entity].fields[r.field], policy)
        keys.append(r.key)
        texts.append(fmt(r.actual))
        cited.append(r.citation)
        stamps.append(r.updated_iso if r.updated_iso is not None or r.updated_at is None else r.updated_at.isoformat())
    return keys, texts, cited, stamps


class Action(str, Enum):
    """What guard does with a payload."""

    ANSWER = "answer"
    REFUSE = "refuse"
    REGENERATE = "regenerate_from_facts"


@dataclass(frozen=True)
class Decision:
    """The outcome for one payload; ``to_dict()`` is the JSON the CLI prints."""

    action: Action
    request_id: str
    results: tuple[ClaimResult, ...] = ()
    text: str | None = None
    citations: tuple[dict[str, Any], ...] = ()
    message: str | None = None
    unverified: tuple[str, ...] = ()
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    contradicted: tuple[str, ...] = ()
    warnings: tuple[Finding, ...] = ()
    findings: tuple[Finding, ...] = ()

    def to_dict(self, include_values: bool = True) -> dict[str, Any]:
        """The decision as JSON (``include_values=False`` leaves out claimed and stored values)."""
        d: dict[str, Any] = {"action": self.action.value, "request_id": self.request_id}
        if self.action is Action.ANSWER:
            d.update(text=self.text, citations=list(self.citations))
        elif self.action is Action.REFUSE:
            d.update(message=self.message, unverified=list(self.unverified))
        else:
            d.update(facts=self.facts, contradicted=list(self.contradicted))
        d["results"] = [result_dict(r, include_values) for r in self.results]
        d["warnings"] = [w.to_dict() for w in self.warnings]
        if self.findings:
            d["findings"] = [f.to_dict() for f in self.findings]
        return d


def result_dict(r: ClaimResult, include_values: bool = True) -> dict[str, Any]:
    """One claim result as JSON."""
    d: dict[str, Any] = {
        "key": r.key,
        "entity": r.entity,
        "field": r.field,
        "type": r.type,
        "status": r.status.value,
        "citation": r.citation,
    }
    if r.reason:
        d["reason"] = r.reason
    if r.updated_at is not None:
        d["updated_at"] = r.updated_iso or r.updated_at.isoformat()
    if include_values:
        d["claimed"] = r.claimed
        d["actual"] = to_json(r.actual, r.type)
    return d


def refusal_sentence(r: ClaimResult, policy: Policy) -> str:
    """One sentence for one failed claim, from policy labels and database ids only."""
    ent = policy.entities.get(r.entity)
    fp = ent.fields.get(r.field) if ent else None
    if ent is None or fp is None:
        return "One of the facts in this answer is outside what I am allowed to check, so I have not given it."
    what = fp.label or readable_name(r.field)
    noun = ent.label or readable_name(r.entity)
    subject = f"{noun} {r.row_id}" if r.row_id is not None else f"the {noun} you asked about"
    if r.status is Status.NOT_FOUND and r.row_id is None:
        return f"I could not find the {noun} you asked about, so I have not given its {what}."
    if r.status is Status.NOT_FOUND:
        return f"There is no {what} on record for {subject}, so I have not given one."
    if r.status is Status.STALE:
        return (
            f"I could not verify the {what} for {subject} because the record is out of date, so I have not given one."
        )
    if r.status is Status.UNAVAILABLE:
        return (
            f"I could not verify the {what} for {subject} because the system of record could not be reached, "
            "so I have not given one."
        )
    if r.status is Status.NOT_CHECKABLE:
        return f"I am not able to check the {what} for the {noun} you asked about, so I have not given it."
    return f"I could not verify the {what} for {subject}, so I have not given one."


class _Common(TypedDict):
    """What every decision carries, whatever its action."""

    request_id: str
    results: tuple[ClaimResult, ...]
    warnings: tuple[Finding, ...]
    findings: tuple[Finding, ...]


def decide(
    payload: Payload,
    results: list[ClaimResult],
    policy: Policy,
    *,
    warnings: tuple[Finding, ...] | list[Finding] = (),
    request_id: str | None = None,
    findings: tuple[Finding, ...] | list[Finding] = (),
) -> Decision:
    """Answer when every claim is confirmed; regenerate when any is contradicted or malformed (``contradicted``
    then lists the keys of both, the values to rewrite from the facts); otherwise refuse."""
    rid = request_id or secrets.token_hex(16)
    common = _Common(request_id=rid, results=tuple(results), warnings=tuple(warnings), findings=tuple(findings))
    statuses = list(map(_status, results))
    if _CONTRADICTED in statuses or _MALFORMED in statuses:
        contradicted = [r for r in results if r.status in _REWRITE]
        facts: dict[str, dict[str, Any]] = {}
        for r in results:
            if not r.resolved:
                continue
            fp = policy.entities[r.entity].fields[r.field]
            facts[r.key] = {
                "entity": r.entity,
                "entity_id": r.row_id,
                "field": r.field,
                "type": r.type,
                "value": to_json(r.actual, r.type),
                "text": format_value(r.actual, fp, policy),
                "citation": r.citation,
            }
        return Decision(Action.REGENERATE, facts=facts, contradicted=tuple(r.key for r in contradicted), **common)
    if statuses.count(_CONFIRMED) != len(statuses) or not results:
        failed = [r for r in results if r.status is not _CONFIRMED]
        sentences: list[str] = []
        for r in failed:
            s = refusal_sentence(r, policy)
            if s not in sentences:
                sentences.append(s)
        if not results:
            sentences.append("This answer has no facts I could verify, so I have not given it.")
        return Decision(Action.REFUSE, message=" ".join(sentences), unverified=tuple(r.key for r in failed), **common)
    keys, texts, cited, stamps = _answer.columns(results, policy) or _answer_parts(results, policy)
    citations = tuple([{"key": k, "citation": c, "updated_at": s} for k, c, s in zip(keys, cited, stamps)])
    return Decision(
        Action.ANSWER, text=substitute_in_order(payload.answer_template, keys, texts), citations=citations, **common
    )


def witness_refusal(unwitnessed: Sequence[tuple[ClaimResult, Any]], policy: Policy) -> str:
    """One sentence naming each state asserted in words whose witness claim did not verify, from policy labels
    and lexicon values only."""
    parts: list[str] = []
    for r, need in unwitnessed:
        ent = policy.entities.get(r.entity)
        fp = ent.fields.get(r.field) if ent else None
        noun = (ent.label if ent is not None else None) or readable_name(r.entity)
        what = (fp.label if fp is not None else None) or readable_name(r.field)
        values = [v for e, w in need.options if e == r.entity for v in w.accepted]
        said = f" is {' or '.join(readable_name(v) for v in values)}" if values else ""
        text = f"sentence {need.sentence + 1} says the {noun}'s {what}{said}, and I could not verify that"
        if text not in parts:
            parts.append(text)
    return "I have not given this answer because " + "; ".join(parts) + "."


def lint_refusal(blocking: Sequence[Finding]) -> str:
    """One sentence naming why the wording was refused, from each code's refusal phrase, never from the template."""
    from guard.findings import CATALOGUE

    parts: list[str] = []
    for f in blocking:
        entry = CATALOGUE.get(f.code)
        phrase = entry.refusal if entry is not None and entry.refusal else "its wording could not be checked"
        text = phrase.replace("{n}", str(f.sentence + 1) if f.sentence >= 0 else "?")
        if text not in parts:
            parts.append(text)
    return "I have not given this answer because " + "; ".join(parts) + "."


__all__ = ["Action", "Decision", "decide", "lint_refusal", "witness_refusal", "refusal_sentence", "result_dict"]
