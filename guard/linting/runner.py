"""Lint an answer template: run the registered stages in order over one shared context.

A check is ``(LintContext) -> list[Finding]``; the stages that build checks are
registered in :mod:`guard.linting.registry`. :func:`lint` runs format and shape
by default; :func:`default_stages` adds the free-text classifier and the slot
ratio, as ``guard lint`` does.

>>> r = lint("Your order {order_id} shipped on {ship_date}.", domain="orders",
...          slot_types={"order_id": "identifier", "ship_date": "date"})
>>> r.ok, r.shapes
(True, ['order_shipped'])
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


STAGE_MS = "stage_ms"
"""The key of :attr:`LintResult.measures` that holds each stage's time in milliseconds."""

Stage = Callable[[LintContext], list[Finding]]
"""A built check (see :class:`guard.linting.registry.Stage` for the registered stage that builds it)."""


@dataclass(frozen=True)
class LintResult:
    """Findings for one template, and the shape each sentence matched (None where none did)."""

    template: str
    domain: str
    findings: list[Finding]
    sentences: list[Any]
    measures: Mapping[str, Any] = field(default_factory=dict)
    """What stages measured besides findings (``ratio``: the slot-ratio report)."""

    @property
    def ok(self) -> bool:
        """No finding of error severity."""
        return not any(f.severity == Severity.ERROR for f in self.findings)

    @property
    def shapes(self) -> list[str | None]:
        """The shape each sentence matched (None where none did)."""
        return [s.shape for s in self.sentences]

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values."""
        return {
            "ok": self.ok,
            "domain": self.domain,
            "findings": [f.to_dict() for f in self.findings],
            "sentences": [s.to_dict() for s in self.sentences],
        }


def run_stages(ctx: LintContext, stages: Sequence[tuple[str, Stage]] | None = None) -> LintResult:
    """Run ``stages`` (default: format and shape) in order; findings sorted by where they are.

    Each stage's wall time in milliseconds is kept in ``measures["stage_ms"]`` (the per-stage latency metric)."""
    timings: dict[str, float] = {}
    for name, check in stages if stages is not None else base_stages():
        t0 = time.perf_counter()
        ctx.findings.extend(check(ctx))
        timings[name] = (time.perf_counter() - t0) * 1000
    ordered = sorted(ctx.findings, key=lambda f: (f.start, f.end, f.code))
    return LintResult(ctx.template, ctx.domain, ordered, list(ctx.sentences), {**ctx.extra, STAGE_MS: timings})


def base_stages() -> list[tuple[str, Stage]]:
    """Format and shape: what :func:`lint` runs unless told otherwise (they need no setup)."""
    from guard.linting import format, shapes

    return [("format", format.check), ("shape", shapes.check)]


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
    _within_limit(template)
    ctx = LintContext(template, domain, dict(slot_types or {}), grammar_dir)
    return run_stages(ctx, stages)


def _within_limit(template: str) -> None:
    """The payload's template limit holds for lint too: the stages' work per template stays bounded."""
    from guard.errors import PayloadError
    from guard.payload.limits import Limits

    limit = Limits().max_template_chars
    if len(template) > limit:
        raise PayloadError(
            f"the template is {len(template)} characters; the limit is {limit}", location="answer_template"
        )


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
    from guard.payload.slots import unclaimed_slots

    try:
        p = payload if isinstance(payload, Payload) else load_payload(payload)
    except PayloadError:
        template, types = _lenient(payload)
        if template is None:
            raise
        _within_limit(template)
        # the payload is unacceptable (unsafe slots, missing claims): lint its template so the author sees why
        ctx = LintContext(template, domain, types, grammar_dir)

        def unclaimed(ctx: LintContext) -> list[Finding]:
            return unclaimed_slots(ctx.slots, types)

        chosen = list(stages if stages is not None else base_stages())
        return run_stages(ctx, chosen[:1] + [("claims", unclaimed)] + chosen[1:])
    from guard.linting.shapes import bind

    types = {c.key: c.type.value for c in p.claims}
    ctx = LintContext(p.answer_template, domain, types, grammar_dir, payload=p)
    return bind(run_stages(ctx, stages), p.claims)


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
    claims = data.get("claims")
    # the payload failed validation: any part of it may be any JSON value, so read only what has the right type
    types = {
        c["key"]: c["type"]
        for c in (claims if isinstance(claims, list) else [])
        if isinstance(c, dict) and isinstance(c.get("key"), str) and isinstance(c.get("type"), str)
        if c["type"] in known
    }
    return data["answer_template"], types


def default_stages(
    *,
    freetext: bool | None = None,
    ratio: bool = True,
    thresholds: Any = None,
    classifier: Any = None,
    domain: str | None = None,
    grammar_dir: Any = None,
) -> list[tuple[str, Stage]]:
    """Format and shape, plus the free-text classifier (``None``: when the shipped model is present) and the
    slot-ratio monitor, built through the stage registry."""
    from guard.linting.registry import StageSetup, build

    if freetext is None:
        from guard.freetext.model import default_model_path

        freetext = classifier is not None or default_model_path().is_file()
    selected: dict[str, Any] = {"format": None}
    if domain:
        selected["shape"] = None
    if freetext:
        selected["freetext"] = None
    if ratio:
        selected["ratio"] = thresholds
    checks = build(selected, StageSetup(domain=domain, grammar_dir=grammar_dir, classifier=classifier))
    if not domain:
        from guard.linting import shapes

        checks.insert(1, ("shape", shapes.check))
    return checks


__all__ = ["lint", "lint_payload", "default_stages", "LintResult", "LintContext", "Stage", "run_stages", "base_stages"]
