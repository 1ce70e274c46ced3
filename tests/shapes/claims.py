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


def accepted(domain: str, text: str, types: dict[str, str]) -> Any:
    """Asserts that ``text`` is approved in ``domain`` and that every slot in it but a string binds at least one
    field (a slot bound to nothing is shown whatever field its claim names; a name in a greeting or a signature
    is such a string); returns the report."""
    from guard.shapes import check_template, load_library

    report = check_template(text, load_library(domain), types)
    assert not errors(report), errors(report)
    unbound = sorted({u.slot for u in report.bindings.uses if not u.fields and u.type != "string"})
    assert not unbound, f"slots bound to no field: {unbound}"
    return report


def refused(domain: str, text: str, types: dict[str, str]) -> None:
    """Asserts that ``text`` is refused in ``domain``."""
    from guard.shapes import check_template, load_library

    assert errors(check_template(text, load_library(domain), types)), text
