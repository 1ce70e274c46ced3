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
    options: dict[str, Any] = {**UVICORN_OPTIONS, "host": host or cfg.host, "port": cfg.port if port is None else port}
    if n > 1:
        os.environ[CONFIG_ENV] = str(Path(config).resolve())
        uvicorn.run("guard.server:app_from_env", factory=True, workers=n, **options)
    else:
        uvicorn.run(create_app(cfg), **options)


__all__ = ["serve", "app_from_env", "CONFIG_ENV", "UVICORN_OPTIONS"]
