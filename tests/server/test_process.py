"""``guard serve`` as a process: several workers with summed metrics, a JSON access log, graceful shutdown."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from guard import demo
from guard.server.app import METRICS_FLUSH_SECONDS
from tests.server.conftest import KEYS, write_config
from tests.server.test_proxy import ASK, right
from tests.server.upstream import Upstream

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def launch(tmp_path):
    procs = []

    def start(config: Path, *args: str, **env: str) -> tuple[subprocess.Popen, str, Path]:
        port = free_port()
        out = tmp_path / f"out{len(procs)}.log"
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
        proc = subprocess.Popen(
            [sys.executable, "-m", "guard", "serve", "--config", str(config), "--port", str(port), *args],
            stdout=out.open("w"),
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=tmp_path,
            start_new_session=True,  # its own process group, so teardown reaches the workers too
        )
        procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300  # a bound on start-up (two workers compile grammars), not a timing
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.2)
        return proc, base, out

    yield start
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # killing the supervisor alone would orphan its workers
            p.wait()
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)


@pytest.mark.slow
def test_two_workers_count_into_one_set_of_metrics(launch, tmp_path, sqlite_demo):
    folder = tmp_path / "metrics"
    folder.mkdir()
    proc, base, out = launch(
        write_config(tmp_path, sqlite_demo[0]), "--workers", "2", PROMETHEUS_MULTIPROC_DIR=str(folder)
    )
    headers = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
    for _ in range(12):
        with httpx.Client(base_url=base, headers=headers) as c:  # a new connection each time
            r = c.post(
                "/v1/run", params={"policy": "orders", "now": demo.NOW.isoformat()}, json=demo.payloads()["answer"]
            )
            assert r.status_code == 200 and r.json()["action"] == "answer"
    pids = {re.sub(r"\D", "", f.stem) for f in folder.glob("*.db")}
    assert len(pids) == 2  # both workers write their counts
    # each worker writes what it holds every METRICS_FLUSH_SECONDS: a scrape may lag by that much, no more
    deadline = time.monotonic() + METRICS_FLUSH_SECONDS + 2
    while 'guard_decisions_total{action="answer"} 12.0' not in httpx.get(base + "/metrics").text:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for _ in range(4):
        text = httpx.get(base + "/metrics").text
        assert 'guard_decisions_total{action="answer"} 12.0' in text
    for _ in range(3):
        with httpx.Client(base_url=base, headers=headers) as c:
            r = c.post(
                "/v1/run", params={"policy": "orders", "now": demo.NOW.isoformat()}, json=demo.payloads()["answer"]
            )
            assert r.status_code == 200
    proc.send_signal(signal.SIGTERM)  # at once: the workers write what they hold as they stop
    assert proc.wait(timeout=60) == 0
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(folder))
    assert registry.get_sample_value("guard_decisions_total", {"action": "answer"}) == 15
    assert registry.get_sample_value("guard_http_requests_total", {"route": "/v1/run", "status": "200"}) == 15
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    runs = [line for line in lines if line["route"] == "/v1/run"]
    assert len(runs) == 15 and {line["key"] for line in runs} == {"shop"} and {line["status"] for line in runs} == {200}


@pytest.mark.slow
def test_a_keys_rate_holds_across_two_workers(launch, tmp_path, sqlite_demo):
    state = tmp_path / "state"
    state.mkdir()
    config = write_config(tmp_path, sqlite_demo[0])
    _proc, base, _out = launch(config, "--workers", "2", GUARD_SERVE_STATE_DIR=str(state))
    statuses = []
    for _ in range(24):  # a new connection each time, so the kernel spreads them over both workers
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {KEYS['slow']}"}) as c:
            r = c.get("/v1/grammars")
            statuses.append(r.status_code)
            if r.status_code == 429:
                assert 1 <= int(r.headers["retry-after"]) <= 60
    # "2/minute" for the server, not per worker (two workers counting alone would let up to 4 through)
    assert statuses.count(200) == 2 and statuses.count(429) == 22, statuses
    assert len(list(state.glob("ratelimit-*.bin"))) == 1


def test_shutdown_lets_the_request_in_flight_finish(launch, tmp_path, sqlite_demo):
    upstream = Upstream()
    try:
        config = write_config(tmp_path, sqlite_demo[0])
        data = yaml.safe_load(config.read_text())
        data["proxy"] = {"upstream": upstream.url, "timeout": 10}
        data["log"] = "events.jsonl"
        config.write_text(yaml.safe_dump(data))
        proc, base, _out = launch(config)
        upstream.play(("sleep", 1.5), ("payload", right()))
        result: dict = {}

        def ask() -> None:
            headers = {"Authorization": f"Bearer {KEYS['shop']}", "X-Guard-Principal": demo.PRINCIPAL}
            result["r"] = httpx.post(base + "/v1/chat/completions", json=ASK, headers=headers, timeout=30)

        t = threading.Thread(target=ask)
        t.start()
        deadline = time.monotonic() + 10
        while not upstream.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        t.join(timeout=30)
        assert result["r"].status_code == 200
        assert result["r"].json()["guard"]["action"] == "answer"
        # uvicorn re-raises the signal once it has shut down, so the exit reads as SIGTERM's
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)
        events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
        assert [e["action"] for e in events if e["event"] == "decision"] == ["answer"]
    finally:
        upstream.close()


RELOADS = 3
"""SIGHUPs in the reload test, each adding a key; each replaces both workers."""


def _loader(base: str, stop: threading.Event, outcomes: list[object], closes: list[int], style: str) -> None:
    """Sends ``/v1/run`` until ``stop``: on one keep-alive connection back to back (``busy``), with idle gaps
    shorter than a retiring worker's grace (``idle``), or a new connection per request (``fresh``)."""
    import random

    headers = {"Authorization": f"Bearer {KEYS['fuzz']}", "X-Guard-Principal": demo.PRINCIPAL}
    if style == "fresh":
        headers["Connection"] = "close"
    params = {"policy": "orders", "now": demo.NOW.isoformat()}
    body = demo.payloads()["answer"]
    pause = random.Random(style)
    with httpx.Client(base_url=base, headers=headers, timeout=60) as c:
        while not stop.is_set():
            try:
                r = c.post("/v1/run", params=params, json=body)
                outcomes.append(r.status_code if r.json()["action"] == "answer" else r.text)
                if r.headers.get("connection") == "close" and style != "fresh":
                    closes.append(1)
            except (httpx.HTTPError, ValueError) as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
            if style == "idle":
                time.sleep(pause.uniform(0, 0.3))


