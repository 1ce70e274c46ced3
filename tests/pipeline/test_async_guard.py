"""AsyncGuard: the same decisions as Guard, with the records read through SQLAlchemy's asyncio engine."""

from __future__ import annotations

import asyncio
import copy

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import Action
from guard.errors import PayloadError, StoreUnavailable
from guard.pipeline import AsyncGuard, Guard
from guard.records.store import AsyncRecordStore, async_url

CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}
IDS = ["ord_88431", "ord_88432", "ord_88000", "ord_88007", "ord_99999", "", "x\x00y", 88431]
PROSE = ["", " It was much quicker than usual.", " Your order has been cancelled.", " Thanks!"]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10),
    st.sampled_from(["2026-07-30", "2026-08-03", "3", "£1,299.00", "1299", "shipped", "dispatched", "4.2"]),
    st.text(max_size=12),
)


@st.composite
def payloads(draw):
    p = copy.deepcopy(demo.payloads()[draw(st.sampled_from(["answer", "refuse", "regenerate"]))])
    for c in p["claims"]:
        if draw(st.booleans()):
            c["value"] = draw(VALUES)
        if draw(st.integers(0, 3)) == 0:
            c["entity_id"] = draw(st.sampled_from(IDS))
    p["answer_template"] += draw(st.sampled_from(PROSE))
    return p


@pytest.fixture()
def gates(demo_db, loop):
    url, policy, _store = demo_db
    sync = Guard(policy, url, domain="orders", config=CONFIG)
    agate = AsyncGuard(policy, url, domain="orders", config=CONFIG)
    loop.run_until_complete(agate.open())
    yield sync, agate
    loop.run_until_complete(agate.aclose())
    sync.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=payloads(), principal=st.sampled_from([demo.PRINCIPAL, "cus_1000", None, ""]))
def test_async_guard_decides_as_guard_does(gates, loop, payload, principal):
    sync, agate = gates
    try:
        expected = sync.run(payload, principal, now=demo.NOW, request_id="r").to_dict()
    except PayloadError as exc:
        with pytest.raises(PayloadError) as info:
            loop.run_until_complete(agate.run(payload, principal, now=demo.NOW, request_id="r"))
        assert info.value.to_dict() == exc.to_dict()
        return
    got = loop.run_until_complete(agate.run(payload, principal, now=demo.NOW, request_id="r")).to_dict()
    assert got == expected


def test_reads_go_through_the_asyncio_driver(gates, loop):
    _sync, agate = gates
    engine = agate.store.async_engine
    assert engine.dialect.is_async and engine.url.get_driver_name() in ("aiosqlite", "psycopg_async", "aiomysql")
    seen = []
    sa.event.listen(engine.sync_engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    d = loop.run_until_complete(agate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW))
    assert d.action is Action.ANSWER and len(seen) == 1 and "orders" in seen[0]
    checked = loop.run_until_complete(agate.verify(demo.payloads()["regenerate"], demo.PRINCIPAL, now=demo.NOW))
    assert checked.action is Action.REGENERATE


def test_concurrent_runs_share_the_pool(gates, loop):
    _sync, agate = gates

    async def many():
        return await asyncio.gather(
            *(agate.run(demo.payloads()[k], demo.PRINCIPAL, now=demo.NOW) for k in ["answer", "refuse"] * 20)
        )

    actions = [d.action for d in loop.run_until_complete(many())]
    assert actions == [Action.ANSWER, Action.REFUSE] * 20


def test_an_unreachable_database_is_unavailable_not_an_exception(loop):
    async def go():
        async with AsyncGuard(
            demo.policy(), "postgresql+psycopg://nobody@127.0.0.1:1/none", domain="orders", config=CONFIG
        ) as gate:
            assert not await gate.store.aping()
            return await gate.run(demo.payloads()["answer"], demo.PRINCIPAL, now=demo.NOW)

    d = loop.run_until_complete(go())
    assert d.action is Action.REFUSE and {r.status.value for r in d.results} == {"unavailable"}


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("sqlite:///x.db", "sqlite+aiosqlite"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg_async"),
        ("postgresql://u@h/db", "postgresql+psycopg_async"),
        ("mysql+pymysql://u@h/db", "mysql+aiomysql"),
        ("mariadb+pymysql://u@h/db", "mariadb+aiomysql"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite"),
    ],
)
def test_async_url_picks_the_backends_asyncio_driver(url, driver):
    assert async_url(url).drivername == driver


def test_async_url_refuses_what_it_cannot_drive():
    for url in ("oracle://u@h/db", "not a url"):
        with pytest.raises(StoreUnavailable):
            async_url(url)


def test_the_sync_ping_of_the_async_store_says_to_await(sqlite_demo):
    store = AsyncRecordStore(sqlite_demo[0], sqlite_demo[1])
    with pytest.raises(TypeError, match="await store.aping"):
        store.ping()
    store.close()
