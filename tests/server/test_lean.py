"""``POST /v1/run`` and ``/v1/check`` are answered by :class:`guard.server.app.Lean` when their parameters are
plainly valid; the FastAPI routes are the reference. Both must give the same status, headers and bytes for the
same request, errors included (the request id, timings and a stale record's age by the clock, which differ between
any two requests, aside)."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guard.server.app as server_app
from guard import demo
from tests.server.conftest import KEYS
from tests.server.test_plain_path import AUTH, CASES, NAMES, VALUES

PAYLOAD = json.dumps(demo.payloads()["answer"]).encode()
INSIDE = json.dumps({**demo.payloads()["answer"], "principal": "cus_other"}).encode()
BODIES = {
    "payload": PAYLOAD,
    "principal inside": INSIDE,
    "not json": b"{",
    "a list": b"[]",
    "empty": b"",
    "not utf-8": b'{"answer_template": "\xff"}',
    "too large": b" " * 9000 + PAYLOAD,  # max_body_bytes is 8192 in the test config
}
TIMES = re.compile(rb'"(latency_ms|ms)":[0-9.eE+-]+')
AGE = re.compile(rb"last updated [^;]* ago")  # without ``now``, a stale record's age is read off the clock


def _answer(client, path: str, query: str, headers: list[tuple[str, str]], body, *, lean: bool, monkeypatch):
    """Status, headers (without date, request id and length) and body (request id and timings masked)."""
    monkeypatch.setattr(server_app, "_lean_enabled", lambda: lean)
    r = client.post(f"{path}?{query}", headers=headers, content=body)
    rid = r.headers.get("x-request-id")
    raw = r.content
    assert int(r.headers["content-length"]) == len(raw)
    if rid is not None:
        assert len(rid) == 32
        raw = raw.replace(rid.encode(), b"<rid>")
    raw = re.sub(rb'"request_id":"[0-9a-f]{32}"', b'"request_id":"<rid>"', raw)
    headers_out = [(k, v) for k, v in r.headers.multi_items() if k not in ("date", "x-request-id", "content-length")]
    return r.status_code, headers_out, rid is not None, AGE.sub(b"last updated <age> ago", TIMES.sub(rb'"\1":0', raw))


def _both(client, path, query, headers, body, monkeypatch):
    lean = _answer(client, path, query, headers, body, lean=True, monkeypatch=monkeypatch)
    reference = _answer(client, path, query, headers, body, lean=False, monkeypatch=monkeypatch)
    return lean, reference


@pytest.mark.parametrize("auth", AUTH, ids=["bearer", "lowercase", "basic", "wrong", "none"])
@pytest.mark.parametrize("body", list(BODIES), ids=list(BODIES))
def test_lean_answers_as_the_fastapi_routes_do(served_sqlite, monkeypatch, auth, body):
    headers = {} if auth is None else {"Authorization": auth}
    with served_sqlite.client(None, **headers) as c:
        for path, query, extra in CASES:
            lean, reference = _both(c, path, query, extra, BODIES[body], monkeypatch)
            assert lean == reference, (path, query, extra)


def test_lean_takes_the_plain_requests_and_they_succeed(served_sqlite, monkeypatch):
    """The agreement above would hold trivially if Lean declined everything: count the requests that reach the
    FastAPI stack (Edge is its outer layer) with Lean on."""
    calls = []
    edge_call = server_app.Edge.__call__

    async def counted(self, scope, receive, send):
        calls.append(scope["path"])
        await edge_call(self, scope, receive, send)

    monkeypatch.setattr(server_app.Edge, "__call__", counted)
    with served_sqlite.client("fuzz", **{"X-Guard-Principal": demo.PRINCIPAL}) as c:
        r = c.post(f"/v1/run?policy=orders&now={quote(demo.NOW.isoformat())}", content=PAYLOAD)
        assert r.status_code == 200 and r.json()["action"] in ("answer", "refuse", "answer_partial")
        assert r.headers["content-type"] == "application/json" and len(r.headers["x-request-id"]) == 32
        assert c.post("/v1/run?policy=orders&policy=orders", content=PAYLOAD).status_code in (200, 422)
        assert c.get("/healthz").status_code == 200
    assert calls == ["/v1/run", "/healthz"]  # the repeated parameter went to FastAPI; the plain run did not


def test_lean_rate_limit_answers_as_the_route_does(served_sqlite, monkeypatch):
    """A key past its rate (``slow_lean``: 2 a minute) gets the same 429 from both (Retry-After may tick by a
    second)."""
    with served_sqlite.client("slow_lean") as c:
        for _ in range(3):
            c.post("/v1/run?policy=orders", content=PAYLOAD)
        lean, reference = _both(c, "/v1/run", "policy=orders", [], PAYLOAD, monkeypatch)
    assert lean[0] == 429

    def without_retry(answer):
        status, headers, has_rid, body = answer
        return status, [h for h in headers if h[0] != "retry-after"], has_rid, body

    assert without_retry(lean) == without_retry(reference)
    assert any(h[0] == "retry-after" for h in lean[1])


def _chunks(body: bytes):
    for i in range(0, len(body), 1000):
        yield body[i : i + 1000]


@pytest.mark.parametrize("body", ["payload", "too large"])
def test_lean_streamed_body_answers_as_the_route_does(served_sqlite, monkeypatch, body):
    """A body without Content-Length (chunked) is limited as it streams in, by both."""
    with served_sqlite.client("fuzz") as c:
        answers = []
        for lean in (True, False):
            monkeypatch.setattr(server_app, "_lean_enabled", lambda lean=lean: lean)
            r = c.post("/v1/run?policy=orders", content=_chunks(BODIES[body]))
            masked = re.sub(rb"[0-9a-f]{32}", b"<rid>", TIMES.sub(rb'"\1":0', r.content))
            answers.append((r.status_code, r.headers["content-type"], masked))
    assert answers[0] == answers[1]
    assert answers[0][0] == (413 if body == "too large" else 200)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(["/v1/run", "/v1/check"]),
    pairs=st.lists(st.tuples(NAMES, VALUES), max_size=4),
    principal=st.one_of(st.none(), st.sampled_from([demo.PRINCIPAL, "", "cus_9999"])),
    auth=st.sampled_from([f"Bearer {KEYS['fuzz']}", f"Bearer {KEYS['crm']}", *AUTH[1:]]),
    body=st.sampled_from(list(BODIES)),
)
def test_lean_agrees_with_the_routes_on_generated_requests(
    served_sqlite, monkeypatch, path, pairs, principal, auth, body
):
    query = "&".join(f"{n}={v}" for n, v in [("policy", "orders"), *pairs])
    headers = [] if auth is None else [("Authorization", auth)]
    if principal is not None:
        headers.append(("X-Guard-Principal", principal))
    with served_sqlite.client(None) as c:
        lean, reference = _both(c, path, query, headers, BODIES[body], monkeypatch)
    assert lean == reference


@pytest.mark.parametrize("path", ["/v1/run", "/v1/check"])
def test_lean_internal_error_answers_as_the_route_does(served_sqlite, monkeypatch, path):
    """An exception no handler knows (a bug inside the gate) is the same 500 problem from both, with the request
    id in the body and none of the exception's words. Both re-raise it to uvicorn (which logs it and closes the
    connection), so each side asks on a connection of its own."""
    from guard.pipeline import AsyncGuard

    secret = "boom: /srv/guard/internal/path"

    async def broken(self, *args, **kwargs):
        raise RuntimeError(secret)

    monkeypatch.setattr(AsyncGuard, "run", broken)
    monkeypatch.setattr(AsyncGuard, "verify", broken)
    answers = []
    for lean in (True, False):
        with served_sqlite.client("fuzz", **{"X-Guard-Principal": demo.PRINCIPAL}) as c:
            answers.append(_answer(c, path, "policy=orders", [], PAYLOAD, lean=lean, monkeypatch=monkeypatch))
    assert answers[0] == answers[1]
    status, headers, _has_rid, body = answers[0]
    assert status == 500
    assert ("content-type", "application/problem+json") in headers
    problem = json.loads(body)
    assert problem["status"] == 500 and problem["code"] == "internal" and problem["request_id"] == "<rid>"
    assert b"boom" not in body and b"/srv/guard" not in body and b"RuntimeError" not in body
