"""``guard rules [CODE]``: every finding code, or one explained, from the catalogue the linter uses."""

from __future__ import annotations

import json
import sys

import typer

from guard.cli import exitcodes


def rule_text(code: str) -> str:
    """The page for one code: what it catches, why, a failing and a passing example (ruff's rule pages)."""
    from guard.findings import CATALOGUE

    entry = CATALOGUE[code]
    lines = [
        f"{entry.code} {entry.name} ({entry.severity.value}, stage {entry.stage})",
        "",
        entry.summary[:1].upper() + entry.summary[1:] + ".",
        "",
    ]
    if entry.explanation:
        lines += ["What it catches", f"  {entry.explanation}", ""]
    if entry.why:
        lines += ["Why", f"  {entry.why}", ""]
    for title, ex in (("Fails", entry.bad), ("Passes", entry.good)):
        if ex is None:
            continue
        types = dict(ex.claims if ex.claims is not None else ex.slot_types)
        where = f"  (domain {ex.domain}; {', '.join(f'{k}: {v}' for k, v in types.items()) or 'no slots'})"
        lines += [title, f"  {ex.template}", where, ""]
    if not entry.blocks:
        lines += ["Never refuses an answer: it is carried as a warning.", ""]
    elif entry.refusal:
        lines += [
            "When its stage is enforced, the customer reads",
            f"  I have not given this answer because {entry.refusal.replace('{n}', 'N')}.",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def rules_cmd(
    code: str | None = typer.Argument(None, help="A finding code such as S201; without one, list them all."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """List every finding code with its name, or explain one: what it catches, why, and examples."""
    import guard.linting  # noqa: F401  (registers the stages, so their codes carry refusal phrases)
    from guard.findings import CATALOGUE

    if fmt not in ("text", "json"):
        typer.echo(f"guard: error: --format must be text or json, not {fmt!r}", err=True)
        raise typer.Exit(exitcodes.USAGE)
    if code is not None and code.upper() not in CATALOGUE:
        close = [c for c in CATALOGUE if c[0] == code[:1].upper()] or list(CATALOGUE)
        typer.echo(f"guard: error: no finding code {code!r}; codes are {', '.join(close)}", err=True)
        raise typer.Exit(exitcodes.USAGE)
    codes = [code.upper()] if code is not None else sorted(CATALOGUE)
    if fmt == "json":
        out = []
        for c in codes:
            e = CATALOGUE[c]
            out.append(
                {
                    "code": e.code,
                    "name": e.name,
                    "stage": e.stage,
                    "severity": e.severity.value,
                    "summary": e.summary,
                    "explanation": e.explanation,
                    "why": e.why,
                    "refusal": e.refusal,
                    "blocks": e.blocks,
                    "examples": {
                        k: None
                        if x is None
                        else {
                            "template": x.template,
                            "domain": x.domain,
                            "slot_types": dict(x.slot_types),
                            "claims": None if x.claims is None else dict(x.claims),
                        }
                        for k, x in (("bad", e.bad), ("good", e.good))
                    },
                }
            )
        sys.stdout.write(json.dumps(out if code is None else out[0], indent=2, ensure_ascii=False) + "\n")
    elif code is None:
        for c in codes:
            e = CATALOGUE[c]
            typer.echo(f"{e.code}  {e.name:<34} {e.severity.value:<8} {e.summary}")
    else:
        sys.stdout.write(rule_text(codes[0]))


def register(app: typer.Typer) -> None:
    app.command("rules")(rules_cmd)
