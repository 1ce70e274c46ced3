"""The HTTP layer itself (SQLite): keys, limits, problem+json on every error, no 5xx on bad input, OpenAPI."""

from __future__ import annotations

import json
import time

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from referencing import Registry, Resource

from guard import demo
from tests.server.conftest import KEYS

PROBLEM = "application/problem+json"
NOW = {"now": demo.NOW.isoformat()}


def is_problem(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["status"] == status and body["code"] == code and body["type"] == f"urn:guard:problem:{code}"
    assert "Traceback" not in r.text and 'File "' not in r.text
    return body


@pytest.fixture(scope="module")
def openapi(served_sqlite):
    with served_sqlite.client(None) as c:
        return c.get("/openapi.json").json()


def conforms(doc: dict, r: httpx.Response, path: str, method: str = "post") -> None:
    """The response body validates against the schema the OpenAPI document gives for its status and media type."""
    op = doc["paths"][path][method]
    media = r.headers["content-type"].split(";")[0]
    schema = op["responses"][str(r.status_code)]["content"][media].get("schema")
    assert schema is not None, (path, r.status_code, media)
    registry = Registry().with_resource(
        "urn:doc", Resource.from_contents({**doc, "$schema": jsonschema.Draft202012Validator.META_SCHEMA["$id"]})
    )
    jsonschema.Draft202012Validator(
        {"$ref": "urn:doc#/components/schemas/" + schema["$ref"].rsplit("/", 1)[1]}, registry=registry
    ).validate(r.json())


def test_openapi_is_valid_3_1_and_carries_the_library_payload(openapi):
    assert openapi["openapi"].startswith("3.1")
    validate(openapi)
    payload = openapi["components"]["schemas"]["Payload"]
    assert set(payload["required"]) == {"answer_template", "claims"}
    body = openapi["paths"]["/v1/run"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/Payload"}
    assert "HTTPValidationError" not in openapi["components"]["schemas"]
    header = [p for p in openapi["paths"]["/v1/run"]["post"]["parameters"] if p["in"] == "header"]
    assert [h["name"] for h in header] == ["X-Guard-Principal"]


def test_responses_conform_to_the_document(served_sqlite, openapi):
    with served_sqlite.client("shop", **{"X-Guard-Principal": demo.PRINCIPAL}) as c:
        for name in ("answer", "refuse", "regenerate"):
            conforms(
                openapi, c.post("/v1/run", params={"policy": "orders", **NOW}, json=demo.payloads()[name]), "/v1/run"
            )
        conforms(openapi, c.post("/v1/run", params={"policy": "orders"}, content=b"[1]"), "/v1/run")
        conforms(openapi, c.post("/v1/run", params={"policy": "customers"}, json={}), "/v1/run")
        conforms(openapi, c.post("/v1/check", params={"policy": "orders"}, content=b"{"), "/v1/check")
        lint = c.post(
            "/v1/lint",
            json={
                "template": "Your order {o} has shipped. Honestly.",
                "domain": "orders",
                "slot_types": {"o": "identifier"},
            },
        )
        conforms(openapi, lint, "/v1/lint")
        conforms(openapi, c.post("/v1/lint", json={"template": 3, "domain": "orders"}), "/v1/lint")
        conforms(openapi, c.get("/v1/grammars"), "/v1/grammars", "get")
    with served_sqlite.client(None) as c:
        conforms(openapi, c.get("/readyz"), "/readyz", "get")
        conforms(openapi, c.post("/v1/run", params={"policy": "orders"}, json={}), "/v1/run")


def test_a_missing_or_wrong_key_is_401(served_sqlite):
    with served_sqlite.client(None) as c:
        r = c.post("/v1/run", params={"policy": "orders"}, json=demo.payloads()["answer"])
        assert is_problem(r, 401, "unauthorized")["detail"] == "an API key is required"
        assert r.headers["www-authenticate"] == "Bearer"
    with served_sqlite.client("gk_not_a_key") as c:
        is_problem(c.get("/v1/grammars"), 401, "unauthorized")
    with httpx.Client(base_url=served_sqlite.url, headers={"Authorization": f"Basic {KEYS['shop']}"}) as c:
        is_problem(c.get("/v1/grammars"), 401, "unauthorized")


def test_unknown_route_and_method_are_problems(served_sqlite):
    with served_sqlite.client("shop") as c:
        is_problem(c.get("/v1/nothing"), 404, "not_found")
        is_problem(c.get("/v1/run"), 405, "method_not_allowed")


def test_setting_now_needs_the_keys_permission(served_sqlite):
    with served_sqlite.client("crm") as c:
        r = c.post("/v1/check", params={"policy": "customers", "now": "2026-01-01"}, json={})
    body = is_problem(r, 403, "forbidden")
    assert body["problems"][0]["location"]["part"] == "query.now"


def test_a_body_over_the_limit_is_413_before_it_is_read(served_sqlite):
    big = b'{"answer_template": "' + b"x" * 9000 + b'", "claims": []}'
    with served_sqlite.client("shop") as c:
        is_problem(c.post("/v1/run", params={"policy": "orders"}, content=big), 413, "too_large")
        chunked = c.post("/v1/run", params={"policy": "orders"}, content=iter([big[:5000], big[5000:]]))
        assert "content-length" not in chunked.request.headers
        is_problem(chunked, 413, "too_large")
        lint = b'{"template": "' + b"x" * 9000 + b'", "domain": "orders"}'
        json_body = {"content-type": "application/json"}
        is_problem(c.post("/v1/lint", content=iter([lint[:5000], lint[5000:]]), headers=json_body), 413, "too_large")
        small = c.post("/v1/run", params={"policy": "orders"}, content=iter([b"{}"]))
        assert is_problem(small, 422, "payload")


def test_rate_limit_is_429_with_retry_after(served_sqlite):
    with served_sqlite.client("slow") as c:
        codes = [c.get("/v1/grammars").status_code for _ in range(3)]
        last = c.get("/v1/grammars")
    assert codes[:2] == [200, 200]
    body = is_problem(last, 429, "rate_limited")
    assert 1 <= int(last.headers["retry-after"]) <= 60 and body["detail"]
    with served_sqlite.client("shop") as c:  # another key has its own budget
        assert c.get("/v1/grammars").status_code == 200


def test_lint_schema_and_grammars(served_sqlite):
    with served_sqlite.client("shop") as c:
        ok = c.post(
            "/v1/lint",
            json={
                "template": "Your order {o} shipped on {d}.",
                "domain": "orders",
                "slot_types": {"o": "identifier", "d": "date"},
            },
        ).json()
        bad = c.post(
            "/v1/lint",
            json={"template": "Your order {o} is much quicker.", "domain": "orders", "slot_types": {"o": "identifier"}},
        ).json()
        schema = c.get("/v1/schema/orders").json()
        grammars = c.get("/v1/grammars").json()
        wrong_type = c.post("/v1/lint", json={"template": "x", "domain": "orders", "slot_types": {"o": "colour"}})
    assert ok["ok"] and ok["findings"] == []
    assert not bad["ok"] and bad["findings"][0]["code"] == "S201"
    assert schema["title"] == "guard payload" and schema["required"] == ["answer_template", "claims"]
    assert grammars["domains"] == [
        {"domain": "orders", "entities": grammars["domains"][0]["entities"], "policies": ["orders"]}
    ]
    assert is_problem(wrong_type, 422, "request")["problems"][0]["location"]["part"] == "body.slot_types.o"


def test_classify_is_not_found_without_a_model(served_sqlite):
    with served_sqlite.client("shop") as c:
        is_problem(c.post("/v1/classify", json={"sentences": ["It was cheaper."]}), 404, "not_found")


BAD_BODIES = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b'{"answer_template": NaN, "claims": []}',
    b'{"answer_template": "x", "claims": [], "claims": 1}',
    b"[" * 5000 + b"]" * 5000,
    b'{"answer_template": "\\ud800 {a}", "claims": []}',
    b'{"answer_template": "{a.b} {0} {a!r} {a:>10}", "claims": []}',
    b'{"answer_template": "{a}", "claims": [{"key": "a", "type": "integer", "entity": "order", '
    b'"entity_id": 1e400, "field": "id", "value": 1}]}',
    b"\xff\xfe\x00",
    json.dumps(
        {
            "answer_template": "{a}",
            "claims": [
                {
                    "key": "a",
                    "type": "integer",
                    "entity": "order",
                    "entity_id": "ord_1",
                    "field": "line_count",
                    "value": 10**30,
                }
            ],
        }
    ).encode(),
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=range(len(BAD_BODIES)))
def test_bad_bodies_are_problems_never_5xx(served_sqlite, body):
    with served_sqlite.client("shop", **{"X-Guard-Principal": demo.PRINCIPAL}) as c:
        for path in ("/v1/run", "/v1/check"):
            r = c.post(path, params={"policy": "orders"}, content=body)
            assert r.status_code < 500, r.text
            if r.status_code != 200:
                assert r.headers["content-type"] == PROBLEM and r.json()["code"] in ("payload", "request", "too_large")


@pytest.mark.parametrize(
    ("params", "status", "code", "where"),
    [
        ({"policy": "orders", "now": "yesterday"}, 400, "option", "query.now"),
        ({"policy": "orders", "domain": "Orders"}, 403, "forbidden", "query.domain"),
        ({}, 422, "request", "query.policy"),
        ({"policy": "x" * 200}, 422, "request", "query.policy"),
    ],
)
def test_bad_options_name_their_place(served_sqlite, params, status, code, where):
    with served_sqlite.client("shop") as c:
        body = is_problem(c.post("/v1/run", params=params, json=demo.payloads()["answer"]), status, code)
    assert body["problems"][0]["location"]["part"] == where


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    template=st.text(max_size=200),
    value=st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40)
    ),
    entity_id=st.one_of(st.integers(), st.text(max_size=40)),
    principal=st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
)
def test_arbitrary_payloads_never_5xx(served_sqlite, template, value, entity_id, principal):
    payload = {
        "answer_template": template,
        "claims": [
            {
                "key": "a",
                "type": "integer",
                "entity": "order",
                "entity_id": entity_id,
                "field": "line_count",
                "value": value,
            }
        ],
    }
    with served_sqlite.client("shop", **{"X-Guard-Principal": principal}) as c:
        r = c.post("/v1/run", params={"policy": "orders"}, json=payload)
    assert r.status_code in (200, 422), r.text
    if r.status_code == 422:
        assert r.json()["code"] == "payload"


