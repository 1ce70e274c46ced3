"""``guard audit``: re-check logged payloads and lint templates in bulk (joblib or Dask).

Exit status 0 after the summary, even when some items could not be read or checked: those are records
(``unreadable``, ``error``) counted in the summary, and a one-line warning on stderr names them. Inputs that
hold nothing to audit (a log written without ``--log-payloads``) give the summary, a line that says so, and 1.
Options that cannot work (``--now``, ``--jobs``, ``--dask``, an unknown ``--domain``) give one ``guard: error:``
line and 2 before any item is read; an ``--out`` file that cannot be written gives 1.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TextIO

import typer

from guard.cli import exitcodes
from guard.cli._common import check_domain, config_file, database_url, load_model, print_json
from guard.errors import FileError


def audit_cmd(
    inputs: list[str] = typer.Argument(
        ...,
        help="Payload .json, .jsonl (payloads or payload log events), template text files, or directories of them.",
    ),
    policy: str = typer.Option(..., "--policy", help="Policy YAML file."),
    db: str = typer.Option(..., "--db", help="Database URL."),
    domain: str | None = typer.Option(None, "--domain", help="Sentence library."),
    config: str | None = typer.Option(None, "--config", help="Gate config YAML."),
    grammar_dir: str | None = typer.Option(
        None, "--grammar-dir", help="Directory with your own <domain>.yaml lexicons."
    ),
    model: str | None = typer.Option(None, "--model", help="A classifier model other than the shipped one."),
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

    if domain is not None:
        check_domain(domain, grammar_dir)
    pol = load_policy(Path(policy)).model_dump(mode="json", exclude_none=True)
    cfg = load_gate_config(config_file(config)).model_dump(mode="json") if config else None
    if model is not None:
        load_model(model)  # a model that cannot load fails here, once, not on every item
    settings = AuditSettings(
        policy=pol,
        db=database_url(db),
        domain=domain,
        config=cfg,
        now=now,
        default_principal=principal,
        grammar_dir=grammar_dir,
        model=str(Path(model).resolve()) if model else None,
    )
    check_options(settings, jobs=jobs)
    inputs = expand_inputs(inputs)
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
    summary = report.summary()
    print_json(summary)
    if not summary["items"]:
        logs = [i for i in inputs if ".jsonl" in Path(i).name]
        why = (
            f"{logs[0]} has no payload events: log them with guard run --log FILE --log-payloads "
            "(or Guard(log=..., log_payloads=True))"
            if logs
            else "the inputs hold no payloads or templates"
        )
        print(f"guard: error: nothing to audit: {why}", file=sys.stderr)
        raise typer.Exit(exitcodes.INVALID_INPUT)


def expand_inputs(inputs: list[str]) -> list[str]:
    """Directories become the payloads, logs and templates under them, chosen as ``guard lint`` chooses."""
    from guard.audit import _JSONL
    from guard.linting.files import find_templates, is_template

    out: list[str] = []
    for i in inputs:
        p = Path(i)
        if not p.is_dir():
            out.append(i)
            continue
        found = find_templates([p], accept=lambda f: is_template(f) or _JSONL.search(f.name) is not None)
        out.extend(str(f) for f in found)
    return out


def _open_out(path: str) -> TextIO:
    """The --out file, opened before the audit so that a folder that is missing fails at once, not at the end."""
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by the caller's ExitStack)
    except OSError as exc:
        raise FileError(f"cannot write {path}: {exc.strerror or exc}", location=path) from None


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_cmd)
