"""``guard serve``: the gate as an HTTP service, on FastAPI and uvicorn.

Why FastAPI (over plain Starlette, which it is built on): the API's bodies are pydantic models, and guard's own
(:class:`~guard.payload.Payload`) among them, so FastAPI gives the OpenAPI 3.1 document, request validation
and the security scheme from the same types the library uses, with no second description to keep in step.
Routes stay thin: they authenticate, pick the gate and await :class:`guard.pipeline.AsyncGuard`.

Modules: :mod:`~guard.server.config` (``serve.yaml``, validated at start, keys stored hashed),
:mod:`~guard.server.app` (routes, auth, limits, metrics), :mod:`~guard.server.problems` (RFC 9457 errors),
:mod:`~guard.server.models` (the OpenAPI bodies), :mod:`~guard.server.proxy` (the OpenAI-compatible verifying
proxy).

Several workers: uvicorn starts each from :func:`app_from_env`, which reads the config named by
``GUARD_SERVE_CONFIG`` (set by :func:`serve`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CONFIG_ENV = "GUARD_SERVE_CONFIG"
UVICORN_OPTIONS: dict[str, Any] = {
    "proxy_headers": False,
    "server_header": False,
    "timeout_graceful_shutdown": 30,
    "log_level": "warning",
}
"""How guard runs uvicorn: no ``Server`` header, no trust in ``X-Forwarded-*``, 30 s for in-flight requests to
finish on shutdown."""
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(message)s"},
        "server": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"},
    },
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stdout"},
        "server": {"class": "logging.StreamHandler", "formatter": "server", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "guard.server.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "guard.server": {"handlers": ["server"], "level": "WARNING", "propagate": False},
        "uvicorn": {"handlers": ["server"], "level": "INFO", "propagate": False},
    },
}
"""One JSON line per request on stdout (request id, key name, route template, status, milliseconds); the server's
own messages on stderr."""


def app_from_env() -> Any:
    """The application for the config file named by ``GUARD_SERVE_CONFIG`` (uvicorn's factory for workers)."""
    from guard.errors import ConfigError
    from guard.server.app import create_app
    from guard.server.config import load_serve_config

    path = os.environ.get(CONFIG_ENV)
    if not path:
        raise ConfigError(f"{CONFIG_ENV} names no serve config", location=CONFIG_ENV)
    return create_app(load_serve_config(path))


def serve(config: str | Path, *, host: str | None = None, port: int | None = None, workers: int | None = None) -> None:
    """Validate the config (an error names the key), then serve until interrupted; in-flight requests finish."""
    try:
        import uvicorn

        from guard.server.app import create_app
    except ImportError as exc:
        from guard.errors import DependencyError

        raise DependencyError(f"guard serve needs the server extra (pip install 'guard[server]'): {exc}") from None
    from guard.server.config import load_serve_config

    cfg = load_serve_config(config)
    n = workers or cfg.workers
    options: dict[str, Any] = {
        **UVICORN_OPTIONS,
        "host": host or cfg.host,
        "port": cfg.port if port is None else port,
        "log_config": LOG_CONFIG,
        "access_log": False,
    }
    if n == 1:
        uvicorn.run(create_app(cfg), **options)
        return
    os.environ[CONFIG_ENV] = str(Path(config).resolve())
    with _multiprocess_metrics():
        uvicorn.run("guard.server:app_from_env", factory=True, workers=n, **options)


@contextmanager
def _multiprocess_metrics() -> Iterator[None]:
    """Workers count into files of one folder, summed by ``/metrics`` (prometheus_client's multiprocess mode):
    the one named by ``PROMETHEUS_MULTIPROC_DIR``, or a fresh one removed at exit."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="guard-metrics-") as folder:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
        try:
            yield
        finally:
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)


__all__ = ["serve", "app_from_env", "CONFIG_ENV", "UVICORN_OPTIONS"]
