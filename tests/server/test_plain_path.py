"""``/v1/run`` and ``/v1/check`` skip FastAPI's parameter machinery when their parameters are plainly valid
(:func:`guard.server.app._plain_params`): the answers must be the ones FastAPI's path gives, request for request,
and the shortcut must read a parameter exactly as Starlette does or not take the request at all."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

import guard.server.app as server_app
from guard import demo
from tests.server.conftest import KEYS

HEADER = b"x-guard-principal"
RUN_QUERY = {"policy": 128, "domain": 128, "now": 64}
PAYLOAD = demo.payloads()["answer"]
NOW = demo.NOW.isoformat()

# (path, query string, headers): well-formed requests and every way one can fall back to FastAPI or be refused
# (a repeated principal header among them: FastAPI reads the first)
CASES = [
    ("/v1/run", f"policy=orders&now={quote(NOW)}", [("X-Guard-Principal", demo.PRINCIPAL)]),
    ("/v1/run", "policy=orders", []),
    ("/v1/run", "policy=orders&domain=orders&extra=1", [("X-Guard-Principal", "")]),
    ("/v1/run", "policy=orders&domain=Orders", []),
    ("/v1/run", "policy=customers&domain=account", [("X-Guard-Principal", demo.PRINCIPAL)]),
    ("/v1/run", "policy=nope", []),
    ("/v1/run", "policy=", []),
    ("/v1/run", "", []),
    ("/v1/run", "domain=orders", []),
    ("/v1/run", "policy=" + "x" * 128, []),
    ("/v1/run", "policy=" + "x" * 129, []),
    ("/v1/run", "policy=orders&policy=customers", []),
    ("/v1/run", "policy=orders&now=" + "1" * 65, []),
    ("/v1/run", "policy=orders&now=yesterday", []),
    ("/v1/run", "policy=orders&domain=" + "d" * 129, []),
    ("/v1/check", f"policy=orders&now={quote(NOW)}", [("X-Guard-Principal", demo.PRINCIPAL)]),
    ("/v1/check", "policy=orders&domain=" + "d" * 500, []),
    ("/v1/check", "now=x", []),
    ("/v1/run", f"policy=orders&now={quote(NOW)}", [("X-Guard-Principal", demo.PRINCIPAL), ("x-guard-principal", "x")]),
]
AUTH = [f"Bearer {KEYS['fuzz']}", f"bearer {KEYS['fuzz']}", f"Basic {KEYS['fuzz']}", "Bearer wrong", None]


def _without_ids(value):
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("request_id", "latency_ms")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def _answer(client, path: str, query: str, headers: list[tuple[str, str]]) -> tuple[int, str | None, object]:
    r = client.post(f"{path}?{query}", headers=headers, json=PAYLOAD)
    return r.status_code, r.headers.get("content-type"), _without_ids(r.json())


@pytest.mark.parametrize("auth", AUTH, ids=["bearer", "lowercase", "basic", "wrong", "none"])
def test_the_plain_path_answers_as_fastapi_does(served_sqlite, monkeypatch, auth):
    headers = {} if auth is None else {"Authorization": auth}
    with served_sqlite.client(None, **headers) as c:
        plain = [_answer(c, p, q, h) for p, q, h in CASES]
        monkeypatch.setattr(server_app, "_plain_params", lambda *_a: None)  # every request through FastAPI
        through_fastapi = [_answer(c, p, q, h) for p, q, h in CASES]
    assert plain == through_fastapi
    if auth is not None and auth.lower().startswith("bearer g"):
        assert plain[0][0] == 200 and plain[-4][0] == 200  # the cases are not all refusals


NAMES = st.sampled_from(["policy", "domain", "now", "other", "Policy", "policy%20", "po%6Cicy"])
VALUES = st.one_of(
    st.text(max_size=140).map(quote),
    st.text(alphabet="ab+%2 =&", max_size=140),
    st.sampled_from(["", "orders", "a" * 64, "a" * 65, "a" * 128, "a" * 129, "%E2%82%AC" * 43, "%FF"]),
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(NAMES, VALUES), max_size=6),
    st.lists(st.sampled_from([HEADER, b"authorization", b"x-other"]), max_size=3),
)
def test_plain_params_read_as_starlette_or_decline(pairs, header_names):
    query_string = "&".join(f"{n}={v}" for n, v in pairs).encode("latin-1")
    headers = [(name, b"cus_%d" % i) for i, name in enumerate(header_names)]
    got = server_app._plain_params({"query_string": query_string, "headers": headers}, RUN_QUERY, HEADER)
    starlette = QueryParams(query_string.decode("latin-1"))
    repeated = any(len(starlette.getlist(n)) > 1 for n in RUN_QUERY)
    too_long = any(len(v) > RUN_QUERY[n] for n in RUN_QUERY for v in starlette.getlist(n))
    principals = [v.decode("latin-1") for k, v in headers if k == HEADER]
    declines = repeated or too_long or "policy" not in starlette or len(principals) > 1
    assert (got is None) == declines
    if got is not None:
        assert {n: got.get(n) for n in RUN_QUERY} == {n: starlette.get(n) for n in RUN_QUERY}
        assert got["principal"] == (principals[0] if principals else None)
    # through the route's cache of parsed query strings (shared by every example, so filled by earlier ones with
    # other headers): the same answer, the first time and again, and a caller's changes do not reach the cache
    scope = {"query_string": query_string, "headers": headers}
    for _ in range(2):
        cached = server_app._plain_params(scope, RUN_QUERY, HEADER, CACHE)
        assert cached == got
        if cached is not None:
            cached["policy"] = "changed"
    assert len(CACHE) <= server_app.QUERY_CACHE_SIZE
    assert (query_string in CACHE) == (len(query_string) <= server_app.QUERY_CACHE_BYTES)


CACHE: dict = {}
