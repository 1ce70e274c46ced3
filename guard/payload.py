"""The model's payload: an answer template with ``{slot}`` placeholders and typed claims.

Everything here runs before any database access. A slot is accepted only as a
plain ``{name}``: attribute access, indexing, conversions, format specs and
positional fields are what make ``str.format`` on model text dangerous, so they
are findings, never evaluated. Rendering (``guard.render``) substitutes the
slots found here and nothing else.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Union

import regex
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from guard.errors import PayloadError, Problem
from guard.findings import Finding, Severity


class ClaimType(str, Enum):
    IDENTIFIER = "identifier"
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    MONEY = "money"
    DATE = "date"
    TIMESTAMP = "timestamp"
    ENUM = "enum"
    BOOLEAN = "boolean"


NAME = regex.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A slot name or claim key: ASCII only, so confusable letters cannot make two names look alike."""

Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr, None]


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: StrictStr = Field(min_length=1, max_length=64)
    type: ClaimType
    entity: StrictStr = Field(min_length=1, max_length=128)
    entity_id: Union[StrictStr, StrictInt] = Field(union_mode="left_to_right")
    field: StrictStr = Field(min_length=1, max_length=128)
    value: Scalar


class Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    answer_template: StrictStr
    claims: list[Claim]

    def claim(self, key: str) -> Claim:
        for c in self.claims:
            if c.key == key:
                return c
        raise KeyError(key)


@dataclass(frozen=True)
class Limits:
    """Size limits checked before parsing the claims, so a huge payload costs little."""

    max_bytes: int = 256_000
    max_template_chars: int = 8_000
    max_claims: int = 100
    max_value_chars: int = 2_000
    max_entity_id_chars: int = 256


