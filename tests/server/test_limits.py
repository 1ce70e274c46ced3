"""Per-stage time limits: a stage that runs over its own limit is a 503 ``timeout`` naming the stage, and the server
serves the next request. The stages are held up for real (a lint stage waiting on an event, a table locked by
another session), never by a clock that must happen to run slow.
"""

from __future__ import annotations

import sqlite3
import threading

import httpx
import pytest
import sqlalchemy as sa
import yaml

from guard import demo
from guard.linting import registry
from guard.linting.registry import Mode, Stage
from guard.server.app import create_app
from guard.server.config import load_serve_config
from tests.server.conftest import KEYS, NO_MODEL_GATE, start, stop, write_config

HEADERS = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
PARAMS = {"policy": "orders", "now": demo.NOW.isoformat()}
RELEASE = threading.Event()


def _held(setup):
    def check(ctx):
        if "{" in ctx.template:  # templates with slots; not the server's warm-up sentence
            RELEASE.wait(60)  # bounded, so a broken test cannot hang the run
        return []

    return check


@pytest.fixture()
def held_stage():
    RELEASE.clear()
    registry.register(Stage("held", _held, default_mode=Mode.REPORT))
    yield
    RELEASE.set()
    registry.unregister("held")


def serve(tmp_path, url, gate=None, **limits):
    extra = {"limits": {"max_body_bytes": 8192, **limits}}
    if gate is not None:
        (tmp_path / "held.yaml").write_text(yaml.safe_dump(gate), encoding="utf-8")
        extra["gate_config"] = "held.yaml"
    return start(create_app(load_serve_config(write_config(tmp_path, url, **extra))))


def test_a_lint_stage_over_its_limit_is_503_and_the_next_request_is_served(held_stage, sqlite_demo, tmp_path):
    gate = {"domains": {"orders": {"stages": {**NO_MODEL_GATE["domains"]["orders"]["stages"], "held": "report"}}}}
    base, server, thread = serve(tmp_path, sqlite_demo[0], gate, lint_timeout=0.2, request_timeout=60)
    try:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=30) as c:
            r = c.post("/v1/run", params=PARAMS, json=demo.payloads()["answer"])
            assert r.status_code == 503 and r.json()["code"] == "timeout", r.text
            assert r.json()["detail"] == "the lint stage took longer than 0.2 s"
            lint = c.post("/v1/lint", json={"template": "Your order {order_id} shipped.", "domain": "orders"})
            assert lint.status_code == 503 and lint.json()["detail"] == "the lint stage took longer than 0.2 s"
            RELEASE.set()
            r = c.post("/v1/run", params=PARAMS, json=demo.payloads()["answer"])
            assert r.status_code == 200 and r.json()["action"] == "answer", r.text
    finally:
        RELEASE.set()
        stop(server, thread)


class Locked:
    """Another session holding the demo's orders table, so every lookup of it waits."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> Locked:
        if self.url.startswith("sqlite"):
            self.raw = sqlite3.connect(self.url.split("///", 1)[1], isolation_level=None)
            self.raw.execute("BEGIN EXCLUSIVE")
            return self
        self.engine = sa.create_engine(self.url)
        self.conn = self.engine.connect()
        if self.url.startswith("postgresql"):
            self.conn.execute(sa.text("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"))
        else:
            self.conn.execute(sa.text("LOCK TABLES orders WRITE"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.url.startswith("sqlite"):
            self.raw.execute("ROLLBACK")
            self.raw.close()
            return
        if not self.url.startswith("postgresql"):
            self.conn.execute(sa.text("UNLOCK TABLES"))
        self.conn.rollback()
        self.conn.close()
        self.engine.dispose()


def test_a_check_stage_over_its_limit_is_503_and_the_store_survives(demo_db, tmp_path):
    url = demo_db[0]
    base, server, thread = serve(tmp_path, url, check_timeout=0.5, request_timeout=60)
    try:
        with httpx.Client(base_url=base, headers=HEADERS, timeout=30) as c:
            assert c.post("/v1/run", params=PARAMS, json=demo.payloads()["answer"]).status_code == 200
            with Locked(url):
                for path in ("/v1/run", "/v1/check"):
                    r = c.post(path, params=PARAMS, json=demo.payloads()["refuse"])
                    assert r.status_code == 503 and r.json()["code"] == "timeout", r.text
                    assert r.json()["detail"] == "the check stage took longer than 0.5 s"
            r = c.post("/v1/run", params=PARAMS, json=demo.payloads()["answer"])
            assert r.status_code == 200 and r.json()["action"] == "answer", r.text
            assert c.get("/readyz").status_code == 200
    finally:
        stop(server, thread)
