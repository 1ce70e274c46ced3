"""The documented exception tree of guard.

Everything the public API raises is a :class:`GuardError`; errors of the
libraries underneath (SQLAlchemy, Lark, joblib, pydantic, YAML) are translated
at the boundary and never leak.

    GuardError
    ├── PayloadError        the model's payload is not acceptable (JSON, keys, slots, limits)
    ├── ConfigError         a configuration is wrong: gate config, unknown domain or stage, bad option
    │   ├── PolicyError     the policy file is wrong, or does not match the database
    │   └── OptionError     one value given to a command or function is wrong (--format, --now,
    │                       a duration, max_attempts, monitor settings)
    ├── DependencyError     an optional extra (matplotlib, prometheus) is missing or cannot start
    ├── FileError           a file or folder guard was asked to read or write is missing or unreadable
    ├── EventLogError       the event log cannot be opened, written or read
    ├── StoreUnavailable    the system of record could not be reached or answered badly
    ├── GrammarError        a grammar library could not be loaded or compiled
    ├── ModelError          a classifier model is missing, corrupt or does not match
    └── CorpusError         a labelled corpus is malformed

Every error carries a stable ``code`` and, where it applies, a ``location``
(a claim key, a slot, a column, a file and line) so that a message can say
what was wrong and where. The problems an error lists are :class:`Problem`
records located by the same :class:`~guard.findings.Location` as lint
findings, and serialise with the same keys (``code``, ``name``, ``message``,
``location``).

Problem stays apart from :class:`~guard.findings.Finding`: a finding is about a
template, belongs to a lint stage and has a severity, and is returned; a
problem is one reason an input was refused, and travels inside an exception.
The shared parts (code, message, location, serialised form) are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guard.findings import CATALOGUE, Finding, Location


@dataclass(frozen=True, init=False)
class Problem:
    """One thing wrong with an input: what, where, and a sentence for a person.

    ``location`` may be given as text (``"claims[2].value"``); it is kept as a
    :class:`Location` so that every consumer reads one type.
    """

    code: str
    message: str
    location: Location

    def __init__(self, code: str, message: str, location: Location | str = "") -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "location", location if isinstance(location, Location) else Location(location))

    @classmethod
    def from_finding(cls, finding: Finding) -> Problem:
        """A lint finding as the reason an input was refused, keeping its code, message and location."""
        return cls(finding.code, finding.message, finding.location)

    @property
    def name(self) -> str:
        """The dotted name of a catalogued code (``format.slot_without_claim``); the code itself otherwise."""
        entry = CATALOGUE.get(self.code)
        return entry.name if entry else self.code

    def to_dict(self) -> dict[str, Any]:
        """As plain JSON values, with the keys of :meth:`guard.findings.Finding.to_dict`."""
        return {"code": self.code, "name": self.name, "message": self.message, "location": self.location.to_dict()}

    def __str__(self) -> str:
        where = str(self.location)
        text = f"{where}: {self.message}" if where else self.message
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


class OptionError(ConfigError):
    """One value given to a command-line option or a public function is wrong; ``location`` names it."""

    code = "option"


class DependencyError(GuardError):
    """An optional extra is not installed or cannot start (matplotlib, a metrics registry or port)."""

    code = "dependency"


class FileError(GuardError):
    """A file or folder guard was asked to read or write is missing, unreadable or not writable."""

    code = "file"


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
    "OptionError",
    "DependencyError",
    "FileError",
    "EventLogError",
    "StoreUnavailable",
    "GrammarError",
    "ModelError",
    "CorpusError",
]
