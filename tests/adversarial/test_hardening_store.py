"""Issue 18, items 2, 13 and 14: the record store on real SQLite, PostgreSQL and MariaDB databases.

Row scope must compare exactly whatever the column's collation, an id the database cannot compare with its id
column names no row (the payload's other claims are still checked), and an update-time column that holds no
times is refused when the store opens.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from guard.errors import PolicyError
from guard.pipeline import verify
from guard.records.checker import Status
from guard.records.policy import load_policy
from guard.records.store import RecordStore
from tests.adversarial.conftest import worker
from tests.conftest import BACKENDS, backend_url

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)
TICKETS = [f"a0eebc99-9c0b-4ef8-bb6d-6bb9bd38{n:04x}" for n in range(12)]

CASE_BLIND = {
    "sqlite": "VARCHAR(40) COLLATE NOCASE",
    "postgresql": "VARCHAR(40) COLLATE guard_blind",
    "mariadb": "VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
}
"""A text column whose collation ignores case (and, on PostgreSQL and MariaDB, accents and trailing spaces)."""

TICKET_ID = {"sqlite": "VARCHAR(40)", "postgresql": "UUID", "mariadb": "VARCHAR(40) CHARACTER SET utf8mb3"}
HOST_ID = {"sqlite": "VARCHAR(40)", "postgresql": "INET", "mariadb": "VARCHAR(40) CHARACTER SET latin1"}
"""PostgreSQL ``inet`` has no Python-side check: its ids are told apart by asking the database."""
NARROW = {"sqlite": "VARCHAR(40)", "postgresql": "VARCHAR(40)", "mariadb": "VARCHAR(40) CHARACTER SET latin1"}

POLICY = {
    "entities": {
        "account": {"table": "accounts", "scope": "owner", "fields": {"balance": {"type": "integer"}}},
        "desk": {"table": "desks", "scope": "owner", "fields": {"floor": {"type": "integer"}}},
        "ticket": {"table": "tickets", "fields": {"status": {"type": "enum"}}},
        "parcel": {"table": "parcels", "fields": {"weight": {"type": "integer"}}},
        "host": {"table": "hosts", "scope": "owner", "fields": {"state": {"type": "enum"}}},
    }
}


@pytest.fixture(scope="module", params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """(backend, url, policy, store) with one table per hostile collation or id type."""
    backend = request.param
    url = backend_url(backend, tmp_path_factory, worker(), "hardstore")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        if backend == "postgresql":
            conn.execute(
                sa.text(
                    "CREATE COLLATION guard_blind (provider = icu, locale = 'und-u-ks-level1', deterministic = false)"
                )
            )
        conn.execute(
            sa.text(f"CREATE TABLE accounts (id VARCHAR(40) PRIMARY KEY, owner {CASE_BLIND[backend]}, balance INTEGER)")
        )
        conn.execute(sa.text("INSERT INTO accounts VALUES ('acc_1', 'alice', 100), ('acc_2', 'bob', 200)"))
        conn.execute(sa.text("CREATE TABLE desks (id VARCHAR(40) PRIMARY KEY, owner CHAR(8), floor INTEGER)"))
        conn.execute(sa.text("INSERT INTO desks VALUES ('d1', 'alice', 3)"))
        conn.execute(sa.text(f"CREATE TABLE tickets (id {TICKET_ID[backend]} PRIMARY KEY, status VARCHAR(20))"))
        conn.execute(sa.text("INSERT INTO tickets VALUES (:id, 'open')"), [{"id": t} for t in TICKETS])
        conn.execute(sa.text("CREATE TABLE parcels (id NUMERIC(12, 0) PRIMARY KEY, weight INTEGER)"))
        conn.execute(sa.text("INSERT INTO parcels VALUES (42, 7), (43, 8)"))
        conn.execute(
            sa.text(
                f"CREATE TABLE hosts (id {HOST_ID[backend]} PRIMARY KEY, owner {NARROW[backend]}, state VARCHAR(9))"
            )
        )
        conn.execute(sa.text("INSERT INTO hosts VALUES ('10.0.0.1', 'alice', 'up'), ('10.0.0.2', 'alice', 'down')"))
    engine.dispose()
    policy = load_policy(POLICY)
    store = RecordStore(url, policy)
    yield backend, url, policy, store
    store.close()


def claim(entity: str, entity_id: Any, field: str, value: Any, key: str = "k0", type_: str = "integer") -> dict:
    return {"key": key, "type": type_, "entity": entity, "entity_id": entity_id, "field": field, "value": value}


def statuses(db, *claims: dict[str, Any], principal: Any = None) -> list[Status]:
    _, _, policy, store = db
    body = {"answer_template": " ".join(f"{{{c['key']}}}." for c in claims), "claims": list(claims)}
    return [r.status for r in verify(body, policy, store, principal=principal, now=NOW).results]


# -- 2: row scope compares exactly, whatever the column's collation ------------------------------------------
@pytest.mark.parametrize("principal", ["ALICE", "Alice", "alice ", "alicé", "ALICÉ ", "\u0430lice"])
def test_scope_is_not_widened_by_the_columns_collation(db, principal):
    assert statuses(db, claim("account", "acc_1", "balance", 100), principal=principal) == [Status.NOT_FOUND]


def test_scope_still_reads_the_principals_own_row(db):
    assert statuses(db, claim("account", "acc_1", "balance", 100), principal="alice") == [Status.CONFIRMED]


def test_scope_is_exact_in_a_batch_of_rows(db):
    """Many claims take the column path; rows of a look-alike principal are absent there too."""
    claims = [claim("account", "acc_1", "balance", 100, f"k{i}") for i in range(10)]
    assert statuses(db, *claims, principal="ALICE") == [Status.NOT_FOUND] * 10
    assert statuses(db, *claims, principal="alice") == [Status.CONFIRMED] * 10


def test_store_read_drops_rows_of_a_look_alike_principal(db):
    store = db[3]
    assert store.read("account", ["acc_1", "acc_2"], principal="Alice") == {}
    assert list(store.read("account", ["acc_1", "acc_2"], principal="alice")) == ["acc_1"]


def test_fixed_width_scope_column_reads_its_own_row(db):
    """PostgreSQL pads ``CHAR(8)`` values with spaces; the padding is not part of the principal."""
    assert statuses(db, claim("desk", "d1", "floor", 3), principal="alice") == [Status.CONFIRMED]
    assert statuses(db, claim("desk", "d1", "floor", 3), principal="alice ") == [Status.NOT_FOUND]


# -- 13: an id the database cannot compare names no row; the other claims are checked -----------------------
HOSTILE_IDS = ["not-a-uuid", "\U0001f600", "\u0100", "abc", "", " ", "10.0.0.1\U0001f600", "1e999999"]


@pytest.mark.parametrize("bad", HOSTILE_IDS)
@pytest.mark.parametrize(
    ("entity", "good", "field", "value", "type_"),
    [
        ("ticket", TICKETS[0], "status", "open", "enum"),
        ("parcel", "42", "weight", 7, "integer"),
        ("host", "10.0.0.1", "state", "up", "enum"),
    ],
)
def test_id_the_database_cannot_compare_is_not_found(db, entity, good, field, value, type_, bad):
    got = statuses(
        db,
        claim(entity, good, field, value, "a", type_),
        claim(entity, bad, field, value, "b", type_),
        principal="alice",
    )
    assert got == [Status.CONFIRMED, Status.NOT_FOUND]


@pytest.mark.parametrize("bad", ["not-a-uuid", "\U0001f600"])
def test_id_the_database_cannot_compare_among_many_is_not_found(db, bad):
    """From eight ids on, text ids take the store's fast path; the one bad id is still told apart."""
    claims = [claim("ticket", t, "status", "open", f"k{i}", "enum") for i, t in enumerate(TICKETS)]
    claims.insert(5, claim("ticket", bad, "status", "open", "bad", "enum"))
    got = statuses(db, *claims)
    assert got == [Status.CONFIRMED] * 5 + [Status.NOT_FOUND] + [Status.CONFIRMED] * (len(TICKETS) - 5)


