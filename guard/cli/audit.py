"""``guard audit``: re-check logged payloads and lint templates in bulk (joblib or Dask)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from guard.cli._common import config_file, print_json


def audit_cmd(
    inputs: list[str] = typer.Argument(
        ..., help="Payload .json, .jsonl (payloads or payload log events), or template text files."
    ),
    policy: str = typer.Option(..., "--policy", help="Policy YAML file."),
    db: str = typer.Option(..., "--db", help="Database URL."),
    domain: str | None = typer.Option(None, "--domain", help="Sentence library."),
    config: str | None = typer.Option(None, "--config", help="Gate config YAML."),
    principal: str | None = typer.Option(None, "--principal", help="Principal for items that carry none."),
    now: str | None = typer.Option(None, "--now", help="Evaluate freshness at this ISO time."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Worker processes (joblib); -1 for all cores."),
    dask: str | None = typer.Option(None, "--dask", help="Dask scheduler address (tcp://host:8786)."),
    out: str | None = typer.Option(None, "--out", help="Write one JSON line per item here."),
) -> None:
    """Judge every item and print a summary (actions, claim statuses, findings)."""
    from rich.progress import Progress

    from guard.audit import AuditSettings, audit
    from guard.pipeline import load_gate_config
    from guard.records.policy import load_policy

    pol = load_policy(Path(policy)).model_dump(mode="json", exclude_none=True)
    cfg = load_gate_config(config_file(config)).model_dump(mode="json") if config else None
    settings = AuditSettings(policy=pol, db=db, domain=domain, config=cfg, now=now, default_principal=principal)
    with Progress(transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("auditing", total=None)
        report = audit(inputs, settings, jobs=jobs, dask=dask, progress=lambda n: bar.update(task, completed=n))
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            for r in report.records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print_json(report.summary())


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_cmd)
