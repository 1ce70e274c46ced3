"""The shape stage (S2xx): every sentence must belong to the domain's approved sentence library."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from guard.findings import Finding, Severity
from guard.linting.registry import Check, Mode, Stage, StageSetup, register
from guard.linting.runner import LintContext, LintResult


def check(ctx: LintContext) -> list[Finding]:
    """S2xx: every sentence must parse in the domain's library; slot places and prose states are recorded for
    :func:`bind` (they depend on the payload's claims, which the gate's lint cache does not key on)."""
    from guard.shapes.check import check_template
    from guard.shapes.sentences import load_domain

    library = load_domain(ctx.domain, ctx.grammar_dir)
    skip = [(f.start, f.end) for f in ctx.findings if f.stage == "format" and f.severity == Severity.ERROR]
    report = check_template(ctx.template, library, ctx.slot_types, skip)
    ctx.extra["bindings"] = report.bindings
    ctx.sentences = report.sentences
    return report.findings


def bind(result: LintResult, claims: Sequence[Any]) -> LintResult:
    """The lint result for one payload: slots checked against the fields their places show (S206), prose states
    against the claims that witness them (S208; S205 dropped where witnessed). The claims that witness a state
    are in ``measures["witnesses"]`` (key to :class:`guard.shapes.check.Need`) for the decision."""
    bindings = result.measures.get("bindings")
    if bindings is None or not (bindings.uses or bindings.needs):
        return result
    from guard.shapes.check import bind as bind_claims

    findings, witnessed = bind_claims(bindings, claims, result.template, result.findings)
    findings.sort(key=lambda f: (f.start, f.end, f.code))
    return replace(result, findings=findings, measures={**result.measures, "witnesses": witnessed})


def build(setup: StageSetup) -> Check:
    """Loads the domain's library now, so a missing or broken library fails at start-up, not at a request."""
    from guard.errors import ConfigError
    from guard.shapes.sentences import load_domain

    if not setup.domain:
        raise ConfigError("the shape stage needs a domain (orders, billing, account or your own)", location="domain")
    load_domain(setup.domain, setup.grammar_dir)
    return check


STAGE = register(
    Stage(
        "shape",
        build,
        codes=("S201", "S202", "S203", "S204", "S205", "S206", "S207", "S208"),
        refusal="sentence {n} is not worded in a way I am allowed to use",
        default_mode=Mode.OFF,
        needs_domain=True,
    )
)

__all__ = ["check", "bind", "STAGE"]
