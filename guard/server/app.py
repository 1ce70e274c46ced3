"""The ASGI application: a thin HTTP layer over :class:`guard.pipeline.AsyncGuard`.

Every route authenticates the caller (``Authorization: Bearer <key>``, compared by its SHA-256), checks that the
key may use the policy and domain it names (403 otherwise, whether or not they exist, so a key learns nothing
about another's), counts it against the key's rate (429 with ``Retry-After``), then calls the library and sends
the library's own ``to_dict()``. The principal for row scope is read only from the configured header
(``X-Guard-Principal`` by default), which the trusted application sets for the customer it answers; nothing in a
payload or query can set it.
"""

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qsl

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from pydantic_core import PydanticSerializationError, to_json
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response

from guard._version import __version__
from guard.errors import GuardError, Problem
from guard.pipeline import AsyncGuard, StageBound
from guard.server import PROFILE_ENV, STATE_ENV
from guard.server import problems as P
from guard.server.config import KeyConfig, LimitsConfig, ServeConfig, hash_key
from guard.server.logs import flush_access_log, plain_handler
from guard.server.models import (
    ClassifyOut,
    ClassifyRequest,
    DecisionOut,
    GrammarsOut,
    HealthOut,
    LintOut,
    LintRequest,
    MonitorOut,
    ProblemDetails,
)
from guard.server.ratelimit import RateLimiter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

access_log = logging.getLogger("guard.server.access")
T = TypeVar("T")
MIN_MONITOR_WINDOW = timedelta(minutes=1)


@dataclass
class Caller:
    """An authenticated key: its name in the config and what it may do."""

    name: str
    key: KeyConfig


@dataclass
class State:
    """What the server builds once: one gate per (policy, domain), shared stores, the classifier, the meters."""

    cfg: ServeConfig
    gates: dict[tuple[str, str], AsyncGuard]
    classifier: Any
    metrics: Any
    log: Any
    entities: dict[str, list[str]]
    keys: dict[str, str] = field(default_factory=dict)
    limiter: Any = None
    started: bool = False

    def stores(self) -> dict[str, Any]:
        """Each policy's store (shared by its domains' gates)."""
        return {p: g.store for (p, _d), g in self.gates.items()}


def build_state(cfg: ServeConfig) -> State:
    """Load policies, compile grammars, load the model: the slow part of start-up, done before serving.

    Library errors (a policy that does not parse, a gate config naming an unknown stage) surface here as the
    library's :class:`~guard.errors.ConfigError`, located by the key of ``serve.yaml`` that names the file.
    """
    from guard.observe.metrics import Metrics
    from guard.records.policy import load_policy
    from guard.records.store import AsyncRecordStore
    from guard.shapes.sentences import load_domain

    classifier = None
    if cfg.classifier != "none":
        from guard.linting.freetext import load_classifier

        classifier = load_classifier(None if cfg.classifier == "auto" else cfg.classifier)
    log = None
    if cfg.log is not None:
        from guard.observe.events import EventLog

        log = EventLog(cfg.log)
    metrics = Metrics(deferred=True)
    gates: dict[tuple[str, str], AsyncGuard] = {}
    for pname, pc in cfg.policies.items():
        try:
            policy = load_policy(Path(pc.policy))
        except GuardError as exc:
            exc.location = f"policies.{pname}.policy: {exc.location}" if exc.location else f"policies.{pname}.policy"
            raise
        store = AsyncRecordStore(
            pc.db, policy, statement_timeout=pc.statement_timeout, pool_size=pc.pool_size, coalesce=pc.coalesce
        )
        for domain in pc.domains:
            gates[pname, domain] = AsyncGuard(
                policy,
                store,
                domain=domain,
                config=cfg.gate_config,
                log=log,
                metrics=metrics,
                classifier=classifier if classifier is not None else "auto",
                grammar_dir=cfg.grammar_dir,
            )
    domains = sorted({d for _p, d in gates})
    state = State(
        cfg,
        gates,
        classifier,
        metrics,
        log,
        {d: list(load_domain(d, cfg.grammar_dir).compiled.entities) for d in domains},
        keys={k.hash: name for name, k in cfg.keys.items()},
        limiter=RateLimiter(
            {name: k.rate or cfg.limits.rate for name, k in cfg.keys.items()}, os.environ.get(STATE_ENV) or None
        ),
    )
    return state


# -- middleware --------------------------------------------------------------------
class Edge:
    """Outermost layer: request id, body size limit (413), access log and HTTP metrics.

    The limit is checked against ``Content-Length`` before anything is read, and again while a body of unknown
    length streams in, so an oversized body is never held in memory.
    """

    def __init__(self, app: ASGIApp, max_body: int, observe: Callable[[Scope, int, float], None]) -> None:
        self.app, self.max_body, self.observe = app, max_body, observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        rid = secrets.token_hex(16)
        scope.setdefault("state", {})["request_id"] = rid
        status = 500
        refused = _length_problem(scope, self.max_body, rid)
        if refused is not None:
            await refused(scope, receive, send)
            self.observe(scope, refused.status_code, time.perf_counter() - t0)
            return
        seen = 0
        exceeded = False

        async def limited() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    exceeded = True
                    raise P.ServerProblem(413, "too_large", "the request body is too large")
            return message

        async def sending(message: Message) -> None:
            nonlocal status
            if exceeded:  # whatever the app made of the cut body (FastAPI says 400), the answer is 413
                if message["type"] == "http.response.start":
                    status = 413
                    detail = f"the request body is larger than {self.max_body} bytes"
                    too_large = P.problem(413, "too_large", detail, request_id=rid)
                    too_large.raw_headers.append((b"x-request-id", rid.encode()))
                    await too_large(scope, receive, send)
                return
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", []).append((b"x-request-id", rid.encode()))
            await send(message)

        try:
            await self.app(scope, limited, sending)
        finally:
            self.observe(scope, status, time.perf_counter() - t0)


