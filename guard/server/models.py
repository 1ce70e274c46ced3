"""The HTTP API's request and response bodies, as pydantic models for the OpenAPI document.

Requests carry guard's own :class:`~guard.payload.Payload` (the body of ``/v1/run`` and ``/v1/check`` is the
payload exactly as the model wrote it, read by :func:`guard.payload.load_payload` so its limits and codes are
the library's). Responses describe what the library's ``to_dict()`` methods return; the endpoints send those
dictionaries as they are, and the test suite validates them against this document.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from guard.payload import ClaimType


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class LocationOut(_Out):
    """Where a finding or problem is: a part of the input and an optional span, line and column."""

    part: str
    start: int | None = None
    end: int | None = None
    line: int | None = None
    column: int | None = None


class FindingOut(_Out):
    """One lint finding (:class:`guard.findings.Finding`)."""

    code: str
    name: str
    message: str
    stage: str
    severity: Literal["error", "warning", "info"]
    sentence: int
    start: int
    end: int
    data: dict[str, Any]
    location: LocationOut


class ProblemOut(_Out):
    """One reason an input was refused (:class:`guard.errors.Problem`)."""

    code: str
    name: str
    message: str
    location: LocationOut


class ProblemDetails(_Out):
    """RFC 9457 problem details with guard's code."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    problems: list[ProblemOut]
    request_id: str | None = None


class ResultOut(_Out):
    """One claim's result."""

    key: str
    entity: str
    field: str
    type: str
    status: Literal["confirmed", "contradicted", "malformed", "not_found", "not_checkable", "stale", "unavailable"]
    citation: str | None
    reason: str | None = None
    updated_at: str | None = None
    claimed: Any = None
    actual: Any = None


class DecisionOut(_Out):
    """The decision for one payload (:meth:`guard.Decision.to_dict`)."""

    action: Literal["answer", "refuse", "regenerate_from_facts"]
    request_id: str
    text: str | None = None
    citations: list[dict[str, Any]] | None = None
    message: str | None = None
    unverified: list[str] | None = None
    facts: dict[str, dict[str, Any]] | None = None
    contradicted: list[str] | None = None
    results: list[ResultOut]
    warnings: list[FindingOut]
    findings: list[FindingOut] | None = None


class ProxyDecisionOut(DecisionOut):
    """The gate's decision on the proxy's last attempt, with the number of attempts the model took."""

    attempts: int


class ChatMessageOut(_Out):
    """The assistant's message: the verified text, or the refusal."""

    role: Literal["assistant"]
    content: str


class ChatChoiceOut(_Out):
    """The one choice of a verified completion."""

    index: int
    message: ChatMessageOut
    finish_reason: str


class ChatCompletionOut(_Out):
    """An OpenAI ``chat.completion`` with guard's decision in the extension field ``guard``."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str | None
    choices: list[ChatChoiceOut]
    guard: ProxyDecisionOut


class LintRequest(BaseModel):
    """A template to lint in a domain, with the claim type of each slot."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(max_length=8000)
    domain: str
    slot_types: dict[str, ClaimType] = Field(default_factory=dict)


class SentenceOut(_Out):
    """One sentence of a linted template and the approved shape it matched (None: none did)."""

    index: int
    start: int
    end: int
    text: str
    shape: str | None
    checked: bool


class LintOut(_Out):
    """The lint result (:meth:`guard.LintResult.to_dict`)."""

    ok: bool
    domain: str
    findings: list[FindingOut]
    sentences: list[SentenceOut]


class ClassifyRequest(BaseModel):
    """Sentences to classify (comparative, quantity, causal)."""

    model_config = ConfigDict(extra="forbid")

    sentences: list[str]


class SpanOut(_Out):
    """Characters that triggered a label."""

    start: int
    end: int
    text: str


class PredictionOut(_Out):
    """Labels, scores and evidence spans for one sentence."""

    text: str
    labels: list[str]
    scores: dict[str, float]
    spans: dict[str, list[SpanOut]]


class ClassifyOut(_Out):
    """One prediction per sentence, in order."""

    predictions: list[PredictionOut]


class DomainOut(_Out):
    """A sentence library the caller may use."""

    domain: str
    entities: list[str]
    policies: list[str]


class GrammarsOut(_Out):
    """The caller's domains."""

    domains: list[DomainOut]


class MonitorOut(_Out):
    """The monitor's report over the server's own log (:meth:`guard.observe.monitor.Report.to_dict`)."""

    config: dict[str, Any]
    read: dict[str, Any]
    counters: dict[str, int]
    windows: list[str]
    fields: list[dict[str, Any]]
    prose_per_slot: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    findings: dict[str, int]
    alerts: list[dict[str, Any]]


class HealthOut(_Out):
    """Liveness or readiness, with each check."""

    status: Literal["ok", "ready", "not_ready"]
    checks: dict[str, bool] = Field(default_factory=dict)


__all__ = [
    "ProblemDetails",
    "DecisionOut",
    "ChatCompletionOut",
    "LintRequest",
    "LintOut",
    "ClassifyRequest",
    "ClassifyOut",
    "GrammarsOut",
    "MonitorOut",
    "HealthOut",
]
