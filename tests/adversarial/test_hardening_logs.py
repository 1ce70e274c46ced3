"""Issue 18 (#16 to #19): logs and audits that hostile names, damaged lines and bad options used to break.

The monitor and the audit read what the model wrote (entity and field names) and what a disk or a person
left in a log, so neither may grow without bound, crash or print a traceback on them. Every test uses real
files (plain and gzip), the real command line through :func:`guard.cli.main.main`, and a SQLite demo.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.audit import AuditSettings, audit
from guard.cli.main import main
from guard.observe.monitor import UNLISTED, Monitor, MonitorConfig, monitor_logs

TS = "2026-12-01T10:00:00+00:00"
CHECKER_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}


def claim_line(field: str = "total", entity: str = "order", status: str = "confirmed", ts: Any = TS) -> bytes:
    event = {"event": "claim", "ts": ts, "entity": entity, "field": field, "status": status}
    return json.dumps(event).encode() + b"\n"


def write_log(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def corrupt_gzip(data: bytes) -> bytes:
    """A gzip member whose deflate stream is damaged after its header (zlib.error, not BadGzipFile)."""
    raw = bytearray(gzip.compress(data))
    for at in range(20, min(len(raw) - 8, 80), 7):
        raw[at] ^= 0xFF
    return bytes(raw)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- 16: invented names cannot grow the monitor ---------------------------------------------------------------
def test_unlisted_label_is_the_metrics_one():
    from guard.pipeline import UNLISTED as METRICS_UNLISTED

    assert UNLISTED == METRICS_UNLISTED


def test_names_not_in_the_policy_fold_into_one_series(tmp_path, capsys):
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(demo.policy().model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    lines = [claim_line("shipped_at"), claim_line("status", status="contradicted")]
    lines += [claim_line(f"invented_{i}", status="not_checkable") for i in range(300)]
    lines += [claim_line(f"f{i}", entity=f"e{i}", status="not_checkable") for i in range(300)]
    log = write_log(tmp_path / "guard.log", *lines)
    code, out, _ = run(capsys, "monitor", str(log), "--policy", str(policy), "--format", "json")
    assert code == 0
    report = json.loads(out)
    names = {(f["entity"], f["field"]): f["totals"]["not_checkable"] for f in report["fields"]}
    assert names == {
        ("order", "shipped_at"): 0,
        ("order", "status"): 0,
        ("order", UNLISTED): 300,
        (UNLISTED, UNLISTED): 300,
    }
    assert report["counters"]["folded"] == 600


def test_without_a_policy_series_stop_at_the_documented_cap(tmp_path):
    lines = [claim_line("total")] + [claim_line(f"invented_{i}", status="not_checkable") for i in range(3000)]
    report = monitor_logs([write_log(tmp_path / "guard.log", *lines)], MonitorConfig(max_fields=100))
    assert len(report.fields) == 101
    assert ("order", "total") in {(s.entity, s.field) for s in report.fields}
    folded = next(s for s in report.fields if (s.entity, s.field) == (UNLISTED, UNLISTED))
    assert sum(folded.totals()) == 3000 - 99 == report.counters["folded"]
    assert "folded" in report.to_text()


def test_default_cap_keeps_memory_and_time_of_distinct_names_bounded(tmp_path):
    """20,000 distinct names over 500 windows: the JSON and text reports stay small and quick."""
    start = 1_790_000_000
    lines = [claim_line(f"f{i}", ts=start + 3600 * (i % 500), status="not_checkable") for i in range(20_000)]
    log = write_log(tmp_path / "guard.log", *lines)
    began = time.perf_counter()
    report = monitor_logs([log])
    text = report.to_text(width=200)
    body = report.to_json()
    elapsed = time.perf_counter() - began
    assert len(report.fields) <= MonitorConfig().max_fields + 1
    assert len(body) < 5_000_000 and len(text) < 5_000_000
    assert elapsed < 60


class _CountedLookups(dict):
    """The monitor's series table, counting how often the alert pass looks a field up."""

    lookups = 0

    def __getitem__(self, key):
        self.lookups += 1
        return super().__getitem__(key)