def _length_problem(scope: Scope, max_body: int, rid: str) -> Response | None:
    """The answer to a ``Content-Length`` over the limit (413) or not a number (400), before any body is read."""
    length = _content_length(scope)
    if length is None or 0 <= length <= max_body:
        return None
    if length > max_body:
        return P.problem(413, "too_large", f"the request body is larger than {max_body} bytes", request_id=rid)
    return P.problem(400, "request", "the Content-Length header is not a number", request_id=rid)


class Lean:
    """Outermost layer: ``handle`` answers the requests it takes (``POST /v1/run`` and ``/v1/check`` with plainly
    valid parameters, about nine in ten of a deployment's requests), the application the rest.

    On those routes FastAPI's and Starlette's layers (error and telemetry middleware, body limit, exception
    middleware, routing, the request wrapper) each cost a few microseconds, together about a fifth of a
    request's CPU; ``handle`` does what they do for these routes, in the same order, with the same functions
    (auth, rate, routing to the gate, exception handlers, access log and metrics). The FastAPI routes stay as
    the readable reference; ``tests/server/test_lean.py`` checks that both answer byte for byte alike.
    """

    def __init__(self, app: ASGIApp, handle: Callable[[Scope, Receive, Send], Awaitable[bool]]) -> None:
        self.app, self.handle = app, handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _lean_enabled() or not await self.handle(scope, receive, send):
            await self.app(scope, receive, send)


def _lean_enabled() -> bool:
    """Whether :class:`Lean` takes its requests (tests turn it off to ask the FastAPI routes)."""
    return True


_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
"""Starlette's ``JSONResponse`` rendering, made once (``json.dumps`` with these options makes an encoder a call)."""

PLAIN_INT = 1 << 63
"""Integers of plain JSON (:func:`plain_json`) lie strictly within this bound; Python's ``str`` of an int past
4,300 digits raises, and pydantic_core would write it."""
PLAIN_NODES = 10_000
"""Containers :func:`plain_json` looks into before it gives up (so a cycle, which the reference refuses, ends)."""


def plain_json(content: Any) -> bool:
    """Whether ``content`` is made only of dicts with ``str`` keys, lists, ``str``, ``bool``, ``None`` and ints within
    :data:`PLAIN_INT` (exact types, no subclasses), with at most :data:`PLAIN_NODES` containers.

    For such content ``pydantic_core.to_json`` writes the bytes :data:`_JSON` does (compact separators, UTF-8 text,
    the same escapes), in about a third of the time. Floats are left out because the two write some differently
    (``1e-05`` against ``0.00001``), as are tuples, other types and subclasses, which the reference writes, or
    refuses, its own way."""
    stack = [content]
    nodes = 0
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            for key in node:
                if type(key) is not str:
                    return False
            values = node.values()
        elif kind is list:
            values = node
        else:
            values = (node,)
        for value in values:
            kind = type(value)
            if kind is str or kind is bool or value is None:
                continue
            if kind is int:
                if -PLAIN_INT < value < PLAIN_INT:
                    continue
                return False
            if kind is dict or kind is list:
                nodes += 1
                if nodes > PLAIN_NODES:
                    return False
                stack.append(value)
                continue
            return False
    return True


def json_bytes(content: Any) -> bytes:
    """``JSONResponse(content).body``: written by pydantic_core when the content is :func:`plain_json`, else (or when
    it finds a lone surrogate, which the reference refuses with its own error) by the reference encoder."""
    if plain_json(content):
        try:
            return to_json(content)
        except PydanticSerializationError:
            pass
    return _JSON.encode(content).encode("utf-8")


class _JsonAnswer:
    """What :class:`Lean` sends for a 200: the status, headers and body ``JSONResponse(content)`` would have, byte for
    byte, without the response class (its headers, background and send machinery cost more than the bytes)."""

    __slots__ = ("body", "raw_headers")
    status_code = 200

    def __init__(self, content: Any) -> None:
        self.body = json_bytes(content)
        self.raw_headers = [(b"content-length", str(len(self.body)).encode()), (b"content-type", b"application/json")]


