"""The documented exception tree of guard.

Everything the public API raises is a :class:`GuardError`; errors of the
libraries underneath (SQLAlchemy, Lark, joblib, pydantic, YAML) are translated
at the boundary and never leak.

    GuardError
    ├── PayloadError        the model's payload is not acceptable (JSON, keys, slots, limits)
    ├── ConfigError         a configuration is wrong: gate config, unknown domain or stage, bad option
    │   └── PolicyError     the policy file is wrong, or does not match the database
    ├── EventLogError       the event log cannot be opened, written or read
    ├── StoreUnavailable    the system of record could not be reached or answered badly
    ├── GrammarError        a grammar library could not be loaded or compiled
    ├── ModelError          a classifier model is missing, corrupt or does not match
    └── CorpusError         a labelled corpus is malformed

Every error carries a stable ``code`` and, where it applies, a ``location``
(a claim key, a slot, a column, a file and line) so that a message can say
what was wrong and where.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: what, where, and a sentence for a person."""

    code: str
    message: str
    location: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values."""
        return {"code": self.code, "message": self.message, "location": self.location}

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text} [{self.code}]"


class GuardError(Exception):
    """Root of every error guard raises on purpose."""

    code = "guard"

    def __init__(self, message: str, *, problems: list[Problem] | None = None, location: str = "") -> None:
        self.problems: list[Problem] = list(problems or [])
        self.location = location
        super().__init__(message)

    @property
    def message(self) -> str:
        """The message without location or problems."""
        return str(self.args[0]) if self.args else ""

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values."""
        return {
            "error": self.code,
            "message": self.message,
            "location": self.location,
            "problems": [p.to_dict() for p in self.problems],
        }

    def __str__(self) -> str:
        head = self.message
        if self.location and self.location not in head:
            head = f"{self.location}: {head}"
        if not self.problems:
            return head
        lines = [head] + [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


class PayloadError(GuardError):
    """The payload is not valid JSON, has the wrong keys, bad slots or exceeds a limit."""

    code = "payload"


class ConfigError(GuardError):
    """A configuration is wrong (gate config, unknown domain or lint stage): guard refuses to run a weaker check."""

    code = "config"


class PolicyError(ConfigError):
    """The policy is malformed or refers to tables and columns the database lacks."""

    code = "policy"


class EventLogError(GuardError):
    """The event log could not be opened, written or read."""

    code = "event_log"


class StoreUnavailable(GuardError):
    """The system of record could not answer (down, timed out, locked, schema changed, garbage)."""

    code = "store_unavailable"


class GrammarError(GuardError):
    """A grammar library could not be found, loaded or compiled."""

    code = "grammar"


class ModelError(GuardError):
    """A classifier model is missing, unreadable, or its card does not match this installation."""

    code = "model"


class CorpusError(GuardError):
    """A labelled corpus file is malformed, duplicated or leaks across splits."""

    code = "corpus"


__all__ = [
    "Problem",
    "GuardError",
    "PayloadError",
    "ConfigError",
    "PolicyError",
    "EventLogError",
    "StoreUnavailable",
    "GrammarError",
    "ModelError",
    "CorpusError",
]
