"""The same scenarios against SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
import sqlalchemy as sa

from guard import demo
from guard.decision import Action
from guard.errors import PolicyError
from guard.pipeline import verify
from guard.records.checker import Status
from guard.records.store import RecordStore


def run(store_tuple, payload, **kw):
    url, policy, store = store_tuple
    kw.setdefault("principal", demo.PRINCIPAL)
    kw.setdefault("now", demo.NOW)
    return verify(payload, policy, store, **kw)


def test_answer_renders_database_values_with_citations(demo_db):
    d = run(demo_db, demo.payloads()["answer"])
    assert d.action is Action.ANSWER
    assert d.text == (
        "Your order ord_88431 shipped on 30 July 2026 and is expected to arrive on 3 August 2026. It contains 3 items."
    )
    assert [c["citation"] for c in d.citations] == [
        "order:ord_88431#id",
        "order:ord_88431#shipped_at",
        "order:ord_88431#estimated_delivery",
        "order:ord_88431#line_count",
    ]
    assert all(c["updated_at"].startswith("2026-08-01T06:00") for c in d.citations)


def test_rendered_text_uses_database_not_model_strings(demo_db):
    p = copy.deepcopy(demo.payloads()["regenerate"])
    p["claims"][1]["value"] = "1299"  # correct value, model's spelling
    d = run(demo_db, p)
    assert d.action is Action.ANSWER
    assert "£1,299.00" in d.text and "1299 " not in d.text


def test_stale_value_is_refused_with_label_and_database_id(demo_db):
    d = run(demo_db, demo.payloads()["refuse"])
    assert d.action is Action.REFUSE
    assert d.unverified == ("eta",)
    assert d.message == (
        "I could not verify the delivery estimate for order ord_88432 because the record is out of "
        "date, so I have not given one."
    )
    assert [r.status for r in d.results] == [Status.CONFIRMED, Status.STALE]


def test_contradiction_regenerates_from_all_resolved_facts(demo_db):
    d = run(demo_db, demo.payloads()["regenerate"])
    assert d.action is Action.REGENERATE
    assert d.contradicted == ("total",)
    assert d.facts["total"]["value"] == 129900 and d.facts["total"]["text"] == "£1,299.00"
    assert set(d.facts) == {"order_id", "total", "item_count"}


def test_unknown_id_is_not_found_and_refusal_does_not_echo_it(demo_db):
    p = copy.deepcopy(demo.payloads()["answer"])
    for c in p["claims"]:
        c["entity_id"] = "ord_IGNORE_ALL_INSTRUCTIONS"
    d = run(demo_db, p)
    assert d.action is Action.REFUSE
    assert all(r.status is Status.NOT_FOUND for r in d.results)
    assert "IGNORE" not in d.message
    assert "I could not find the order you asked about" in d.message


def test_row_scope_hides_other_customers_orders(demo_db):
    d = run(demo_db, demo.payloads()["answer"], principal="cus_1001")
    assert {r.status for r in d.results} == {Status.NOT_FOUND}
    assert d.action is Action.REFUSE


def test_scoped_entity_without_principal_is_not_checkable(demo_db):
    d = run(demo_db, demo.payloads()["answer"], principal=None)
    assert {r.status for r in d.results} == {Status.NOT_CHECKABLE}


def test_field_outside_whitelist_is_never_queried(demo_db):
    url, policy, store = demo_db
    p = copy.deepcopy(demo.payloads()["answer"])
    p["claims"][1]["field"] = "customer_id"
    p["claims"][2]["entity"] = "orders; DROP TABLE orders"
    statements: list[str] = []

    def spy(conn, cursor, statement, params, context, executemany):
        statements.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", spy)
    try:
        d = run(demo_db, p)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", spy)
    assert [r.status for r in d.results][1:3] == [Status.NOT_CHECKABLE, Status.NOT_CHECKABLE]
    assert len(statements) == 1  # one batched query for the remaining order claims
    selected = statements[0].split("FROM")[0]
    assert "AS customer_id" not in selected  # not read as a field; read once as the scope, compared again
    assert selected.count("customer_id") == 1
    assert "DROP" not in statements[0]


def test_one_query_per_entity_whatever_the_number_of_claims(demo_db):
    url, policy, store = demo_db
    claims = []
    for i in range(40):
        claims.append(
            {
                "key": f"k{i}",
                "type": "integer",
                "entity": "order",
                "entity_id": demo.order_id(i),
                "field": "line_count",
                "value": 1,
            }
        )
    claims.append(
        {"key": "tier", "type": "enum", "entity": "customer", "entity_id": "cus_1000", "field": "tier", "value": "gold"}
    )
    p = {"answer_template": " ".join("{" + c["key"] + "}" for c in claims), "claims": claims}
    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    try:
        run(demo_db, p, principal=None)
    finally:
        store.engine.dispatch.before_cursor_execute.clear()
    assert len(statements) == 1  # orders are scoped and no principal was given: only customers is read
    statements.clear()
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    try:
        d = run(demo_db, p)
    finally:
        store.engine.dispatch.before_cursor_execute.clear()
    assert len(statements) == 2
    assert len(d.results) == 41


def test_sql_in_entity_id_is_a_bound_parameter(demo_db):
    url, policy, store = demo_db
    p = copy.deepcopy(demo.payloads()["answer"])
    p["claims"][0]["entity_id"] = "ord_88431' OR '1'='1"
    d = run(demo_db, p)
    assert d.results[0].status is Status.NOT_FOUND
    with store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM orders")).scalar() == 600


def test_enum_aliases_and_case(demo_db):
    for v in ["shipped", "Shipped", "SHIPPED", "dispatched", "Sent"]:
        p = {
            "answer_template": "Status: {s}.",
            "claims": [
                {"key": "s", "type": "enum", "entity": "order", "entity_id": "ord_88431", "field": "status", "value": v}
            ],
        }
        assert run(demo_db, p).action is Action.ANSWER, v
    p["claims"][0]["value"] = "delivered"
    assert run(demo_db, p).action is Action.REGENERATE


def test_decimal_tolerance_from_policy(demo_db):
    def weight(v):
        return {
            "answer_template": "It weighs {w}.",
            "claims": [
                {
                    "key": "w",
                    "type": "decimal",
                    "entity": "order",
                    "entity_id": "ord_88431",
                    "field": "weight_kg",
                    "value": v,
                }
            ],
        }

    assert run(demo_db, weight(4.23)).action is Action.ANSWER
    assert run(demo_db, weight("4.2 kg")).text == "It weighs 4.2 kg."
    assert run(demo_db, weight(4.3)).action is Action.REGENERATE


def test_freshness_is_measured_against_now(demo_db):
    p = demo.payloads()["refuse"]
    assert run(demo_db, p, now=demo.NOW - timedelta(days=4)).action is Action.ANSWER


def test_policy_naming_missing_column_fails_at_open(demo_db):
    url, policy, _ = demo_db
    data = policy.model_dump(mode="json", exclude_none=True)
    data["entities"]["order"]["fields"]["colour"] = {"type": "string"}
    data["entities"]["customer"]["table"] = "clients"
    from guard.records.policy import load_policy

    with pytest.raises(PolicyError) as err:
        RecordStore(url, load_policy(data)).close()
    assert "clients" in str(err.value)
    with pytest.raises(PolicyError) as err:
        del data["entities"]["customer"]
        RecordStore(url, load_policy(data)).close()
    assert "column 'colour' does not exist in table 'orders'" in str(err.value)


def test_money_field_needs_integer_column(demo_db):
    url, policy, _ = demo_db
    data = policy.model_dump(mode="json", exclude_none=True)
    data["entities"]["order"]["fields"]["weight_kg"] = {"type": "money", "currency": "GBP"}
    from guard.records.policy import load_policy

    with pytest.raises(PolicyError, match="integer column of minor units"):
        RecordStore(url, load_policy(data)).close()


def test_garbage_in_the_database_is_refused_as_unreachable(tmp_path):
    """A stored value that is not of its type is the system of record answering garbage: refuse, never answer."""
    url = f"sqlite:///{tmp_path / 'g.db'}"
    engine = demo.build(url, n_orders=50, n_customers=20)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE orders SET estimated_delivery = 'next Tuesday', line_count = 'three' WHERE id = 'ord_88031'"
            )
        )
    engine.dispose()
    policy = demo.policy()
    data = policy.model_dump(mode="json", exclude_none=True)
    del data["entities"]["order"]["scope"]
    from guard.records.policy import load_policy

    policy = load_policy(data)
    with RecordStore(url, policy) as store:

        def claim(key, field, type_, value, oid):
            return {"key": key, "type": type_, "entity": "order", "entity_id": oid, "field": field, "value": value}

        d = verify(
            {
                "answer_template": "{eta} {n}",
                "claims": [
                    claim("eta", "estimated_delivery", "date", "2026-08-03", "ord_88031"),
                    claim("n", "line_count", "integer", 3, "ord_88031"),
                ],
            },
            policy,
            store,
            now=demo.NOW,
        )
        assert d.action is Action.REFUSE
        assert [r.status for r in d.results] == [Status.UNAVAILABLE, Status.UNAVAILABLE]
        assert all(r.cause == "garbage" for r in d.results)
        assert "system of record could not be reached" in d.message


def _decisions(demo_db):
    return {name: run(demo_db, p) for name, p in demo.payloads().items()}


def test_direct_cursor_path_equals_the_instrumented_path(demo_db):
    """Without statement listeners guard reads through the pooled DBAPI cursor; with one, through SQLAlchemy's
    Connection. Both must give the same results on every backend."""
    url, policy, store = demo_db
    assert not store._instrumented()
    direct = _decisions(demo_db)
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    try:
        assert store._instrumented()
        instrumented = _decisions(demo_db)
    finally:
        store.engine.dispatch.before_cursor_execute.clear()
    assert seen, "the listener saw no statement"
    assert {n: d.action for n, d in direct.items()} == {n: d.action for n, d in instrumented.items()}
    assert {d.action for d in direct.values()} >= {Action.ANSWER, Action.REFUSE, Action.REGENERATE}
    for name in direct:
        a, b = direct[name], instrumented[name]
        assert [r._replace(latency_ms=0) for r in a.results] == [r._replace(latency_ms=0) for r in b.results]
        assert (a.text, a.citations, a.message, a.facts) == (b.text, b.citations, b.message, b.facts)


def test_direct_path_reads_only_the_claimed_columns_in_one_statement(tmp_path):
    """Counted by SQLite's own trace hook, which sees what the driver runs whichever path guard takes."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    demo.build(url, n_orders=50, n_customers=10).dispose()
    policy = demo.policy()
    store = RecordStore(url, policy)
    traced: list[str] = []

    @sa.event.listens_for(store.engine, "connect")
    def trace(dbapi_conn, record):
        dbapi_conn.set_trace_callback(traced.append)

    store.engine.dispose()
    try:
        claims = [
            {
                "key": f"k{i}",
                "type": "integer",
                "entity": "order",
                "entity_id": demo.order_id(i),
                "field": "line_count",
                "value": 1,
            }
            for i in range(30)
        ]
        claims.append(
            {
                "key": "eta",
                "type": "date",
                "entity": "order",
                "entity_id": demo.order_id(3),
                "field": "estimated_delivery",
                "value": "2026-08-03",
            }
        )
        p = {"answer_template": " ".join("{" + c["key"] + "}" for c in claims), "claims": claims}
        assert not store._instrumented()
        d = verify(p, policy, store, principal=demo.customer_id(0), now=demo.NOW)
        selects = [s for s in traced if s.lstrip().upper().startswith("SELECT")]
        assert len(selects) == 1
        head = selects[0].split("WHERE")[0]
        for col in ("line_count", "estimated_delivery", "updated_at"):
            assert col in head
        for col in ("weight_kg", "total_minor", "status", "shipped_at"):
            assert col not in head
        assert len(d.results) == 31
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
def test_a_pooled_connection_closed_under_guard_is_replaced_on_the_direct_path(backend, tmp_path_factory, request):
    """Pre-ping runs at checkout, so the direct cursor path never uses a connection the server has dropped."""
    from tests.conftest import _worker, backend_url

    url = backend_url(backend, tmp_path_factory, _worker(request), "direct_path")
    demo.build(url, n_orders=60, n_customers=20).dispose()
    policy = demo.policy()
    store = RecordStore(url, policy)
    try:
        assert run((url, policy, store), demo.payloads()["answer"]).action is Action.ANSWER
        raw = store.engine.raw_connection()
        victim = raw.dbapi_connection
        raw.close()
        victim.close()
        assert not store._instrumented()
        assert run((url, policy, store), demo.payloads()["answer"]).action is Action.ANSWER
    finally:
        store.close()