class _TooLarge(Exception):
    """The body streamed past the limit."""


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body, as Starlette's ``Request.body`` reads it, refused once past ``limit`` bytes (as
    :class:`Edge` does)."""
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                raise _TooLarge
            if chunk:
                chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect()


def _bearer_token(scope: Scope) -> str | None:
    """The token of the first ``Authorization`` header when it is ``Bearer <token>`` (any case), as FastAPI's
    ``HTTPBearer(auto_error=False)`` reads it; None otherwise."""
    for name, raw in scope["headers"]:
        if name == b"authorization":
            scheme, credentials = get_authorization_scheme_param(raw.decode("latin-1"))
            if not (scheme and credentials) or scheme.lower() != "bearer":
                return None
            return credentials
    return None


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1")
            return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else -1
    return None


_json_str = json.encoder.encode_basestring_ascii


def access_line(request_id: str | None, key: str | None, method: str, route: str, status: int, seconds: float) -> str:
    """The access log's JSON line, the text ``json.dumps`` makes of the same dict (key order, spacing, escapes),
    written out directly: ``json.dumps`` of a six-key dict cost more than the rest of the line's logging."""
    rid = "null" if request_id is None else _json_str(request_id)
    name = "null" if key is None else _json_str(key)
    ms = round(seconds * 1000, 3)
    return (
        f'{{"request_id": {rid}, "key": {name}, "method": {_json_str(method)}, "route": {_json_str(route)}, '
        f'"status": {int(status)!r}, "ms": {float(ms)!r}}}'
    )


# -- the application --------------------------------------------------------------
_PROBLEM_CONTENT = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: {"description": P.TITLES.get(s, "Error"), "content": _PROBLEM_CONTENT} for s in statuses}


_PAYLOAD_BODY = {
    "requestBody": {
        "required": True,
        "description": "The payload exactly as the model wrote it.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Payload"}}},
    }
}


