"""Properties over hostile payloads and templates, on the suite's own SQLite database.

Whatever the model sends: only guard's documented errors or a decision come
out; an ``answer`` needs every claim confirmed; its text is the template with
each slot replaced by the database's value (read here independently with plain
SQL); and no model string (marked with ``MARK``) reaches an answer, a refusal
or the facts handed back for regeneration.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from guard import demo
from guard.decision import Action, Decision
from guard.errors import GuardError, PayloadError
from guard.linting import lint
from guard.payload import load_payload, template_pieces
from guard.payload.slots import format_characters
from guard.pipeline import Guard, verify
from guard.records.checker import Status

from .strategies import MARK, TYPE_SAMPLES, any_json, as_json_text, deep_json, hostile_text, mutated_payloads, payloads

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GATE_OPEN = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "off", "freetext": "off", "ratio": "off"}}}
}
GATE_SHAPES = {
    "domains": {"orders": {"stages": {"format": "enforce", "shape": "enforce", "freetext": "off", "ratio": "report"}}}
}


def expected_text(records, payload: dict[str, Any], principal: Any) -> str:
    """The template with every slot replaced by the database's value, rendered from the oracle's own rows."""
    by_key = {c["key"]: c for c in payload["claims"]}
    out = []
    for piece in template_pieces(payload["answer_template"]):
        if piece.slot is None:
            out.append(piece.text)
        else:
            c = by_key[piece.slot.name]
            assert_checkable(records, c, principal)
            shown = records.shown(c["entity"], c["entity_id"], c["field"], principal)
            assert shown is not None, f"answered a claim the database has no value for: {c}"
            out.append(shown)
    return "".join(out)


def assert_checkable(records, c: dict[str, Any], principal: Any) -> None:
    """What an answered claim must satisfy, judged from the policy and the oracle's rows, not guard's results."""
    ent = records.policy.entities.get(c["entity"])
    fp = ent.fields.get(c["field"]) if ent else None
    assert fp is not None and fp.type.value == c["type"], f"answered a claim outside the policy: {c}"
    assert not (ent.scope and principal is None), f"answered a scoped claim without a principal: {c}"
    row = records.row(c["entity"], c["entity_id"], principal)
    assert row is not None, f"answered a claim about a row the caller cannot see: {c}"
    if fp.freshness is not None:
        updated = datetime.fromisoformat(str(row[ent.updated_at])).replace(tzinfo=UTC)
        assert demo.NOW - updated <= fp.freshness, f"answered a stale claim: {c}"


def literal_prose(template: str) -> str:
    return "".join(p.text for p in template_pieces(template) if p.slot is None)


def assert_sound(records, payload: dict[str, Any], d: Decision, principal: Any) -> None:
    assert isinstance(d, Decision)
    event(d.action.value)
    statuses = [r.status for r in d.results]
    if d.action is Action.ANSWER:
        assert payload["claims"] and len(statuses) == len(payload["claims"])
        assert all(s is Status.CONFIRMED for s in statuses)
        assert d.text == expected_text(records, payload, principal)
        prose = literal_prose(payload["answer_template"])
        from_db = [records.shown(c["entity"], c["entity_id"], c["field"], principal) or "" for c in payload["claims"]]
        for c in payload["claims"]:
            for s in (c["value"], c["entity_id"]):
                if isinstance(s, str) and len(s.strip()) >= 4 and s in d.text:
                    assert s in prose or any(s in v for v in from_db), f"model string {s!r} reached the answer"
    else:
        assert d.text is None
    if statuses and all(s is Status.CONFIRMED for s in statuses):
        assert d.action is Action.ANSWER
    if d.action is Action.REGENERATE:
        assert Status.CONTRADICTED in statuses or Status.MALFORMED in statuses
        assert set(d.contradicted) == {r.key for r in d.results if r.status in (Status.CONTRADICTED, Status.MALFORMED)}
        for key, fact in d.facts.items():
            c = next(c for c in payload["claims"] if c["key"] == key)
            assert fact["text"] == records.shown(c["entity"], c["entity_id"], c["field"], principal)
    shown_to_user = json.dumps([d.text, d.message, d.facts, d.citations], ensure_ascii=False, default=str)
    assert MARK not in shown_to_user


def mix_in_truth(data, records, payload: dict[str, Any], principal: Any) -> dict[str, Any]:
    """Replace some claims by true ones (some on stale rows, some nudged to be wrong): every decision is reachable."""
    truth = records.true_claims(principal)
    claims = []
    for c in payload["claims"]:
        kind = data.draw(st.sampled_from(["hostile", "true", "true", "wrong", "stale"]))
        if kind == "hostile":
            claims.append(c)
            continue
        entity = data.draw(st.sampled_from(["order", "order", "customer"]))
        choices = [x for x in truth if x["entity"] == entity] or truth
        if kind == "stale":
            choices = [x for x in truth if records.stale(x)] or choices
        t = dict(data.draw(st.sampled_from(choices)), key=c["key"])
        if kind == "wrong":
            t["value"] = data.draw(st.sampled_from(["ord_1", "1.5", 999999, "nobody", "2001-01-01"]))
        claims.append(t)
    return {"answer_template": payload["answer_template"], "claims": claims}


@PROPS
@given(
    payload=payloads(), principal=st.sampled_from([demo.PRINCIPAL, demo.PRINCIPAL, None, "cus_1001"]), data=st.data()
)
def test_verify_is_sound_on_hostile_payloads(records, payload, principal, data):
    payload = mix_in_truth(data, records, payload, principal)
    try:
        d = verify(payload, records.policy, records.store, principal=principal, now=demo.NOW)
    except PayloadError:
        return
    assert_sound(records, payload, d, principal)


@PROPS
@given(payload=payloads())
def test_verify_answers_true_payloads_built_from_the_database(records, payload):
    """Rewrite every claim to the database's own value: whatever the template, it must then be answered
    (unless the template itself is unsafe), so soundness above is not won by refusing everything."""
    policy = records.policy
    fixed = []
    for c in payload["claims"]:
        fixed.append(
            {
                "key": c["key"],
                "type": "integer",
                "entity": "order",
                "entity_id": "ord_88431",
                "field": "line_count",
                "value": 3,
            }
        )
    p = {"answer_template": payload["answer_template"], "claims": fixed}
    try:
        d = verify(p, policy, records.store, principal=demo.PRINCIPAL, now=demo.NOW)
    except PayloadError:
        return
    if fixed and format_characters(p["answer_template"]):  # invisible format characters make it unsafe (F110)
        assert d.action is Action.REFUSE and {f.code for f in d.findings} == {"F110"}
    elif fixed:
        assert d.action is Action.ANSWER
    assert_sound(records, p, d, demo.PRINCIPAL)


@PROPS
@given(payload=payloads(), shapes=st.booleans(), data=st.data())
def test_gate_run_gives_a_decision_or_a_payload_error(records, payload, shapes, data):
    payload = mix_in_truth(data, records, payload, demo.PRINCIPAL)
    g = Guard(records.policy, records.store, domain="orders", config=GATE_SHAPES if shapes else GATE_OPEN)
    try:
        d = g.run(payload, principal=demo.PRINCIPAL, now=demo.NOW)
    except PayloadError:
        return
    assert_sound(records, payload, d, demo.PRINCIPAL)
    if d.results == () and d.action is Action.REFUSE and payload["claims"]:
        assert d.findings and MARK not in d.message


@PROPS
@given(data=st.one_of(any_json, mutated_payloads()))
def test_load_payload_takes_any_json_value(data):
    for form in (data, as_json_text(data), as_json_text(data).encode("utf-8", "surrogatepass")):
        try:
            p = load_payload(form)
        except PayloadError as exc:
            assert exc.problems or exc.message
            continue
        assert isinstance(p.answer_template, str)


@settings(max_examples=30, deadline=None)
@given(text=deep_json)
def test_deep_nesting_is_a_payload_error(text):
    with pytest.raises(PayloadError):
        load_payload(text)
    with pytest.raises(PayloadError):
        load_payload('{"answer_template": "x", "claims": [' + text + "]}")


@PROPS
@given(blob=st.binary(max_size=300))
def test_load_payload_takes_any_bytes(blob):
    with contextlib.suppress(PayloadError):
        load_payload(blob)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_non_finite_numbers_are_rejected(text):
    raw = (
        '{"answer_template": "{a}", "claims": [{"key": "a", "type": "money", "entity": "order", '
        f'"entity_id": "ord_88431", "field": "total_minor", "value": {text}}}]}}'
    )
    with pytest.raises(PayloadError):
        load_payload(raw)
    with pytest.raises(PayloadError):
        load_payload(json.loads(raw, parse_constant=float))


@PROPS
@given(template=st.one_of(hostile_text, st.text(max_size=200)), domain=st.sampled_from(["orders", "billing"]))
def test_lint_gives_findings_never_a_crash(template, domain):
    try:
        r = lint(template, domain=domain)
    except GuardError:
        return
    for f in r.findings:
        assert 0 <= f.start <= f.end <= len(template)


SAMPLES = {t: v + [None, 10**30, -1.5, "", "  "] for t, v in TYPE_SAMPLES.items()}

KINDS_POLICY = {
    "timezone": "Asia/Tokyo",
    "locale": "en_GB",
    "entities": {
        "thing": {
            "table": "kinds",
            "fields": {
                "identifier": {"type": "identifier"},
                "string": {"type": "string"},
                "integer": {"type": "integer"},
                "decimal": {"type": "decimal", "tolerance": 0.05, "unit": "kg"},
                "money": {"type": "money", "currency": "GBP"},
                "date": {"type": "date"},
                "timestamp": {"type": "timestamp"},
                "enum": {"type": "enum"},
                "boolean": {"type": "boolean"},
            },
        }
    },
}


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """One row holding a value of every claim type."""
    import sqlalchemy as sa

    from guard.records.policy import load_policy
    from guard.records.store import RecordStore

    url = f"sqlite:///{tmp_path_factory.mktemp('kinds') / 'kinds.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                'CREATE TABLE kinds (id VARCHAR(20) PRIMARY KEY, identifier VARCHAR(20), "string" '
                'VARCHAR(40), "integer" INTEGER, "decimal" NUMERIC(8,3), money BIGINT, "date" DATE, '
                '"timestamp" DATETIME, enum VARCHAR(20), "boolean" BOOLEAN)'
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO kinds VALUES ('t1', 'ord_88431', 'Ada Lovelace', 3, 4.2, 129900, "
                "'2026-07-30', '2026-07-29 23:40:00', 'shipped', 1)"
            )
        )
    policy = load_policy(KINDS_POLICY)
    store = RecordStore(url, policy)
    yield policy, store
    store.close()
    engine.dispose()


@pytest.mark.parametrize("value_type", sorted(TYPE_SAMPLES))
@pytest.mark.parametrize("claim_type", sorted(TYPE_SAMPLES))
def test_every_type_against_every_other_types_values(kinds, claim_type, value_type):
    """A claim of each type, on a field of that type, with each sample value of every type: a decision
    (never an exception), and an answer always shows the stored value, not the claim."""
    from guard.records.formatting import format_value

    policy, store = kinds
    fp = policy.entities["thing"].fields[claim_type]
    stored_text = None
    for value in SAMPLES[value_type]:
        p = {
            "answer_template": "It is {v}.",
            "claims": [
                {
                    "key": "v",
                    "type": claim_type,
                    "entity": "thing",
                    "entity_id": "t1",
                    "field": claim_type,
                    "value": value,
                }
            ],
        }
        try:
            d = verify(p, policy, store)
        except PayloadError:
            assert isinstance(value, float) and value != value or value in (float("inf"), float("-inf"))
            continue
        assert d.action in (Action.ANSWER, Action.REGENERATE), (value, d.results[0].reason)
        r = d.results[0]
        stored_text = format_value(r.actual, fp, policy)
        if d.action is Action.ANSWER:
            assert d.text == f"It is {stored_text}."
        else:
            assert d.facts["v"]["text"] == stored_text
    if claim_type == value_type:
        assert stored_text is not None
