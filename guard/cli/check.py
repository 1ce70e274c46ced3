"""``guard check``: verify one payload against the system of record and print the decision."""

from __future__ import annotations

from pathlib import Path

import typer

from guard.cli._common import database_url, parse_now, print_json, read_text


def check_cmd(
    payload: str = typer.Argument(..., help="Payload JSON file, or - for standard input."),
    policy: str = typer.Option(..., "--policy", help="Policy YAML file."),
    db: str = typer.Option(
        ..., "--db", help="Database URL (sqlite:///file.db, postgresql+psycopg://..., mysql+pymysql://...)."
    ),
    principal: str | None = typer.Option(None, "--principal", help="Caller's id for row-level scope."),
    now: str | None = typer.Option(None, "--now", help="Evaluate freshness at this ISO time."),
    values: bool = typer.Option(True, "--values/--no-values", help="Include claimed and stored values in results."),
) -> None:
    """Check every claim and print the decision as JSON (exit 0 for any decision, 1 for invalid input)."""
    from guard.pipeline import verify
    from guard.records.policy import load_policy
    from guard.records.store import RecordStore

    text = read_text(payload)
    pol = load_policy(Path(policy))
    with RecordStore(database_url(db), pol) as store:
        decision = verify(text, pol, store, principal=principal, now=parse_now(now))
    print_json(decision.to_dict(include_values=values))


def register(app: typer.Typer) -> None:
    app.command("check")(check_cmd)
