"""The model's payload: typed claims, an answer template, its slots and their substitution."""

from guard.payload.model import Claim, ClaimType, Limits, Payload, load_payload, unused_claims
from guard.payload.slots import NAME, Piece, Slot, scan_template, substitute, substitute_in_order, template_pieces

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
]
