"""The model's payload: typed claims, an answer template, its slots and their substitution.

The payload model (pydantic) is imported on first use: linting a plain template needs only the slot scanner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.payload.slots import (
    NAME,
    Piece,
    Slot,
    scan_template,
    substitute,
    substitute_in_order,
    template_pieces,
    unclaimed_slots,
)

if TYPE_CHECKING:
    from guard.payload.model import Claim, ClaimType, Limits, Payload, load_payload, unused_claims

_MODEL = frozenset({"Claim", "ClaimType", "Limits", "Payload", "load_payload", "unused_claims"})


def __getattr__(name: str) -> Any:
    if name in _MODEL:
        from guard.payload import model

        return getattr(model, name)
    raise AttributeError(f"module 'guard.payload' has no attribute {name!r}")


__all__ = [
    "Claim",
    "ClaimType",
    "Limits",
    "Payload",
    "load_payload",
    "unused_claims",
    "NAME",
    "Piece",
    "Slot",
    "scan_template",
    "substitute",
    "substitute_in_order",
    "template_pieces",
    "unclaimed_slots",
]
