"""``guard monitor`` end to end: rotated logs in, tables, JSON and plots out, exit codes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from guard.cli import main as cli
from guard.observe.events import EventLog
from guard.observe.simulate import START, Jump, simulate_events


@pytest.fixture(scope="module")
def jump_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "guard.log"
    jump = Jump("order", "shipped_at", "contradicted", 0.25, START + timedelta(hours=20))
    with EventLog(path, max_bytes=400_000, backup_count=20) as log:
        for event in simulate_events(seed=5, hours=24, requests_per_hour=150, jumps=[jump]):
            log.emit(event)
    return path


def guard(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["monitor", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_rotated_log_is_read_whole_and_the_jump_reported(jump_log: Path, capsys) -> None:
    assert len(list(jump_log.parent.glob("guard.log.*[0-9]"))) >= 2
    code, out, _ = guard(capsys, str(jump_log), "--format", "json", "--baseline", "6")
    assert code == 0
    data = json.loads(out)
    assert len(data["read"]["files"]) >= 3 and data["read"]["malformed"] == 0
    assert data["counters"]["decisions"] == 24 * 150
    flagged = {(a["entity"], a["field"], a["status"]) for a in data["alerts"] if a["kind"] == "rate_jump"}
    assert flagged == {("order", "shipped_at", "contradicted")}
    assert min(a["window_start"] for a in data["alerts"]) == (START + timedelta(hours=20)).isoformat()


def test_text_output_and_fail_on_alert(jump_log: Path, capsys) -> None:
    code, out, _ = guard(capsys, str(jump_log), "--tail", "5", "--fail-on-alert")
    assert code == 1
    assert "Alerts (" in out and "order.shipped_at contradicted rate" in out
    assert out.count("2026-12-01 2") >= 5  # the last five windows are listed


def test_no_alert_exits_zero_even_with_fail_on_alert(tmp_path: Path, capsys) -> None:
    path = tmp_path / "calm.log"
    with EventLog(path) as log:
        for event in simulate_events(seed=2, hours=6, requests_per_hour=100):
            log.emit(event)
    code, out, _ = guard(capsys, str(path), "--fail-on-alert", "--window", "30m")
    assert code == 0 and "No alerts." in out


@pytest.mark.parametrize("suffix, magic", [(".html", b"<!DOCTYPE html>"), (".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_files(jump_log: Path, tmp_path: Path, capsys, suffix: str, magic: bytes) -> None:
    target = tmp_path / f"report{suffix}"
    code, out, _ = guard(capsys, str(jump_log), "--plot", str(target), "--format", "json")
    assert code == 0
    body = target.read_bytes()
    assert body.startswith(magic)
    if suffix == ".html":
        text = body.decode()
        assert "<svg" in text and "http://" not in text.split("<svg", 1)[0]  # nothing fetched
        assert "order.shipped_at contradicted rate" in text


def test_malformed_lines_are_reported_not_fatal(tmp_path: Path, capsys) -> None:
    path = tmp_path / "dirty.log"
    good = [json.dumps(e) for e in simulate_events(seed=1, hours=1, requests_per_hour=20)]
    path.write_text("\n".join(good[:10] + ["{half a line", "42"] + good[10:]) + "\n", encoding="utf-8")
    code, out, _ = guard(capsys, str(path))
    assert code == 0
    assert "2 malformed line(s) skipped" in out and "dirty.log:11" in out


@pytest.mark.parametrize(
    "args, says",
    [
        (["--window", "soon"], "--window"),
        (["--format", "xml"], "--format"),
        (["--alpha", "2"], "alpha must be between 0 and 1"),
        (["--baseline-from", "2026-12-01T00:00:00"], "both a start and an end"),
        (["--baseline-from", "yesterday", "--baseline-to", "today"], "--baseline-from"),
        (["--watch", "contradicted,wrong"], "unknown status wrong"),
        (["--plot", "out.pdf"], "must end in .html, .png or .svg"),
    ],
)
def test_bad_arguments_are_one_line_errors(jump_log: Path, capsys, args: list[str], says: str) -> None:
    code, out, err = guard(capsys, str(jump_log), *args)
    assert code == 2  # a usage error
    assert says in err and "Traceback" not in err


def test_missing_log_is_named(tmp_path: Path, capsys) -> None:
    code, _, err = guard(capsys, str(tmp_path / "absent.log"))
    assert code == 1 and "absent.log: no such log file" in err