def test_every_response_carries_a_request_id_and_no_server_header(served_sqlite):
    with served_sqlite.client("shop") as c:
        for r in (
            c.get("/healthz"),
            c.get("/v1/nothing"),
            c.post("/v1/run", params={"policy": "orders"}, content=b"{"),
        ):
            assert len(r.headers["x-request-id"]) == 32
            assert "server" not in r.headers
    time.sleep(0)


@pytest.fixture(scope="module")
def served_model(sqlite_demo, tmp_path_factory):
    """A server with the shipped classifier (and the shipped gate config's free-text stage) and a tiny timeout."""
    from guard.server.app import create_app
    from guard.server.config import load_serve_config
    from tests.server.conftest import Served, start, stop, write_config

    path = write_config(tmp_path_factory.mktemp("serve_model"), sqlite_demo[0], classifier="auto")
    app = create_app(load_serve_config(path))
    base, server, thread = start(app)
    yield Served(base, app)
    stop(server, thread)


def test_classify_labels_sentences_with_evidence(served_model):
    with served_model.client("shop") as c:
        r = c.post("/v1/classify", json={"sentences": ["It arrived faster than your last order.", "Thank you."]})
        assert r.status_code == 200
        first, second = r.json()["predictions"]
        assert "comparative" in first["labels"] and first["spans"]["comparative"]
        assert second["labels"] == []
        too_many = c.post("/v1/classify", json={"sentences": ["Hi."] * 1001})
    assert is_problem(too_many, 422, "request")["problems"][0]["location"]["part"] == "body.sentences"


