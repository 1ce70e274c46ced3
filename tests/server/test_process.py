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

from guard import demo
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
    for _ in range(4):
        text = httpx.get(base + "/metrics").text
        assert 'guard_decisions_total{action="answer"} 12.0' in text
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.startswith("{")]
    runs = [line for line in lines if line["route"] == "/v1/run"]
    assert len(runs) == 12 and {line["key"] for line in runs} == {"shop"} and {line["status"] for line in runs} == {200}


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


@pytest.mark.slow
def test_sighup_reloads_the_config_without_dropping_a_request(launch, tmp_path, sqlite_demo):
    from guard.server.config import hash_key

    config = write_config(tmp_path, sqlite_demo[0])
    proc, base, out = launch(config)
    data = yaml.safe_load(config.read_text())
    statuses: list[object] = []
    stop_at = [time.monotonic() + 240]

    def load() -> None:
        # a connection per request: a retiring worker closes its idle keep-alive connections, and a request sent
        # on one at that instant never reaches any server (HTTP/1.1's keep-alive race, for clients to retry)
        headers = {
            "Authorization": f"Bearer {KEYS['fuzz']}",
            "X-Guard-Principal": demo.PRINCIPAL,
            "Connection": "close",
        }
        params = {"policy": "orders", "now": demo.NOW.isoformat()}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
            while time.monotonic() < stop_at[0]:
                try:
                    statuses.append(c.post("/v1/run", params=params, json=demo.payloads()["answer"]).status_code)
                except httpx.HTTPError as exc:
                    statuses.append(type(exc).__name__)

    def late_key_works() -> bool:
        return httpx.get(base + "/v1/grammars", headers={"Authorization": "Bearer gk_late_key"}).status_code == 200

    loaders = [threading.Thread(target=load) for _ in range(4)]
    for t in loaders:
        t.start()
    try:
        assert not late_key_works()
        data["keys"]["late"] = {"hash": hash_key("gk_late_key"), "policies": ["orders"], "domains": ["orders"]}
        config.write_text(yaml.safe_dump(data))
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 180
        while not late_key_works():
            assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
            time.sleep(0.2)
        # a config that no longer loads: the new worker fails to start and the current one keeps serving
        config.write_text(yaml.safe_dump({**data, "keys": {}}))
        proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 180
        while "keys: Dictionary should have at least 1 item" not in out.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, out.read_text()
            time.sleep(0.2)
        time.sleep(1)
        assert late_key_works()
    finally:
        stop_at[0] = 0
        for t in loaders:
            t.join(timeout=60)
    assert len(statuses) > 50
    assert set(statuses) == {200}, {s for s in statuses if s != 200}
    assert "Traceback" not in out.read_text()
