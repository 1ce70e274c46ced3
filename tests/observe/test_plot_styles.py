"""Lines of fields whose rates coincide stay distinguishable: each has its own marker and dash pattern."""

from __future__ import annotations

from guard.observe.monitor import Monitor, MonitorConfig
from guard.observe.plot import MAX_FIELDS, _figure, line_style
from tests.observe.test_monitor import claims


def test_identical_series_get_different_markers_and_dashes() -> None:
    events = []
    for name in ("a", "b", "c"):
        for h in range(3):
            events += claims(h, name, 100, 10)  # the same rate in every window: the lines coincide
    fig = _figure(Monitor(MonitorConfig(baseline_windows=2)).add_all(events).report())
    lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("order.")]
    assert len(lines) == 3
    assert [list(line.get_ydata()) for line in lines[1:]] == [list(lines[0].get_ydata())] * 2
    styles = {(line.get_marker(), line.get_linestyle()) for line in lines}
    assert len(styles) == 3
    assert all(line.get_markerfacecolor() == "none" for line in lines)  # a hollow marker shows what lies beneath


def test_styles_are_distinct_well_past_the_field_cap() -> None:
    pairs = {(line_style(i)["marker"], line_style(i)["linestyle"]) for i in range(40)}
    assert len(pairs) == 40 and MAX_FIELDS <= 40
