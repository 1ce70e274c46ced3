"""Issue 18: hostile principals, shared tables, values at the edge of their range, policy mistakes, and
command-line input that used to escape as a traceback or silently misalign.

Each test drives real parts: SQLite databases built by :mod:`guard.demo`, the policy loader, ``verify`` and
``Guard.run``, and the command line through :func:`guard.cli.main.main`.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import warnings
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from guard import demo
from guard.cli.main import main
from guard.errors import OptionError, PolicyError
from guard.payload import Limits
from guard.pipeline import Guard, verify
from guard.records.checker import Status
from guard.records.formatting import format_value
from guard.records.policy import FieldPolicy, Policy, PolicyWarning, load_policy
from guard.records.store import RecordStore
from guard.records.types import BadClaim, BadStored, matches, normalise_stored

CHECKER_ONLY = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}
ORDER = "ord_88431"


def claim(key: str, type_: str, field: str, value: Any, entity_id: Any = ORDER, entity: str = "order") -> dict:
    return {"key": key, "type": type_, "entity": entity, "entity_id": entity_id, "field": field, "value": value}


def payload(*claims: dict[str, Any]) -> dict[str, Any]:
    return {"answer_template": " ".join(f"{{{c['key']}}}." for c in claims), "claims": list(claims)}


def demo_data(policy: Policy | None = None) -> dict[str, Any]:
    return (policy or demo.policy()).model_dump(mode="json", exclude_none=True)


# -- 4: integer scope columns take ASCII digits in range only ------------------------------------------------
@pytest.fixture(scope="module")
def invoices(tmp_path_factory: pytest.TempPathFactory):
    """A table whose id and scope columns are integers: invoice 7 belongs to customer 42."""
    url = f"sqlite:///{tmp_path_factory.mktemp('invoices') / 'records.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer INTEGER, lines INTEGER)"))
        conn.execute(sa.text("INSERT INTO invoices VALUES (7, 42, 3), (8, 43, 5)"))
    engine.dispose()
    policy = load_policy(
        {"entities": {"invoice": {"table": "invoices", "scope": "customer", "fields": {"lines": {"type": "integer"}}}}}
    )
    store = RecordStore(url, policy)
    yield policy, store
    store.close()


def lines_of_invoice_7(policy: Policy, store: RecordStore, principal: Any, entity_id: Any = 7) -> Status:
    d = verify(payload(claim("n", "integer", "lines", 3, entity_id, "invoice")), policy, store, principal=principal)
    return d.results[0].status


@pytest.mark.parametrize("principal", [42, "42", "+42"])
def test_integer_principal_in_ascii_digits_reads_its_own_row(invoices, principal):
    assert lines_of_invoice_7(*invoices, principal) is Status.CONFIRMED


@pytest.mark.parametrize(
    "principal",
    ["\u0664\u0662", "\uff14\uff12", "42\n", "4\u00b2", " 42", 42.0, True, 2**64, -(2**63) - 1, str(2**64), "0x2a"],
)
def test_integer_principal_in_other_digits_or_out_of_range_reads_no_row(invoices, principal):
    """Unicode digits, a trailing newline and integers beyond 64 bits never name customer 42, and never raise."""
    assert lines_of_invoice_7(*invoices, principal) is Status.NOT_FOUND


@pytest.mark.parametrize("entity_id", ["\u0667", "\uff17", "7\n", 2**64, str(2**70)])
def test_integer_id_in_other_digits_or_out_of_range_is_not_found(invoices, entity_id):
    assert lines_of_invoice_7(*invoices, 42, entity_id) is Status.NOT_FOUND


def test_store_read_drops_keys_that_are_not_ascii_integers(invoices):
    policy, store = invoices
    assert list(store.read("invoice", ["7", "\u0667", "7\n", str(2**64)], principal=42)) == ["7"]


# -- 6: one table under a scoped and an unscoped entity; the empty principal ---------------------------------
def test_table_under_a_scoped_and_an_unscoped_entity_warns_at_load():
    data = demo_data()
    data["entities"]["order_lookup"] = {"table": "orders", "fields": {"status": {"type": "enum"}}}
    with pytest.warns(PolicyWarning, match=r"orders.*'order'.*'order_lookup'"):
        load_policy(data)


def test_table_under_two_scope_columns_warns_at_load():
    data = demo_data()
    data["entities"]["order_by_id"] = {"table": "orders", "scope": "id", "fields": {"status": {"type": "enum"}}}
    with pytest.warns(PolicyWarning, match="orders"):
        load_policy(data)


def test_policies_without_shared_tables_load_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_policy(demo_data())


def test_cli_shows_the_policy_warning_as_one_line(tmp_path, capsys, sqlite_demo):
    url, _, _ = sqlite_demo
    data = demo_data()
    data["entities"]["order_lookup"] = {"table": "orders", "fields": {"status": {"type": "enum"}}}
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(data), encoding="utf-8")
    body = tmp_path / "payload.json"
    body.write_text(json.dumps(payload(claim("s", "enum", "status", "shipped"))), encoding="utf-8")
    main(["check", str(body), "--policy", str(policy), "--db", url, "--principal", demo.PRINCIPAL])
    err = capsys.readouterr().err
    assert "guard: warning:" in err and "order_lookup" in err and "Traceback" not in err


@pytest.fixture(scope="module")
def orphan_order(tmp_path_factory: pytest.TempPathFactory):
    """A demo database in which ord_88431 has an empty customer id."""
    url = f"sqlite:///{tmp_path_factory.mktemp('orphan') / 'records.db'}"
    engine = demo.build(url, n_orders=600, n_customers=200)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE orders SET customer_id = '' WHERE id = :id"), {"id": ORDER})
    engine.dispose()
    store = RecordStore(url, demo.policy())
    yield store
    store.close()


def test_empty_principal_is_no_principal(orphan_order):
    """A row with an empty scope value is nobody's: the empty principal must not read it."""
    d = verify(payload(claim("s", "enum", "status", "shipped")), orphan_order.policy, orphan_order, principal="")
    assert d.results[0].status is Status.NOT_CHECKABLE
    assert "no principal" in d.results[0].reason
    assert orphan_order.read("order", [ORDER], principal="") == {}


