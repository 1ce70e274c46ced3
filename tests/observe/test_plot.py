"""Plots: the alerted fields are always drawn, and an empty report still draws."""

from __future__ import annotations

from pathlib import Path

from guard.observe.monitor import Monitor, MonitorConfig
from guard.observe.plot import MAX_FIELDS, _figure, plot_report
from tests.observe.test_monitor import claims


def test_alerted_field_is_drawn_even_among_many_busier_ones(tmp_path: Path) -> None:
    events = []
    for f in range(MAX_FIELDS + 5):
        for h in range(5):
            events += claims(h, f"f{f:02d}", 100, 30)  # 30 % contradicted everywhere, steadily
    for h in range(4):
        events += claims(h, "quiet", 400, 4)
    events += claims(4, "quiet", 400, 40)  # 1 % -> 10 %: the only jump, and the lowest rate
    report = Monitor(MonitorConfig(baseline_windows=4)).add_all(events).report()
    assert [a.field for a in report.alerts] == ["quiet"]
    fig = _figure(report)
    _, labels = fig.axes[0].get_legend_handles_labels()
    assert len(labels) == MAX_FIELDS and "order.quiet" in labels
    assert plot_report(report, tmp_path / "r.svg").read_text(encoding="utf-8").count("<svg") == 1


def test_a_report_without_events_still_plots(tmp_path: Path) -> None:
    report = Monitor().report()
    html = plot_report(report, tmp_path / "empty.html").read_text(encoding="utf-8")
    assert "No alerts." in html and "<svg" in html


def test_the_html_page_escapes_model_written_names(tmp_path: Path) -> None:
    name = "<script>alert('x')</script>&"
    events = [e for h in range(4) for e in claims(h, name, 400, 4)] + list(claims(4, name, 400, 40))
    report = Monitor(MonitorConfig(baseline_windows=4)).add_all(events).report()
    assert report.alerts  # the name appears in the alerts table and in the fields table
    page = plot_report(report, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in page
    assert page.count("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;") >= 2
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 1 and "No alerts." not in page
    assert "10.0%" in page or "1.0%" in page  # the rates table is filled


def test_legends_stand_beside_the_plots_not_over_them() -> None:
    events = [e for h in range(5) for f in range(3) for e in claims(h, f"field_{f}", 100, 30 if h < 4 else 60)]
    report = Monitor(MonitorConfig(baseline_windows=4)).add_all(events).report()
    fig = _figure(report)
    fig.canvas.draw()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 2  # the fields' lines and the prose medians
    for ax, legend in legends:
        plot, box = ax.get_window_extent(), legend.get_window_extent()
        assert box.x0 >= plot.x1, (box, plot)
        assert box.x1 <= fig.bbox.x1 + 1  # and still on the figure
