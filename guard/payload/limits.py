"""The payload's size limits, apart from the pydantic model: lint checks a template's size without building the
model (the start-up of ``guard lint`` pays for nothing it does not use)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Size limits checked before parsing the claims, so a huge payload costs little."""

    max_bytes: int = 256_000
    max_template_chars: int = 8_000
    max_claims: int = 100
    max_value_chars: int = 2_000
    max_entity_id_chars: int = 256


__all__ = ["Limits"]
