"""One record for everything wrong with a template, and the catalogue of codes.

A finding is returned, never raised. Codes are never renumbered: ``F1xx``
format safety, ``S2xx`` sentence shapes, ``T3xx`` free text, ``R4xx`` slot
ratio. Each stage adds its entries to :data:`CATALOGUE` here so the codes stay
in one place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    stage: str
    severity: Severity
    summary: str


CATALOGUE: dict[str, Code] = {
    c.code: c
    for c in [
        Code("F101", "format.attribute", "format", Severity.ERROR, "slot uses attribute access"),
        Code("F102", "format.index", "format", Severity.ERROR, "slot uses indexing"),
        Code("F103", "format.spec", "format", Severity.ERROR, "slot has a format specification"),
        Code("F104", "format.conversion", "format", Severity.ERROR, "slot has a conversion"),
        Code("F105", "format.positional", "format", Severity.ERROR, "slot is positional"),
        Code("F106", "format.unbalanced", "format", Severity.ERROR, "unbalanced brace"),
        Code("F107", "format.slot_without_claim", "format", Severity.ERROR, "slot has no claim"),
        Code("F108", "format.claim_without_slot", "format", Severity.WARNING, "claim is used by no slot"),
        Code("F109", "format.bad_name", "format", Severity.ERROR, "slot name is not a plain identifier"),
        Code("S201", "shape.no_match", "shape", Severity.ERROR, "sentence matches no approved shape"),
        Code("S202", "shape.slot_type", "shape", Severity.ERROR, "slot type not allowed here"),
        Code("S203", "shape.unknown_slot_type", "shape", Severity.ERROR, "slot type unknown"),
        Code("S204", "shape.spacing", "shape", Severity.ERROR, "words not separated by exactly one space"),
        Code("T301", "freetext.comparative", "freetext", Severity.ERROR, "comparative claim in free text"),
        Code("T302", "freetext.quantity", "freetext", Severity.ERROR, "quantity in free text"),
        Code("T303", "freetext.causal", "freetext", Severity.ERROR, "causal claim in free text"),
        Code("R401", "ratio.prose_per_slot", "ratio", Severity.WARNING, "too much prose per slot"),
        Code("R402", "ratio.sentence_without_slot", "ratio", Severity.WARNING, "long sentence without a slot"),
    ]
}


@dataclass(frozen=True)
class Finding:
    """Something wrong with a template, located by sentence and character span.

    ``start``/``end`` are offsets into the whole template; ``sentence`` is the
    index of the sentence (0-based) or -1 when the finding is about the template
    as a whole. ``data`` carries stage-specific details (expected words, the
    nearest shapes, evidence spans) as plain JSON values.
    """

    code: str
    message: str
    stage: str = ""
    severity: Severity = Severity.ERROR
    sentence: int = -1
    start: int = 0
    end: int = 0
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        entry = CATALOGUE.get(self.code)
        return entry.name if entry else self.code

    @classmethod
    def make(cls, code: str, message: str, **kw: Any) -> "Finding":
        """Build a finding whose stage and default severity come from the catalogue."""
        entry = CATALOGUE[code]
        kw.setdefault("stage", entry.stage)
        kw.setdefault("severity", entry.severity)
        return cls(code=code, message=message, **kw)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        d["name"] = self.name
        return d


__all__ = ["Severity", "Code", "CATALOGUE", "Finding"]
