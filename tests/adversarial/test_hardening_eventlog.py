"""Issue 18: a decision is never lost to its log line, and a failed log write damages no other line.

Real parts only: the event log on a real file system (a tiny tmpfs, so the disk really fills), ``Guard.run``
and ``verify`` on a SQLite database built by :mod:`guard.demo`, and Prometheus metrics.
"""

from __future__ import annotations

import asyncio
import copy
import json
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
