"""The OpenAI-compatible verifying proxy against a scripted upstream speaking chat completions."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from guard import demo
from guard.server.app import create_app
from guard.server.config import load_serve_config
from tests.server.conftest import Served, start, stop, write_config
from tests.server.test_http import conforms
from tests.server.upstream import Upstream

PROBLEM = "application/problem+json"
ASK = {"model": "any", "messages": [{"role": "user", "content": "What is the total of order ord_88431?"}]}


def right() -> dict:
    p = copy.deepcopy(demo.payloads()["regenerate"])
    p["claims"][1]["value"] = "£1,299.00"
    return p


def wrong() -> dict:
    return demo.payloads()["regenerate"]  # the total says £1,199.00


@pytest.fixture(scope="module")
def upstream():
    u = Upstream()
    yield u
    u.close()


@pytest.fixture(scope="module")
def proxied(upstream, sqlite_demo, tmp_path_factory, monkeypatch_module):
    monkeypatch_module.setenv("GUARD_TEST_UPSTREAM_KEY", "sk-upstream-secret")
    tmp = tmp_path_factory.mktemp("proxy")
    path = write_config(tmp, sqlite_demo[0])
    data = yaml.safe_load(path.read_text())
    data["proxy"] = {
        "upstream": upstream.url,
        "max_attempts": 3,
        "timeout": 1.0,
        "api_key_env": "GUARD_TEST_UPSTREAM_KEY",
    }
    path.write_text(yaml.safe_dump(data))
    app = create_app(load_serve_config(path))
    base, server, thread = start(app)
    yield Served(base, app)
    stop(server, thread)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def chat(proxied, body=ASK, key="shop", principal=demo.PRINCIPAL, **headers):
    h = {"X-Guard-Principal": principal} if principal else {}
    with proxied.client(key, **h, **headers) as c:
        r = c.post("/v1/chat/completions", json=body)
        conforms(c.get("/openapi.json").json(), r, "/v1/chat/completions")
    return r


def test_right_first_time(proxied, upstream):
    upstream.play(("payload", right()))
    r = chat(proxied)
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "scripted-model"
    text = body["choices"][0]["message"]["content"]
    assert text == "The total for order ord_88431 is £1,299.00. It contains 3 items."
    assert body["guard"]["action"] == "answer" and body["guard"]["attempts"] == 1
    sent = upstream.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["title"] == "guard payload"
    assert sent["messages"] == ASK["messages"]
    assert upstream.headers[0]["Authorization"] == "Bearer sk-upstream-secret"


def test_wrong_then_right_feeds_back_the_verified_facts(proxied, upstream):
    upstream.play(("payload", wrong()), ("payload", right()))
    body = chat(proxied).json()
    assert body["guard"]["action"] == "answer" and body["guard"]["attempts"] == 2
    assert len(upstream.requests) == 2
    feedback = upstream.requests[1]["messages"][-1]
    assert feedback["role"] == "user" and "total" in feedback["content"] and "£1,299.00" in feedback["content"]
    assert upstream.requests[1]["messages"][-2]["role"] == "assistant"


def test_wrong_every_time_is_refused_after_the_bounded_attempts(proxied, upstream):
    upstream.play(*[("payload", wrong())] * 5)
    body = chat(proxied).json()
    assert len(upstream.requests) == 3
    assert body["guard"]["action"] == "refuse" and body["guard"]["attempts"] == 3
    assert "after 3 attempts" in body["choices"][0]["message"]["content"]
    assert body["guard"]["unverified"] == ["total"]


def test_malformed_json_is_sent_back_then_refused(proxied, upstream):
    upstream.play(("content", "The total is £1,299.00"), ("payload", right()))
    body = chat(proxied).json()
    assert body["guard"]["action"] == "answer" and body["guard"]["attempts"] == 2
    assert "not a valid payload" in upstream.requests[1]["messages"][-1]["content"]
    upstream.play(*[("content", "{not json")] * 3)
    body = chat(proxied).json()
    assert body["guard"]["action"] == "refuse" and "after 3 attempts" in body["choices"][0]["message"]["content"]
    assert "{not json" not in json.dumps(body)


def test_a_slow_upstream_past_the_timeout_is_504(proxied, upstream):
    upstream.play(("sleep", 2.5), ("payload", right()))
    r = chat(proxied)
    assert r.status_code == 504 and r.headers["content-type"] == PROBLEM
    assert r.json()["code"] == "upstream_timeout"


@pytest.mark.parametrize("step", [("status", 500), ("status", 429), ("garbage", b"<html>oops</html>")])
def test_an_upstream_error_is_502(proxied, upstream, step):
    upstream.play(step)
    r = chat(proxied)
    assert r.status_code == 502 and r.headers["content-type"] == PROBLEM
    assert r.json()["code"] == "upstream" and "scripted failure" not in r.text and "oops" not in r.text


def test_the_principal_is_the_callers_header(proxied, upstream):
    upstream.play(("payload", right()))
    body = chat(proxied, principal="cus_1000").json()
    assert body["guard"]["action"] == "refuse"
    assert {r["status"] for r in body["guard"]["results"]} == {"not_found"}


@pytest.mark.parametrize(
    ("body", "key", "headers", "status", "code"),
    [
        ({**ASK, "stream": True}, "shop", {}, 422, "request"),
        ({**ASK, "n": 2}, "shop", {}, 422, "request"),
        ({"model": "x"}, "shop", {}, 422, "request"),
        (ASK, "crm", {"X-Guard-Policy": "orders"}, 403, "forbidden"),
        (ASK, "shop", {"X-Guard-Domain": "billing"}, 403, "forbidden"),
        (ASK, None, {}, 401, "unauthorized"),
    ],
)
def test_requests_the_proxy_refuses(proxied, upstream, body, key, headers, status, code):
    upstream.play()
    r = chat(proxied, body=body, key=key, **headers)
    assert r.status_code == status and r.headers["content-type"] == PROBLEM and r.json()["code"] == code
    assert upstream.requests == []
