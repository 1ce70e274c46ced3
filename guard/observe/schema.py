"""The event schema: the one definition of what guard logs, for every producer and every reader.

Three events, one JSON object per line, each with ``event``, ``schema_version``,
``ts`` (UTC ISO 8601, added by :class:`guard.observe.events.EventLog` when the
producer leaves it out), ``request_id`` and ``domain``:

``payload``  (only with ``log_payloads``) the payload as received and the caller's principal, so an audit
             can re-check it.
``claim``    one per claim: entity, field, key, type, status, latency; ``claimed``/``actual`` only when the
             log opts in to values.
``decision`` one per payload: action, claim and slot counts, prose measures, finding codes, latency.

The records are ``TypedDict``s: producers build plain dicts (no cost per event),
mypy checks them, and :func:`validate` / :func:`json_schema` give the same
definition to tests, readers and other languages. A change that removes or
retypes a field raises :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, cast

from typing_extensions import TypedDict

from guard.errors import EventLogError

SCHEMA_VERSION = 1


class PayloadEvent(TypedDict):
    event: Literal["payload"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    principal: Any
    payload: dict[str, Any]


class ClaimEvent(TypedDict):
    event: Literal["claim"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    entity: str
    field: str
    key: str
    type: str
    status: Literal["confirmed", "contradicted", "not_found", "not_checkable", "stale", "unavailable"]
    latency_ms: float
    claimed: NotRequired[Any]
    actual: NotRequired[Any]


class DecisionEvent(TypedDict):
    event: Literal["decision"]
    schema_version: int
    ts: NotRequired[str]
    request_id: str
    domain: str | None
    action: Literal["answer", "refuse", "regenerate_from_facts"]
    n_claims: int
    n_slots: int
    prose_words: int
    prose_per_slot: float | None
    """None when there is prose and no slot (an infinite ratio has no JSON value)."""
    findings: list[str]
    """Codes of the lint findings and warnings, in the order reported."""
    latency_ms: float


Event = PayloadEvent | ClaimEvent | DecisionEvent
EVENTS: dict[str, type[Any]] = {"payload": PayloadEvent, "claim": ClaimEvent, "decision": DecisionEvent}


def claim_event(
    *, request_id: str, domain: str | None, entity: str, field: str, key: str, type: str, status: str, latency_ms: float
) -> ClaimEvent:
    return cast(
        ClaimEvent,
        {
            "event": "claim",
            "schema_version": SCHEMA_VERSION,
            "request_id": request_id,
            "domain": domain,
            "entity": entity,
            "field": field,
            "key": key,
            "type": type,
            "status": status,
            "latency_ms": latency_ms,
        },
    )


def decision_event(
    *,
    request_id: str,
    domain: str | None,
    action: str,
    n_claims: int,
    n_slots: int,
    prose_words: int,
    prose_per_slot: float | None,
    findings: list[str],
    latency_ms: float,
) -> DecisionEvent:
    return cast(
        DecisionEvent,
        {
            "event": "decision",
            "schema_version": SCHEMA_VERSION,
            "request_id": request_id,
            "domain": domain,
            "action": action,
            "n_claims": n_claims,
            "n_slots": n_slots,
            "prose_words": prose_words,
            "prose_per_slot": prose_per_slot,
            "findings": findings,
            "latency_ms": latency_ms,
        },
    )


def payload_event(*, request_id: str, domain: str | None, principal: Any, payload: dict[str, Any]) -> PayloadEvent:
    return {
        "event": "payload",
        "schema_version": SCHEMA_VERSION,
        "request_id": request_id,
        "domain": domain,
        "principal": principal,
        "payload": payload,
    }


_ADAPTERS: dict[str, Any] = {}


def _adapter(kind: str) -> Any:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[kind] = TypeAdapter(EVENTS[kind])
    return adapter


def validate(event: Any) -> Event:
    """The event, checked against its record (strict JSON types, no unknown kind); EventLogError otherwise."""
    from pydantic import ValidationError

    kind = event.get("event") if isinstance(event, dict) else None
    if kind not in EVENTS:
        raise EventLogError(f"unknown event kind {kind!r}; kinds are {', '.join(EVENTS)}", location="event")
    if event.get("schema_version") != SCHEMA_VERSION:
        raise EventLogError(
            f"schema_version {event.get('schema_version')!r} is not {SCHEMA_VERSION}", location="schema_version"
        )
    extra = set(event) - set(EVENTS[kind].__annotations__)
    if extra:
        raise EventLogError(f"unknown keys {sorted(extra)} in a {kind} event", location=kind)
    try:
        _adapter(kind).validate_python(event, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EventLogError(f"a {kind} event is invalid: {first['msg']}", location=where) from None
    return cast(Event, event)


def json_schema() -> dict[str, Any]:
    """JSON Schema of a log line (any of the three events), for readers outside Python."""
    from pydantic import TypeAdapter

    schema: dict[str, Any] = TypeAdapter(Event).json_schema()
    schema["title"] = f"guard event (schema_version {SCHEMA_VERSION})"
    return schema


__all__ = [
    "SCHEMA_VERSION",
    "PayloadEvent",
    "ClaimEvent",
    "DecisionEvent",
    "Event",
    "EVENTS",
    "claim_event",
    "decision_event",
    "payload_event",
    "validate",
    "json_schema",
]
