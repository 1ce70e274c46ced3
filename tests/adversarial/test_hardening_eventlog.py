"""Issue 18: a decision is never lost to its log line, and a failed log write damages no other line.

Real parts only: the event log on a real file system (a tiny tmpfs, so the disk really fills), ``Guard.run``
and ``verify`` on a SQLite database built by :mod:`guard.demo`, and Prometheus metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import resource
import shutil
import signal
import subprocess
import warnings
from pathlib import Path
from typing import Any

import pytest

from guard import demo
from guard.decision import Action
from guard.errors import EventLogError
from guard.observe.events import EventLog, read_events
from guard.observe.metrics import Metrics
from guard.pipeline import AsyncGuard, Guard, verify

CHECKER_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}


def answer_with(value: Any, index: int = 3) -> dict[str, Any]:
    p = copy.deepcopy(demo.payloads()["answer"])
    p["claims"][index]["value"] = value
    return p


def lines(path: Path) -> list[dict[str, Any]]:
    """Every line of the log parsed strictly: a partial or glued line fails the test."""
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]


# -- 8: Guard.run and verify return the decision whatever happens to its log line ----------------------------
@pytest.mark.parametrize("value", [10**5000, -(10**5000), 10**4300], ids=["huge", "-huge", "4301-digits"])
def test_value_the_log_cannot_encode_keeps_the_decision_and_the_line(sqlite_demo, tmp_path, value):
    _, policy, store = sqlite_demo
    path = tmp_path / "guard.jsonl"
    with EventLog(path, include_values=True) as log:
        g = Guard(policy, store, domain="orders", config=CHECKER_ONLY, log=log, log_payloads=True)
        d = g.run(answer_with(value), principal=demo.PRINCIPAL, now=demo.NOW)
        assert d.action is Action.REGENERATE
        d2 = verify(answer_with(value), policy, store, principal=demo.PRINCIPAL, now=demo.NOW, log=log)
        assert d2.action is Action.REGENERATE
    got = lines(path)
    assert [e["event"] for e in got].count("decision") == 2
    assert g.log_failures == 0
    huge = [e for e in got if e["event"] == "claim" and e["key"] == "item_count"]
    assert len(huge) == 2 and all(isinstance(e["claimed"], str | list) for e in huge)


def test_log_write_failure_returns_the_decision_and_is_counted(sqlite_demo, tmp_path):
    _, policy, store = sqlite_demo
    log = EventLog(tmp_path / "guard.jsonl")
    metrics = Metrics()
    g = Guard(policy, store, domain="orders", config=CHECKER_ONLY, log=log, metrics=metrics)
    log.close()  # every later write fails
    with pytest.warns(RuntimeWarning, match="event log"):
        d = g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER and d.text
    assert g.log_failures == 1
    assert metrics.value("guard_log_write_failures_total") == 1
    assert metrics.value("guard_decisions_total", action="answer") == 1


def test_verify_log_write_failure_returns_the_decision(sqlite_demo, tmp_path):
    _, policy, store = sqlite_demo
    log = EventLog(tmp_path / "guard.jsonl")
    log.close()
    with pytest.warns(RuntimeWarning, match="event log"):
        d = verify(demo.payloads()["answer"], policy, store, principal=demo.PRINCIPAL, now=demo.NOW, log=log)
    assert d.action is Action.ANSWER


class Broken:
    """A user's sink that fails in its own way."""

    def emit(self, event):
        raise KeyError("sink down")


def test_a_failing_sink_of_ones_own_returns_the_decision_and_is_counted(sqlite_demo):
    _, policy, store = sqlite_demo
    g = Guard(policy, store, domain="orders", config=CHECKER_ONLY, log=Broken())
    with pytest.warns(RuntimeWarning, match="KeyError"):
        d = g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)
    assert d.action is Action.ANSWER and g.log_failures == 1


def test_async_gate_log_write_failure_returns_the_decision_and_is_counted(sqlite_demo, tmp_path):
    url, policy, _ = sqlite_demo
    log = EventLog(tmp_path / "guard.jsonl")
    metrics = Metrics()
    g = AsyncGuard(policy, url, domain="orders", config=CHECKER_ONLY, log=log, metrics=metrics)
    log.close()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(g.open())
        with pytest.warns(RuntimeWarning, match="event log"):
            d = loop.run_until_complete(g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW))
    finally:
        loop.run_until_complete(g.aclose())
        loop.close()
    assert d.action is Action.ANSWER and g.gate.log_failures == 1
    assert metrics.value("guard_log_write_failures_total") == 1


