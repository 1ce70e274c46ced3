"""The event log: one whole line per event, across threads, processes and rotations."""

from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard.errors import GuardError
from guard.observe.events import EventLog, ReadStats, log_files, read_events


def _claim(i: int, writer: str) -> dict:
    return {
        "event": "claim",
        "request_id": f"{writer}-{i}",
        "entity": "order",
        "field": "shipped_at",
        "status": "confirmed",
        "claimed": "2026-11-30",
        "actual": "2026-11-30",
        "note": "x" * (i % 37),
    }


def test_emit_adds_timestamp_and_drops_values_by_default(tmp_path: Path) -> None:
    with EventLog(tmp_path / "g.log") as log:
        log.emit(_claim(1, "a"))
    (event,) = list(read_events([tmp_path / "g.log"]))
    assert event["ts"].endswith("+00:00")
    assert "claimed" not in event and "actual" not in event
    assert event["request_id"] == "a-1"


def test_values_kept_when_opted_in_and_ts_not_overwritten(tmp_path: Path) -> None:
    with EventLog(tmp_path / "g.log", include_values=True) as log:
        log.emit({**_claim(1, "a"), "ts": "2026-01-01T00:00:00+00:00"})
    (event,) = list(read_events([tmp_path / "g.log"]))
    assert event["claimed"] == "2026-11-30" and event["actual"] == "2026-11-30"
    assert event["ts"] == "2026-01-01T00:00:00+00:00"


def test_emit_does_not_mutate_the_callers_event(tmp_path: Path) -> None:
    event = _claim(1, "a")
    with EventLog(tmp_path / "g.log") as log:
        log.emit(event)
    assert "claimed" in event and "ts" not in event


def test_rotation_keeps_backup_count_files_and_reads_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    with EventLog(path, max_bytes=400, backup_count=3) as log:
        for i in range(40):
            log.emit({"event": "decision", "i": i})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["g.log", "g.log.1", "g.log.2", "g.log.3", "g.log.lock"]
    assert all(p.stat().st_size <= 400 for p in tmp_path.glob("g.log*"))
    seen = [e["i"] for e in read_events([path])]
    assert seen == sorted(seen)  # time order across the rotated files
    assert seen[-1] == 39 and len(seen) < 40  # the oldest were rotated away


def test_compressed_rotation_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    with EventLog(path, max_bytes=300, backup_count=50, compress=True) as log:
        for i in range(60):
            log.emit({"event": "decision", "i": i})
    assert (tmp_path / "g.log.1.gz").exists()
    with gzip.open(tmp_path / "g.log.1.gz", "rt") as f:
        assert json.loads(f.readline())["event"] == "decision"
    assert [e["i"] for e in read_events([path])] == list(range(60))


def test_glob_of_a_log_and_its_backups_reads_each_file_once(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    with EventLog(path, max_bytes=200, backup_count=5) as log:
        for i in range(20):
            log.emit({"i": i})
    every = sorted(tmp_path.glob("g.log.[0-9]*")) + [path]
    files = log_files(every)
    assert len(files) == len(set(files)) == len(every)
    assert files[-1] == path
    assert [e["i"] for e in read_events(every)] == list(range(20))


def test_malformed_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "g.log"
    path.write_bytes(b'{"a": 1}\nnot json\n[1, 2]\n\n{"a": 2}\n\xff\xfe\n{"a": 3}')
    stats = ReadStats()
    assert [e["a"] for e in read_events([path], stats)] == [1, 2, 3]
    assert stats.malformed == 3 and stats.events == 3
    assert stats.examples[0].endswith(":2: not JSON (JSONDecodeError)")


def test_missing_log_is_a_guard_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(GuardError) as info:
        list(read_events([tmp_path / "nope.log"]))
    assert "nope.log" in str(info.value)


def test_emit_after_close_and_non_mapping_are_guard_errors(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "g.log")
    with pytest.raises(GuardError):
        log.emit(["not", "a", "dict"])  # type: ignore[arg-type]
    log.close()
    with pytest.raises(GuardError, match="closed"):
        log.emit({"event": "claim"})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=4), max_size=8), st.integers(60, 400))