@pytest.mark.slow
def test_sighup_reloads_the_config_without_dropping_a_request(launch, tmp_path, sqlite_demo):
    """Keep-alive clients, idle ones and a connection per request, through three reloads of two workers: no
    request fails, each reload's new key works on every worker, and a config that does not load changes nothing.
    A worker that closed a connection it had accepted, or an idle one as a request arrived, fails this."""
    from guard.server.config import hash_key

    config = write_config(tmp_path, sqlite_demo[0])
    proc, base, out = launch(config, "--workers", "2")
    data = yaml.safe_load(config.read_text())
    outcomes: list[object] = []
    closes: list[int] = []
    stop = threading.Event()

    def key_works(key: str) -> bool:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            return c.get("/v1/grammars").status_code == 200

    def on_every_worker(key: str) -> bool:
        # a new connection each time, so the kernel spreads them over both workers
        return all(key_works(key) for _ in range(16))

    styles = ["busy"] * 3 + ["idle"] * 2 + ["fresh"] * 2
    loaders = [threading.Thread(target=_loader, args=(base, stop, outcomes, closes, s)) for s in styles]
    for t in loaders:
        t.start()
    try:
        for n in range(RELOADS):
            key = f"gk_late_key_{n}"
            assert not key_works(key)
            data["keys"][f"late{n}"] = {"hash": hash_key(key), "policies": ["orders"], "domains": ["orders"]}
            config.write_text(yaml.safe_dump(data))
            before = len(outcomes)
            proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 300  # a bound on two workers starting under load, not a timing
            while not on_every_worker(key):
                assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
                time.sleep(0.2)
            assert len(outcomes) > before  # the clients were sending while the workers changed
        # a config that no longer loads: the new worker fails to start and the current ones keep serving
        config.write_text(yaml.safe_dump({**data, "keys": {}}))
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 300
        while "keys: Dictionary should have at least 1 item" not in out.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
            time.sleep(0.2)
        time.sleep(1)
        assert on_every_worker(f"gk_late_key_{RELOADS - 1}")
    finally:
        stop.set()
        for t in loaders:
            t.join(timeout=120)
    failures = [o for o in outcomes if o != 200]
    print(f"{len(outcomes)} requests, {len(failures)} failed, {len(closes)} answered with Connection: close")
    assert not failures, f"{len(failures)} of {len(outcomes)} requests failed: {failures[:5]}"
    assert len(outcomes) > 200
    assert closes  # retiring workers told keep-alive clients to reconnect
    assert "Traceback" not in out.read_text()


def _workers(supervisor: int) -> set[int]:
    """The supervisor's worker processes (multiprocessing's spawned children; not its resource tracker)."""
    found = set()
    for child in Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split():
        with contextlib.suppress(FileNotFoundError):
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(int(child))
    return found


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced_and_one_that_cannot_start_stops_the_server(launch, tmp_path, sqlite_demo):
    config = write_config(tmp_path, sqlite_demo[0])
    proc, base, out = launch(config, "--workers", "2")
    headers = {"Authorization": f"Bearer {KEYS['shop']}"}
    first = _workers(proc.pid)
    assert len(first) == 2
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 300
    while len(_workers(proc.pid) - first) < 1 or len(_workers(proc.pid)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
        time.sleep(0.2)
    assert victim not in _workers(proc.pid)
    for _ in range(8):
        with httpx.Client(base_url=base, headers=headers, timeout=60) as c:  # the new worker takes its share
            assert c.get("/v1/grammars").status_code == 200
    # the replacement of a worker that dies after serve.yaml went bad cannot start: the server stops, saying so
    config.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), "keys": {}}))
    os.kill(min(_workers(proc.pid)), signal.SIGKILL)
    assert proc.wait(timeout=300) != 0
    text = out.read_text()
    assert "keys: Dictionary should have at least 1 item" in text and "a worker failed to start" in text
    assert "Traceback" not in text
