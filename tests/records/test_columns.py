"""The column-by-column checker path gives exactly what the claim-by-claim path gives.

``check`` judges the claims of one field together once there are at least
``_COLUMNS`` of them (ints and ASCII ids compared as whole lists, update times
rewritten in one pass). These tests hold it to the one-by-one reference
(``_check(..., batch=False)``) on every backend, on payloads that mix right,
wrong, malformed, unknown, duplicated and out-of-scope claims.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import decide
from guard.payload import load_payload
from guard.records import checker
from guard.records.checker import _COLUMNS, _aware, _check, _stamp, _stamps
from guard.records.policy import load_policy
from guard.records.store import RecordStore

_, ORDERS = demo.rows(600, 200)
BY_ID = {o["id"]: o for o in ORDERS}
FIELDS = {
    "id": "identifier",
    "line_count": "integer",
    "total_minor": "money",
    "status": "enum",
    "shipped_at": "date",
    "estimated_delivery": "date",
}


def unscoped_policy():
    data = demo.policy().model_dump(mode="json", exclude_none=True)
    del data["entities"]["order"]["scope"]
    return load_policy(data)


def value_for(field: str, order: dict, how: str):
    v = order[field]
    if how == "right":
        if field in ("shipped_at", "estimated_delivery"):
            return v.isoformat()[:10] if v is not None else "2026-07-01"
        if field == "total_minor":
            return v // 100 if v % 100 == 0 else f"{v / 100:.2f}"
        return v
    if how == "wrong":
        if field == "line_count":
            return v + 1
        return {
            "id": "ord_00001",
            "total_minor": 1,
            "status": "cancelled",
            "shipped_at": "2001-01-01",
            "estimated_delivery": "2001-01-01",
        }[field]
    return {"bool": True, "float": 3.0, "text": "3", "none": None, "unicode": "ord_\u00e9"}[how]


claim_spec = st.tuples(
    st.sampled_from(sorted(FIELDS)),
    st.sampled_from([o["id"] for o in ORDERS[:80]] + ["ord_00000"]),
    st.sampled_from(["right"] * 6 + ["wrong", "bool", "float", "text", "none", "unicode"]),
    st.booleans(),
)


def payload_of(specs) -> dict:
    claims = []
    for k, (field, oid, how, right_type) in enumerate(specs):
        order = BY_ID.get(oid, ORDERS[0])
        claims.append(
            {
                "key": f"c{k}",
                "type": FIELDS[field] if right_type else "string",
                "entity": "order",
                "entity_id": oid,
                "field": field,
                "value": value_for(field, order, how),
            }
        )
    return {"answer_template": " ".join(f"{{c{k}}}" for k in range(len(claims))), "claims": claims}


@pytest.fixture(scope="module")
def unscoped(demo_db):
    url, _, _ = demo_db
    policy = unscoped_policy()
    store = RecordStore(url, policy)
    yield policy, store
    store.close()


def same_both_ways(payload, policy, store, principal=None, now=demo.NOW):
    fast = _check(payload, policy, store, principal, now, True)
    slow = _check(payload, policy, store, principal, now, False)
    assert [r._replace(latency_ms=0) for r in fast] == [r._replace(latency_ms=0) for r in slow]  # timing differs
    assert [type(r) for r in fast] == [checker.ClaimResult] * len(fast)
    a = decide(payload, fast, policy, request_id="r").to_dict()
    b = decide(payload, slow, policy, request_id="r").to_dict()
    assert a == b
    return fast


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(claim_spec, min_size=_COLUMNS, max_size=60), st.sampled_from([None, 0, 30]))
def test_columns_equal_claim_by_claim_on_every_backend(unscoped, specs, days):
    policy, store = unscoped
    payload = load_payload(payload_of(specs))
    same_both_ways(payload, policy, store, now=demo.NOW + timedelta(days=days) if days is not None else demo.NOW)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(claim_spec, min_size=_COLUMNS, max_size=40), st.sampled_from([demo.PRINCIPAL, None, "cus_1000"]))
def test_columns_equal_claim_by_claim_with_row_scope(demo_db, specs, principal):
    _, policy, store = demo_db
    same_both_ways(load_payload(payload_of(specs)), policy, store, principal=principal)


def test_the_column_path_is_taken_and_confirms(unscoped, monkeypatch):
    """Without this, the equality tests above could pass with the column path never running."""
    policy, store = unscoped
    taken = []
    real = checker._judge_many

    def spy(*a, **kw):
        out = real(*a, **kw)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(checker, "_judge_many", spy)
    specs = [(field, o["id"], "right", True) for o in ORDERS[:20] for field in ("id", "line_count", "total_minor")]
    results = same_both_ways(load_payload(payload_of(specs)), policy, store)
    assert taken == [True, True, False]  # ids and counts in columns; amounts written "12.34" go one by one
    assert all(r.status is checker.Status.CONFIRMED for r in results)
    assert all(r.updated_iso == r.updated_at.isoformat() for r in results)


def test_a_wrong_value_among_many_is_the_only_contradiction(unscoped):
    policy, store = unscoped
    specs = [("line_count", o["id"], "right", True) for o in ORDERS[:30]]
    specs[17] = ("line_count", ORDERS[17]["id"], "wrong", True)
    results = same_both_ways(load_payload(payload_of(specs)), policy, store)
    assert [r.status.value for r in results].count("contradicted") == 1
    assert results[17].status is checker.Status.CONTRADICTED and results[17].actual == ORDERS[17]["line_count"]


canonical = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=0) if d.microsecond % 3 else d
)


def text_forms(d: datetime, form: int) -> object:
    return [
        d.isoformat(sep=" ", timespec="microseconds"),
        d.isoformat(sep=" ", timespec="seconds"),
        d.isoformat(timespec="microseconds"),
        d.isoformat(timespec="seconds"),
        d.strftime("%Y%m%dT%H%M%S") + ".123",
        d.isoformat(sep="X", timespec="seconds"),
        d.isoformat(sep=" ", timespec="milliseconds"),
        d.isoformat() + "Z",
        d.isoformat() + "+05:00",
        d.isoformat(sep=" ", timespec="seconds") + "\n" + d.isoformat(sep=" ", timespec="seconds"),
        "garbage",
        d,
        d.replace(tzinfo=UTC),
        None,
        5,
    ][form]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(canonical, st.sampled_from([0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["UTC", "Europe/London"]),
    st.booleans(),
)
def test_update_times_in_one_pass_equal_one_at_a_time(items, tz_name, uniform):
    """Uniform canonical texts take the one-pass rewrite; anything else must fall back row by row."""
    if uniform:
        items = [(d, items[0][1]) for d, _ in items]
    values = [text_forms(d, form) for d, form in items]
    tz = ZoneInfo(tz_name)
    utc = tz_name == "UTC"
    dts, isos = _stamps(values, tz, utc)
    assert list(zip(dts, isos)) == [_stamp(v, tz, utc) for v in values]
    for v, dt, iso in zip(values, dts, isos):
        reference = _aware(v, tz, utc)
        assert dt == reference
        assert iso == (reference.isoformat() if reference is not None else None)
        if dt is not None:
            assert dt.utcoffset() == timedelta(0)
