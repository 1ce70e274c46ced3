"""A claim as the shape check's binding reads it (key, entity, field, value), and a report's error messages: shared by
the shapes tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.findings import Severity


@dataclass(frozen=True)
class C:
    key: str
    entity: str
    field: str
    value: Any = None


def errors(report: Any) -> list[str]:
    """The messages of a report's error findings."""
    return [f.message for f in report.findings if f.severity is Severity.ERROR]


def assert_witnessed(library: Any, text: str, types: dict[str, str], claims: list[C], good: C, bad: C) -> None:
    """A prose state is reported as needing its witness without a payload, is approved with the ``good`` claim and
    refused with the ``bad`` one."""
    from guard.shapes import bind, check_template

    report = check_template(text, library, types)
    assert "S205" in [f.code for f in report.findings]
    assert bind(report.bindings, [*claims, good], text, report.findings)[0] == []
    assert bind(report.bindings, [*claims, bad], text, report.findings)[0]


def fields(report: Any) -> dict[str, tuple[str, ...]]:
    """The fields each slot of a report may show, by slot name."""
    return {u.slot: u.fields for u in report.bindings.uses}
