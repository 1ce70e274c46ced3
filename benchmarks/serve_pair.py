"""Two trees' ``guard serve`` side by side: the workers' CPU per ``POST /v1/run``, measured over the same seconds.

Why: on two shared CPUs a worker's CPU time per request moves by half or more with what else runs (another
build's load raised it from 0.7 to 1.8 ms within minutes), so two runs of ``bench_serve.py`` one after the other
cannot tell a 10% change. Here both servers (two workers each, over the same demo records) run at once, each
driven by its own client at the same concurrency; each round reads both sets of workers' CPU over the same
window, so whatever else runs weighs on both alike, and the round's ratio is the figure. The database is the
one ``bench_serve.py`` built (run it once first with the same ``--db``).

    .venv/bin/python benchmarks/serve_pair.py --db URL --base ../main-checkout [--in-flight 64] [--rounds 6]
        [--seconds 5] [--coalesce N] [--orders N] [--open RATE]

``--base`` is another checkout of guard (its ``guard/`` is imported by its server); this tree is the other.
Loopback only; every loop is bounded in time or count.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import sqlalchemy as sa
import uvloop
from bench_serve import KEY, closed, cpu_pressure, cpu_seconds, free_port, opened, workers_of, write_serve_config
from loadclient import LoadClient, request_bytes

from guard import demo

ROOT = Path(__file__).resolve().parents[1]


def launch(root: Path, url: str, coalesce: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """``guard serve`` from ``root`` with two workers, once it is ready."""
    tmp = Path(tempfile.mkdtemp())
    port = free_port()
    write_serve_config(tmp, root, url, port, coalesce)
    cmd = [sys.executable, "-m", "guard", "serve", "--config", str(tmp / "serve.yaml"), "--workers", "2"]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 600
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return proc, port
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server from {root} did not start")
        time.sleep(0.2)


async def rounds(
    ports: dict[str, tuple[int, list[int]]], args: argparse.Namespace, tails: dict[str, list[float]]
) -> dict[str, list[float]]:
    """Each round: both servers at ``--in-flight`` (or ``--open`` requests a second each, latency counted from
    when each was due) for ``--seconds``; each one's workers' CPU ms a request (and, open, its p99 in ``tails``)."""
    params = {"policy": "orders", "now": demo.NOW.isoformat()}
    asked = answers(args.db, args.orders)

    def requests(port: int) -> list[bytes]:
        return [
            request_bytes(
                "127.0.0.1",
                port,
                "/v1/run",
                params,
                {"Authorization": f"Bearer {KEY}", "X-Guard-Principal": who},
                json.dumps(body).encode(),
            )
            for body, who in asked
        ]

    clients = {name: LoadClient("127.0.0.1", port, *requests(port)) for name, (port, _w) in ports.items()}
    out: dict[str, list[float]] = {name: [] for name in ports}
    try:
        for client in clients.values():
            await closed(client.call, 4, 1.0)
        for _ in range(args.rounds):
            cpu0 = {name: cpu_seconds(w) for name, (_p, w) in ports.items()}
            if args.open:
                got = await asyncio.gather(*(opened(c.call, args.open, args.seconds) for c in clients.values()))
            else:
                got = await asyncio.gather(*(closed(c.call, args.in_flight, args.seconds) for c in clients.values()))
            line = []
            for (name, (_p, w)), (rps, p50, p99, errors) in zip(ports.items(), got):
                ms = (cpu_seconds(w) - cpu0[name]) / max(1.0, rps * args.seconds) * 1000
                out[name].append(ms)
                tails.setdefault(name, []).append(p99)
                lat = f"p50 {p50:6.2f} p99 {p99:7.2f} ms  " if args.open else ""
                line.append(f"{name} {rps:5.0f} /s  {lat}workers {ms:.3f} ms a request  errors {errors}")
            ratio = out["this"][-1] / out["base"][-1]
            waits = cpu_pressure()
            print(
                " | ".join(line),
                f"| this/base {ratio:.3f}  load {os.getloadavg()[0]:.1f}" + (f" CPU pressure {waits}" if waits else ""),
                flush=True,
            )
    finally:
        for client in clients.values():
            client.close()
    return out


def answers(url: str, orders: int) -> list[tuple[dict, str]]:
    """The demo answer and its principal (``orders`` 1), or true answers about that many orders, each asked by
    the customer who placed it (their reads share neither ids nor scope)."""
    if orders <= 1:
        return [(demo.payloads()["answer"], demo.PRINCIPAL)]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        q = (
            "SELECT id, customer_id, shipped_at, estimated_delivery, line_count FROM orders "
            "WHERE shipped_at IS NOT NULL AND estimated_delivery IS NOT NULL ORDER BY id LIMIT :n"
        )
        rows = conn.execute(sa.text(q), {"n": orders}).all()
    engine.dispose()
    out = []
    for oid, who, shipped, eta, items in rows:
        p = copy.deepcopy(demo.payloads()["answer"])
        for c, value in zip(p["claims"], [oid, shipped and shipped.date().isoformat(), eta and eta.isoformat(), items]):
            c["entity_id"], c["value"] = oid, value
        out.append((p, who))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True, help="the database bench_serve.py built")
    ap.add_argument("--base", type=Path, required=True, help="the other checkout of guard")
    ap.add_argument("--in-flight", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--coalesce", type=int, default=None, help="this tree's policies.orders.coalesce")
    ap.add_argument("--open", type=float, default=0, help="open loop: requests a second to each server instead")
    ap.add_argument("--orders", type=int, default=1, help="payloads about this many orders, each its owner's")
    args = ap.parse_args()
    servers = {"base": launch(args.base.resolve(), args.db), "this": launch(ROOT, args.db, args.coalesce)}
    try:
        ports = {name: (port, workers_of(proc.pid)) for name, (proc, port) in servers.items()}
        tails: dict[str, list[float]] = {}
        out = uvloop.run(rounds(ports, args, tails))
    finally:
        for proc, _port in servers.values():
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    ratios = [t / b for b, t in zip(out["base"], out["this"])]
    for name, ms in out.items():
        print(
            f"{name}: workers' CPU a request, median {statistics.median(ms):.3f} ms (range {min(ms):.3f}-{max(ms):.3f})"
        )
    print(f"this/base: median {statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})")
    if args.open:
        for name, p99s in tails.items():
            print(f"{name}: p99 median {statistics.median(p99s):.2f} ms (range {min(p99s):.2f}-{max(p99s):.2f})")
        lower = sum(t < b for b, t in zip(tails["base"], tails["this"]))
        print(f"rounds where this's p99 is the lower: {lower} of {len(tails['this'])}")


if __name__ == "__main__":
    main()