def test_many_ids_the_database_cannot_compare_are_not_found(db):
    claims = [claim("host", "10.0.0.1", "state", "up", "good", "enum")]
    claims += [claim("host", f"bad-{i}\U0001f600", "state", "up", f"k{i}", "enum") for i in range(20)]
    assert statuses(db, *claims, principal="alice") == [Status.CONFIRMED] + [Status.NOT_FOUND] * 20


def test_uuid_in_capitals_names_its_row(db):
    _, _, policy, store = db
    body = {"answer_template": "{a}.", "claims": [claim("ticket", TICKETS[1].upper(), "status", "open", "a", "enum")]}
    result = verify(body, policy, store, now=NOW).results[0]
    if db[0] == "postgresql":
        assert (result.status, result.row_id) == (Status.CONFIRMED, TICKETS[1])
    else:
        assert result.status is Status.NOT_FOUND  # a text column: the row's id is spelled in lower case


@pytest.mark.parametrize("principal", ["\U0001f600", "\u0100lice"])
def test_principal_the_scope_column_cannot_hold_reads_no_row(db, principal):
    assert statuses(db, claim("host", "10.0.0.1", "state", "up", type_="enum"), principal=principal) == [
        Status.NOT_FOUND
    ]


# -- 14: an update-time column that holds no times is refused at open ---------------------------------------
FRESH = datetime(2026, 7, 1, 11)


