"""``json_bytes`` (the lean path's 200 body) writes what Starlette's ``JSONResponse`` does, byte for byte, or fails as
it does; pydantic_core writes it only for :func:`plain_json` content, and the gate's decisions are such content."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from guard import demo
from guard.server.app import PLAIN_INT, PLAIN_NODES, json_bytes, plain_json


class Text(str):
    pass


ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)  # lone surrogates and controls included
PLAIN_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-PLAIN_INT + 1, PLAIN_INT - 1), st.text(max_size=12), ANY_TEXT
)
ODD_LEAVES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.sampled_from([PLAIN_INT, -PLAIN_INT, Text("t"), (1, "a"), b"x"]),
    st.builds(pow, st.just(10), st.just(4400)),  # past str()'s 4,300 digits (built, so hypothesis does not show it)
)


def trees(leaves: st.SearchStrategy) -> st.SearchStrategy:
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=5) | st.dictionaries(st.one_of(ANY_TEXT, st.integers()), inner, max_size=5)
        ),
        max_leaves=30,
    )


def reference(content):
    try:
        return JSONResponse(content).body
    except Exception as exc:  # the reference's own refusal: the same type must come out of json_bytes
        return type(exc)


def ours(content):
    try:
        return json_bytes(content)
    except Exception as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(trees(PLAIN_LEAVES))
def test_plain_content_is_written_as_the_reference_writes_it(content):
    assert ours(content) == reference(content)


@settings(max_examples=400, deadline=None)
@given(trees(st.one_of(PLAIN_LEAVES, ODD_LEAVES)))
def test_any_content_is_written_or_refused_as_the_reference_does(content):
    assert ours(content) == reference(content)


ODD = [1e-05, [0.5], {"a": float("nan")}, 10**4400, PLAIN_INT, -PLAIN_INT, Text("t"), {"a": (1, 2)}, {1: "a"}]


@pytest.mark.parametrize("content", ODD, ids=[f"odd{i}" for i in range(len(ODD))])
def test_what_pydantic_core_would_write_otherwise_is_not_plain(content):
    assert not plain_json(content)
    assert ours(content) == reference(content)


def test_plain_content_is_told_apart():
    assert plain_json({"a": [None, True, 1, "x", {"b": []}]})
    assert plain_json(PLAIN_INT - 1) and plain_json(-PLAIN_INT + 1)
    lone = {"a": "\ud800"}  # plain, but pydantic_core refuses it: the reference then refuses it its own way
    assert plain_json(lone)
    assert ours(lone) is reference(lone) is UnicodeEncodeError


def test_a_cycle_ends_and_is_refused_as_the_reference_refuses_it():
    cyclic: dict = {}
    cyclic["self"] = [cyclic]
    assert not plain_json(cyclic)
    assert ours(cyclic) is reference(cyclic) is ValueError


def test_deep_or_wide_content_past_the_bound_falls_back():
    wide = [[] for _ in range(PLAIN_NODES + 1)]
    assert not plain_json(wide)
    assert ours(wide) == reference(wide)


@pytest.mark.parametrize("kind", ["answer", "refuse", "regenerate"])
def test_the_gates_decisions_take_the_plain_path(sqlite_demo_gate, kind):
    """The fast path is taken for what it is there for: the decisions the gate returns (floats aside)."""
    payloads = demo.payloads()
    payload = payloads.get(kind) or next(iter(payloads.values()))
    decision = sqlite_demo_gate.run(json.dumps(payload), demo.PRINCIPAL, now=demo.NOW).to_dict()
    assert ours(decision) == reference(decision)
    if not _has_float(decision):
        assert plain_json(decision)


def _has_float(content) -> bool:
    if isinstance(content, float):
        return True
    if isinstance(content, dict):
        return any(_has_float(v) for v in content.values())
    if isinstance(content, list):
        return any(_has_float(v) for v in content)
    return False


@pytest.fixture(scope="module")
def sqlite_demo_gate(tmp_path_factory):
    from guard.pipeline import Guard

    url = f"sqlite:///{tmp_path_factory.mktemp('json') / 'records.db'}"
    demo.build(url, n_orders=50, n_customers=20)
    gate = Guard(demo.policy(), url, domain="orders", config={"domains": {"orders": {"stages": {"freetext": "off"}}}})
    yield gate
    gate.close()