def test_empty_principal_still_reads_unscoped_entities(sqlite_demo):
    _, policy, store = sqlite_demo
    d = verify(payload(claim("t", "enum", "tier", "gold", "cus_1042", "customer")), policy, store, principal="")
    assert d.results[0].status in (Status.CONFIRMED, Status.CONTRADICTED)


def test_audit_gives_a_logged_empty_principal_the_default_one(sqlite_demo, tmp_path):
    from guard.audit import AuditSettings, audit
    from guard.observe.schema import payload_event

    url, policy, _ = sqlite_demo
    body = payload(claim("s", "enum", "status", "shipped"))
    log = tmp_path / "guard.jsonl"
    log.write_text(json.dumps(payload_event(request_id="r", domain="orders", principal="", payload=body)) + "\n")
    settings = AuditSettings(
        policy=demo_data(policy), db=url, domain="orders", config=CHECKER_ONLY, default_principal=demo.PRINCIPAL
    )
    [record] = audit([log], settings).records
    assert record["results"][0]["status"] != Status.NOT_CHECKABLE.value


# -- 10: values at the edge of their range -------------------------------------------------------------------
@pytest.fixture(scope="module")
def edge_db(tmp_path_factory: pytest.TempPathFactory):
    """Demo data where ord_88432 was updated and shipped at the very end of the calendar (stored naive, UTC)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('edge') / 'records.db'}"
    engine = demo.build(url, n_orders=600, n_customers=200)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE orders SET customer_id = :c, updated_at = :t, shipped_at = :t WHERE id = 'ord_88432'"),
            {"c": demo.PRINCIPAL, "t": datetime(9999, 12, 31, 23, 59, 59)},
        )
    engine.dispose()
    yield url


def edge_policy(tz: str = "Europe/London", **field: Any) -> Policy:
    data = demo_data()
    data["timezone"] = tz
    data["entities"]["order"]["fields"]["updated"] = {"type": "timestamp", "column": "updated_at", **field}
    return load_policy(data)


def run_both(
    url: str, policy: Policy, body: dict[str, Any], now: datetime | None = demo.NOW, limits: Limits | None = None
):
    """verify and Guard.run on one payload; both must return a decision."""
    store = RecordStore(url, policy)
    try:
        first = verify(body, policy, store, principal=demo.PRINCIPAL, now=now, limits=limits)
        with Guard(policy, store, domain="orders", config=CHECKER_ONLY, limits=limits) as gate:
            second = gate.run(body, principal=demo.PRINCIPAL, now=now)
    finally:
        store.close()
    assert [r.status for r in first.results] == [r.status for r in second.results]
    return first


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00"])
@pytest.mark.parametrize("tz", ["Europe/London", "Asia/Tokyo", "America/New_York"])
def test_claimed_timestamp_beyond_the_calendar_is_contradicted(edge_db, value, tz):
    d = run_both(edge_db, edge_policy(tz), payload(claim("u", "timestamp", "updated", value)))
    assert d.results[0].status is Status.CONTRADICTED


@pytest.mark.parametrize(
    "field, type_, value", [("updated", "timestamp", "9999-12-31T23:59:59Z"), ("shipped_at", "date", "9999-12-31")]
)
def test_stored_time_that_cannot_be_shown_in_the_policy_zone_is_unavailable(edge_db, field, type_, value):
    """9999-12-31 23:59:59 UTC is in the year 10000 in Tokyo: no renderer can show it there."""
    d = run_both(edge_db, edge_policy("Asia/Tokyo"), payload(claim("u", type_, field, value, "ord_88432")))
    assert d.results[0].status is Status.UNAVAILABLE and d.results[0].cause == "garbage"


def test_stored_time_at_the_end_of_the_calendar_renders_where_it_can(edge_db):
    body = payload(claim("u", "timestamp", "updated", "9999-12-31T23:59:59Z", "ord_88432"))
    d = run_both(edge_db, edge_policy("UTC"), body)
    assert d.results[0].status is Status.CONFIRMED and "9999" in (d.text or "")


@pytest.mark.parametrize(
    "value",
    [
        "1,000,000,000,000,000,000,000,000,000.00",
        "£1,000,000,000,000,000,000,000,000,000,000,000,000",
        "9" * 1500,
        "1E+1000000",
        10**40,
    ],
)
def test_huge_money_claim_is_contradicted(sqlite_demo, value):
    url, policy, _ = sqlite_demo
    d = run_both(url, policy, payload(claim("m", "money", "total_minor", value)))
    assert d.results[0].status is Status.CONTRADICTED


@pytest.mark.parametrize("value", ["9" * 5000, 10**1200, "1" + "0" * 4400])
def test_huge_integer_claim_is_contradicted(sqlite_demo, value):
    """Beyond 4,300 digits ``int()`` itself refuses the text; an application may allow values that long."""
    url, policy, _ = sqlite_demo
    d = run_both(
        url, policy, payload(claim("n", "integer", "line_count", value)), limits=Limits(max_value_chars=10_000)
    )
    assert d.results[0].status is Status.CONTRADICTED


@pytest.mark.parametrize(
    "now",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(-timedelta(hours=2))),
    ],
)
def test_now_beyond_the_calendar_is_an_option_error(sqlite_demo, now):
    _, policy, store = sqlite_demo
    with pytest.raises(OptionError, match="now"):
        verify(payload(claim("n", "integer", "line_count", 1)), policy, store, principal=demo.PRINCIPAL, now=now)


def test_freshness_reaching_before_the_calendar_judges_a_column(sqlite_demo):
    """Eight claims of one field take the column path, whose freshness cutoff once underflowed year 1."""
    url, _, _ = sqlite_demo
    data = demo_data()
    data["entities"]["order"]["fields"]["line_count"]["freshness"] = "999999d"
    policy = load_policy(data)
    with RecordStore(url, policy) as store:
        rows = store.fetch("order", [demo.order_id(i) for i in range(600)], demo.PRINCIPAL)
    claims = [claim(f"n{i}", "integer", "line_count", rows[k]["line_count"], k) for i, k in enumerate(list(rows) * 8)]
    claims = claims[:8]
    d = run_both(url, policy, payload(*claims), now=datetime(2, 1, 1, tzinfo=UTC))
    assert {r.status for r in d.results} == {Status.CONFIRMED}


POLICY = Policy(timezone="Asia/Tokyo", db_timezone="America/New_York", entities=demo.policy().entities)
EDGE_FIELDS = [
    FieldPolicy(type="timestamp", tolerance=Decimal(86400)),
    FieldPolicy(type="date"),
    FieldPolicy(type="money", currency="GBP"),
    FieldPolicy(type="money", currency="JPY"),
    FieldPolicy(type="integer"),
    FieldPolicy(type="decimal", tolerance=Decimal("0.5"), unit="kg"),
]
EDGE_VALUES = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-12:00",
    "0001-01-01",
    "9999-12-31",
    datetime(1, 1, 1),
    datetime(9999, 12, 31, 23, 59, 59),
    datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
    "1" + ",000" * 40,
    "£" + "9" * 60,
    "9" * 4400,
    "1E+999999999",
    10**30,
    10**1001,
    Decimal("1E+40"),
    Decimal("1E-1200"),
    Decimal("-1E+999"),
]


@pytest.mark.parametrize("field", EDGE_FIELDS, ids=lambda f: f"{f.type.value}-{f.currency or ''}")
@pytest.mark.parametrize("value", EDGE_VALUES, ids=lambda v: repr(v)[:30])
def test_comparators_and_renderers_raise_only_their_documented_errors(field, value):
    """Every stored value normalises and renders, or is BadStored; every claim compares, or is BadClaim."""
    try:
        actual = normalise_stored(value, field, POLICY)
    except BadStored:
        actual = None
    if actual is not None:
        assert format_value(actual, field, POLICY)
        with contextlib.suppress(BadClaim):
            matches(value, actual, field, POLICY)


# -- 20: policy and config mistakes name their key ----------------------------------------------------------
@pytest.mark.parametrize(
    "where, value, key",
    [
        ("freshness", "99999999999d", "entities.order.fields.shipped_at.freshness"),
        ("freshness", "9" * 400 + "d", "entities.order.fields.shipped_at.freshness"),
        ("freshness", "P" + "9" * 400 + "D", "entities.order.fields.shipped_at.freshness"),
        ("freshness", 10**400, "entities.order.fields.shipped_at.freshness"),
        ("tolerance", "abc", "entities.order.fields.shipped_at.tolerance"),
        ("tolerance", [1], "entities.order.fields.shipped_at.tolerance"),
    ],
)
def test_bad_field_option_is_a_policy_error_naming_the_key(where, value, key):
    data = demo_data()
    data["entities"]["order"]["fields"]["shipped_at"][where] = value
    if where == "tolerance":
        data["entities"]["order"]["fields"]["shipped_at"]["type"] = "timestamp"
    with pytest.raises(PolicyError) as err:
        load_policy(data)
    assert key in [str(p.location) for p in err.value.problems]


@pytest.mark.parametrize("tolerance", [1e15, "1e15", 10**14, "1E+999999"])
def test_timestamp_tolerance_beyond_any_duration_is_a_policy_error(tolerance):
    data = demo_data()
    data["entities"]["order"]["fields"]["at"] = {"type": "timestamp", "column": "updated_at", "tolerance": tolerance}
    with pytest.raises(PolicyError) as err:
        load_policy(data)
    assert "entities.order.fields.at" in [str(p.location) for p in err.value.problems]


def test_timestamp_tolerance_of_a_day_still_loads_and_compares(edge_db):
    policy = edge_policy("UTC", tolerance=86400)
    d = run_both(edge_db, policy, payload(claim("u", "timestamp", "updated", "9999-12-31T00:00:00Z", "ord_88432")))
    assert d.results[0].status is Status.CONFIRMED


@pytest.mark.parametrize("key", ["timezone", "db_timezone"])
@pytest.mark.parametrize("zone", ["America", "Etc", "", ".", "zone1970.tab", "tzdata.zi", "America/"])
def test_time_zone_that_is_not_a_zone_is_a_policy_error(key, zone):
    data = demo_data()
    data[key] = zone
    with pytest.raises(PolicyError) as err:
        load_policy(data)
    assert key in [str(p.location) for p in err.value.problems]


def test_policy_file_that_is_not_utf8_is_a_policy_error(tmp_path, sqlite_demo, capsys):
    bad = tmp_path / "policy.yaml"
    bad.write_bytes(b"timezone: Europe/London\nlocale: en_GB\n# caf\xe9\nentities: {}\n")
    with pytest.raises(PolicyError) as err:
        load_policy(bad)
    assert err.value.location == str(bad) and "UTF-8" in err.value.message
    url, _, _ = sqlite_demo
    body = tmp_path / "payload.json"
    body.write_text(json.dumps(payload(claim("s", "enum", "status", "shipped"))), encoding="utf-8")
    assert main(["run", str(body), "--policy", str(bad), "--db", url]) == 1
    err_text = capsys.readouterr().err
    assert err_text.startswith("guard: error:") and str(bad) in err_text and "Traceback" not in err_text


def test_policy_nested_too_deeply_is_a_policy_error():
    with pytest.raises(PolicyError, match="nested"):
        load_policy("timezone: UTC\nentities: " + "[" * 100_000)


@pytest.mark.parametrize("command", ["run", "audit"])
def test_config_file_that_is_not_utf8_is_an_error_naming_it(tmp_path, sqlite_demo, capsys, command):
    url, policy, _ = sqlite_demo
    pfile = tmp_path / "policy.yaml"
    pfile.write_text(yaml.safe_dump(demo_data(policy)), encoding="utf-8")
    config = tmp_path / "gate.yaml"
    config.write_bytes(b"domains:\n  orders: {}\n# \xff\xfe\n")
    body = tmp_path / "payload.json"
    body.write_text(json.dumps(payload(claim("s", "enum", "status", "shipped"))), encoding="utf-8")
    if command == "run":
        args = ["run", str(body), "--policy", str(pfile), "--db", url, "--config", str(config)]
    else:
        args = ["audit", str(body), "--policy", str(pfile), "--db", url, "--config", str(config)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("guard: error:") and str(config) in err and "UTF-8" in err and "Traceback" not in err


# -- 22: classify gives one result per line feed --------------------------------------------------------------
LINES = [
    "a parcel\x85is late",
    "it rained\u2028today",
    "page\x0cbreak",
    "record\x1eseparator",
    "bare\rreturn",
    "crlf",
    "",
    "last",
]


def classify_jsonl(capsys, *args: str) -> list[dict[str, Any]]:
    assert main(["classify", *args, "--format", "jsonl"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.split("\n") if line]


def test_classify_file_gives_one_result_per_input_line(tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_bytes(("\n".join(LINES[:5]) + "\n" + LINES[5] + "\r\n" + "\n".join(LINES[6:]) + "\n").encode("utf-8"))
    rows = classify_jsonl(capsys, str(f))
    assert len(rows) == len(LINES) == 8
    assert [r["text"] for r in rows] == LINES


def test_classify_stdin_gives_one_result_per_input_line(monkeypatch, capsys):
    data = ("\r\n".join(LINES)).encode("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    rows = classify_jsonl(capsys, "-")
    assert [r["text"] for r in rows] == LINES


def test_classify_text_output_has_one_line_per_input_line(tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_bytes("\n".join(LINES).encode("utf-8"))
    assert main(["classify", str(f)]) == 0
    assert len(capsys.readouterr().out.split("\n")) == len(LINES) + 1


def test_classify_input_that_is_not_utf8_is_an_error(tmp_path, capsys):
    f = tmp_path / "in.txt"
    f.write_bytes(b"caf\xe9\n")
    assert main(["classify", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("guard: error:") and str(f) in err


# -- 23: monitor options that would silently weaken it ---------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("monitor") / "guard.log"
    path.write_text(json.dumps({"event": "decision", "ts": "2026-01-01T00:00:00Z", "action": "answer"}) + "\n")
    return path


@pytest.mark.parametrize(
    "args, option",
    [
        (["--min-shift", "nan"], "--min-shift"),
        (["--min-shift", "inf"], "--min-shift"),
        (["--min-shift", "-1"], "--min-shift"),
        (["--tail", "-5"], "--tail"),
    ],
)
def test_monitor_rejects_options_that_disable_it(tiny_log, capsys, args, option):
    assert main(["monitor", str(tiny_log), *args]) == 2  # a usage error
    err = capsys.readouterr().err
    assert err.startswith("guard: error:") and option in err and "Traceback" not in err


def test_monitor_config_rejects_nan_min_shift_in_python():
    from guard.observe.monitor import MonitorConfig

    with pytest.raises(OptionError, match="min_shift"):
        MonitorConfig(min_shift=float("nan"))


def test_gate_config_that_is_not_utf8_is_a_config_error_in_python(tmp_path):
    from guard.errors import ConfigError
    from guard.pipeline import load_gate_config

    path = tmp_path / "gate.yaml"
    path.write_bytes(b"domains:\n  orders: {stages: {ratio: \xff}}\n")
    with pytest.raises(ConfigError, match="not UTF-8") as err:
        load_gate_config(path)
    assert err.value.location == str(path)