@dataclass(frozen=True)
class Slot:
    """A plain ``{name}`` at ``template[start:end]``."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Piece:
    """A run of literal text (braces unescaped) or a slot, in template order."""

    text: str
    slot: Slot | None = None


def _bad_slot(body: str) -> tuple[str, str]:
    if body == "" or body.isdigit():
        return "F105", "positional fields are not allowed; name the slot, e.g. {order_id}"
    for ch, code, what in (
        ("!", "F104", "conversions (!r, !s, !a) are not allowed"),
        (":", "F103", "format specifications are not allowed; guard formats values itself"),
        ("[", "F102", "indexing is not allowed"),
        (".", "F101", "attribute access is not allowed"),
    ):
        if ch in body:
            first = min(body.index(c) for c in "!:[." if c in body)
            if body[first] == ch:
                return code, what
    return "F109", "a slot name must be letters, digits and underscores, starting with a letter or _"


@lru_cache(maxsize=4096)
def _tokenize_cached(template: str) -> tuple[tuple[Piece, ...], tuple[Finding, ...]]:
    pieces, findings = _tokenize(template)
    return tuple(pieces), tuple(findings)


def _tokenize(template: str) -> tuple[list[Piece], list[Finding]]:
    pieces: list[Piece] = []
    findings: list[Finding] = []
    buf: list[str] = []
    i, n = 0, len(template)
    while i < n:
        ch = template[i]
        if ch == "{":
            if template.startswith("{{", i):
                buf.append("{")
                i += 2
                continue
            close = template.find("}", i + 1)
            reopen = template.find("{", i + 1)
            if close == -1 or (reopen != -1 and reopen < close):
                findings.append(
                    Finding.make("F106", f"'{{' at column {i + 1} is never closed; write '{{{{' for a literal brace",
                                 start=i, end=i + 1, data={"column": i + 1})
                )
                i += 1
                continue
            body = template[i + 1 : close]
            if NAME.fullmatch(body):
                if buf:
                    pieces.append(Piece("".join(buf)))
                    buf = []
                slot = Slot(body, i, close + 1)
                pieces.append(Piece(template[i : close + 1], slot))
            else:
                code, why = _bad_slot(body)
                shown = body if len(body) <= 40 else body[:37] + "..."
                findings.append(
                    Finding.make(code, f"slot {{{shown}}} at column {i + 1}: {why}",
                                 start=i, end=close + 1, data={"column": i + 1, "slot": shown})
                )
            i = close + 1
        elif ch == "}":
            if template.startswith("}}", i):
                buf.append("}")
                i += 2
                continue
            findings.append(
                Finding.make("F106", f"'}}' at column {i + 1} has no opening brace; write '}}}}' for a literal brace",
                             start=i, end=i + 1, data={"column": i + 1})
            )
            i += 1
        else:
            buf.append(ch)
            i += 1
    if buf:
        pieces.append(Piece("".join(buf)))
    return pieces, findings


def scan_template(template: str) -> tuple[list[Slot], list[Finding]]:
    """Plain slots of ``template`` and a format finding for every unsafe one.

    >>> slots, findings = scan_template("Shipped {a} on {b.__class__}")
    >>> [s.name for s in slots], [f.code for f in findings]
    (['a'], ['F101'])
    """
    pieces, findings = _tokenize_cached(template)
    return [p.slot for p in pieces if p.slot is not None], list(findings)


def template_pieces(template: str) -> list[Piece]:
    """Literal runs and slots in order; raises PayloadError if any slot is unsafe."""
    pieces, findings = _tokenize_cached(template)
    if findings:
        raise PayloadError(
            "the answer template has unsafe slots",
            problems=[Problem(f.code, f.message, f"answer_template:{f.start + 1}") for f in findings],
        )
    return list(pieces)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loc(err: dict[str, Any], raw: Any) -> str:
    parts = [str(p) for p in err.get("loc", ())]
    if len(parts) >= 2 and parts[0] == "claims" and parts[1].isdigit():
        idx = int(parts[1])
        where = f"claims[{idx}]"
        try:
            key = raw["claims"][idx]["key"]
            if isinstance(key, str) and NAME.fullmatch(key):
                where += f" (key '{key}')"
        except (KeyError, IndexError, TypeError):
            pass
        rest = [p for p in parts[2:] if not p.startswith(("str", "int", "bool", "float", "none", "function"))]
        return where + ("." + ".".join(rest) if rest else "")
    return ".".join(parts) or "payload"


_UNION_MESSAGES = {
    "value": "value must be a JSON string, number, boolean or null",
    "entity_id": "entity_id must be a string or an integer",
}


def _schema_problems(exc: ValidationError, raw: Any) -> list[Problem]:
    """One problem per location: a union's per-member complaints become one sentence."""
    out: dict[str, Problem] = {}
    for e in exc.errors(include_url=False):
        where = _loc(e, raw)
        last = str(e["loc"][2]) if len(e["loc"]) > 2 and e["loc"][0] == "claims" else ""
        msg = _UNION_MESSAGES.get(last, e["msg"]) if len(e["loc"]) > 3 else e["msg"]
        if e["type"] == "missing":
            msg = "this key is required"
        elif e["type"] == "extra_forbidden":
            msg = "unknown key; allowed keys are " + (
                "key, type, entity, entity_id, field, value" if e["loc"][0] == "claims" else "answer_template, claims")
        out.setdefault(where, Problem("schema", msg, where))
    return list(out.values())


def _parse_json(data: str | bytes, limits: Limits) -> Any:
    size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    if size > limits.max_bytes:
        raise PayloadError(f"the payload is {size} bytes; the limit is {limits.max_bytes}", location="payload")
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise PayloadError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                           location=f"line {exc.lineno}, column {exc.colno}") from None
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise PayloadError(f"invalid JSON: {exc}", location="payload") from None


def _check_limits(raw: dict[str, Any], limits: Limits) -> list[Problem]:
    problems: list[Problem] = []
    template = raw.get("answer_template")
    if isinstance(template, str) and len(template) > limits.max_template_chars:
        problems.append(Problem("limit", f"the template has {len(template)} characters; the limit is "
                                         f"{limits.max_template_chars}", "answer_template"))
    claims = raw.get("claims")
    if isinstance(claims, list):
        if len(claims) > limits.max_claims:
            problems.append(Problem("limit", f"{len(claims)} claims; the limit is {limits.max_claims}", "claims"))
        else:
            for i, c in enumerate(claims):
                if not isinstance(c, dict):
                    continue
                v = c.get("value")
                if isinstance(v, str) and len(v) > limits.max_value_chars:
                    problems.append(Problem("limit", f"value has {len(v)} characters; the limit is "
                                                     f"{limits.max_value_chars}", f"claims[{i}].value"))
                if isinstance(v, float) and not math.isfinite(v):
                    problems.append(Problem("value", "value must be a finite number", f"claims[{i}].value"))
                eid = c.get("entity_id")
                if isinstance(eid, str) and len(eid) > limits.max_entity_id_chars:
                    problems.append(Problem("limit", f"entity_id has {len(eid)} characters; the limit is "
                                                     f"{limits.max_entity_id_chars}", f"claims[{i}].entity_id"))
    return problems


