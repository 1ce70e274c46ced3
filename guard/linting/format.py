"""The format stage (F1xx): unsafe slots; with a payload, claims that no slot uses."""

from __future__ import annotations

from guard.findings import Finding
from guard.linting.registry import Check, Mode, Stage, StageSetup, register
from guard.linting.runner import LintContext


def check(ctx: LintContext) -> list[Finding]:
    """F1xx: unsafe slots and invisible format characters; with a payload, claims no slot uses."""
    from guard.payload.slots import format_characters, scan_template

    ctx.slots, found = scan_template(ctx.template)
    found = found + format_characters(ctx.template)
    if ctx.payload is not None:
        from guard.payload.model import unused_claims

        found = found + unused_claims(ctx.payload)
    return found


def build(setup: StageSetup) -> Check:
    return check


STAGE = register(
    Stage(
        "format",
        build,
        codes=("F101", "F102", "F103", "F104", "F105", "F106", "F107", "F108", "F109", "F110"),
        refusal="it uses a placeholder that is not allowed",
        default_mode=Mode.ENFORCE,
        required=True,
    )
)

__all__ = ["check", "STAGE"]
