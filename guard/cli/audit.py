"""``guard audit``: re-check logged payloads and lint templates in bulk (joblib or Dask).

Exit status 0 after the summary, even when some items could not be read or checked: those are records
(``unreadable``, ``error``) counted in the summary, and a one-line warning on stderr names them. Options that
cannot work (``--now``, ``--jobs``, ``--out``, ``--dask``) give one ``guard: error:`` line before any item is read.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TextIO

import typer

from guard.cli._common import config_file, print_json
from guard.errors import FileError


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
    dask_timeout: float = typer.Option(10.0, "--dask-timeout", help="Seconds to wait for the Dask scheduler."),
    out: str | None = typer.Option(None, "--out", help="Write one JSON line per item here."),
) -> None:
    """Judge every item and print a summary (actions, claim statuses, findings)."""
    from rich.progress import Progress

    from guard.audit import ERROR, AuditSettings, audit, check_options
    from guard.pipeline import load_gate_config
    from guard.records.policy import load_policy

    pol = load_policy(Path(policy)).model_dump(mode="json", exclude_none=True)
    cfg = load_gate_config(config_file(config)).model_dump(mode="json") if config else None
    settings = AuditSettings(policy=pol, db=db, domain=domain, config=cfg, now=now, default_principal=principal)
    check_options(settings, jobs=jobs)
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(_open_out(out)) if out else None
        with Progress(transient=True, disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("auditing", total=None)
            report = audit(
                inputs,
                settings,
                jobs=jobs,
                dask=dask,
                dask_timeout=dask_timeout,
                progress=lambda n: bar.update(task, completed=n),
            )
        if sink is not None:
            try:
                for r in report.records:
                    sink.write(json.dumps(r, ensure_ascii=False) + "\n")
            except OSError as exc:
                raise FileError(f"cannot write {out}: {exc.strerror or exc}", location=str(out)) from None
    failed = [r for r in report.records if r.get("action") == ERROR and r.get("exception")]
    if failed:
        kinds = ", ".join(sorted({str(r["exception"]) for r in failed}))
        first = failed[0]
        print(
            f"guard: warning: {len(failed)} item(s) could not be checked ({kinds}), first {first['source']} "
            f"item {first['index']}; the others were audited",
            file=sys.stderr,
        )
    print_json(report.summary())


def _open_out(path: str) -> TextIO:
    """The --out file, opened before the audit so that a folder that is missing fails at once, not at the end."""
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by the caller's ExitStack)
    except OSError as exc:
        raise FileError(f"cannot write {path}: {exc.strerror or exc}", location=path) from None


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_cmd)