def test_rate_alerts_cost_grows_with_cells_not_windows_times_fields():
    """A field seen in one window is not revisited in every other window: the alert pass looks each field up
    once per window it has claims in (n fields in n windows: n look-ups, not n * n)."""

    def lookups(n: int) -> int:
        m = Monitor(MonitorConfig(min_count=1, max_fields=n + 1))
        for i in range(n):
            m.add({"event": "claim", "ts": 3600 * i, "entity": "e", "field": f"f{i}", "status": "confirmed"})
            m.add({"event": "claim", "ts": 3600 * i + 1, "entity": "e", "field": f"f{i}", "status": "confirmed"})
        m._claims = counted = _CountedLookups(m._claims)
        report = m.report()
        assert len(report.windows) == n and len(report.fields) == n
        return counted.lookups

    assert lookups(1000) == 1000
    assert lookups(8000) == 8000


# -- 17: names reach rich and matplotlib as plain text -----------------------------------------------------------
HOSTILE_NAMES = ["[/]", "[bold red]loud[/]", "trailing\\", "a$\\undefinedcommand$", "_hidden", "$x$", "[link=x]y"]


def test_field_names_that_look_like_markup_print_as_written(tmp_path, capsys):
    log = write_log(tmp_path / "guard.log", *[claim_line(n, status="contradicted") for n in HOSTILE_NAMES])
    for _ in range(2):
        code, out, err = run(capsys, "monitor", str(log))
        assert code == 0, err
        for name in HOSTILE_NAMES:
            assert f"order.{name}" in out
    report = monitor_logs([log], MonitorConfig(min_count=1))
    assert all(f"order.{n}" in report.to_text(width=400) for n in HOSTILE_NAMES)


def test_alerts_with_markup_names_print_as_written(tmp_path):
    lines = [claim_line("[/]", ts=3600 * w) for w in range(3) for _ in range(40)]
    lines += [claim_line("[/]", ts=3600 * 3, status="contradicted") for _ in range(40)]
    report = monitor_logs([write_log(tmp_path / "guard.log", *lines)], MonitorConfig(baseline_windows=3))
    assert report.alerts and "order.[/] contradicted rate" in report.to_text(width=300)


