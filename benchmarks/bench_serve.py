"""``guard serve`` against the library in the same run: throughput and latency of ``POST /v1/run`` next to
``Guard.run`` and ``AsyncGuard.run`` in process.

The server runs as its own process (``guard serve``, one worker unless ``--workers``) on 127.0.0.1; an asyncio
client (httpx) keeps 1, 16 and 64 requests in flight for a bounded time and reports requests per second and
p50/p99 latency. The ratio HTTP / in-process ``Guard.run`` is the server's cost. Loopback only; every loop is
bounded in time.

    .venv/bin/python benchmarks/bench_serve.py [--rows 20000] [--seconds 2] [--db URL] [--workers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml
from _common import rate

from guard import demo
from guard.pipeline import AsyncGuard, Guard
from guard.server.config import hash_key

KEY = "gk_bench_key"
CONFIG = {"domains": {"orders": {"stages": {"freetext": "off"}}}}
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def load(call, concurrency: int, seconds: float) -> tuple[float, float, float, int]:
    """Requests per second, p50 and p99 latency (ms) and errors with ``concurrency`` callers for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            ok = await call()
            latencies.append((time.perf_counter() - t0) * 1000)
            errors += not ok

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    q = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [latencies[0]] * 99
    return len(latencies) / elapsed, q[49], q[98], errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--db", default=None, help="database URL (default: a temporary SQLite file)")
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    url = args.db or f"sqlite:///{tmp / 'records.db'}"
    demo.build(url, n_orders=args.rows, n_customers=max(1000, args.rows // 10))
    payload = demo.payloads()["answer"]

    gate = Guard(demo.policy(), url, domain="orders", config=CONFIG)
    sync_rate = rate(lambda: gate.run(payload, demo.PRINCIPAL, now=demo.NOW), args.seconds)
    gate.close()
    print(f"Guard.run in process (serial)          {sync_rate:8.0f} /s")

    async def in_process() -> None:
        async with AsyncGuard(demo.policy(), url, domain="orders", config=CONFIG) as agate:

            async def call() -> bool:
                await agate.run(payload, demo.PRINCIPAL, now=demo.NOW)
                return True

            for c in (1, 16):
                rps, p50, p99, _ = await load(call, c, args.seconds)
                print(f"AsyncGuard.run, {c:2d} in flight          {rps:8.0f} /s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")

    asyncio.run(in_process())

    (tmp / "gate.yaml").write_text(yaml.safe_dump(CONFIG))
    port = free_port()
    serve = {
        "port": port,
        "policies": {"orders": {"policy": str(ROOT / "guard/demo/policy.yaml"), "db": url, "domains": ["orders"]}},
        "keys": {
            "bench": {
                "hash": hash_key(KEY),
                "policies": ["orders"],
                "domains": ["orders"],
                "allow_now": True,
                "rate": "1000000/second",
            }
        },
        "gate_config": "gate.yaml",
        "classifier": "none",
    }
    (tmp / "serve.yaml").write_text(yaml.safe_dump(serve))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "guard", "serve", "--config", str(tmp / "serve.yaml"), "--workers", str(args.workers)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.2)

        async def over_http() -> None:
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
            headers = {"Authorization": f"Bearer {KEY}", "X-Guard-Principal": demo.PRINCIPAL}
            params = {"policy": "orders", "now": demo.NOW.isoformat()}
            async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30) as client:

                async def call() -> bool:
                    r = await client.post("/v1/run", params=params, json=payload)
                    return r.status_code == 200

                await load(call, 4, 0.5)
                for c in (1, 16, 64):
                    rps, p50, p99, errors = await load(call, c, args.seconds)
                    print(
                        f"POST /v1/run, {c:2d} in flight ({args.workers} worker) {rps:8.0f} /s  p50 {p50:6.2f} ms  "
                        f"p99 {p99:6.2f} ms  errors {errors}  ({rps / sync_rate:.2f} x in-process Guard.run)"
                    )

        asyncio.run(over_http())
    finally:
        proc.terminate()
        proc.wait(timeout=60)


if __name__ == "__main__":
    main()
