"""One record for everything wrong with a template, and the catalogue of codes.

A finding is returned, never raised. Codes are never renumbered: ``F1xx``
format safety, ``S2xx`` sentence shapes, ``T3xx`` free text, ``R4xx`` slot
ratio. Guard's own codes are data (``linting/rules.yaml``); a stage registered
from Python adds its own through :func:`guard.linting.registry.register`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from importlib import resources
from typing import Any


class Severity(str, Enum):
    """How bad a finding is."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Example:
    """A template for a rule's documentation and tests: ``claims`` (key to ``type`` or ``type = value``) lints it
    as a payload."""

    template: str
    slot_types: Mapping[str, str] = field(default_factory=dict)
    claims: Mapping[str, str] | None = None
    domain: str = "orders"


@dataclass(frozen=True)
class Code:
    """One finding code: what it is called, how bad it is, and everything ``guard rules CODE`` shows."""

    code: str
    name: str
    stage: str
    severity: Severity
    summary: str
    explanation: str = ""
    why: str = ""
    refusal: str = ""
    """The customer-facing reason when an enforced stage refuses; ``{n}`` is the sentence number."""
    blocks: bool = True
    """False: the finding is reported and carried as a decision warning, but never refuses an answer."""
    bad: Example | None = None
    good: Example | None = None


_RULES = "linting/rules.yaml"


def _example(data: Any) -> Example | None:
    return None if data is None else Example(**data)


def _fast_loader() -> Any:
    """libyaml's safe loader when PyYAML has it (a tenth of the pure-Python loader's time on the rule
    catalogue, which every CLI start reads); the same documents either way (tests/cli/test_startup_imports.py)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_builtin() -> dict[str, Code]:
    import yaml

    text = (resources.files("guard") / _RULES).read_text(encoding="utf-8")
    out: dict[str, Code] = {}
    for code, entry in (yaml.load(text, Loader=_fast_loader()) or {}).items():  # noqa: S506 (a safe loader)
        entry = dict(entry)
        example = entry.pop("example", None) or {}
        out[code] = Code(
            code=code,
            stage=entry["name"].split(".", 1)[0],
            severity=Severity(entry.pop("severity")),
            bad=_example(example.get("bad")),
            good=_example(example.get("good")),
            **entry,
        )
    return out


class Catalogue(Mapping[str, Code]):
    """Every finding code: guard's own (read once from ``linting/rules.yaml``) and those of registered stages."""

    def __init__(self) -> None:
        self._codes: dict[str, Code] | None = None

    def _all(self) -> dict[str, Code]:
        if self._codes is None:
            self._codes = _load_builtin()
        return self._codes

    def __getitem__(self, code: str) -> Code:
        return self._all()[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def add(self, entry: Code) -> None:
        """Add a code, or give a known one its refusal phrase; any other redefinition is a configuration mistake."""
        known = self._all().get(entry.code)
        if (
            known is not None
            and known != entry
            and not (not known.refusal and replace(known, refusal=entry.refusal) == entry)
        ):
            from guard.errors import ConfigError

            raise ConfigError(f"finding code {entry.code} is already defined as {known.name}", location=entry.code)
        self._all()[entry.code] = entry

    def remove(self, code: str) -> None:
        """Forget a code (a stage registered from Python going away)."""
        self._all().pop(code, None)


CATALOGUE = Catalogue()


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``; an offset outside the text is clamped to it."""
    offset = max(0, min(offset, len(text)))
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


@dataclass(frozen=True)
class Location:
    """Where in an input something is wrong: the part, and optionally a span and a line/column.

    ``part`` names the input part (``answer_template``, ``claims[2].value``,
    ``--window``, a file path); ``start``/``end`` are 0-based character
    offsets into that part; ``line``/``column`` are 1-based. Shared by lint
    findings and the problems an error carries, so both print and serialise
    alike. The text form keeps what guard printed before: ``part:line`` when a
    line is known, else ``part:offset+1`` for a span, else ``part``.
    """

    part: str = ""
    start: int | None = None
    end: int | None = None
    line: int | None = None
    column: int | None = None

    @classmethod
    def span(cls, part: str, text: str, start: int, end: int | None = None) -> Location:
        """A span of ``text`` with its line and column worked out once."""
        line, column = line_col(text, start)
        return cls(part, start, start if end is None else end, line, column)

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values; absent parts are None."""
        return {"part": self.part, "start": self.start, "end": self.end, "line": self.line, "column": self.column}

    def __str__(self) -> str:
        if self.line is not None and self.start is None:
            return f"{self.part}:{self.line}"
        if self.start is not None:
            return f"{self.part}:{self.start + 1}"
        return self.part


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
        """The code's dotted name (``shape.no_match``)."""
        entry = CATALOGUE.get(self.code)
        return entry.name if entry else self.code

    @property
    def location(self) -> Location:
        """The finding's span in the template, in the location type errors use too."""
        line, column = self.data.get("line"), self.data.get("column")
        return Location(
            "answer_template",
            self.start,
            self.end,
            line if isinstance(line, int) else None,
            column if isinstance(column, int) else None,
        )

    @classmethod
    def make(cls, code: str, message: str, **kw: Any) -> Finding:
        """Build a finding whose stage and default severity come from the catalogue."""
        entry = CATALOGUE[code]
        kw.setdefault("stage", entry.stage)
        kw.setdefault("severity", entry.severity)
        return cls(code=code, message=message, **kw)

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values."""
        d = asdict(self)
        d["severity"] = self.severity.value
        d["name"] = self.name
        d["location"] = self.location.to_dict()
        return d


__all__ = ["Severity", "Code", "Example", "Catalogue", "CATALOGUE", "Location", "Finding", "line_col"]