def test_event_log_counts_its_failed_writes(tmp_path):
    log = EventLog(tmp_path / "guard.jsonl")
    log.close()
    with pytest.raises(EventLogError):
        log.emit({"event": "decision", "action": "answer"})
    assert log.failed_writes == 1
    assert list(read_events([tmp_path / "guard.jsonl"])) == []


# -- 7: a full disk loses only the event whose write failed, and damages no later line ----------------------
@pytest.fixture()
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs, so that writes really fail with ENOSPC; yields (folder, fill, free).

    ``fill()`` takes all the free space but the slack of the log's last page, so a line written then is cut
    part-way; ``free()`` gives the space back. Where mounting is not permitted (not root), the same
    partial-write-then-error is produced by the process's file-size limit (RLIMIT_FSIZE, EFBIG) instead.
    """
    folder = tmp_path / "tiny"
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)]
    if os.geteuid() == 0 and subprocess.run(mount, capture_output=True).returncode == 0:
        filler = folder / "filler"

        def fill() -> None:
            with open(filler, "wb") as f, contextlib.suppress(OSError):
                f.write(b"x" * shutil.disk_usage(folder).free)

        try:
            yield folder, fill, filler.unlink
        finally:
            subprocess.run(["umount", "-l", str(folder)], check=True)
        return
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    log_path = folder / "guard.jsonl"

    def fill_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (log_path.stat().st_size + 3100, old[1]))

    try:
        yield folder, fill_limit, lambda: resource.setrlimit(resource.RLIMIT_FSIZE, old)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, old_handler)


def event(i: int, pad: int = 900) -> dict[str, Any]:
    return {"event": "decision", "action": "answer", "n_claims": i, "request_id": "r" * pad}


def test_full_disk_fails_one_write_and_damages_no_later_line(tiny_disk):
    folder, fill, free = tiny_disk
    path = folder / "guard.jsonl"
    log = EventLog(path, max_bytes=0)
    log.emit(event(0))
    fill()
    written, failed = [0], []
    for i in range(1, 8):
        try:
            log.emit(event(i))
            written.append(i)
        except EventLogError as exc:
            assert "cannot write the event log" in str(exc)
            failed.append(i)
    assert failed and log.failed_writes == len(failed)
    free()
    for i in (8, 9):
        log.emit(event(i))
        written.append(i)
    log.close()
    assert [e["n_claims"] for e in lines(path)] == written


def test_full_disk_under_the_gate_returns_decisions_and_keeps_the_log_readable(sqlite_demo, tiny_disk):
    folder, fill, free = tiny_disk
    _, policy, store = sqlite_demo
    path = folder / "guard.jsonl"
    metrics = Metrics()
    g = Guard(policy, store, domain="orders", config=CHECKER_ONLY, log=EventLog(path, max_bytes=0), metrics=metrics)
    run = lambda: g.run(demo.payloads()["answer"], principal=demo.PRINCIPAL, now=demo.NOW)  # noqa: E731
    run()
    fill()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        decisions = [run() for _ in range(6)]
    free()
    decisions.append(run())
    g.log.close()
    assert all(d.action is Action.ANSWER for d in decisions)
    failures = sum("event log" in str(w.message) for w in seen)
    assert failures >= 1 and g.log_failures == failures == metrics.value("guard_log_write_failures_total")
    got = lines(path)
    assert sum(e["event"] == "decision" for e in got) == 8 - failures
    assert got[-1]["event"] == "decision" and got[-1]["request_id"] == decisions[-1].request_id


def test_a_line_left_partial_by_another_writer_does_not_swallow_the_next(tmp_path):
    """A writer killed mid-line (or a truncation that failed) leaves no newline: the next line starts on its own."""
    path = tmp_path / "guard.jsonl"
    with EventLog(path) as log:
        log.emit(event(0, pad=10))
        with open(path, "ab") as f:
            f.write(b'{"event":"decision","act')
        log.emit(event(1, pad=10))
    raw = path.read_bytes().split(b"\n")
    assert json.loads(raw[-2])["n_claims"] == 1
    assert [e["n_claims"] for e in read_events([path])] == [0, 1]
