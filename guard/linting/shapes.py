"""The shape stage (S2xx): every sentence must be one of the domain's approved sentence shapes."""

from __future__ import annotations

from guard.findings import Finding, Severity
from guard.linting.registry import Check, Mode, Stage, StageSetup, register
from guard.linting.runner import LintContext


def check(ctx: LintContext) -> list[Finding]:
    """S2xx: every sentence must parse as an approved shape of the domain."""
    from guard.shapes import load_grammar, validate_template

    grammar = load_grammar(ctx.domain, grammar_dir=ctx.grammar_dir)
    skip = [(f.start, f.end) for f in ctx.findings if f.stage == "format" and f.severity == Severity.ERROR]
    report = validate_template(ctx.template, grammar, ctx.slots, ctx.slot_types, skip)
    ctx.sentences = report.sentences
    return report.findings


def build(setup: StageSetup) -> Check:
    """Loads the domain's grammar now, so a missing or broken library fails at start-up, not at a request."""
    from guard.errors import ConfigError
    from guard.shapes import load_grammar

    if not setup.domain:
        raise ConfigError("the shape stage needs a domain (orders, billing, account or your own)", location="domain")
    load_grammar(setup.domain, grammar_dir=setup.grammar_dir)
    return check


STAGE = register(
    Stage(
        "shape",
        build,
        codes=("S201", "S202", "S203", "S204"),
        refusal="sentence {n} is not one of the approved sentence shapes",
        default_mode=Mode.OFF,
        needs_domain=True,
    )
)

__all__ = ["check", "STAGE"]