def test_any_events_round_trip_through_rotation(tmp_path: Path, events: list[dict], max_bytes: int) -> None:
    folder = tmp_path / os.urandom(4).hex()
    with EventLog(folder / "g.log", max_bytes=max_bytes, backup_count=10_000, include_values=True) as log:
        for e in events:
            log.emit({"ts": "t", **e})
    expected = [{"ts": "t", **e} for e in events]
    assert list(read_events([folder / "g.log"])) == expected


@given(st.lists(st.binary(max_size=30), max_size=20))
@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_reading_garbage_never_crashes_and_accounts_for_every_line(tmp_path: Path, chunks: list[bytes]) -> None:
    path = tmp_path / f"{os.urandom(4).hex()}.log"
    path.write_bytes(b"\n".join(c.replace(b"\n", b" ") for c in chunks))
    stats = ReadStats()
    events = list(read_events([path], stats))
    assert stats.events == len(events)
    non_blank = sum(1 for line in path.read_bytes().split(b"\n") if line.strip())
    assert stats.events + stats.malformed == non_blank


# -- concurrency ---------------------------------------------------------------
def _writer(path: str, writer: int, threads: int, lines: int, max_bytes: int, compress: bool = False) -> None:
    log = EventLog(path, max_bytes=max_bytes, backup_count=100_000, compress=compress)

    def run(t: int) -> None:
        for i in range(lines):
            log.emit(_claim(i, f"p{writer}t{t}"))

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    log.close()


def _check_all_lines(path: Path, writers: list[str], lines: int) -> list[Path]:
    seen: dict[str, list[int]] = {w: [] for w in writers}
    files = log_files([path])
    assert len(files) > 3, "the test must force rotations"
    for f in files:
        body = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        for raw in body.splitlines():
            event = json.loads(raw)  # every line is whole, valid JSON
            writer, i = event["request_id"].rsplit("-", 1)
            seen[writer].append(int(i))
    for writer, numbers in seen.items():
        assert numbers == list(range(lines)), writer  # none lost, none doubled, in order per thread
    return files


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_processes_and_threads_share_a_rotating_log(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / "shared.log"
    processes, threads, lines = 4, 3, 150
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_writer, args=(str(path), p, threads, lines, 4_000, compress)) for p in range(processes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    files = _check_all_lines(path, [f"p{p}t{t}" for p in range(processes) for t in range(threads)], lines)
    assert all(f.suffix == ".gz" for f in files[:-1]) == compress


def test_a_log_opened_before_fork_is_safe_in_the_children(tmp_path: Path) -> None:
    path = tmp_path / "forked.log"
    log = EventLog(path, max_bytes=3_000, backup_count=100_000)
    log.emit({"request_id": "parent-0"})
    ctx = mp.get_context("fork")

    def child(n: int) -> None:
        for i in range(200):
            log.emit({"request_id": f"c{n}-{i}"})

    procs = [ctx.Process(target=child, args=(n,)) for n in range(3)]
    for p in procs:
        p.start()
    for i in range(1, 200):
        log.emit({"request_id": f"parent-{i}"})
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    log.close()
    _check_all_lines(path, ["parent", "c0", "c1", "c2"], 200)


def test_dash_reads_standard_input_after_the_files(tmp_path: Path, monkeypatch) -> None:
    import io
    import sys

    path = tmp_path / "g.log"
    path.write_text('{"i": 1}\n', encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"i": 2}\nbad\n')))
    stats = ReadStats()
    assert [e["i"] for e in read_events(["-", path], stats)] == [1, 2]
    assert stats.files == [str(path), "-"] and stats.examples == ["<stdin>:2: not JSON (JSONDecodeError)"]
