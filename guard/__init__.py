"""guard: nobody ships a sentence that was not verified.

The curated public API. Names are imported lazily, so ``import guard`` stays
cheap (no spaCy, SQLAlchemy or Lark until used); each export reports
``__module__ == "guard"`` so reprs, docs and pickles name the facade, not the
module that happens to define it.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from guard._version import __version__

_EXPORTS = {
    "Payload": "guard.payload",
    "Claim": "guard.payload",
    "ClaimType": "guard.payload",
    "Limits": "guard.payload",
    "load_payload": "guard.payload",
    "Policy": "guard.records.policy",
    "load_policy": "guard.records.policy",
    "RecordStore": "guard.records.store",
    "ClaimResult": "guard.records.checker",
    "Status": "guard.records.status",
    "check": "guard.records.checker",
    "Decision": "guard.decision",
    "Action": "guard.decision",
    "decide": "guard.decision",
    "Guard": "guard.pipeline",
    "AsyncGuard": "guard.pipeline",
    "Mode": "guard.pipeline",
    "verify": "guard.pipeline",
    "regenerate_loop": "guard.pipeline",
    "load_gate_config": "guard.pipeline",
    "lint": "guard.linting",
    "lint_payload": "guard.linting",
    "LintResult": "guard.linting",
    "load_classifier": "guard.linting.freetext",
    "EventLog": "guard.observe.events",
    "Metrics": "guard.observe.metrics",
    "Finding": "guard.findings",
    "Location": "guard.findings",
    "Severity": "guard.findings",
    "GuardError": "guard.errors",
    "PayloadError": "guard.errors",
    "ConfigError": "guard.errors",
    "PolicyError": "guard.errors",
    "OptionError": "guard.errors",
    "DependencyError": "guard.errors",
    "FileError": "guard.errors",
    "EventLogError": "guard.errors",
    "StoreUnavailable": "guard.errors",
    "GrammarError": "guard.errors",
    "ModelError": "guard.errors",
    "CorpusError": "guard.errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'guard' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    with contextlib.suppress(AttributeError, TypeError):
        value.__module__ = "guard"
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
