"""``guard serve``: the gate as an HTTP service, on FastAPI and uvicorn.

Why FastAPI (over plain Starlette, which it is built on): the API's bodies are pydantic models, and guard's own
(:class:`~guard.payload.Payload`) among them, so FastAPI gives the OpenAPI 3.1 document, request validation
and the security scheme from the same types the library uses, with no second description to keep in step.
Routes stay thin: they authenticate, pick the gate and await :class:`guard.pipeline.AsyncGuard`.

Modules: :mod:`~guard.server.config` (``serve.yaml``, validated at start, keys stored hashed),
:mod:`~guard.server.app` (routes, auth, limits, metrics), :mod:`~guard.server.problems` (RFC 9457 errors),
:mod:`~guard.server.models` (the OpenAPI bodies), :mod:`~guard.server.proxy` (the OpenAI-compatible verifying
proxy).

Workers: guard's supervisor (:mod:`~guard.server.workers`) starts each from :func:`app_from_env`, which reads the
config named by ``GUARD_SERVE_CONFIG`` (set by :func:`serve`); SIGHUP replaces them one by one, and a worker
retires by draining its connections (a reload that drops no request).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CONFIG_ENV = "GUARD_SERVE_CONFIG"
STATE_ENV = "GUARD_SERVE_STATE_DIR"
"""The folder where the workers of one server keep what they share (the per-key rate buckets)."""
PROFILE_ENV = "GUARD_SERVE_PROFILE"
"""A folder: each worker then runs under ``cProfile`` from the end of its start-up to its shutdown and writes
``worker-<pid>.prof`` there (``benchmarks/bench_serve.py --profile``). Unset, nothing is profiled."""
UVICORN_OPTIONS: dict[str, Any] = {
    "proxy_headers": False,
    "server_header": False,
    "timeout_graceful_shutdown": 30,
    "log_level": "warning",
    "loop": "uvloop",
    "http": "guard.server.protocol:HttpToolsProtocol1Write",
}
"""How guard runs uvicorn: no ``Server`` header, no trust in ``X-Forwarded-*``, 30 s for in-flight requests to
finish on shutdown; uvloop's event loop and httptools' parser, named (dependencies of the server extra, so a
missing one fails the start) rather than ``auto``, since a retiring worker is tested with these
(:mod:`guard.server.workers`). Against asyncio's loop and h11 they cut a worker's CPU per ``/v1/run`` by 0.1 to
0.2 ms of about 1.5 (benchmarks/bench_serve.py, the same tree with either pair). The protocol is httptools' with
a response's head and body sent in one write (:mod:`guard.server.protocol`)."""
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(message)s"},
        "server": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"},
    },
    "handlers": {
        "access": {"class": "guard.server.logs.HeldStreamHandler", "formatter": "plain", "stream": "ext://sys.stdout"},
        "server": {"class": "logging.StreamHandler", "formatter": "server", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "guard.server.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "guard.server": {"handlers": ["server"], "level": "WARNING", "propagate": False},
        "uvicorn": {"handlers": ["server"], "level": "INFO", "propagate": False},
    },
}
"""One JSON line per request on stdout (request id, key name, route template, status, milliseconds), flushed at most
once a second and at shutdown (:mod:`guard.server.logs`); the server's own messages on stderr."""


def app_from_env() -> Any:
    """The application for the config file named by ``GUARD_SERVE_CONFIG`` (uvicorn's factory for workers).

    A config that no longer loads (a reload after a bad edit) is one line on stderr and a worker that does not
    start: the supervisor then keeps the workers it has.
    """
    import sys

    from guard.errors import ConfigError, GuardError
    from guard.server.app import create_app
    from guard.server.config import load_serve_config

    try:
        path = os.environ.get(CONFIG_ENV)
        if not path:
            raise ConfigError(f"{CONFIG_ENV} names no serve config", location=CONFIG_ENV)
        return create_app(load_serve_config(path))
    except GuardError as exc:
        print(f"guard: error: {exc}", file=sys.stderr)
        sys.exit(3)  # uvicorn's STARTUP_FAILURE


def serve(config: str | Path, *, host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    """Validate the config (an error names the key), then serve until interrupted.

    Workers run under :class:`~guard.server.workers.Supervisor`, even one: SIGTERM or SIGINT lets requests in
    flight finish; SIGHUP replaces the workers one by one, each new one reading serve.yaml, the policies, grammars
    and model afresh and taking requests before the old one retires, so a reload drops none (a config that does
    not load leaves the old workers serving). A worker that fails at start-up stops the server with an error.
    """
    try:
        import uvicorn

        import guard.server.app  # noqa: F401  (fails here, with the hint, when the extra is missing)
    except ImportError as exc:
        from guard.errors import DependencyError

        raise DependencyError(f"guard serve needs the server extra (pip install 'guard[server]'): {exc}") from None
    from guard.errors import DependencyError
    from guard.server.config import load_serve_config
    from guard.server.workers import Supervisor

    cfg = load_serve_config(config)
    os.environ[CONFIG_ENV] = str(Path(config).resolve())
    server = uvicorn.Config(
        "guard.server:app_from_env",
        factory=True,
        workers=workers or cfg.workers,
        host=host or cfg.host,
        port=cfg.port if port is None else port,
        log_config=LOG_CONFIG,
        access_log=False,
        timeout_worker_healthcheck=120,
        **UVICORN_OPTIONS,
    )
    with _shared_folder("PROMETHEUS_MULTIPROC_DIR", "guard-metrics-"), _shared_folder(STATE_ENV, "guard-state-"):
        status = Supervisor(server, sockets=[server.bind_socket()]).run()
    if status:
        raise DependencyError("a worker failed to start (its error is above); the server stopped", location="workers")


@contextmanager
def _shared_folder(env: str, prefix: str) -> Iterator[None]:
    """A folder the workers share, named to them by ``env``: the one it already names, or a fresh one removed at
    exit. Metrics (prometheus_client's multiprocess mode, summed by ``/metrics``) and the per-key rates
    (:mod:`guard.server.ratelimit`) live in such folders."""
    if os.environ.get(env):
        yield
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        os.environ[env] = folder
        try:
            yield
        finally:
            os.environ.pop(env, None)


__all__ = ["serve", "app_from_env", "CONFIG_ENV", "STATE_ENV", "PROFILE_ENV", "UVICORN_OPTIONS"]