_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def _surrogates(payload: Payload) -> list[Problem]:
    """Lone surrogates (JSON ``"\\ud800"``) are not text: they cannot be encoded, so logging or showing them fails."""
    fields = [("answer_template", payload.answer_template)]
    for i, c in enumerate(payload.claims):
        fields += [(f"claims[{i}].{k}", getattr(c, k)) for k in ("key", "entity", "entity_id", "field", "value")]
    out = []
    for where, text in fields:
        m = _SURROGATE.search(text) if isinstance(text, str) else None
        if m:
            out.append(Problem("unicode", f"lone surrogate U+{ord(m.group()):04X} at character {m.start() + 1}; "
                                          "text must be valid Unicode", where))
    return out


def load_payload(data: str | bytes | dict[str, Any] | Payload, limits: Limits | None = None) -> Payload:
    """Parse and validate a payload; every problem is reported at once in a PayloadError.

    Checks JSON, keys, types, limits, claim keys, duplicate keys, slot syntax
    and that every slot has a claim. A claim no slot uses is not an error: see
    :func:`unused_claims`.
    """
    limits = limits or Limits()
    if isinstance(data, Payload):
        raw: Any = data.model_dump(mode="json")
    elif isinstance(data, (str, bytes, bytearray)):
        raw = _parse_json(bytes(data) if isinstance(data, bytearray) else data, limits)
    else:
        raw = data
    if not isinstance(raw, dict):
        raise PayloadError("the payload must be a JSON object with answer_template and claims", location="payload")
    problems = _check_limits(raw, limits)
    if problems:
        raise PayloadError("the payload exceeds a limit", problems=problems)
    try:
        payload = Payload.model_validate(raw)
    except ValidationError as exc:
        problems = _schema_problems(exc, raw)
        raise PayloadError("the payload does not match the schema", problems=problems) from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise PayloadError(f"the payload could not be read: {exc}", location="payload") from None

    problems = _surrogates(payload)
    seen: dict[str, int] = {}
    for i, c in enumerate(payload.claims):
        if not NAME.fullmatch(c.key):
            problems.append(Problem("key", "a claim key must be letters, digits and underscores, starting with a "
                                           "letter or _", f"claims[{i}].key"))
        elif c.key in seen:
            problems.append(Problem("duplicate", f"key '{c.key}' is also used by claims[{seen[c.key]}]",
                                    f"claims[{i}].key"))
        else:
            seen[c.key] = i
    slots, findings = scan_template(payload.answer_template)
    for f in findings:
        problems.append(Problem(f.code, f.message, f"answer_template:{f.start + 1}"))
    for s in slots:
        if s.name not in seen:
            problems.append(Problem("F107", f"slot {{{s.name}}} at column {s.start + 1} has no claim with that key",
                                    f"answer_template:{s.start + 1}"))
    if problems:
        raise PayloadError("the payload was rejected", problems=problems)
    return payload


def unused_claims(payload: Payload) -> list[Finding]:
    """A warning for every claim that no slot uses (it would be checked but never shown)."""
    used = {s.name for s in scan_template(payload.answer_template)[0]}
    return [
        Finding.make("F108", f"claim '{c.key}' is not used by any slot", severity=Severity.WARNING,
                     data={"key": c.key})
        for c in payload.claims
        if c.key not in used
    ]


__all__ = ["ClaimType", "Claim", "Payload", "Limits", "Slot", "Piece", "scan_template", "template_pieces",
           "load_payload", "unused_claims", "NAME"]
