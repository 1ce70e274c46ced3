"""Errors as RFC 9457 ``application/problem+json``, carrying guard's codes; never a traceback.

A response body is ``{"type", "title", "status", "detail", "code", "problems", "request_id"}``: ``code`` is the
:class:`~guard.errors.GuardError` code (``payload``, ``option``, ``store_unavailable``, ...) or one of the
server's own (``unauthorized``, ``forbidden``, ``not_found``, ``too_large``, ``rate_limited``, ``timeout``,
``request``, ``not_ready``, ``internal``); ``problems`` are guard's located reasons (code, name, message,
location). An unexpected exception is logged on the server and answered with ``internal`` and no detail.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response

from guard.errors import ConfigError, GuardError, OptionError, PayloadError, Problem, StoreUnavailable

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:guard:problem:"

log = logging.getLogger("guard.server")

TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Request too large",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal error",
    502: "Bad gateway",
    503: "Service unavailable",
    504: "Gateway timeout",
}


class ServerProblem(Exception):
    """A request the server refuses for its own reasons (auth, limits, routing), with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        problems: list[Problem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail
        self.problems = problems or []
        self.headers = headers or {}


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    problems: list[Problem] | None = None,
    headers: dict[str, str] | None = None,
    request_id: str | None = None,
) -> JSONResponse:
    """One problem response."""
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + code,
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
        "problems": [p.to_dict() for p in problems or []],
    }
    if request_id:
        body["request_id"] = request_id
    return JSONResponse(body, status_code=status, headers=headers, media_type=MEDIA_TYPE)


def status_of(exc: GuardError) -> int:
    """The HTTP status of a library error: the caller's input (422, 400) or the server's trouble (503).

    Every configuration the server reads is checked at start, so a :class:`ConfigError` during a request (a
    database whose tables changed under the policy) is the server's, not the caller's: 503, without detail.
    """
    if isinstance(exc, PayloadError):
        return 422
    if isinstance(exc, OptionError):
        return 400
    if isinstance(exc, (StoreUnavailable, ConfigError)):
        return 503
    return 500


def _rid(request: Request) -> str | None:
    return getattr(request.state, "request_id", None)


async def on_guard_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GuardError)
    status = status_of(exc)
    if status >= 500:
        log.warning("request %s: %s: %s", _rid(request), exc.code, exc)
    detail = (
        exc.message
        if status < 500 or isinstance(exc, StoreUnavailable)
        else "guard is not configured correctly"
        if isinstance(exc, ConfigError)
        else "guard could not do its job"
    )
    problems = exc.problems if status < 500 else []
    if not problems and exc.location and status < 500:
        problems = [Problem(exc.code, exc.message, exc.location)]
    return problem(status, exc.code, detail, problems=problems, request_id=_rid(request))


async def on_server_problem(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServerProblem)
    return problem(
        exc.status, exc.code, exc.detail, problems=exc.problems, headers=exc.headers, request_id=_rid(request)
    )


def _location(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        head, rest = parts[0], parts[1:]
        return head + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in rest)
    return ".".join(parts)


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = [
        Problem("request", str(e.get("msg", "invalid")), _location(tuple(e.get("loc", ())))) for e in exc.errors()
    ]
    return problem(422, "request", "the request does not match its schema", problems=problems, request_id=_rid(request))


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 400: "request"}


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "request" if exc.status_code < 500 else "internal")
    detail = {404: "no such resource", 405: "this method is not allowed here"}.get(exc.status_code, "bad request")
    return problem(exc.status_code, code, detail, headers=dict(exc.headers or {}), request_id=_rid(request))


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("request %s failed", _rid(request), exc_info=exc)
    return problem(500, "internal", "guard could not do its job", request_id=_rid(request))


def retry_after(seconds: float) -> dict[str, str]:
    """The ``Retry-After`` header: whole seconds, at least one."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


__all__ = ["ServerProblem", "problem", "status_of", "MEDIA_TYPE", "TITLES", "retry_after"]
