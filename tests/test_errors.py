"""The documented error tree, one problem shape, and the one duration and time syntax.

Every public failure here must raise the documented GuardError subclass with
a location, and problems and findings must read and serialise alike.
"""

from __future__ import annotations

import json
from datetime import UTC, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import guard
import guard.errors as errors
from guard import demo
from guard.errors import (
    ConfigError,
    EventLogError,
    FileError,
    GuardError,
    OptionError,
    PayloadError,
    PolicyError,
    Problem,
    StoreUnavailable,
)
from guard.findings import Finding, Location, line_col
from guard.timeutil import iso_time, parse_duration, parse_time

ERRORS = [getattr(errors, n) for n in errors.__all__ if n != "Problem"]


def test_every_documented_error_is_a_guard_error_with_its_own_code() -> None:
    assert all(issubclass(e, GuardError) for e in ERRORS)
    codes = [e.code for e in ERRORS]
    assert len(set(codes)) == len(codes)
    doc = errors.__doc__ or ""
    assert all(e.__name__ in doc for e in ERRORS)
    assert all(getattr(guard, e.__name__) is e for e in ERRORS)


def test_no_bare_guard_error_is_raised() -> None:
    """Every raise names a subclass, so callers can catch what they can handle."""
    from pathlib import Path

    root = Path(guard.__file__).parent
    offenders = [
        f"{p.relative_to(root)}:{n}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "raise GuardError(" in line
    ]
    assert offenders == []


def _policy_with(**field: object) -> dict:
    data = demo.policy().model_dump(mode="json", exclude_none=True)
    data["entities"]["order"]["fields"]["status"].update(field)
    return data


@pytest.mark.parametrize(
    ("call", "error", "where"),
    [
        (lambda: guard.payload.load_payload("{not json"), PayloadError, ""),
        (lambda: parse_duration("1x", location="freshness"), OptionError, "freshness"),
        (lambda: parse_time("yesterday", location="--now"), OptionError, "--now"),
        (lambda: __import__("guard.observe.monitor").observe.monitor.parse_window("0h"), OptionError, "--window"),
        (lambda: __import__("guard.cli._common").cli._common.parse_now("soon"), OptionError, "--now"),
        (lambda: __import__("guard.observe.monitor").observe.monitor.MonitorConfig(alpha=2), OptionError, ""),
        (lambda: __import__("guard.records.store").records.store.make_engine("nope"), StoreUnavailable, "db"),
        (lambda: __import__("guard.cli.formatters").cli.formatters.render([], "xml"), OptionError, "--format"),
    ],
)
def test_public_failures_raise_the_documented_subclass(call, error, where) -> None:
    with pytest.raises(error) as info:
        call()
    assert info.value.code == error.code and info.value.message
    assert where in info.value.location


def test_policy_freshness_errors_are_policy_errors() -> None:
    from guard.records.policy import load_policy

    with pytest.raises(PolicyError) as info:
        load_policy(_policy_with(freshness="1h garbage"))
    assert isinstance(info.value, ConfigError)
    assert any("freshness" in str(p.location) for p in info.value.problems)


def test_policy_freshness_reads_the_window_syntax() -> None:
    from guard.records.policy import load_policy

    policy = load_policy(_policy_with(freshness="1h30m"))
    assert policy.entities["order"].fields["status"].freshness == timedelta(hours=1, minutes=30)


def test_event_log_and_file_errors(tmp_path) -> None:
    from guard.audit import read_items
    from guard.observe.events import EventLog, read_events

    with pytest.raises(EventLogError, match="no such log file"):
        list(read_events([tmp_path / "absent.log"]))
    with pytest.raises(OptionError):
        EventLog(tmp_path / "x.log", max_bytes=-1)
    absent = tmp_path / "absent.jsonl.gz"
    with pytest.raises(FileError) as info:
        list(read_items([absent]))
    assert info.value.location == str(absent)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    [item] = read_items([broken])  # damaged bytes are a record of the audit, not the end of it
    assert (item.source, item.kind) == (str(broken), "unreadable")


def test_regenerate_loop_refuses_zero_attempts(sqlite_demo) -> None:
    from guard.pipeline import regenerate_loop

    _, policy, store = sqlite_demo
    with pytest.raises(OptionError) as info:
        regenerate_loop(lambda d: None, policy, store, max_attempts=0)
    assert info.value.location == "regenerate_loop"


# -- one problem shape ---------------------------------------------------------
def test_f107_is_the_same_from_loading_and_from_linting() -> None:
    payload = {"answer_template": "Shipped on {ship_date}.", "claims": []}
    with pytest.raises(PayloadError) as info:
        guard.payload.load_payload(json.dumps(payload))
    (problem,) = [p for p in info.value.problems if p.code == "F107"]
    (finding,) = [f for f in guard.linting.lint_payload(payload, domain="orders").findings if f.code == "F107"]
    assert problem.message == finding.message
    assert problem.location == finding.location == Location("answer_template", 11, 22)
    assert str(problem.location) == "answer_template:12"
    assert set(problem.to_dict()) <= set(finding.to_dict())
    assert problem.to_dict()["location"] == finding.to_dict()["location"]
    assert problem.to_dict()["name"] == finding.to_dict()["name"] == "format.slot_without_claim"


def test_problem_reads_a_text_location_and_prints_as_before() -> None:
    p = Problem("schema", "field required", "claims[2].value")
    assert p.location == Location("claims[2].value")
    assert str(p) == "claims[2].value: field required [schema]"
    assert p.to_dict() == {
        "code": "schema",
        "name": "schema",
        "message": "field required",
        "location": {"part": "claims[2].value", "start": None, "end": None, "line": None, "column": None},
    }
    assert str(Location("orders.jsonl", line=4)) == "orders.jsonl:4"


@given(st.text(alphabet="ab\n", max_size=30), st.integers(-5, 40))
def test_line_col_agrees_with_splitting_lines(text: str, offset: int) -> None:
    clamped = max(0, min(offset, len(text)))
    lines = text[:clamped].split("\n")
    assert line_col(text, offset) == (len(lines), len(lines[-1]) + 1)
    f = Finding.make("F101", "x", start=clamped, end=clamped)
    assert f.location.part == "answer_template" and f.location.start == clamped


# -- one duration syntax, one time reader --------------------------------------
@given(st.integers(0, 60), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59), st.booleans())
def test_every_duration_spelling_means_the_same(d: int, h: int, m: int, s: int, spaced: bool) -> None:
    expected = timedelta(days=d, hours=h, minutes=m, seconds=s)
    units = (" " if spaced else "").join(f"{v}{u}" for v, u in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] if v)
    iso = f"P{d}DT{h}H{m}M{s}S"
    assert parse_duration(iso) == parse_duration(expected.total_seconds()) == expected
    if units:
        assert parse_duration(units) == parse_duration(units.upper()) == expected
    if expected:
        from guard.observe.monitor import parse_window

        assert parse_window(iso) == expected