def shipments(url: str, table: str, column: str, *values: Any) -> Any:
    """A policy over a new table whose update-time column ``t`` is of type ``column`` and holds ``values``."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE TABLE {table} (id VARCHAR(20) PRIMARY KEY, state VARCHAR(9), t {column} NULL)"))
        if values:
            conn.execute(
                sa.text(f"INSERT INTO {table} VALUES (:id, 'sent', :t)"),
                [{"id": f"s{i}", "t": v} for i, v in enumerate(values, 1)],
            )
    engine.dispose()
    fields = {"state": {"type": "enum", "freshness": "1d"}}
    return load_policy({"entities": {"shipment": {"table": table, "updated_at": "t", "fields": fields}}})


def refusal(url: str, policy: Any) -> str:
    with pytest.raises(PolicyError) as info:
        RecordStore(url, policy)
    (problem,) = info.value.problems
    assert str(problem.location) == "entities.shipment.updated_at"
    return problem.message


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("epoch_int", "BIGINT", int(FRESH.replace(tzinfo=UTC).timestamp())),
        ("epoch_num", "NUMERIC(14, 3)", FRESH.replace(tzinfo=UTC).timestamp() + 0.5),
        ("epoch_text", "VARCHAR(40)", str(int(FRESH.replace(tzinfo=UTC).timestamp()))),
        ("words", "VARCHAR(40)", "yesterday"),
    ],
)
def test_update_time_column_holding_no_times_is_a_policy_error(db, table, column, value):
    url = db[1]
    message = refusal(url, shipments(url, table, column, value))
    assert "'t'" in message and f"'{table}'" in message and "'shipment'" in message


def test_update_time_column_of_integers_is_refused_even_when_empty(db):
    url = db[1]
    assert "'t'" in refusal(url, shipments(url, "epoch_empty", "BIGINT"))


def test_update_time_column_with_one_unreadable_value_among_times_is_refused(db):
    url = db[1]
    assert "'nope'" in refusal(url, shipments(url, "mixed", "VARCHAR(40)", FRESH.isoformat(sep=" "), "nope"))


def test_sqlite_datetime_column_holding_epoch_integers_is_refused(tmp_path):
    """SQLite keeps what it is given whatever the declared type: the values, not the type, tell."""
    url = f"sqlite:///{tmp_path / 'records.db'}"
    stamp = int(FRESH.replace(tzinfo=UTC).timestamp())
    message = refusal(url, shipments(url, "epoch_in_datetime", "DATETIME", stamp))
    assert f"'{stamp}'" in message


def test_update_time_column_of_dates_is_refused(db):
    """A date carries no time of day: read as midnight, every record would look hours older than it is."""
    url = db[1]
    assert "'t'" in refusal(url, shipments(url, "dates", "DATE", FRESH.date()))


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [("text_times", "VARCHAR(40)", FRESH.isoformat(sep=" ")), ("real_times", "TIMESTAMP", FRESH)],
)
def test_update_time_column_holding_times_opens_and_keeps_fresh_records(db, table, column, value):
    url = db[1]
    policy = shipments(url, table, column, value, None)
    with RecordStore(url, policy) as store:
        body = {"answer_template": "{a}.", "claims": [claim("shipment", "s1", "state", "sent", "a", "enum")]}
        assert verify(body, policy, store, now=NOW).results[0].status is Status.CONFIRMED
