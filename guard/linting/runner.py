"""Lint an answer template: the public facade over the lint stages.

A lint run is a list of stages, each a function ``(LintContext) -> list[Finding]``
run in order over one shared context: format safety of the slots (``F1xx``),
then approved sentence shapes (``S2xx``). Later stages (free text ``T3xx``,
slot ratio ``R4xx``) plug in by appending to :data:`STAGES` or by passing
``stages=``.

>>> r = lint("Your order {order_id} shipped on {ship_date}.", domain="orders",
...          slot_types={"order_id": "identifier", "ship_date": "date"})
>>> r.ok, r.shapes
(True, ['order_shipped'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from guard.findings import Finding, Severity


@dataclass
class LintContext:
    """Everything a stage may read, and what earlier stages left for later ones."""

    template: str
    domain: str
    slot_types: dict[str, str]
    grammar_dir: Any = None
    payload: Any = None
    slots: list[Any] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    sentences: list[Any] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


Stage = Callable[[LintContext], list[Finding]]


def format_stage(ctx: LintContext) -> list[Finding]:
    """F1xx: unsafe slots; with a payload, claims no slot uses."""
    from guard.payload import scan_template, unused_claims

    ctx.slots, found = scan_template(ctx.template)
    if ctx.payload is not None:
        found = found + unused_claims(ctx.payload)
    return found


def shape_stage(ctx: LintContext) -> list[Finding]:
    """S2xx: every sentence must parse as an approved shape of the domain."""
    from guard.shapes import load_grammar, validate_template

    grammar = load_grammar(ctx.domain, grammar_dir=ctx.grammar_dir)
    skip = [(f.start, f.end) for f in ctx.findings if f.stage == "format" and f.severity == Severity.ERROR]
    report = validate_template(ctx.template, grammar, ctx.slots, ctx.slot_types, skip)
    ctx.sentences = report.sentences
    return report.findings


STAGES: list[tuple[str, Stage]] = [
    ("format", format_stage),
    ("shape", shape_stage),
]
"""The default stages, in order. Each is ``(name, function)``."""


@dataclass(frozen=True)
class LintResult:
    """Findings for one template, and the shape each sentence matched (None where none did)."""

    template: str
    domain: str
    findings: list[Finding]
    sentences: list[Any]

    @property
    def ok(self) -> bool:
        return not any(f.severity == Severity.ERROR for f in self.findings)

    @property
    def shapes(self) -> list[str | None]:
        return [s.shape for s in self.sentences]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "domain": self.domain,
            "findings": [f.to_dict() for f in self.findings],
            "sentences": [s.to_dict() for s in self.sentences],
        }


def run_stages(ctx: LintContext, stages: Sequence[tuple[str, Stage]] | None = None) -> LintResult:
    for _name, stage in stages if stages is not None else STAGES:
        ctx.findings.extend(stage(ctx))
    ordered = sorted(ctx.findings, key=lambda f: (f.start, f.end, f.code))
    return LintResult(ctx.template, ctx.domain, ordered, list(ctx.sentences))


def lint(
    template: str,
    *,
    domain: str,
    slot_types: Mapping[str, str] | None = None,
    grammar_dir: Any = None,
    stages: Sequence[tuple[str, Stage]] | None = None,
) -> LintResult:
    """Lint a plain template; ``slot_types`` maps slot names to claim types (``{"eta": "date"}``)."""
    if not isinstance(template, str):
        from guard.errors import PayloadError

        raise PayloadError(f"a template must be a string, not {type(template).__name__}", location="template")
    ctx = LintContext(template, domain, dict(slot_types or {}), grammar_dir)
    return run_stages(ctx, stages)


def lint_payload(
    payload: Any,
    *,
    domain: str,
    grammar_dir: Any = None,
    stages: Sequence[tuple[str, Stage]] | None = None,
) -> LintResult:
    """Lint a payload's template, with slot types taken from its claims.

    ``payload`` is a :class:`guard.payload.Payload` or anything
    :func:`guard.payload.load_payload` reads (JSON text, bytes, a dict).
    """
    from guard.errors import PayloadError
    from guard.payload import Payload, load_payload

    try:
        p = payload if isinstance(payload, Payload) else load_payload(payload)
    except PayloadError:
        template, types = _lenient(payload)
        if template is None:
            raise
        # the payload is unacceptable (unsafe slots, missing claims): lint its template so the author sees why
        ctx = LintContext(template, domain, types, grammar_dir)

        def unclaimed(ctx: LintContext) -> list[Finding]:
            return [Finding.make("F107", f"slot {{{s.name}}} at column {s.start + 1} has no claim with that key",
                                 start=s.start, end=s.end) for s in ctx.slots if s.name not in types]

        chosen = list(stages if stages is not None else STAGES)
        return run_stages(ctx, chosen[:1] + [("claims", unclaimed)] + chosen[1:])
    types = {c.key: c.type.value for c in p.claims}
    ctx = LintContext(p.answer_template, domain, types, grammar_dir, payload=p)
    return run_stages(ctx, stages)


def _lenient(payload: Any) -> tuple[str | None, dict[str, str]]:
    """The template and whatever slot types can be read from a payload that failed validation."""
    import json

    from guard.payload import ClaimType

    data = payload
    if isinstance(payload, (str, bytes)):
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return None, {}
    if not isinstance(data, dict) or not isinstance(data.get("answer_template"), str):
        return None, {}
    known = {t.value for t in ClaimType}
    types = {c["key"]: c["type"] for c in data.get("claims") or [] if isinstance(c, dict)
             and isinstance(c.get("key"), str) and c.get("type") in known}
    return data["answer_template"], types


def default_stages(*, freetext: bool | None = None, ratio: bool = True, thresholds: Any = None,
                   classifier: Any = None) -> list[tuple[str, Stage]]:
    """Format and shape, plus the free-text classifier (``None``: when the shipped model is present) and the
    slot-ratio monitor."""
    stages = list(STAGES)
    if freetext is None:
        from guard.freetext.model import default_model_path

        freetext = classifier is not None or default_model_path().is_file()
    if freetext:
        from guard.linting.freetext import freetext_stage, load_classifier

        stages.append(("freetext", freetext_stage(classifier or load_classifier())))
    if ratio:
        from guard.linting.ratio import ratio_stage

        stages.append(("ratio", ratio_stage(thresholds)))
    return stages


__all__ = ["lint", "lint_payload", "default_stages", "LintResult", "LintContext", "Stage", "STAGES", "format_stage", "shape_stage",
           "run_stages"]