def create_app(cfg: ServeConfig, state: State | None = None) -> FastAPI:
    """The application for ``cfg``; builds the gates now unless ``state`` is given."""
    st = state or build_state(cfg)
    http_requests, http_seconds = _http_metrics(st.metrics)
    series: dict[tuple[str, int], tuple[Any, Any]] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        for gate in st.gates.values():
            await gate.open(warm=True)
        st.started = True
        flushing = asyncio.create_task(_flush_held(st.metrics))
        profiler = _profiler()
        try:
            yield
        finally:
            flushing.cancel()
            _flush_quietly(st.metrics)
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(Path(os.environ[PROFILE_ENV]) / f"worker-{os.getpid()}.prof")
            st.started = False
            st.limiter.close()
            for store in {id(s): s for s in st.stores().values()}.values():
                await store.aclose()
            if st.log is not None:
                await asyncio.to_thread(st.log.close)

    app = FastAPI(
        title="guard",
        version=__version__,
        summary="Verify a language model's answers against the system of record.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # guard's metrics are its own Prometheus meters; FastAPI's OpenTelemetry hooks otherwise ask the global
        # providers whether to trace on every request
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.add_exception_handler(GuardError, P.on_guard_error)
    app.add_exception_handler(P.ServerProblem, P.on_server_problem)
    app.add_exception_handler(RequestValidationError, P.on_validation_error)
    app.add_exception_handler(StarletteHTTPException, P.on_http_error)
    app.add_exception_handler(Exception, P.on_unexpected)

    def observe(scope: Scope, status: int, seconds: float) -> None:
        """Count the request and write one JSON access line (route template, never the raw path or query)."""
        route = getattr(scope.get("route"), "path", "") or "unmatched"
        meters = series.get((route, status))
        if meters is None:  # routes are templates and statuses few, so this stays small
            child = st.metrics.child
            meters = series[route, status] = (child(http_requests, route, str(status)), child(http_seconds, route))
        with st.metrics.lock:
            meters[0].inc()
            meters[1].observe(seconds)
        if access_log.isEnabledFor(logging.INFO):
            state = scope.get("state", {})
            line = access_line(state.get("request_id"), state.get("key"), scope["method"], route, status, seconds)
            held = plain_handler(access_log)
            if held is not None:  # guard serve's own set-up: the line straight to the one place it goes
                held.hold(line)
            else:  # Logger.info's own path, less its search of the stack for the caller (no access line shows it)
                access_log.handle(
                    access_log.makeRecord(access_log.name, logging.INFO, "(unknown file)", 0, line, (), None)
                )

    app.add_middleware(Edge, max_body=cfg.limits.max_body_bytes, observe=observe)

    bearer = HTTPBearer(auto_error=False, description="An API key from serve.yaml (stored there as its SHA-256).")
    header = cfg.principal_header

    async def caller(
        request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> Caller:
        if creds is None or creds.scheme.lower() != "bearer":
            return admit(None, request.scope)
        return admit(creds.credentials, request.scope)

    def admit(key: str | None, scope: Scope) -> Caller:
        """The caller of ``key`` (a bearer token, None when there is none), counted against its rate."""
        if key is None:
            raise P.ServerProblem(401, "unauthorized", "an API key is required", headers={"WWW-Authenticate": "Bearer"})
        name = st.keys.get(hash_key(key))
        if name is None:
            raise P.ServerProblem(
                401, "unauthorized", "the API key is not valid", headers={"WWW-Authenticate": "Bearer"}
            )
        scope.setdefault("state", {})["key"] = name
        wait = st.limiter.hit(name)
        if wait:
            raise P.ServerProblem(
                429, "rate_limited", "this key has made too many requests", headers=P.retry_after(wait)
            )
        return Caller(name, cfg.keys[name])

    Who = Annotated[Caller, Depends(caller)]

    def gate_for(who: Caller, policy: str, domain: str | None) -> AsyncGuard:
        pc = cfg.policies.get(policy)
        chosen = domain
        if chosen is None and pc is not None:  # the policy's first domain this key may use
            chosen = next((d for d in pc.domains if d in who.key.domains), pc.domains[0])
        if pc is None or policy not in who.key.policies:
            raise P.ServerProblem(
                403, "forbidden", "this key may not use the requested policy", problems=[_loc("query.policy")]
            )
        if chosen not in who.key.domains or (policy, chosen) not in st.gates:
            raise P.ServerProblem(
                403, "forbidden", "this key may not use the requested domain", problems=[_loc("query.domain")]
            )
        return st.gates[policy, chosen]

    def when(who: Caller, now: str | None) -> datetime | None:
        if now is None:
            return None
        if not who.key.allow_now:
            raise P.ServerProblem(403, "forbidden", "this key may not set now", problems=[_loc("query.now")])
        from guard.timeutil import parse_time

        return parse_time(now, location="query.now")

    bound = stage_bound(cfg.limits)
    # a run holds a pooled connection; past pool_size, SQLAlchemy opens overflow connections and closes them on
    # return, so under load each extra run paid a fresh database connection (on PostgreSQL a backend process)
    slots = {p: asyncio.Semaphore(pc.pool_size) for p, pc in cfg.policies.items()}

    request_limit = cfg.limits.request_timeout
    stage_limits = {"lint": cfg.limits.lint_timeout, "check": cfg.limits.check_timeout}

    def timed(work: Awaitable[T]) -> Awaitable[T]:
        return within("request", cfg.limits.request_timeout, work)

    async def decide(
        request: Request,
        who: Caller,
        policy: str,
        domain: str | None,
        now: str | None,
        principal: str | None,
        *,
        claims_only: bool,
    ) -> Response:
        """``/v1/run`` (the whole gate) or ``/v1/check`` (``claims_only``), each stage and the whole bounded."""
        gate = gate_for(who, policy, domain)
        moment = when(who, now)
        body = await request.body()
        deadline = Deadline(request_limit, stage_limits)
        decision = await deadline.within(
            admitted(gate, policy, claims_only, body, principal, moment, request.state.request_id, deadline.bound)
        )
        return JSONResponse(decision.to_dict())

    async def admitted(
        gate: AsyncGuard,
        policy: str,
        claims_only: bool,
        body: bytes,
        principal: str | None,
        moment: datetime | None,
        rid: str,
        stages: StageBound,
    ) -> Any:
        """The gate's step once one of the policy's pooled connections is free."""
        step = gate.verify if claims_only else gate.run
        async with slots[policy]:
            return await step(body, principal, now=moment, request_id=rid, bound=stages)

    now_doc = "Judge freshness at this ISO time (only keys with allow_now)."
    principal_doc = (
        "The customer the answer is for (row scope), set by the trusted application; payloads cannot set it."
    )

    @app.post(
        "/v1/run",
        response_model=None,
        responses={200: {"model": DecisionOut}, **_errors(400, 401, 403, 413, 422, 429, 503)},
        openapi_extra=_PAYLOAD_BODY,
        summary="The whole gate: lint, check, decide, render.",
    )
    async def run(
        request: Request,
        who: Who,
        policy: str = Query(..., max_length=128),
        domain: str | None = Query(None, max_length=128),
        now: str | None = Query(None, max_length=64, description=now_doc),
        principal: str | None = Header(None, alias=header, description=principal_doc),
    ) -> Response:
        return await decide(request, who, policy, domain, now, principal, claims_only=False)

    @app.post(
        "/v1/check",
        response_model=None,
        responses={200: {"model": DecisionOut}, **_errors(400, 401, 403, 413, 422, 429, 503)},
        openapi_extra=_PAYLOAD_BODY,
        summary="Check the claims only (no prose stages), decide and render.",
    )
    async def check(
        request: Request,
        who: Who,
        policy: str = Query(..., max_length=128),
        now: str | None = Query(None, max_length=64, description=now_doc),
        principal: str | None = Header(None, alias=header, description=principal_doc),
    ) -> Response:
        return await decide(request, who, policy, None, now, principal, claims_only=True)

    async def plain_decide(request: Request, claims_only: bool, params: dict[str, str | None]) -> Response:
        who = await caller(request, await bearer(request))
        policy, domain, now = params["policy"], params.get("domain"), params.get("now")
        principal = params["principal"]
        return await decide(request, who, policy or "", domain, now, principal, claims_only=claims_only)

    run_query = {"policy": 128, "domain": 128, "now": 64}
    check_query = {"policy": 128, "now": 64}
    _plain_path(app, "/v1/run", run_query, header, lambda rq, ps: plain_decide(rq, False, ps))
    _plain_path(app, "/v1/check", check_query, header, lambda rq, ps: plain_decide(rq, True, ps))

    header_name = header.lower().encode("latin-1")
    max_body = cfg.limits.max_body_bytes
    lean_routes: dict[str, tuple[APIRoute, dict[str, int], bool, dict[bytes, dict[str, str | None] | None]]] = {
        path: (route, query, path == "/v1/check", {})
        for route in app.router.routes
        if isinstance(route, APIRoute) and "POST" in (route.methods or ())
        for path, query in (("/v1/run", run_query), ("/v1/check", check_query))
        if route.path == path
    }

    async def lean(scope: Scope, receive: Receive, send: Send) -> bool:
        """``/v1/run`` or ``/v1/check`` as Edge, the bearer and caller dependencies, ``decide`` and the exception
        handlers answer it, without the layers between them; False, having read and sent nothing, when the
        request is not plainly one of theirs (FastAPI then answers it)."""
        found = lean_routes.get(scope["path"])
        if found is None or scope["method"] != "POST" or scope.get("root_path"):
            return False
        route, query, claims_only, cache = found
        params = _plain_params(scope, query, header_name, cache)
        if params is None:
            return False
        t0 = time.perf_counter()
        rid = secrets.token_hex(16)
        scope.setdefault("state", {})["request_id"] = rid
        scope["route"] = route
        rid_header = (b"x-request-id", rid.encode())
        status = 500
        started = False

        async def respond(response: Response | _JsonAnswer, *extra: tuple[bytes, bytes]) -> None:
            nonlocal status, started
            status, started = response.status_code, True
            await send({"type": "http.response.start", "status": status, "headers": [*response.raw_headers, *extra]})
            await send({"type": "http.response.body", "body": response.body})

        try:
            refused = _length_problem(scope, max_body, rid)
            if refused is not None:  # as Edge answers it: before the app, without the request id header
                await respond(refused)
                return True
            try:
                who = admit(_bearer_token(scope), scope)
                gate = gate_for(who, params["policy"] or "", params.get("domain"))
                moment = when(who, params.get("now"))
                body = await _read_body(receive, max_body)
                deadline = Deadline(request_limit, stage_limits)
                decision = await deadline.within(
                    admitted(
                        gate,
                        params["policy"] or "",
                        claims_only,
                        body,
                        params["principal"],
                        moment,
                        rid,
                        deadline.bound,
                    )
                )
                answer: Response | _JsonAnswer = _JsonAnswer(decision.to_dict())
            except _TooLarge:
                too_large = f"the request body is larger than {max_body} bytes"
                answer = P.problem(413, "too_large", too_large, request_id=rid)
            except P.ServerProblem as exc:
                answer = await P.on_server_problem(Request(scope), exc)
            except GuardError as exc:
                answer = await P.on_guard_error(Request(scope), exc)
            await respond(answer, rid_header)
        except Exception as exc:  # as ServerErrorMiddleware does: a 500 problem if nothing was sent, then re-raise
            if not started:
                await respond(await P.on_unexpected(Request(scope), exc))
            raise
        finally:
            observe(scope, status, time.perf_counter() - t0)
        return True

    build_stack = app.build_middleware_stack
    app.build_middleware_stack = lambda: Lean(build_stack(), lean)  # type: ignore[method-assign]

    @app.post(
        "/v1/lint",
        response_model=None,
        responses={200: {"model": LintOut}, **_errors(401, 403, 413, 422, 429, 503)},
        summary="Lint a template in a domain with the gate's stages.",
    )
    async def lint(body: LintRequest, who: Who) -> Response:
        if body.domain not in who.key.domains:
            raise P.ServerProblem(
                403, "forbidden", "this key may not use the requested domain", problems=[_loc("body.domain")]
            )
        gate = next(g for (p, d), g in st.gates.items() if d == body.domain)
        slot_types = {k: v.value for k, v in body.slot_types.items()}
        result = await timed(bound("lint", gate.lint_template(body.template, slot_types)))
        return JSONResponse(result.to_dict())

    @app.post(
        "/v1/classify",
        response_model=None,
        responses={200: {"model": ClassifyOut}, **_errors(401, 404, 413, 422, 429, 503)},
        summary="Classify sentences: comparative, quantity, causal, with evidence spans.",
    )
    async def classify(body: ClassifyRequest, who: Who) -> Response:
        if st.classifier is None:
            raise P.ServerProblem(404, "not_found", "this server has no classifier (classifier: none)")
        if len(body.sentences) > cfg.limits.max_sentences:
            raise P.ServerProblem(
                422,
                "request",
                f"at most {cfg.limits.max_sentences} sentences per request",
                problems=[_loc("body.sentences")],
            )
        predictions = await timed(bound("lint", asyncio.to_thread(st.classifier.predict, body.sentences)))
        return JSONResponse({"predictions": [p.to_dict() for p in predictions]})

    @app.get(
        "/v1/schema/{policy}",
        response_model=None,
        responses={
            200: {
                "description": "JSON Schema (2020-12) of payloads under the policy",
                "content": {"application/json": {"schema": {"type": "object"}}},
            },
            **_errors(401, 403, 429),
        },
        summary="The structured-output JSON Schema of payloads under a policy.",
    )
    async def schema(policy: str, who: Who) -> Response:
        from guard.records.schema import payload_schema

        gate = gate_for(who, policy, None)
        return JSONResponse(payload_schema(gate.policy))

    @app.get(
        "/v1/grammars",
        response_model=None,
        responses={200: {"model": GrammarsOut}, **_errors(401, 429)},
        summary="The sentence libraries this key may use.",
    )
    async def grammars(who: Who) -> Response:
        out = []
        for d in sorted(st.entities):
            if d in who.key.domains:
                pols = sorted(p for (p, dd) in st.gates if dd == d and p in who.key.policies)
                out.append({"domain": d, "entities": st.entities[d], "policies": pols})
        return JSONResponse({"domains": out})

    @app.get(
        "/v1/monitor",
        response_model=None,
        responses={200: {"model": MonitorOut}, **_errors(400, 401, 403, 404, 429, 503)},
        summary="The monitor's report (status rates per field, alerts) over this server's own log, for a domain.",
        description="Reads the whole log (with its rotated files) on each call, in time linear in its size and "
        "memory that grows with windows times fields; the window is at least a minute.",
    )
    async def monitor(
        who: Who,
        domain: str | None = Query(None, max_length=128, description="Default: the key's first domain."),
        window: str = Query("1h", max_length=32, description="Window length (15m, 1h, 1d)."),
        baseline: int = Query(24, ge=1, le=10_000, description="Windows in the rolling baseline."),
        min_count: int = Query(30, ge=1, le=1_000_000, description="Resolved claims a window needs to be tested."),
    ) -> Response:
        from guard.observe.monitor import MonitorConfig, monitor_logs, parse_window

        chosen = domain if domain is not None else who.key.domains[0]
        if chosen not in who.key.domains:
            raise P.ServerProblem(
                403, "forbidden", "this key may not use the requested domain", problems=[_loc("query.domain")]
            )
        if cfg.log is None:
            raise P.ServerProblem(404, "not_found", "this server keeps no log (log: in serve.yaml)")
        listed = frozenset(
            (name, f)
            for (p, d), g in st.gates.items()
            if d == chosen
            for name, entity in g.policy.entities.items()
            for f in entity.fields
        )
        try:
            length = parse_window(window)
        except GuardError as exc:
            exc.location = "query.window"
            raise
        if length < MIN_MONITOR_WINDOW:  # windows are kept in memory: a second's window over a month is millions
            raise P.ServerProblem(
                400,
                "request",
                "the window must be at least a minute",
                problems=[Problem("request", "shorter than a minute", "query.window")],
            )
        config = MonitorConfig(
            window=length, baseline_windows=baseline, min_count=min_count, domain=chosen, listed=listed
        )
        out = (await timed(asyncio.to_thread(monitor_logs, [str(cfg.log)], config))).to_dict()
        # the server's paths and raw lines of other domains' events are not the caller's to see
        out["read"] = {k: v for k, v in out["read"].items() if k not in ("files", "malformed_examples")}
        return JSONResponse(out)

    @app.get("/healthz", response_model=None, responses={200: {"model": HealthOut}}, summary="The process is up.")
    async def healthz() -> Response:
        return JSONResponse({"status": "ok", "checks": {}})

    @app.get(
        "/readyz",
        response_model=None,
        responses={200: {"model": HealthOut}, **_errors(503)},
        summary="Every database answers; grammars and the model are loaded.",
    )
    async def readyz(request: Request) -> Response:
        stores = {id(s): (p, s) for p, s in st.stores().items()}
        answers = await asyncio.gather(*(s.aping() for _p, s in stores.values()))
        checks = {f"db:{p}": ok for (p, _s), ok in zip(stores.values(), answers)}
        checks["grammars"] = bool(st.gates) and st.started
        checks["model"] = st.classifier is not None or cfg.classifier == "none"
        failed = [Problem("not_ready", f"{k} is not ready", k) for k, ok in checks.items() if not ok]
        if failed:
            return P.problem(503, "not_ready", "the server is not ready", problems=failed)
        return JSONResponse({"status": "ready", "checks": checks})

    @app.get(
        "/metrics", response_model=None, summary="Prometheus metrics.", responses={200: {"content": {"text/plain": {}}}}
    )
    async def metrics() -> Response:
        return Response(st.metrics.expose(), media_type=st.metrics.content_type)

    if cfg.ui:
        from guard.server.playground import add_playground

        add_playground(app)

    if cfg.proxy is not None:
        from guard.server.proxy import add_proxy

        add_proxy(app, cfg, st, caller, gate_for, header)

    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    app.state.guard = st
    return app


async def within(what: str, seconds: float, work: Awaitable[T]) -> T:
    """``work``, or a 503 ``timeout`` naming ``what`` once it has taken ``seconds``.

    Work in a thread (the grammar, the classifier) is not stopped, only no longer waited for; it is linear in
    the request's size, which the body limit bounds. The work runs in the caller's task under a deadline
    (``asyncio.timeout``), not in a task of its own as ``asyncio.wait_for`` would make on Python 3.11: three
    nested bounds per request would otherwise cost three tasks and their trips round the event loop.
    """
    try:
        async with asyncio.timeout(seconds):
            return await work
    except TimeoutError:
        name = "the request" if what == "request" else f"the {what} stage"
        raise P.ServerProblem(503, "timeout", f"{name} took longer than {seconds:g} s") from None


class Deadline:
    """A request's time limit and its stages' (``lint``, ``check``) on one timer: :meth:`within` bounds the request,
    :meth:`bound` (a :class:`~guard.pipeline.StageBound`) each stage in it; a limit run out is a 503 ``timeout``
    naming the request or the stage, as :func:`within` words it.

    Why one timer: an ``asyncio.timeout`` a bound (the request's and the check stage's on every request) costs a
    timer scheduled and cancelled and its context manager each. Here the timer is set for the earliest moment
    any limit could run out: the request's, the running stage's, or now plus the shortest stage limit (a stage
    that has not begun yet ends no earlier). Going off before any limit is out, it is set again the same way;
    so a request done within the shortest stage limit (all but the slow ones) sets one timer and cancels it,
    and entering a stage touches no timer. Like ``asyncio.timeout`` it cancels the task and turns only its own
    cancellation into the 503: a cancellation from elsewhere (a shutdown) passes through as it came.
    """

    __slots__ = (
        "loop",
        "task",
        "cancelling",
        "stages",
        "shortest",
        "request_limit",
        "request_due",
        "stage",
        "stage_due",
        "entered",
        "armed",
        "handle",
        "expired",
    )

    def __init__(self, request: float, stages: dict[str, float]) -> None:
        self.loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadline needs a task")
        self.task, self.cancelling = task, task.cancelling()
        self.stages, self.shortest = stages, min(stages.values())
        now = self.loop.time()
        self.request_limit, self.request_due = request, now + request
        self.stage: str | None = None
        self.stage_due = 0.0
        self.entered = 0
        """Stages entered so far: a timer set for a stage's limit counts only while that stage runs."""
        self.expired: str | None = None
        self.armed: int | None = None
        self.handle = self._arm(now)

    def _arm(self, now: float) -> asyncio.TimerHandle:
        """The timer at the earliest moment a limit could run out; :attr:`armed` says for what (-1 the request,
        a stage's number, None a stage not yet begun)."""
        when, self.armed = self.request_due, -1
        if self.stage is not None and self.stage_due < when:
            when, self.armed = self.stage_due, self.entered
        if now + self.shortest < when:
            when, self.armed = now + self.shortest, None
        return self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        if self.armed == -1:
            self.expired = "request"
        elif self.armed is not None and self.stage is not None and self.armed == self.entered:
            self.expired = self.stage
        else:
            self.handle = self._arm(self.loop.time())
            return
        self.task.cancel()

    async def bound(self, stage: str, work: Awaitable[T], /) -> T:
        """``work`` as the stage ``stage``, under its limit (and the request's)."""
        self.entered += 1
        self.stage, self.stage_due = stage, self.loop.time() + self.stages[stage]
        try:
            return await work
        finally:
            self.stage = None

    async def within(self, work: Awaitable[T]) -> T:
        """``work`` (the request) under the limits; the timer is cancelled when it ends."""
        uncancelled = False
        try:
            return await work
        except asyncio.CancelledError:
            if self.expired is None:
                raise
            uncancelled = True
            if self.task.uncancel() > self.cancelling:  # cancelled from elsewhere as well
                raise
            what, seconds = (
                ("the request", self.request_limit)
                if self.expired == "request"
                else (f"the {self.expired} stage", self.stages[self.expired])
            )
            raise P.ServerProblem(503, "timeout", f"{what} took longer than {seconds:g} s") from None
        finally:
            self.handle.cancel()
            if self.expired is not None and not uncancelled:  # the work ended its own way after the timer went off
                self.task.uncancel()


def stage_bound(limits: LimitsConfig) -> StageBound:
    """The per-stage time limits of ``limits`` as :class:`~guard.pipeline.StageBound` for :class:`AsyncGuard`."""
    seconds = {"lint": limits.lint_timeout, "check": limits.check_timeout}

    def bound(stage: str, work: Awaitable[T], /) -> Awaitable[T]:
        return within(stage, seconds[stage], work)

    return bound


def _plain_path(
    app: FastAPI,
    path: str,
    query: dict[str, int],
    header: str,
    handler: Callable[[Request, dict[str, str | None]], Awaitable[Response]],
) -> None:
    """Serve the POST route at ``path`` without FastAPI's per-request parameter machinery when its parameters are
    plainly valid, the rest through FastAPI.

    The route's parameters are strings (each query parameter in ``query`` with its maximum length, ``policy``
    required; the principal ``header``), so FastAPI's validation of them reduces to: present when required,
    not too long. When each appears at most once and passes, ``handler`` gets them and runs the same
    dependencies (bearer, caller) in the same order through FastAPI's own request wrapper, so exception
    handlers, problems and logging are the ones the route has. Anything else (a missing or overlong
    parameter, a repeated one) goes to FastAPI unchanged, which answers it as before: this path never decides
    an error. Solving the dependencies cost about 0.15 to 0.25 ms of CPU a request; the route, and so the
    OpenAPI document, stay as declared.
    """
    from fastapi.routing import APIRoute
    from fastapi.routing import request_response as fastapi_request_response

    route = next(
        r for r in app.router.routes if isinstance(r, APIRoute) and r.path == path and "POST" in (r.methods or ())
    )
    through_fastapi = route.app
    header_name = header.lower().encode("latin-1")

    async def endpoint(request: Request) -> Response:
        return await handler(request, request.scope["guard.params"])

    plain = fastapi_request_response(endpoint)

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        params = _plain_params(scope, query, header_name)
        if params is None:
            await through_fastapi(scope, receive, send)
        else:
            scope["guard.params"] = params
            await plain(scope, receive, send)

    route.app = dispatch


QUERY_CACHE_SIZE = 256
"""Query strings a route keeps parsed (:func:`_plain_params`): clients send the same few (a policy, a domain)."""
QUERY_CACHE_BYTES = 1024
"""The longest query string kept (the valid parameters, percent-encoded, fit), so the cache stays under 256 KiB."""


def _plain_params(
    scope: Scope, query: dict[str, int], header: bytes, cache: dict[bytes, dict[str, str | None] | None] | None = None
) -> dict[str, str | None] | None:
    """The query parameters named in ``query`` and the principal header, when each is there at most once and
    within its length (``policy`` present); else None. Read as Starlette reads them (``parse_qsl`` of the
    query string as Latin-1, blank values kept; header values as Latin-1). ``cache`` (one per ``query``) keeps
    what a query string gave, so a repeated one is not parsed again."""
    raw = scope["query_string"]
    if cache is not None and raw in cache:
        found = cache[raw]
        if found is None:
            return None
        params = dict(found)
    else:
        parsed = _plain_query(raw, query)
        if cache is not None and len(raw) <= QUERY_CACHE_BYTES:  # unauthenticated input: bounded in size too
            if len(cache) >= QUERY_CACHE_SIZE:
                cache.clear()
            cache[raw] = parsed
        if parsed is None:
            return None
        params = dict(parsed)
    params["principal"] = None
    for name, value in scope["headers"]:
        if name == header:
            if params["principal"] is not None:
                return None
            params["principal"] = value.decode("latin-1")
    return params


def _plain_query(raw: bytes, query: dict[str, int]) -> dict[str, str | None] | None:
    """The query half of :func:`_plain_params`."""
    params: dict[str, str | None] = {}
    for name, value in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        limit = query.get(name)
        if limit is None:
            continue
        if name in params or len(value) > limit:
            return None
        params[name] = value
    return params if "policy" in params else None


METRICS_FLUSH_SECONDS = 1.0
"""How often a worker writes the metrics it holds (``Metrics(deferred=True)``) to the files ``/metrics`` reads: a
scrape shows another worker's counts at most this late (its own, the worker answering, are flushed first)."""


async def _flush_held(metrics: Any) -> None:
    """Each second: the metrics held in this process, and the access log's lines (:mod:`guard.server.logs`)."""
    while True:
        await asyncio.sleep(METRICS_FLUSH_SECONDS)
        _flush_quietly(metrics)


def _flush_quietly(metrics: Any) -> None:
    """Write the held metrics and access lines. A flush that fails (the multiprocess folder removed, stdout closed)
    is logged and the next one tries again; the counts or lines it was writing are lost."""
    for flush in (metrics.flush, flush_access_log):
        try:
            flush()
        except (GuardError, OSError, ValueError) as exc:  # ValueError: a closed stream
            logging.getLogger("guard.server").warning("%s did not write: %s", flush.__name__, exc)


def _profiler() -> Any:
    """A running ``cProfile.Profile`` when ``GUARD_SERVE_PROFILE`` names a folder (for bench_serve), else None.

    It counts the main thread's CPU time, not wall time: on shared cores a wall clock charges a send that wakes
    the database or the client (and the wait for the core back) to the sender."""
    if not os.environ.get(PROFILE_ENV):
        return None
    import cProfile

    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    return profiler


def _loc(where: str) -> Problem:
    return Problem("forbidden" if where.startswith("query") else "request", "not allowed", where)


def _http_metrics(metrics: Any) -> tuple[Any, Any]:
    from prometheus_client import Counter, Histogram

    reg = metrics.registry
    return (
        Counter("guard_http_requests", "HTTP requests by route and status.", ["route", "status"], registry=reg),
        Histogram("guard_http_request_seconds", "HTTP request latency by route.", ["route"], registry=reg),
    )


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with guard's Payload and ProblemDetails as components and every 422 as a problem."""
    if app.openapi_schema:
        return app.openapi_schema
    from pydantic.json_schema import models_json_schema

    from guard.payload import Payload

    doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    _, defs = models_json_schema(
        [(Payload, "validation"), (ProblemDetails, "serialization")], ref_template="#/components/schemas/{model}"
    )
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(defs.get("$defs", {}))
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for path in doc.get("paths", {}).values():
        for op in path.values():
            responses = op.get("responses", {})
            if "422" in responses:
                responses["422"] = {"description": "Unprocessable content", "content": _PROBLEM_CONTENT}
    app.openapi_schema = doc
    return doc


__all__ = ["create_app", "build_state", "State"]