def test_a_request_over_the_time_limit_is_503_timeout(sqlite_demo, tmp_path):
    from guard.server.app import create_app
    from guard.server.config import load_serve_config
    from tests.server.conftest import start, stop, write_config

    path = write_config(tmp_path, sqlite_demo[0], limits={"max_body_bytes": 8192, "request_timeout": 1e-6})
    base, server, thread = start(create_app(load_serve_config(path)))
    try:
        headers = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
        with httpx.Client(base_url=base, headers=headers) as c:
            r = c.post("/v1/run", params={"policy": "orders", **NOW}, json=demo.payloads()["answer"])
            body = is_problem(r, 503, "timeout")
            assert "took longer" in body["detail"]
            assert c.get("/readyz").status_code == 200  # the store survived the cancelled lookups
    finally:
        stop(server, thread)


def test_a_database_down_at_start_is_not_ready_then_a_changed_one_is_503(tmp_path):
    """The server starts without its database (not ready); when the database appears without the policy's tables,
    a request is the server's trouble (503 config, no detail), never the caller's."""
    import sqlalchemy as sa

    from guard.server.app import create_app
    from guard.server.config import load_serve_config
    from tests.server.conftest import start, stop, write_config

    later = tmp_path / "later"
    path = write_config(tmp_path, f"sqlite:///{later / 'records.db'}")
    base, server, thread = start(create_app(load_serve_config(path)))
    try:
        headers = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
        with httpx.Client(base_url=base, headers=headers) as c:
            ready = c.get("/readyz")
            assert is_problem(ready, 503, "not_ready")["problems"][0]["location"]["part"] in (
                "db:orders",
                "db:customers",
            )
            down = c.post("/v1/run", params={"policy": "orders", **NOW}, json=demo.payloads()["answer"])
            assert down.status_code == 200 and {r["status"] for r in down.json()["results"]} == {"unavailable"}
            later.mkdir()
            engine = sa.create_engine(f"sqlite:///{later / 'records.db'}")
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE orders (id TEXT PRIMARY KEY)"))
            engine.dispose()
            r = c.post("/v1/run", params={"policy": "orders", **NOW}, json=demo.payloads()["answer"])
            body = is_problem(r, 503, "policy")
            assert body["detail"] == "guard is not configured correctly" and body["problems"] == []
            assert "customer_id" not in r.text
    finally:
        stop(server, thread)


