"""``guard rules [CODE]``: every finding code, or one explained, from the catalogue the linter uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from guard.cli import exitcodes


def _sections(code: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """A rule page as a title and (heading, lines) sections, for the text and the Markdown renderer."""
    from guard.findings import CATALOGUE

    entry = CATALOGUE[code]
    title = f"{entry.code} {entry.name} ({entry.severity.value}, stage {entry.stage})"
    sections: list[tuple[str, list[str]]] = [("", [entry.summary[:1].upper() + entry.summary[1:] + "."])]
    if entry.explanation:
        sections.append(("What it catches", [entry.explanation]))
    if entry.why:
        sections.append(("Why", [entry.why]))
    for heading, ex in (("Fails", entry.bad), ("Passes", entry.good)):
        if ex is None:
            continue
        types = dict(ex.claims if ex.claims is not None else ex.slot_types)
        where = f"(domain {ex.domain}; {', '.join(f'{k}: {v}' for k, v in types.items()) or 'no slots'})"
        sections.append((heading, [ex.template, where]))
    if not entry.blocks:
        sections.append(("", ["Never refuses an answer: it is carried as a warning."]))
    elif entry.refusal:
        sections.append(
            (
                "When its stage is enforced, the customer reads",
                [f"I have not given this answer because {entry.refusal.replace('{n}', 'N')}."],
            )
        )
    return title, sections


def rule_text(code: str) -> str:
    """The page for one code: what it catches, why, a failing and a passing example (ruff's rule pages)."""
    title, sections = _sections(code)
    lines = [title, ""]
    for heading, body in sections:
        lines += [heading, *(f"  {x}" for x in body)] if heading else body
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def rule_markdown(code: str) -> str:
    """The same page in Markdown: what SARIF's ``help.markdown`` carries and ``--write-docs`` writes."""
    title, sections = _sections(code)
    lines = [f"# {_md(title)}", ""]
    for heading, body in sections:
        if heading in ("Fails", "Passes"):
            lines += [f"## {heading}", "", "```text", body[0], "```", "", _md(body[1]), ""]
        elif heading:
            lines += [f"## {_md(heading)}", "", *(_md(x) for x in body), ""]
        else:
            lines += [*(_md(x) for x in body), ""]
    return "\n".join(lines).rstrip() + "\n"


def _md(text: str) -> str:
    """Catalogue prose as literal Markdown: characters Markdown reads as syntax are escaped."""
    return "".join("\\" + c if c in "\\`*_[]<>#|" else c for c in text)


def write_docs(directory: Path) -> list[Path]:
    """One ``CODE.md`` per finding code in ``directory``, for a ``help-uri`` to point at."""
    import guard.linting  # noqa: F401  (registers the stages, so their codes carry refusal phrases)
    from guard.findings import CATALOGUE

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for code in sorted(CATALOGUE):
        path = directory / f"{code}.md"
        path.write_text(rule_markdown(code), encoding="utf-8")
        written.append(path)
    return written


def rules_cmd(
    code: str | None = typer.Argument(None, help="A finding code such as S201; without one, list them all."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
    write_docs_to: Path | None = typer.Option(
        None, "--write-docs", help="Write every rule's page as DIR/CODE.md, for a help-uri to point at."
    ),
) -> None:
    """List every finding code with its name, or explain one: what it catches, why, and examples."""
    import guard.linting  # noqa: F401  (registers the stages, so their codes carry refusal phrases)
    from guard.findings import CATALOGUE

    if write_docs_to is not None:
        try:
            written = write_docs(write_docs_to)
        except OSError as exc:
            typer.echo(f"guard: error: {write_docs_to}: cannot write: {exc.strerror or exc}", err=True)
            raise typer.Exit(exitcodes.INVALID_INPUT) from None
        typer.echo(f"wrote {len(written)} rule pages to {write_docs_to}")
        return

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
