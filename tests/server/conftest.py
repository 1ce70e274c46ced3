"""A real uvicorn server on 127.0.0.1 (a free port) in a thread of the test process, over the demo records."""

from __future__ import annotations

import socket
import threading
import time
from importlib import resources
from pathlib import Path

import httpx
import pytest
import uvicorn
import yaml

from guard.server import UVICORN_OPTIONS
from guard.server.app import create_app
from guard.server.config import hash_key, load_serve_config

KEYS = {
    "shop": "gk_shop_test_key",
    "crm": "gk_crm_test_key",
    "slow": "gk_slow_test_key",
    "fuzz": "gk_fuzz_test_key",
    "slow_lean": "gk_slow_lean_test_key",
}
NO_MODEL_GATE = {"domains": {d: {"stages": {"freetext": "off"}} for d in ("orders", "account")}}

CUSTOMERS_POLICY = """
timezone: Europe/London
locale: en_GB
entities:
  customer:
    table: customers
    id: id
    fields:
      name: {type: string}
      tier: {type: enum}
"""


class Served:
    """A running server: its base URL and app state, with a client per key."""

    def __init__(self, url: str, app) -> None:
        self.url, self.app = url, app

    def client(self, key: str | None = "shop", **headers: str) -> httpx.Client:
        h = dict(headers)
        if key is not None:
            h["Authorization"] = f"Bearer {KEYS.get(key, key)}"
        return httpx.Client(base_url=self.url, headers=h, timeout=30)


def write_config(tmp: Path, db_url: str, **extra) -> Path:
    (tmp / "customers.yaml").write_text(CUSTOMERS_POLICY, encoding="utf-8")
    (tmp / "gate.yaml").write_text(yaml.safe_dump(NO_MODEL_GATE), encoding="utf-8")
    demo_policy = resources.files("guard.demo") / "policy.yaml"
    data = {
        "policies": {
            "orders": {"policy": str(demo_policy), "db": db_url, "domains": ["orders"]},
            "customers": {"policy": "customers.yaml", "db": db_url, "domains": ["account"]},
        },
        "keys": {
            "shop": {"hash": hash_key(KEYS["shop"]), "policies": ["orders"], "domains": ["orders"], "allow_now": True},
            "crm": {"hash": hash_key(KEYS["crm"]), "policies": ["customers"], "domains": ["account"]},
            "slow": {
                "hash": hash_key(KEYS["slow"]),
                "policies": ["orders"],
                "domains": ["orders"],
                "rate": "2/minute",
                "allow_now": True,
            },
            # its own budget, so that the lean route's 429 test and test_http's do not share one minute's two calls
            "slow_lean": {
                "hash": hash_key(KEYS["slow_lean"]),
                "policies": ["orders"],
                "domains": ["orders"],
                "rate": "2/minute",
                "allow_now": True,
            },
            "fuzz": {
                "hash": hash_key(KEYS["fuzz"]),
                "policies": ["orders", "customers"],
                "domains": ["orders", "account"],
                "rate": "100000/second",
                "allow_now": True,
            },
        },
        "gate_config": "gate.yaml",
        "classifier": "none",
        "limits": {"max_body_bytes": 8192},
        **extra,
    }
    path = tmp / "serve.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def start(app, **config: object) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", **{**UVICORN_OPTIONS, **config}))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}", server, thread


def stop(server: uvicorn.Server, thread: threading.Thread) -> None:
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="session")
def served(demo_db, tmp_path_factory):
    """The server over the demo records on each backend."""
    url, _policy, _store = demo_db
    cfg = load_serve_config(write_config(tmp_path_factory.mktemp("serve"), url))
    app = create_app(cfg)
    base, server, thread = start(app)
    yield Served(base, app)
    stop(server, thread)


@pytest.fixture(scope="session")
def served_sqlite(sqlite_demo, tmp_path_factory):
    """The server over the demo records on SQLite, for tests about the HTTP layer rather than backends."""
    url, _policy, _store = sqlite_demo
    cfg = load_serve_config(write_config(tmp_path_factory.mktemp("serve_sqlite"), url))
    app = create_app(cfg)
    base, server, thread = start(app)
    yield Served(base, app)
    stop(server, thread)