def test_runs_wait_for_a_pooled_connection_rather_than_open_overflow_ones(demo_db, tmp_path):
    """With more runs in flight than the pool holds, the server queues them: no connection beyond ``pool_size`` is
    opened (an overflow connection would be opened and closed again for a single request)."""
    from concurrent.futures import ThreadPoolExecutor

    import sqlalchemy as sa
    import yaml

    from guard.server.app import create_app
    from guard.server.config import load_serve_config
    from tests.server.conftest import start, stop, write_config

    url = demo_db[0]
    path = write_config(tmp_path, url)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["policies"]["orders"]["pool_size"] = 2
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    app = create_app(load_serve_config(path))
    store = app.state.guard.gates["orders", "orders"].store
    opened = []
    sa.event.listen(store.async_engine.sync_engine, "connect", lambda *_a: opened.append(1))
    base, server, thread = start(app)
    try:
        headers = {"Authorization": f"Bearer {KEYS['fuzz']}", "X-Guard-Principal": demo.PRINCIPAL}
        params = {"policy": "orders", **NOW}

        def post(_i: int) -> int:
            with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
                return sum(
                    c.post("/v1/run", params=params, json=demo.payloads()["answer"]).status_code == 200
                    for _ in range(4)
                )

        with ThreadPoolExecutor(16) as pool:
            answered = sum(pool.map(post, range(16)))
        assert answered == 64
        if not url.startswith("sqlite"):  # SQLite's connections are not pooled by size: all 64 answered is the check
            assert 1 <= len(opened) <= 2
    finally:
        stop(server, thread)


def test_runs_in_flight_read_together_and_each_sees_only_its_principals_rows(demo_db, tmp_path):
    """Requests about one order from its customer and from another, at once: their reads go in fewer batches than
    runs (``coalesce``, on by default), and only the customer's are answered."""
    from concurrent.futures import ThreadPoolExecutor

    from guard.server.app import create_app
    from guard.server.config import load_serve_config
    from tests.server.conftest import start, stop, write_config

    app = create_app(load_serve_config(write_config(tmp_path, demo_db[0])))
    coalescer = app.state.guard.gates["orders", "orders"].store.coalescer
    assert coalescer is not None and coalescer.limit == 2
    base, server, thread = start(app)
    try:
        params = {"policy": "orders", **NOW}

        def post(i: int) -> list[str]:
            who = demo.PRINCIPAL if i % 2 else "cus_1000"
            headers = {"Authorization": f"Bearer {KEYS['fuzz']}", "X-Guard-Principal": who}
            with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
                return [
                    f"{who} {c.post('/v1/run', params=params, json=demo.payloads()['answer']).json()['action']}"
                    for _ in range(6)
                ]

        with ThreadPoolExecutor(16) as pool:
            seen = {line for lines in pool.map(post, range(16)) for line in lines}
        assert seen == {f"{demo.PRINCIPAL} answer", "cus_1000 refuse"}
        assert coalescer.runs == 96 and coalescer.batches < 96
    finally:
        stop(server, thread)
