"""``guard run``: the whole gate on one payload (lint, check, decide, render), printing the decision."""

from __future__ import annotations

from pathlib import Path

import typer

from guard.cli._common import check_domain, config_file, database_url, load_model, parse_now, print_json, read_text


def run_cmd(
    payload: str = typer.Argument(..., help="Payload JSON file, or - for standard input."),
    policy: str = typer.Option(..., "--policy", help="Policy YAML file."),
    db: str = typer.Option(..., "--db", help="Database URL."),
    domain: str | None = typer.Option(None, "--domain", help="Sentence library (orders, billing, account, ...)."),
    principal: str | None = typer.Option(None, "--principal", help="Caller's id for row-level scope."),
    now: str | None = typer.Option(None, "--now", help="Evaluate freshness at this ISO time."),
    config: str | None = typer.Option(None, "--config", help="Gate config YAML (stages per domain)."),
    grammar_dir: str | None = typer.Option(
        None, "--grammar-dir", help="Directory with your own <domain>.yaml lexicons."
    ),
    model: str | None = typer.Option(None, "--model", help="A classifier model other than the shipped one."),
    log: str | None = typer.Option(None, "--log", help="Append the result to this JSON Lines log."),
    log_payloads: bool = typer.Option(
        False, "--log-payloads", help="Also log the payload itself (with --log), so guard audit can re-check it."
    ),
) -> None:
    """Run the gate on PAYLOAD and print the decision with its lint findings (exit 0 for any decision)."""
    from guard.errors import OptionError
    from guard.pipeline import Guard

    if log_payloads and not log:
        raise OptionError("--log-payloads needs --log FILE", location="--log-payloads")
    if domain is not None:
        check_domain(domain, grammar_dir)
    when = parse_now(now)
    text = read_text(payload)
    url = database_url(db)
    with Guard(
        Path(policy),
        url,
        domain=domain,
        config=config_file(config) if config else None,
        log=log,
        grammar_dir=grammar_dir,
        classifier=load_model(model),
        log_payloads=log_payloads,
    ) as gate:
        decision = gate.run(text, principal=principal, now=when)
    print_json(decision.to_dict())


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
