"""Plots of a monitor report: rates per field over time with the alerts marked.

``plot_report(report, "report.html")`` writes one self-contained HTML page
(inline SVG, the alerts as a table, nothing fetched from anywhere);
``.png`` and ``.svg`` write the figure alone. matplotlib is imported only
here, with the non-interactive Agg backend, so the monitor runs without it;
the page is a Jinja2 template (``templates/report.html.j2``, autoescaped).
"""

from __future__ import annotations

import io
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from guard.errors import DependencyError, FileError, OptionError
from guard.observe.monitor import Report

MAX_FIELDS = 10
"""More lines than this make a plot unreadable; the fields with alerts and the highest rates are kept."""


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
DASHES = ("-", "--", ":", "-.")
"""Each field's line has its own marker and dash pattern beside its colour: fields whose rates are equal draw
on top of each other, and a hollow marker of another shape still shows beneath the one drawn last."""


OUTSIDE: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0, "fontsize": 8}
"""Legends stand to the right of their plot: inside it they covered the alert bands and the lines under them."""


def line_style(i: int) -> dict[str, Any]:
    """The colour index, marker and dash pattern of the ``i``-th field's line (distinct for ``i`` < 40)."""
    return {
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": DASHES[(i // len(MARKERS) + i) % len(DASHES)],
        "markerfacecolor": "none",
        "markersize": 7 - (i % 3),
    }


def _plain(name: str) -> str:
    """A model-written name as matplotlib text: an unescaped ``$`` would start mathtext, which may not parse."""
    return name.replace("$", r"\$")


def _figure(report: Report) -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the plot extra
        raise DependencyError("plotting needs matplotlib: pip install 'guard[plot]'") from exc

    cfg = report.config
    starts = [report.window_start(w) for w in report.windows]
    half = cfg.window / 2
    centres = [s + half for s in starts]
    alerted = {(a.entity, a.field) for a in report.alerts if a.kind == "rate_jump"}

    def peak(series: Any) -> float:
        rates = [series.rate(w, s) or 0.0 for w in series.counts for s in cfg.watched]
        return max(rates, default=0.0)

    chosen = sorted(report.fields, key=lambda s: ((s.entity, s.field) not in alerted, -peak(s)))[:MAX_FIELDS]
    chosen.sort(key=lambda s: s.name)

    rows = len(cfg.watched) + 1
    fig, grid = plt.subplots(rows, 1, figsize=(11, 3.0 * rows), sharex=True, squeeze=False)
    axes = [a[0] for a in grid]
    colours = plt.get_cmap("tab10")
    lines: list[Any] = []
    for ax, status in zip(axes, cfg.watched):
        for i, series in enumerate(chosen):
            values = [series.rate(w, status) for w in report.windows]
            ys = [math.nan if v is None else 100 * v for v in values]
            (line,) = ax.plot(
                centres, ys, linewidth=1.4, color=colours(i % 10), label=_plain(series.name), **line_style(i)
            )
            if ax is axes[0]:
                lines.append(line)
        for a in report.alerts:
            if a.kind == "rate_jump" and a.status == status:
                ax.axvspan(a.window_start, a.window_end, color="red", alpha=0.08)
                ax.plot(
                    [a.window_start + half], [100 * a.current], marker="v", markersize=11, color="red", linestyle="none"
                )
        ax.set_ylabel(f"{status} %")
        ax.set_title(
            f"{status.replace('_', ' ')} rate per field (resolved claims; red = alert)", loc="left", fontsize=10
        )
        ax.grid(alpha=0.3)
    if chosen:
        # Handles and labels given explicitly: a label starting with "_" would otherwise be left out.
        labels = [_plain(s.name) for s in chosen]
        axes[0].legend(lines, labels, **OUTSIDE)

    ax = axes[-1]
    medians = [report.prose_summary(w)["median"] for w in report.windows]
    p90s = [report.prose_summary(w)["p90"] for w in report.windows]
    ax.plot(centres, [math.nan if v is None else v for v in medians], marker=".", color="black", label="median")
    ax.plot(centres, [math.nan if v is None else v for v in p90s], linestyle="--", color="grey", label="p90")
    for a in report.alerts:
        if a.kind == "slot_ratio_drift":
            ax.axvspan(a.window_start, a.window_end, color="red", alpha=0.08)
            ax.plot([a.window_start + half], [a.current], marker="v", markersize=11, color="red", linestyle="none")
    ax.set_ylabel("words per slot")
    ax.set_title("prose words per slot (red = drift)", loc="left", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(**OUTSIDE)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def _html(report: Report, svg: str) -> str:
    """The HTML page: ``templates/report.html.j2`` rendered by Jinja2 with autoescaping on, so a model-written
    field name is text wherever it lands; only matplotlib's SVG (which escapes its own text) goes in as is."""
    try:
        from jinja2 import Environment, PackageLoader, select_autoescape
        from markupsafe import Markup
    except ImportError as exc:  # pragma: no cover - jinja2 is in the plot extra
        raise DependencyError("the HTML report needs jinja2: pip install 'guard[plot]'") from exc

    env = Environment(
        loader=PackageLoader("guard.observe", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        keep_trailing_newline=True,
    )
    watched = report.config.watched
    fields = []
    for series in report.fields:
        resolved = sum(series.resolved(w) for w in series.counts)
        rates = [sum(series.count(w, s) for w in series.counts) / resolved if resolved else None for s in watched]
        fields.append({"name": series.name, "resolved": resolved, "rates": rates})
    span = ""
    if report.windows:
        first, last = report.window_start(report.windows[0]), report.window_start(report.windows[-1])
        span = f"{first:%Y-%m-%d %H:%M} to {last + report.config.window:%Y-%m-%d %H:%M} UTC"
    return env.get_template("report.html.j2").render(
        span=span,
        claims=report.counters["claims"],
        decisions=report.counters["decisions"],
        window=str(report.config.window),
        made=datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        alerts=report.alerts,
        watched=watched,
        fields=fields,
        svg=Markup(svg),  # noqa: S704 (matplotlib's own SVG output, its text already escaped)
    )


def plot_report(report: Report, path: str | Path) -> Path:
    """Write the report's plot to ``path``: ``.html``/``.htm``, ``.png`` or ``.svg``."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".html", ".htm", ".png", ".svg"):
        raise OptionError("the plot file must end in .html, .png or .svg", location=str(target))
    fig = _figure(report)
    import matplotlib.pyplot as plt

    try:
        if suffix == ".png":
            fig.savefig(target, format="png", dpi=110)
        elif suffix == ".svg":
            fig.savefig(target, format="svg")
        else:
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg")
            svg = buffer.getvalue()
            svg = svg[svg.index("<svg") :]
            target.write_text(_html(report, svg), encoding="utf-8")
    except OSError as exc:
        raise FileError(f"cannot write the plot: {exc.strerror}", location=str(target)) from exc
    finally:
        plt.close(fig)
    return target


__all__ = ["plot_report", "MAX_FIELDS"]