def test_field_names_reach_the_plot_legend_as_written(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from guard.observe.plot import _figure

    log = write_log(tmp_path / "guard.log", *[claim_line(n, status="contradicted") for n in HOSTILE_NAMES])
    for suffix in (".png", ".svg", ".html"):
        code, _, err = run(capsys, "monitor", str(log), "--plot", str(tmp_path / f"plot{suffix}"))
        assert code == 0, err
        assert (tmp_path / f"plot{suffix}").stat().st_size > 0
    fig = _figure(monitor_logs([log]))
    shown = [t.get_text().replace("\\$", "$") for t in fig.axes[0].get_legend().get_texts()]
    assert sorted(shown) == sorted(f"order.{n}" for n in HOSTILE_NAMES)


# -- 18: damaged lines are counted, not fatal ----------------------------------------------------------------------
DAMAGED = {
    "deep nesting": b"[" * 100_000 + b"\n",
    "deep object": b'{"a":' * 50_000 + b"\n",
    "5,000-digit integer": b'{"event":"claim","ts":' + b"9" * 5000 + b"}\n",
    "5,000-digit value": b'{"event":"claim","ts":"' + TS.encode() + b'","latency_ms":' + b"9" * 5000 + b"}\n",
    "not UTF-8": b'{"event":"claim","field":"\xff"}\n',
}
UNTIMED = {
    "year 1 with a positive offset": claim_line(ts="0001-01-01T00:00:00+01:00"),
    "year 9999 with a negative offset": claim_line(ts="9999-12-31T23:59:59-01:00"),
    "epoch seconds beyond the calendar": claim_line(ts=1e18),
    "epoch seconds before the calendar": claim_line(ts=-62135596801),
    "huge epoch": claim_line(ts=10**300),
}


@pytest.mark.parametrize("name", list(DAMAGED))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_damaged_line_is_counted_as_malformed(tmp_path, capsys, name, fmt):
    log = write_log(tmp_path / "guard.log", claim_line(), DAMAGED[name], claim_line())
    code, out, err = run(capsys, "monitor", str(log), "--format", fmt)
    assert code == 0 and "Traceback" not in err
    report = monitor_logs([log])
    assert report.read["malformed"] == 1 and report.counters["claims"] == 2


@pytest.mark.parametrize("name", list(UNTIMED))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_time_beyond_the_calendar_is_counted_as_untimed(tmp_path, capsys, name, fmt):
    log = write_log(tmp_path / "guard.log", claim_line(), UNTIMED[name], claim_line())
    code, _, err = run(capsys, "monitor", str(log), "--format", fmt, "--window", "1d")
    assert code == 0 and "Traceback" not in err
    report = monitor_logs([log], MonitorConfig(window=__import__("datetime").timedelta(days=7)))
    assert report.counters["untimed"] == 1 and report.counters["claims"] == 2
    report.to_text()
    report.to_json()


def test_corrupt_gzip_member_is_counted_and_the_other_files_read(tmp_path, capsys):
    log = write_log(tmp_path / "guard.log", claim_line(), claim_line())
    (tmp_path / "guard.log.1.gz").write_bytes(corrupt_gzip(claim_line() * 2000))
    (tmp_path / "guard.log.2.gz").write_bytes(gzip.compress(claim_line() * 3))
    code, out, err = run(capsys, "monitor", str(log), "--format", "json")
    assert code == 0 and "Traceback" not in err
    report = json.loads(out)
    assert report["read"]["malformed"] >= 1
    assert report["counters"]["claims"] >= 5
    assert any("guard.log.1.gz" in e for e in report["read"]["malformed_examples"])


# -- audit: the same damage, and one bad item --------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_files(sqlite_demo, tmp_path_factory):
    url, policy, _ = sqlite_demo
    d = tmp_path_factory.mktemp("audit_logs")
    pfile = d / "policy.yaml"
    pfile.write_text(yaml.safe_dump(policy.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    cfile = d / "gate.yaml"
    cfile.write_text(yaml.safe_dump(CHECKER_ONLY), encoding="utf-8")
    return url, pfile, cfile


def good_payload_line() -> bytes:
    return json.dumps(demo.payloads()["answer"]).encode() + b"\n"


def audit_args(demo_files, *inputs: Path | str) -> list[str]:
    url, pfile, cfile = demo_files
    return ["audit", *map(str, inputs), "--policy", str(pfile), "--db", url, "--config", str(cfile)]


def settings_for(demo_files) -> AuditSettings:
    url, pfile, _ = demo_files
    return AuditSettings(
        policy=yaml.safe_load(pfile.read_text()),
        db=url,
        domain="orders",
        config=CHECKER_ONLY,
        now=demo.NOW.isoformat(),
        default_principal=demo.PRINCIPAL,
    )


@pytest.mark.parametrize("name", list(DAMAGED))
def test_audit_counts_a_damaged_line_as_invalid_and_audits_the_rest(tmp_path, capsys, demo_files, name):
    good = good_payload_line()
    items = write_log(tmp_path / "payloads.jsonl", good, DAMAGED[name], good)
    out = tmp_path / "records.jsonl"
    code, stdout, err = run(capsys, *audit_args(demo_files, items), "--out", str(out), "--domain", "orders")
    assert code == 0 and "Traceback" not in err, err
    summary = json.loads(stdout)
    assert summary["items"] == 3 and summary["actions"].get("invalid") == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["index"] for r in records] == [1, 2, 3]


def test_audit_of_a_corrupt_gzip_member_reports_it_and_audits_the_other_files(tmp_path, capsys, demo_files):
    good = good_payload_line()
    bad = tmp_path / "guard.jsonl.1.gz"
    bad.write_bytes(corrupt_gzip(good * 500))
    fine = write_log(tmp_path / "more.jsonl", good, good)
    code, stdout, err = run(capsys, *audit_args(demo_files, bad, fine), "--domain", "orders")
    assert code == 0 and "Traceback" not in err, err
    summary = json.loads(stdout)
    assert summary["actions"].get("unreadable") == 1
    assert summary["items"] - summary["actions"]["unreadable"] >= 2


# -- 19: one bad item, and bad options ------------------------------------------------------------------------------
def test_one_item_that_raises_is_reported_and_the_rest_audited(tmp_path, capsys, demo_files, monkeypatch):
    from guard.pipeline import Guard

    real_run = Guard.run

    def flaky(self: Guard, payload: Any, **kw: Any) -> Any:
        if kw.get("request_id", "").endswith(":2"):
            raise RuntimeError("a bug somewhere below the gate")
        return real_run(self, payload, **kw)

    monkeypatch.setattr(Guard, "run", flaky)
    good = good_payload_line()
    items = write_log(tmp_path / "payloads.jsonl", good, good, good)
    out = tmp_path / "records.jsonl"
    code, stdout, err = run(capsys, *audit_args(demo_files, items), "--out", str(out), "--domain", "orders")
    assert "Traceback" not in err and "RuntimeError" in err and "1 item" in err
    assert code == 0
    summary = json.loads(stdout)
    assert summary["items"] == 3 and summary["actions"]["error"] == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[1]["action"] == "error" and "RuntimeError" in records[1]["error"]
    assert records[0]["action"] == records[2]["action"] != "error"
    assert "a bug somewhere" not in records[1]["error"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--now", "garbage"], "--now"),
        (["--jobs", "0"], "--jobs"),
        (["--jobs", "-3"], "--jobs"),
        (["--out", "/nonexistent/x"], "/nonexistent/x"),
    ],
)
def test_bad_audit_options_are_one_line_errors(tmp_path, capsys, demo_files, option, expected):
    items = write_log(tmp_path / "payloads.jsonl", good_payload_line())
    code, stdout, err = run(capsys, *audit_args(demo_files, items), *option)
    assert code == (1 if option[0] == "--out" else 2) and stdout == ""  # a bad option value is a usage error
    assert err.startswith("guard: error:") and expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_now_garbage_is_an_option_error_in_python(demo_files, tmp_path):
    from guard.errors import OptionError

    items = write_log(tmp_path / "payloads.jsonl", good_payload_line())
    bad = AuditSettings(**{**settings_for(demo_files).__dict__, "now": "garbage"})
    with pytest.raises(OptionError):
        audit([items], bad)
    with pytest.raises(OptionError):
        audit([items], settings_for(demo_files), jobs=0)


def test_unreachable_dask_scheduler_is_a_one_line_error(tmp_path, capsys, demo_files):
    pytest.importorskip("dask.distributed")
    items = write_log(tmp_path / "payloads.jsonl", good_payload_line())
    address = f"tcp://127.0.0.1:{closed_port()}"
    began = time.monotonic()
    code, _, err = run(capsys, *audit_args(demo_files, items), "--dask", address, "--dask-timeout", "2")
    assert time.monotonic() - began < 20
    assert code == 1 and err.startswith("guard: error:") and address in err and "Traceback" not in err


def test_missing_dask_install_names_the_extra(tmp_path, capsys, demo_files, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    monkeypatch.setitem(sys.modules, "dask", None)
    items = write_log(tmp_path / "payloads.jsonl", good_payload_line())
    code, _, err = run(capsys, *audit_args(demo_files, items), "--dask", "tcp://127.0.0.1:8786")
    assert code == 1 and err.startswith("guard: error:") and "pip install 'guard[dask]'" in err
    assert "Traceback" not in err


# -- 24: for any log bytes, monitor and audit finish and count what they could not read ------------------------------
FRAGMENTS = st.sampled_from(
    [
        claim_line(),
        claim_line("[/]", status="contradicted"),
        claim_line("a$\\x$", ts=0),
        good_payload_line(),
        b'{"event":"decision","ts":"' + TS.encode() + b'","action":"answer","prose_per_slot":1e999}\n',
        b'{"event":"payload","payload":' + b"[" * 3000 + b"}\n",
        b"\n",
        b"\r\n",
        *DAMAGED.values(),
        *UNTIMED.values(),
    ]
)
LOG_BYTES = st.lists(st.one_of(FRAGMENTS, st.binary(max_size=60)), max_size=12).map(b"".join)
PROPS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def packed(data: bytes, how: str) -> bytes:
    if how == "gzip":
        return gzip.compress(data)
    if how == "corrupt gzip":
        return corrupt_gzip(data)
    if how == "cut gzip":
        return gzip.compress(data)[: max(10, len(gzip.compress(data)) // 2)]
    return data


def nonblank_lines(data: bytes) -> int:
    return sum(1 for line in data.split(b"\n") if line.strip())


HOW = st.sampled_from(["plain", "gzip", "corrupt gzip", "cut gzip"])


def monitor_counts_what_it_could_not_read(folder: Path, data: bytes, how: str) -> None:
    log = write_log(folder / ("guard.log.1.gz" if how != "plain" else "guard.log"), packed(data, how))
    report = monitor_logs([log], MonitorConfig(min_count=1))
    report.to_text(width=160)
    json.loads(report.to_json())
    read = report.read
    assert report.counters["events"] == read["events"]
    if how in ("plain", "gzip"):
        assert read["events"] + read["malformed"] == nonblank_lines(data)
    elif how == "cut gzip":
        assert read["events"] <= nonblank_lines(data)
    # a corrupt member may inflate to other bytes before its check fails: only the reading must end well


def audit_counts_what_it_could_not_read(folder: Path, demo_files: Any, data: bytes, how: str) -> None:
    log = write_log(folder / ("guard.jsonl.1.gz" if how != "plain" else "guard.jsonl"), packed(data, how))
    report = audit([log], settings_for(demo_files))
    summary = report.summary()
    assert summary["items"] == len(report.records) == sum(summary["actions"].values())
    assert all(r.get("action") != "error" for r in report.records)
    unreadable = [i for i, r in enumerate(report.records) if r["action"] == "unreadable"]
    assert unreadable in ([], [len(report.records) - 1])
    if how in ("plain", "gzip"):
        assert len(report.records) == expected_items(data) and not unreadable
    elif how == "cut gzip":
        assert len(report.records) <= expected_items(data) + 1


@PROPS
@given(data=LOG_BYTES, how=HOW)
def test_monitor_finishes_on_any_log_bytes_and_counts_what_it_could_not_read(tmp_path_factory, data, how):
    monitor_counts_what_it_could_not_read(tmp_path_factory.mktemp("any_log"), data, how)


@settings(PROPS, max_examples=25)
@given(data=LOG_BYTES, how=HOW)
def test_audit_finishes_on_any_log_bytes_and_counts_what_it_could_not_read(tmp_path_factory, demo_files, data, how):
    audit_counts_what_it_could_not_read(tmp_path_factory.mktemp("any_audit"), demo_files, data, how)


FUZZ_EXAMPLES = int(os.environ.get("GUARD_FUZZ_EXAMPLES", "20000"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.mark.fuzz
@FUZZ
@given(data=LOG_BYTES, how=HOW)
def test_fuzz_monitor_on_any_log_bytes(tmp_path_factory, data, how):
    monitor_counts_what_it_could_not_read(tmp_path_factory.mktemp("fuzz_log"), data, how)


@pytest.mark.fuzz
@settings(FUZZ, max_examples=max(1, FUZZ_EXAMPLES // 4))
@given(data=LOG_BYTES, how=HOW)
def test_fuzz_audit_on_any_log_bytes(tmp_path_factory, demo_files, data, how):
    audit_counts_what_it_could_not_read(tmp_path_factory.mktemp("fuzz_audit"), demo_files, data, how)


def expected_items(data: bytes) -> int:
    """Non-blank lines, less the claim and decision events (they carry no payload to re-check)."""
    count = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            event = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):
            event = None
        if isinstance(event, dict) and isinstance(event.get("event"), str) and event["event"] != "payload":
            continue
        count += 1
    return count
