"""A claim as the shape check's binding reads it (key, entity, field, value), shared by the shapes tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class C:
    key: str
    entity: str
    field: str
    value: Any = None