@pytest.mark.parametrize("bad", ["", "1", "1.5h", "-1h", "P", "PT", "P1Y", "1h x", True, -3, float("nan")])
def test_durations_guard_cannot_read_are_option_errors(bad) -> None:
    with pytest.raises(OptionError):
        parse_duration(bad)


@given(st.datetimes(timezones=st.sampled_from([None, UTC])))
def test_the_one_time_reader_makes_aware_times(moment) -> None:
    got = iso_time(moment.isoformat())
    assert got.tzinfo is not None
    assert got == (moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    assert parse_time(moment.isoformat().replace("+00:00", "Z")) == got


# -- driver errors by class and code ---------------------------------------------
def _wrapped(orig: BaseException) -> BaseException:
    import sqlalchemy.exc as sa_exc

    return sa_exc.OperationalError("SELECT 1", {}, orig)


def test_every_postgresql_state_in_the_table_is_read_from_the_driver_class() -> None:
    import psycopg

    from guard.records.store import _PG_STATES, classify_error

    for state, cause in _PG_STATES.items():
        orig = psycopg.errors.lookup(state)("from the server")
        assert orig.sqlstate == state
        assert classify_error(_wrapped(orig)) == classify_error(orig) == cause
    assert classify_error(psycopg.errors.lookup("08006")("x")) == "connection"
    assert classify_error(psycopg.errors.lookup("22012")("does not exist")) == "error"


def test_every_mysql_number_in_the_table_is_read_from_args() -> None:
    import pymysql

    from guard.records.store import _MYSQL_CODES, classify_error

    for number, cause in _MYSQL_CODES.items():
        assert classify_error(_wrapped(pymysql.err.OperationalError(number, "no such table here"))) == cause
    assert classify_error(_wrapped(pymysql.err.OperationalError(1064, "connection timeout"))) == "error"


def test_sqlite_codes_and_its_two_generic_messages() -> None:
    import sqlite3

    from guard.records.store import classify_error

    conn = sqlite3.connect(":memory:")
    for sql, cause in [("SELECT * FROM t", "schema"), ("SELECT nope FROM sqlite_master", "schema"), ("SELEC", "error")]:
        try:
            conn.execute(sql)
        except sqlite3.OperationalError as exc:
            assert exc.sqlite_errorcode == 1 and classify_error(_wrapped(exc)) == cause
    conn.close()
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = 5  # type: ignore[attr-defined]
    assert classify_error(busy) == "locked"
