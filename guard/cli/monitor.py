"""``guard monitor``: per-field claim rates over time windows from event logs, with alerts.

Exit status: 0 after a report, alerts or not (a monitor that fails on its
findings breaks cron pipelines that only want the report); with
``--fail-on-alert`` an alert gives 1, for a CI or cron job that should page.
Bad arguments give 2 and unreadable logs 1, each with a one-line message (see ``guard.cli.exitcodes``).
"""

from __future__ import annotations

import typer

from guard.cli import exitcodes


def monitor_cmd(
    logs: list[str] = typer.Argument(
        ..., help="Event logs (JSON Lines, .gz too); each brings its rotated .1, .2, ... files; - reads stdin."
    ),
    window: str = typer.Option("1h", "--window", help="Window length: 30m, 1h, 1d, 1h30m ..."),
    baseline: int = typer.Option(24, "--baseline", help="Compare each window with the preceding N windows."),
    baseline_from: str | None = typer.Option(
        None, "--baseline-from", help="Fixed baseline start (ISO time); use with --baseline-to instead of --baseline."
    ),
    baseline_to: str | None = typer.Option(None, "--baseline-to", help="Fixed baseline end (ISO time, exclusive)."),
    min_count: int = typer.Option(
        30, "--min-count", help="Fewest resolved claims (or templates) on each side to test."
    ),
    alpha: float = typer.Option(0.01, "--alpha", help="Significance level per window (Bonferroni over fields)."),
    min_delta: float = typer.Option(
        0.01, "--min-delta", help="Smallest rise in a rate to flag (0.01: one percentage point)."
    ),
    min_shift: float = typer.Option(1.0, "--min-shift", help="Smallest median change in prose words per slot to flag."),
    watch: str = typer.Option("contradicted,not_found", "--watch", help="Statuses whose rate jumps are flagged."),
    domain: str | None = typer.Option(None, "--domain", help="Only events of this domain."),
    policy: str | None = typer.Option(
        None, "--policy", help="Policy YAML: fields it does not name fold into one _unlisted series, as in metrics."
    ),
    max_fields: int = typer.Option(
        500, "--max-fields", help="Most field series kept; claims of further names fold into _unlisted._unlisted."
    ),
    output: str = typer.Option("text", "--format", help="text or json."),
    tail: int = typer.Option(0, "--tail", help="Show only the last N windows in the text rate table (0: all)."),
    plot: str | None = typer.Option(None, "--plot", help="Also write a plot: report.html, .png or .svg."),
    fail_on_alert: bool = typer.Option(False, "--fail-on-alert", help="Exit 1 when any alert is raised."),
) -> None:
    """Stream event logs in constant memory and flag fields whose contradicted or not-found rate jumped.

    Exit 0 after a report, alerts or not; with --fail-on-alert, 1 when any alert is raised.
    """
    from rich.console import Console

    from guard.errors import OptionError
    from guard.observe.monitor import MonitorConfig, monitor_logs, parse_time, parse_window, render

    if output not in ("text", "json"):
        raise OptionError(f"--format must be text or json, not {output!r}", location="--format")
    if tail < 0:
        raise OptionError(f"--tail must be 0 (all windows) or a number of windows, not {tail}", location="--tail")
    config = MonitorConfig(
        window=parse_window(window),
        baseline_windows=baseline,
        baseline_start=parse_time(baseline_from, location="--baseline-from") if baseline_from else None,
        baseline_end=parse_time(baseline_to, location="--baseline-to") if baseline_to else None,
        min_count=min_count,
        alpha=alpha,
        watched=tuple(s.strip() for s in watch.split(",") if s.strip()),
        min_delta=min_delta,
        min_shift=min_shift,
        domain=domain,
        max_fields=max_fields,
        listed=_listed(policy) if policy else None,
    )
    report = monitor_logs(logs, config)
    if plot:
        from guard.observe.plot import plot_report

        plot_report(report, plot)
    if output == "json":
        typer.echo(report.to_json())
    else:
        console = Console(highlight=False)
        if not console.is_terminal:  # a file or a pipe gets wide tables, not 80 columns
            console = Console(highlight=False, width=140)
        render(report, console, tail=tail)
        if plot:
            typer.echo(f"plot written to {plot}")
    if fail_on_alert and report.alerts:
        raise typer.Exit(exitcodes.FINDINGS)


def _listed(path: str) -> frozenset[tuple[str, str]]:
    """The policy's ``(entity, field)`` pairs: the only names that get a series of their own."""
    from pathlib import Path

    from guard.records.policy import load_policy

    policy = load_policy(Path(path))
    return frozenset((name, field) for name, entity in policy.entities.items() for field in entity.fields)


def register(app: typer.Typer) -> None:
    app.command("monitor")(monitor_cmd)
